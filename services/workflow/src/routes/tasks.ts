import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { getTask, listTasks, taskEntry, taskResponse, TASK_STATUSES, type TaskStatus } from '../domain/cloud/tasks.ts';
import { cloudError } from '../identity/errors.ts';
import { cloudRoute, errors, principal, ref } from './cloud-common.ts';
import { notFound, param, qInt, qString, query, UUID_RE } from './cloud-params.ts';

function invalid(message: string, field: string): never {
  throw cloudError(422, 'validation_error', message, { field });
}

function time(q: Record<string, unknown>, name: string): number | undefined {
  const v = qString(q, name, 64, 422);
  if (v === undefined || v === '') return undefined;
  // RFC 3339 date-time (or a plain date); anything Date.parse would guess at is refused.
  if (!/^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/.test(v)) invalid(`${name} must be an ISO 8601 date-time`, name);
  const ms = Date.parse(v);
  if (!Number.isFinite(ms)) invalid(`${name} must be an ISO 8601 date-time`, name);
  return ms;
}

/** /api/tasks: the workspace's background tasks (downloads, exports). */
export function taskRoutes(app: FastifyInstance, db: () => Kysely<any>): void {
  cloudRoute(
    app,
    'GET',
    '/api/tasks',
    {
      operationId: 'listTasks',
      tags: ['tasks'],
      description: 'Retrieve a paginated list of background tasks for the authenticated user. Supports filtering by task type, status, and creation time.',
      querystring: {
        type: 'object',
        properties: {
          task_name: { type: 'string' },
          idempotency_key: { type: 'string' },
          status: { type: 'string', description: `Comma-separated: ${TASK_STATUSES.join(', ')}` },
          created_after: { type: 'string', format: 'date-time' },
          created_before: { type: 'string', format: 'date-time' },
          sort_order: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
          offset: { type: 'integer', minimum: 0, default: 0 },
          limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
        },
      },
      response: { 200: ref('TasksListResponse'), ...errors(422) },
    },
    async (req) => {
      const owner = principal(req).workspaceId;
      const q = query(req);
      const limit = qInt(q, 'limit', 20, 1, 100, 422);
      const offset = qInt(q, 'offset', 0, 0, 1e12, 422);
      const sortOrder = qString(q, 'sort_order', 8, 422) || 'desc';
      if (sortOrder !== 'asc' && sortOrder !== 'desc') invalid('sort_order must be asc or desc', 'sort_order');
      let statuses: TaskStatus[] | undefined;
      const s = qString(q, 'status', 200, 422);
      if (s) {
        const parts = [...new Set(s.split(',').map((x) => x.trim()).filter(Boolean))];
        const bad = parts.filter((x) => !TASK_STATUSES.includes(x as TaskStatus));
        if (bad.length) invalid(`Invalid status value(s): ${bad.join(', ')}. Valid values: ${TASK_STATUSES.join(', ')}`, 'status');
        statuses = parts as TaskStatus[];
      }
      const createdAfter = time(q, 'created_after');
      const createdBefore = time(q, 'created_before');
      const taskName = qString(q, 'task_name', 200, 422);
      const idempotencyKey = qString(q, 'idempotency_key', 200, 422);
      const { rows, total } = await listTasks(db(), { owner, taskName: taskName || undefined, idempotencyKey: idempotencyKey || undefined, statuses, createdAfter, createdBefore, sortOrder, offset, limit });
      return { tasks: rows.map(taskEntry), pagination: { offset, limit, total, has_more: offset + rows.length < total } };
    },
  );

  cloudRoute(
    app,
    'GET',
    '/api/tasks/:task_id',
    { operationId: 'getTask', tags: ['tasks'], description: 'Retrieve full details for a specific background task.', params: { type: 'object', required: ['task_id'], properties: { task_id: { type: 'string' } } }, response: { 200: ref('TaskResponse'), ...errors(404) } },
    async (req) => {
      const id = param(req, 'task_id');
      const t = UUID_RE.test(id) ? await getTask(db(), principal(req).workspaceId, id.toLowerCase()) : null;
      if (!t) notFound('Task');
      return taskResponse(t);
    },
  );
}
