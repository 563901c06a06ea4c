import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';
import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect, SqliteDriver, sql, type DatabaseConnection, type Driver, type SqliteDialectConfig } from 'kysely';
import { postgresDialect, sqliteDialect, type SqlDialect } from './dialect.ts';
import { registerSqliteFunctions } from './sqlite-functions.ts';

const requireHere = createRequire(import.meta.url);
let pgModule: Promise<typeof pg> | undefined;

/** The pg driver, loaded on first use: a service on SQLite never pays its memory. */
export function loadPg(): Promise<typeof pg> {
  pgModule ??= import('pg').then((m) => {
    const driver = (m.default ?? m) as typeof pg;
    // int8 (bigserial ids, counts) as JS numbers: our ids stay far below 2^53.
    driver.types.setTypeParser(20, (v) => Number.parseInt(v, 10));
    return driver;
  });
  return pgModule;
}

export interface StorageOptions {
  /** `postgres://…` selects PostgreSQL; anything else means the embedded SQLite file. */
  databaseUrl?: string;
  /** Directory for the SQLite file (created when missing). */
  dataDir: string;
  /** File name of the SQLite database inside dataDir. */
  sqliteFile: string;
  /** PostgreSQL schema that holds this service's tables (services can share one database). */
  pgSchema: string;
  /** Called for every SQLite connection, e.g. to load extensions. */
  onSqliteOpen?: (db: BetterSqlite3.Database) => void;
  /** `synchronous` pragma: FULL for data that must survive power loss. */
  sqliteSynchronous?: 'NORMAL' | 'FULL';
  /**
   * SQLite: WAL checkpoints run in a worker thread of this process (its own
   * connection, a PASSIVE checkpoint every 200 ms) instead of inside the
   * commit that crosses SQLite's 1,000-page threshold, which then copies the
   * WAL into the database file and syncs it on the event loop. Off when unset.
   */
  sqliteCheckpointThread?: boolean;
  /** Reuse prepared statements for repeated SQL (Kysely prepares every query afresh); the number kept. Off when unset. */
  sqliteStatementCache?: number;
  pgPoolSize?: number;
  /**
   * PostgreSQL: parse repeated parameterised SQL once per connection (a
   * named statement) instead of once per call; the number of statement texts
   * named per process. Off when unset.
   */
  pgStatementCache?: number;
  /**
   * PostgreSQL: every commit of this handle without waiting for its WAL
   * flush (synchronous_commit=off). For processes whose writes may be lost
   * in a database crash as a whole suffix (WAL is replayed in order), never
   * partially: a worker whose claims and ends are recovered as a lost worker's.
   */
  pgRelaxedCommits?: boolean;
}

export interface Storage {
  readonly dialect: SqlDialect;
  readonly db: Kysely<any>;
  /** The raw better-sqlite3 handle (SQLite only), for hot paths that bypass the query builder. */
  readonly sqlite?: BetterSqlite3.Database;
  /** The pg pool (PostgreSQL only); its connections have search_path set to pgSchema. */
  readonly pgPool?: pg.Pool;
  readonly pgSchema?: string;
  readonly databaseUrl?: string;
  /**
   * A write transaction whose commit does not wait for the disk: a crash or
   * power loss may undo the last such commits (never half of one, and never
   * one that a later durable commit followed). For bookkeeping that is safe to
   * repeat, such as delivery outcomes under at-least-once delivery: SQLite
   * commits it with synchronous=NORMAL, PostgreSQL with synchronous_commit=off.
   * Every other transaction keeps the configured durability.
   */
  relaxedTransaction?<T>(fn: (trx: Kysely<any>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** `storage.relaxedTransaction`, or an ordinary transaction for a storage without one. */
export function relaxedTransaction<T>(storage: Storage, fn: (trx: Kysely<any>) => Promise<T>): Promise<T> {
  return storage.relaxedTransaction ? storage.relaxedTransaction(fn) : storage.db.transaction().execute(fn);
}

export function isPostgresUrl(url: string | undefined): url is string {
  return !!url && /^postgres(ql)?:\/\//i.test(url);
}

export async function openStorage(opts: StorageOptions): Promise<Storage> {
  if (isPostgresUrl(opts.databaseUrl)) return openPostgres(opts.databaseUrl, opts);
  return openSqlite(opts);
}

function openSqlite(opts: StorageOptions): Storage {
  fs.mkdirSync(opts.dataDir, { recursive: true });
  const file = path.join(opts.dataDir, opts.sqliteFile);
  const raw = new BetterSqlite3(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma(`synchronous = ${opts.sqliteSynchronous ?? 'NORMAL'}`);
  raw.pragma('foreign_keys = ON');
  raw.pragma('busy_timeout = 5000');
  registerSqliteFunctions(raw);
  opts.onSqliteOpen?.(raw);
  const database = opts.sqliteStatementCache ? cachingStatements(raw, opts.sqliteStatementCache) : raw;
  const db = new Kysely<any>({ dialect: new ImmediateSqliteDialect({ database }) });
  const checkpointer = opts.sqliteCheckpointThread ? startCheckpointThread(raw, file) : undefined;
  const durable = sql.raw(`pragma synchronous = ${opts.sqliteSynchronous ?? 'NORMAL'}`);
  return {
    dialect: sqliteDialect,
    db,
    sqlite: raw,
    // SQLite fixes a commit's durability before BEGIN, per connection: relax it for this transaction and restore it
    // while the connection is still held, so no other statement ever runs with it relaxed.
    relaxedTransaction: (fn) =>
      db.connection().execute(async (conn) => {
        await sql`pragma synchronous = NORMAL`.execute(conn);
        try {
          return await conn.transaction().execute(fn);
        } finally {
          await durable.execute(conn);
        }
      }),
    async close() {
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}

const CHECKPOINT_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 0');
const tick = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Busy (another checkpointer, a file being replaced): the next tick tries again.
  }
};
const timer = setInterval(tick, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  tick();
  db.close();
  parentPort.postMessage('closed');
});
`;

/**
 * Turns off the connection's automatic checkpoints and checkpoints from a
 * worker thread instead. A PASSIVE checkpoint never waits for or blocks
 * readers and writers; once it has copied every frame, the next writer
 * restarts the WAL from its beginning, so the file stays as small as before.
 */
function startCheckpointThread(raw: BetterSqlite3.Database, file: string): { stop(): Promise<void> } {
  raw.pragma('wal_autocheckpoint = 0');
  const worker = new Worker(CHECKPOINT_THREAD, { eval: true, workerData: { module: requireHere.resolve('better-sqlite3'), file, intervalMs: 200 } });
  worker.unref();
  let stopped: Promise<void> | undefined;
  return {
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        const done = () => resolve();
        worker.once('message', () => void worker.terminate().then(done, done));
        worker.once('error', done);
        worker.once('exit', done);
        worker.postMessage('stop');
      })),
  };
}

/**
 * Kysely opens SQLite transactions with a plain (deferred) BEGIN: the first
 * SELECT takes a read snapshot and the first write must then upgrade it to
 * the write lock. In WAL mode SQLite does not call the busy handler for that
 * upgrade (waiting could not help a stale snapshot), so when another process
 * (a separate delivery worker) holds or has just used the write lock, the
 * statement fails at once with SQLITE_BUSY despite busy_timeout. BEGIN
 * IMMEDIATE takes the write lock up front, where busy_timeout does apply.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }
  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config);
  }
}

/**
 * The handle Kysely's SqliteDialect sees, with an LRU of prepared statements.
 * Safe because Kysely runs each statement to completion (all/run) on its one
 * connection before the next; better-sqlite3 re-prepares after schema changes.
 */
function cachingStatements(raw: BetterSqlite3.Database, max: number) {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    prepare(source: string): BetterSqlite3.Statement {
      let stmt = cache.get(source);
      if (stmt) {
        cache.delete(source);
      } else {
        stmt = raw.prepare(source);
        if (cache.size >= max) cache.delete(cache.keys().next().value!);
      }
      cache.set(source, stmt);
      return stmt;
    },
    close(): void {
      cache.clear();
      raw.close();
    },
  };
}

export function quoteIdent(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"';
}

async function openPostgres(url: string, opts: StorageOptions): Promise<Storage> {
  const pg = await loadPg();
  const schema = opts.pgSchema;
  // Create the schema with a short-lived client so the pool's search_path is valid from the start.
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`create schema if not exists ${quoteIdent(schema)}`);
  } finally {
    await admin.end();
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.pgPoolSize ?? 10,
    options: `-c search_path=${schema},public${opts.pgRelaxedCommits ? ' -c synchronous_commit=off' : ''}`,
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  if (opts.pgStatementCache) namingStatements(pool, opts.pgStatementCache);
  const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
  return {
    dialect: postgresDialect,
    db,
    relaxedTransaction: (fn) =>
      db.transaction().execute(async (trx) => {
        await sql`set local synchronous_commit to off`.execute(trx);
        return fn(trx);
      }),
    pgPool: pool,
    pgSchema: schema,
    databaseUrl: url,
    async close() {
      await db.destroy();
    },
  };
}

/**
 * Kysely sends every query as unnamed SQL, which PostgreSQL parses and plans
 * afresh on each call; on a hot path that was a third of the server's time
 * per statement. A text seen twice gets a name (a hash of it), and pg then
 * parses it once per connection (and PostgreSQL may keep a generic plan).
 * Only parameterised single statements qualify (a parameterless text may
 * hold several statements, which a named statement cannot), and at most
 * `max` texts get names, so texts that vary (IN lists of any length) cannot
 * grow every connection's statements without bound.
 *
 * A named statement's result columns are fixed when it is parsed: after a
 * table it reads with `*` changed (another process's migration), PostgreSQL
 * refuses it (0A000). The connection then forgets it and, outside a
 * transaction, runs the call again parsed afresh.
 */
function namingStatements(pool: pg.Pool, max: number): void {
  const names = new Map<string, string>();
  const seen = new Set<string>();
  const nameFor = (text: string): string | undefined => {
    const known = names.get(text);
    if (known || names.size >= max) return known;
    if (!seen.has(text)) {
      // Remember first sightings in a bounded set: one-off texts must not pile up either.
      if (seen.size >= max * 4) seen.clear();
      seen.add(text);
      return undefined;
    }
    seen.delete(text);
    const name = 'k' + createHash('sha1').update(text).digest('base64url');
    names.set(text, name);
    return name;
  };
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...a: unknown[]) => Promise<pg.QueryResult>;
    let inTransaction = false;
    const parsed = () => (client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection.parsedStatements;
    (client as unknown as { query: unknown }).query = (...a: unknown[]) => {
      const [text, values] = a;
      if (typeof text === 'string' && a.length === 2) {
        if (Array.isArray(values) && values.length > 0) {
          const name = nameFor(text);
          if (name) {
            return query({ name, text, values }).catch(async (err: { code?: string }) => {
              if (err?.code !== '0A000' || !/cached plan/i.test(String((err as Error).message))) throw err;
              delete parsed()[name];
              await query(`deallocate "${name}"`).catch(() => {});
              if (inTransaction) throw err;
              return query({ name, text, values });
            });
          }
        } else if (/^\s*(begin|start transaction)\b/i.test(text)) {
          inTransaction = true;
        } else if (/^\s*(commit|rollback|end|abort)\b/i.test(text) && !/^\s*rollback\s+to\b/i.test(text)) {
          inTransaction = false;
        }
      }
      return query(...a);
    };
  });
}

/** Drops PostgreSQL schemas and everything in them (tests use a schema per server). */
export async function dropPgSchema(url: string, schema: string | string[]): Promise<void> {
  const schemas = Array.isArray(schema) ? schema : [schema];
  if (schemas.length === 0) return;
  const pg = await loadPg();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    // Several in one statement: one connection and one commit (a test server's close drops two).
    await c.query(`drop schema if exists ${schemas.map(quoteIdent).join(', ')} cascade`);
  } finally {
    await c.end();
  }
}

export { sql };
