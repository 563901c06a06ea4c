import { it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { openStorage } from '@svc/storage';

it('SQLite: with sqliteCheckpointThread, commits never checkpoint; a worker thread copies the WAL into the database and the WAL restarts', { timeout: 60_000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckpt-'));
  const file = path.join(dir, 'x.sqlite');
  const s = await openStorage({ dataDir: dir, sqliteFile: 'x.sqlite', pgSchema: 'x', sqliteCheckpointThread: true });
  try {
    assert.equal(s.sqlite!.pragma('wal_autocheckpoint', { simple: true }), 0);
    await sql`create table t (id integer primary key, b blob)`.execute(s.db);
    const blob = Buffer.alloc(4000, 7);
    const write = async (from: number) => {
      for (let i = from; i < from + 1500; i += 100) {
        await s.db.transaction().execute(async (trx) => {
          for (let k = i; k < i + 100; k++) await trx.insertInto('t').values({ id: k, b: blob }).execute();
        });
      }
    };
    // 1,500 rows of 4 KB: past SQLite's 1,000-page automatic threshold.
    await write(0);
    const until = async (pred: () => boolean) => {
      const end = Date.now() + 20_000;
      while (!pred()) {
        if (Date.now() > end) throw new Error('timed out');
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    // Every WAL frame copied back (the wal-index's nBackfill equals its mxFrame), read without checkpointing from here:
    // only then does the next writer restart the WAL; a size test alone passes mid-checkpoint, and the writer appends.
    const backfilled = () => {
      const shm = fs.readFileSync(`${file}-shm`);
      return shm.length >= 100 && shm.readUInt32LE(16) > 0 && shm.readUInt32LE(96) === shm.readUInt32LE(16);
    };
    // The thread's checkpoint copies the pages into the database file.
    await until(() => fs.statSync(file).size > 1500 * 4000 && backfilled());
    const walAfterFirst = fs.statSync(`${file}-wal`).size;
    // Writing as much again reuses the WAL from its start (it does not keep growing).
    await write(1500);
    await until(() => fs.statSync(file).size > 3000 * 4000 && backfilled());
    assert.ok(fs.statSync(`${file}-wal`).size <= walAfterFirst * 1.5, `WAL ${fs.statSync(`${file}-wal`).size} bytes after ${walAfterFirst}`);
    assert.equal((s.sqlite!.prepare('select count(*) as n from t').get() as { n: number }).n, 3000);
  } finally {
    await s.close();
  }
  // The last connection's close removes the WAL.
  assert.equal(fs.existsSync(`${file}-wal`), false);
  fs.rmSync(dir, { recursive: true, force: true });
});
