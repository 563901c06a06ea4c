import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * Authentication rate-limit windows shared by every API process on one
 * PostgreSQL database (key → hits in the window and when it resets, epoch ms).
 */
export const rateLimitsMigration: Migration = {
  name: '006_rate_limits',
  async up(db: Kysely<any>, _d: SqlDialect) {
    await sql`create table id_rate_limits (key text primary key, count integer not null, reset_at bigint not null)`.execute(db);
    await sql`create index id_rate_limits_reset on id_rate_limits (reset_at)`.execute(db);
  },
};
