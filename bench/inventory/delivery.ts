/**
 * Webhook delivery benchmark (SQLite, local receiver).
 *
 *   node --import tsx bench/inventory/delivery.ts [--deliveries 20000] [--rate 500] [--seconds 10]
 *
 * 1. Plain client: posts the same bodies to the same receiver with a keep-alive
 *    pool (the ceiling for this machine and receiver). The receiver runs in a
 *    process of its own (--receiver in-process: on this process's main thread),
 *    so neither side's numbers include its work.
 * 2. Delivery throughput: a backlog of committed deliveries drained by the
 *    in-process worker (claim in batches, render, sign, send, record each
 *    attempt), reported as deliveries/s and as a ratio to (1).
 * 3. Latency: device changes through the REST API at a fixed rate; time from
 *    the API response to the webhook's arrival at the receiver.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../services/inventory/src/app.ts';
import type { ObjectEvent } from '../../services/inventory/src/changes/types.ts';
import type { InventoryDeps } from '../../services/inventory/src/deps.ts';
import { enqueueObjectEvents } from '../../services/inventory/src/events/index.ts';
import { ensureWorker } from '../../services/inventory/src/events/registry.ts';
import { pythonJsonDumps } from '../../services/inventory/src/events/python-json.ts';
import { dropPgSchema } from '@svc/storage';

const { values } = parseArgs({
  options: {
    deliveries: { type: 'string', default: '20000' },
    rate: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '10' },
    // Changes per API request in the latency run (bulk PATCH on the list endpoint); 1 = one PATCH per change.
    batch: { type: 'string', default: '10' },
    // PostgreSQL instead of SQLite (a schema of its own, dropped afterwards).
    'database-url': { type: 'string' },
    // Skip the latency run (3.).
    'no-latency': { type: 'boolean', default: false },
    // Alternate the baseline and the drain this many times (each with deliveries/pairs requests) and report the
    // median of the pairs' ratios: on a shared machine whose load swings within seconds, the two halves of one
    // ratio are then measured close together instead of one after the other over the whole run.
    pairs: { type: 'string', default: '1' },
    // Where the receiver runs: a process of its own (default), or this process's main thread, which the plain client
    // and the service under test then share with it (its parsing and garbage land on the measured side's thread and heap).
    receiver: { type: 'string', default: 'process' },
    // Deliveries drained untimed before each timed drain (see drain()), and requests the plain client sends untimed first.
    warmup: { type: 'string', default: '10000' },
  },
});
const DATABASE_URL = values['database-url'];
const BATCH = Number(values.batch);
const N = Number(values.deliveries);
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const WARMUP = Number(values.warmup);
const TOKEN = 'bench-admin-token-0123456789abcdef';

/**
 * CPU seconds of this process, and of its main thread alone (Linux: /proc; elsewhere NaN). The
 * machine is shared, so besides wall-clock rates the bench reports work per CPU-second, which
 * another process's load disturbs far less.
 */
function cpuNow(): { process: number; main: number } {
  const u = process.cpuUsage();
  let main = NaN;
  try {
    const f = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    main = (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks of 10 ms
  } catch {
    /* not Linux */
  }
  return { process: (u.user + u.system) / 1e6, main };
}
/** CPU seconds per thread of this process (Linux /proc: tid → [name, seconds]); empty elsewhere. */
function threadCpu(): Map<string, [string, number]> {
  const out = new Map<string, [string, number]>();
  try {
    for (const tid of fs.readdirSync('/proc/self/task')) {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      out.set(tid, [name, (Number(f[11]) + Number(f[12])) / 100]);
    }
  } catch {
    /* not Linux */
  }
  return out;
}
/** The threads that used CPU since `before`, busiest first: "name µs-per-item, …". */
function threadReport(before: Map<string, [string, number]>, count: number): string {
  const rows: Array<[string, number]> = [];
  for (const [tid, [name, s]] of threadCpu()) {
    const d = s - (before.get(tid)?.[1] ?? 0);
    if (d > 0) rows.push([`${name}#${tid === String(process.pid) ? 'main' : tid}`, d]);
  }
  return rows.sort((a, b) => b[1] - a[1]).map(([n, d]) => `${n} ${((d / count) * 1e6).toFixed(0)} µs`).join(', ');
}
/** CPU seconds of a process by pid (Linux /proc; NaN elsewhere or when it is gone). */
function pidCpu(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}
/** Local ports of this process's TCP connections to port 5432 (Linux /proc), to tell its PostgreSQL backends apart. */
function pgClientPorts(): Set<string> {
  const inodes = new Set<string>();
  const ports = new Set<string>();
  try {
    for (const fd of fs.readdirSync('/proc/self/fd')) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/self/fd/${fd}`));
        if (m) inodes.add(m[1]!);
      } catch {
        /* closed meanwhile */
      }
    }
    for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
      for (const line of fs.readFileSync(file, 'utf8').split('\n').slice(1)) {
        const f = line.trim().split(/\s+/);
        if (f.length < 10 || !inodes.has(f[9]!)) continue;
        if (f[2]!.split(':')[1] === '1538') ports.add(String(parseInt(f[1]!.split(':')[1]!, 16)));
      }
    }
  } catch {
    /* not Linux */
  }
  return ports;
}
/**
 * CPU seconds of the other processes a run loads: the receiver, and on PostgreSQL the server's backends of this
 * process's connections ("ours") and every other `postgres` process (background writers, autovacuum — and other
 * sessions' queries on this shared machine, so that figure is an upper bound).
 */
let receiverPid = 0;
interface Others { receiver: number; pgOurs: number; pgOther: number }
function othersCpu(): Others {
  let pgOurs = 0;
  let pgOther = 0;
  if (DATABASE_URL) {
    const ports = pgClientPorts();
    try {
      for (const pid of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(pid)) continue;
        try {
          if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
          const port = /\((\d+)\)/.exec(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8'))?.[1];
          if (port !== undefined && ports.has(port)) pgOurs += pidCpu(Number(pid));
          else pgOther += pidCpu(Number(pid));
        } catch {
          /* gone */
        }
      }
    } catch {
      pgOurs = pgOther = NaN;
    }
  }
  return { receiver: receiverPid ? pidCpu(receiverPid) : NaN, pgOurs, pgOther };
}
/** Per item since `before`. A backend that connected meanwhile counts from its start (its CPU before that is 0). */
function othersReport(before: Others, count: number): string {
  const after = othersCpu();
  const us = (a: number, b: number) => (((a - b) / count) * 1e6).toFixed(0);
  return `receiver process ${us(after.receiver, before.receiver)} µs` + (DATABASE_URL ? `, postgres backends of this process ${us(after.pgOurs, before.pgOurs)} µs, other postgres processes ${us(after.pgOther, before.pgOther)} µs` : '');
}
function perCpu(count: number, before: { process: number; main: number }): { process: number; main: number } {
  const after = cpuNow();
  return { process: count / (after.process - before.process), main: count / (after.main - before.main) };
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

/** Milliseconds on a clock this process and the receiver process share. */
const now = () => performance.timeOrigin + performance.now();

// The receiver: counts requests, remembers arrival time per request_id.
const arrivals = new Map<string, number[]>();
const arrived = (id: string, t: number) => {
  const list = arrivals.get(id) ?? [];
  list.push(t);
  arrivals.set(id, list);
};
let receivedCount: () => Promise<number>;
let closeReceiver: () => void;
let rxPort: number;
if (values.receiver === 'in-process') {
  let received = 0;
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received++;
      if (req.url === '/latency') arrived(JSON.parse(Buffer.concat(chunks).toString()).request_id, now());
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  receiver.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  rxPort = (receiver.address() as AddressInfo).port;
  receivedCount = async () => received;
  closeReceiver = () => {
    receiver.closeAllConnections();
    receiver.close();
  };
} else if (values.receiver === 'process') {
  const child = fork(new URL('./delivery-receiver.ts', import.meta.url), { execArgv: ['--import', 'tsx'] });
  receiverPid = child.pid ?? 0;
  let asked = 0;
  const waiting = new Map<number, (n: number) => void>();
  rxPort = await new Promise<number>((resolve, reject) => {
    child.on('message', (m: { port?: number; arrivals?: Array<[string, number]>; count?: number; received?: number }) => {
      if (m.port) resolve(m.port);
      if (m.arrivals) for (const [id, t] of m.arrivals) arrived(id, t);
      if (m.count !== undefined) {
        waiting.get(m.count)?.(m.received!);
        waiting.delete(m.count);
      }
    });
    child.once('exit', () => reject(new Error('the receiver process exited')));
  });
  receivedCount = () => new Promise((resolve) => {
    const n = ++asked;
    waiting.set(n, resolve);
    child.send({ count: n });
  });
  closeReceiver = () => void child.send({ close: true });
} else throw new Error(`--receiver is process or in-process, not ${values.receiver}`);

function deviceEvent(i: number): ObjectEvent {
  return {
    event: 'updated',
    objectType: 'dcim.device',
    model: 'device',
    objectId: i,
    data: {
      id: i, url: `/api/dcim/devices/${i}/`, display: `device-${i}`, name: `device-${i}`,
      site: { id: 1, url: '/api/dcim/sites/1/', display: 'AMS1', name: 'AMS1', slug: 'ams1' },
      status: { value: 'active', label: 'Active' }, serial: `SN${i}`, description: 'bench', comments: '', tags: [], custom_fields: {},
      created: '2026-11-21T08:00:00Z', last_updated: '2026-11-21T08:00:00Z',
    },
    snapshots: { prechange: { name: `device-${i}`, status: 'planned' }, postchange: { name: `device-${i}`, status: 'active' } },
    username: 'admin',
    requestId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    timestamp: '2026-11-21T08:00:00.123456+00:00',
  };
}

// 1. Plain HTTP client baseline.
let plainCpu = { process: NaN, main: NaN };
/** CPU per request of each thread in the last plain run. */
let plainThreads = '';
async function plainClient(count: number, concurrency: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  // The same default body a delivery of deviceEvent(1) sends.
  const e = deviceEvent(1);
  const body = Buffer.from(pythonJsonDumps({ event: e.event, timestamp: e.timestamp, model: e.model, username: e.username, request_id: e.requestId, data: e.data, snapshots: e.snapshots }));
  let next = 0;
  const o0 = othersCpu();
  const t0cpu = threadCpu();
  const c0 = cpuNow();
  const t0 = performance.now();
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: rxPort, path: '/plain', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < count) await one();
    }),
  );
  const rate = count / ((performance.now() - t0) / 1000);
  plainCpu = perCpu(count, c0);
  plainThreads = `${threadReport(t0cpu, count)}; ${othersReport(o0, count)}`;
  agent.destroy();
  return rate;
}

async function withApp<T>(runWorkers: boolean, fn: (app: Awaited<ReturnType<typeof buildApp>>, deps: InventoryDeps, url: string) => Promise<T>): Promise<T> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'inv-bench-'));
  const pgSchema = `bench_delivery_${process.pid}_${runWorkers ? 'w' : 'n'}`;
  const app = await buildApp({ port: 0, host: '127.0.0.1', dataDir, databaseUrl: DATABASE_URL, pgSchema, logLevel: 'silent', runWorkers, flags: { adminToken: TOKEN } });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    return await fn(app, app.inventoryDeps, url);
  } finally {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    if (DATABASE_URL) {
      await dropPgSchema(DATABASE_URL, pgSchema);
      await dropPgSchema(DATABASE_URL, `${pgSchema}_worker`);
    }
  }
}

const apiAgent = new http.Agent({ keepAlive: true, maxSockets: 32 });
function api(url: string, method: string, p: string, body?: unknown): Promise<{ status: number; body: any; requestId: string }> {
  const u = new URL(url + p);
  const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: u.port, path: u.pathname + u.search, method, agent: apiAgent, headers: { authorization: `Token ${TOKEN}`, 'content-type': 'application/json', ...(data ? { 'content-length': data.length } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if ((res.statusCode ?? 500) >= 300) return reject(new Error(`${method} ${p}: ${res.statusCode} ${text.slice(0, 200)}`));
          resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined, requestId: String(res.headers['x-request-id']) });
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

async function hook(url: string, rxPath: string) {
  const w = await api(url, 'POST', '/api/extras/webhooks/', { name: `bench${rxPath.replace('/', '-')}`, payload_url: `http://127.0.0.1:${rxPort}${rxPath}`, secret: 'bench-secret' });
  await api(url, 'POST', '/api/extras/event-rules/', {
    name: `bench${rxPath.replace('/', '-')}`, object_types: ['dcim.device'], event_types: ['object_created', 'object_updated'],
    action_object_type: 'extras.webhook', action_object_id: w.body.id,
  });
}

console.log(`machine: ${os.cpus().length} CPUs, node ${process.version}; ${DATABASE_URL ? 'PostgreSQL' : 'SQLite (synchronous=FULL)'}; receiver ${values.receiver === 'process' ? 'in a process of its own' : 'in this process'}; load average ${os.loadavg()[0]!.toFixed(1)} at start`);
// Warm-up of the same length as the service's (--warmup): both sides measured with their code compiled.
await plainClient(WARMUP, 64);

// 2. Delivery throughput: commit a backlog with workers stopped, then drain it.
const drain = (N: number) => withApp(false, async (_app, deps, url) => {
  await hook(url, '/throughput');
  const commit = async (from: number, count: number) => {
    for (let i = 0; i < count; i += 1000) {
      const events = Array.from({ length: Math.min(1000, count - i) }, (_, k) => deviceEvent(from + i + k));
      await deps.storage.db.transaction().execute((trx) => enqueueObjectEvents(trx, deps, events));
    }
  };
  // The worker and its threads are started before timing, as a service with workers starts them at boot.
  const worker = ensureWorker(deps);
  await worker.warm();
  // and the render threads booted (a compile answered): their module loading is start-up work, not delivery work
  await worker.engine.check('{{ 1 }}', 'other');
  // A running service's code is compiled and its connections open: a warm-up backlog is drained first, untimed, as the
  // plain client has its warm-up run (without it the timed drain pays for the JIT of a fresh send thread and new sockets).
  await commit(N + 1, WARMUP);
  await worker.drain();
  await commit(1, N);
  const start = await receivedCount();
  const o0 = othersCpu();
  const t0cpu = threadCpu();
  const c0 = cpuNow();
  const t0 = performance.now();
  await deps.queue.start();
  while ((await receivedCount()) - start < N) await new Promise((r) => setTimeout(r, 5));
  const secs = (performance.now() - t0) / 1000;
  // Wait until every outcome is recorded too.
  for (;;) {
    const r = await deps.storage.db.selectFrom('events_delivery').select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'successful').executeTakeFirst();
    if (Number(r?.n) >= N + WARMUP) break;
    await new Promise((res) => setTimeout(res, 20));
  }
  const recorded = (performance.now() - t0) / 1000;
  const cpu = perCpu(N, c0);
  const threads = `${threadReport(t0cpu, N)}; ${othersReport(o0, N)}`;
  console.log(
    `webhook deliveries:       ${(N / secs).toFixed(0)} deliveries/s (${N} in ${secs.toFixed(2)} s; all outcomes recorded after ${recorded.toFixed(2)} s); ` +
      `per CPU-second: ${cpu.process.toFixed(0)} (process), ${cpu.main.toFixed(0)} (main thread)`,
  );
  if (threads) console.log(`  CPU per delivery by thread: ${threads}`);
  return { rate: N / recorded, cpu };
});

const PAIRS = Math.max(1, Number(values.pairs));
if (PAIRS > 1) {
  const chunk = Math.ceil(N / PAIRS);
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  for (let i = 0; i < PAIRS; i++) {
    const plain = await plainClient(chunk, 64);
    const pc = plainCpu;
    console.log(`pair ${i + 1}: plain HTTP client ${plain.toFixed(0)} requests/s (load average ${os.loadavg()[0]!.toFixed(1)})`);
    const d = await drain(chunk);
    ratios.push(d.rate / plain);
    cpuRatios.push(d.cpu.process / pc.process);
    console.log(`pair ${i + 1}: delivery/plain ratio ${(d.rate / plain).toFixed(2)}, per CPU-second ${(d.cpu.process / pc.process).toFixed(2)}`);
  }
  const med = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`delivery/plain ratio:     median ${med(ratios).toFixed(2)} of ${PAIRS} pairs [${ratios.map((r) => r.toFixed(2)).join(', ')}] (load average ${os.loadavg()[0]!.toFixed(1)})`);
  console.log(`per CPU-second ratio:     median ${med(cpuRatios).toFixed(2)} (process CPU) [${cpuRatios.map((r) => r.toFixed(2)).join(', ')}]`);
  apiAgent.destroy();
  closeReceiver();
  process.exit(0);
}

const plainRate = await plainClient(N, 64);
console.log(`plain HTTP client:        ${plainRate.toFixed(0)} requests/s (${N} POSTs, 64 concurrent, keep-alive); per CPU-second: ${plainCpu.process.toFixed(0)} (process), ${plainCpu.main.toFixed(0)} (main thread)`);
if (plainThreads) console.log(`  CPU per request by thread: ${plainThreads}`);
const deliveryRate = await drain(N);
console.log(`delivery/plain ratio:     ${(deliveryRate.rate / plainRate).toFixed(2)} (using the time until every attempt was recorded; load average ${os.loadavg()[0]!.toFixed(1)})`);
console.log(
  `per CPU-second ratio:     ${(deliveryRate.cpu.process / plainCpu.process).toFixed(2)} (process CPU), ${(deliveryRate.cpu.main / plainCpu.main).toFixed(2)} (main thread CPU)`,
);

// 3. Latency at a fixed change rate through the REST API.
if (!values['no-latency']) await withApp(true, async (_app, _deps, url) => {
  await hook(url, '/latency');
  const site = (await api(url, 'POST', '/api/dcim/sites/', { name: 'S', slug: 's' })).body;
  const mfr = (await api(url, 'POST', '/api/dcim/manufacturers/', { name: 'M', slug: 'm' })).body;
  const type = (await api(url, 'POST', '/api/dcim/device-types/', { manufacturer: mfr.id, model: 'T', slug: 't' })).body;
  const role = (await api(url, 'POST', '/api/dcim/device-roles/', { name: 'R', slug: 'r' })).body;
  const devices: number[] = [];
  for (let i = 0; i < 50; i++) devices.push((await api(url, 'POST', '/api/dcim/devices/', { name: `d${i}`, site: site.id, device_type: type.id, role: role.id })).body.id);
  await new Promise((r) => setTimeout(r, 500));
  arrivals.clear();
  const responses = new Map<string, number>();
  const requests = Math.round((RATE * SECONDS) / BATCH);
  const interval = (1000 * BATCH) / RATE;
  const t0 = performance.now();
  const inflight: Promise<void>[] = [];
  let apiErrors = 0;
  for (let i = 0; i < requests; i++) {
    const due = t0 + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const req =
      BATCH === 1
        ? api(url, 'PATCH', `/api/dcim/devices/${devices[i % devices.length]}/`, { description: `change ${i}` })
        : api(url, 'PATCH', '/api/dcim/devices/', Array.from({ length: BATCH }, (_, k) => ({ id: devices[(i * BATCH + k) % devices.length], description: `change ${i}.${k}` })));
    inflight.push(
      req.then(
        (r) => void responses.set(r.requestId, now()),
        (err) => {
          if (apiErrors++ < 3) console.error(String(err).slice(0, 300));
        },
      ),
    );
  }
  await Promise.all(inflight);
  const elapsed = (performance.now() - t0) / 1000;
  const expected = responses.size * BATCH;
  const end = performance.now() + 10_000;
  const delivered = () => [...responses.keys()].reduce((n, id) => n + (arrivals.get(id)?.length ?? 0), 0);
  while (delivered() < expected && performance.now() < end) await new Promise((r) => setTimeout(r, 20));
  const lat: number[] = [];
  for (const [id, t] of responses) for (const a of arrivals.get(id) ?? []) lat.push(a - t);
  console.log(
    `latency @ ${RATE} changes/s (${BATCH} per request): achieved ${((responses.size * BATCH) / elapsed).toFixed(0)} changes/s, ${expected} changes, ${lat.length} delivered, ${apiErrors} API errors; ` +
      `API response → receiver arrival p50 ${pct(lat, 50).toFixed(1)} ms, p95 ${pct(lat, 95).toFixed(1)} ms, p99 ${pct(lat, 99).toFixed(1)} ms, max ${Math.max(...lat).toFixed(1)} ms`,
  );
});

apiAgent.destroy();
closeReceiver();
