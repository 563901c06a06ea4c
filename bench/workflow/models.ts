/**
 * Time per UNet step (one CFG evaluation: batch 2) and per VAE decode for the
 * full SD1.5 layout (860M-parameter UNet, CLIP-L, the SD VAE) with random
 * weights, on ONNX Runtime through src/models, and — where REF_PYTHON and
 * COMFY_DIR name a Python with torch and a ComfyUI tree — the reference on
 * the same checkpoint in the same run (bench/workflow/models-bench.py), as a
 * ratio (medians). Peak RSS of each side is measured in its own process.
 *
 *   npx tsx bench/workflow/models.ts [--size 512] [--evals 3] [--threads 1] [--dtype F16]
 *   REF_PYTHON=venv/bin/python COMFY_DIR=ComfyUI npx tsx bench/workflow/models.ts
 */
import { execFileSync, fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    size: { type: 'string', default: '512' },
    evals: { type: 'string', default: '3' },
    threads: { type: 'string', default: '1' },
    dtype: { type: 'string', default: 'F16' },
    child: { type: 'string' },
  },
  strict: false,
});
const size = Number(args.size);
const evals = Number(args.evals);
const threads = Number(args.threads);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Our side, in a child process so that its peak RSS is its own. */
async function child(ckpt: string): Promise<void> {
  const { configureRuntime, loadCheckpoint, UNetModel, VaeModel } = await import('../../services/workflow/src/models/sd1.ts');
  configureRuntime({ threads });
  const t0 = performance.now();
  const ck = await loadCheckpoint(ckpt);
  const unet = new UNetModel(ck);
  const lat = size / 8;
  const x = Float32Array.from({ length: 2 * 4 * lat * lat }, (_, i) => Math.sin(i));
  const ctx = { shape: [2, 77, 768], data: Float32Array.from({ length: 2 * 77 * 768 }, (_, i) => Math.cos(i)) };
  await unet.eps(x.subarray(0, 4 * lat * lat), [1, 4, lat, lat], 500, { shape: [1, 77, 768], data: ctx.data.subarray(0, 77 * 768) });
  const sessionS = (performance.now() - t0) / 1000;
  // Event-loop lag while the network runs: a 2 ms timer's lateness, what other work on this thread would wait.
  const lags: number[] = [];
  let expected = performance.now() + 2;
  const timer = setInterval(() => {
    const now = performance.now();
    lags.push(Math.max(0, now - expected));
    expected = now + 2;
  }, 2);
  const unetS: number[] = [];
  for (let i = 0; i < evals; i++) {
    const t = performance.now();
    await unet.eps(x, [2, 4, lat, lat], 500, ctx);
    unetS.push((performance.now() - t) / 1000);
  }
  clearInterval(timer);
  lags.sort((a, b) => a - b);
  const vae = new VaeModel(ck);
  await vae.decode({ shape: [1, 4, 8, 8], data: new Float32Array(256) });
  const t1 = performance.now();
  await vae.decode({ shape: [1, 4, lat, lat], data: x.subarray(0, 4 * lat * lat) });
  const decodeS = (performance.now() - t1) / 1000;
  const peak = process.resourceUsage().maxRSS / 1024;
  process.send!({ sessionS, unetS, decodeS, peakRssMb: peak, loopDelayP99Ms: lags[Math.floor(lags.length * 0.99)] ?? 0, loopDelayMaxMs: lags.at(-1) ?? 0, loopSamples: lags.length });
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-bench-'));
  const ckpt = path.join(dir, 'sd15-layout.safetensors');
  try {
    const { SD15, writeFixture } = await import('../../services/workflow/test/models-fixture.ts');
    let t = performance.now();
    writeFixture(ckpt, { ...SD15, dtype: args.dtype as 'F16' | 'F32' });
    console.log(`checkpoint: SD1.5 layout, ${args.dtype}, ${(fs.statSync(ckpt).size / 2 ** 30).toFixed(2)} GiB, written in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    const ours = await new Promise<any>((resolve, reject) => {
      const c = fork(import.meta.filename, ['--child', ckpt, '--size', String(size), '--evals', String(evals), '--threads', String(threads)], { execArgv: ['--import', 'tsx'], env: { ...process.env, OMP_NUM_THREADS: String(threads) } });
      c.on('message', resolve);
      c.on('exit', (code) => (code ? reject(new Error(`child exited ${code}`)) : undefined));
    });
    console.log(`onnxruntime-node (${threads} thread${threads > 1 ? 's' : ''}), ${size}x${size}: session ${ours.sessionS.toFixed(1)} s; UNet CFG step median ${median(ours.unetS).toFixed(2)} s of [${ours.unetS.map((v: number) => v.toFixed(2)).join(', ')}]; VAE decode ${ours.decodeS.toFixed(2)} s; peak RSS ${ours.peakRssMb.toFixed(0)} MiB; event-loop lag while the UNet runs p99 ${ours.loopDelayP99Ms.toFixed(1)} ms, max ${ours.loopDelayMaxMs.toFixed(1)} ms (${ours.loopSamples} ticks of a 2 ms timer)`);
    const py = process.env.REF_PYTHON;
    const comfy = process.env.COMFY_DIR;
    if (!py || !comfy) {
      console.log('reference: not run (set REF_PYTHON and COMFY_DIR)');
      return;
    }
    t = performance.now();
    const out = execFileSync(py, [path.join(import.meta.dirname, 'models-bench.py'), comfy, ckpt, String(size), String(evals)], { env: { ...process.env, OMP_NUM_THREADS: String(threads) }, maxBuffer: 1 << 24 }).toString();
    const ref = JSON.parse(out.trim().split('\n').at(-1)!);
    console.log(`reference (torch ${ref.threads} thread${ref.threads > 1 ? 's' : ''}): load ${ref.load_s.toFixed(1)} s; UNet CFG step median ${median(ref.unet_s).toFixed(2)} s of [${ref.unet_s.map((v: number) => v.toFixed(2)).join(', ')}]; VAE decode ${ref.decode_s.toFixed(2)} s; peak RSS ${ref.peak_rss_mb.toFixed(0)} MiB`);
    console.log(`ratio (ours / reference): UNet step ${(median(ours.unetS) / median(ref.unet_s)).toFixed(2)}x, VAE decode ${(ours.decodeS / ref.decode_s).toFixed(2)}x, peak RSS ${(ours.peakRssMb / ref.peak_rss_mb).toFixed(2)}x`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (args.child) await child(args.child as string);
else await main();
