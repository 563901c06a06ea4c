import { sql, type Kysely, type RawBuilder } from 'kysely';
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Logger, Runner, TaskList, WorkerEvents } from 'graphile-worker';
import type { Storage } from '@svc/storage';
import { quoteIdent } from '@svc/storage';
import type { AddJobOptions, JobQueue, NewJob, QueueOptions, SqlJobOptions } from './types.ts';
import type pg from 'pg';
import { LIVENESS_LOCK_CLASS, PoolLiveness, releaseDeadPoolsSql } from './pool-liveness.ts';

/** Locks younger than this are never treated as orphaned (a new pool takes its liveness lock within milliseconds). */
const DEAD_LOCK_GRACE_MS = 2000;
export const DEFAULT_DEAD_WORKER_CHECK_MS = 2000;

/**
 * graphile-worker on the service's PostgreSQL database: workers in any number
 * of processes on any number of machines share the jobs (SKIP LOCKED +
 * LISTEN/NOTIFY). `add` goes through SQL so it can join the caller's transaction.
 */
export class GraphileQueue implements JobQueue {
  readonly kind = 'graphile-worker' as const;
  #storage: Storage;
  #opts: QueueOptions;
  #schema: string;
  #runner: Runner | undefined;
  #stopped = false;
  #liveness: PoolLiveness | undefined;
  #sweep: NodeJS.Timeout | undefined;

  constructor(storage: Storage, opts: QueueOptions) {
    if (!storage.pgPool) throw new Error('GraphileQueue needs PostgreSQL storage');
    this.#storage = storage;
    this.#opts = opts;
    this.#schema = opts.graphileSchema ?? `${storage.pgSchema}_worker`;
  }

  async ensureSchema(): Promise<void> {
    const { runMigrations } = await graphile();
    await runMigrations({ pgPool: this.#storage.pgPool!, schema: this.#schema, logger: await quietLogger() });
    // The dead-worker sweep looks up locked jobs; without this it reads the whole table.
    // Another process may be creating it at the same moment: either one wins.
    const s = quoteIdent(this.#schema);
    await this.#storage.pgPool!.query(`create index if not exists svc_jobs_locked_by on ${s}._private_jobs (locked_by) where locked_by is not null`).catch(() => {});
    // Every job is inserted, locked and deleted within seconds: with the default thresholds (20 % of a
    // table that is nearly empty between bursts) vacuum comes late, and each fetch walks the dead
    // entries of the jobs and their queues meanwhile.
    await this.#storage
      .pgPool!.query(`alter table ${s}._private_jobs set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
        alter table ${s}._private_job_queues set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)`)
      .catch(() => {});
    // addSql's `quiet` enqueue: add_jobs' inserts for one job without a key, without its pg_notify (see SqlJobOptions.quiet).
    await this.#storage
      .pgPool!.query(
        `create or replace function ${s}.svc_add_job_quiet(p_identifier text, p_payload json, p_queue_name text, p_run_at timestamptz, p_max_attempts int, p_priority int)
           returns bigint language plpgsql as $$
           declare v_id bigint;
           begin
             insert into ${s}._private_tasks (identifier) values (p_identifier) on conflict do nothing;
             if p_queue_name is not null then
               insert into ${s}._private_job_queues (queue_name) values (p_queue_name) on conflict do nothing;
             end if;
             insert into ${s}._private_jobs (job_queue_id, task_id, payload, run_at, max_attempts, priority)
               select q.id, t.id, coalesce(p_payload, '{}'::json), coalesce(p_run_at, now()), coalesce(p_max_attempts, 25), coalesce(p_priority, 0)
               from ${s}._private_tasks t left join ${s}._private_job_queues q on q.queue_name = p_queue_name
               where t.identifier = p_identifier
               returning id into v_id;
             return v_id;
           end $$`,
      )
      .catch((err) => {
        if (!/already exists|tuple concurrently updated/i.test(String((err as Error)?.message))) throw err;
      });
    // The unlock wake below asks whether a queue still holds a job.
    await this.#storage.pgPool!.query(`create index if not exists svc_jobs_queue on ${s}._private_jobs (job_queue_id) where job_queue_id is not null`).catch(() => {});
    // A named queue's next job becomes available when the job holding the queue ends, but
    // graphile-worker wakes idle workers only on inserts: those that found every queue locked
    // would sleep until their next poll. The queue row's unlock (in the ending transaction)
    // wakes one idle worker per process, as an insert does, when the queue still holds a job
    // (an empty queue's unlock would only make every process look for nothing).
    await this.#storage
      .pgPool!.query(
        `create or replace function ${s}.svc_wake_on_queue_unlock() returns trigger language plpgsql as $$ begin
           if exists (select 1 from ${s}._private_jobs j where j.job_queue_id = new.id and j.locked_at is null) then perform pg_notify('jobs:insert', '{"count":1}'); end if;
           return null; end $$;
         create or replace trigger svc_wake_on_queue_unlock after update of locked_at on ${s}._private_job_queues
           for each row when (old.locked_at is not null and new.locked_at is null) execute function ${s}.svc_wake_on_queue_unlock()`,
      )
      .catch((err) => {
        // Two processes creating it at the same moment: one wins, the other's attempt is redundant.
        if (!/already exists|tuple concurrently updated/i.test(String((err as Error)?.message))) throw err;
      });
  }

  /**
   * Unlocks the jobs held by worker pools whose process is gone (killed,
   * crashed, lost its connection), so that live workers take them now rather
   * than after graphile-worker's 4-hour lock timeout. Runs when workers start
   * and every `deadWorkerCheckMs`; callable by hand. Every worker process on
   * the schema must be a GraphileQueue: a pool without a liveness lock counts
   * as dead. Returns how many jobs became available.
   */
  async releaseDeadWorkers(): Promise<number> {
    const s = quoteIdent(this.#schema);
    const pool = this.#storage.pgPool!;
    const r = await pool.query<{ ids: string[]; jobs: number }>({
      // Prepared per connection; the name (≤ 63 bytes) must differ per schema sharing a pool.
      name: `svc_release_dead_workers_${createHash('sha1').update(this.#schema).digest('hex').slice(0, 16)}`,
      text: releaseDeadPoolsSql(s),
      values: [LIVENESS_LOCK_CLASS, DEAD_LOCK_GRACE_MS],
    });
    const { ids = [], jobs = 0 } = r.rows[0] ?? {};
    // Idle workers of every process wait for a NOTIFY (or their next poll): tell them.
    if (ids.length > 0) await pool.query(`select pg_notify('jobs:insert', $1)`, [JSON.stringify({ count: Math.max(1, jobs) })]);
    return jobs;
  }

  async add(task: string, payload: unknown, opts: AddJobOptions = {}, executor?: Kysely<any>): Promise<void> {
    await sql`select ${this.addSql(task, payload, opts)}`.execute(executor ?? this.#storage.db);
  }

  /**
   * One statement: graphile-worker's add_jobs over the whole list. Its jobs
   * are ordered by (priority, run_at) only, so a job without its own run_at
   * gets the statement's clock_timestamp() plus its position in microseconds:
   * the list's order, as that many `add` calls would give (a later statement
   * of the caller's starts after this one's clock). Jobs with a key (a
   * key may repeat within the list) go one by one through `add`.
   */
  async addMany(jobs: ReadonlyArray<NewJob>, executor?: Kysely<any>): Promise<void> {
    if (!jobs.length) return;
    if (jobs.length === 1 || jobs.some((j) => j.opts?.jobKey)) {
      for (const j of jobs) await this.add(j.task, j.payload, j.opts, executor);
      return;
    }
    const spec = jobs.map(({ task, payload, opts = {} }) => ({
      t: task,
      p: payload ?? null,
      r: opts.runAt ? opts.runAt.toISOString() : null,
      m: opts.maxAttempts ?? 25,
      q: opts.queueName ?? null,
      o: opts.priority ?? 0,
    }));
    const s = quoteIdent(this.#schema);
    const fn = sql.raw(`${s}.add_jobs`);
    const type = sql.raw(`${s}.job_spec`);
    await sql`select count(*) from ${fn}(array(
        select row(e.j->>'t', e.j->'p', e.j->>'q', coalesce((e.j->>'r')::timestamptz, c.t + e.n * interval '1 microsecond'), (e.j->>'m')::int, null, (e.j->>'o')::int, null)::${type}
        from json_array_elements(${JSON.stringify(spec)}::json) with ordinality as e(j, n), (select clock_timestamp() as t) c
        order by e.n))`.execute(executor ?? this.#storage.db);
  }

  /**
   * The add_job call as an SQL expression, for a caller that enqueues inside
   * one statement of its own (e.g. in a CTE, to write a row and its job in a
   * single round trip). Evaluates to the job row.
   */
  addSql(task: string, payload: unknown, opts: SqlJobOptions = {}): RawBuilder<unknown> {
    // graphile-worker orders by (priority, run_at) only, and its default run_at is now(), the
    // same for every job of a transaction: their order would then follow the rows' physical
    // position, which changes when a row is updated (a job released from a dead worker would
    // fall behind the jobs queued after it). clock_timestamp() keeps the order of the adds.
    if (opts.quiet && !opts.jobKey) {
      const quiet = sql.raw(`${quoteIdent(this.#schema)}.svc_add_job_quiet`);
      return sql`${quiet}(${task}::text, ${JSON.stringify(payload ?? null)}::json, ${opts.queueName ?? null}::text,
        coalesce(${opts.runAt ?? null}::timestamptz, clock_timestamp()), ${opts.maxAttempts ?? 25}::int, ${opts.priority ?? 0}::int)`;
    }
    const fn = sql.raw(`${quoteIdent(this.#schema)}.add_job`);
    return sql`${fn}(
      identifier => ${task}::text,
      payload => ${JSON.stringify(payload ?? null)}::json,
      run_at => coalesce(${opts.runAt ?? null}::timestamptz, clock_timestamp()),
      max_attempts => ${opts.maxAttempts ?? 25}::int,
      job_key => ${opts.jobKey ?? null}::text,
      queue_name => ${opts.queueName ?? null}::text,
      priority => ${opts.priority ?? 0}::int
    )`;
  }

  /** The schema of graphile-worker's tables (quoted), for callers that manage their own jobs in SQL. */
  get schemaSql(): string {
    return quoteIdent(this.#schema);
  }

  async depth(): Promise<number> {
    const t = sql.raw(`${quoteIdent(this.#schema)}._private_jobs`);
    const r = await sql<{ n: number }>`select count(*)::int as n from ${t} where attempts < max_attempts or locked_at is not null`.execute(this.#storage.db);
    return Number(r.rows[0]?.n ?? 0);
  }

  #starting: Promise<void> | undefined;

  start(): Promise<void> {
    if (this.#runner) return Promise.resolve();
    // One start at a time: two overlapping ones would each make a runner, and stop() would know only the last.
    this.#starting ??= this.#start().finally(() => (this.#starting = undefined));
    return this.#starting;
  }

  async #start(): Promise<void> {
    if (this.#runner) return;
    this.#stopped = false;
    const taskList: TaskList = {};
    for (const [name, handler] of Object.entries(this.#opts.tasks)) {
      taskList[name] = async (payload, helpers) => {
        const j = helpers.job;
        const ctx = { jobId: String(j.id), attempt: j.attempts, maxAttempts: j.max_attempts, priority: j.priority, queueId: j.job_queue_id, lockedBy: j.locked_by };
        try {
          await handler(payload, ctx);
        } catch (err) {
          this.#opts.onError?.(err, name, ctx);
          throw err;
        }
      };
    }
    const checkMs = this.#opts.deadWorkerCheckMs ?? DEFAULT_DEAD_WORKER_CHECK_MS;
    const events: WorkerEvents = new EventEmitter();
    if (checkMs > 0 && !this.#liveness) {
      const pool = this.#storage.pgPool!;
      const liveness = new PoolLiveness((pool as unknown as { options: pg.ClientConfig }).options, (err) =>
        this.#opts.onError?.(err, '(worker liveness)', { jobId: '', attempt: 0, maxAttempts: 0 }),
      );
      await liveness.open();
      if (this.#stopped) {
        // stop() ran while this start was on its way (a restart after another schema's migration, or a quick close)
        await liveness.close();
        return;
      }
      this.#liveness = liveness;
    }
    // Emitted synchronously when the pool is built, before its workers ask for jobs.
    events.on('pool:create', ({ workerPool }) => this.#liveness?.hold(workerPool.id));
    events.on('pool:release', ({ workerPool }) => this.#liveness?.release(workerPool.id));
    const { run } = await graphile();
    const runner = await run({
      pgPool: this.#storage.pgPool!,
      events,
      schema: this.#schema,
      concurrency: this.#opts.concurrency ?? 4,
      pollInterval: this.#opts.pollIntervalMs ?? 2000,
      noHandleSignals: true,
      taskList,
      logger: await quietLogger(),
      // Completions of jobs that end together go in one statement (a round trip per job saved at high throughput);
      // 0 ms waits only for the jobs finishing in the same tick, so a named queue is unlocked as soon as before.
      preset: { worker: { completeJobBatchDelay: this.#opts.completeBatchDelayMs ?? 0 } },
    });
    if (this.#stopped) {
      // Stopped while starting: stop() found no runner to stop, and this one would outlive the pool its owner then ended
      // (its cron and listener retry on timers for ever, keeping the process alive).
      await runner.stop().catch(() => {});
      if (process.exitCode === 57) process.exitCode = undefined;
      return;
    }
    this.#runner = runner;
    if (checkMs > 0 && !this.#sweep) {
      const sweep = () => {
        if (this.#stopped) return;
        this.releaseDeadWorkers().catch((err) => this.#opts.onError?.(err, '(release dead workers)', { jobId: '', attempt: 0, maxAttempts: 0 }));
      };
      sweep();
      this.#sweep = setInterval(sweep, checkMs);
      this.#sweep.unref();
    }
    // graphile-worker's "worker:migrate" NOTIFY is database-wide: installing the
    // worker schema of another service (or test) in the same database makes
    // every running worker shut down and set process.exitCode = 57. Our schema
    // did not change, so take the exit code back and start again.
    runner.promise
      .catch(() => {})
      .finally(() => {
        // Also when this runner was stopped meanwhile: the code would otherwise outlive it and fail the process's exit.
        if (process.exitCode === 57) process.exitCode = undefined;
        if (this.#runner !== runner) return;
        this.#runner = undefined;
        const t = setTimeout(() => {
          if (!this.#runner && !this.#stopped) this.start().catch((err) => process.stderr.write(`[graphile-worker] restart failed: ${err}\n`));
        }, 200);
        t.unref();
      });
  }

  wake(): void {
    // graphile-worker is woken by NOTIFY from add_job.
  }

  /** A NOTIFY is on its way / another is owed when it returns (see notifyAdded). */
  #notifying = false;
  #notifyOwed = false;

  notifyAdded(): void {
    // Its own statement, after the enqueuing transaction's commit; a failure only delays the job until the next poll.
    // Calls while one is on its way coalesce into one more, sent when it returns: that one still follows each
    // of their commits, and busy enqueuers send a NOTIFY (each a commit taking PostgreSQL's notify lock) per
    // round trip instead of one per transaction.
    if (this.#notifying) {
      this.#notifyOwed = true;
      return;
    }
    this.#notifying = true;
    const send = (): void => {
      this.#storage
        .pgPool!.query(`select pg_notify('jobs:insert', '{"count":1}')`)
        .catch(() => {})
        .then(() => {
          if (!this.#notifyOwed) return void (this.#notifying = false);
          this.#notifyOwed = false;
          send();
        });
    };
    send();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#sweep) clearInterval(this.#sweep);
    this.#sweep = undefined;
    const r = this.#runner;
    this.#runner = undefined;
    // The runner stops itself when its worker pool exits; stopping it again is not an error.
    if (r) await r.stop().catch((err: unknown) => {
      if (!/already stopped/i.test(String((err as Error)?.message))) throw err;
    });
    // After the runner: its pools have returned their jobs by now.
    const l = this.#liveness;
    this.#liveness = undefined;
    await l?.close();
    if (process.exitCode === 57) process.exitCode = undefined;
  }
}

/** graphile-worker is loaded on first use: a process on SQLite (the embedded default) never needs it, and it costs ~0.2 s of start-up. */
function graphile(): Promise<typeof import('graphile-worker')> {
  return import('graphile-worker');
}

async function quietLogger(): Promise<Logger> {
  const { Logger } = await graphile();
  return new Logger(() => (level: string, message: string) => {
    // Task failures reach the service through onError; only report the worker's own trouble.
    if (level === 'error' && !message.startsWith('Failed task')) process.stderr.write(`[graphile-worker] ${message}\n`);
    if (process.env.DEBUG_GRAPHILE && level !== 'debug') process.stderr.write(`[graphile-worker ${level}] ${message}\n`);
  });
}
