/**
 * Does the service keep answering while prompts compute? CPU-heavy prompts
 * (a 1024² EmptyImage through a chain of ImageBlur nodes, radius 31) are
 * queued back to back; meanwhile one client times `GET /api/system_stats`
 * and a WebSocket round trip (a new socket until its `status` greeting) and
 * `POST /prompt` of a trivial prompt, one after the other. Reported as p50 /
 * p99 per probe, for:
 *
 *   idle      no prompt running (the baseline of the same run)
 *   threads   prompts in an execution thread (the default)
 *   main      --execution-threads 0: prompts on the main thread, as before
 *
 * The service runs as `npm run workflow` runs it (the bundle), on SQLite.
 *
 * `--heavy sd15`: the heavy prompts are the reference's default workflow
 * (CheckpointLoaderSimple → CLIPTextEncode ×2 → KSampler → VAEDecode →
 * SaveImage, a new seed each) on a generated checkpoint of the full SD1.5
 * layout (random fp16 weights, 2 GB, written first), `--size` pixels square
 * and `--steps` steps: what the API answers while a real-size model loads
 * and samples.
 *
 *   npx tsx bench/workflow/responsiveness.ts [--seconds 15] [--blurs 24] [--modes idle,threads,main]
 *   npx tsx bench/workflow/responsiveness.ts --heavy sd15 --modes idle,threads --seconds 120 [--size 512] [--steps 4]
 *   npx tsx bench/workflow/responsiveness.ts --heavy webp --modes idle,threads   (2048² lossless WebP saves, method 6)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '15' },
    blurs: { type: 'string', default: '24' },
    modes: { type: 'string', default: 'idle,threads,main' },
    heavy: { type: 'string', default: 'blur' },
    size: { type: 'string', default: '512' },
    steps: { type: 'string', default: '4' },
  },
  strict: false,
});
const root = path.resolve(import.meta.dirname, '../..');

function startService(dir: string, extra: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [path.join(root, 'scripts', 'run-service.mjs'), 'workflow', '--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--log-level', 'warn', ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LOG_REQUESTS: '0', DATABASE_URL: '' },
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, url: m[1]! });
    });
    child.once('exit', (code) => reject(new Error(`service exited (${code})`)));
  });
}

const SD15_FILE = 'sd15-layout.safetensors';

function heavyPrompt(i: number, blurs: number): Record<string, unknown> {
  if (args.heavy === 'sd15') {
    // A new seed per prompt: the sampler runs every time (the checkpoint and the text stay cached).
    const p = defaultWorkflow(SD15_FILE, `bench-${i}`, Number(args.size), Number(args.size)) as Record<string, { inputs: Record<string, unknown> }>;
    Object.assign(p['3']!.inputs, { seed: 1000 + i, steps: Number(args.steps) });
    return p;
  }
  if (args.heavy === 'webp') {
    // A 2048² noisy picture saved as lossless WebP at the slowest method: the in-process encoder (native/webp-encoder.c)
    // runs on the execution thread for about a second a picture. A new seed per prompt: nothing comes from the cache.
    return {
      '0': { class_type: 'EmptyImage', inputs: { width: 2048, height: 2048, batch_size: 1, color: 0x406080 } },
      '1': { class_type: 'ImageAddNoise', inputs: { image: ['0', 0], seed: i, strength: 0.1 } },
      out: { class_type: 'SaveAnimatedWEBP', inputs: { images: ['1', 0], filename_prefix: `resp_${i}`, fps: 6, lossless: true, quality: 80, method: 'slowest' } },
    };
  }
  // A distinct colour per prompt: nothing comes from the cache.
  const p: Record<string, unknown> = { '0': { class_type: 'EmptyImage', inputs: { width: 1024, height: 1024, batch_size: 1, color: (i * 7919) % 0xffffff } } };
  for (let k = 1; k <= blurs; k++) p[String(k)] = { class_type: 'ImageBlur', inputs: { image: [String(k - 1), 0], blur_radius: 31, sigma: 1 + (k % 5) } };
  p.out = { class_type: 'PreviewImage', inputs: { images: [String(blurs), 0] } };
  return p;
}

function trivialPrompt(i: number): Record<string, unknown> {
  return { '1': { class_type: 'PrimitiveString', inputs: { value: `t${i}-${Math.random()}` } }, '2': { class_type: 'PreviewAny', inputs: { source: ['1', 0] } } };
}

async function post(url: string, body: unknown): Promise<any> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return r.json();
}

function wsRoundTrip(url: string): Promise<number> {
  const t = performance.now();
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + `/ws?clientId=probe-${Math.random().toString(36).slice(2)}`);
    ws.on('message', (d, bin) => {
      if (bin || JSON.parse(String(d)).type !== 'status') return;
      resolve(performance.now() - t);
      ws.terminate();
    });
    ws.once('error', reject);
  });
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((s.length - 1) * p))] ?? NaN;
}

interface Probes {
  stats: number[];
  ws: number[];
  post: number[];
  heavyDone: number;
}

/** Keeps `heavy` prompts queued (when set) and probes until `seconds` are over. */
async function measure(url: string, seconds: number, heavy: boolean, blurs: number): Promise<Probes> {
  const client = `bench-${process.pid}`;
  const ws = new WebSocket(url.replace(/^http/, 'ws') + `/ws?clientId=${client}`);
  await new Promise((r) => ws.once('open', r));
  let heavyDone = 0;
  let outstanding = 0;
  let i = 0;
  let stop = false;
  const feed = async () => {
    while (!stop && heavy && outstanding < 2) {
      outstanding += 1;
      await post(`${url}/prompt`, { prompt: heavyPrompt(i++, blurs), client_id: client });
    }
  };
  ws.on('message', (d, bin) => {
    if (bin) return;
    const m = JSON.parse(String(d));
    if (m.type === 'executing' && m.data.node === null) {
      outstanding -= 1;
      heavyDone += 1;
      void feed();
    }
  });
  await feed();
  if (heavy) {
    // Probes start once a heavy prompt is executing.
    await new Promise<void>((resolve) => {
      const on = (d: WebSocket.RawData, bin: boolean) => {
        if (bin) return;
        const m = JSON.parse(String(d));
        if (m.type === 'executing' && m.data.node !== null) {
          ws.off('message', on);
          resolve();
        }
      };
      ws.on('message', on);
    });
  }
  const probes: Probes = { stats: [], ws: [], post: [], heavyDone: 0 };
  const end = performance.now() + seconds * 1000;
  let n = 0;
  while (performance.now() < end) {
    let t = performance.now();
    const r = await fetch(`${url}/api/system_stats`);
    await r.arrayBuffer();
    probes.stats.push(performance.now() - t);
    probes.ws.push(await wsRoundTrip(url));
    t = performance.now();
    await post(`${url}/prompt`, { prompt: trivialPrompt(n++), client_id: `probe-${process.pid}` });
    probes.post.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 5));
  }
  stop = true;
  probes.heavyDone = heavyDone;
  ws.terminate();
  return probes;
}

const modes = String(args.modes).split(',');
const seconds = Number(args.seconds);
const blurs = Number(args.blurs);
const { defaultWorkflow } = await import('../../services/workflow/test/nodes-helpers.ts');
const { bundleService } = await import(path.join(root, 'scripts', 'run-service.mjs'));
await bundleService('workflow');
await bundleService('workflow:threads/execution-thread');
const what =
  args.heavy === 'sd15'
    ? `the default workflow on the full SD1.5 layout, ${args.size}², ${args.steps} steps`
    : args.heavy === 'webp'
      ? 'ImageAddNoise → SaveAnimatedWEBP lossless, slowest, on 2048²'
      : `${blurs} × ImageBlur r31 on 1024²`;
console.log(`responsiveness: ${seconds} s per mode, heavy prompts of ${what}, load ${os.loadavg()[0]!.toFixed(1)}`);
let checkpoint: string | undefined;
if (args.heavy === 'sd15') {
  const { SD15, writeFixture } = await import('../../services/workflow/test/models-fixture.ts');
  checkpoint = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wf-resp-ckpt-')), SD15_FILE);
  writeFixture(checkpoint, { ...SD15, dtype: 'F16' });
}
for (const mode of modes) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-resp-'));
  if (checkpoint) {
    fs.mkdirSync(path.join(dir, 'models', 'checkpoints'), { recursive: true });
    fs.linkSync(checkpoint, path.join(dir, 'models', 'checkpoints', SD15_FILE));
  }
  const s = await startService(dir, mode === 'main' ? ['--execution-threads', '0'] : []);
  try {
    // Warm-up: the image library and the JIT.
    await measure(s.url, 2, false, blurs);
    const p = await measure(s.url, seconds, mode !== 'idle', blurs);
    const f = (xs: number[]) => `p50 ${pct(xs, 0.5).toFixed(1)} ms, p99 ${pct(xs, 0.99).toFixed(1)} ms (n=${xs.length})`;
    console.log(`${mode.padEnd(8)} system_stats ${f(p.stats)} | ws round trip ${f(p.ws)} | POST /prompt ${f(p.post)} | heavy prompts finished ${p.heavyDone}`);
  } finally {
    s.child.kill('SIGTERM');
    await new Promise((r) => s.child.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
if (checkpoint) fs.rmSync(path.dirname(checkpoint), { recursive: true, force: true });
