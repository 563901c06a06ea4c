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
 *
 * `--family sdxl`: the full SDXL base UNet (2.6B parameters, a UNet-only
 * file, label_emb's `y` input) instead, e.g. `--family sdxl --size 1024
 * --evals 1` (no VAE decode: the file holds the UNet alone).
 * `--upscale N`: instead, an ESRGAN ×4 pass (RRDBNet, 64 features, 23
 * blocks, the published size) over an N×N image through ImageUpscaleWithModel's
 * tiling (512-pixel tiles, overlap 32), against the reference's own
 * tiled_scale over spandrel's model (SPANDREL_DIR names spandrel's source,
 * libs/spandrel).
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
    family: { type: 'string', default: 'sd15' },
    upscale: { type: 'string', default: '0' },
    child: { type: 'string' },
  },
  strict: false,
});
const size = Number(args.size);
const evals = Number(args.evals);
const threads = Number(args.threads);
const family = args.family === 'sdxl' ? 'sdxl' : 'sd15';
const upscaleSize = Number(args.upscale);
/** SDXL base at its published widths (the reference's SDXL unet_config). */
const SDXL_FULL = {
  family: 'sdxl' as const,
  unet: { ch: 320, mult: [1, 2, 4], resBlocks: 2, depth: [0, 2, 10], midDepth: 10 },
  text: { l: { hidden: 768, layers: 12, intermediate: 3072 }, open: { hidden: 1280, layers: 32, intermediate: 5120 } },
  vae: false,
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A 2 ms timer's lateness while `work` runs: what other work on this thread would wait. */
async function withLoopLag<T>(work: () => Promise<T>): Promise<{ result: T; p99: number; max: number; samples: number }> {
  const lags: number[] = [];
  let expected = performance.now() + 2;
  const timer = setInterval(() => {
    const now = performance.now();
    lags.push(Math.max(0, now - expected));
    expected = now + 2;
  }, 2);
  try {
    const result = await work();
    lags.sort((a, b) => a - b);
    return { result, p99: lags[Math.floor(lags.length * 0.99)] ?? 0, max: lags.at(-1) ?? 0, samples: lags.length };
  } finally {
    clearInterval(timer);
  }
}

/** Our side, in a child process so that its peak RSS is its own. */
async function child(file: string): Promise<void> {
  if (upscaleSize > 0) {
    const { tiledScale, UpscaleModel } = await import('../../services/workflow/src/models/esrgan.ts');
    const t0 = performance.now();
    const model = await UpscaleModel.open(file);
    await model.run(new Float32Array(3 * 16 * 16), [1, 3, 16, 16], { threads });
    const sessionS = (performance.now() - t0) / 1000;
    const n = upscaleSize;
    const img = Float32Array.from({ length: 3 * n * n }, (_, i) => ((i * 37) % 256) / 255);
    const t1 = performance.now();
    const c1 = process.cpuUsage();
    const lag = await withLoopLag(() => tiledScale({ data: img, dims: [1, 3, n, n] }, (tile, dims) => model.run(tile, dims, { threads }), { tile: 512, overlap: 32, scale: model.scale, outChannels: 3 }));
    const upscaleS = (performance.now() - t1) / 1000;
    const used = process.cpuUsage(c1);
    const upscaleCpuS = (used.user + used.system) / 1e6;
    process.send!({ sessionS, upscaleS, upscaleCpuS, peakRssMb: process.resourceUsage().maxRSS / 1024, loopDelayP99Ms: lag.p99, loopDelayMaxMs: lag.max, loopSamples: lag.samples });
    return;
  }
  const { configureRuntime, loadCheckpoint, unloadAll, UNetModel, VaeModel } = await import('../../services/workflow/src/models/sd1.ts');
  configureRuntime({ threads });
  const t0 = performance.now();
  const ck = await loadCheckpoint(file, family === 'sdxl' ? 'unet' : 'checkpoint');
  const unet = new UNetModel(ck);
  const lat = size / 8;
  const D = family === 'sdxl' ? 2048 : 768;
  const adm = ck.detected.unet.admInChannels;
  const x = Float32Array.from({ length: 2 * 4 * lat * lat }, (_, i) => Math.sin(i));
  const y = adm ? Float32Array.from({ length: 2 * adm }, (_, i) => Math.cos(i * 0.3)) : undefined;
  const ctx = { shape: [2, 77, D], data: Float32Array.from({ length: 2 * 77 * D }, (_, i) => Math.cos(i)), y };
  // The first call builds the session (at the smallest size, as a prompt's first step would at its own).
  await unet.eps(new Float32Array(4 * 8 * 8), [1, 4, 8, 8], 500, { shape: [1, 77, D], data: ctx.data.subarray(0, 77 * D), y: y?.subarray(0, adm) });
  const sessionS = (performance.now() - t0) / 1000;
  const unetS: number[] = [];
  const lag = await withLoopLag(async () => {
    for (let i = 0; i < evals; i++) {
      const t = performance.now();
      await unet.eps(x, [2, 4, lat, lat], 500, ctx);
      unetS.push((performance.now() - t) / 1000);
    }
  });
  let decodeS = NaN;
  if (ck.detected.vae) {
    const vae = new VaeModel(ck);
    await vae.decode({ shape: [1, 4, 8, 8], data: new Float32Array(256) });
    const t1 = performance.now();
    await vae.decode({ shape: [1, 4, lat, lat], data: x.subarray(0, 4 * lat * lat) });
    decodeS = (performance.now() - t1) / 1000;
  }
  const peak = process.resourceUsage().maxRSS / 1024;
  // Unloaded, so the checkpoint's float32 copy (gigabytes in the temporary folder) goes with it.
  await unloadAll();
  process.send!({ sessionS, unetS, decodeS, peakRssMb: peak, loopDelayP99Ms: lag.p99, loopDelayMaxMs: lag.max, loopSamples: lag.samples });
}

/** Runs our side in its own process and waits for its figures. */
function runChild(file: string): Promise<any> {
  return new Promise<any>((resolve, reject) => {
    const c = fork(import.meta.filename, ['--child', file, '--size', String(size), '--evals', String(evals), '--threads', String(threads), '--family', family, '--upscale', String(upscaleSize)], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, OMP_NUM_THREADS: String(threads) },
    });
    c.on('message', resolve);
    c.on('exit', (code) => (code ? reject(new Error(`child exited ${code}`)) : undefined));
  });
}

/** The reference's side (models-bench.py), or undefined where it is not installed. */
function runReference(argv: string[]): any {
  const py = process.env.REF_PYTHON;
  const comfy = process.env.COMFY_DIR;
  if (!py || !comfy) {
    console.log('reference: not run (set REF_PYTHON and COMFY_DIR)');
    return undefined;
  }
  const out = execFileSync(py, [path.join(import.meta.dirname, 'models-bench.py'), comfy, ...argv], { env: { ...process.env, OMP_NUM_THREADS: String(threads) }, maxBuffer: 1 << 24 }).toString();
  return JSON.parse(out.trim().split('\n').at(-1)!);
}

const lagText = (r: any) => `event-loop lag while it runs p99 ${r.loopDelayP99Ms.toFixed(1)} ms, max ${r.loopDelayMaxMs.toFixed(1)} ms (${r.loopSamples} ticks of a 2 ms timer)`;

async function upscaleBench(dir: string): Promise<void> {
  const { writeEsrgan } = await import('../../services/workflow/test/esrgan-fixture.ts');
  const file = path.join(dir, 'RealESRGAN_x4-layout.safetensors');
  writeEsrgan(file, 'new', 3, 32, { features: 64, blocks: 23 });
  console.log(`upscale model: RRDBNet ×4, 64 features, 23 blocks, ${(fs.statSync(file).size / 2 ** 20).toFixed(1)} MiB; image ${upscaleSize}×${upscaleSize} → ${upscaleSize * 4}×${upscaleSize * 4}`);
  const ours = await runChild(file);
  console.log(`onnxruntime-node (${threads} thread${threads > 1 ? 's' : ''}): session ${ours.sessionS.toFixed(1)} s; upscale ${ours.upscaleS.toFixed(2)} s (CPU ${ours.upscaleCpuS.toFixed(2)} s); peak RSS ${ours.peakRssMb.toFixed(0)} MiB; ${lagText(ours)}`);
  const spandrel = process.env.SPANDREL_DIR;
  if (!spandrel) {
    console.log('reference: not run (set SPANDREL_DIR to spandrel\'s libs/spandrel, with REF_PYTHON and COMFY_DIR)');
    return;
  }
  const ref = runReference(['--upscale', file, String(upscaleSize), spandrel]);
  if (!ref) return;
  console.log(`reference (torch ${ref.threads} thread${ref.threads > 1 ? 's' : ''}, spandrel): load ${ref.load_s.toFixed(1)} s; upscale ${ref.upscale_s.toFixed(2)} s (CPU ${ref.upscale_cpu_s.toFixed(2)} s); peak RSS ${ref.peak_rss_mb.toFixed(0)} MiB`);
  // CPU seconds as well as wall time: on a machine shared with other work the wall-time ratio moves with whichever side the load hit.
  console.log(`ratio (ours / reference): upscale time ${(ours.upscaleS / ref.upscale_s).toFixed(2)}x, CPU ${(ours.upscaleCpuS / ref.upscale_cpu_s).toFixed(2)}x, peak RSS ${(ours.peakRssMb / ref.peak_rss_mb).toFixed(2)}x`);
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-bench-'));
  try {
    if (upscaleSize > 0) return await upscaleBench(dir);
    const ckpt = path.join(dir, `${family}-layout.safetensors`);
    let t = performance.now();
    if (family === 'sdxl') {
      const { xlSpecs } = await import('../../services/workflow/test/models-fixture-xl.ts');
      const { writeSpecs } = await import('../../services/workflow/test/models-fixture.ts');
      writeSpecs(ckpt, xlSpecs(SDXL_FULL).filter(([k]) => k.startsWith('model.diffusion_model.')) as never, { dtype: args.dtype as 'F16' | 'F32' });
    } else {
      const { SD15, writeFixture } = await import('../../services/workflow/test/models-fixture.ts');
      writeFixture(ckpt, { ...SD15, dtype: args.dtype as 'F16' | 'F32' });
    }
    console.log(`checkpoint: ${family === 'sdxl' ? 'SDXL base UNet' : 'SD1.5'} layout, ${args.dtype}, ${(fs.statSync(ckpt).size / 2 ** 30).toFixed(2)} GiB, written in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    const ours = await runChild(ckpt);
    const decode = (v: number) => (Number.isFinite(v) ? `${v.toFixed(2)} s` : 'n/a');
    console.log(`onnxruntime-node (${threads} thread${threads > 1 ? 's' : ''}), ${size}x${size}: session ${ours.sessionS.toFixed(1)} s; UNet CFG step median ${median(ours.unetS).toFixed(2)} s of [${ours.unetS.map((v: number) => v.toFixed(2)).join(', ')}]; VAE decode ${decode(ours.decodeS)}; peak RSS ${ours.peakRssMb.toFixed(0)} MiB; ${lagText(ours)}`);
    t = performance.now();
    const ref = runReference([ckpt, String(size), String(evals), family]);
    if (!ref) return;
    console.log(`reference (torch ${ref.threads} thread${ref.threads > 1 ? 's' : ''}): load ${ref.load_s.toFixed(1)} s; UNet CFG step median ${median(ref.unet_s).toFixed(2)} s of [${ref.unet_s.map((v: number) => v.toFixed(2)).join(', ')}]; VAE decode ${decode(ref.decode_s ?? NaN)}; peak RSS ${ref.peak_rss_mb.toFixed(0)} MiB`);
    const decodeRatio = Number.isFinite(ours.decodeS) && ref.decode_s ? `, VAE decode ${(ours.decodeS / ref.decode_s).toFixed(2)}x` : '';
    console.log(`ratio (ours / reference): UNet step ${(median(ours.unetS) / median(ref.unet_s)).toFixed(2)}x${decodeRatio}, peak RSS ${(ours.peakRssMb / ref.peak_rss_mb).toFixed(2)}x`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (args.child) await child(args.child as string);
else await main();
