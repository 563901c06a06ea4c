/**
 * The hosted runtime's shared queue across processes (PostgreSQL +
 * graphile-worker): one API process that runs no prompts, and execution
 * workers (`workflow worker`) as separate processes.
 *
 * 1. Throughput: prompts/s with two workers against one, in the same run,
 *    on prompts whose node waits 50 ms asynchronously (TestSleep), queued
 *    by 8 workspaces. Rounds alternate one and two workers; medians are
 *    compared. Goal ≥ 1.9×.
 * 2. Queue-to-start latency at 100 prompts/s (open loop, instant prompts,
 *    two workers, after 3 s of the same load unmeasured): from the prompt's stored create_time (API process) to its
 *    execution_start (worker process), and as the client sees it (POST sent
 *    → execution_start received through the relay). Goal p99 ≤ 50 ms.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/workflow-cloud/scale-out.ts [--prompts 400] [--rounds 3] [--rate 100] [--duration 10] [--sleep 0.05]
 *   (WFSO_PROF=<dir> writes CPU profiles of the API process and the workers there; WFSO_SLOW=<ms> lists when slower starts happened;
 *   WFSO_NODE_ARGS='--trace-gc' passes node flags to the API and worker processes)
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const { values: args } = parseArgs({
  options: {
    serve: { type: 'string' },
    dir: { type: 'string' },
    schema: { type: 'string' },
    prompts: { type: 'string', default: '400' },
    rounds: { type: 'string', default: '3' },
    rate: { type: 'string', default: '100' },
    duration: { type: 'string', default: '10' },
    sleep: { type: 'string', default: '0.05' },
  },
  strict: false,
});

/** WFSO_NODE_ARGS: extra node flags for the API and worker processes (e.g. --trace-gc). */
const nodeArgs = (process.env.WFSO_NODE_ARGS ?? '').split(' ').filter(Boolean);
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ROOT = path.resolve(import.meta.dirname, '..', '..');
const MAIN = path.join(ROOT, 'services', 'workflow', 'src', 'main.ts');
const LIMITS = 'login=1000000,login_account=1000000,signup=1000000,token=1000000,register=1000000';
const COMMON = ['--max-concurrent-jobs', '64', '--enable-test-nodes'];

async function serveApi(dir: string, schema: string) {
  process.env.LOG_REQUESTS = '0';
  const { buildApp } = await import('../../services/workflow/src/app.ts');
  const app = await buildApp({
    port: 0,
    host: '127.0.0.1',
    dataDir: dir,
    databaseUrl: DATABASE_URL,
    pgSchema: schema,
    logLevel: 'warn',
    runWorkers: false,
    flags: { runtime: 'cloud', authRateLimits: LIMITS, maxConcurrentJobs: '64', enableTestNodes: true },
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
  process.send!({ address });
}

function startApi(dir: string, schema: string): Promise<{ child: ChildProcess; address: string }> {
  const child = fork(import.meta.filename, ['--serve', 'api', '--dir', dir, '--schema', schema], { execArgv: [...(process.env.WFSO_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.WFSO_PROF}`] : []), ...nodeArgs, '--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (m: any) => resolve({ child, address: m.address }));
    child.once('exit', (code) => reject(new Error(`API process exited (${code})`)));
  });
}

interface Worker {
  proc: ChildProcess;
  dir: string;
  exited: Promise<void>;
}

async function startWorker(schema: string): Promise<Worker> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wfso-worker-'));
  const proc = spawn(process.execPath, [...(process.env.WFSO_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.WFSO_PROF}`] : []), ...nodeArgs, '--import', 'tsx', MAIN, 'worker', '--data-dir', dir, '--database-url', DATABASE_URL, '--pg-schema', schema, '--log-level', 'warn', ...COMMON], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  let out = '';
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (c: Buffer) => {
      out += String(c);
      if (out.includes('workflow worker started')) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`worker exited (${code}):\n${out}`)));
  });
  return { proc, dir, exited };
}

async function stopWorker(w: Worker): Promise<void> {
  w.proc.kill('SIGTERM');
  await w.exited;
  fs.rmSync(w.dir, { recursive: true, force: true });
}

interface User {
  token: string;
  ws: WebSocket;
  clientId: string;
}

/** Per prompt: when the client saw its execution_start and its end. */
const seen = new Map<string, { start?: number; end?: number; done?: () => void }>();

function listen(ws: WebSocket): void {
  ws.on('message', (data, binary) => {
    if (binary) return;
    const m = JSON.parse(String(data));
    const id = m.data?.prompt_id;
    if (typeof id !== 'string') return;
    let s = seen.get(id);
    if (!s) seen.set(id, (s = {}));
    if (m.type === 'execution_start') s.start ??= performance.now();
    else if (m.type === 'executing' && m.data.node === null) {
      s.end = performance.now();
      s.done?.();
    }
  });
}

function ended(id: string): Promise<void> {
  let s = seen.get(id);
  if (!s) seen.set(id, (s = {}));
  if (s.end !== undefined) return Promise.resolve();
  const entry = s;
  return new Promise((r) => (entry.done = r));
}

async function signup(api: string, i: number): Promise<User> {
  const r = await fetch(`${api}/api/auth/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `bench-${process.pid}-${i}@example.test`, password: 'correct horse battery staple', display_name: `bench ${i}` }) });
  if (r.status !== 201) throw new Error(`signup: ${r.status} ${await r.text()}`);
  const body = (await r.json()) as any;
  const clientId = `bench-${i}`;
  const ws = new WebSocket(`${api.replace(/^http/, 'ws')}/ws?clientId=${clientId}`, { headers: { authorization: `Bearer ${body.access_token}` } });
  await new Promise((res, rej) => (ws.once('open', res), ws.once('error', rej)));
  listen(ws);
  return { token: body.access_token, ws, clientId };
}

// The client shares the machine's two cores with the service: plain keep-alive requests cost it a
// third of what fetch does, leaving that CPU to the processes being measured.
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
function post(api: string, route: string, token: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${api}${route}`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${token}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

let seq = 0;
async function submit(api: string, u: User, prompt: Record<string, unknown>): Promise<string> {
  const r = await post(api, '/api/prompt', u.token, JSON.stringify({ prompt, client_id: u.clientId }));
  if (r.status !== 200) throw new Error(`prompt: ${r.status} ${r.text}`);
  return JSON.parse(r.text).prompt_id;
}

const sleepPrompt = (seconds: number) => ({
  '1': { class_type: 'PrimitiveString', inputs: { value: `s-${process.pid}-${++seq}` } },
  '2': { class_type: 'TestSleep', inputs: { value: ['1', 0], seconds } },
  '3': { class_type: 'PreviewAny', inputs: { source: ['2', 0] } },
});
const instantPrompt = () => ({
  '1': { class_type: 'PrimitiveString', inputs: { value: `i-${process.pid}-${++seq}` } },
  '2': { class_type: 'PreviewAny', inputs: { source: ['1', 0] } },
});

/** Prompts/s from the first POST to the last end seen on the sockets. */
async function throughput(api: string, users: User[], n: number, seconds: number): Promise<number> {
  const t0 = performance.now();
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < n) {
        const i = next++;
        ids.push(await submit(api, users[i % users.length]!, sleepPrompt(seconds)));
      }
    }),
  );
  await Promise.all(ids.map(ended));
  return n / ((performance.now() - t0) / 1000);
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
const median = (xs: number[]) => pct(xs, 50);

/** Where a worker's time goes between prompts: median run (start → end) and gap (an end → that worker's next start). */
async function cycle(schema: string, since: number): Promise<string> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: DATABASE_URL });
  await c.connect();
  try {
    const r = await c.query(`select worker, start_time::float8 as s, end_time::float8 as e from "${schema}".prompts where start_time >= $1 and end_time is not null order by worker, start_time`, [since]);
    const runs: number[] = [];
    const gaps: number[] = [];
    for (let i = 0; i < r.rows.length; i++) {
      const p = r.rows[i];
      runs.push(p.e - p.s);
      const q = r.rows[i + 1];
      if (q && q.worker === p.worker) gaps.push(q.s - p.e);
    }
    return `median run ${median(runs).toFixed(1)} ms, gap ${median(gaps).toFixed(1)} ms`;
  } finally {
    await c.end();
  }
}

interface CpuTimes {
  api: number;
  workers: number;
  postgres: number;
  client: number;
  machine: number;
}

/** CPU seconds (user + system) of the processes involved, from /proc (Linux; undefined elsewhere). PostgreSQL: every process of its user. */
function cpuTimes(api: number, workers: number[]): CpuTimes | undefined {
  const ticks = (pid: number): number => {
    try {
      const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
      // utime, stime (fields 14 and 15; `rest` starts at field 3), and the waited-for children's.
      return Number(rest[11]) + Number(rest[12]) + Number(rest[13]) + Number(rest[14]);
    } catch {
      return 0;
    }
  };
  if (!fs.existsSync('/proc/self/stat')) return undefined;
  let pg = 0;
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (fs.statSync(`/proc/${d}`).uid !== pgUid) continue;
    } catch {
      continue;
    }
    pg += ticks(Number(d));
  }
  const hz = 100;
  const u = process.cpuUsage();
  // The whole machine's busy time (user, nice, system, irq, softirq), to see what the processes above leave out.
  const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const machine = (cpu[0]! + cpu[1]! + cpu[2]! + cpu[5]! + cpu[6]!) / hz;
  return { api: ticks(api) / hz, workers: workers.reduce((a, w) => a + ticks(w), 0) / hz, postgres: pg / hz, client: (u.user + u.system) / 1e6, machine };
}
const pgUid = (() => {
  try {
    return fs.statSync('/var/lib/postgresql').uid;
  } catch {
    return -1;
  }
})();

async function main() {
  const schema = `bench_wfso_${process.pid}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wfso-api-'));
  const { child, address: api } = await startApi(dir, schema);
  const workers: Worker[] = [];
  try {
    const users: User[] = [];
    for (let i = 0; i < 8; i++) users.push(await signup(api, i));
    const n = Number(args.prompts);
    const seconds = Number(args.sleep);
    // Warm-up: schema, JIT, connections.
    workers.push(await startWorker(schema));
    await throughput(api, users, 20, seconds);
    await stopWorker(workers.pop()!);

    const one: number[] = [];
    const two: number[] = [];
    for (let r = 0; r < Number(args.rounds); r++) {
      for (const count of [1, 2]) {
        for (let i = 0; i < count; i++) workers.push(await startWorker(schema));
        // Fresh processes: warm their JIT and connections first, so the round measures steady throughput.
        await throughput(api, users, 10 * count, seconds);
        const since = Date.now();
        const rate = await throughput(api, users, n, seconds);
        (count === 1 ? one : two).push(rate);
        console.log(`round ${r + 1}: ${count} worker(s): ${rate.toFixed(1)} prompts/s (${await cycle(schema, since)})`);
        while (workers.length) await stopWorker(workers.pop()!);
      }
    }
    const ratio = median(two) / median(one);
    if (one.length) console.log(`throughput (${seconds * 1000} ms async sleep per prompt, ${n} prompts, 8 workspaces): 1 worker median ${median(one).toFixed(1)}/s, 2 workers median ${median(two).toFixed(1)}/s, ratio ${ratio.toFixed(2)} (goal ≥ 1.9)`);

    // Open loop at a fixed rate, two workers, instant prompts.
    workers.push(await startWorker(schema), await startWorker(schema));
    const rate = Number(args.rate);
    const sent = new Map<string, number>();
    const owner = new Map<string, User>();
    const openLoop = async (total: number, record: boolean) => {
      const pending: Array<Promise<void>> = [];
      const start = performance.now();
      for (let i = 0; i < total; i++) {
        const due = start + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        const u = users[i % users.length]!;
        const at = performance.now();
        pending.push(
          submit(api, u, instantPrompt()).then(async (id) => {
            if (record) {
              sent.set(id, at);
              owner.set(id, u);
            }
            await ended(id);
          }),
        );
      }
      await Promise.all(pending);
    };
    // Warm-up at the same rate for 3 s, unmeasured: fresh workers' JIT, and connection pools grown
    // to what the rate needs (a new PostgreSQL connection's first statements cost milliseconds).
    await openLoop(rate * 3, false);
    const total = Math.round(rate * Number(args.duration));
    const cpu0 = cpuTimes(child.pid!, workers.map((w) => w.proc.pid!));
    const t0 = performance.now();
    await openLoop(total, true);
    const cpu1 = cpuTimes(child.pid!, workers.map((w) => w.proc.pid!));
    const achieved = total / ((performance.now() - t0) / 1000);
    const clientSide = [...sent].map(([id, at]) => seen.get(id)!.start! - at);
    // Server side: create_time (stored by the API process) → execution_start_time (the worker's engine).
    const serverSide: number[] = [];
    const slow: Array<[number, number]> = [];
    const ids = [...sent.keys()];
    let k = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (k < ids.length) {
          const id = ids[k++]!;
          const u = owner.get(id)!;
          const r = (await (await fetch(`${api}/api/jobs/${id}`, { headers: { authorization: `Bearer ${u.token}` } })).json()) as any;
          if (typeof r.create_time === 'number' && typeof r.execution_start_time === 'number') {
            serverSide.push(r.execution_start_time - r.create_time);
            if (process.env.WFSO_SLOW) slow.push([r.create_time, r.execution_start_time - r.create_time]);
          }
        }
      }),
    );
    console.log(`queue-to-start at ${rate} prompts/s offered (${achieved.toFixed(1)}/s achieved, ${total} prompts, 2 workers): stored → started p50 ${pct(serverSide, 50).toFixed(1)} ms, p99 ${pct(serverSide, 99).toFixed(1)} ms (goal p99 ≤ 50 ms; ${serverSide.length} jobs); client POST → execution_start received p50 ${pct(clientSide, 50).toFixed(1)} ms, p99 ${pct(clientSide, 99).toFixed(1)} ms`);
    if (process.env.WFSO_SLOW) {
      // When the slow starts happened (ms after the first prompt was stored): spread out, or in bursts.
      const first = Math.min(...slow.map((x) => x[0]));
      console.log(`starts over ${process.env.WFSO_SLOW} ms: ${slow.filter((x) => x[1] > Number(process.env.WFSO_SLOW)).sort((a, b) => a[0] - b[0]).map((x) => `${x[0] - first}:${x[1]}`).join(' ')}`);
      console.log(`p90 ${pct(serverSide, 90)} p95 ${pct(serverSide, 95)} p98 ${pct(serverSide, 98)}`);
    }
    if (cpu0 && cpu1) {
      const per = (k: keyof CpuTimes) => (((cpu1[k] - cpu0[k]) * 1000) / total).toFixed(2);
      console.log(`CPU per prompt during the open loop (ms, from /proc): API ${per('api')}, workers ${per('workers')}, PostgreSQL ${per('postgres')}, bench client ${per('client')}; whole machine ${per('machine')}`);
    }
    console.log(`load average: ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  } catch (err) {
    console.error(err);
    process.exitCode = 1;
  } finally {
    while (workers.length) await stopWorker(workers.pop()!);
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
    const { default: pg } = await import('pg');
    const c = new pg.Client({ connectionString: DATABASE_URL });
    await c.connect();
    await c.query(`drop schema if exists "${schema}" cascade`);
    await c.query(`drop schema if exists "${schema}_worker" cascade`);
    await c.end();
    process.exit();
  }
}

if (args.serve === 'api') {
  await serveApi(String(args.dir), String(args.schema));
} else {
  await main();
}
