import { migrate, openStorage, type Storage } from '@svc/storage';
import type { InventoryConfig } from './config.ts';
import { coreMigrations } from './migrations.ts';
import { eventMigrations } from './events/index.ts';

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
  });
  try {
    await migrate(storage.db, storage.dialect, [...coreMigrations, ...eventMigrations]);
  } catch (err) {
    await storage.close();
    throw err;
  }
  return storage;
}
