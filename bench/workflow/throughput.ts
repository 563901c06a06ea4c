/**
 * Prompt throughput and latency over HTTP + WebSocket: trivial 10-node
 * prompts (distinct values, so nothing is cached) queued with POST /prompt
 * and awaited on the WebSocket (execution_success, then `executing` with
 * node null). The service runs in a child process as `npm run workflow` runs
 * it (the bundle; BENCH_TSX=1: the sources under tsx), on SQLite (or
 * PostgreSQL with DATABASE_URL). Baseline, same run: a bare Fastify process whose POST
 * route answers and pushes one WebSocket message per request.
 *
 *   npx tsx bench/workflow/throughput.ts [--prompts 2000] [--inflight 8] [--rounds 3]
 *   npx tsx bench/workflow/throughput.ts --main-thread  # also the service with --execution-threads 0 (prompts on the main thread)
 *   npx tsx bench/workflow/throughput.ts --rss 100000   # RSS of the service every tenth of N finished prompts
 *
 * Also reports start-up time to the first 200, /object_info latency and the
 * idle RSS of the service.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const { values: args } = parseArgs({
  options: { rss: { type: 'string' }, serve: { type: 'string' }, dir: { type: 'string' }, prompts: { type: 'string', default: '2000' }, inflight: { type: 'string', default: '8' }, rounds: { type: 'string', default: '3' }, 'main-thread': { type: 'boolean', default: false } },
  strict: false,
});

async function serveService(dir: string) {
  process.env.LOG_REQUESTS = '0';
  const { buildApp } = await import('../../services/workflow/src/app.ts');
  const app = await buildApp({ port: 0, host: '127.0.0.1', dataDir: dir, databaseUrl: process.env.DATABASE_URL, pgSchema: `bench_wf_${process.pid}`, logLevel: 'warn', runWorkers: true, flags: {} });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
  process.send!({ address });
}

async function serveBaseline() {
  const { default: Fastify } = await import('fastify');
  const { default: websocket } = await import('@fastify/websocket');
  const app = Fastify();
  await app.register(websocket);
  const sockets = new Map<string, WebSocket>();
  app.get('/ws', { websocket: true }, (socket, req) => {
    sockets.set((req.query as { clientId: string }).clientId, socket as unknown as WebSocket);
  });
  let n = 0;
  app.post('/prompt', async (req) => {
    const body = req.body as { client_id: string };
    const id = `p${n++}`;
    setImmediate(() => sockets.get(body.client_id)?.send(JSON.stringify({ type: 'executing', data: { node: null, prompt_id: id } })));
    return { prompt_id: id, number: n, node_errors: {} };
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  process.send!({ address });
}

if (args.serve === 'service') await serveService(args.dir as string);
else if (args.serve === 'baseline') await serveBaseline();
else if (args.rss) await rssRun(Number(args.rss));
else await main();

async function rssRun(total: number) {
  await ensureBundle();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-bench-'));
  const s = await start('service', dir);
  const step = Math.max(1, Math.floor(total / 10));
  const samples: string[] = [`0: ${(await rssMiB(s.child.pid!)).toFixed(0)} MiB`];
  let done = 0;
  const t0 = performance.now();
  while (done < total) {
    const n = Math.min(step, total - done);
    await drive(s.url, n, Number(args.inflight));
    done += n;
    samples.push(`${done}: ${(await rssMiB(s.child.pid!)).toFixed(0)} MiB`);
    console.log(samples.at(-1), `(${(done / ((performance.now() - t0) / 1000)).toFixed(0)} prompts/s)`);
  }
  console.log(`RSS over ${total} finished prompts (history bound 10,000): ${samples.join(', ')}`);
  s.child.kill('SIGTERM');
  await new Promise((res) => s.child.once('exit', res));
  fs.rmSync(dir, { recursive: true, force: true });
}

function prompt10(i: number): Record<string, unknown> {
  const p: Record<string, unknown> = { '0': { class_type: 'PrimitiveString', inputs: { value: `v${i}` } } };
  for (let k = 1; k < 9; k++) p[String(k)] = { class_type: 'StringConcatenate', inputs: { string_a: [String(k - 1), 0], string_b: String(k), delimiter: '' } };
  p['9'] = { class_type: 'PreviewAny', inputs: { source: ['8', 0] } };
  return p;
}

/**
 * The service as `npm run workflow` runs it (scripts/run-service.mjs: plain node over the esbuild bundle);
 * BENCH_TSX=1 runs the sources through tsx instead.
 */
function startBundled(dir: string, t0: number, extra: string[] = []): Promise<{ child: ChildProcess; url: string; startMs: number }> {
  const root = path.resolve(import.meta.dirname, '../..');
  const prof = process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.BENCH_PROF] : [];
  const child = spawn(process.execPath, [...prof, path.join(root, 'scripts', 'run-service.mjs'), 'workflow', '--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--log-level', 'warn', ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LOG_REQUESTS: '0', PG_SCHEMA: `bench_wf_${process.pid}` },
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, url: m[1]!, startMs: performance.now() - t0 });
    });
    child.once('exit', (code) => reject(new Error(`service exited (${code})`)));
  });
}

function start(kind: 'service' | 'baseline' | 'main', dir: string): Promise<{ child: ChildProcess; url: string; startMs: number }> {
  const t0 = performance.now();
  // The service with prompts on its main thread, as before execution threads: what the thread hop costs.
  if (kind === 'main') return startBundled(dir, t0, ['--execution-threads', '0']);
  if (kind === 'service' && process.env.BENCH_TSX !== '1') return startBundled(dir, t0);
  const child = fork(import.meta.filename, ['--serve', kind, '--dir', dir], { execArgv: ['--import', 'tsx', ...(process.env.BENCH_PROF && kind === 'service' ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.BENCH_PROF] : [])], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  return new Promise((resolve) => child.once('message', (m: any) => resolve({ child, url: m.address, startMs: performance.now() - t0 })));
}

async function drive(url: string, total: number, inflight: number): Promise<{ perSec: number; latencies: number[] }> {
  const clientId = `bench-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const ws = new WebSocket(url.replace('http', 'ws') + `/ws?clientId=${clientId}`);
  await new Promise((r) => ws.once('open', r));
  const waiting = new Map<string, () => void>();
  const early = new Set<string>();
  ws.on('message', (data, bin) => {
    if (bin) return;
    const m = JSON.parse(String(data));
    if (m.type === 'executing' && m.data.node === null) {
      const f = waiting.get(m.data.prompt_id);
      if (f) f();
      else early.add(m.data.prompt_id);
    }
  });
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  async function worker() {
    while (next < total) {
      const i = next++;
      const t = performance.now();
      const res = await fetch(`${url}/prompt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: prompt10(i + Math.random()), client_id: clientId }) });
      const { prompt_id } = (await res.json()) as { prompt_id: string };
      if (!early.delete(prompt_id)) await new Promise<void>((r) => waiting.set(prompt_id, r));
      waiting.delete(prompt_id);
      latencies.push(performance.now() - t);
    }
  }
  await Promise.all(Array.from({ length: inflight }, worker));
  const perSec = total / ((performance.now() - t0) / 1000);
  ws.terminate();
  return { perSec, latencies };
}

/** CPU seconds (user + system) the process has used, from /proc. */
function cpuSeconds(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

async function rssMiB(pid: number): Promise<number> {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

/** `npm run workflow` as users start it (scripts/run-service.mjs, from the bundle): time to the first 200 and idle RSS. */
async function startupAndRss(): Promise<{ ms: number; rss: number }> {
  const { spawn } = await import('node:child_process');
  const root = path.resolve(import.meta.dirname, '../..');
  // Build once outside the measurement (npm start keeps the bundle fresh).
  const { bundleService } = await import(path.join(root, 'scripts', 'run-service.mjs'));
  await bundleService('workflow');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-start-'));
  const t0 = performance.now();
  const child = spawn(process.execPath, [path.join(root, 'scripts', 'run-service.mjs'), 'workflow', '--port', '0', '--data-dir', dir], { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, LOG_LEVEL: 'warn' } });
  const url = await new Promise<string>((resolve) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
  });
  for (;;) {
    const r = await fetch(`${url}/object_info`).catch(() => null);
    if (r?.status === 200) break;
  }
  const ms = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 1000));
  const rss = await rssMiB(child.pid!);
  child.kill('SIGTERM');
  await new Promise((res) => child.once('exit', res));
  fs.rmSync(dir, { recursive: true, force: true });
  return { ms, rss };
}

async function ensureBundle(): Promise<void> {
  const { bundleService } = await import(path.resolve(import.meta.dirname, '../../scripts/run-service.mjs'));
  await bundleService('workflow');
}

async function main() {
  await ensureBundle();
  const total = Number(args.prompts);
  const inflight = Number(args.inflight);
  const rounds = Number(args.rounds);
  const results: Record<string, { rate: number[]; lat1: number[]; perCpu: number[] }> = { service: { rate: [], lat1: [], perCpu: [] }, baseline: { rate: [], lat1: [], perCpu: [] }, main: { rate: [], lat1: [], perCpu: [] } };
  const kinds = args['main-thread'] ? (['service', 'main', 'baseline'] as const) : (['service', 'baseline'] as const);
  let startup = 0;
  let objectInfo: number[] = [];
  let idleRss = 0;
  for (let r = 0; r < rounds; r++) {
    for (const kind of kinds) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-bench-'));
      const s = await start(kind, dir);
      if (kind === 'service') {
        startup = s.startMs;
        idleRss = await rssMiB(s.child.pid!);
        objectInfo = [];
        for (let i = 0; i < 50; i++) {
          const t = performance.now();
          await (await fetch(`${s.url}/object_info`)).arrayBuffer();
          objectInfo.push(performance.now() - t);
        }
      }
      await drive(s.url, 200, inflight); // warm-up
      const seq = await drive(s.url, Math.min(500, total), 1);
      const cpu0 = cpuSeconds(s.child.pid!);
      const par = await drive(s.url, total, inflight);
      results[kind]!.perCpu.push(total / Math.max(0.001, cpuSeconds(s.child.pid!) - cpu0));
      results[kind]!.rate.push(par.perSec);
      results[kind]!.lat1.push(median(seq.latencies));
      s.child.kill('SIGTERM');
      await new Promise((res) => s.child.once('exit', res));
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  const svc = results.service!;
  const base = results.baseline!;
  console.log(`storage: ${process.env.DATABASE_URL ? 'postgresql' : 'sqlite'}; ${total} prompts of 10 nodes, ${inflight} in flight; medians of ${rounds} rounds`);
  console.log(`service : ${median(svc.rate).toFixed(0)} prompts/s (${median(svc.perCpu).toFixed(0)} per server CPU-second), sequential latency p50 ${median(svc.lat1).toFixed(2)} ms`);
  console.log(`baseline: ${median(base.rate).toFixed(0)} req+msg/s (${median(base.perCpu).toFixed(0)} per server CPU-second), sequential latency p50 ${median(base.lat1).toFixed(2)} ms`);
  console.log(`ratio   : throughput ${(median(svc.rate) / median(base.rate)).toFixed(2)}, latency ${(median(svc.lat1) / median(base.lat1)).toFixed(2)}x`);
  if (args['main-thread']) {
    const m = results.main!;
    console.log(`main thread (--execution-threads 0): ${median(m.rate).toFixed(0)} prompts/s (${median(m.perCpu).toFixed(0)} per server CPU-second), sequential latency p50 ${median(m.lat1).toFixed(2)} ms; threads / main: throughput ${(median(svc.rate) / median(m.rate)).toFixed(2)}, latency ${(median(svc.lat1) / median(m.lat1)).toFixed(2)}x`);
  }
  const starts: Array<{ ms: number; rss: number }> = [];
  for (let i = 0; i < rounds; i++) starts.push(await startupAndRss());
  console.log(`npm run workflow (bundle): start-up to first 200 p50 ${median(starts.map((x) => x.ms)).toFixed(0)} ms; idle RSS ${median(starts.map((x) => x.rss)).toFixed(0)} MiB`);
  console.log(`bench's service child (${process.env.BENCH_TSX === '1' ? 'tsx' : 'bundle'}): start-up ${startup.toFixed(0)} ms, idle RSS ${idleRss.toFixed(0)} MiB; /object_info p50 ${median(objectInfo).toFixed(2)} ms`);
}
