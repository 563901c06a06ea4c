import type { Kysely } from 'kysely';

export interface JobContext {
  jobId: string;
  /** 1 on the first try. */
  attempt: number;
  maxAttempts: number;
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

export interface JobQueue {
  readonly kind: 'sqlite' | 'graphile-worker';
  /**
   * Enqueues a job. Pass the caller's transaction as `executor` to make the
   * enqueue atomic with the caller's own writes (outbox semantics).
   */
  add(task: string, payload: unknown, opts?: AddJobOptions, executor?: Kysely<any>): Promise<void>;
  /** Starts the workers of this process (no-op when already started). */
  start(): Promise<void>;
  /** Stops taking jobs and waits for running jobs to finish. */
  stop(): Promise<void>;
  /** Hints that new jobs were committed, so an idle in-process worker looks now. */
  wake(): void;
  /** Jobs that are not permanently failed (pending, scheduled or running). */
  depth(): Promise<number>;
}

export interface QueueOptions {
  tasks: Record<string, TaskHandler>;
  concurrency?: number;
  /** Milliseconds between polls when idle (SQLite) or graphile-worker's pollInterval. */
  pollIntervalMs?: number;
  /** PostgreSQL schema for graphile-worker's tables. */
  graphileSchema?: string;
  onError?: (err: unknown, task: string, ctx: JobContext) => void;
}
