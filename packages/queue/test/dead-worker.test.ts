import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { sql } from 'kysely';
import { openStorage, type Storage } from '@svc/storage';
import { createQueue, type JobQueue } from '@svc/queue';
import { cleanupConfig, forEachStorage, testConfig } from '@svc/testkit';

const fixture = path.join(import.meta.dirname, 'fixtures', 'hold-job.ts');

async function waitFor<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The child's stdout lines as they arrive. */
function startHolder(cfg: ReturnType<typeof testConfig>): { child: ChildProcess; lines: string[]; exited: Promise<void> } {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, cfg.databaseUrl ?? '-', cfg.dataDir, cfg.pgSchema], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return { child, lines, exited };
}

forEachStorage('job queue: jobs of a killed worker process', (kind) => {
  const cfg = testConfig('qdead', kind);
  let storage: Storage;
  let queue: JobQueue;
  let holder: ReturnType<typeof startHolder> | undefined;
  const done: number[] = [];

  before(async () => {
    storage = await openStorage({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir, sqliteFile: 'q.sqlite', pgSchema: cfg.pgSchema });
    queue = await createQueue(storage, {
      pollIntervalMs: 100,
      concurrency: 2,
      deadWorkerCheckMs: 250,
      tasks: {
        step: async (p: { n: number }) => {
          done.push(p.n);
        },
      },
    });
  });
  after(async () => {
    if (holder && holder.child.exitCode === null && holder.child.signalCode === null) {
      holder.child.kill('SIGKILL');
      await holder.exited;
    }
    await queue.stop();
    await storage.close();
    await cleanupConfig(cfg);
  });

  async function lockedJobs(): Promise<number> {
    const r =
      kind === 'postgres'
        ? await sql<{ n: number }>`select count(*)::int as n from ${sql.raw(`"${cfg.pgSchema}_worker"._private_jobs`)} where locked_by is not null and locked_at < now() - interval '2.5 seconds'`.execute(storage.db)
        : await sql<{ n: number }>`select count(*) as n from jobs where locked_at is not null`.execute(storage.db);
    return Number(r.rows[0]!.n);
  }

  it('are taken by a live worker once the holder is killed, and its named queue drains in order', { timeout: 120_000 }, async () => {
    // One named queue: the job the killed process holds blocks the ones behind it.
    await storage.db.transaction().execute(async (trx) => {
      for (let n = 1; n <= 5; n++) await queue.add('step', { n }, { queueName: 'user-1' }, trx);
    });
    holder = startHolder(cfg);
    await waitFor('the child to take job 1', () => holder!.lines.includes('locked 1'));

    // A live worker next to it: the held job (older than the grace period) is left alone.
    await queue.start();
    await waitFor('the lock to age past the grace period', async () => (await lockedJobs()) >= 1);
    assert.equal(await queue.releaseDeadWorkers!(), 0);
    assert.deepEqual(done, []);

    holder.child.kill('SIGKILL');
    await holder.exited;
    // No further action: the periodic sweep releases the job and the queue drains.
    await waitFor('the queue to drain', () => done.length === 5);
    assert.deepEqual(done, [1, 2, 3, 4, 5]);
    // The last completion is written after its handler returned (batched per tick).
    await waitFor('the last completion to be recorded', async () => (await queue.depth()) === 0);
  });
});
