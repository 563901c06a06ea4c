import { it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { isTransientStorageError, openStorage } from '@svc/storage';

it('classifies lock and serialisation errors as transient, others not', () => {
  for (const code of ['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY', 'SQLITE_LOCKED', 'SQLITE_LOCKED_SHAREDCACHE', '40001', '40P01', '55P03']) {
    assert.equal(isTransientStorageError(Object.assign(new Error('x'), { code })), true, code);
  }
  assert.equal(isTransientStorageError(new Error('wrapped', { cause: Object.assign(new Error('x'), { code: '40P01' }) })), true);
  for (const v of [new Error('boom'), Object.assign(new Error('x'), { code: 'SQLITE_CONSTRAINT' }), Object.assign(new Error('x'), { code: '23505' }), null, undefined, 'SQLITE_BUSY']) {
    assert.equal(isTransientStorageError(v), false, String(v));
  }
});

it('SQLite transactions take the write lock at BEGIN (no read-to-write upgrade that fails with SQLITE_BUSY)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'storage-busy-'));
  const storage = await openStorage({ dataDir: dir, sqliteFile: 'db.sqlite', pgSchema: 'x' });
  try {
    await storage.db.schema.createTable('t').addColumn('v', 'integer').execute();
    // Another connection (as a separate worker process would) commits while our transaction holds a read snapshot,
    // then holds the write lock briefly: a deferred BEGIN would fail the insert at once with SQLITE_BUSY(_SNAPSHOT).
    const other = new BetterSqlite3(path.join(dir, 'db.sqlite'));
    other.pragma('busy_timeout = 0');
    await storage.db.transaction().execute(async (trx) => {
      await trx.selectFrom('t').selectAll().execute();
      assert.throws(() => other.prepare('insert into t values (1)').run(), (e: any) => isTransientStorageError(e));
      await trx.insertInto('t').values({ v: 2 }).execute();
    });
    other.close();
    assert.deepEqual(await storage.db.selectFrom('t').select('v').execute(), [{ v: 2 }]);
  } finally {
    await storage.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
