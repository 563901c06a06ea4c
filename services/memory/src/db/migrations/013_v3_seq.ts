import { sql, type Kysely } from 'kysely';
import type { Migration } from '@svc/storage';

/** A workspace's messages by `seq`: the search index reads what was written since its last refresh. */
export const v3SeqMigration: Migration = {
  name: '013_v3_seq',
  async up(db: Kysely<any>) {
    await sql`create index v3_messages_seq on v3_messages (workspace, seq)`.execute(db);
  },
};
