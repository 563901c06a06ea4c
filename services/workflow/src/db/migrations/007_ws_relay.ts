import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * WebSocket frame batches too large for one NOTIFY, passed between API
 * processes on PostgreSQL (ws/relay.ts); kept a minute. SQLite runs one
 * process and needs no relay.
 */
export const wsRelayMigration: Migration = {
  name: '007_ws_relay',
  async up(db: Kysely<any>, d: SqlDialect) {
    if (d.kind !== 'postgres') return;
    await sql`create table ws_relay (id bigserial primary key, payload text not null, created_at bigint not null)`.execute(db);
    await sql`create index ws_relay_created on ws_relay (created_at)`.execute(db);
  },
};
