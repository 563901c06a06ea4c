import type BetterSqlite3 from 'better-sqlite3';
import type { Storage } from '@svc/storage';

/**
 * Runs synchronous statements on the raw better-sqlite3 handle (SQLite hot
 * paths). Kysely shares that handle: while one of its transactions is open,
 * a raw statement would silently join it, so we then wait for the
 * connection (which a transaction holds until it ends) before running.
 */
export function withRaw<T>(storage: Storage, fn: (raw: BetterSqlite3.Database) => T): T | Promise<T> {
  const raw = storage.sqlite!;
  if (!raw.inTransaction) return fn(raw);
  return storage.db.connection().execute(async () => fn(raw));
}

/** Prepared statements cached per raw handle, compiled on first use. */
export function preparedCache<S extends Record<string, string>>(sqlText: S) {
  const cache = new WeakMap<BetterSqlite3.Database, { [K in keyof S]: BetterSqlite3.Statement }>();
  return (raw: BetterSqlite3.Database) => {
    let c = cache.get(raw);
    if (!c) {
      c = {} as { [K in keyof S]: BetterSqlite3.Statement };
      for (const k of Object.keys(sqlText) as Array<keyof S>) c[k] = raw.prepare(sqlText[k]!);
      cache.set(raw, c);
    }
    return c;
  };
}
