/**
 * Issue 23's proof: the memory process is killed (SIGKILL) while v3
 * derivation jobs are running — its workers hold jobs whose model call is
 * waiting, and a message batch may be in flight — then started again on the
 * same storage. Nothing acknowledged is lost, the batch in flight is stored
 * whole or not at all, every message is derived, and no job (nor, on
 * PostgreSQL, named queue) stays locked by the dead process.
 */
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { sql } from 'kysely';
import { openStorage, type Storage } from '@svc/storage';
import { cleanupConfig, client, forEachStorage, freePort, testConfig } from '@svc/testkit';
import { startFakeOpenAi, type FakeOpenAi } from '../search/fake-openai.ts';
import { waitFor } from '../search/helpers.ts';

// The service runs as `npm run memory` runs it (scripts/run-service.mjs: the bundle of src/main.ts, rebuilt when a
// source is newer): under tsx each start spent seconds of CPU transpiling its modules. Still a process of its own.
const RUN_SERVICE = path.join(import.meta.dirname, '..', '..', '..', '..', 'scripts', 'run-service.mjs');
const BATCH = 20;
const DERIVED = /note (\d+)\n---\nOnly derive facts/;

forEachStorage('memory v3: the process killed during derivation', (kind) => {
  const cfg = testConfig('memkill', kind);
  let fake: FakeOpenAi;
  let release!: () => void;
  const children: ChildProcess[] = [];
  let storage: Storage | undefined;

  /** The service as its own process (workers on, the fake model), ready when /health answers. */
  async function start() {
    const port = await freePort();
    const args = [RUN_SERVICE, 'memory', '--port', String(port), '--data-dir', cfg.dataDir, '--pg-schema', cfg.pgSchema, '--log-level', 'silent'];
    if (cfg.databaseUrl) args.push('--database-url', cfg.databaseUrl);
    const child = spawn(process.execPath, args, { env: { ...process.env, MEMORY_LLM_URL: fake.url, MEMORY_LLM_MODEL: 'm', LOG_REQUESTS: '0' }, stdio: 'ignore' });
    children.push(child);
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const http = client(`http://127.0.0.1:${port}`);
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`);
      return (await http.get('/health').catch(() => undefined))?.status === 200;
    }, 90_000, 100);
    return { child, http, exited };
  }

  before(async () => {
    fake = await startFakeOpenAi();
    // The deriver's conversation ends with the message being derived ("alice: kill note 17"); the duplicate check keeps every new fact.
    fake.answer = (prompt) => {
      if (prompt.includes('comparing new facts')) return prompt.split('new facts:\n')[1]!.split('\n---')[0]!;
      const n = DERIVED.exec(prompt)?.[1];
      return n ? `1. The user wrote note ${n}` : 'None';
    };
    fake.gate = new Promise<void>((r) => (release = r));
  });
  after(async () => {
    release?.();
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await storage?.close();
    await fake?.close();
    await cleanupConfig(cfg);
  });

  it('loses no message and leaves no job locked', { timeout: 300_000 }, async (t) => {
    const first = await start();
    const M = '/v3/workspaces/kill/sessions/s1/messages';
    const batch = (b: number) => ({ messages: Array.from({ length: BATCH }, (_, i) => ({ peer_id: i % 2 ? 'alice' : 'bob', content: `kill note ${b * BATCH + i}` })) });
    const acknowledged: string[] = [];
    for (let b = 0; b < 3; b++) {
      const r = await first.http.post(M, batch(b));
      assert.equal(r.status, 201, r.text);
      acknowledged.push(...r.body.map((m: any) => m.id));
    }
    // Workers have taken derivation jobs and wait for the model (both peers' queues).
    await waitFor(async () => fake.requests.filter((r) => r.path === '/chat/completions' || r.path === '/v1/chat/completions').length >= 2, 90_000);
    // A fourth batch is on its way when the process dies.
    const inFlight = first.http.post(M, batch(3)).catch(() => undefined);
    first.child.kill('SIGKILL');
    await first.exited;
    const late = await inFlight;

    storage = await openStorage({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir, sqliteFile: 'memory.sqlite', pgSchema: cfg.pgSchema });
    const jobs = sql.raw(kind === 'postgres' ? `"${cfg.pgSchema}_worker"._private_jobs` : 'jobs');
    const count = async (q: ReturnType<typeof sql>) => Number(((await q.execute(storage!.db)).rows[0] as any).n);
    // The dead process still holds jobs: the kill happened mid-derivation.
    assert.ok((await count(sql`select count(*) as n from ${jobs} where locked_at is not null`)) >= 1, 'the killed process held jobs');

    release();
    fake.gate = undefined;
    const second = await start();
    const status = async () => (await second.http.get('/v3/workspaces/kill/queue/status')).body;
    await waitFor(async () => {
      const s = await status();
      return s.total_work_units > 0 && s.pending_work_units === 0 && s.in_progress_work_units === 0 && (await second.http.get('/health')).body.queue_depth === 0;
    }, 180_000, 200);

    // Every acknowledged message is there, in order, numbered without gaps; the batch in flight whole or not at all.
    const list = await second.http.post(`${M}/list?size=100`, {});
    assert.equal(list.status, 200, list.text);
    const ids: string[] = list.body.items.map((m: any) => m.id);
    assert.deepEqual(ids.slice(0, acknowledged.length), acknowledged);
    assert.ok(ids.length === 3 * BATCH || ids.length === 4 * BATCH, `stored ${ids.length} messages`);
    if (late?.status === 201) assert.equal(ids.length, 4 * BATCH, 'an acknowledged batch is stored');
    t.diagnostic(`batch in flight at the kill: ${ids.length === 4 * BATCH ? 'stored' : 'not stored'} (answer: ${late?.status ?? 'none'})`);
    const seqs = await storage.db.selectFrom('v3_messages').select('seq_in_session').where('workspace', '=', 'kill').orderBy('seq_in_session').execute();
    assert.deepEqual(
      seqs.map((r: any) => Number(r.seq_in_session)),
      Array.from({ length: ids.length }, (_, i) => i + 1),
    );

    // Every message was derived (the model saw each as the message to derive), each work unit completed once.
    const derived = new Set(fake.requests.map((r) => DERIVED.exec(String(r.body?.messages?.at(-1)?.content ?? ''))?.[1]).filter(Boolean));
    const contents = list.body.items.map((m: any) => /kill note (\d+)/.exec(m.content)![1]);
    assert.deepEqual(contents.filter((n: string) => !derived.has(n)), []);
    const work = await storage.db.selectFrom('v3_work').select(['task', 'status']).where('workspace', '=', 'kill').execute();
    assert.equal(work.filter((w: any) => w.task === 'memory_v3_derive').length, ids.length);
    assert.deepEqual([...new Set(work.map((w: any) => w.status))], ['completed']);

    // No job left, none locked; on PostgreSQL no named queue locked either.
    assert.equal(await count(sql`select count(*) as n from ${jobs}`), 0);
    if (kind === 'postgres') {
      const queues = sql.raw(`"${cfg.pgSchema}_worker"._private_job_queues`);
      assert.equal(await count(sql`select count(*) as n from ${queues} where locked_at is not null`), 0);
    }
    const conclusions = await second.http.post('/v3/workspaces/kill/conclusions/list', { filters: { observer: 'alice', observed: 'alice' } });
    assert.equal(conclusions.status, 200, conclusions.text);
    assert.ok(conclusions.body.items.length > 0);

    second.child.kill('SIGTERM');
    await second.exited;
  });
});
