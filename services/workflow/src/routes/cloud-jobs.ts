import type { FastifyInstance, RouteHandlerMethod } from 'fastify';
import type { Kysely } from 'kysely';
import { cancelPending, cloudJobStatus, cloudPrompt, CLOUD_STATUSES, historyV2Entry, listHistoryV2, storedStatus } from '../domain/cloud/cloud-jobs.ts';
import { getPrompt, type JobStatus } from '../domain/prompts.ts';
import { cloudError } from '../identity/errors.ts';
import type { PromptRunner } from '../runtime/prompt-runner.ts';
import { cloudRoute, errors, principal, ref } from './cloud-common.ts';
import { deprecatedDoc, notFound, param, qInt, qString, query } from './cloud-params.ts';

const jobIdParam = (name: string) => ({ type: 'object', required: [name], properties: { [name]: { type: 'string' } } });

/** The captured GET /api/view route (its handler and query schema), which /api/viewvideo serves as an alias. */
export interface ViewRoute {
  handler?: RouteHandlerMethod;
  schema?: Record<string, unknown>;
}

/**
 * Cloud job operations: cancel, the prompt record, and the deprecated
 * history_v2, job status, logs and viewvideo paths (each names its successor).
 */
export function cloudJobRoutes(app: FastifyInstance, db: () => Kysely<any>, runner: PromptRunner, view: ViewRoute): void {
  const find = async (req: any, name: string) => {
    const r = await getPrompt(db(), param(req, name), principal(req).workspaceId);
    if (!r) notFound('Job');
    return r;
  };

  cloudRoute(
    app,
    'POST',
    '/api/jobs/:job_id/cancel',
    {
      operationId: 'cancelJob',
      tags: ['jobs'],
      description: 'Requests cancellation of a job. If the job is currently executing, execution is interrupted. If it is pending in the queue, it is removed.',
      params: jobIdParam('job_id'),
      response: { 200: ref('CloudJobStatus'), ...errors(404) },
    },
    async (req) => {
      const owner = principal(req).workspaceId;
      const id = param(req, 'job_id');
      let r = await getPrompt(db(), id, owner);
      if (!r) notFound('Job');
      if (r.status === 'pending') {
        if (await cancelPending(db(), id, owner, Date.now())) runner.pendingCancelled(id, owner);
        r = (await getPrompt(db(), id, owner))!;
      }
      // Claimed by now (here or in the meantime): interrupt it, even if its run has not started yet.
      if (r.status === 'in_progress') runner.cancelRunning(id);
      return { ...cloudJobStatus(r), ...(r.status === 'in_progress' ? { status: 'running' } : {}) };
    },
  );

  cloudRoute(
    app,
    'GET',
    '/api/job/:job_id/status',
    { operationId: 'getCloudJobStatus', tags: ['jobs'], deprecated: true, description: deprecatedDoc('`GET /api/jobs/{job_id}`'), params: jobIdParam('job_id'), response: { 200: ref('CloudJobStatus'), ...errors(404) } },
    async (req) => cloudJobStatus(await find(req, 'job_id')),
  );

  cloudRoute(
    app,
    'GET',
    '/api/prompt/:prompt_id',
    { operationId: 'getCloudPrompt', tags: ['prompt'], description: 'Returns the full prompt record for a cloud-executed prompt, including the submitted workflow graph and execution metadata.', params: jobIdParam('prompt_id'), response: { 200: ref('CloudPrompt'), ...errors(404) } },
    async (req) => cloudPrompt(await find(req, 'prompt_id')),
  );

  cloudRoute(
    app,
    'GET',
    '/api/history_v2',
    {
      operationId: 'getHistoryV2',
      tags: ['history'],
      deprecated: true,
      description: deprecatedDoc('`GET /api/jobs`'),
      querystring: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 1000 }, offset: { type: 'integer', minimum: 0 }, status: { type: 'string', description: `Comma-separated: ${CLOUD_STATUSES.join(', ')}` } } },
      response: { 200: ref('HistoryV2Response') },
    },
    async (req) => {
      const q = query(req);
      const limit = qInt(q, 'limit', 20, 1, 1000);
      const offset = qInt(q, 'offset', 0, 0, 1e12);
      let statuses: JobStatus[] | undefined;
      const s = qString(q, 'status', 200);
      if (s) {
        const parts = s.split(',').map((x) => x.trim()).filter(Boolean);
        const mapped = parts.map(storedStatus);
        const bad = parts.filter((_, i) => mapped[i] === undefined);
        if (bad.length) throw cloudError(400, 'invalid_request', `Invalid status value(s): ${bad.join(', ')}. Valid values: ${CLOUD_STATUSES.join(', ')}`, { field: 'status' });
        statuses = [...new Set(mapped as JobStatus[])];
      }
      const { rows, total } = await listHistoryV2(db(), principal(req).workspaceId, { statuses, limit, offset });
      return { items: rows.map(historyV2Entry), total, has_more: offset + rows.length < total };
    },
  );

  cloudRoute(
    app,
    'GET',
    '/api/history_v2/:prompt_id',
    { operationId: 'getHistoryV2ByPromptId', tags: ['history'], deprecated: true, description: deprecatedDoc('`GET /api/jobs/{prompt_id}`'), params: jobIdParam('prompt_id'), response: { 200: ref('HistoryV2Entry'), ...errors(404) } },
    async (req) => historyV2Entry(await find(req, 'prompt_id')),
  );

  cloudRoute(
    app,
    'GET',
    '/api/logs',
    {
      operationId: 'getCloudLogs',
      tags: ['system'],
      deprecated: true,
      description: deprecatedDoc('`GET /api/jobs/{job_id}` (execution messages and errors)', 'It returns a static placeholder response and no log entries.'),
      querystring: { type: 'object', properties: { job_id: { type: 'string' }, limit: { type: 'integer' }, offset: { type: 'integer' } } },
      response: { 200: ref('CloudLogsResponse') },
    },
    async (req) => {
      principal(req);
      return { entries: [], total: 0, has_more: false };
    },
  );

  cloudRoute(
    app,
    'GET',
    '/api/viewvideo',
    {
      operationId: 'viewVideo',
      tags: ['view'],
      deprecated: true,
      description: deprecatedDoc('`GET /api/view`', 'It is an alias of that endpoint, kept for older video nodes.'),
      querystring: (view.schema?.querystring as Record<string, unknown>) ?? { type: 'object', required: ['filename'], properties: { filename: { type: 'string' }, type: { type: 'string', enum: ['input', 'output', 'temp'] }, subfolder: { type: 'string' } } },
      response: { 200: { description: 'The file', type: 'string' }, ...errors(404) },
    },
    async function (this: unknown, req, reply) {
      if (!view.handler) notFound('File');
      // The same defaults /view applies (type=output) through its schema.
      const q = (req.query ?? {}) as Record<string, unknown>;
      if (q.type === undefined) req.query = { ...q, type: 'output' };
      return view.handler!.call(app as any, req, reply);
    },
  );
}
