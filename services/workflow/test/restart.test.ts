import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';
import { client, cleanupConfig, forEachStorage, startTestServer, testConfig } from '@svc/testkit';
import { buildApp } from '../src/app.ts';
import { bundledThreads, installPack, pollPause, textPrompt, waitJob } from './helpers.ts';

// The service runs as `npm run workflow` runs it (scripts/run-service.mjs: the bundle of src/main.ts, rebuilt when a
// source is newer): under tsx each start spent seconds of CPU transpiling its modules. Still a process of its own.
const RUN_SERVICE = path.resolve(import.meta.dirname, '../../../scripts/run-service.mjs');

/** Starts the service as its own process (so it can be killed with SIGKILL) and waits for its URL. */
function spawnService(args: string[], env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [RUN_SERVICE, 'workflow', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'error', ...env } });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, url: m[1]! });
    });
    child.stderr!.on('data', (d) => (out += d));
    child.on('exit', (code) => reject(new Error(`service exited with ${code}: ${out}`)));
  });
}

// The servers built here in the test's process start their execution threads from the bundle, as startWorkflow's do.
before(() => bundledThreads());

forEachStorage('workflow restart persistence', (storage) => {
  test('queue and history survive a kill; the prompt that was running is reported failed, not re-run or lost', async () => {
    const cfg = testConfig('workflow', storage);
    fs.mkdirSync(path.join(cfg.dataDir, 'custom_nodes'), { recursive: true });
    installPack(cfg.dataDir, 'gate-pack.mjs');
    const args = ['--port', '0', '--host', '127.0.0.1', '--data-dir', cfg.dataDir, '--pg-schema', cfg.pgSchema];
    const env: Record<string, string> = cfg.databaseUrl ? { DATABASE_URL: cfg.databaseUrl } : {};
    const { child, url } = await spawnService(args, env);
    let restarted: Awaited<ReturnType<typeof startTestServer>> | undefined;
    try {
      const http = client(url);
      const done = await http.post('/prompt', { prompt: textPrompt('finished before the kill') });
      await waitJob(http, done.body.prompt_id);
      const running = await http.post('/prompt', { prompt: { g: { class_type: 'TestGate', inputs: { name: 'never-released' } } } });
      const pending = await http.post('/prompt', { prompt: textPrompt('queued behind the gate') });
      for (let attempt = 0; ; attempt++) {
        const q = await http.get('/queue');
        if (q.body.queue_running.length === 1) break;
        await pollPause(attempt);
      }
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));

      restarted = await startTestServer('workflow', storage, buildApp, { dataDir: cfg.dataDir, pgSchema: cfg.pgSchema });
      const h2 = client(restarted.url);
      const failed = await waitJob(h2, running.body.prompt_id);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.execution_error.exception_type, 'ServerRestart');
      const ran = await waitJob(h2, pending.body.prompt_id);
      assert.equal(ran.status, 'completed');
      const old = await h2.get(`/history/${done.body.prompt_id}`);
      assert.equal(old.body[done.body.prompt_id].status.status_str, 'success');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      if (restarted) await restarted.app.close();
      await cleanupConfig(cfg);
    }
  });

  test('history is bounded (--max-history) and the oldest entries go first', async () => {
    const srv = await startTestServer('workflow', storage, buildApp, { flags: { maxHistory: '3' } });
    try {
      const http = client(srv.url);
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await http.post('/prompt', { prompt: textPrompt(`bounded ${i}`) });
        ids.push(r.body.prompt_id);
        await waitJob(http, r.body.prompt_id);
      }
      const h = await http.get('/history?max_items=100');
      assert.deepEqual(Object.keys(h.body), ids.slice(3));
      const j = await http.get('/api/jobs');
      assert.equal(j.body.pagination.total, 3);

      // The bound keeps counting through a client's deletions: 2 left + 2 new = the newest 3 after one more.
      assert.equal((await http.post('/history', { delete: [ids[3]] })).status, 200);
      const more: string[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await http.post('/prompt', { prompt: textPrompt(`after delete ${i}`) });
        more.push(r.body.prompt_id);
        await waitJob(http, r.body.prompt_id);
        const n = Object.keys((await http.get('/history?max_items=100')).body).length;
        assert.equal(n, Math.min(3, 2 + i + 1), `after ${i + 1} more`);
      }
      assert.deepEqual(Object.keys((await http.get('/history?max_items=100')).body), more);
      // And through a clear.
      assert.equal((await http.post('/history', { clear: true })).status, 200);
      for (let i = 0; i < 4; i++) await waitJob(http, (await http.post('/prompt', { prompt: textPrompt(`after clear ${i}`) })).body.prompt_id);
      assert.equal((await http.get('/api/jobs')).body.pagination.total, 3);
    } finally {
      await srv.close();
    }
  });
});
