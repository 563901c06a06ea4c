import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { dropPgSchema, migrate, openStorage, type Storage } from '@svc/storage';
import { forEachStorage, TEST_DATABASE_URL } from '@svc/testkit';
import { workflowMigrations } from '../src/db/index.ts';

/**
 * Migration 009 on a database that already has a ledger: every account's
 * balance starts as the sum of its events (an account is made for events
 * without one), and from then on follows each insert and delete.
 */
forEachStorage('workflow migration 009: billing balances follow the ledger', (kind) => {
  let storage: Storage;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-mig009-'));
  const schema = `wf_mig009_${process.pid}`;

  before(async () => {
    storage = await openStorage({ databaseUrl: kind === 'postgres' ? TEST_DATABASE_URL : undefined, dataDir: dir, sqliteFile: 'wf.sqlite', pgSchema: schema });
  });
  after(async () => {
    await storage.close();
    if (kind === 'postgres') await dropPgSchema(TEST_DATABASE_URL, schema);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const event = (id: string, owner: string, delta: number, dedup: string | null = null) => ({ id, owner, type: delta < 0 ? 'charge' : 'credit', delta, description: id, job_id: null, op_id: null, dedup_key: dedup, created_at: 1_000 });
  const balances = async () =>
    Object.fromEntries((await storage.db.selectFrom('billing_accounts').select(['owner', 'balance']).orderBy('owner').execute()).map((r) => [r.owner, Number(r.balance)]));

  test('balances from the existing ledger, then kept in step by inserts (one row or many) and deletes', async () => {
    const before009 = workflowMigrations.filter((m) => m.name < '009');
    // The ledger as it stood before 009, then 009 (and what came after it) on top.
    assert.equal(before009.length, workflowMigrations.findIndex((m) => m.name.startsWith('009')));
    await migrate(storage.db, storage.dialect, before009);
    await storage.db.insertInto('billing_accounts').values({ owner: 'a', cancel_at_period_end: 0, created_at: 1, updated_at: 1 }).execute();
    await storage.db.insertInto('billing_accounts').values({ owner: 'idle', cancel_at_period_end: 0, created_at: 1, updated_at: 1 }).execute();
    await storage.db.insertInto('billing_events').values([event('e1', 'a', 100, 'free-tier'), event('e2', 'a', -30), event('e3', 'b', 50)]).execute();

    await migrate(storage.db, storage.dialect, workflowMigrations);
    assert.deepEqual(await balances(), { a: 70, b: 50, idle: 0 });

    await storage.db.insertInto('billing_events').values(event('e4', 'a', -20)).execute();
    await storage.db.insertInto('billing_events').values([event('e5', 'b', -5), event('e6', 'b', -5), event('e7', 'c', 9)]).execute();
    assert.deepEqual(await balances(), { a: 50, b: 40, c: 9, idle: 0 });
    // A refused duplicate (same dedup key) changes nothing.
    await assert.rejects(storage.db.insertInto('billing_events').values(event('e8', 'a', 100, 'free-tier')).execute());
    await storage.db.deleteFrom('billing_events').where('id', '=', 'e2').execute();
    assert.deepEqual(await balances(), { a: 80, b: 40, c: 9, idle: 0 });
    const sums = await storage.db.selectFrom('billing_events').select(['owner', (eb) => eb.fn.sum<number>('delta').as('s')]).groupBy('owner').orderBy('owner').execute();
    assert.deepEqual(Object.fromEntries(sums.map((r) => [r.owner, Number(r.s)])), { a: 80, b: 40, c: 9 });
  });
});
