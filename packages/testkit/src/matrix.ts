import { describe } from 'node:test';
import { postgresAvailable } from './postgres.ts';
import type { StorageKind } from './server.ts';

/**
 * Runs a describe block once per storage: always on SQLite, and on
 * PostgreSQL when it is available (otherwise the block is reported skipped).
 */
export function forEachStorage(title: string, fn: (storage: StorageKind) => void): void {
  describe(`${title} [sqlite]`, () => fn('sqlite'));
  describe(`${title} [postgres]`, async () => {
    if (!(await postgresAvailable())) {
      describe.skip('PostgreSQL not available (set TEST_POSTGRES=1 to require it)', () => {});
      return;
    }
    fn('postgres');
  });
}

/**
 * Runs a describe block on SQLite only, for behaviour the storage plays no
 * part in (model execution, media encoding: the prompt, history and queue
 * paths they ride on are tested on both storages by the engine's own tests).
 * It keeps the suite within its time budget; the title says which storage ran.
 */
export function onOneStorage(title: string, fn: (storage: StorageKind) => void): void {
  describe(`${title} [sqlite]`, () => fn('sqlite'));
}

/**
 * Runs a describe block on one given storage (PostgreSQL skipped where it is not available, as forEachStorage does):
 * a long suite split over two files, one per storage, so that each file has the runner's time limit to itself.
 */
export function onStorage(storage: StorageKind, title: string, fn: (storage: StorageKind) => void): void {
  if (storage === 'sqlite') {
    describe(`${title} [sqlite]`, () => fn('sqlite'));
    return;
  }
  describe(`${title} [postgres]`, async () => {
    if (!(await postgresAvailable())) {
      describe.skip('PostgreSQL not available (set TEST_POSTGRES=1 to require it)', () => {});
      return;
    }
    fn('postgres');
  });
}
