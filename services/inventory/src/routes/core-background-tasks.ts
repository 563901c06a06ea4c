import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from '@svc/kernel';
import { requireAdmin } from '../api/guards.ts';
import type { InventoryDeps } from '../deps.ts';
import { notFound, pageParams, paginated } from '../events/rest.ts';
import { deleteTask, getTask, listTasks, normaliseStatus, queueCounts, requeueTask, stopTask, type TaskDetail, type TaskRow } from '../events/tasks.ts';

const NAME = 'task';

function taskUrl(id: string) {
  return `/api/core/background-tasks/${id}/`;
}

/** NetBox's BackgroundTask fields (RQ job), plus what a webhook delivery adds. */
function serializeTask(t: TaskRow) {
  return {
    id: t.id,
    url: taskUrl(t.id),
    description: `${t.webhookName ?? 'webhook'}: ${t.objectType} ${t.event}`,
    origin: t.queue,
    func_name: t.callable,
    status: t.status,
    created_at: t.createdAt,
    enqueued_at: t.enqueuedAt,
    started_at: t.startedAt,
    ended_at: t.endedAt,
    next_attempt_at: t.nextAttemptAt,
    attempts: t.attemptCount,
    last_response_status: t.lastResponseStatus,
    last_error: t.lastError,
    webhook_id: t.messageId,
    request_id: t.requestId,
    event: t.event,
    object_type: t.objectType,
    object_id: t.objectId,
    webhook: t.webhookId === null ? null : { id: t.webhookId, url: `/api/extras/webhooks/${t.webhookId}/`, display: t.webhookName, name: t.webhookName },
    event_rule: t.eventRuleId === null ? null : { id: t.eventRuleId, url: `/api/extras/event-rules/${t.eventRuleId}/`, display: t.eventRuleName, name: t.eventRuleName },
    is_queued: t.status === 'queued',
    is_scheduled: t.status === 'scheduled',
    is_started: t.status === 'sent',
    is_finished: t.status === 'successful',
    is_failed: t.status === 'failed',
    is_stopped: t.status === 'stopped',
    is_deferred: false,
    is_canceled: false,
  };
}

function serializeDetail(t: TaskDetail) {
  return {
    ...serializeTask(t),
    args: [],
    kwargs: t.arguments,
    exc_info: t.errorLog,
    attempt_log: t.attempts.map((a) => ({
      attempt: a.number,
      outcome: a.outcome,
      worker: a.worker,
      started_at: a.startedAt,
      duration_ms: a.durationMs,
      request: a.request,
      response_status: a.responseStatus,
      response_body: a.responseBody,
      error: a.error,
    })),
  };
}

function taskId(req: FastifyRequest): string {
  const id = (req.params as { id: string }).id;
  if (!/^\d{1,15}$/.test(id)) throw notFound(NAME);
  return id;
}

/** `/api/core/background-tasks/` (superusers, as NetBox): webhook deliveries with their attempts; requeue, stop, delete. */
export async function backgroundTaskRoutes(app: FastifyInstance, deps: InventoryDeps): Promise<void> {
  app.get('/api/core/background-queues/', { preHandler: requireAdmin, schema: { tags: ['core'], summary: 'List background queues with task counts by status' } }, async (req) => {
    const queues = await queueCounts(deps);
    const results = queues.map((q) => ({ name: q.name, ...q.counts, oldest_queued_at: q.oldestQueuedAt }));
    return paginated(req, results.length, results, { limit: 50, offset: 0 });
  });

  app.get('/api/core/background-tasks/', { preHandler: requireAdmin, schema: { tags: ['core'], summary: 'List background tasks (webhook deliveries)' } }, async (req) => {
    const page = pageParams(req);
    const q = req.query as Record<string, unknown>;
    const status = normaliseStatus(typeof q.status === 'string' ? q.status : undefined);
    if (status === null) throw new HttpError(400, { status: [`"${String(q.status).slice(0, 50)}" is not a valid choice.`] });
    let webhookId: number | undefined;
    if (q.webhook !== undefined && q.webhook !== '') {
      if (!/^\d{1,15}$/.test(String(q.webhook))) throw new HttpError(400, { webhook: ['A valid integer is required.'] });
      webhookId = Number(q.webhook);
    }
    const { count, items } = await listTasks(deps, { status, queue: typeof q.queue === 'string' && q.queue ? q.queue : undefined, webhookId, ...page });
    return paginated(req, count, items.map(serializeTask), page);
  });

  app.get('/api/core/background-tasks/:id/', { preHandler: requireAdmin, schema: { tags: ['core'], summary: 'Get a background task' } }, async (req) => {
    const t = await getTask(deps, taskId(req));
    if (!t) throw notFound(NAME);
    return serializeDetail(t);
  });

  app.post('/api/core/background-tasks/:id/requeue/', { preHandler: requireAdmin, schema: { tags: ['core'], summary: 'Requeue a background task' } }, async (req) => {
    const id = taskId(req);
    const r = await requeueTask(deps, id);
    if (r.notFound) throw notFound(NAME);
    if (!r.ok) throw new HttpError(400, { detail: r.message });
    return serializeDetail((await getTask(deps, id))!);
  });

  app.post('/api/core/background-tasks/:id/stop/', { preHandler: requireAdmin, schema: { tags: ['core'], summary: 'Stop a background task' } }, async (req, reply) => {
    const id = taskId(req);
    const r = await stopTask(deps, id);
    if (r.notFound) throw notFound(NAME);
    if (!r.ok) return reply.code(204).send();
    return serializeDetail((await getTask(deps, id))!);
  });

  const remove = async (req: FastifyRequest) => {
    const r = await deleteTask(deps, taskId(req));
    if (r.notFound) throw notFound(NAME);
  };
  app.delete('/api/core/background-tasks/:id/', { preHandler: requireAdmin, schema: { tags: ['core'], summary: 'Delete a background task' } }, async (req, reply) => {
    await remove(req);
    return reply.code(204).send();
  });
  app.post('/api/core/background-tasks/:id/delete/', { preHandler: requireAdmin, schema: { tags: ['core'], summary: 'Delete a background task (POST form of DELETE)' } }, async (req, reply) => {
    await remove(req);
    return reply.code(204).send();
  });
}
