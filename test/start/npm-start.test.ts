import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { freePort, npmStart, portFree, processesWith, ROOT, servicePid, supervisorPid, waitFor, type Started } from './helpers.ts';

/**
 * `npm start` as a process supervisor runs it (systemd, Docker, PM2): one pid,
 * signalled. These tests run the real command over its default embedded
 * storage (SQLite under --data-dir; npm start has no PostgreSQL mode of its
 * own), check the banner, signal npm's pid or the supervisor's, and check
 * that every port is released, no service process is left and the data
 * survives.
 */

const BANNER_DONE = /Request logs: off/;
const dirs: string[] = [];
const running: Started[] = [];

after(async () => {
  for (const s of running) {
    if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL');
  }
  for (const d of dirs) {
    for (const pid of processesWith(d)) process.kill(pid, 'SIGKILL');
    fs.rmSync(d, { recursive: true, force: true });
  }
});

function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'npm-start-'));
  dirs.push(d);
  return d;
}

async function ports() {
  return { memory: await freePort(), workflow: await freePort(), inventory: await freePort() };
}

function startAll(dataDir: string, p: { memory: number; workflow: number; inventory: number }, extra: string[] = []): Started {
  const s = npmStart(['--data-dir', dataDir, '--memory-port', String(p.memory), '--workflow-port', String(p.workflow), '--inventory-port', String(p.inventory), ...extra]);
  running.push(s);
  return s;
}

async function allReleased(dataDir: string, p: Record<string, number>) {
  // An exiting process closes its sockets when its last thread is gone, a moment after its exit is reported.
  await waitFor('every process of this npm start to be gone', () => processesWith(dataDir).length === 0, 10_000).catch(() => {});
  assert.deepEqual(processesWith(dataDir), [], 'a process of this npm start is still running');
  for (const port of Object.values(p)) assert.ok(portFree(port), `port ${port} still has a listener`);
}

describe('npm start under a process supervisor', () => {
  test('SIGTERM to the npm pid stops every service (exit 0, ports free, data kept); SIGINT to it as well', async () => {
    const dataDir = tempDir();
    const p = await ports();
    const first = startAll(dataDir, p);
    const out = await first.waitForOutput(BANNER_DONE);

    // One banner per service: URL, docs, storage, UI where there is one; the admin token framed with what it is for.
    for (const [name, port] of Object.entries(p)) {
      assert.match(out, new RegExp(`${name} +http://127\\.0\\.0\\.1:${port}\\n +docs http://127\\.0\\.0\\.1:${port}/docs +storage sqlite \\(${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/${name}\\)`));
    }
    assert.match(out, new RegExp(`admin UI http://127\\.0\\.0\\.1:${p.inventory}/ui/`));
    assert.match(out, new RegExp(`UI http://127\\.0\\.0\\.1:${p.workflow}/`));
    const token = /│ +([0-9a-f]{40}) +│/.exec(out)?.[1];
    assert.ok(token, out);
    assert.match(out, /superuser "admin" created/);
    assert.match(out, new RegExp(`log in with it at http://127\\.0\\.0\\.1:${p.inventory}/ui/`));
    assert.match(out, /Another token: POST/);
    // Request logs are off by default and no JSON line stands between the banners.
    assert.doesNotMatch(out, /incoming request|request completed|Server listening at/);

    // Data written through each service's API.
    const inv = `http://127.0.0.1:${p.inventory}`;
    const tag = await fetch(`${inv}/api/extras/tags/`, { method: 'POST', headers: { authorization: `Token ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'kept', slug: 'kept' }) });
    assert.equal(tag.status, 201, await tag.clone().text());
    const app = await fetch(`http://127.0.0.1:${p.memory}/apps`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'kept-app' }) });
    assert.equal(app.status, 200, await app.clone().text());

    process.kill(first.proc.pid!, 'SIGTERM');
    const t0 = Date.now();
    const ended = await first.exited;
    assert.deepEqual(ended, { code: 0, signal: null }, first.output());
    assert.ok(Date.now() - t0 < 10_000, `stopping took ${Date.now() - t0} ms`);
    await allReleased(dataDir, p);
    assert.match(first.output(), /received SIGTERM: stopping memory, workflow, inventory/);

    // Started again on the same data: no new token, the old one and the data are still there.
    const second = startAll(dataDir, p);
    const out2 = await second.waitForOutput(BANNER_DONE);
    assert.doesNotMatch(out2, /superuser "admin" created/);
    const tags = await fetch(`${inv}/api/extras/tags/?slug=kept`, { headers: { authorization: `Token ${token}` } });
    assert.equal(((await tags.json()) as { count: number }).count, 1);
    const got = await fetch(`http://127.0.0.1:${p.memory}/apps/name/kept-app`);
    assert.equal(got.status, 200, await got.clone().text());

    process.kill(second.proc.pid!, 'SIGINT');
    assert.deepEqual(await second.exited, { code: 0, signal: null }, second.output());
    await allReleased(dataDir, p);
  });

  test('SIGKILL of the supervisor: every service notices and shuts down, no port stays taken', async () => {
    const dataDir = tempDir();
    const p = await ports();
    const s = startAll(dataDir, p);
    await s.waitForOutput(BANNER_DONE);
    const sup = supervisorPid(s.proc.pid!);
    process.kill(sup, 'SIGKILL');
    // npm reports its child's death; the services close their channel's end and stop by themselves.
    await s.exited;
    await waitFor('the services to stop after their supervisor was killed', () => processesWith(dataDir).length === 0, 20_000);
    await allReleased(dataDir, p);
  });

  test('a service that crashes is reported and restarted; the others keep serving', async () => {
    const dataDir = tempDir();
    const p = await ports();
    const s = npmStart(['--data-dir', dataDir, '--memory-port', String(p.memory), '--inventory-port', String(p.inventory), '--only', 'memory,inventory']);
    running.push(s);
    await s.waitForOutput(BANNER_DONE);
    const pid = servicePid(dataDir, 'memory');
    assert.ok(pid, 'memory process not found');
    process.kill(pid, 'SIGKILL');
    await s.waitForOutput(/memory stopped unexpectedly \(killed by SIGKILL\); restarting in 1 s/);
    await s.waitForOutput(new RegExp(`memory is back at http://127\\.0\\.0\\.1:${p.memory}`));
    const h = await fetch(`http://127.0.0.1:${p.memory}/health`);
    assert.equal(h.status, 200);
    assert.notEqual(servicePid(dataDir, 'memory'), pid);
    assert.equal((await fetch(`http://127.0.0.1:${p.inventory}/health`)).status, 200);
    process.kill(s.proc.pid!, 'SIGTERM');
    assert.deepEqual(await s.exited, { code: 0, signal: null }, s.output());
    await allReleased(dataDir, { memory: p.memory, inventory: p.inventory });
  });

  test('a taken port fails the start at once, naming the port and the flag that changes it', async () => {
    const dataDir = tempDir();
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const s = npmStart(['--data-dir', dataDir, '--inventory-port', String(port), '--memory-port', String(await freePort()), '--only', 'memory,inventory']);
      running.push(s);
      const ended = await s.exited;
      assert.equal(ended.code, 1, s.output());
      assert.match(s.output(), new RegExp(`inventory: port ${port} on 127\\.0\\.0\\.1 is already in use.*--inventory-port <port>`));
      assert.deepEqual(processesWith(dataDir), []);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  test('npm run memory: SIGTERM to the npm pid stops the service gracefully (exit 0, port free)', async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const proc = spawn('npm', ['run', '--silent', 'memory', '--', '--port', String(port), '--data-dir', dataDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DATABASE_URL: '' } });
    let out = '';
    proc.stdout!.on('data', (c) => (out += String(c)));
    proc.stderr!.on('data', (c) => (out += String(c)));
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    await waitFor('memory to listen', () => /memory listening on/.test(out), 120_000);
    process.kill(proc.pid!, 'SIGTERM');
    assert.equal(await exited, 0, out);
    assert.match(out, /received SIGTERM, shutting down/);
    assert.ok(portFree(port));
    assert.deepEqual(processesWith(dataDir), []);
  });

  test('SIGKILL of the npm pid under npm start: the kernel tells the supervisor, which stops every service', async () => {
    const dataDir = tempDir();
    const p = { memory: await freePort(), inventory: await freePort() };
    const s = npmStart(['--data-dir', dataDir, '--memory-port', String(p.memory), '--inventory-port', String(p.inventory), '--only', 'memory,inventory']);
    running.push(s);
    await s.waitForOutput(BANNER_DONE);
    assert.ok(supervisorPid(s.proc.pid!));
    process.kill(s.proc.pid!, 'SIGKILL');
    await s.exited;
    await waitFor('the supervisor and the services to stop after npm was killed', () => processesWith(dataDir).length === 0, 20_000);
    await allReleased(dataDir, p);
    // It stopped as on SIGTERM (graceful), not because its output pipe broke.
    assert.match(s.output(), /received SIGTERM: stopping memory, inventory/);
  });

  test('npm run memory: SIGKILL of the npm pid stops the service too (parent-death signal, graceful)', async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const proc = spawn('npm', ['run', '--silent', 'memory', '--', '--port', String(port), '--data-dir', dataDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DATABASE_URL: '' } });
    let out = '';
    proc.stdout!.on('data', (c) => (out += String(c)));
    proc.stderr!.on('data', (c) => (out += String(c)));
    const exited = new Promise((r) => proc.once('exit', r));
    await waitFor('memory to listen', () => /memory listening on/.test(out), 120_000);
    // npm's child: the shell execs setpriv, which execs node (one pid).
    const service = processesWith(dataDir).filter((pid) => pid !== proc.pid);
    assert.equal(service.length, 1);
    assert.match(fs.readFileSync(`/proc/${service[0]}/cmdline`, 'utf8'), /^node\0scripts\/run-service\.mjs\0memory\0/);
    process.kill(proc.pid!, 'SIGKILL');
    await exited;
    await waitFor('the service to stop after npm was killed', () => processesWith(dataDir).length === 0, 20_000);
    assert.ok(portFree(port));
    assert.match(out, /received SIGTERM, shutting down/);
  });

  test('tie-to-parent: a process whose starter died before the signal was armed does not start', async () => {
    const dataDir = tempDir();
    const port = await freePort();
    // SVC_PARENT_PID names a parent that is not this process's: as if npm had died between fork and prctl.
    const proc = spawn(process.execPath, ['scripts/run-service.mjs', 'memory', '--port', String(port), '--data-dir', dataDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DATABASE_URL: '', SVC_PARENT_PID: '1' } });
    let out = '';
    proc.stderr!.on('data', (c) => (out += String(c)));
    const code = await new Promise((r) => proc.once('exit', r));
    assert.equal(code, 1);
    assert.match(out, /has already exited; not starting/);
    assert.ok(portFree(port));
  });

  test('an unknown flag is refused with the usage', async () => {
    const s = npmStart(['--no-such-flag']);
    running.push(s);
    assert.equal((await s.exited).code, 2);
    assert.match(s.output(), /unknown flag --no-such-flag[\s\S]*usage: npm start/);
  });
});
