import { sql, type Kysely } from 'kysely';
import type { Migration } from '@svc/storage';

/**
 * A pending OAuth authorization request is bound to the browser that started
 * it (the hash of a random value in a cookie only that browser holds) and,
 * once a user resumes it there, to that user: anyone else who learns its id
 * can neither resume nor approve it.
 */
export const oauthRequestBindingMigration: Migration = {
  name: '010_oauth_request_binding',
  async up(db: Kysely<any>) {
    await sql`alter table id_oauth_requests add column binder_hash text`.execute(db);
    await sql`alter table id_oauth_requests add column user_id text`.execute(db);
  },
};
