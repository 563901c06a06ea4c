import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { openStorage, type Storage } from '@svc/storage';
import { createQueue, type JobQueue } from '@svc/queue';
import { cleanupConfig, forEachStorage, testConfig } from '@svc/testkit';

forEachStorage('job queue', (kind) => {
  let storage: Storage;
  let queue: JobQueue;
  const cfg = testConfig('queue', kind);
  const seen: Array<{ n: number; attempt: number }> = [];
  let failOnce = true;
  const events: string[] = [];

  before(async () => {
    storage = await openStorage({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir, sqliteFile: 'q.sqlite', pgSchema: cfg.pgSchema });
    queue = await createQueue(storage, {
      pollIntervalMs: 50,
      concurrency: 4,
      tasks: {
        serial: async (p: { n: number }) => {
          events.push(`start ${p.n}`);
          await new Promise((r) => setTimeout(r, 30));
          events.push(`end ${p.n}`);
        },
        record: async (p: { n: number }, ctx) => {
          seen.push({ n: p.n, attempt: ctx.attempt });
        },
        flaky: async (_p, ctx) => {
          if (failOnce) {
            failOnce = false;
            throw new Error('first try fails');
          }
          seen.push({ n: -1, attempt: ctx.attempt });
        },
      },
    });
    await sql`create table items (id integer primary key, name text)`.execute(storage.db);
    await queue.start();
  });
  after(async () => {
    await queue.stop();
    await storage.close();
    await cleanupConfig(cfg);
  });

  async function waitFor(pred: () => boolean, ms = 10_000) {
    const end = Date.now() + ms;
    while (!pred()) {
      if (Date.now() > end) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('runs jobs added outside a transaction', async () => {
    await queue.add('record', { n: 1 });
    await waitFor(() => seen.some((s) => s.n === 1));
  });

  it('commits jobs with the transaction and drops them on rollback', async () => {
    await storage.db.transaction().execute(async (trx) => {
      await sql`insert into items (id, name) values (1, 'a')`.execute(trx);
      await queue.add('record', { n: 2 }, {}, trx);
    });
    queue.wake();
    await assert.rejects(
      storage.db.transaction().execute(async (trx) => {
        await queue.add('record', { n: 3 }, {}, trx);
        throw new Error('rollback');
      }),
    );
    await waitFor(() => seen.some((s) => s.n === 2));
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(!seen.some((s) => s.n === 3));
  });

  it('honours run_at and reports depth', async () => {
    await queue.add('record', { n: 4 }, { runAt: new Date(Date.now() + 60_000) });
    assert.ok((await queue.depth()) >= 1);
  });

  it('retries a failing job', { timeout: 20_000 }, async () => {
    await queue.add('flaky', {}, { maxAttempts: 3 });
    await waitFor(() => seen.some((s) => s.n === -1), 15_000);
    assert.equal(seen.find((s) => s.n === -1)!.attempt, 2);
  });

  it('runs jobs of one named queue one at a time, in order', { timeout: 20_000 }, async () => {
    await storage.db.transaction().execute(async (trx) => {
      for (let n = 1; n <= 4; n++) await queue.add('serial', { n }, { queueName: 'user-1' }, trx);
    });
    queue.wake();
    await waitFor(() => events.length === 8, 15_000);
    assert.deepEqual(events, ['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3', 'start 4', 'end 4']);
  });

  it('addMany: one call enqueues jobs in order, with the transaction, and none on rollback', { timeout: 20_000 }, async () => {
    const before = events.length;
    await storage.db.transaction().execute(async (trx) => {
      await sql`insert into items (id, name) values (2, 'b')`.execute(trx);
      await queue.addMany(
        [5, 6, 7, 8, 9, 10].map((n) => ({ task: 'serial', payload: { n }, opts: { queueName: 'user-2', maxAttempts: 5 } })),
        trx,
      );
    });
    await assert.rejects(
      storage.db.transaction().execute(async (trx) => {
        await queue.addMany([{ task: 'record', payload: { n: 11 } }, { task: 'record', payload: { n: 12 } }], trx);
        throw new Error('rollback');
      }),
    );
    // Without a transaction of the caller's, and a job scheduled later.
    await queue.addMany([
      { task: 'record', payload: { n: 13 } },
      { task: 'record', payload: { n: 14 }, opts: { runAt: new Date(Date.now() + 3_600_000) } },
    ]);
    queue.wake();
    await waitFor(() => events.length === before + 12 && seen.some((s) => s.n === 13), 15_000);
    assert.deepEqual(events.slice(before), [5, 6, 7, 8, 9, 10].flatMap((n) => [`start ${n}`, `end ${n}`]));
    assert.ok(!seen.some((s) => s.n === 11 || s.n === 12 || s.n === 14));
    const t = sql.raw(kind === 'postgres' ? `${cfg.pgSchema}_worker._private_jobs` : 'jobs');
    const pending = await sql<{ n: number }>`select count(*) as n from ${t} where ${sql.raw(kind === 'postgres' ? 'payload::text' : 'payload')} like '%"n":14%'`.execute(storage.db);
    assert.equal(Number(pending.rows[0]!.n), 1);
  });

  it('addSql quiet (PostgreSQL): the job commits with the statement, without NOTIFY, keeps its named queue order and runs', { timeout: 20_000 }, async (t) => {
    if (!queue.addSql) return t.skip('SQL enqueue is PostgreSQL only');
    const before = events.length;
    await storage.db.transaction().execute(async (trx) => {
      for (const n of [20, 21]) await sql`select ${queue.addSql!('serial', { n }, { queueName: 'user-3', quiet: true })}`.execute(trx);
      await queue.add('serial', { n: 22 }, { queueName: 'user-3' }, trx);
    });
    await assert.rejects(
      storage.db.transaction().execute(async (trx) => {
        await sql`select ${queue.addSql!('record', { n: 23 }, { quiet: true })}`.execute(trx);
        throw new Error('rollback');
      }),
    );
    queue.notifyAdded?.();
    await waitFor(() => events.length === before + 6, 15_000);
    assert.deepEqual(events.slice(before), [20, 21, 22].flatMap((n) => [`start ${n}`, `end ${n}`]));
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(!seen.some((x) => x.n === 23));
  });
});
