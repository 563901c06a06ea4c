import type { Storage } from '@svc/storage';
import { GraphileQueue } from './graphile-queue.ts';
import { SqliteQueue } from './sqlite-queue.ts';
import type { JobQueue, QueueOptions } from './types.ts';

export * from './types.ts';
export { SqliteQueue, retryDelayMs } from './sqlite-queue.ts';
export { GraphileQueue } from './graphile-queue.ts';

/** The queue that matches the storage: a table in SQLite, graphile-worker on PostgreSQL. Creates its tables. */
export async function createQueue(storage: Storage, opts: QueueOptions): Promise<JobQueue> {
  if (storage.dialect.kind === 'postgres') {
    const q = new GraphileQueue(storage, opts);
    await q.ensureSchema();
    return q;
  }
  await SqliteQueue.ensureSchema(storage.db);
  return new SqliteQueue(storage, opts);
}
