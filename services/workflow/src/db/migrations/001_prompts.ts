import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * One row per prompt: it is the queue while pending or running, and the
 * history/jobs record once it has finished. JSON is kept as text (NUL and
 * lone surrogates arrive escaped by JSON.stringify, so any client value is
 * storable on both databases); only ids and numbers are columns.
 */
export const promptsMigration: Migration = {
  name: '001_prompts',
  async up(db: Kysely<any>, _d: SqlDialect) {
    const stmts = [
      sql`create table prompts (
        id text primary key,
        owner text not null default '',
        number double precision not null,
        status text not null,
        prompt text not null,
        extra_data text not null,
        sensitive text,
        outputs_to_execute text not null,
        workflow_id text,
        create_time bigint not null,
        start_time bigint,
        end_time bigint,
        outputs text,
        meta text,
        status_messages text,
        worker text
      )`,
      sql`create index prompts_queue on prompts (status, number, id)`,
      sql`create index prompts_owner_created on prompts (owner, create_time)`,
      sql`create index prompts_finished on prompts (end_time, id)`,
    ];
    for (const s of stmts) await s.execute(db);
  },
};
