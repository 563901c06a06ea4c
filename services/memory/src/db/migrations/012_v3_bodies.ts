import { sql, type Kysely } from 'kysely';
import type { Migration } from '@svc/storage';

/** The stems of each embedded text (`indexBody`), so a search does not analyse every candidate again. */
export const v3BodiesMigration: Migration = {
  name: '012_v3_bodies',
  async up(db: Kysely<any>) {
    await sql`alter table v3_vectors add column body text`.execute(db);
  },
};
