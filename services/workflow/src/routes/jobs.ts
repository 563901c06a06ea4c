import type { FastifyInstance } from 'fastify';
import { historyEntry, jobDetail, jobEntry } from '../domain/jobs.ts';
import { deleteHistory, getPrompt, JOB_STATUSES, listHistory, listJobs, FINISHED, type JobStatus } from '../domain/prompts.ts';
import type { PromptRunner } from '../runtime/prompt-runner.ts';
import { HistoryQuery, JobsList, JobsQuery, QueueManageRequest } from '../schemas/prompt.ts';
import { dual, intParam, jsonError } from './common.ts';
import type { RouteCtx } from './context.ts';

/** GET /history without max_items: a bounded page, never the whole history. */
export const DEFAULT_HISTORY_ITEMS = 200;
const MAX_PAGE = 10_000;

const SAFE_ID = /^[\x20-\x7e]{1,200}$/;

export function jobRoutes(app: FastifyInstance, ctx: RouteCtx, runner: PromptRunner): void {
  dual(
    app,
    'GET',
    '/jobs',
    { operationId: 'listJobs', tags: ['jobs'], querystring: JobsQuery, response: { 200: JobsList } },
    async (req) => {
      const q = req.query as Record<string, unknown>;
      let statuses: JobStatus[] | undefined;
      if (typeof q.status === 'string' && q.status !== '') {
        const parts = q.status.split(',').map((s) => s.trim()).filter(Boolean);
        const bad = parts.filter((s) => !JOB_STATUSES.includes(s as JobStatus));
        if (bad.length) throw jsonError(400, `Invalid status value(s): ${bad.join(', ')}. Valid values: ${JOB_STATUSES.join(', ')}`);
        statuses = parts as JobStatus[];
      }
      const sortBy = (q.sort_by ?? 'created_at') as string;
      if (sortBy !== 'created_at' && sortBy !== 'execution_duration') throw jsonError(400, 'Invalid sort_by: must be created_at or execution_duration');
      const sortOrder = (q.sort_order ?? 'desc') as string;
      if (sortOrder !== 'asc' && sortOrder !== 'desc') throw jsonError(400, 'Invalid sort_order: must be asc or desc');
      const limit = intParam(q.limit, 'limit', { min: 1 });
      const offset = intParam(q.offset, 'offset', { min: 0 }) ?? 0;
      const wf = q.workflow_id;
      if (wf !== undefined && typeof wf !== 'string') throw jsonError(400, 'Invalid workflow_id');
      const wfv = q.workflow_version_id;
      if (wfv !== undefined && typeof wfv !== 'string') throw jsonError(400, 'Invalid workflow_version_id');
      // An id no column can hold matches nothing.
      if ((typeof wf === 'string' && !SAFE_ID.test(wf)) || (typeof wfv === 'string' && !SAFE_ID.test(wfv))) return { jobs: [], pagination: { offset, limit: limit ?? 0, total: 0, has_more: false } };
      const { rows, total } = await listJobs(ctx.storageDb(), {
        owner: ctx.scope(req),
        statuses,
        workflowId: wf,
        workflowVersionId: wfv,
        sortBy,
        sortOrder,
        limit: limit === undefined ? undefined : Math.min(limit, MAX_PAGE),
        offset,
      });
      // The frontend's zod schema needs a number: without a limit, the page is everything from offset on.
      return { jobs: rows.map(jobEntry), pagination: { offset, limit: limit ?? rows.length, total, has_more: offset + rows.length < total } };
    },
    { validate: false },
  );

  dual(app, 'GET', '/jobs/:job_id', { operationId: 'getJob', tags: ['jobs'] }, async (req) => {
    const r = await getPrompt(ctx.storageDb(), (req.params as { job_id: string }).job_id, ctx.scope(req));
    if (!r) throw jsonError(404, 'Job not found');
    return jobDetail(r);
  });

  // Removed paths: the answer names their successor.
  for (const suffix of ['', '/outputs']) {
    for (const prefix of ['/api', '']) {
      app.get(`${prefix}/job/:job_id${suffix}`, { schema: { hide: true } }, async (req, reply) => {
        const id = (req.params as { job_id: string }).job_id;
        return reply
          .code(404)
          .type('application/json')
          .send(JSON.stringify({ error: `This endpoint has been removed. Use GET /api/jobs/${id} instead.`, redirect: `/api/jobs/${encodeURIComponent(id)}` }));
      });
    }
  }

  const historyDoc = (operationId: string) => ({
    operationId,
    tags: ['history'],
    deprecated: true,
    description: 'Deprecated: use GET /api/jobs and GET /api/jobs/{job_id} instead.',
  });

  dual(
    app,
    'GET',
    '/history',
    { ...historyDoc('getHistory'), querystring: HistoryQuery },
    async (req) => {
      const q = req.query as Record<string, unknown>;
      const maxItems = intParam(q.max_items, 'max_items', { min: 1 }) ?? DEFAULT_HISTORY_ITEMS;
      const offset = intParam(q.offset, 'offset', { min: 0 });
      const rows = await listHistory(ctx.storageDb(), { owner: ctx.scope(req), limit: Math.min(maxItems, MAX_PAGE), offset });
      const out: Record<string, unknown> = {};
      for (const r of rows) out[r.id] = historyEntry(r);
      return out;
    },
    { validate: false },
  );

  dual(app, 'GET', '/history/:prompt_id', historyDoc('getHistoryByPromptId'), async (req) => {
    const id = (req.params as { prompt_id: string }).prompt_id;
    const r = await getPrompt(ctx.storageDb(), id, ctx.scope(req));
    if (!r || !FINISHED.includes(r.status)) return {};
    return { [r.id]: historyEntry(r) };
  });

  dual(
    app,
    'POST',
    '/history',
    { ...historyDoc('manageHistory'), body: QueueManageRequest },
    async (req, reply) => {
      const body = req.body ?? {};
      if (typeof body !== 'object' || Array.isArray(body)) throw jsonError(400, 'The request body must be a JSON object');
      const b = body as Record<string, unknown>;
      if (b.clear === true) runner.historyRemoved(await deleteHistory(ctx.storageDb(), 'all', ctx.scope(req)));
      if ('delete' in b) {
        if (!Array.isArray(b.delete) || b.delete.some((x) => typeof x !== 'string')) throw jsonError(400, 'delete must be a list of prompt ids');
        runner.historyRemoved(await deleteHistory(ctx.storageDb(), b.delete as string[], ctx.scope(req)));
      }
      return reply.code(200).send();
    },
    { validate: false },
  );
}
