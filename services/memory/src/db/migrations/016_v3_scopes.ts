import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * Scopes (SDK 2.5's `honcho.scope()`): a scope is a peer named `scope.<name>`
 * (a name no API can create otherwise: `.` is outside the resource name
 * pattern) that observes its member sessions. This table holds what the
 * reference keeps in the scope peer's `internal_metadata.backfill_status`:
 * per member session, the state of the job copying the session's existing
 * conclusions into the scope (`GET …/scopes/{id}/status`).
 */
export const v3ScopesMigration: Migration = {
  name: '016_v3_scopes',
  async up(db: Kysely<any>, d: SqlDialect) {
    await sql`create table v3_scope_backfill (
      workspace text not null,
      scope text not null,
      session text not null,
      state text not null,
      docs_copied integer,
      updated_at ${sql.raw(d.timestampType)} not null,
      primary key (workspace, scope, session)
    )`.execute(db);
  },
};
