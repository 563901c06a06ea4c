import { sql, type Kysely } from 'kysely';
import type { Storage } from '@svc/storage';

export type JobStatus = 'pending' | 'in_progress' | 'completed' | 'failed' | 'cancelled';
export const JOB_STATUSES: JobStatus[] = ['pending', 'in_progress', 'completed', 'failed', 'cancelled'];
export const FINISHED: JobStatus[] = ['completed', 'failed', 'cancelled'];

/** A prompt row, JSON decoded. */
export interface PromptRecord {
  id: string;
  owner: string;
  number: number;
  status: JobStatus;
  prompt: Record<string, any>;
  extraData: Record<string, any>;
  sensitive: Record<string, unknown> | null;
  outputsToExecute: string[];
  workflowId: string | null;
  workflowVersionId: string | null;
  createTime: number;
  startTime: number | null;
  endTime: number | null;
  outputs: Record<string, Record<string, unknown[]>> | null;
  meta: Record<string, unknown> | null;
  statusMessages: Array<[string, Record<string, unknown>]> | null;
}

export interface NewPrompt {
  id: string;
  owner: string;
  /** null: the store numbers it (the shared queue: one sequence for every process, see SharedQueue.store). */
  number: number | null;
  /** With a null number: queued at the front (a negative number, as front=true gives). */
  front?: boolean;
  prompt: Record<string, unknown>;
  extraData: Record<string, unknown>;
  sensitive: Record<string, unknown>;
  outputsToExecute: string[];
  workflowId: string | null;
  workflowVersionId?: string | null;
  createTime: number;
  /** Stored already claimed by this worker (an idle runner takes the prompt without a claim transaction). */
  claimedBy?: { worker: string; startTime: number };
}

const SAFE_TEXT = /^[\x20-\x7e]{1,200}$/;

/** Text columns hold only printable ASCII ids: anything else is kept in the JSON alone. */
export function safeColumnText(v: unknown): string | null {
  return typeof v === 'string' && SAFE_TEXT.test(v) ? v : null;
}

function parse<T>(v: unknown): T {
  return (typeof v === 'string' ? JSON.parse(v) : v) as T;
}

function num(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}

export function decode(row: Record<string, unknown>): PromptRecord {
  return {
    id: row.id as string,
    owner: row.owner as string,
    number: Number(row.number),
    status: row.status as JobStatus,
    prompt: parse(row.prompt),
    extraData: parse(row.extra_data),
    sensitive: row.sensitive ? parse(row.sensitive) : null,
    outputsToExecute: parse(row.outputs_to_execute),
    workflowId: (row.workflow_id as string | null) ?? null,
    workflowVersionId: (row.workflow_version_id as string | null) ?? null,
    createTime: Number(row.create_time),
    startTime: num(row.start_time),
    endTime: num(row.end_time),
    outputs: row.outputs ? parse(row.outputs) : null,
    meta: row.meta ? parse(row.meta) : null,
    statusMessages: row.status_messages ? parse(row.status_messages) : null,
  };
}

/** Thrown when a client-chosen prompt id is already taken. */
export class DuplicatePromptId extends Error {}

/** The columns a new prompt's row sets (the others keep their defaults). */
export const PROMPT_COLUMNS = ['id', 'owner', 'number', 'status', 'worker', 'start_time', 'prompt', 'extra_data', 'sensitive', 'outputs_to_execute', 'workflow_id', 'workflow_version_id', 'create_time'] as const;

function row(p: NewPrompt): Record<(typeof PROMPT_COLUMNS)[number], unknown> & { front?: boolean } {
  return {
    ...(p.front ? { front: true } : {}),
    id: p.id,
    owner: p.owner,
    number: p.number,
    status: p.claimedBy ? 'in_progress' : 'pending',
    worker: p.claimedBy?.worker ?? null,
    start_time: p.claimedBy?.startTime ?? null,
    prompt: JSON.stringify(p.prompt),
    extra_data: JSON.stringify(p.extraData),
    sensitive: Object.keys(p.sensitive).length ? JSON.stringify(p.sensitive) : null,
    outputs_to_execute: JSON.stringify(p.outputsToExecute),
    workflow_id: p.workflowId,
    workflow_version_id: p.workflowVersionId ?? null,
    create_time: p.createTime,
  };
}

const MAX_BATCH = 200;

type RawSqlite = NonNullable<Storage['sqlite']>;
type RawStatement = ReturnType<RawSqlite['prepare']>;

/**
 * The statements every prompt runs on SQLite, prepared once per handle and run
 * on the raw better-sqlite3 handle: no query building per prompt. Kysely shares
 * the handle, so they run only while none of its transactions is open (a raw
 * statement would silently join it); callers fall back to the query builder then.
 */
const rawStatements = new WeakMap<RawSqlite, { insert: RawStatement; complete: RawStatement; claim: RawStatement }>();

function rawStatementsOf(raw: RawSqlite): { insert: RawStatement; complete: RawStatement; claim: RawStatement } {
  let s = rawStatements.get(raw);
  if (!s) {
    s = {
      insert: raw.prepare(`insert into prompts (${PROMPT_COLUMNS.join(', ')}) values (${PROMPT_COLUMNS.map(() => '?').join(', ')}) on conflict (id) do nothing`),
      complete: raw.prepare('update prompts set status = ?, end_time = ?, outputs = ?, meta = ?, status_messages = ?, sensitive = null, worker = null where id = ?'),
      claim: raw.prepare(`update prompts set status = 'in_progress', worker = ?, start_time = ?
        where id = (select id from prompts where status = 'pending' order by number, id limit 1) and status = 'pending' returning *`),
    };
    rawStatements.set(raw, s);
  }
  return s;
}

/** Inserts rows on the raw SQLite handle (one transaction); answers the ids stored (a taken id is not). */
function insertRaw(raw: RawSqlite, rows: Array<Record<(typeof PROMPT_COLUMNS)[number], unknown>>): Set<string> {
  const { insert } = rawStatementsOf(raw);
  const ok = new Set<string>();
  const each = () => {
    for (const r of rows) if (insert.run(PROMPT_COLUMNS.map((c) => r[c])).changes > 0) ok.add(r.id as string);
  };
  if (rows.length === 1) each();
  else raw.transaction(each).immediate();
  return ok;
}

/**
 * Group commit for POST /prompt: prompts that arrive in the same turn of
 * the event loop are inserted in one transaction, so concurrent clients
 * share one commit. Each caller still resolves only after its row is
 * committed; a taken id fails only its own caller.
 */
export class PromptInserter {
  private pending: Array<{ p: NewPrompt; resolve: (n: number) => void; reject: (e: unknown) => void }> = [];
  private scheduled = false;

  /**
   * `store`, when given, stores the rows itself (the shared queue, with their jobs) and answers the ids it stored,
   * each with the number it was stored under (it numbers the rows whose number is null).
   * `raw`: the SQLite handle under `db`, whose rows are inserted without the query builder.
   */
  constructor(
    private readonly db: Kysely<any>,
    private readonly store?: (rows: Array<Record<string, unknown>>) => Promise<Map<string, number>>,
    private readonly raw?: RawSqlite,
  ) {}

  /** Stores the prompt; answers the number it was stored under. */
  insert(p: NewPrompt): Promise<number> {
    return new Promise((resolve, reject) => {
      this.pending.push({ p, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  /** The shared queue's store in flight: one at a time, the next batch gathers meanwhile. */
  private storing: Promise<unknown> | undefined;

  private async flush(): Promise<void> {
    // Two stores of one process at once would only queue on each other's workspace locks
    // (and commits); waiting here instead makes the next batch larger, for one commit.
    while (this.storing) await this.storing;
    const batch = this.pending.splice(0, MAX_BATCH);
    if (this.pending.length > 0) setImmediate(() => void this.flush());
    else this.scheduled = false;
    const seen = new Set<string>();
    const unique = batch.filter((b) => {
      if (seen.has(b.p.id)) {
        b.reject(new DuplicatePromptId(b.p.id));
        return false;
      }
      seen.add(b.p.id);
      return true;
    });
    if (unique.length === 0) return;
    try {
      const rows = unique.map((b) => row(b.p));
      let numbered: Map<string, number>;
      if (this.store) numbered = await (this.storing = this.store(rows).finally(() => (this.storing = undefined)));
      else {
        if (unique.some((b) => b.p.number === null)) throw new Error('only the shared queue numbers prompts as it stores them');
        const ok =
          this.raw && !this.raw.inTransaction
            ? insertRaw(this.raw, rows)
            : new Set((await this.db.insertInto('prompts').values(rows).onConflict((oc) => oc.column('id').doNothing()).returning('id').execute()).map((r) => r.id as string));
        numbered = new Map(unique.filter((b) => ok.has(b.p.id)).map((b) => [b.p.id, b.p.number!]));
      }
      for (const b of unique) {
        const n = numbered.get(b.p.id);
        if (n === undefined) b.reject(new DuplicatePromptId(b.p.id));
        else b.resolve(n);
      }
    } catch (err) {
      for (const b of unique) b.reject(err);
    }
  }
}

/**
 * Takes the next pending prompt (lowest number, then id) for this worker.
 * One statement: SQLite runs it atomically, PostgreSQL skips rows another
 * worker is claiming.
 */
export async function claimNext(storage: Storage, worker: string, now: number, db: Kysely<any> = storage.db): Promise<PromptRecord | null> {
  // The runner claims after every prompt that ends with nothing handed over: on SQLite without the query builder.
  if (db === storage.db && storage.sqlite && !storage.sqlite.inTransaction) {
    const row = (rawStatementsOf(storage.sqlite).claim.all([worker, now]) as Array<Record<string, unknown>>)[0];
    return row ? decode(row) : null;
  }
  const lock = storage.dialect.kind === 'postgres' ? sql` for update skip locked` : sql``;
  const r = await sql<Record<string, unknown>>`
    update prompts set status = 'in_progress', worker = ${worker}, start_time = ${now}
    where id = (select id from prompts where status = 'pending' order by number, id limit 1${lock})
      and status = 'pending'
    returning *`.execute(db);
  return r.rows[0] ? decode(r.rows[0]) : null;
}

/**
 * Trimming of the history with an end: `keep` finished prompts at most.
 * `finished`: how many there are once this end is recorded, when the caller
 * keeps that count (one process owns the table); counted otherwise.
 */
export interface HistoryTrim {
  keep: number;
  finished?: number;
}

/** Records a prompt's end and takes the next one in the same transaction: one commit per prompt instead of two. */
export async function completeAndClaimNext(
  storage: Storage,
  id: string,
  c: Completion,
  worker: string | null,
  trim?: HistoryTrim,
  countOwner = false,
): Promise<{ next: PromptRecord | null; trimmed: number; remaining?: number }> {
  if (worker === null && trim === undefined) {
    if (!countOwner && storage.sqlite && !storage.sqlite.inTransaction) {
      rawStatementsOf(storage.sqlite).complete.run([c.status, c.endTime, JSON.stringify(c.outputs), JSON.stringify(c.meta), JSON.stringify(c.messages), id]);
      return { next: null, trimmed: 0 };
    }
    if (countOwner && storage.pgPool) {
      const rows = await prepared(
        storage,
        'wf_complete_counted',
        `update prompts set status = $1, end_time = $2, outputs = $3, meta = $4, status_messages = $5, sensitive = null, worker = null where id = $6
         returning (select count(*) from prompts p where p.owner = prompts.owner and p.status in ('pending', 'in_progress')) - 1 as remaining`,
        [c.status, c.endTime, JSON.stringify(c.outputs), JSON.stringify(c.meta), JSON.stringify(c.messages), id],
      );
      return { next: null, trimmed: 0, remaining: rows[0] === undefined ? undefined : Math.max(0, Number(rows[0].remaining)) };
    }
    const remaining = await completePrompt(storage.db, id, c, countOwner);
    return { next: null, trimmed: 0, remaining };
  }
  // The history bound holds the moment the end is visible: trimming commits with it.
  return storage.db.transaction().execute(async (trx) => {
    const remaining = await completePrompt(trx, id, c, countOwner);
    const trimmed = trim === undefined ? 0 : await trimHistory(trx, trim.keep, trim.finished);
    return { next: worker === null ? null : await claimNext(storage, worker, Date.now(), trx), trimmed, remaining };
  });
}

/** Puts a prompt that was claimed at insert back in the queue (the runner stopped before running it). */
export async function releaseClaim(db: Kysely<any>, id: string, worker: string): Promise<void> {
  await db.updateTable('prompts').set({ status: 'pending', worker: null, start_time: null }).where('id', '=', id).where('status', '=', 'in_progress').where('worker', '=', worker).execute();
}

export interface Completion {
  status: JobStatus;
  endTime: number;
  outputs: Record<string, unknown>;
  meta: Record<string, unknown>;
  messages: Array<[string, Record<string, unknown>]>;
}

/**
 * Records a prompt's end; the sensitive extra data is dropped with it.
 * `countOwner` (PostgreSQL): also answers how many of the prompt's owner's
 * prompts are pending or running once it ended, from the same statement.
 */
export async function completePrompt(db: Kysely<any>, id: string, c: Completion, countOwner = false): Promise<number | undefined> {
  const q = db
    .updateTable('prompts')
    .set({
      status: c.status,
      end_time: c.endTime,
      outputs: JSON.stringify(c.outputs),
      meta: JSON.stringify(c.meta),
      status_messages: JSON.stringify(c.messages),
      sensitive: null,
      worker: null,
    })
    .where('id', '=', id);
  if (!countOwner) {
    await q.execute();
    return undefined;
  }
  // The subquery sees the statement's snapshot, where this prompt is still running: one less.
  const r = await q
    .returning(sql<number>`(select count(*) from prompts p where p.owner = prompts.owner and p.status in ('pending', 'in_progress')) - 1`.as('remaining'))
    .executeTakeFirst();
  return r === undefined ? undefined : Math.max(0, Number(r.remaining));
}

export async function getPrompt(db: Kysely<any>, id: string, owner?: string): Promise<PromptRecord | null> {
  // An id no row can have (NUL, lone surrogates, too long) is simply not found, on either database.
  if (safeColumnText(id) === null) return null;
  let q = db.selectFrom('prompts').selectAll().where('id', '=', id);
  if (owner !== undefined) q = q.where('owner', '=', owner);
  const row = await q.executeTakeFirst();
  return row ? decode(row) : null;
}

/** Pending prompts in run order, and running ones. */
export async function queueState(db: Kysely<any>, owner?: string): Promise<{ running: PromptRecord[]; pending: PromptRecord[] }> {
  let q = db.selectFrom('prompts').selectAll().where('status', 'in', ['pending', 'in_progress']);
  if (owner !== undefined) q = q.where('owner', '=', owner);
  const rows = (await q.orderBy('number').orderBy('id').execute()).map(decode);
  return { running: rows.filter((r) => r.status === 'in_progress'), pending: rows.filter((r) => r.status === 'pending') };
}

/** pendingCount of one owner; on PostgreSQL as a named statement (read on every status message of the hosted runtime). */
export async function ownerPendingCount(storage: Storage, owner: string): Promise<number> {
  if (!storage.pgPool) return pendingCount(storage.db, owner);
  const rows = await prepared(storage, 'wf_owner_pending_count', `select count(*) as n from prompts where owner = $1 and status in ('pending', 'in_progress')`, [owner]);
  return Number(rows[0]?.n ?? 0);
}

export async function pendingCount(db: Kysely<any>, owner?: string): Promise<number> {
  let q = db.selectFrom('prompts').select((eb) => eb.fn.countAll<number>().as('n')).where('status', 'in', ['pending', 'in_progress']);
  if (owner !== undefined) q = q.where('owner', '=', owner);
  return Number((await q.executeTakeFirstOrThrow()).n);
}

/** Removes pending prompts (all, or the given ids); running ones are untouched. Returns the removed ids. */
/** Pending and running prompts per owner. */
export async function pendingCountsByOwner(db: Kysely<any>): Promise<Array<{ owner: string; n: number }>> {
  const rows = await db.selectFrom('prompts').select(['owner', (eb) => eb.fn.countAll<number>().as('n')]).where('status', 'in', ['pending', 'in_progress']).groupBy('owner').execute();
  return rows.map((r) => ({ owner: r.owner as string, n: Number(r.n) }));
}

export async function deletePending(db: Kysely<any>, ids: string[] | 'all', owner?: string): Promise<string[]> {
  let q = db.deleteFrom('prompts').where('status', '=', 'pending');
  if (ids !== 'all') {
    ids = ids.filter((id) => safeColumnText(id) !== null);
    if (ids.length === 0) return [];
    q = q.where('id', 'in', ids);
  }
  if (owner !== undefined) q = q.where('owner', '=', owner);
  return (await q.returning('id').execute()).map((r) => r.id as string);
}

/** Removes finished prompts (all, or the given ids). */
export async function deleteHistory(db: Kysely<any>, ids: string[] | 'all', owner?: string): Promise<number> {
  let q = db.deleteFrom('prompts').where('status', 'in', FINISHED);
  if (ids !== 'all') {
    ids = ids.filter((id) => safeColumnText(id) !== null);
    if (ids.length === 0) return 0;
    q = q.where('id', 'in', ids);
  }
  if (owner !== undefined) q = q.where('owner', '=', owner);
  const r = await q.executeTakeFirst();
  return Number(r.numDeletedRows);
}

/**
 * Finished prompts in completion order (oldest first), the last `limit` after skipping `offset` from the start.
 * Prompts that ended in the same millisecond are in the order they ran, which is their queue number's.
 */
export async function listHistory(db: Kysely<any>, opts: { owner?: string; limit: number; offset?: number }): Promise<PromptRecord[]> {
  let q = db.selectFrom('prompts').selectAll().where('status', 'in', FINISHED);
  if (opts.owner !== undefined) q = q.where('owner', '=', opts.owner);
  if (opts.offset !== undefined) {
    return (await q.orderBy('end_time').orderBy('number').orderBy('id').limit(opts.limit).offset(opts.offset).execute()).map(decode);
  }
  // Without an offset the reference returns the newest max_items, oldest first.
  const rows = await q.orderBy('end_time', 'desc').orderBy('number', 'desc').orderBy('id', 'desc').limit(opts.limit).execute();
  return rows.reverse().map(decode);
}

export async function finishedCount(db: Kysely<any>): Promise<number> {
  const r = await db.selectFrom('prompts').select((eb) => eb.fn.countAll<number>().as('n')).where('status', 'in', FINISHED).executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Deletes the oldest finished prompts beyond `keep`; `finished` is their number when the caller knows it. */
export async function trimHistory(db: Kysely<any>, keep: number, finished?: number): Promise<number> {
  const total = finished ?? (await finishedCount(db));
  if (total <= keep) return 0;
  // Every finished prompt has an end time and no other has: the oldest come straight from the
  // (end_time, id) index. Selecting them by status instead sorted the whole history on every end.
  const victims = await db
    .selectFrom('prompts')
    .select('id')
    .where('end_time', 'is not', null)
    .orderBy('end_time')
    .orderBy('id')
    .limit(total - keep)
    .execute();
  if (victims.length === 0) return 0;
  const r = await db
    .deleteFrom('prompts')
    .where('id', 'in', victims.map((v) => v.id as string))
    .where('status', 'in', FINISHED)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

export interface JobQuery {
  owner?: string;
  statuses?: JobStatus[];
  workflowId?: string;
  workflowVersionId?: string;
  sortBy: 'created_at' | 'execution_duration';
  sortOrder: 'asc' | 'desc';
  limit?: number;
  offset: number;
}

export async function listJobs(db: Kysely<any>, q: JobQuery): Promise<{ rows: PromptRecord[]; total: number }> {
  // `?status=,` names no status: nothing matches (as the reference), and PostgreSQL refuses an empty IN ().
  if (q.statuses?.length === 0) return { rows: [], total: 0 };
  let base = db.selectFrom('prompts');
  if (q.owner !== undefined) base = base.where('owner', '=', q.owner);
  if (q.statuses) base = base.where('status', 'in', q.statuses);
  if (q.workflowId !== undefined) base = base.where('workflow_id', '=', q.workflowId);
  if (q.workflowVersionId !== undefined) base = base.where('workflow_version_id', '=', q.workflowVersionId);
  const total = Number((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  let sel = base.selectAll();
  const dir = q.sortOrder;
  if (q.sortBy === 'execution_duration') sel = sel.orderBy(sql`coalesce(end_time - start_time, -1)`, dir);
  sel = sel.orderBy('create_time', dir).orderBy('id', dir);
  if (q.limit !== undefined) sel = sel.limit(q.limit);
  if (q.offset > 0) sel = q.limit === undefined ? sel.limit(Number.MAX_SAFE_INTEGER).offset(q.offset) : sel.offset(q.offset);
  return { rows: (await sel.execute()).map(decode), total };
}

/**
 * Prompts left running by a process that died: they are reported failed,
 * never silently re-run. `workers` limits it to the given claimants.
 * `ended` hears of each (for its charge): it ran from its start until the
 * last sign of life the database holds of the process that ran it (the
 * latest time any prompt was stored, started or ended), never through the
 * time the service was down.
 */
export async function failOrphans(db: Kysely<any>, now: number, exceptWorker?: string, ended?: (job: { promptId: string; owner: string; startTime: number; endTime: number }) => void): Promise<string[]> {
  let q = db.selectFrom('prompts').select(['id', 'owner', 'start_time']).where('status', '=', 'in_progress');
  if (exceptWorker) q = q.where((eb) => eb.or([eb('worker', 'is', null), eb('worker', '!=', exceptWorker)]));
  const rows = await q.execute();
  const lastSeen = rows.length > 0 && ended ? await lastActivity(db) : 0;
  for (const r of rows) {
    const messages: Array<[string, Record<string, unknown>]> = [
      [
        'execution_error',
        {
          prompt_id: r.id,
          node_id: null,
          node_type: null,
          executed: [],
          exception_message: 'The server stopped while this prompt was running; it was not re-run.',
          exception_type: 'ServerRestart',
          traceback: [],
          current_inputs: {},
          current_outputs: [],
          timestamp: now,
        },
      ],
    ];
    await completePrompt(db, r.id as string, { status: 'failed', endTime: now, outputs: {}, meta: {}, messages });
    const start = r.start_time === null || r.start_time === undefined ? now : Number(r.start_time);
    ended?.({ promptId: r.id as string, owner: r.owner as string, startTime: start, endTime: Math.max(start, Math.min(now, lastSeen)) });
  }
  return rows.map((r) => r.id as string);
}

/** The latest time the prompts table records anything happening (stored, started, ended). */
async function lastActivity(db: Kysely<any>): Promise<number> {
  const r = await db
    .selectFrom('prompts')
    .select((eb) => [eb.fn.max<number>('create_time').as('c'), eb.fn.max<number>('start_time').as('s'), eb.fn.max<number>('end_time').as('e')])
    .executeTakeFirst();
  return Math.max(Number(r?.c ?? 0) || 0, Number(r?.s ?? 0) || 0, Number(r?.e ?? 0) || 0);
}

/** The largest |number| used so far, so a restarted server keeps counting up. */
export async function maxNumber(db: Kysely<any>): Promise<number> {
  const r = await db.selectFrom('prompts').select((eb) => eb.fn.max<number>(sql`abs(number)`).as('m')).executeTakeFirst();
  return Number(r?.m ?? 0) || 0;
}

/**
 * Shared queue (hosted runtime on PostgreSQL): takes the workspace's next
 * pending prompt for the graphile-worker job `jobId`. Prompts of one
 * workspace start in number order; rows another worker is claiming are
 * skipped.
 */
export async function claimNextOf(storage: Storage, owner: string, worker: string, jobId: string, now: number): Promise<PromptRecord | null> {
  const rows = await prepared(
    storage,
    'wf_claim_next_of',
    `update prompts set status = 'in_progress', worker = $1, job_id = $2, start_time = $3, attempts = attempts + 1
     where id = (select id from prompts where owner = $4 and status = 'pending' order by number, id limit 1 for update skip locked)
       and status = 'pending'
     returning *`,
    [worker, jobId, now, owner],
  );
  return rows[0] ? decode(rows[0]) : null;
}

/**
 * A statement of the shared queue's hot paths (PostgreSQL only, outside a
 * transaction), sent as a named query: each connection parses and plans it
 * once instead of on every prompt.
 */
async function prepared(storage: Storage, name: string, text: string, values: unknown[]): Promise<Array<Record<string, unknown>>> {
  return (await storage.pgPool!.query({ name, text, values })).rows;
}

/** The prompts a job had claimed and not finished: its worker died mid-run. */
export async function claimedByJob(db: Kysely<any>, jobId: string): Promise<PromptRecord[]> {
  const rows = await db.selectFrom('prompts').selectAll().where('job_id', '=', jobId).where('status', '=', 'in_progress').execute();
  return rows.map(decode);
}

/** Puts a prompt whose worker died back in the queue (its node set is idempotent); only while `jobId` still holds it. */
export async function requeueClaimed(db: Kysely<any>, id: string, jobId: string): Promise<boolean> {
  const r = await db.updateTable('prompts').set({ status: 'pending', worker: null, job_id: null, start_time: null }).where('id', '=', id).where('status', '=', 'in_progress').where('job_id', '=', jobId).executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Records the end of a prompt whose worker died; only while `jobId` still holds it. */
export async function failClaimed(db: Kysely<any>, id: string, jobId: string, c: Completion): Promise<boolean> {
  const r = await db
    .updateTable('prompts')
    .set({ status: c.status, end_time: c.endTime, outputs: JSON.stringify(c.outputs), meta: JSON.stringify(c.meta), status_messages: JSON.stringify(c.messages), sensitive: null, worker: null })
    .where('id', '=', id)
    .where('status', '=', 'in_progress')
    .where('job_id', '=', jobId)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** A running prompt's end for a worker that died: failed, with the reason as its error message. */
export function lostWorkerCompletion(id: string, now: number, message: string): Completion {
  return {
    status: 'failed',
    endTime: now,
    outputs: {},
    meta: {},
    messages: [
      [
        'execution_error',
        { prompt_id: id, node_id: null, node_type: null, executed: [], exception_message: message, exception_type: 'WorkerLost', traceback: [], current_inputs: {}, current_outputs: [], timestamp: now },
      ],
    ],
  };
}

/** Running prompts (of one owner), for an interrupt that may reach another process. */
export async function runningIds(db: Kysely<any>, owner?: string): Promise<string[]> {
  let q = db.selectFrom('prompts').select('id').where('status', '=', 'in_progress');
  if (owner !== undefined) q = q.where('owner', '=', owner);
  return (await q.execute()).map((r) => r.id as string);
}
