/**
 * A Storage over PGlite (PostgreSQL in WASM) with pgvector, for testing the
 * pgvector SQL on a machine whose PostgreSQL has no pgvector. A minimal
 * Kysely driver: one connection, queries passed through.
 */
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import {
  CompiledQuery,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';
import { postgresDialect, type Storage } from '@svc/storage';

class PgliteConnection implements DatabaseConnection {
  constructor(private pg: PGlite) {}
  async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    const r = await this.pg.query<R>(q.sql, q.parameters as any[]);
    return { rows: r.rows, numAffectedRows: r.affectedRows !== undefined ? BigInt(r.affectedRows) : undefined };
  }
  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not supported on PGlite');
  }
}

class PgliteDriver implements Driver {
  #conn: PgliteConnection;
  #lock: Promise<void> = Promise.resolve();
  #release: (() => void) | undefined;
  constructor(private pg: PGlite) {
    this.#conn = new PgliteConnection(pg);
  }
  async init() {}
  async acquireConnection() {
    // One connection: serialise users so transactions do not interleave.
    const prev = this.#lock;
    let release!: () => void;
    this.#lock = new Promise<void>((r) => (release = r));
    await prev;
    this.#release = release;
    return this.#conn;
  }
  async beginTransaction(c: DatabaseConnection) {
    await c.executeQuery(CompiledQuery.raw('begin'));
  }
  async commitTransaction(c: DatabaseConnection) {
    await c.executeQuery(CompiledQuery.raw('commit'));
  }
  async rollbackTransaction(c: DatabaseConnection) {
    await c.executeQuery(CompiledQuery.raw('rollback'));
  }
  async releaseConnection() {
    const r = this.#release;
    this.#release = undefined;
    r?.();
  }
  async destroy() {
    await this.pg.close();
  }
}

export async function openPgliteStorage(withVector = true): Promise<Storage> {
  const pg = await PGlite.create({ extensions: withVector ? { vector } : {} });
  const db = new Kysely<any>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new PgliteDriver(pg),
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
  return {
    dialect: postgresDialect,
    db,
    async close() {
      await db.destroy();
    },
  };
}
