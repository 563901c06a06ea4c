/**
 * Cost of the hosted runtime's authentication, measured against the local
 * runtime in the same run.
 *
 * 1. Authenticated GET /api/jobs (a page of 20 of 50 finished prompts) with
 *    a JWT access token and with an API key, as a ratio to the same route on
 *    the local runtime (no authentication). Both servers run in child
 *    processes on SQLite (or PostgreSQL with DATABASE_URL); rounds alternate
 *    local / JWT / API key and the medians are compared. Goal ≤ 1.15.
 * 2. Login (argon2id, 19 MiB, t=2): latency of sequential logins (goal
 *    ≤ 250 ms), then a burst of concurrent logins: answered within bounded
 *    time (200 or 503 + Retry-After once the hashing queue is full) while
 *    GET /api/jobs keeps answering.
 *
 *   npx tsx bench/workflow-cloud/auth.ts [--duration 5] [--connections 8] [--rounds 3] [--burst 64]
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: { serve: { type: 'string' }, dir: { type: 'string' }, duration: { type: 'string', default: '5' }, connections: { type: 'string', default: '8' }, rounds: { type: 'string', default: '3' }, burst: { type: 'string', default: '64' } },
  strict: false,
});

async function serve(runtime: string, dir: string) {
  process.env.LOG_REQUESTS = '0';
  const { buildApp } = await import('../../services/workflow/src/app.ts');
  const flags: Record<string, string> = { runtime };
  if (runtime === 'cloud') flags.authRateLimits = 'login=1000000,login_account=1000000,signup=1000000,token=1000000,register=1000000';
  const app = await buildApp({ port: 0, host: '127.0.0.1', dataDir: dir, databaseUrl: process.env.DATABASE_URL, pgSchema: `bench_wfc_${runtime}_${process.pid}`, logLevel: 'warn', runWorkers: true, flags });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
  process.on('message', (m) => {
    if (m === 'cpu') {
      const u = process.cpuUsage();
      process.send!({ cpu: u.user + u.system });
    }
  });
  process.send!({ address });
}

/** CPU time (µs) the server process has used so far. */
function cpuOf(t: Target): Promise<number> {
  return new Promise((resolve) => {
    const on = (m: any) => {
      if (m && typeof m.cpu === 'number') {
        t.child.off('message', on);
        resolve(m.cpu);
      }
    };
    t.child.on('message', on);
    t.child.send('cpu');
  });
}

interface Target {
  address: string;
  child: ChildProcess;
}

function start(runtime: string, dir: string): Promise<Target> {
  return new Promise((resolve, reject) => {
    const child = fork(import.meta.filename, ['--serve', runtime, '--dir', dir], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
    child.once('message', (m: any) => resolve({ address: m.address, child }));
    child.once('exit', (code) => reject(new Error(`${runtime} server exited with ${code}`)));
  });
}

async function json(url: string, init: RequestInit = {}): Promise<any> {
  const r = await fetch(url, { ...init, headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string>) } });
  const text = await r.text();
  if (!r.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${r.status} ${text.slice(0, 200)}`);
  return text ? JSON.parse(text) : undefined;
}

/** 50 finished prompts, so /api/jobs reads a real page. */
async function seedJobs(t: Target, headers: Record<string, string>): Promise<void> {
  const ids: string[] = [];
  for (let i = 0; i < 50; i++) {
    const r = await json(`${t.address}/api/prompt`, { method: 'POST', headers, body: JSON.stringify({ prompt: { 1: { class_type: 'PrimitiveString', inputs: { value: `bench ${i}` } }, 2: { class_type: 'PreviewAny', inputs: { source: ['1', 0] } } } }) });
    ids.push(r.prompt_id);
  }
  for (const id of ids) {
    for (;;) {
      const j = await json(`${t.address}/api/jobs/${id}`, { headers });
      if (['completed', 'failed', 'cancelled'].includes(j.status)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Requests per second, and requests per CPU-second of the server (much less sensitive to a noisy machine). */
async function load(t: Target, path: string, headers: Record<string, string>): Promise<{ rps: number; perCpu: number }> {
  const specifier = 'autocannon'; // untyped package
  const autocannon = (await import(specifier)).default;
  const cpu0 = await cpuOf(t);
  const r = await autocannon({ url: t.address + path, connections: Number(args.connections), duration: Number(args.duration), headers });
  const cpu = (await cpuOf(t)) - cpu0;
  const bad = r.non2xx + r.errors + r.timeouts;
  if (bad > 0) throw new Error(`${path}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
  return { rps: r.requests.average, perCpu: r.requests.total / (cpu / 1e6) };
}

async function main() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-cloud-bench-'));
  fs.mkdirSync(path.join(root, 'local'));
  fs.mkdirSync(path.join(root, 'cloud'));
  const local = await start('local', path.join(root, 'local'));
  const cloud = await start('cloud', path.join(root, 'cloud'));
  try {
    const email = `bench-${process.pid}@example.test`;
    const password = 'bench password 123';
    const signup = await json(`${cloud.address}/api/auth/signup`, { method: 'POST', body: JSON.stringify({ email, password }) });
    const jwt = { authorization: `Bearer ${signup.access_token}` };
    const key = (await json(`${cloud.address}/api/workspace/api-keys`, { method: 'POST', headers: jwt, body: JSON.stringify({ name: 'bench' }) })).key;
    const apiKey = { 'x-api-key': key };
    await seedJobs(local, {});
    await seedJobs(cloud, jwt);
    const path20 = '/api/jobs?limit=20';
    // Warm-up (JIT, statement caches, the token cache).
    await load(local, path20, {});
    await load(cloud, path20, jwt);
    await load(cloud, path20, apiKey);
    const m = { local: [] as Array<{ rps: number; perCpu: number }>, jwt: [] as Array<{ rps: number; perCpu: number }>, key: [] as Array<{ rps: number; perCpu: number }> };
    // Rotating order, so a noisy neighbour does not always hit the same contender.
    const runs: Array<[keyof typeof m, Target, Record<string, string>]> = [
      ['local', local, {}],
      ['jwt', cloud, jwt],
      ['key', cloud, apiKey],
    ];
    for (let i = 0; i < Number(args.rounds); i++) {
      for (let j = 0; j < runs.length; j++) {
        const [name, base, h] = runs[(i + j) % runs.length]!;
        m[name].push(await load(base, path20, h));
      }
    }
    const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(', ');
    const rps = (k: keyof typeof m) => m[k].map((x) => x.rps);
    const cpu = (k: keyof typeof m) => m[k].map((x) => x.perCpu);
    const l = median(rps('local'));
    const lc = median(cpu('local'));
    console.log(`GET /api/jobs?limit=20 (median of ${args.rounds} rounds, ${args.connections} connections); overhead ratio = local / hosted (goal ≤ 1.15):`);
    console.log(`  local runtime (no auth)  ${l.toFixed(0)} req/s [${fmt(rps('local'))}]   ${lc.toFixed(0)} req per CPU-s [${fmt(cpu('local'))}]`);
    for (const [k, label] of [
      ['jwt', 'hosted, JWT    '],
      ['key', 'hosted, API key'],
    ] as const) {
      console.log(`  ${label}          ${median(rps(k)).toFixed(0)} req/s [${fmt(rps(k))}] ratio ${(l / median(rps(k))).toFixed(3)}   ${median(cpu(k)).toFixed(0)} req per CPU-s [${fmt(cpu(k))}] ratio ${(lc / median(cpu(k))).toFixed(3)}`);
    }

    // Login latency, sequential.
    const lat: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      await json(`${cloud.address}/api/auth/login`, { method: 'POST', body: JSON.stringify({ email, password }) });
      lat.push(performance.now() - t0);
    }
    const sorted = [...lat].sort((a, b) => a - b);
    console.log(`login (argon2id m=19456 KiB t=2 p=1), sequential: median ${median(lat).toFixed(1)} ms, p95 ${sorted[Math.floor(sorted.length * 0.95)]!.toFixed(1)} ms  (goal ≤ 250 ms)`);

    // A burst of concurrent logins, with a /api/jobs probe during it.
    const burst = Number(args.burst);
    const t0 = performance.now();
    const probe = (async () => {
      const t = performance.now();
      await json(`${cloud.address}${path20}`, { headers: jwt });
      return performance.now() - t;
    })();
    const results = await Promise.all(
      Array.from({ length: burst }, async () => {
        const t = performance.now();
        const r = await fetch(`${cloud.address}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
        await r.text();
        return { status: r.status, ms: performance.now() - t };
      }),
    );
    const total = performance.now() - t0;
    const ok = results.filter((r) => r.status === 200);
    const busy = results.filter((r) => r.status === 503);
    console.log(
      `login burst of ${burst}: ${ok.length} × 200 (median ${ok.length ? median(ok.map((r) => r.ms)).toFixed(0) : '-'} ms), ${busy.length} × 503 busy (median ${busy.length ? median(busy.map((r) => r.ms)).toFixed(1) : '-'} ms), other ${burst - ok.length - busy.length}; all answered in ${total.toFixed(0)} ms; GET /api/jobs during the burst ${(await probe).toFixed(1)} ms`,
    );
  } finally {
    for (const t of [local, cloud]) t.child.kill('SIGTERM');
    await Promise.all([local, cloud].map((t) => new Promise((r) => (t.child.exitCode !== null ? r(null) : t.child.once('exit', r)))));
    fs.rmSync(root, { recursive: true, force: true });
  }
}

if (args.serve) await serve(args.serve as string, args.dir as string);
else await main();
