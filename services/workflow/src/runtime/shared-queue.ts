import type pg from 'pg';
import { sql } from 'kysely';
import { GraphileQueue, type JobContext } from '@svc/queue';
import { quoteIdent, type Storage } from '@svc/storage';
import { claimedByJob, claimNextOf, decode as decodePrompt, failClaimed, lostWorkerCompletion, PROMPT_COLUMNS, requeueClaimed, type PromptRecord } from '../domain/prompts.ts';

export const RUN_TASK = 'workflow_run';

export const LOST_MESSAGE = 'The worker running this prompt stopped; it was not re-run.';

/** The advisory lock class of a workspace's token inserts (the second key is the owner's hash). */
const OWNER_LOCK = 0x77660001;

/** How often each process deletes the queue rows of idle workspace slots. */
const SWEEP_MS = 5_000;

/** How many times a prompt whose worker died is started again (idempotent node sets only). */
const MAX_STARTS = 3;

export interface SharedQueueOptions {
  /** max_concurrent_jobs: prompts of one workspace running at once, across every process. */
  maxConcurrent: number;
  /** Node classes whose prompts may run again after their worker died (`*`: every class). */
  idempotentNodes: Set<string>;
  /** Prompts taken by this process at once (default 1: one engine per worker, as a GPU worker). */
  concurrency?: number;
  /**
   * How long a token fetched ahead (while the engine is busy) may wait for
   * it before going back to the queue for an idle process (default 100 ms).
   */
  prefetchHoldMs?: number;
  log: { warn(o: object, m: string): void; error(o: object, m: string): void };
}

export interface ClaimHandler {
  workerId: string;
  /** Runs a claimed prompt to its recorded end; calls `engineFree` once the engine is done with it. */
  runClaimed(record: PromptRecord, engineFree?: () => void): Promise<void>;
  /** A prompt's worker died: it was failed (its client is told) or put back in the queue. */
  lost(record: PromptRecord, requeued: boolean): void;
}

/**
 * The hosted runtime's queue on PostgreSQL, shared by every API process and
 * worker (`npm run workflow:worker`) through graphile-worker.
 *
 * The prompts table stays the queue's truth (order, status, history); each
 * stored prompt adds one graphile-worker job, a token that lets one process
 * claim the workspace's next prompt. Its job options carry the scheduling:
 * - fairness: the job's priority is the workspace's number of prompts
 *   already queued or running, so a workspace's first prompt goes before
 *   another's hundredth;
 * - max_concurrent_jobs = L: the job joins one of L named queues of its
 *   workspace, and graphile-worker runs a named queue's jobs one at a time,
 *   across processes;
 * - a worker that dies: its pool's liveness lock goes with its connection,
 *   any process's sweep unlocks the job within seconds (packages/queue), and
 *   the job's next attempt finds the prompt it had claimed: failed, or run
 *   again when every node class in it is declared idempotent.
 *
 * Each process fetches one token more than it has engine slots, so the next
 * token is on hand when a prompt ends (no fetch between two prompts). A
 * fetched token claims nothing until a slot is free, so order, limits and
 * charges are as without it; one that waits longer than `prefetchHoldMs` is
 * put back in its queue (an idle process may take it), and this process
 * fetches again only when its engine is free.
 */
export class SharedQueue {
  readonly queue: GraphileQueue;
  private handler?: ClaimHandler;
  private readonly slots: number;
  private readonly holdMs: number;
  private busy = 0;
  /** Tokens (or handed-back fetch slots) waiting for the engine, first come first served. */
  private waiting: Array<() => void> = [];
  private stopping = false;
  private sweep?: NodeJS.Timeout;

  constructor(
    private readonly storage: Storage,
    private readonly o: SharedQueueOptions,
  ) {
    this.holdMs = o.prefetchHoldMs ?? 100;
    this.queue = new GraphileQueue(storage, {
      tasks: { [RUN_TASK]: (payload, ctx) => this.run(payload as { owner?: unknown }, ctx) },
      concurrency: (this.slots = Math.max(1, Math.floor(o.concurrency ?? 1))) + 1,
      // Idle workers are woken by add_job's NOTIFY; the poll only covers a lost notification.
      pollIntervalMs: 1000,
      deadWorkerCheckMs: 1000,
      onError: (err, task, ctx) => o.log.error({ err, task, job: ctx.jobId }, 'shared queue task failed'),
    });
  }

  async ensureSchema(): Promise<void> {
    await this.queue.ensureSchema();
    const s = quoteIdent(this.storage.pgSchema!);
    const cols = PROMPT_COLUMNS.join(', ');
    const w = this.queue.schemaSql;
    await this.ensureNumberSequence();
    // Stores prompts and adds their tokens in one statement, so one round trip is the whole
    // transaction: each workspace's lock (owners in one order, so two API processes storing
    // prompts of the same workspaces neither deadlock nor count the same prompts ahead) is held
    // only for the insert, the adds and the commit, never across a round trip to a busy process.
    // Statements of a volatile function take their own snapshot: the counts see every prompt
    // committed before the locks were granted.
    await this.storage
      .pgPool!.query(
        `create or replace function ${s}.wf_store_numbered_prompts(rows jsonb, slots int) returns table (id text, number double precision) language plpgsql as $fn$
#variable_conflict use_column
declare
  stored text[];
  numbers double precision[];
  owners text[];
  queues text[];
  prios int[];
  numbered jsonb := '[]';
  e jsonb;
begin
  perform pg_advisory_xact_lock(${OWNER_LOCK}, hashtext(o)) from (select distinct e->>'owner' as o from jsonb_array_elements(rows) e order by 1) t;
  -- Numbers from one sequence, taken in the rows' order under their workspaces' locks: a workspace's prompts are
  -- numbered in the order they were stored, whichever process stored them (each process counting for itself gave
  -- two API processes the same numbers, and a restarted one numbers below the prompts still queued).
  for e in select x from jsonb_array_elements(rows) with ordinality as r(x, ord) order by ord loop
    if jsonb_typeof(e->'number') is distinct from 'number' then
      e := jsonb_set(e, '{number}', to_jsonb(nextval('${s.replace(/'/g, "''")}.prompt_numbers') * case when e->>'front' = 'true' then -1 else 1 end));
    end if;
    numbered := numbered || jsonb_build_array(e);
  end loop;
  rows := numbered;
  with i as (
    insert into ${s}.prompts as p (${cols}) select ${cols} from jsonb_populate_recordset(null::${s}.prompts, rows) on conflict (id) do nothing returning p.id, p.number
  ) select coalesce(array_agg(i.id), '{}'), coalesce(array_agg(i.number), '{}') into stored, numbers from i;
  -- The tokens, as graphile-worker's add_jobs inserts them (task and queue rows upserted, one insert), but without its
  -- NOTIFY: a notifying transaction holds the database's one notification lock through its commit, and this commit
  -- waits for the disk; every other process's notifications (relayed frames, queue wake-ups) would wait with it.
  -- The caller notifies after the commit, from a connection whose commits do not wait for the disk.
  select coalesce(array_agg(t.owner order by t.ord), '{}'), coalesce(array_agg(t.qn order by t.ord), '{}'), coalesce(array_agg(t.prio order by t.ord), '{}')
  into owners, queues, prios
  from (
    select a.owner, a.ord, 'wf:' || a.owner || ':' || (a.ahead % slots)::text as qn, least(a.ahead, 32000) as prio
    from (
      select v.owner, v.ord, greatest(b.n - count(*) over (partition by v.owner) + row_number() over (partition by v.owner order by v.ord) - 1, 0) as ahead
      from jsonb_array_elements(rows) with ordinality as e(x, ord)
      cross join lateral (select e.x->>'id' as id, e.x->>'owner' as owner, e.ord) v
      join (select owner, count(*) as n from ${s}.prompts where owner in (select distinct e2->>'owner' from jsonb_array_elements(rows) e2) and status in ('pending', 'in_progress') group by owner) b on b.owner = v.owner
      where v.id = any(stored)
    ) a
  ) t;
  -- A statement of its own: the insert below must see the queue rows this one adds.
  insert into ${w}._private_job_queues (queue_name) select distinct q from unnest(queues) q order by 1 on conflict do nothing;
  insert into ${w}._private_jobs (job_queue_id, task_id, payload, run_at, max_attempts, priority)
  select (select id from ${w}._private_job_queues where queue_name = x.qn), (select id from ${w}._private_tasks where identifier = '${RUN_TASK}'),
    json_build_object('owner', x.o), clock_timestamp(), 25, x.p
  from unnest(owners, queues, prios) with ordinality as x(o, qn, p, ord) order by x.ord;
  return query select * from unnest(stored, numbers);
end $fn$`,
      )
      .catch((err) => {
        // Several processes starting at once: one definition wins, the same for all.
        if (!/already exists|tuple concurrently updated/i.test(String((err as Error)?.message))) throw err;
      });
    // The tokens' task row, which add_jobs would otherwise upsert with every batch.
    await this.storage.pgPool!.query(`insert into ${w}._private_tasks (identifier) values ('${RUN_TASK}') on conflict do nothing`);
  }

  /**
   * The sequence every process numbers prompts from. Created once, starting
   * above the numbers already stored (a database the processes numbered
   * themselves before it existed); under a lock, so processes starting
   * together neither race the creation nor move a sequence in use.
   */
  private async ensureNumberSequence(): Promise<void> {
    const schema = this.storage.pgSchema!;
    const s = quoteIdent(schema);
    await this.storage.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext(${`wf prompt numbers ${schema}`}))`.execute(trx);
      const exists = await sql<{ r: string | null }>`select to_regclass(${`${s}.prompt_numbers`}) as r`.execute(trx);
      if (exists.rows[0]?.r) return;
      const max = await sql<{ m: number | null }>`select max(abs(number)) as m from prompts`.execute(trx);
      const start = Math.floor(Number(max.rows[0]?.m ?? 0) || 0) + 1;
      await sql.raw(`create sequence ${s}.prompt_numbers as bigint start with ${start}`).execute(trx);
    });
  }

  /**
   * Stores prompts (rows of the prompts table, in order) with their tokens,
   * atomically, in one round trip; answers the ids stored (an id already
   * present is skipped), each with its number (a row without one is numbered
   * from the shared sequence).
   */
  async store(rows: Array<Record<string, unknown>>): Promise<Map<string, number>> {
    const slots = Math.max(1, Math.floor(this.o.maxConcurrent));
    const fn = sql.raw(`${quoteIdent(this.storage.pgSchema!)}.wf_store_numbered_prompts`);
    const r = await sql<{ id: string; number: number }>`select * from ${fn}(${JSON.stringify(rows)}::jsonb, ${slots}::int)`.execute(this.storage.db);
    if (r.rows.length > 0) this.notifyInserted(r.rows.length);
    return new Map(r.rows.map((x) => [x.id, Number(x.number)]));
  }

  private notifier?: pg.Pool;

  /**
   * Wakes idle workers for `count` new tokens, as add_jobs would have inside
   * the store (graphile-worker's own message), from a connection whose commits
   * do not wait for the disk. Not awaited: if it is lost, workers find the
   * tokens at their next poll.
   */
  private notifyInserted(count: number): void {
    this.notifier ??= this.openNotifier();
    this.notifier
      .query({ name: 'wf_jobs_inserted', text: `select pg_notify('jobs:insert', $1)`, values: [`{"r":${Math.random()},"count":${count}}`] })
      .catch((err) => this.o.log.warn({ err }, 'idle workers could not be woken for new prompts (they poll)'));
  }

  private openNotifier(): pg.Pool {
    const Pool = (this.storage.pgPool!.constructor as typeof pg.Pool);
    const pool = new Pool({ connectionString: this.storage.databaseUrl, max: 1, options: '-c synchronous_commit=off' });
    pool.on('error', () => {});
    return pool;
  }

  /** Starts taking prompts in this process. */
  async start(handler: ClaimHandler): Promise<void> {
    this.handler = handler;
    this.stopping = false;
    await this.queue.start();
    this.sweep ??= setInterval(() => {
      this.sweepIdleQueues().catch((err) => this.o.log.warn({ err }, 'idle workspace queues could not be swept'));
    }, SWEEP_MS);
    this.sweep.unref();
  }

  async stop(): Promise<void> {
    const notifier = this.notifier;
    this.notifier = undefined;
    await notifier?.end().catch(() => {});
    clearInterval(this.sweep);
    this.sweep = undefined;
    // Tokens waiting for the engine go back to the queue now, instead of holding the shutdown.
    this.stopping = true;
    for (const wake of this.waiting.splice(0)) wake();
    await this.queue.stop();
  }

  /**
   * Deletes the named-queue rows of workspace slots that hold no token.
   * graphile-worker never removes them, and every job fetch locks each
   * available queue row (FOR UPDATE SKIP LOCKED), so without this each fetch
   * would cost more with every workspace (and slot) that ever queued a
   * prompt. A queue whose workspace is storing prompts or handing a token
   * back (its advisory lock is held) is left alone, so a token is never
   * added to a queue row being deleted; the next token re-creates the row.
   * Answers how many rows went.
   */
  async sweepIdleQueues(): Promise<number> {
    const s = sql.raw(this.queue.schemaSql);
    const owner = sql`substring(q.queue_name from '^wf:(.*):[0-9]+$')`;
    const idle = sql`q.locked_at is null and q.queue_name like 'wf:%' and q.id not in (select job_queue_id from ${s}._private_jobs where job_queue_id is not null)`;
    return this.storage.db.transaction().execute(async (trx) => {
      // The locks first, then the delete in a statement of its own: its snapshot is taken after
      // them, so it sees every token of a store or hand-back that held one of these locks.
      const locked = await sql<{ o: string }>`
        select o from (select distinct ${owner} as o from ${s}._private_job_queues q where ${idle}) t
        where o is not null and pg_try_advisory_xact_lock(${OWNER_LOCK}, hashtext(o))`.execute(trx);
      if (locked.rows.length === 0) return 0;
      const r = await sql`delete from ${s}._private_job_queues q where ${idle} and ${owner} = any(${locked.rows.map((x) => x.o)}::text[])`.execute(trx);
      return Number(r.numAffectedRows ?? 0);
    });
  }

  /**
   * Waits for an engine slot: true once this caller holds one, false when
   * `ms` passed first (or the queue is stopping); then it holds nothing.
   */
  private acquire(ms: number): Promise<boolean> {
    if (this.stopping) return Promise.resolve(false);
    if (this.busy < this.slots) {
      this.busy += 1;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiting = this.waiting.filter((w) => w !== wake);
        if (this.stopping || this.busy >= this.slots) return resolve(false);
        this.busy += 1;
        resolve(true);
      };
      const timer = Number.isFinite(ms) ? setTimeout(wake, ms) : undefined;
      this.waiting.push(wake);
    });
  }

  private releaseSlot(): void {
    this.busy -= 1;
    this.waiting[0]?.();
  }

  private async run(payload: { owner?: unknown }, ctx: JobContext): Promise<void> {
    const h = this.handler;
    if (!h || typeof payload?.owner !== 'string') return;
    const owner = payload.owner;
    if (ctx.attempt > 1) await this.recover(ctx.jobId, owner);
    const fetchedAhead = this.stopping || this.busy >= this.slots;
    if (!(await this.acquire(this.holdMs))) {
      await this.handBack(ctx, owner);
      // Hold this fetch slot, without a token, until the engine is free: fetching again now
      // would only take a token for the engine to keep waiting on.
      if (await this.acquire(Infinity)) this.releaseSlot();
      return;
    }
    // The slot frees when the engine is done, so the next token claims while this end is written.
    let held = true;
    const free = () => {
      if (held) this.releaseSlot();
      held = false;
    };
    let handBack = false;
    try {
      let record: PromptRecord | null;
      if (fetchedAhead) {
        // Fetched while the engine was busy: a token stored since then may go before it (fairness).
        const r = await this.claimUnlessBetter(owner, h.workerId, ctx, Date.now());
        record = r.record;
        handBack = r.better;
      } else {
        record = await claimNextOf(this.storage, owner, h.workerId, ctx.jobId, Date.now());
      }
      // No prompt left: it was cancelled or deleted while queued; the token has nothing to do.
      if (record) await h.runClaimed(record, free);
    } finally {
      free();
    }
    // The freed engine takes the better token next; this one waits its turn again, with its priority.
    if (handBack) await this.handBack(ctx, owner);
  }

  /**
   * claimNextOf, unless an available token of a better priority than this
   * one's is waiting: then nothing is claimed and `better` is true. One
   * statement (a named one): the check costs no round trip.
   */
  private async claimUnlessBetter(owner: string, worker: string, ctx: JobContext, now: number): Promise<{ record: PromptRecord | null; better: boolean }> {
    const w = this.queue.schemaSql;
    const r = await this.storage.pgPool!.query({
      name: 'wf_claim_unless_better',
      text: `with better as (
          select exists (
            select 1 from ${w}._private_jobs j
            where j.is_available and j.run_at <= now() and j.priority < $5
              and (j.job_queue_id is null or j.job_queue_id in (select id from ${w}._private_job_queues where is_available))
          ) as b
        ), claimed as (
          update prompts set status = 'in_progress', worker = $1, job_id = $2, start_time = $3, attempts = attempts + 1
          where id = (select id from prompts where owner = $4 and status = 'pending' order by number, id limit 1 for update skip locked)
            and status = 'pending' and not (select b from better)
          returning *
        )
        select (select b from better) as svc_better, claimed.* from better left join claimed on true`,
      values: [worker, ctx.jobId, now, owner, ctx.priority ?? 0],
    });
    const row = r.rows[0] as Record<string, unknown> | undefined;
    const better = row?.svc_better === true;
    if (!row || row.id === null || row.id === undefined) return { record: null, better };
    delete row.svc_better;
    return { record: decodePrompt(row), better };
  }

  /**
   * Puts a fetched token back: a copy joins the same named queue with the
   * same priority, and the token itself ends and unlocks that queue, in one
   * transaction. If this process dies first, the token is released as any
   * dead worker's job (a copy already added only finds nothing to claim).
   */
  private async handBack(ctx: JobContext, owner: string): Promise<void> {
    const s = sql.raw(this.queue.schemaSql);
    try {
      await this.storage.db.transaction().execute(async (trx) => {
        // The workspace's lock, as when its prompts are stored: the sweep of idle queues leaves its queues alone meanwhile.
        await sql`select pg_advisory_xact_lock(${OWNER_LOCK}, hashtext(${owner}))`.execute(trx);
        const r = await sql<{ queue_name: string | null }>`
          with old as (delete from ${s}._private_jobs where id = ${ctx.jobId}::bigint and locked_by = ${ctx.lockedBy ?? null}::text returning job_queue_id)
          update ${s}._private_job_queues q set locked_by = null, locked_at = null from old
          where q.id = old.job_queue_id and q.locked_by = ${ctx.lockedBy ?? null}::text
          returning q.queue_name`.execute(trx);
        // Not ours any more (released as a dead worker's meanwhile): nothing to hand back.
        if (r.rows.length === 0 && ctx.queueId != null) return;
        await sql`select ${this.queue.addSql(RUN_TASK, { owner }, { priority: ctx.priority ?? 0, queueName: r.rows[0]?.queue_name ?? undefined, maxAttempts: 25 })}`.execute(trx);
      });
    } catch (err) {
      // The token stays with this job: it runs when the engine is free, as without prefetch.
      this.o.log.warn({ err, job: ctx.jobId, owner }, 'a prefetched queue token could not be handed back');
      // Stopping: the job fails, so the queue tries it again later (its prompt stays pending).
      if (this.stopping) throw err;
      if (await this.acquire(Infinity)) {
        try {
          const record = await claimNextOf(this.storage, owner, this.handler!.workerId, ctx.jobId, Date.now());
          if (record) await this.handler!.runClaimed(record);
        } finally {
          this.releaseSlot();
        }
      }
    }
  }

  /** The job ran before in a worker that is gone: settle the prompt it had claimed. */
  private async recover(jobId: string, owner: string): Promise<void> {
    const db = this.storage.db;
    for (const p of await claimedByJob(db, jobId)) {
      const rerun = this.idempotent(p) && (await this.starts(p.id)) < MAX_STARTS;
      if (rerun && (await requeueClaimed(db, p.id, jobId))) {
        this.o.log.warn({ prompt_id: p.id, job: jobId, owner }, 'the worker running this prompt is gone; its nodes are idempotent, so it runs again');
        this.handler?.lost(p, true);
      } else if (await failClaimed(db, p.id, jobId, lostWorkerCompletion(p.id, Date.now(), LOST_MESSAGE))) {
        this.o.log.warn({ prompt_id: p.id, job: jobId, owner }, 'the worker running this prompt is gone; the prompt is marked failed');
        this.handler?.lost(p, false);
      }
    }
  }

  private idempotent(p: PromptRecord): boolean {
    const set = this.o.idempotentNodes;
    if (set.size === 0) return false;
    if (set.has('*')) return true;
    return Object.values(p.prompt).every((n) => n && typeof n === 'object' && set.has((n as { class_type?: string }).class_type ?? ''));
  }

  private async starts(id: string): Promise<number> {
    const r = await this.storage.db.selectFrom('prompts').select('attempts').where('id', '=', id).executeTakeFirst();
    return Number(r?.attempts ?? 0);
  }
}

/** `--idempotent-nodes A,B` / WORKFLOW_IDEMPOTENT_NODES: classes whose prompts may run again after a worker died. */
export function idempotentNodes(flag: unknown, env = process.env): Set<string> {
  const v = typeof flag === 'string' ? flag : (env.WORKFLOW_IDEMPOTENT_NODES ?? '');
  return new Set(v.split(',').map((s) => s.trim()).filter(Boolean));
}

/** A duration flag (`--name N`, or its environment variable): milliseconds ≥ 0, undefined when unset. */
export function millisecondsFlag(name: string, v: unknown): number | undefined {
  if (v === undefined || v === '' || v === true) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a number of milliseconds ≥ 0, not ${JSON.stringify(v)}`);
  return n;
}

/** `--prefetch-hold-ms N` / WORKFLOW_PREFETCH_HOLD_MS: how long a token fetched ahead waits for this process's engine. */
export function prefetchHoldMs(flag: unknown, env = process.env): number | undefined {
  return millisecondsFlag('prefetch-hold-ms', flag ?? env.WORKFLOW_PREFETCH_HOLD_MS);
}
