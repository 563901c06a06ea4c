import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ROOT, waitFor } from './helpers.ts';

/**
 * `npm run memory` / `npm run inventory` run plain node over esbuild bundles
 * (scripts/run-service.mjs): no TypeScript loader in the server, and none in
 * its worker threads (the inventory's template render pool and webhook send
 * thread start from bundles of their own). esbuild's service process, which
 * a build leaves running, is gone before the server starts: the server has
 * no child process at all. SQLite only: the bundles do not depend on the
 * storage (workflow/test/bundle.test.ts runs one on both).
 */

const procs: ChildProcess[] = [];
const dirs: string[] = [];
after(async () => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function children(pid: number): number[] {
  const out: number[] = [];
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    const c = fs.readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim();
    if (c) out.push(...c.split(/\s+/).map(Number));
  }
  return out;
}

async function runService(name: string, flags: string[] = []) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `bundle-${name}-`));
  dirs.push(dataDir);
  const proc = spawn(process.execPath, [path.join(ROOT, 'scripts', 'run-service.mjs'), name, '--port', '0', '--data-dir', dataDir, '--log-level', 'warn', ...flags], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DATABASE_URL: '' },
  });
  procs.push(proc);
  let out = '';
  proc.stdout!.on('data', (c) => (out += String(c)));
  proc.stderr!.on('data', (c) => (out += String(c)));
  const url = await waitFor(`${name} to listen`, () => {
    if (proc.exitCode !== null) throw new Error(`${name} exited: ${out}`);
    return /listening on (http:\/\/\S+)/.exec(out)?.[1];
  }, 180_000);
  return { proc, url, output: () => out };
}

describe('services run from their bundles', () => {
  test('inventory: templates render and webhooks go out from bundled worker threads; no child process', async () => {
    const received: string[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push(body);
        res.end('ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      const token = 'bundle-test-token-0123456789';
      const { proc, url } = await runService('inventory', ['--admin-token', token]);
      const api = async (method: string, p: string, body?: unknown) => {
        const r = await fetch(`${url}${p}`, { method, headers: { authorization: `Token ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
        return { status: r.status, body: (await r.json()) as any };
      };
      const hook = await api('POST', '/api/extras/webhooks/', { name: 'w', payload_url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, body_template: 'made {{ data.name }}' });
      assert.equal(hook.status, 201, JSON.stringify(hook.body));
      const preview = await api('POST', `/api/extras/webhooks/${hook.body.id}/preview/`, {});
      assert.equal(preview.status, 200, JSON.stringify(preview.body));
      const rule = await api('POST', '/api/extras/event-rules/', { name: 'r', object_types: ['extras.tag'], event_types: ['object_created'], action_object_type: 'extras.webhook', action_object_id: hook.body.id });
      assert.equal(rule.status, 201, JSON.stringify(rule.body));
      assert.equal((await api('POST', '/api/extras/tags/', { name: 'bundled', slug: 'bundled' })).status, 201);
      await waitFor('the webhook delivery', () => received.includes('made bundled'), 60_000);
      assert.deepEqual(children(proc.pid!), [], 'the server has a child process (an esbuild service?)');
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      assert.equal(proc.exitCode, 0);
    } finally {
      await new Promise((r) => receiver.close(r));
    }
  });

  test('memory: serves, / leads to the docs, no child process', async () => {
    const { proc, url } = await runService('memory');
    const app = await fetch(`${url}/apps`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bundled' }) });
    assert.equal(app.status, 200);
    const root = await fetch(`${url}/`, { redirect: 'manual' });
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/docs');
    assert.deepEqual(children(proc.pid!), []);
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    assert.equal(proc.exitCode, 0);
  });
});
