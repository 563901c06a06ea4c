import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * v3 search and background work: the embedding of each message and
 * conclusion (`v3_vectors`, float32 bytes), and the work units behind
 * `GET …/queue/status` (`v3_work`: one row per message to reason about, per
 * summary and per dream; its job in @svc/queue carries the row's id).
 */
export const v3RecallMigration: Migration = {
  name: '011_v3_recall',
  async up(db: Kysely<any>, d: SqlDialect) {
    const blob = sql.raw(d.blobType);
    const ts = sql.raw(d.timestampType);
    const stmts = [
      sql`create table v3_vectors (
        id text primary key,
        workspace text not null,
        vector ${blob} not null
      )`,
      sql`create index v3_vectors_workspace on v3_vectors (workspace)`,
      sql`create table v3_work (
        id text primary key,
        workspace text not null,
        session text,
        observer text,
        sender text,
        task text not null,
        status text not null,
        created_at ${ts} not null
      )`,
      sql`create index v3_work_status on v3_work (workspace, status)`,
    ];
    for (const s of stmts) await s.execute(db);
  },
};
