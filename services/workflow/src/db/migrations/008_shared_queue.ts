import { sql, type Kysely } from 'kysely';
import type { Migration } from '@svc/storage';

/**
 * The shared queue of the hosted runtime on PostgreSQL (runtime/shared-queue.ts):
 * the graphile-worker job that claimed a prompt (so the job's retry after its
 * worker died finds the prompt it left), how often a prompt was started, and
 * an index for claiming a workspace's next prompt.
 */
export const sharedQueueMigration: Migration = {
  name: '008_shared_queue',
  async up(db: Kysely<any>) {
    await sql`alter table prompts add column job_id text`.execute(db);
    await sql`alter table prompts add column attempts integer not null default 0`.execute(db);
    await sql`create index prompts_owner_queue on prompts (owner, status, number, id)`.execute(db);
    await sql`create index prompts_job on prompts (job_id) where job_id is not null`.execute(db);
  },
};
