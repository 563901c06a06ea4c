/**
 * Crash test: N device changes through the REST API while a separate worker
 * process (src/worker-main.ts, started as `npm run inventory:worker` does) is killed with
 * SIGKILL several times and restarted. Asserts every committed change reached
 * the receiver at least once; duplicates are counted by webhook-id.
 *
 *   node --import tsx services/inventory/scripts/crash-test.ts [N=10000] [--kills 5] [--per-request 50] [--duration 0]
 *
 * The worker is killed after it has delivered a share of the changes (not on a timer), so every run kills
 * it --kills times whatever the machine's speed; the time until deliveries resume after each kill is reported.
 *
 * Exit code 0 when nothing was lost.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { AddressInfo } from 'node:net';
import { dropPgSchema } from '@svc/storage';
import { buildApp } from '../src/app.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    kills: { type: 'string', default: '5' },
    'per-request': { type: 'string', default: '50' },
    // Spread the changes over at least this many seconds (so small runs still see the worker die mid-stream).
    duration: { type: 'string', default: '0' },
    'database-url': { type: 'string' },
  },
});
const N = Number(positionals[0] ?? 10_000);
const KILLS = Number(values.kills);
const PER_REQUEST = Number(values['per-request']);
const DURATION_MS = Number(values.duration) * 1000;
const TOKEN = 'crash-test-admin-token-0123456789';
const here = path.dirname(new URL(import.meta.url).pathname);
const serviceDir = path.resolve(here, '..');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'inv-crash-'));
const log = (s: string) => process.stdout.write(`[crash-test] ${s}\n`);

// Receiver: counts deliveries per device name and per webhook-id.
const byName = new Map<string, number>();
const byWebhookId = new Map<string, number>();
let requests = 0;
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    requests++;
    const id = String(req.headers['webhook-id']);
    byWebhookId.set(id, (byWebhookId.get(id) ?? 0) + 1);
    try {
      const name = JSON.parse(Buffer.concat(chunks).toString()).data.name as string;
      byName.set(name, (byName.get(name) ?? 0) + 1);
    } catch {
      /* counted as a request only */
    }
    res.writeHead(200).end('ok');
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const rxPort = (receiver.address() as AddressInfo).port;

// API in this process without workers; deliveries are only made by the worker process.
const app = await buildApp({
  port: 0, host: '127.0.0.1', dataDir, pgSchema: `crash_${process.pid}`, databaseUrl: values['database-url'], logLevel: process.env.CRASH_API_LOG ?? 'silent', runWorkers: false, flags: { adminToken: TOKEN },
});
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
function api(method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> {
  const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const u = new URL(url + p);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: u.port, path: u.pathname, method, agent, headers: { authorization: `Token ${TOKEN}`, 'content-type': 'application/json', ...(data ? { 'content-length': data.length } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const t = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode ?? 0, body: t ? JSON.parse(t) : undefined });
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

const must = async (method: string, p: string, body?: unknown) => {
  const r = await api(method, p, body);
  if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  return r.body;
};
const site = await must('POST', '/api/dcim/sites/', { name: 'Crash', slug: 'crash' });
const mfr = await must('POST', '/api/dcim/manufacturers/', { name: 'Acme', slug: 'acme' });
const type = await must('POST', '/api/dcim/device-types/', { manufacturer: mfr.id, model: 'X', slug: 'x' });
const role = await must('POST', '/api/dcim/device-roles/', { name: 'R', slug: 'r' });
// A short request timeout bounds how long a send to a stalled receiver can hold a claim.
const hook = await must('POST', '/api/extras/webhooks/', { name: 'crash', payload_url: `http://127.0.0.1:${rxPort}/crash`, timeout: 5 });
await must('POST', '/api/extras/event-rules/', { name: 'crash', object_types: ['dcim.device'], event_types: ['object_created'], action_object_type: 'extras.webhook', action_object_id: hook.id });

// The worker process, restarted after each SIGKILL. Started as `npm run inventory:worker` starts it: run-service.mjs
// runs the esbuild bundle of the sources (plain node loads one module; through tsx each start cost twice the CPU).
const RUN_SERVICE = path.resolve(serviceDir, '../../scripts/run-service.mjs');
let worker: ChildProcess | undefined;
let starts = 0;
let workerUpAt = 0;
function startWorker(): ChildProcess {
  starts++;
  const child = spawn(process.execPath, [RUN_SERVICE, 'inventory:worker-main', '--data-dir', dataDir, ...(values['database-url'] ? ['--database-url', values['database-url'], '--pg-schema', `crash_${process.pid}`] : [])], {
    cwd: serviceDir,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LOG_LEVEL: process.env.CRASH_WORKER_LOG ?? 'error', INVENTORY_WEBHOOK_LEASE_MS: process.env.INVENTORY_WEBHOOK_LEASE_MS ?? '3000' },
  });
  child.stdout!.on('data', (c: Buffer) => {
    if (c.toString().includes('worker started')) workerUpAt = performance.now();
    if (process.env.CRASH_WORKER_LOG) process.stdout.write(c);
  });
  child.once('exit', (code, signal) => {
    if (signal !== 'SIGKILL' && signal !== 'SIGTERM' && code !== 0) log(`worker exited unexpectedly (code ${code}, signal ${signal})`);
  });
  return child;
}
const exited = (c: ChildProcess) => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise((res) => c.once('exit', res)));
worker = startWorker();

const t0 = performance.now();
const committed: string[] = [];
const missing = () => committed.filter((n) => !byName.has(n)).length;
let apiFailures = 0;
let killed = 0;
let req = 0;
const producers = Array.from({ length: 4 }, async () => {
  for (;;) {
    const i = req++;
    if (i * PER_REQUEST >= N) return;
    const due = t0 + (i * DURATION_MS) / Math.ceil(N / PER_REQUEST);
    if (due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
    const items = Array.from({ length: Math.min(PER_REQUEST, N - i * PER_REQUEST) }, (_, k) => ({
      name: `dev-${i * PER_REQUEST + k}`, site: site.id, device_type: type.id, role: role.id,
    }));
    const sent = performance.now();
    const r = await api('POST', '/api/dcim/devices/', items);
    if (process.env.CRASH_DEBUG) log(`request ${i}: ${r.status} in ${(performance.now() - sent).toFixed(0)} ms`);
    if (r.status === 201) committed.push(...items.map((x) => x.name));
    else if (apiFailures++ < 3) log(`API request failed: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  }
});
// The killer: SIGKILLs the worker once it has made progress (a random 50–100 % of an even share of the
// deliveries since it came up, so mostly mid-batch), then restarts it. Kills follow deliveries, not the
// clock, so a slow or loaded machine kills as often as a fast one.
let producing = true;
const share = Math.max(5, Math.floor(N / (KILLS + 1) / 2));
const resumeMs: number[] = [];
const killer = (async () => {
  while (killed < KILLS) {
    if (!workerUpAt) {
      await new Promise((r) => setTimeout(r, 20));
      continue;
    }
    const target = requests + Math.ceil(share * (0.5 + Math.random() / 2));
    while (requests < target && !(!producing && missing() === 0)) await new Promise((r) => setTimeout(r, 5));
    if (requests < target) break;
    const w = worker!;
    workerUpAt = 0;
    w.kill('SIGKILL');
    await exited(w);
    killed++;
    const killedAt = performance.now();
    const seen = requests;
    worker = startWorker();
    // How long until deliveries flow again (only measurable while work remains).
    void (async () => {
      while (requests === seen && (producing || missing() > 0)) await new Promise((r) => setTimeout(r, 5));
      if (requests > seen) resumeMs.push(performance.now() - killedAt);
    })();
  }
})();
await Promise.all(producers);
producing = false;
const produced = (performance.now() - t0) / 1000;
log(`${committed.length} changes committed in ${produced.toFixed(1)} s; worker SIGKILLed ${killed} times so far` +
  (apiFailures ? `; ${apiFailures} API requests failed and were rolled back (not counted as changes)` : ''));

const deadline = Date.now() + Number(process.env.CRASH_DEADLINE_MS ?? 180_000);
while (missing() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
await killer;
if (missing() > 0) {
  const db = app.inventoryDeps.storage.db;
  const counts = await db.selectFrom('events_delivery').select(['status', (eb) => eb.fn.countAll().as('n')]).groupBy('status').execute();
  log(`worker pid ${worker?.pid} exitCode ${worker?.exitCode} up ${workerUpAt ? 'yes' : 'no'}`);
  log(`undelivered; delivery states: ${JSON.stringify(counts)}`);
  const claims = await db.selectFrom('events_delivery').select(['claimed_by', 'claim_expires_at', (eb) => eb.fn.countAll().as('n')]).where('status', '=', 'sent').groupBy(['claimed_by', 'claim_expires_at']).execute();
  log(`claims: ${JSON.stringify(claims)} now ${Date.now()}`);
  if (app.inventoryDeps.storage.sqlite) log(`jobs: ${JSON.stringify(app.inventoryDeps.storage.sqlite.prepare('select id, task, job_key, run_at, attempts, locked_by, last_error from jobs').all())}`);
}
const total = (performance.now() - t0) / 1000;
const lost = missing();
const dupIds = [...byWebhookId.values()].filter((c) => c > 1);
const extra = dupIds.reduce((a, c) => a + c - 1, 0);
log(`worker SIGKILLed ${killed} times in total (${starts} starts)`);
if (resumeMs.length) log(`deliveries resumed after a kill in ${resumeMs.map((x) => (x / 1000).toFixed(1)).join(', ')} s (restart included; max ${(Math.max(...resumeMs) / 1000).toFixed(1)} s)`);
log(`delivered ${committed.length - lost}/${committed.length} changes in ${total.toFixed(1)} s, lost ${lost}; receiver requests ${requests}; duplicates: ${dupIds.length} webhook-ids sent more than once (${extra} extra requests)`);

worker?.kill('SIGTERM');
if (worker) await exited(worker);
await app.close();
agent.destroy();
receiver.closeAllConnections();
receiver.close();
fs.rmSync(dataDir, { recursive: true, force: true });
if (values['database-url']) {
  await dropPgSchema(values['database-url'], `crash_${process.pid}`);
  await dropPgSchema(values['database-url'], `crash_${process.pid}_worker`);
}
if (lost > 0 || committed.length === 0) {
  log('FAILED');
  process.exit(1);
}
log('OK');
process.exit(0);
