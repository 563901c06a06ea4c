/**
 * The GPU check a GPU host runs on its own (no network, a copy of the working
 * tree after `npm install`; about 10 minutes): which execution providers
 * load, then for the full SD1.5 and SDXL UNets with random weights one CFG
 * step (batch 2) on the device against the same step on the CPU, and the
 * device's time per step at 512² and 1024².
 *
 *   npx tsx bench/workflow/gpu.ts [--device cuda|webgpu|auto|cpu] [--cuda-provider-dir DIR] [--families sd15,sdxl] [--sizes 512,1024] [--evals 3] [--precisions fp32,fp16]
 *
 * Writes the report to stdout and, where $OUT is set, to $OUT/gpu-report.json.
 * Weights are fp16 in the files (the usual distribution). The CPU computes in
 * float32; the device runs the UNet in each of --precisions (fp32, and fp16:
 * the --force-fp16 graph, precision.ts), each step against the CPU's float32
 * one (tolerance 1e-2 relative for fp32, float32's over a deep net; 5e-2 for
 * fp16, whose 11-bit mantissa rounds every layer) and timed per size, so fp16
 * and fp32 step times sit side by side. `--families tiny` (the tests' tiny
 * UNet) with `--device cpu` is a dry run of the whole script in seconds.
 *
 * `--parts vae,text` (the default; `--parts ''` skips it), for sd15 and tiny:
 * the family's VAE decode at --check-size and its text encoder (CLIP-L) on
 * the device against the CPU's float32, the VAE in fp32 and with --fp16-vae
 * (non-finite values counted: an SD VAE can overflow in float16, which the
 * reference leaves as is), the text encoder in float32 from its fp16 weights
 * (--fp16-text-enc: how the reference stores and computes it).
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
    precisions: { type: 'string', default: 'fp32,fp16' },
    parts: { type: 'string', default: 'vae,text' },
  },
  strict: true,
});

const { DeviceError, deviceName, parseDevice, probeDevice } = await import('../../services/workflow/src/models/device.ts');
const { configureDevice } = await import('../../services/workflow/src/models/session.ts');
const { ClipModel, loadCheckpoint, unloadAll, UNetModel, VaeModel } = await import('../../services/workflow/src/models/sd1.ts');
const { SD15, TINY, fixtureSpecs } = await import('../../services/workflow/test/models-fixture.ts');
const { configurePrecision } = await import('../../services/workflow/src/models/precision.ts');
const precisions = args.precisions.split(',').map((p) => {
  if (p !== 'fp32' && p !== 'fp16') throw new Error(`--precisions takes fp32 and/or fp16, got ${p}`);
  return p;
});
const TOLERANCE: Record<string, number> = { fp32: 1e-2, fp16: 5e-2 };
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
    const specs = (family === 'sdxl' ? xlSpecs(SDXL) : fixtureSpecs(family === 'tiny' ? TINY : SD15)).filter(([k]) => k.startsWith('model.diffusion_model.')) as Spec[];
    writeF16(file, specs);
    const r: Record<string, unknown> = { file_gib: +(fs.statSync(file).size / 2 ** 30).toFixed(2), written_s: +((performance.now() - t) / 1000).toFixed(1) };
    const ctxDim = family === 'sdxl' ? 2048 : family === 'tiny' ? 32 : 768;
    const check = Number(args['check-size']);
    // One step on the CPU in float32, then on the device in each precision, the same inputs.
    configureDevice({ kind: 'cpu' });
    configurePrecision({ dtype: 'fp32', upcastAttention: false, reason: 'bench' });
    t = performance.now();
    const cpu = await eps(file, check, ctxDim);
    r.cpu = { size: check, precision: 'fp32', session_and_step_s: +((performance.now() - t) / 1000).toFixed(1), step_s: +cpu.seconds.toFixed(2) };
    await unloadAll();
    configureDevice(device);
    const per: Record<string, unknown> = {};
    for (const precision of precisions) {
      // Sessions are made in the precision configured when they are created: each precision starts from none.
      configurePrecision({ dtype: precision, upcastAttention: false, reason: 'bench' });
      t = performance.now();
      const dev = await eps(file, check, ctxDim);
      let worst = 0;
      let scale = 0;
      let nonFinite = 0;
      for (let i = 0; i < cpu.out.length; i++) {
        if (!Number.isFinite(dev.out[i]!)) nonFinite++;
        worst = Math.max(worst, Math.abs(cpu.out[i]! - dev.out[i]!));
        scale = Math.max(scale, Math.abs(cpu.out[i]!));
      }
      const rel = worst / Math.max(scale, 1e-6);
      const tol = TOLERANCE[precision]!;
      const ok = nonFinite === 0 && rel <= tol;
      const entry: Record<string, unknown> = { check: { size: check, max_abs_diff: worst, largest: scale, relative: rel, non_finite: nonFinite, tolerance: tol, within_tolerance: ok, session_and_step_s: +((performance.now() - t) / 1000).toFixed(1) } };
      log(`${family} ${precision}: one CFG step at ${check}² on ${deviceName(device)} against the CPU's fp32: largest difference ${worst.toExponential(2)} of ${scale.toFixed(3)} (${rel.toExponential(2)} relative, ${nonFinite} not finite, ${ok ? 'within' : 'OUTSIDE'} ${tol})`);
      const timings: Record<string, unknown> = {};
      for (const size of args.sizes.split(',').map(Number)) {
        const times: number[] = [];
        for (let i = 0; i < Number(args.evals); i++) times.push((await eps(file, size, ctxDim)).seconds);
        timings[size] = { median_s: +median(times).toFixed(3), runs_s: times.map((v) => +v.toFixed(3)) };
        log(`${family} ${precision}: ${size}² CFG step (batch 2) on ${deviceName(device)}: median ${median(times).toFixed(3)} s of [${times.map((v) => v.toFixed(3)).join(', ')}] (the first includes the session for that size)`);
      }
      entry.device_steps = timings;
      per[precision] = entry;
      await unloadAll();
    }
    r.precisions = per;
    // fp16 against fp32 on the device, size by size (median step times).
    if (per.fp16 && per.fp32) {
      const speed: Record<string, number> = {};
      for (const size of args.sizes.split(',')) {
        const a = ((per.fp32 as { device_steps: Record<string, { median_s: number }> }).device_steps[size]!).median_s;
        const b = ((per.fp16 as { device_steps: Record<string, { median_s: number }> }).device_steps[size]!).median_s;
        speed[size] = +(a / b).toFixed(2);
        log(`${family}: ${size}² fp16 step ${b.toFixed(3)} s against fp32 ${a.toFixed(3)} s (${(a / b).toFixed(2)}x)`);
      }
      r.fp16_speedup = speed;
    }
    fs.rmSync(file, { force: true });
    if (family !== 'sdxl' && args.parts) r.parts = await checkParts(family === 'tiny' ? TINY : SD15, Number(args['check-size']));
    results[family] = r;
  }
} catch (err) {
  results.error = String((err as Error)?.stack ?? err);
  log(`failed: ${(err as Error)?.message ?? err}`);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
report.results = results;
finish();

/** The VAE decode and the text encoder on the device, each dtype against the CPU's float32 (--parts). */
async function checkParts(cfg: typeof SD15, size: number): Promise<Record<string, unknown>> {
  const parts = args.parts.split(',');
  for (const p of parts) if (p !== 'vae' && p !== 'text') throw new Error(`--parts takes vae and/or text, got ${p}`);
  const all = fixtureSpecs(cfg) as Spec[];
  // Part files as VAELoader and CLIPLoader read them: the checkpoint's prefixes taken off.
  const strip = (prefix: string) => all.filter(([k]) => k.startsWith(prefix)).map(([k, shape, init]): Spec => [k.slice(prefix.length), shape, init]);
  const files = { vae: path.join(dir, 'vae.safetensors'), text: path.join(dir, 'clip.safetensors') };
  writeF16(files.vae, strip('first_stage_model.'));
  writeF16(files.text, strip('cond_stage_model.transformer.'));
  const lat = size / 8;
  const z = Float32Array.from({ length: 4 * lat * lat }, (_, i) => Math.sin(i * 0.37));
  const run = async (part: string): Promise<{ out: Float32Array; seconds: number }> => {
    const t = performance.now();
    const out =
      part === 'vae'
        ? (await new VaeModel(await loadCheckpoint(files.vae, 'vae')).decodeRaw({ shape: [1, 4, lat, lat], data: z })).data
        : (await new ClipModel(await loadCheckpoint(files.text, 'clip')).encode('a photograph of an astronaut riding a horse'))[0]![0].data;
    return { out, seconds: (performance.now() - t) / 1000 };
  };
  const configure = (dtype: 'fp16' | 'fp32') =>
    configurePrecision({ dtype: 'fp32', upcastAttention: false, reason: 'bench', vae: { dtype, cpu: false, reason: 'bench' }, textEncoder: { storage: dtype, reason: 'bench' } });
  const out: Record<string, unknown> = {};
  for (const part of parts) {
    configureDevice({ kind: 'cpu' });
    configure('fp32');
    const cpu = await run(part);
    await unloadAll();
    configureDevice(device);
    const entry: Record<string, unknown> = { cpu_fp32_s: +cpu.seconds.toFixed(2) };
    for (const dtype of ['fp32', 'fp16'] as const) {
      configure(dtype);
      const dev = await run(part);
      let [worst, scale, nonFinite] = [0, 0, 0];
      for (let i = 0; i < cpu.out.length; i++) {
        if (!Number.isFinite(dev.out[i]!)) nonFinite++;
        else worst = Math.max(worst, Math.abs(cpu.out[i]! - dev.out[i]!));
        scale = Math.max(scale, Math.abs(cpu.out[i]!));
      }
      const rel = worst / Math.max(scale, 1e-6);
      // The text encoder computes in float32 either way (fp16 is its weights' storage): float32's tolerance.
      const tol = part === 'vae' && dtype === 'fp16' ? 5e-2 : 1e-2;
      const ok = nonFinite === 0 && rel <= tol;
      // The second run is the step alone (the first made the session).
      const again = await run(part);
      entry[dtype] = { relative: rel, max_abs_diff: worst, largest: scale, non_finite: nonFinite, tolerance: tol, within_tolerance: ok, session_and_run_s: +dev.seconds.toFixed(2), run_s: +again.seconds.toFixed(3) };
      const what = part === 'vae' ? `VAE decode at ${size}²` : 'text encoder (float32 compute)';
      log(`${part} ${dtype}: ${what} on ${deviceName(device)} against the CPU's fp32: ${rel.toExponential(2)} relative, ${nonFinite} not finite, ${ok ? 'within' : 'OUTSIDE'} ${tol}; ${again.seconds.toFixed(3)} s a run`);
      await unloadAll();
    }
    out[part] = entry;
  }
  configurePrecision({ dtype: 'fp32', upcastAttention: false, reason: 'bench' });
  return out;
}

function finish(): void {
  report.finished = new Date().toISOString();
  const text = JSON.stringify(report, null, 2);
  console.log(text);
  if (process.env.OUT) fs.writeFileSync(path.join(process.env.OUT, 'gpu-report.json'), text);
}
