/**
 * The GPU check a GPU host runs on its own (no network, a copy of the working
 * tree after `npm install`; about 10 minutes): which execution providers
 * load, then for the full SD1.5 and SDXL UNets with random weights one CFG
 * step (batch 2) on the device against the same step on the CPU, and the
 * device's time per step at 512² and 1024².
 *
 *   npx tsx bench/workflow/gpu.ts [--device cuda|webgpu|auto|cpu] [--cuda-provider-dir DIR] [--families sd15,sdxl] [--sizes 512,1024] [--evals 3]
 *
 * Writes the report to stdout and, where $OUT is set, to $OUT/gpu-report.json.
 * Weights are fp16 in the files (the usual distribution); the device computes
 * in float32, as the CPU does, so the tolerance is float32's over a deep net.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    device: { type: 'string', default: 'auto' },
    'cuda-provider-dir': { type: 'string' },
    families: { type: 'string', default: 'sd15,sdxl' },
    sizes: { type: 'string', default: '512,1024' },
    evals: { type: 'string', default: '3' },
    'check-size': { type: 'string', default: '512' },
  },
  strict: true,
});

const { DeviceError, deviceName, parseDevice, probeDevice } = await import('../../services/workflow/src/models/device.ts');
const { configureDevice } = await import('../../services/workflow/src/models/session.ts');
const { loadCheckpoint, unloadAll, UNetModel } = await import('../../services/workflow/src/models/sd1.ts');
const { SD15, fixtureSpecs } = await import('../../services/workflow/test/models-fixture.ts');
const { xlSpecs } = await import('../../services/workflow/test/models-fixture-xl.ts');

type Spec = [string, number[], string];
const report: Record<string, unknown> = { started: new Date().toISOString(), host: { cpus: os.cpus().length, memory_gib: Math.round(os.totalmem() / 2 ** 30) } };
const log = (line: string) => console.log(line);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// --- providers
const ortMod = (await import('onnxruntime-node')) as unknown as { default?: { listSupportedBackends?: () => unknown } } & { listSupportedBackends?: () => unknown };
const ort = ortMod.default ?? ortMod;
report.backends = ort.listSupportedBackends?.();
const providers: Record<string, string> = {};
for (const name of ['webgpu', 'cuda']) {
  try {
    await probeDevice(parseDevice(name), { cudaProviderDir: args['cuda-provider-dir'] });
    providers[name] = 'loads';
  } catch (err) {
    providers[name] = err instanceof DeviceError ? err.message : String(err);
  }
  log(`provider ${name}: ${providers[name]}`);
}
report.providers = providers;
const wanted = args.device === 'auto' ? (providers.cuda === 'loads' ? 'cuda' : providers.webgpu === 'loads' ? 'webgpu' : undefined) : args.device;
// `--device cpu` runs the measuring part on the CPU alone (a dry run of this script where there is no GPU).
if (!wanted || (wanted !== 'cpu' && providers[wanted.split(':')[0]!] !== 'loads')) {
  log(`no device to measure (${wanted ?? 'none loads'})`);
  finish();
  process.exit(0);
}
const device = parseDevice(wanted!);
report.device = deviceName(device);

// --- weights: fp16 noise scaled by 1/√fan-in, from tables (the SDXL UNet's 2.6e9 values in seconds, not minutes)
const TABLE = 1 << 20;
const tables = new Map<number, Uint16Array>();
function f16(x: number): number {
  const b = new Uint32Array(new Float32Array([x]).buffer)[0]!;
  const sign = (b >>> 16) & 0x8000;
  const e = ((b >>> 23) & 0xff) - 127 + 15;
  if (e <= 0) return sign;
  if (e >= 31) return sign | 0x7c00;
  return sign | (e << 10) | Math.round((b & 0x7fffff) / 8192);
}
function table(scale: number, offset: number): Uint16Array {
  const key = scale * 1000 + offset;
  let t = tables.get(key);
  if (!t) {
    t = new Uint16Array(TABLE);
    let s = (Math.imul(tables.size + 1, 0x9e3779b1) ^ 0x85ebca6b) >>> 0;
    for (let i = 0; i < TABLE; i++) {
      s = (s + 0x6d2b79f5) >>> 0;
      let z = Math.imul(s ^ (s >>> 15), s | 1);
      z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
      t[i] = f16(offset + (((z ^ (z >>> 14)) >>> 0) / 4294967296 * 2 - 1) * scale);
    }
    tables.set(key, t);
  }
  return t;
}
function writeF16(file: string, specs: Spec[]): void {
  const header: Record<string, unknown> = {};
  let off = 0;
  for (const [name, shape] of specs) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 2;
    header[name] = { dtype: 'F16', shape, data_offsets: [off, off + bytes] };
    off += bytes;
  }
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const fd = fs.openSync(file, 'w');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.writeSync(fd, len);
  fs.writeSync(fd, json);
  specs.forEach(([, shape, init], index) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const fanIn = shape.length > 1 ? shape.slice(1).reduce((a, b) => a * b, 1) : 1;
    const t = init === 'one' ? table(0.05, 1) : init === 'w' ? table(1 / Math.sqrt(fanIn), 0) : table(0.05, 0);
    let start = (index * 7919) % TABLE;
    for (let at = 0; at < n; ) {
      const m = Math.min(n - at, TABLE - start);
      fs.writeSync(fd, t.subarray(start, start + m));
      at += m;
      start = 0;
    }
  });
  fs.closeSync(fd);
}

const SDXL = {
  family: 'sdxl' as const,
  unet: { ch: 320, mult: [1, 2, 4], resBlocks: 2, depth: [0, 2, 10], midDepth: 10 },
  text: { l: { hidden: 768, layers: 12, intermediate: 3072 }, open: { hidden: 1280, layers: 32, intermediate: 5120 } },
  vae: false,
};

async function eps(file: string, size: number, ctxDim: number): Promise<{ out: Float32Array; seconds: number }> {
  const ck = await loadCheckpoint(file, 'unet');
  const unet = new UNetModel(ck);
  const lat = size / 8;
  const adm = ck.detected.unet.admInChannels;
  const x = Float32Array.from({ length: 2 * 4 * lat * lat }, (_, i) => Math.sin(i * 0.37));
  const ctx = { shape: [2, 77, ctxDim], data: Float32Array.from({ length: 2 * 77 * ctxDim }, (_, i) => Math.cos(i * 0.11)), y: adm ? Float32Array.from({ length: 2 * adm }, (_, i) => Math.cos(i * 0.3)) : undefined };
  const t = performance.now();
  const out = await unet.eps(x, [2, 4, lat, lat], 500, ctx);
  return { out, seconds: (performance.now() - t) / 1000 };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpu-bench-'));
const results: Record<string, unknown> = {};
try {
  for (const family of args.families.split(',')) {
    const file = path.join(dir, `${family}-unet.safetensors`);
    let t = performance.now();
    const specs = (family === 'sdxl' ? xlSpecs(SDXL) : fixtureSpecs(SD15)).filter(([k]) => k.startsWith('model.diffusion_model.')) as Spec[];
    writeF16(file, specs);
    const r: Record<string, unknown> = { file_gib: +(fs.statSync(file).size / 2 ** 30).toFixed(2), written_s: +((performance.now() - t) / 1000).toFixed(1) };
    const ctxDim = family === 'sdxl' ? 2048 : 768;
    const check = Number(args['check-size']);
    // One step on the CPU and on the device, the same inputs.
    configureDevice({ kind: 'cpu' });
    t = performance.now();
    const cpu = await eps(file, check, ctxDim);
    r.cpu = { size: check, session_and_step_s: +((performance.now() - t) / 1000).toFixed(1), step_s: +cpu.seconds.toFixed(2) };
    await unloadAll();
    configureDevice(device);
    t = performance.now();
    const dev = await eps(file, check, ctxDim);
    let worst = 0;
    let scale = 0;
    for (let i = 0; i < cpu.out.length; i++) {
      worst = Math.max(worst, Math.abs(cpu.out[i]! - dev.out[i]!));
      scale = Math.max(scale, Math.abs(cpu.out[i]!));
    }
    const rel = worst / Math.max(scale, 1e-6);
    r.check = { size: check, max_abs_diff: worst, largest: scale, relative: rel, within_tolerance: rel <= 1e-2, session_and_step_s: +((performance.now() - t) / 1000).toFixed(1) };
    log(`${family}: one CFG step at ${check}² on ${deviceName(device)} against the CPU: largest difference ${worst.toExponential(2)} of ${scale.toFixed(3)} (${rel.toExponential(2)} relative, ${rel <= 1e-2 ? 'within' : 'OUTSIDE'} 1e-2)`);
    const timings: Record<string, unknown> = {};
    for (const size of args.sizes.split(',').map(Number)) {
      const times: number[] = [];
      for (let i = 0; i < Number(args.evals); i++) times.push((await eps(file, size, ctxDim)).seconds);
      timings[size] = { median_s: +median(times).toFixed(3), runs_s: times.map((v) => +v.toFixed(3)) };
      log(`${family}: ${size}² CFG step (batch 2) on ${deviceName(device)}: median ${median(times).toFixed(3)} s of [${times.map((v) => v.toFixed(3)).join(', ')}] (the first includes the session for that size)`);
    }
    r.device_steps = timings;
    results[family] = r;
    await unloadAll();
    fs.rmSync(file, { force: true });
  }
} catch (err) {
  results.error = String((err as Error)?.stack ?? err);
  log(`failed: ${(err as Error)?.message ?? err}`);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
report.results = results;
finish();

function finish(): void {
  report.finished = new Date().toISOString();
  const text = JSON.stringify(report, null, 2);
  console.log(text);
  if (process.env.OUT) fs.writeFileSync(path.join(process.env.OUT, 'gpu-report.json'), text);
}
