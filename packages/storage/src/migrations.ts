import { Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql, type CompiledQuery, type DatabaseConnection, type Dialect, type Driver, type QueryResult } from 'kysely';
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
 *
 * On PostgreSQL the migrations' schema statements (CREATE/ALTER/DROP of
 * tables, indexes, sequences, functions, triggers, views, types; COMMENT ON)
 * travel together: each is held and sent, with the transactions' BEGIN and
 * COMMIT and the `schema_migrations` rows, in one round trip with the next
 * statement whose answer a migration reads (any other statement) or at the
 * end. A fresh inventory schema (~300 statements) is then created in one
 * round trip instead of ~300, each of which waits for the server's turn on a
 * busy machine. Every statement still runs, in the same order and the same
 * transactions; what differs is where an error in a held statement is thrown:
 * at that next statement or at the end (the migration's transaction is rolled
 * back and the error rethrown, as before). A migration that must catch the
 * error of one schema statement wraps it in a savepoint (SAVEPOINT sends
 * what is held, ROLLBACK TO runs at once).
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
      const pending = sorted.filter((m) => !done.has(m.name));
      if (dialect.kind === 'postgres' && pending.length > 0) {
        const batch = new StatementBatch(conn);
        const held = new Kysely<any>({ dialect: batch.dialect() });
        try {
          for (const m of pending) {
            await held.transaction().execute(async (trx) => {
              await m.up(trx, dialect);
              batch.hold(`insert into schema_migrations (name, applied_at) values (${literal(m.name)}, ${literal(new Date().toISOString())})`);
            });
            applied.push(m.name);
          }
          await batch.flush();
        } catch (err) {
          // A held statement failed inside a transaction block: end it (a warning only when none is open).
          await sql`rollback`.execute(conn).catch(() => {});
          throw err;
        }
      } else {
        for (const m of pending) {
          await conn.transaction().execute(async (trx) => {
            await m.up(trx, dialect);
            await sql`insert into schema_migrations (name, applied_at) values (${m.name}, ${new Date().toISOString()})`.execute(trx);
          });
          applied.push(m.name);
        }
      }
    } finally {
      if (dialect.kind === 'postgres') await sql`select pg_advisory_unlock(hashtext(current_schema()))`.execute(conn);
    }
  });
  return applied;
}

/** Statements whose answer is nothing (no rows, no count): held and sent with the next. */
const SCHEMA_STATEMENT =
  /^\s*(create\s+(table|(unique\s+)?index|sequence|(or\s+replace\s+)?(function|trigger|view)|type)|alter\s+(table|index|sequence|type)|drop\s+(table|index|sequence|function|trigger|view|type)|comment\s+on)\s/i;

function literal(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

/**
 * The migrations' connection on PostgreSQL: schema statements (and the
 * transactions' BEGIN/COMMIT) are held, and sent as one simple-protocol
 * query (one round trip) before any other statement runs, or at the end.
 */
class StatementBatch {
  #held: string[] = [];
  /** Where the open transaction's BEGIN is in #held; -1 once it was sent (the server holds the transaction open). */
  #begin: number | undefined;

  constructor(private readonly conn: Kysely<any>) {}

  hold(statement: string): void {
    this.#held.push(statement.replace(/;\s*$/, ''));
  }

  /** False once the driver refused several statements in one query (PGlite prepares every query): one by one then. */
  #together = true;

  async flush(): Promise<void> {
    if (this.#held.length === 0) return;
    const held = this.#held;
    this.#held = [];
    if (this.#begin !== undefined) this.#begin = -1;
    if (this.#together) {
      try {
        // A newline before each `;`: a statement ending in a `--` comment would otherwise swallow it.
        await sql.raw(held.join('\n;\n')).execute(this.conn);
        return;
      } catch (err) {
        // Refused at parse, before any of them ran.
        if (!/cannot insert multiple commands into a prepared statement/i.test(String((err as Error)?.message))) throw err;
        this.#together = false;
      }
    }
    for (const statement of held) await sql.raw(statement).execute(this.conn);
  }

  dialect(): Dialect {
    const connection: DatabaseConnection = {
      executeQuery: async <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
        if (query.parameters.length === 0 && SCHEMA_STATEMENT.test(query.sql)) {
          this.hold(query.sql);
          return { rows: [] };
        }
        await this.flush();
        return this.conn.executeQuery<R>(query);
      },
      streamQuery: () => {
        throw new Error('migrations do not stream');
      },
    };
    const driver: Driver = {
      init: async () => {},
      acquireConnection: async () => connection,
      beginTransaction: async () => {
        this.#begin = this.#held.length;
        this.hold('begin');
      },
      commitTransaction: async () => {
        this.hold('commit');
        this.#begin = undefined;
      },
      rollbackTransaction: async () => {
        const begin = this.#begin;
        this.#begin = undefined;
        if (begin !== undefined && begin >= 0) {
          // Nothing of this transaction was sent: drop it, send what earlier migrations committed.
          this.#held.length = begin;
          await this.flush();
        } else {
          this.#held = [];
          await sql`rollback`.execute(this.conn);
        }
      },
      releaseConnection: async () => {},
      destroy: async () => {},
    };
    return {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => driver,
      createQueryCompiler: () => new PostgresQueryCompiler(),
      createIntrospector: (db) => new PostgresIntrospector(db),
    };
  }
}
