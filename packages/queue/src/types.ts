import type { Kysely, RawBuilder } from 'kysely';

export interface JobContext {
  jobId: string;
  /** 1 on the first try. */
  attempt: number;
  maxAttempts: number;
  /** graphile-worker only: the job's priority, named queue (row id) and the worker pool that holds it. */
  priority?: number;
  queueId?: number | null;
  lockedBy?: string | null;
}

export type TaskHandler = (payload: any, ctx: JobContext) => Promise<void>;

export interface AddJobOptions {
  runAt?: Date;
  /** Tries before the job is left as permanently failed; default 25 (graphile-worker's default). */
  maxAttempts?: number;
  /** Jobs with the same key replace each other while pending. */
  jobKey?: string;
  /**
   * Jobs with the same queue name run one at a time, oldest first, across all
   * worker processes (graphile-worker's named queues). For work whose outcome
   * depends on the jobs before it.
   */
  queueName?: string;
  priority?: number;
}

/** Options of an enqueue written as SQL: priority and queue name may be expressions of the caller's statement. */
export interface SqlJobOptions extends Omit<AddJobOptions, 'priority' | 'queueName'> {
  priority?: number | RawBuilder<unknown>;
  queueName?: string | RawBuilder<unknown>;
  /**
   * graphile-worker: insert without its NOTIFY (no `jobKey`). PostgreSQL
   * serialises the commits of notifying transactions (a global lock held
   * through the commit's WAL flush), so concurrent enqueuing transactions
   * cannot share a flush; the caller calls `notifyAdded()` after its commit
   * (until then, or if the process dies first, workers find the job on
   * their next poll).
   */
  quiet?: boolean;
}

export interface NewJob {
  task: string;
  payload: unknown;
  opts?: AddJobOptions;
}

export interface JobQueue {
  readonly kind: 'sqlite' | 'graphile-worker';
  /**
   * Enqueues a job. Pass the caller's transaction as `executor` to make the
   * enqueue atomic with the caller's own writes (outbox semantics).
   */
  add(task: string, payload: unknown, opts?: AddJobOptions, executor?: Kysely<any>): Promise<void>;
  /**
   * Enqueues several jobs, in order (as that many `add` calls would, jobs of
   * one named queue run in this order), in one statement where the backend
   * allows: PostgreSQL one round trip, SQLite one prepared statement run per
   * job inside the caller's transaction.
   */
  addMany(jobs: ReadonlyArray<NewJob>, executor?: Kysely<any>): Promise<void>;
  /**
   * PostgreSQL only: the enqueue as an SQL expression to embed in a
   * statement of the caller's (one round trip for a row and its job).
   */
  addSql?(task: string, payload: unknown, opts?: SqlJobOptions): RawBuilder<unknown>;
  /** Starts the workers of this process (no-op when already started). */
  start(): Promise<void>;
  /** Stops taking jobs and waits for running jobs to finish. */
  stop(): Promise<void>;
  /** Hints that new jobs were committed, so an idle in-process worker looks now. */
  wake(): void;
  /** After the commit of jobs added with `quiet`: wakes idle workers of every process (graphile-worker's NOTIFY, in a statement of its own). */
  notifyAdded?(): void;
  /** Jobs that are not permanently failed (pending, scheduled or running). */
  depth(): Promise<number>;
  /**
   * Makes the jobs of worker processes that are gone (killed, crashed)
   * available again; returns how many. Started workers do this on start and
   * every `deadWorkerCheckMs` by themselves.
   */
  releaseDeadWorkers?(): Promise<number>;
}

export interface QueueOptions {
  tasks: Record<string, TaskHandler>;
  concurrency?: number;
  /** Milliseconds between polls when idle (SQLite) or graphile-worker's pollInterval. */
  pollIntervalMs?: number;
  /** graphile-worker's completeJobBatchDelay: completions within this many ms share one statement (default 0; -1 turns batching off). */
  completeBatchDelayMs?: number;
  /**
   * How often (ms) started workers look for jobs held by dead worker
   * processes and release them; default 2000, 0 turns it off. On PostgreSQL
   * every worker process of the schema must then use this package (liveness
   * is an advisory lock per graphile-worker pool); on SQLite, holders are
   * processes of this host that no longer exist (others wait for the lease).
   */
  deadWorkerCheckMs?: number;
  /** PostgreSQL schema for graphile-worker's tables. */
  graphileSchema?: string;
  onError?: (err: unknown, task: string, ctx: JobContext) => void;
}
