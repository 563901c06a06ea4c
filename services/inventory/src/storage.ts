import type { Kysely } from 'kysely';
import { migrate, openStorage, type Storage } from '@svc/storage';
import type { InventoryConfig } from './config.ts';
import { coreMigrations } from './migrations.ts';
import { extrasMigrations } from './migrations-extras.ts';
import { networkingMigrations } from './migrations-networking.ts';
import { deviceTemplateMigrations } from './migrations-device-templates.ts';
import { coreDataMigrations } from './migrations-core-data.ts';
import { permissionMigrations } from './auth/permissions.ts';
import { sqliteRegexp } from './models/regex-lookup.ts';
// The event tables' migrations from their own leaf module: importing the events package here would close the
// cycle storage → events → event routes → routes/extras-* → storage.
import { eventMigrations } from './events/schema.ts';

/** The inventory database, opened and migrated alike by the API process and by separate worker processes. */
export async function openInventoryStorage(config: InventoryConfig): Promise<Storage> {
  const storage = await openStorage({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    sqliteFile: 'inventory.sqlite',
    pgSchema: config.pgSchema,
    // Every committed change carries its outbox rows: they must survive power loss.
    sqliteSynchronous: 'FULL',
    sqliteStatementCache: 500,
    // `__regex` filters on SQLite run RE2 (linear time); PostgreSQL uses its own operator.
    onSqliteOpen: (db) => void db.function('inventory_regexp', { deterministic: true }, sqliteRegexp),
  });
  try {
    await migrate(storage.db, storage.dialect, [...coreMigrations, ...extrasMigrations, ...networkingMigrations, ...deviceTemplateMigrations, ...coreDataMigrations, ...permissionMigrations, ...eventMigrations]);
  } catch (err) {
    await storage.close();
    throw err;
  }
  return storage;
}

const UNIQUE_VIOLATION = new Set(['23505', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
// PostgreSQL deadlock_detected and serialization_failure: the transaction was rolled back and may simply run again.
const RETRYABLE = new Set(['40P01', '40001']);

export function isUniqueViolation(err: unknown): boolean {
  return UNIQUE_VIOLATION.has(String((err as { code?: unknown })?.code ?? ''));
}

/**
 * A write transaction that is run again when it lost a race: a unique key
 * another writer committed first (the re-run's validators then see that row
 * and answer exactly as a sequential clash would) or a PostgreSQL deadlock.
 * `fn` must keep its state inside the transaction, as it may run more than once.
 */
export async function writeTransaction<T>(storage: Storage, fn: (trx: Kysely<any>) => Promise<T>, tries = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await storage.db.transaction().execute(fn);
    } catch (err) {
      const code = String((err as { code?: unknown })?.code ?? '');
      if (attempt >= tries || !(UNIQUE_VIOLATION.has(code) || RETRYABLE.has(code))) throw err;
    }
  }
}
