import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from './dialect.ts';

export interface Migration {
  /** Unique, ordered name such as `001_init`. */
  name: string;
  up(db: Kysely<any>, dialect: SqlDialect): Promise<void>;
}

/**
 * Applies pending migrations in name order, each in its own transaction, and
 * records them in `schema_migrations`. Safe to run from several processes:
 * on PostgreSQL an advisory lock serialises concurrent starters.
 */
export async function migrate(db: Kysely<any>, dialect: SqlDialect, migrations: Migration[]): Promise<string[]> {
  await sql`create table if not exists schema_migrations (name text primary key, applied_at text not null)`.execute(db);
  const sorted = [...migrations].sort((a, b) => a.name.localeCompare(b.name));
  const applied: string[] = [];
  await db.connection().execute(async (conn) => {
    if (dialect.kind === 'postgres') await sql`select pg_advisory_lock(hashtext(current_schema()))`.execute(conn);
    try {
      const done = new Set(
        (await sql<{ name: string }>`select name from schema_migrations`.execute(conn)).rows.map((r) => r.name),
      );
      for (const m of sorted) {
        if (done.has(m.name)) continue;
        await conn.transaction().execute(async (trx) => {
          await m.up(trx, dialect);
          await sql`insert into schema_migrations (name, applied_at) values (${m.name}, ${new Date().toISOString()})`.execute(trx);
        });
        applied.push(m.name);
      }
    } finally {
      if (dialect.kind === 'postgres') await sql`select pg_advisory_unlock(hashtext(current_schema()))`.execute(conn);
    }
  });
  return applied;
}
