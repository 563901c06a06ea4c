/**
 * Image pipeline: LoadImage → ImageScale 1024² → 1536² → ImageBlur (radius 1,
 * sigma 1) → SaveImage, queued over HTTP and awaited on the WebSocket (the
 * service in this process, SQLite, output cache off so every node runs each
 * round), against a same-run baseline: the same sharp calls made directly
 * (metadata + decode, resize, 3×3 convolution, PNG encode at level 4, file
 * write). The reference takes 411 ms for this pipeline on this machine class.
 * Saved files are not registered as assets (the baseline does not hash or
 * copy them); BENCH_ASSETS=1 measures the service with asset registration on.
 *
 *   npx tsx bench/workflow/image-pipeline.ts [--rounds 15] [--method nearest-exact]
 *
 * In the service, nearest-exact (ImageScale's default) on an RGB frame is
 * sharp's nearest resize, as here, and the blur stays pending libvips work
 * that SaveImage runs in its PNG encoder's pipeline (the baseline makes each
 * step's pixels). Other methods are reported too:
 * bilinear/bicubic/area/lanczos enlarge on typed arrays (the reference's
 * exact kernels), their baseline is sharp's nearest kernel resize (so their
 * ratio includes the cost of the exact kernel).
 *
 * Also reported, for scale: the whole chain as ONE sharp pipeline (decode,
 * nearest resize, convolution, PNG), the floor for libvips on this machine;
 * its pixels are not the reference's (libvips' nearest indices, edges
 * copied instead of reflected), so it is not a baseline.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import WebSocket from 'ws';

const { values: args } = parseArgs({ options: { rounds: { type: 'string', default: '15' }, method: { type: 'string', default: 'nearest-exact' }, all: { type: 'boolean', default: false } }, strict: false });
const ROUNDS = Number(args.rounds);
const SIZE_IN = 1024;
const SIZE_OUT = 1536;

process.env.LOG_REQUESTS = '0';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-imgbench-'));
fs.mkdirSync(path.join(dir, 'input'), { recursive: true });

// A photo-like input: smooth gradients plus mild noise (PNG of ~1-2 MB).
const px = Buffer.alloc(SIZE_IN * SIZE_IN * 3);
let seed = 1;
for (let y = 0; y < SIZE_IN; y++) {
  for (let x = 0; x < SIZE_IN; x++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const n = (seed >> 16) % 9;
    const i = (y * SIZE_IN + x) * 3;
    px[i] = (x >> 2) + n;
    px[i + 1] = (y >> 2) + n;
    px[i + 2] = ((x + y) >> 3) + n;
  }
}
const inputFile = path.join(dir, 'input', 'bench.png');
fs.writeFileSync(inputFile, await sharp(px, { raw: { width: SIZE_IN, height: SIZE_IN, channels: 3 } }).png().toBuffer());

const { buildApp } = await import('../../services/workflow/src/app.ts');
const app = await buildApp({ port: 0, host: '127.0.0.1', dataDir: dir, databaseUrl: undefined, pgSchema: `bench_img_${process.pid}`, logLevel: 'warn', runWorkers: true, flags: { cacheNone: true, disableAssets: process.env.BENCH_ASSETS !== '1' } } as never);
const address = await app.listen({ port: 0, host: '127.0.0.1' });
const clientId = 'bench';
const ws = new WebSocket(`${address.replace('http', 'ws')}/ws?clientId=${clientId}`);
await new Promise((r) => ws.once('open', r));
const waiters = new Map<string, (m: any) => void>();
ws.on('message', (data, binary) => {
  if (binary) return;
  const m = JSON.parse(String(data));
  const id = m.data?.prompt_id;
  if ((m.type === 'execution_success' || m.type === 'execution_error') && waiters.has(id)) waiters.get(id)!(m);
});

async function viaService(method: string, round: number): Promise<number> {
  const prompt = {
    load: { class_type: 'LoadImage', inputs: { image: 'bench.png' } },
    scale: { class_type: 'ImageScale', inputs: { image: ['load', 0], upscale_method: method, width: SIZE_OUT, height: SIZE_OUT, crop: 'disabled' } },
    blur: { class_type: 'ImageBlur', inputs: { image: ['scale', 0], blur_radius: 1, sigma: 1 } },
    save: { class_type: 'SaveImage', inputs: { images: ['blur', 0], filename_prefix: `bench_${method}_${round}` } },
  };
  const t0 = performance.now();
  const res = await fetch(`${address}/prompt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt, client_id: clientId }) });
  const { prompt_id } = (await res.json()) as { prompt_id: string };
  const msg = await new Promise<any>((r) => waiters.set(prompt_id, r));
  waiters.delete(prompt_id);
  if (msg.type !== 'execution_success') throw new Error(`prompt failed: ${JSON.stringify(msg.data)}`);
  return performance.now() - t0;
}

const k = Math.exp(-0.5) / (1 + 2 * Math.exp(-0.5));
const k1 = [k, 1 - 2 * k, k];
const kernel = k1.flatMap((a) => k1.map((b) => a * b));

async function direct(round: number): Promise<number> {
  const t0 = performance.now();
  await sharp(inputFile).metadata();
  const rgb = await sharp(inputFile).rotate().removeAlpha().raw().toBuffer();
  const scaled = await sharp(rgb, { raw: { width: SIZE_IN, height: SIZE_IN, channels: 3 } }).resize(SIZE_OUT, SIZE_OUT, { kernel: 'nearest', fit: 'fill' }).raw().toBuffer();
  const blurred = await sharp(scaled, { raw: { width: SIZE_OUT, height: SIZE_OUT, channels: 3 } }).convolve({ width: 3, height: 3, kernel, scale: 1 }).linear(1, 0.5).raw().toBuffer();
  const png = await sharp(blurred, { raw: { width: SIZE_OUT, height: SIZE_OUT, channels: 3 } }).png({ compressionLevel: 4 }).toBuffer();
  fs.writeFileSync(path.join(dir, 'output', `direct_${round}.png`), png, { flag: 'w' });
  return performance.now() - t0;
}

async function onePipeline(round: number): Promise<number> {
  const t0 = performance.now();
  const png = await sharp(inputFile).rotate().removeAlpha().resize(SIZE_OUT, SIZE_OUT, { kernel: 'nearest', fit: 'fill' }).convolve({ width: 3, height: 3, kernel, scale: 1 }).linear(1, 0.5).png({ compressionLevel: 4 }).toBuffer();
  fs.writeFileSync(path.join(dir, 'output', `fused_${round}.png`), png, { flag: 'w' });
  return performance.now() - t0;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

fs.mkdirSync(path.join(dir, 'output'), { recursive: true });
const methods = args.all ? ['nearest-exact', 'bilinear', 'bicubic', 'area', 'lanczos'] : [String(args.method)];
// Warm-up: JIT, sharp's thread pool, the database.
await viaService(methods[0]!, -1);
await direct(-1);
await onePipeline(-1);
const base: number[] = [];
const fused: number[] = [];
const service: Record<string, number[]> = Object.fromEntries(methods.map((m) => [m, []]));
for (let r = 0; r < ROUNDS; r++) {
  // Interleaved so that noise from other processes hits both sides alike.
  base.push(await direct(r));
  fused.push(await onePipeline(r));
  for (const m of methods) service[m]!.push(await viaService(m, r));
}
const b = median(base);
console.log(`image pipeline 1024² → 1536² → blur → PNG, ${ROUNDS} rounds (medians)`);
console.log(`  direct sharp calls: ${b.toFixed(1)} ms`);
console.log(`  one sharp pipeline (floor, not the reference's pixels): ${median(fused).toFixed(1)} ms`);
for (const m of methods) {
  const s = median(service[m]!);
  console.log(`  service, ${m.padEnd(13)}: ${s.toFixed(1)} ms  ratio ${(s / b).toFixed(2)}×  (reference: 411 ms, ${(411 / s).toFixed(1)}× faster)`);
}
ws.close();
await app.close();
fs.rmSync(dir, { recursive: true, force: true });
