/**
 * Where the CPU time of a trivial prompt goes, per thread. The service runs
 * from its bundle (as `npm run workflow` runs it). It is driven with 10-node
 * prompts, 8 in flight, and each thread's user+system time is read from
 * /proc/<pid>/task before and after. Execution threads are compared with
 * `--execution-threads 0` (prompts on the main thread), in interleaved
 * rounds, and medians are printed. Linux only.
 *
 *   npx tsx bench/workflow/thread-cpu.ts [--prompts 2000] [--rounds 3]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

type Mode = 'threads' | 'main';

/** CPU milliseconds of each thread of a process, by thread id. */
function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const f = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      out.set(tid, (Number(f[11]) + Number(f[12])) * (1000 / 100));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

function prompt10(i: number): Record<string, unknown> {
  const p: Record<string, unknown> = { '0': { class_type: 'PrimitiveString', inputs: { value: `v${i}` } } };
  for (let k = 1; k < 9; k++) p[String(k)] = { class_type: 'StringConcatenate', inputs: { string_a: [String(k - 1), 0], string_b: String(k), delimiter: '' } };
  p['9'] = { class_type: 'PreviewAny', inputs: { source: ['8', 0] } };
  return p;
}

async function start(mode: Mode, dir: string): Promise<{ child: ChildProcess; url: string }> {
  const entry = path.resolve(import.meta.dirname, '../../scripts/run-service.mjs');
  const extra = mode === 'main' ? ['--execution-threads', '0'] : [];
  const child = spawn(process.execPath, [entry, 'workflow', '--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--log-level', 'warn', ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LOG_REQUESTS: '0' },
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`service exited (${code})`)));
  });
  return { child, url };
}

/** Queues `total` prompts, `inflight` at a time, each awaited on the WebSocket (`executing` with node null). */
async function drive(url: string, total: number, inflight: number): Promise<void> {
  const clientId = `cpu-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const ws = new WebSocket(`${url.replace('http', 'ws')}/ws?clientId=${clientId}`);
  await new Promise((r) => ws.once('open', r));
  const waiting = new Map<string, () => void>();
  const early = new Set<string>();
  ws.on('message', (data, binary) => {
    if (binary) return;
    const m = JSON.parse(String(data));
    if (m.type !== 'executing' || m.data.node !== null) return;
    const done = waiting.get(m.data.prompt_id);
    if (done) done();
    else early.add(m.data.prompt_id);
  });
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const i = next++;
      const body = JSON.stringify({ prompt: prompt10(i + Math.random()), client_id: clientId });
      const res = await fetch(`${url}/prompt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const { prompt_id } = (await res.json()) as { prompt_id: string };
      if (!early.delete(prompt_id)) await new Promise<void>((r) => waiting.set(prompt_id, r));
      waiting.delete(prompt_id);
    }
  };
  await Promise.all(Array.from({ length: inflight }, worker));
  ws.terminate();
}

async function measure(mode: Mode, prompts: number) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-thread-cpu-'));
  const { child, url } = await start(mode, dir);
  try {
    await drive(url, 300, 8); // warm-up
    const before = threadCpu(child.pid!);
    const t0 = performance.now();
    await drive(url, prompts, 8);
    const ms = performance.now() - t0;
    const after = threadCpu(child.pid!);
    const perPrompt = (tid: string) => ((after.get(tid)! - (before.get(tid) ?? 0)) / prompts) * 1000;
    const main = perPrompt(String(child.pid));
    const others = [...after.keys()]
      .filter((t) => t !== String(child.pid))
      .map(perPrompt)
      .sort((a, b) => b - a);
    // The execution thread is the busiest one besides the main thread; V8's and libuv's helpers are the rest.
    const exec = mode === 'threads' ? (others.shift() ?? 0) : 0;
    return { rate: (prompts / ms) * 1000, main, exec, helpers: others.reduce((a, b) => a + b, 0) };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const { values } = parseArgs({ options: { prompts: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '3' } } });
const results: Record<Mode, Array<Awaited<ReturnType<typeof measure>>>> = { threads: [], main: [] };
for (let r = 0; r < Number(values.rounds); r++) for (const mode of ['threads', 'main'] as const) results[mode].push(await measure(mode, Number(values.prompts)));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const mode of ['threads', 'main'] as const) {
  const rs = results[mode];
  const us = (k: 'main' | 'exec' | 'helpers') => median(rs.map((x) => x[k])).toFixed(0);
  console.log(`${mode.padEnd(7)}: ${median(rs.map((x) => x.rate)).toFixed(0)} prompts/s; CPU per prompt: main thread ${us('main')} µs, execution thread ${us('exec')} µs, V8/libuv helpers ${us('helpers')} µs`);
}
console.log(`load average ${os.loadavg()[0]!.toFixed(1)}`);
