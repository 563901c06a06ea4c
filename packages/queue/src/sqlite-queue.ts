import os from 'node:os';
import { sql, type Kysely } from 'kysely';
import type { Storage } from '@svc/storage';
import type { AddJobOptions, JobContext, JobQueue, NewJob, QueueOptions } from './types.ts';

interface JobRow {
  id: number;
  task: string;
  payload: string;
  attempts: number;
  max_attempts: number;
}

const LEASE_MS = 5 * 60_000;

/** graphile-worker's schedule, so both backends retry alike: exp(min(attempts,10)) seconds. */
export function retryDelayMs(attempts: number): number {
  return Math.exp(Math.min(attempts, 10)) * 1000;
}

/**
 * A durable queue in the service's own SQLite file. Several processes may
 * poll the same file: claiming is one UPDATE…RETURNING, atomic in SQLite.
 * A job whose worker died is retaken once its lease expires.
 */
export class SqliteQueue implements JobQueue {
  readonly kind = 'sqlite' as const;
  #storage: Storage;
  #opts: QueueOptions;
  #workerId = `${os.hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  #running = 0;
  #started = false;
  #stopping = false;
  #timer: NodeJS.Timeout | undefined;
  #sweep: NodeJS.Timeout | undefined;
  #idle: Array<() => void> = [];

  constructor(storage: Storage, opts: QueueOptions) {
    if (!storage.sqlite) throw new Error('SqliteQueue needs SQLite storage');
    this.#storage = storage;
    this.#opts = opts;
  }

  static async ensureSchema(db: Kysely<any>): Promise<void> {
    await sql`create table if not exists jobs (
      id integer primary key autoincrement,
      task text not null,
      payload text not null,
      priority integer not null default 0,
      run_at integer not null,
      attempts integer not null default 0,
      max_attempts integer not null default 25,
      job_key text unique,
      queue_name text,
      locked_at integer,
      locked_by text,
      last_error text,
      created_at integer not null
    )`.execute(db);
    // Files created before named queues existed get the column added.
    const cols = await sql<{ name: string }>`select name from pragma_table_info('jobs')`.execute(db);
    if (!cols.rows.some((c) => c.name === 'queue_name')) await sql`alter table jobs add column queue_name text`.execute(db);
    await sql`create index if not exists jobs_ready on jobs (priority, run_at) where attempts < max_attempts`.execute(db);
    await sql`create index if not exists jobs_queue_name on jobs (queue_name, locked_at) where queue_name is not null`.execute(db);
    await sql`create index if not exists jobs_locked_by on jobs (locked_by) where locked_at is not null`.execute(db);
  }

  async add(task: string, payload: unknown, opts: AddJobOptions = {}, executor?: Kysely<any>): Promise<void> {
    const db = executor ?? this.#storage.db;
    const now = Date.now();
    const runAt = opts.runAt ? opts.runAt.getTime() : now;
    const values = [task, JSON.stringify(payload ?? null), opts.priority ?? 0, runAt, opts.maxAttempts ?? 25, opts.jobKey ?? null, opts.queueName ?? null, now];
    if (opts.jobKey) {
      // As graphile-worker: a running job gives up its key, so this add makes a new job instead of being lost.
      await sql`update jobs set job_key = null where job_key = ${opts.jobKey} and locked_at is not null`.execute(db);
      await sql`insert into jobs (task, payload, priority, run_at, max_attempts, job_key, queue_name, created_at)
        values (${sql.join(values)})
        on conflict (job_key) do update set payload = excluded.payload, run_at = excluded.run_at,
          attempts = 0, max_attempts = excluded.max_attempts, last_error = null
        where jobs.locked_at is null`.execute(db);
    } else {
      await sql`insert into jobs (task, payload, priority, run_at, max_attempts, job_key, queue_name, created_at)
        values (${sql.join(values)})`.execute(db);
    }
    if (!executor) this.wake();
  }

  #insertStmts = new Map<number, { run(...params: unknown[]): unknown }>();

  async addMany(jobs: ReadonlyArray<NewJob>, executor?: Kysely<any>): Promise<void> {
    const raw = this.#storage.sqlite!;
    // Inside the caller's transaction (the one connection is held by it while it is open) or
    // without one, keyless jobs go through prepared multi-row inserts on the raw handle (up to
    // 100 rows each, one statement per row count); jobs with a key, or an executor that is not
    // in a transaction, take the ordinary path.
    if (!jobs.length) return;
    if (jobs.some((j) => j.opts?.jobKey) || (executor && !raw.inTransaction) || (!executor && raw.inTransaction)) {
      for (const j of jobs) await this.add(j.task, j.payload, j.opts, executor);
      return;
    }
    const now = Date.now();
    const insert = () => {
      for (let i = 0; i < jobs.length; i += 100) {
        const chunk = jobs.slice(i, i + 100);
        let stmt = this.#insertStmts.get(chunk.length);
        if (!stmt) {
          stmt = raw.prepare(`insert into jobs (task, payload, priority, run_at, max_attempts, queue_name, created_at) values ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`);
          this.#insertStmts.set(chunk.length, stmt);
        }
        const params: unknown[] = [];
        for (const { task, payload, opts = {} } of chunk) {
          params.push(task, JSON.stringify(payload ?? null), opts.priority ?? 0, opts.runAt ? opts.runAt.getTime() : now, opts.maxAttempts ?? 25, opts.queueName ?? null, now);
        }
        stmt.run(...params);
      }
    };
    if (executor) insert();
    else raw.transaction(insert).immediate();
    if (!executor) this.wake();
  }

  async depth(): Promise<number> {
    const r = await sql<{ n: number }>`select count(*) as n from jobs where attempts < max_attempts or locked_at is not null`.execute(this.#storage.db);
    return Number(r.rows[0]?.n ?? 0);
  }

  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    this.#stopping = false;
    const checkMs = this.#opts.deadWorkerCheckMs ?? 2000;
    if (checkMs > 0) {
      this.#sweepDeadWorkers();
      this.#sweep = setInterval(() => this.#sweepDeadWorkers(), checkMs);
      this.#sweep.unref();
    }
    this.#schedule(0);
  }

  async releaseDeadWorkers(): Promise<number> {
    return this.#releaseDeadLocalLocks();
  }

  #sweepDeadWorkers(): void {
    try {
      if (this.#releaseDeadLocalLocks() > 0) this.wake();
    } catch (err) {
      // SQLITE_BUSY from another process: the next sweep tries again.
      this.#opts.onError?.(err, '(release dead workers)', { jobId: '', attempt: 0, maxAttempts: 0 });
    }
  }

  /** Jobs held by a process of this host that no longer exists are free now, not after the lease (a restarted worker resumes at once). */
  #releaseDeadLocalLocks(): number {
    const raw = this.#storage.sqlite!;
    const host = os.hostname();
    const holders = raw.prepare('select distinct locked_by from jobs where locked_at is not null').all() as Array<{ locked_by: string | null }>;
    let released = 0;
    for (const { locked_by } of holders) {
      const [h, pid] = String(locked_by ?? '').split(':');
      if (h !== host || !pid || Number(pid) === process.pid) continue;
      try {
        process.kill(Number(pid), 0);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ESRCH') {
          released += raw.prepare('update jobs set locked_at = null, locked_by = null where locked_by = ?').run(locked_by).changes;
        }
      }
    }
    return released;
  }

  wake(): void {
    if (this.#started && !this.#stopping) this.#schedule(0);
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    if (this.#sweep) clearInterval(this.#sweep);
    this.#sweep = undefined;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#running > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
    this.#started = false;
  }

  #schedule(ms: number): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#fill();
    }, ms);
    this.#timer.unref?.();
  }

  #claim(): JobRow | undefined {
    const now = Date.now();
    const raw = this.#storage.sqlite!;
    return raw
      .prepare(
        `update jobs set locked_at = ?, locked_by = ?, attempts = attempts + 1
         where id = (select id from jobs
                     where attempts < max_attempts and run_at <= ? and (locked_at is null or locked_at < ?)
                       and (queue_name is null or not exists (
                         select 1 from jobs running
                         where running.queue_name = jobs.queue_name and running.id <> jobs.id and running.locked_at >= ?))
                     order by priority, run_at, id limit 1)
         returning id, task, payload, attempts, max_attempts`,
      )
      .get(now, this.#workerId, now, now - LEASE_MS, now - LEASE_MS) as JobRow | undefined;
  }

  #fill(): void {
    const concurrency = this.#opts.concurrency ?? 4;
    let claimed = false;
    while (!this.#stopping && this.#running < concurrency) {
      let job: JobRow | undefined;
      try {
        job = this.#claim();
      } catch (err) {
        // SQLITE_BUSY from another process: try again on the next tick.
        this.#opts.onError?.(err, '(claim)', { jobId: '', attempt: 0, maxAttempts: 0 });
        break;
      }
      if (!job) break;
      claimed = true;
      this.#running++;
      void this.#run(job);
    }
    // When all slots are busy, finishing jobs reschedule; otherwise poll again later.
    if (!this.#stopping && !claimed) this.#schedule(this.#opts.pollIntervalMs ?? 200);
  }

  async #run(job: JobRow): Promise<void> {
    const raw = this.#storage.sqlite!;
    const ctx: JobContext = { jobId: String(job.id), attempt: job.attempts, maxAttempts: job.max_attempts };
    const handler = this.#opts.tasks[job.task];
    try {
      if (!handler) throw new Error(`no handler for task ${job.task}`);
      await handler(JSON.parse(job.payload), ctx);
      raw.prepare('delete from jobs where id = ? and locked_by = ?').run(job.id, this.#workerId);
    } catch (err) {
      this.#opts.onError?.(err, job.task, ctx);
      const message = err instanceof Error ? err.message : String(err);
      raw
        .prepare('update jobs set locked_at = null, locked_by = null, last_error = ?, run_at = ? where id = ? and locked_by = ?')
        .run(message.slice(0, 4000), Date.now() + retryDelayMs(job.attempts), job.id, this.#workerId);
    } finally {
      this.#running--;
      if (this.#stopping) {
        if (this.#running === 0) for (const r of this.#idle.splice(0)) r();
      } else {
        this.#schedule(0);
      }
    }
  }
}
