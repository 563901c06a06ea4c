import type { InventoryDeps } from '../deps.ts';
import * as tasks from '../events/tasks.ts';

/** Statuses of a webhook delivery task, in the order the queue table shows them. */
export const TASK_STATUSES = ['queued', 'scheduled', 'sent', 'successful', 'failed', 'stopped'] as const;

export interface QueueStats {
  name: string;
  counts: Record<string, number>;
  /** Where this queue's workers run, as far as this process knows. */
  workers: string;
  oldestQueuedAt: string | null;
}

export interface TaskRow {
  id: string;
  status: string;
  queue: string;
  callable: string;
  event: string;
  objectType: string;
  objectId: number | null;
  webhookId: number | null;
  webhookName: string | null;
  eventRuleId: number | null;
  eventRuleName: string | null;
  attemptCount: number;
  lastResponseStatus: number | null;
  lastDurationMs: number | null;
  createdAt: unknown;
  enqueuedAt: unknown;
  endedAt: unknown;
}

export interface RenderedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
}

export interface TaskAttempt {
  number: number;
  outcome?: string;
  startedAt: unknown;
  durationMs: number | null;
  request: RenderedRequest | null;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
}

export interface TaskDetail extends TaskRow {
  messageId: string | null;
  nextAttemptAt: unknown;
  /** The event context the webhook was rendered from (event, data, snapshots, username, …). */
  arguments: Record<string, unknown>;
  renderedRequest: RenderedRequest | null;
  attempts: TaskAttempt[];
  errorLog: string | null;
  canRequeue: boolean;
  canStop: boolean;
}

export interface ActionResult {
  ok: boolean;
  notFound?: boolean;
  message: string;
}

export interface TaskFilter {
  queue?: string;
  status?: string;
  webhookId?: number;
  limit: number;
  offset: number;
}

/** The background-task view the UI renders; adapts Part B's task domain (src/events/tasks.ts). */
export interface TaskSource {
  queues(): Promise<QueueStats[]>;
  list(filter: TaskFilter): Promise<{ items: TaskRow[]; total: number }>;
  get(id: string): Promise<TaskDetail | null>;
  requeue(id: string): Promise<ActionResult>;
  stop(id: string): Promise<ActionResult>;
  delete(id: string): Promise<ActionResult>;
  /** The UI's status for RQ's names (started → sent, finished → successful, …), or null. */
  normaliseStatus(status: string): string | null;
}

/** Adapter over Part B's task domain; the UI's view types stay independent of its row shapes. */
export function createTaskSource(deps: InventoryDeps): TaskSource {
  const row = (t: tasks.TaskRow, durationMs: number | null = null): TaskRow => ({
    id: t.id,
    status: t.status,
    queue: t.queue,
    callable: t.callable,
    event: t.event,
    objectType: t.objectType,
    objectId: t.objectId,
    webhookId: t.webhookId,
    webhookName: t.webhookName,
    eventRuleId: t.eventRuleId,
    eventRuleName: t.eventRuleName,
    attemptCount: t.attemptCount,
    lastResponseStatus: t.lastResponseStatus,
    lastDurationMs: durationMs,
    createdAt: t.createdAt,
    enqueuedAt: t.enqueuedAt,
    endedAt: t.endedAt,
  });
  return {
    async queues() {
      const workers = deps.config.runWorkers ? 'in this process (and any worker processes)' : 'separate worker processes';
      return (await tasks.queueCounts(deps)).map((q) => ({ name: q.name, counts: { ...q.counts }, workers, oldestQueuedAt: q.oldestQueuedAt }));
    },
    async list(f) {
      const status = f.status === undefined ? undefined : tasks.normaliseStatus(f.status);
      if (status === null) return { items: [], total: 0 };
      const { count, items } = await tasks.listTasks(deps, { status, queue: f.queue, webhookId: f.webhookId, limit: f.limit, offset: f.offset });
      if (f.webhookId === undefined) return { items: items.map((t) => row(t)), total: count };
      // The Deliveries tab shows each task's last duration, which only the attempt log has.
      const detailed = await Promise.all(items.map((t) => tasks.getTask(deps, t.id)));
      return {
        items: items.map((t, i) => {
          const last = detailed[i]?.attempts.at(-1);
          return row(t, last ? Math.round(last.durationMs) : null);
        }),
        total: count,
      };
    },
    async get(id) {
      const t = await tasks.getTask(deps, id);
      if (!t) return null;
      const last = t.attempts.at(-1);
      return {
        ...row(t, last ? Math.round(last.durationMs) : null),
        messageId: t.messageId,
        nextAttemptAt: t.nextAttemptAt,
        arguments: t.arguments,
        renderedRequest: last ? last.request : null,
        attempts: t.attempts.map((a) => ({
          number: a.number,
          outcome: a.outcome === 'success' ? 'successful' : 'failed',
          startedAt: a.startedAt,
          durationMs: Math.round(a.durationMs * 10) / 10,
          request: a.request,
          responseStatus: a.responseStatus,
          responseBody: a.responseBody,
          error: a.error,
        })),
        errorLog: t.errorLog,
        canRequeue: t.canRequeue,
        canStop: t.canStop,
      };
    },
    normaliseStatus: (s) => tasks.normaliseStatus(s) ?? null,
    requeue: (id) => tasks.requeueTask(deps, id),
    stop: (id) => tasks.stopTask(deps, id),
    delete: (id) => tasks.deleteTask(deps, id),
  };
}
