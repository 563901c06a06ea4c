import { migrate, openStorage, type Storage } from '@svc/storage';
import type { InventoryConfig } from './config.ts';
import { coreMigrations } from './migrations.ts';
import { extrasMigrations } from './migrations-extras.ts';
import { networkingMigrations } from './migrations-networking.ts';
import { deviceTemplateMigrations } from './migrations-device-templates.ts';
import { coreDataMigrations } from './migrations-core-data.ts';
import { permissionMigrations } from './auth/permissions.ts';
import { sqliteRegexp } from './models/regex-lookup.ts';
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
