import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';

/**
 * Background tasks of the hosted runtime: one row per asynchronous operation
 * (asset downloads, exports), owned by a workspace. Status moves
 * created → running → completed | failed, never back. A repeated request
 * with the same idempotency key gets the task it already created.
 */
export type TaskStatus = 'created' | 'running' | 'completed' | 'failed';
export const TASK_STATUSES: TaskStatus[] = ['created', 'running', 'completed', 'failed'];

export interface TaskRow {
  id: string;
  owner: string;
  taskName: string;
  idempotencyKey: string;
  payload: Record<string, unknown>;
  status: TaskStatus;
  result: Record<string, unknown> | null;
  error: string | null;
  createTime: number;
  updateTime: number;
  startedAt: number | null;
  completedAt: number | null;
}

function num(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}

function read(r: Record<string, unknown>): TaskRow {
  return {
    id: r.id as string,
    owner: r.owner as string,
    taskName: r.task_name as string,
    idempotencyKey: r.idempotency_key as string,
    payload: JSON.parse(r.payload as string),
    status: r.status as TaskStatus,
    result: r.result ? JSON.parse(r.result as string) : null,
    error: (r.error as string | null) ?? null,
    createTime: Number(r.create_time),
    updateTime: Number(r.update_time),
    startedAt: num(r.started_at),
    completedAt: num(r.completed_at),
  };
}

const iso = (ms: number | null) => (ms === null ? undefined : new Date(ms).toISOString());

/** TaskEntry (list views). */
export function taskEntry(t: TaskRow): Record<string, unknown> {
  const out: Record<string, unknown> = { id: t.id, task_name: t.taskName, status: t.status, create_time: iso(t.createTime) };
  if (t.startedAt !== null) out.started_at = iso(t.startedAt);
  if (t.completedAt !== null) out.completed_at = iso(t.completedAt);
  return out;
}

/** TaskResponse (full details). */
export function taskResponse(t: TaskRow): Record<string, unknown> {
  const out: Record<string, unknown> = { id: t.id, idempotency_key: t.idempotencyKey, task_name: t.taskName, payload: t.payload, status: t.status, create_time: iso(t.createTime), update_time: iso(t.updateTime) };
  if (t.result !== null) out.result = t.result;
  if (t.startedAt !== null) out.started_at = iso(t.startedAt);
  if (t.completedAt !== null) out.completed_at = iso(t.completedAt);
  if (t.error !== null) out.error = t.error;
  return out;
}

/** Creates a task, or returns the one this owner already created under the same name and idempotency key. */
export async function createTask(db: Kysely<any>, t: { owner: string; taskName: string; idempotencyKey?: string; payload: Record<string, unknown> }, now = Date.now()): Promise<{ task: TaskRow; created: boolean }> {
  const id = randomUUID();
  const key = t.idempotencyKey ?? id;
  const inserted = await db
    .insertInto('cloud_tasks')
    .values({ id, owner: t.owner, task_name: t.taskName, idempotency_key: key, payload: JSON.stringify(t.payload), status: 'created', create_time: now, update_time: now })
    .onConflict((oc) => oc.columns(['owner', 'task_name', 'idempotency_key']).doNothing())
    .returning('id')
    .execute();
  const row = await db.selectFrom('cloud_tasks').selectAll().where('owner', '=', t.owner).where('task_name', '=', t.taskName).where('idempotency_key', '=', key).executeTakeFirstOrThrow();
  return { task: read(row), created: inserted.length > 0 };
}

export async function getTask(db: Kysely<any>, owner: string, id: string): Promise<TaskRow | null> {
  const row = await db.selectFrom('cloud_tasks').selectAll().where('id', '=', id).where('owner', '=', owner).executeTakeFirst();
  return row ? read(row) : null;
}

/** Moves a task forward; a finished task is never changed again. */
export async function setTaskStatus(db: Kysely<any>, id: string, status: Exclude<TaskStatus, 'created'>, extra: { result?: Record<string, unknown>; error?: string } = {}, now = Date.now()): Promise<void> {
  const set: Record<string, unknown> = { status, update_time: now };
  if (status === 'running') set.started_at = now;
  else set.completed_at = now;
  if (extra.result !== undefined) set.result = JSON.stringify(extra.result);
  if (extra.error !== undefined) set.error = extra.error;
  await db.updateTable('cloud_tasks').set(set).where('id', '=', id).where('status', 'in', status === 'running' ? ['created'] : ['created', 'running']).execute();
}

export interface TaskFilter {
  owner: string;
  taskName?: string;
  idempotencyKey?: string;
  statuses?: TaskStatus[];
  createdAfter?: number;
  createdBefore?: number;
  sortOrder: 'asc' | 'desc';
  offset: number;
  limit: number;
}

export async function listTasks(db: Kysely<any>, f: TaskFilter): Promise<{ rows: TaskRow[]; total: number }> {
  // An empty status list (`?status=,`) matches nothing; PostgreSQL refuses an empty IN ().
  if (f.statuses?.length === 0) return { rows: [], total: 0 };
  let q = db.selectFrom('cloud_tasks').where('owner', '=', f.owner);
  if (f.taskName !== undefined) q = q.where('task_name', '=', f.taskName);
  if (f.idempotencyKey !== undefined) q = q.where('idempotency_key', '=', f.idempotencyKey);
  if (f.statuses) q = q.where('status', 'in', f.statuses);
  if (f.createdAfter !== undefined) q = q.where('create_time', '>', f.createdAfter);
  if (f.createdBefore !== undefined) q = q.where('create_time', '<', f.createdBefore);
  const total = Number((await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  let sel = q.selectAll().orderBy('create_time', f.sortOrder).orderBy('id', f.sortOrder).limit(f.limit);
  if (f.offset > 0) sel = sel.offset(f.offset);
  return { rows: (await sel.execute()).map(read), total };
}

export interface TaskProgress {
  /** 0..1 */
  progress: number;
  message?: string;
  [k: string]: unknown;
}

/**
 * Runs asynchronous operations as tasks: the row is created before the
 * request is answered, the work runs after it, and every step is also sent
 * to the workspace's sockets as `{type: wsType, data: {task_id, status, …}}`.
 * Shutdown waits for work in flight.
 */
export class TaskRunner {
  private readonly inflight = new Set<Promise<void>>();

  constructor(
    private readonly db: () => Kysely<any>,
    private readonly notify: (type: string, data: Record<string, unknown>, owner: string) => void,
  ) {}

  async start(t: { owner: string; taskName: string; wsType: string; idempotencyKey?: string; payload: Record<string, unknown> }, work: (progress: (p: TaskProgress) => void) => Promise<Record<string, unknown>>, onCreated?: (id: string) => Promise<void>): Promise<TaskRow> {
    const { task, created } = await createTask(this.db(), t);
    if (!created) return task;
    if (onCreated) await onCreated(task.id);
    const send = (status: TaskStatus, data: Record<string, unknown>) => this.notify(t.wsType, { task_id: task.id, task_name: t.taskName, status, ...data }, t.owner);
    const run = (async () => {
      // After the 202 is written: the client learns the id first.
      await new Promise<void>((r) => setImmediate(r));
      try {
        await setTaskStatus(this.db(), task.id, 'running');
        send('running', { progress: 0 });
        const result = await work((p) => send('running', { ...p, progress: Math.max(0, Math.min(1, p.progress)) }));
        await setTaskStatus(this.db(), task.id, 'completed', { result });
        send('completed', { progress: 1, result });
      } catch (err) {
        const error = err instanceof Error ? err.message : String(err);
        try {
          await setTaskStatus(this.db(), task.id, 'failed', { error });
        } catch {
          // The database is closing: the task stays as it was.
        }
        send('failed', { error });
      }
    })();
    this.inflight.add(run);
    void run.finally(() => this.inflight.delete(run));
    return task;
  }

  async drain(): Promise<void> {
    while (this.inflight.size) await Promise.allSettled([...this.inflight]);
  }
}
