import { it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { dropPgSchema, openStorage, relaxedTransaction } from '@svc/storage';
import { postgresAvailable, TEST_DATABASE_URL } from '@svc/testkit';

it('SQLite: a relaxed transaction commits with synchronous=NORMAL and restores the configured level, also after a rollback', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relaxed-'));
  const s = await openStorage({ dataDir: dir, sqliteFile: 'x.sqlite', pgSchema: 'x', sqliteSynchronous: 'FULL' });
  try {
    const level = () => s.sqlite!.pragma('synchronous', { simple: true });
    await s.db.schema.createTable('t').addColumn('v', 'integer').execute();
    let inside: unknown;
    await relaxedTransaction(s, async (trx) => {
      inside = level();
      await trx.insertInto('t').values({ v: 1 }).execute();
    });
    assert.equal(inside, 1, 'NORMAL while relaxed');
    assert.equal(level(), 2, 'FULL again afterwards');
    await assert.rejects(relaxedTransaction(s, async (trx) => {
      await trx.insertInto('t').values({ v: 2 }).execute();
      throw new Error('no');
    }));
    assert.equal(level(), 2);
    assert.deepEqual((await s.db.selectFrom('t').select('v').execute()).map((r) => r.v), [1]);
  } finally {
    await s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it('PostgreSQL: a relaxed transaction sets synchronous_commit off for itself only', async (t) => {
  if (!(await postgresAvailable())) return t.skip('PostgreSQL not available');
  const schema = `relaxed_${process.pid}`;
  const s = await openStorage({ databaseUrl: TEST_DATABASE_URL, dataDir: os.tmpdir(), sqliteFile: 'x', pgSchema: schema });
  try {
    const inside = await relaxedTransaction(s, async (trx) => (await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(trx)).rows[0]!.synchronous_commit);
    assert.equal(inside, 'off');
    const after = await s.db.transaction().execute(async (trx) => (await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(trx)).rows[0]!.synchronous_commit);
    assert.equal(after, 'on');
  } finally {
    await s.close();
    await dropPgSchema(TEST_DATABASE_URL, schema);
  }
});
