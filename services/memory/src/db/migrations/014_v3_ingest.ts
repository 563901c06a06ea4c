import { sql, type Kysely } from 'kysely';
import type { Migration } from '@svc/storage';

/**
 * Message embeddings are written after the messages, by the batch's ingest
 * job: `v3_vectors.seq` (the clock of `nextSeq`, set by that job) lets the
 * search index pick up vectors of messages it already holds. A batch's work
 * is written as one `v3_work` row per kind of unit (task, observer, sender)
 * with `units` = how many units it stands for and status `queued`; the ingest
 * job replaces it with one row and one job per unit. `queue/status` sums `units`.
 */
export const v3IngestMigration: Migration = {
  name: '014_v3_ingest',
  async up(db: Kysely<any>) {
    await sql`alter table v3_work add column units integer not null default 1`.execute(db);
    await sql`alter table v3_vectors add column seq bigint`.execute(db);
    await sql`create index v3_vectors_seq on v3_vectors (workspace, seq)`.execute(db);
  },
};
