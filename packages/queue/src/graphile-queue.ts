import { sql, type Kysely } from 'kysely';
import { run, runMigrations, type Runner, type TaskList } from 'graphile-worker';
import type { Storage } from '@svc/storage';
import { quoteIdent } from '@svc/storage';
import type { AddJobOptions, JobQueue, QueueOptions } from './types.ts';

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

  constructor(storage: Storage, opts: QueueOptions) {
    if (!storage.pgPool) throw new Error('GraphileQueue needs PostgreSQL storage');
    this.#storage = storage;
    this.#opts = opts;
    this.#schema = opts.graphileSchema ?? `${storage.pgSchema}_worker`;
  }

  async ensureSchema(): Promise<void> {
    await runMigrations({ pgPool: this.#storage.pgPool!, schema: this.#schema, logger: quietLogger() });
  }

  async add(task: string, payload: unknown, opts: AddJobOptions = {}, executor?: Kysely<any>): Promise<void> {
    const db = executor ?? this.#storage.db;
    const fn = sql.raw(`${quoteIdent(this.#schema)}.add_job`);
    await sql`select ${fn}(
      identifier => ${task}::text,
      payload => ${JSON.stringify(payload ?? null)}::json,
      run_at => ${opts.runAt ?? null}::timestamptz,
      max_attempts => ${opts.maxAttempts ?? 25}::int,
      job_key => ${opts.jobKey ?? null}::text,
      queue_name => ${opts.queueName ?? null}::text,
      priority => ${opts.priority ?? 0}::int
    )`.execute(db);
  }

  async depth(): Promise<number> {
    const t = sql.raw(`${quoteIdent(this.#schema)}._private_jobs`);
    const r = await sql<{ n: number }>`select count(*)::int as n from ${t} where attempts < max_attempts or locked_at is not null`.execute(this.#storage.db);
    return Number(r.rows[0]?.n ?? 0);
  }

  async start(): Promise<void> {
    if (this.#runner) return;
    this.#stopped = false;
    const taskList: TaskList = {};
    for (const [name, handler] of Object.entries(this.#opts.tasks)) {
      taskList[name] = async (payload, helpers) => {
        const ctx = { jobId: String(helpers.job.id), attempt: helpers.job.attempts, maxAttempts: helpers.job.max_attempts };
        try {
          await handler(payload, ctx);
        } catch (err) {
          this.#opts.onError?.(err, name, ctx);
          throw err;
        }
      };
    }
    const runner = await run({
      pgPool: this.#storage.pgPool!,
      schema: this.#schema,
      concurrency: this.#opts.concurrency ?? 4,
      pollInterval: this.#opts.pollIntervalMs ?? 2000,
      noHandleSignals: true,
      taskList,
      logger: quietLogger(),
    });
    this.#runner = runner;
    // graphile-worker's "worker:migrate" NOTIFY is database-wide: installing the
    // worker schema of another service (or test) in the same database makes
    // every running worker shut down and set process.exitCode = 57. Our schema
    // did not change, so take the exit code back and start again.
    runner.promise
      .catch(() => {})
      .finally(() => {
        if (this.#runner !== runner) return;
        this.#runner = undefined;
        if (process.exitCode === 57) process.exitCode = undefined;
        const t = setTimeout(() => {
          if (!this.#runner && !this.#stopped) this.start().catch((err) => process.stderr.write(`[graphile-worker] restart failed: ${err}\n`));
        }, 200);
        t.unref();
      });
  }

  wake(): void {
    // graphile-worker is woken by NOTIFY from add_job.
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    const r = this.#runner;
    this.#runner = undefined;
    // The runner stops itself when its worker pool exits; stopping it again is not an error.
    if (r) await r.stop().catch((err: unknown) => {
      if (!/already stopped/i.test(String((err as Error)?.message))) throw err;
    });
  }
}

import { Logger } from 'graphile-worker';
function quietLogger(): Logger {
  return new Logger(() => (level: string, message: string) => {
    // Task failures reach the service through onError; only report the worker's own trouble.
    if (level === 'error' && !message.startsWith('Failed task')) process.stderr.write(`[graphile-worker] ${message}\n`);
    if (process.env.DEBUG_GRAPHILE && level !== 'debug') process.stderr.write(`[graphile-worker ${level}] ${message}\n`);
  });
}
