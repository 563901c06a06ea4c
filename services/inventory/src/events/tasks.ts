import type { InventoryDeps } from '../deps.ts';
import { DELIVER_TASK, DRAIN_NOW_KEY } from './enqueue.ts';
import { truncateBody } from './deliver.ts';
import { defaultBody } from './python-json.ts';
import { workerFor } from './registry.ts';

/**
 * Background tasks as NetBox's System → Background Tasks shows them; here a
 * task is one webhook delivery. Used by /api/core/background-tasks/ and the UI.
 */

export const TASK_STATUSES = ['queued', 'scheduled', 'sent', 'successful', 'failed', 'stopped'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
/** RQ's names for the same states, accepted in filters. */
const ALIASES: Record<string, TaskStatus> = { started: 'sent', finished: 'successful', canceled: 'stopped', cancelled: 'stopped' };
export const QUEUE_NAME = 'default';
export const CALLABLE = 'extras.webhooks.send_webhook';

export function isTaskStatus(s: string): s is TaskStatus {
  return (TASK_STATUSES as readonly string[]).includes(s);
}

export function normaliseStatus(s: string | undefined): TaskStatus | undefined | null {
  if (s === undefined || s === '') return undefined;
  const v = ALIASES[s] ?? s;
  return isTaskStatus(v) ? v : null;
}

export interface TaskRow {
  id: string;
  status: TaskStatus;
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
  lastError: string | null;
  messageId: string;
  requestId: string;
  createdAt: string;
  enqueuedAt: string;
  startedAt: string | null;
  endedAt: string | null;
  nextAttemptAt: string | null;
}

export interface RecordedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface TaskAttempt {
  number: number;
  outcome: 'success' | 'failure';
  worker: string;
  startedAt: string;
  durationMs: number;
  request: RecordedRequest;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
}

export interface TaskDetail extends TaskRow {
  /** The event context the webhook is rendered from (event, timestamp, model, username, request_id, data, snapshots). */
  arguments: Record<string, unknown>;
  attempts: TaskAttempt[];
  /** Every failed attempt's error, newest last. */
  errorLog: string | null;
  canRequeue: boolean;
  canStop: boolean;
}

export interface ActionResult {
  ok: boolean;
  notFound?: boolean;
  message: string;
}

const iso = (ms: unknown) => (ms === null || ms === undefined ? null : new Date(Number(ms)).toISOString());

function toRow(r: Record<string, any>): TaskRow {
  return {
    id: String(r.id),
    status: r.status,
    queue: QUEUE_NAME,
    callable: CALLABLE,
    event: r.event,
    objectType: r.object_type,
    objectId: r.object_id === null ? null : Number(r.object_id),
    webhookId: r.webhook_id === null ? null : Number(r.webhook_id),
    webhookName: r.webhook_name,
    eventRuleId: r.event_rule_id === null ? null : Number(r.event_rule_id),
    eventRuleName: r.event_rule_name,
    attemptCount: Number(r.attempts),
    lastResponseStatus: r.last_status_code === null ? null : Number(r.last_status_code),
    lastError: r.last_error ?? null,
    messageId: r.message_id,
    requestId: r.request_id,
    createdAt: iso(r.created_at)!,
    enqueuedAt: iso(r.enqueued_at)!,
    startedAt: iso(r.started_at),
    endedAt: iso(r.ended_at),
    nextAttemptAt: r.status === 'queued' || r.status === 'scheduled' ? iso(r.next_attempt_at) : null,
  };
}

const LIST_COLUMNS = [
  'id', 'status', 'event', 'object_type', 'object_id', 'webhook_id', 'webhook_name', 'event_rule_id', 'event_rule_name', 'attempts',
  'last_status_code', 'last_error', 'message_id', 'request_id', 'created_at', 'enqueued_at', 'started_at', 'ended_at', 'next_attempt_at',
] as const;

function parseId(id: string | number): number | undefined {
  const n = typeof id === 'number' ? id : /^\d{1,15}$/.test(id) ? Number(id) : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

export async function listTasks(
  deps: InventoryDeps,
  filter: { status?: TaskStatus; queue?: string; webhookId?: number; limit: number; offset: number },
): Promise<{ count: number; items: TaskRow[] }> {
  if (filter.queue && filter.queue !== QUEUE_NAME) return { count: 0, items: [] };
  let q = deps.storage.db.selectFrom('events_delivery');
  if (filter.status) q = q.where('status', '=', filter.status);
  if (filter.webhookId !== undefined) q = q.where('webhook_id', '=', filter.webhookId);
  const count = Number((await q.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst())?.n ?? 0);
  const rows = await q.select([...LIST_COLUMNS]).orderBy('id', 'desc').limit(filter.limit).offset(filter.offset).execute();
  return { count, items: rows.map(toRow) };
}

export async function getTask(deps: InventoryDeps, id: string | number): Promise<TaskDetail | null> {
  const n = parseId(id);
  if (n === undefined) return null;
  const { db } = deps.storage;
  const r = await db.selectFrom('events_delivery').selectAll().where('id', '=', n).executeTakeFirst();
  if (!r) return null;
  const ctx = await db.selectFrom('events_delivery_context').select('context').where('delivery_id', '=', n).executeTakeFirst();
  const context = ctx?.context ?? '{}';
  const attempts = (await db.selectFrom('events_delivery_attempt').selectAll().where('delivery_id', '=', n).orderBy('attempt').orderBy('id').execute()).map(
    (a): TaskAttempt => ({
      number: Number(a.attempt),
      outcome: deps.storage.dialect.readBool(a.success) ? 'success' : 'failure',
      worker: a.worker,
      startedAt: iso(a.started_at)!,
      durationMs: Number(a.duration_ms),
      request: {
        method: a.request_method,
        url: a.request_url,
        headers: Object.fromEntries(JSON.parse(a.request_headers)),
        // An attempt that sent the default body logged a mark, not a copy: the body is the context text.
        body: deps.storage.dialect.readBool(a.request_body_default) ? truncateBody(defaultBody(context)) : a.request_body,
      },
      responseStatus: a.response_status === null ? null : Number(a.response_status),
      responseBody: a.response_body,
      error: a.error,
    }),
  );
  const row = toRow(r);
  const errors = attempts.filter((a) => a.error).map((a) => `[attempt ${a.number} at ${a.startedAt}] ${a.error}`);
  return {
    ...row,
    arguments: JSON.parse(context),
    attempts,
    errorLog: errors.length ? errors.join('\n') : null,
    canRequeue: row.status === 'failed' || row.status === 'stopped',
    canStop: row.status === 'queued' || row.status === 'scheduled' || row.status === 'sent',
  };
}

/** failed (or stopped) → queued: sent again with the same context and webhook-id, current webhook settings, a fresh retry budget. */
export async function requeueTask(deps: InventoryDeps, id: string | number): Promise<ActionResult> {
  const n = parseId(id);
  if (n === undefined) return { ok: false, notFound: true, message: `Job ${id} not found.` };
  const now = Date.now();
  const ok = await deps.storage.db.transaction().execute(async (trx) => {
    const r = await trx
      .updateTable('events_delivery')
      .set((eb) => ({ status: 'queued', next_attempt_at: now, enqueued_at: now, ended_at: null, retry_base: eb.ref('attempts') }))
      .where('id', '=', n)
      .where('status', 'in', ['failed', 'stopped'])
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return false;
    await deps.queue.add(DELIVER_TASK, {}, { jobKey: DRAIN_NOW_KEY, maxAttempts: 25 }, trx);
    return true;
  });
  if (ok) {
    deps.queue.wake();
    return { ok: true, message: `Job ${n} has been re-enqueued.` };
  }
  const exists = await deps.storage.db.selectFrom('events_delivery').select('status').where('id', '=', n).executeTakeFirst();
  if (!exists) return { ok: false, notFound: true, message: `Job ${n} not found.` };
  return { ok: false, message: `Job ${n} is ${exists.status}; only failed or stopped jobs can be requeued.` };
}

export async function deleteTask(deps: InventoryDeps, id: string | number): Promise<ActionResult> {
  const n = parseId(id);
  if (n === undefined) return { ok: false, notFound: true, message: `Job ${id} not found.` };
  workerFor(deps)?.abort(n);
  const { storage } = deps;
  const r = await storage.db.transaction().execute(async (trx) => {
    const deleted = await trx.deleteFrom('events_delivery').where('id', '=', n).executeTakeFirst();
    // PostgreSQL's attempt rows have no foreign key (migration 106) to cascade: removed here, once the delete holds the
    // row (a worker's cycle that recorded an attempt for it has committed by then, and a later one sees it gone).
    if (storage.dialect.kind === 'postgres' && Number(deleted.numDeletedRows) > 0) {
      await trx.deleteFrom('events_delivery_attempt').where('delivery_id', '=', n).execute();
    }
    return deleted;
  });
  if (Number(r.numDeletedRows) === 0) return { ok: false, notFound: true, message: `Job ${n} not found.` };
  return { ok: true, message: `Job ${n} has been deleted.` };
}

/** queued/scheduled/sent → stopped; an in-flight request in this process is aborted, elsewhere its outcome is discarded. */
export async function stopTask(deps: InventoryDeps, id: string | number): Promise<ActionResult> {
  const n = parseId(id);
  if (n === undefined) return { ok: false, notFound: true, message: `Job ${id} not found.` };
  const r = await deps.storage.db
    .updateTable('events_delivery')
    .set({ status: 'stopped', ended_at: Date.now(), claimed_by: null, claim_expires_at: null, ...(deps.storage.dialect.kind === 'postgres' ? { due_at: null } : {}) })
    .where('id', '=', n)
    .where('status', 'in', ['queued', 'scheduled', 'sent'])
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) > 0) {
    workerFor(deps)?.abort(n);
    return { ok: true, message: `Job ${n} has been stopped.` };
  }
  const exists = await deps.storage.db.selectFrom('events_delivery').select('status').where('id', '=', n).executeTakeFirst();
  if (!exists) return { ok: false, notFound: true, message: `Job ${n} not found.` };
  return { ok: false, message: `Failed to stop job ${n}: it is ${exists.status}.` };
}

export interface QueueStats {
  name: string;
  counts: Record<TaskStatus, number>;
  oldestQueuedAt: string | null;
}

export async function queueCounts(deps: InventoryDeps): Promise<QueueStats[]> {
  const rows = await deps.storage.db
    .selectFrom('events_delivery')
    .select(['status', (eb) => eb.fn.countAll().as('n'), (eb) => eb.fn.min('enqueued_at').as('oldest')])
    .groupBy('status')
    .execute();
  const counts = Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as Record<TaskStatus, number>;
  let oldest: string | null = null;
  for (const r of rows) {
    if (isTaskStatus(r.status)) counts[r.status] = Number(r.n);
    if (r.status === 'queued') oldest = iso(r.oldest);
  }
  return [{ name: QUEUE_NAME, counts, oldestQueuedAt: oldest }];
}
