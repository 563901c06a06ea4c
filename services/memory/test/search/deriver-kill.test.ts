/**
 * A worker process killed mid-job (SIGKILL while its derivation waits for
 * the model) must not stall that user's queue: another worker takes the job
 * again within seconds and the queue drains, facts in message order.
 */
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { forEachStorage } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { client } from '@svc/testkit';
import { startFakeOpenAi, type FakeOpenAi } from './fake-openai.ts';
import { newUser, startMemory, waitFor, type Http } from './helpers.ts';

// The service runs as `npm run memory` runs it (scripts/run-service.mjs: the bundle of src/main.ts, rebuilt when a
// source is newer): under tsx each start spent seconds of CPU transpiling its modules. Still a process of its own.
const RUN_SERVICE = path.join(import.meta.dirname, '..', '..', '..', '..', 'scripts', 'run-service.mjs');

forEachStorage('memory deriver after a worker is killed mid-job', (kind) => {
  let fake: FakeOpenAi;
  let api: Awaited<ReturnType<typeof startMemory>>;
  let worker: Awaited<ReturnType<typeof buildApp>> | undefined;
  let release!: () => void;

  before(async () => {
    fake = await startFakeOpenAi();
    fake.answer = (prompt) => {
      // The duplicate check keeps every new fact.
      if (prompt.includes('comparing new facts')) return prompt.split('new facts:\n')[1]!.split('\n---')[0]!;
      const m = /I have (\d+) cats/.exec(prompt.split('\n').filter((l) => l.includes('cats')).at(-1) ?? '');
      return `1. The user has ${m?.[1] ?? '?'} cats`;
    };
    fake.gate = new Promise<void>((r) => (release = r));
    // The API process runs no workers: the jobs wait for the worker processes.
    api = await startMemory(kind, { runWorkers: false });
  });
  after(async () => {
    release?.();
    await worker?.close();
    await api?.server.close();
    await fake?.close();
  });

  it('re-delivers the killed worker’s job and drains the user’s queue in order', { timeout: 180_000 }, async () => {
    const http: Http = api.http;
    const u = await newUser(http);
    const s = await http.post(`${u.S}`, { location_id: 'x' });
    const M = `${u.S}/${s.body.id}/messages`;
    for (let n = 1; n <= 3; n++) assert.equal((await http.post(M, { content: `I have ${n} cats`, is_user: true })).status, 200);

    const cfg = api.server.cfg;
    const args = [RUN_SERVICE, 'memory', '--port', '0', '--data-dir', cfg.dataDir, '--pg-schema', cfg.pgSchema, '--log-level', 'silent'];
    if (cfg.databaseUrl) args.push('--database-url', cfg.databaseUrl);
    const child = spawn(process.execPath, args, { env: { ...process.env, MEMORY_LLM_URL: fake.url, MEMORY_LLM_MODEL: 'm' }, stdio: 'ignore' });
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    try {
      // The child has taken the first job and waits for the model.
      await waitFor(async () => fake.requests.some((r) => r.path === '/v1/chat/completions'), 90_000);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    release();
    fake.gate = undefined;

    // A new worker process (here: in-process) takes over without any manual step.
    worker = await buildApp({ ...cfg, port: 0, runWorkers: true, llm: { url: fake.url, model: 'm' } } as any);
    const base = await worker.listen({ port: 0, host: '127.0.0.1' });
    const w = client(base);
    await waitFor(async () => (await w.get('/health')).body.queue_depth === 0, 60_000);
    const honcho = await w.get(`${u.U}/collections/honcho`);
    assert.equal(honcho.status, 200, honcho.text);
    const docs = await w.get(`${u.U}/collections/${honcho.body.id}/documents`);
    assert.deepEqual(
      docs.body.items.map((d: any) => d.content),
      ['The user has 1 cats', 'The user has 2 cats', 'The user has 3 cats'],
    );
  });
});
