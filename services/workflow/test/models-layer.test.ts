/**
 * The model layer (src/models) against values the reference computed on the
 * same generated checkpoint (test/fixtures/models-reference.json, written by
 * bench/workflow/models-reference.ts), and the safetensors reader against
 * hostile files. No HTTP here: the nodes are tested in models-nodes.test.ts.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ClipTokenizer, tokenizeWithWeights, tokenWeights } from '../src/models/clip-tokenizer.ts';
import { detectCheckpoint } from '../src/models/detect-families.ts';
import { prepareNoise, TorchGenerator } from '../src/models/noise.ts';
import { SUPPORTED_SAMPLERS } from '../src/models/samplers.ts';
import { calculateSigmas, DiscreteSchedule, ksamplerSigmas } from '../src/models/schedules.ts';
import { ModelFileError, SafetensorsFile } from '../src/models/safetensors.ts';
import { ClipModel, configureRuntime, loadCheckpoint, sample, unloadAll, UNetModel, VaeModel, type FloatTensor } from '../src/models/sd1.ts';
import { TINY, writeFixture } from './models-fixture.ts';
import { closeTo, pattern, type Summary } from './models-compare.ts';

const ref = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'models-reference.json'), 'utf8'));

let dir: string;
let ckptPath: string;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-layer-'));
  ckptPath = path.join(dir, 'tiny.safetensors');
  writeFixture(ckptPath, TINY);
});

after(async () => {
  await unloadAll();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('noise, schedules and tokens as the reference computes them', () => {
  test('prepare_noise: torch.randn of a seeded CPU generator (multiples of 16, remainders, small tensors, 64-bit seeds)', () => {
    for (const [key, expected] of Object.entries(ref.noise) as [string, number[]][]) {
      const [seed, dims] = key.split(':');
      const got = prepareNoise(dims!.split(',').map(Number), BigInt(seed!));
      // The fixture's values have 8 significant digits; the values are torch's bit for bit (randn-kernels.test.ts).
      expected.forEach((v, i) => assert.ok(Math.abs(got[i]! - v) < 1e-7, `${key}[${i}]: ${got[i]} vs ${v}`));
    }
    // Successive draws continue one stream; a batch_index list draws and drops the skipped items.
    const g = new TorchGenerator(7);
    const a = g.randn(32);
    const b = g.randn(32);
    const both = new TorchGenerator(7).randn(64);
    assert.notDeepEqual(Array.from(a), Array.from(b));
    assert.deepEqual(Array.from(both.subarray(0, 32)), Array.from(a));
    const per = 4 * 2 * 2;
    const picked = prepareNoise([2, 4, 2, 2], 5, [2, 0]);
    const seq = new TorchGenerator(5);
    const n0 = seq.randn(per);
    seq.randn(per);
    const n2 = seq.randn(per);
    assert.deepEqual(Array.from(picked), [...n2, ...n0]);
  });

  test('sigmas of every scheduler for 1, 2, 3, 10 and 25 steps', () => {
    const s = new DiscreteSchedule();
    for (const [key, expected] of Object.entries(ref.sigmas) as [string, number[]][]) {
      const [name, steps] = key.split(':');
      const got = calculateSigmas(s, name!, Number(steps));
      assert.equal(got.length, expected.length, key);
      expected.forEach((v, i) => assert.ok(Math.abs(got[i]! - v) <= 1e-6 * Math.max(1, v), `${key}[${i}]: ${got[i]} vs ${v}`));
    }
    // dpm_2 takes a step more and drops the penultimate σ; denoise < 1 keeps the last steps + 1 of int(steps / denoise).
    const full = calculateSigmas(s, 'karras', 5);
    assert.deepEqual(Array.from(ksamplerSigmas(s, 'dpm_2', 'karras', 4)), [...full.subarray(0, 4), 0]);
    assert.deepEqual(Array.from(ksamplerSigmas(s, 'euler', 'normal', 3, 0.5)), Array.from(calculateSigmas(s, 'normal', 6).subarray(3)));
    assert.equal(ksamplerSigmas(s, 'euler', 'normal', 3, 0).length, 0);
    assert.throws(() => calculateSigmas(s, 'nope', 3), /invalid scheduler/);
  });

  test('CLIP tokens and weights of the reference tokenizer (punctuation, accents, CJK, emoji, empty, weights, escapes, 2 chunks)', () => {
    for (const [prompt, expected] of Object.entries(ref.tokens) as [string, number[][]][]) {
      const chunks = tokenizeWithWeights(prompt);
      assert.deepEqual(
        chunks.map((c) => c.map((t) => t.token)),
        expected,
        JSON.stringify(prompt),
      );
      const weights = (ref.weights[prompt] as number[][]).flat();
      chunks.flat().forEach((t, i) => assert.ok(Math.abs(t.weight - weights[i]!) < 1e-12, `${JSON.stringify(prompt)} weight ${i}`));
    }
    assert.equal(ClipTokenizer.shared().vocabSize, 49408);
    // Deep nesting parses without recursion up to 500 levels (the reference fails near 1,000); deeper is a clear error.
    const deep = (n: number) => '('.repeat(n) + 'x' + ')'.repeat(n);
    assert.deepEqual(tokenWeights(deep(500)).map(([s]) => s), ['x']);
    assert.throws(() => tokenWeights(deep(50_000)), /nests parentheses 50000 deep/);
    assert.ok(tokenizeWithWeights('(((a:b) ) ) (x:1e400) \u0000\ud800 ((').length >= 1);
  });
});

describe('the tiny SD1.x checkpoint against the reference', () => {
  test('family detection from keys and shapes', async () => {
    const f = await SafetensorsFile.open(ckptPath);
    const d = detectCheckpoint(f);
    assert.equal(d.family, 'sd1');
    assert.equal(d.referenceShaped, false);
    assert.equal(d.unet.modelChannels, 32);
    assert.equal(d.unet.contextDim, 32);
    assert.deepEqual(
      d.unet.inputBlocks.map((b) => `${b.kind}:${b.outChannels}:${b.depth}`),
      ['conv_in:32:0', 'res:32:1', 'down:32:0', 'res:64:1'],
    );
    assert.equal(d.unet.outputBlocks.length, 4);
    assert.equal(d.unet.outputBlocks[1]!.upsample, 'output_blocks.1.2.conv');
    assert.deepEqual(d.clip, { vocabSize: 49408, hiddenSize: 32, layers: 2, heads: 1, maxPositions: 77, intermediateSize: 64 });
    assert.deepEqual(d.vae, { ch: 32, chMult: [1, 1, 1, 1], numResBlocks: 1, zChannels: 4, inChannels: 3, hasEncoder: true, downscale: 8 });
  });

  test('CLIPTextEncode conditioning (weights, two chunks, clip layer -2) and a UNet call', async () => {
    const ck = await loadCheckpoint(ckptPath);
    const clip = new ClipModel(ck);
    for (const [prompt, expected] of Object.entries(ref.cond) as [string, Summary][]) {
      closeTo((await clip.encode(prompt))[0]![0], expected, 1e-5, `cond ${JSON.stringify(prompt)}`);
    }
    closeTo((await clip.withLayer(-2).encode('a photo of a cat'))[0]![0], ref['cond_layer-2'], 1e-5, 'clip layer -2');
    const ctx = (await clip.encode('a photo of a cat'))[0]![0];
    const x = pattern([2, 4, 8, 8]);
    const unet = new UNetModel(ck);
    const half = 4 * 8 * 8;
    const e0 = await unet.eps(x.data.subarray(0, half), [1, 4, 8, 8], 999, ctx);
    const e1 = await unet.eps(x.data.subarray(half), [1, 4, 8, 8], 500, ctx);
    closeTo({ shape: [2, 4, 8, 8], data: Float32Array.from([...e0, ...e1]) }, ref.unet.eps, 1e-5, 'eps');
  });

  test(`KSampler's samplers and schedulers give the reference's latents (${SUPPORTED_SAMPLERS.join(', ')})`, async () => {
    const ck = await loadCheckpoint(ckptPath);
    const clip = new ClipModel(ck);
    const model = new UNetModel(ck);
    const positive = await clip.encode('a photo of a cat');
    const negative = await clip.encode('');
    const seen = new Set<string>();
    for (const [key, expected] of Object.entries(ref.sample) as [string, Summary][]) {
      const [samplerName, scheduler, steps, cfg, denoise, seed] = key.split(':');
      seen.add(samplerName!);
      const latent = Number(denoise) === 1 ? { shape: [1, 4, 8, 8], data: new Float32Array(256) } : pattern([1, 4, 8, 8]);
      const steps_: number[] = [];
      const out = await sample({
        model, positive, negative, latent, samplerName: samplerName!, scheduler: scheduler!,
        steps: Number(steps), cfg: Number(cfg), denoise: Number(denoise), seed: Number(seed),
        onStep: (s) => steps_.push(s.i),
      });
      closeTo(out, expected, 1e-5, key);
      assert.equal(steps_.length, Math.round(Number(steps)), `${key}: one callback per step`);
    }
    // The other samplers are compared in models-samplers.test.ts (their own fixture, with the Brownian-tree noise).
    const more = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'models-samplers-reference.json'), 'utf8'));
    for (const k of Object.keys(more.sample)) seen.add(k.split(':')[0]!);
    for (const s of SUPPORTED_SAMPLERS) assert.ok(seen.has(s), `${s} is compared with the reference`);
    // KSamplerAdvanced: the first steps with leftover noise, then the rest without adding noise.
    const a = await sample({ model, positive, negative, cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 6, seed: 3, latent: { shape: [1, 4, 8, 8], data: new Float32Array(256) }, startStep: 0, lastStep: 3, forceFullDenoise: false });
    closeTo(a, ref.advanced.first, 1e-5, 'advanced first');
    const b = await sample({ model, positive, negative, cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 6, seed: 3, latent: a, disableNoise: true, startStep: 3, lastStep: 10000, forceFullDenoise: true });
    closeTo(b, ref.advanced.second, 1e-5, 'advanced second');
    // SetLatentNoiseMask: a pixel-resolution ramp resized to the latent; ddim fills with noise from seed + 1.
    const ramp = { shape: [1, 1, 64, 64], data: Float32Array.from({ length: 64 * 64 }, (_, i) => (i % 64) / 63) };
    for (const [samplerName, expected] of Object.entries(ref.masked) as [string, Summary][]) {
      const seed = { euler: 21, ddim: 22, euler_ancestral: 23 }[samplerName]!;
      const out = await sample({ model, positive, negative, cfg: 6, samplerName, scheduler: 'karras', steps: 4, denoise: 0.8, seed, latent: pattern([1, 4, 8, 8]), noiseMask: ramp });
      closeTo(out, expected, 1e-5, `masked ${samplerName}`);
    }
    // A start step past the end returns the latent untouched.
    assert.equal(await sample({ model, positive, negative, cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 6, seed: 3, latent: a, startStep: 6 }), a);
  });

  test('VAE decode (SaveImage bytes identical) and encode (centre crop to multiples of 8)', async () => {
    const ck = await loadCheckpoint(ckptPath);
    const vae = new VaeModel(ck);
    const img = await vae.decode(pattern([1, 4, 4, 6], 3));
    closeTo(img, ref.vae_decode, 1e-5, 'decode');
    const bytes = Buffer.from(ref.vae_decode_bytes, 'base64');
    let off = 0;
    img.data.forEach((v, i) => {
      const b = Math.trunc(Math.fround(255 * v));
      if (Math.abs(b - bytes[i]!) > 1) assert.fail(`byte ${i}: ${b} vs ${bytes[i]}`);
      if (b !== bytes[i]) off++;
    });
    assert.ok(off <= bytes.length * 0.001, `${off} of ${bytes.length} bytes differ by one level`);
    closeTo(await vae.encode({ shape: img.shape, data: Float32Array.from(bytes, (b) => b / 255) }), ref.vae_encode, 1e-5, 'encode');
    const odd = { shape: [1, 37, 45, 3], data: Float32Array.from({ length: 37 * 45 * 3 }, (_, i) => ((i * 7919) % 256) / 255) };
    closeTo(await vae.encode(odd), ref.vae_encode_odd, 1e-5, 'encode 37x45');
  });

  test('fp16 and bf16 checkpoints give what their float32 twins give (weights cast to float32 in the graph)', async () => {
    for (const dtype of ['F16', 'BF16'] as const) {
      const half = path.join(dir, `tiny-${dtype}.safetensors`);
      const twin = path.join(dir, `tiny-${dtype}-as-f32.safetensors`);
      writeFixture(half, { ...TINY, dtype });
      writeFixture(twin, { ...TINY, roundAs: dtype });
      const [a, b] = [await loadCheckpoint(half), await loadCheckpoint(twin)];
      assert.equal(a.file.info('first_stage_model.decoder.conv_in.weight').dtype, dtype);
      const ca = (await new ClipModel(a).encode('a photo of a cat'))[0]![0];
      const cb = (await new ClipModel(b).encode('a photo of a cat'))[0]![0];
      ca.data.forEach((v, i) => assert.ok(Math.abs(v - cb.data[i]!) < 1e-5, `${dtype} cond ${i}: ${v} vs ${cb.data[i]}`));
      const ia = await new VaeModel(a).decode(pattern([1, 4, 2, 2]));
      const ib = await new VaeModel(b).decode(pattern([1, 4, 2, 2]));
      assert.deepEqual(ia.shape, [1, 16, 16, 3]);
      ia.data.forEach((v, i) => assert.ok(Math.abs(v - ib.data[i]!) < 1e-5, `${dtype} pixel ${i}`));
    }
  });

  test("half weights are read from one float32 copy the checkpoint's sessions share, removed when it is released; a dead process's copy is swept", async () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'models-f32-'));
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    const stale = path.join(work, `svc-f32-${dead}-0-0.bin`);
    const alive = path.join(work, `svc-f32-${process.ppid}-0-0.bin`);
    fs.writeFileSync(stale, 'x');
    fs.writeFileSync(alive, 'x');
    const own = () => fs.readdirSync(work).filter((n) => n.startsWith(`svc-f32-${process.pid}-`));
    configureRuntime({ workDir: work });
    try {
      const half = path.join(dir, 'tiny-copy-F16.safetensors');
      const twin = path.join(dir, 'tiny-copy-as-f32.safetensors');
      writeFixture(half, { ...TINY, dtype: 'F16' });
      writeFixture(twin, { ...TINY, roundAs: 'F16' });
      const a = await loadCheckpoint(half);
      const ca = (await new ClipModel(a).encode('a photo of a cat'))[0]![0];
      assert.deepEqual(own().length, 1);
      assert.ok(!fs.existsSync(stale), 'the dead process’s copy is removed');
      assert.ok(fs.existsSync(alive), 'a live process’s copy stays');
      const first = fs.statSync(path.join(work, own()[0]!)).size;
      assert.ok(first > 0 && first % 64 === 0, `copy of ${first} bytes`);
      // The UNet's session adds its weights to the same file; removed behind the checkpoint's back (a cleaned
      // temporary folder), the file is written again whole.
      fs.rmSync(path.join(work, own()[0]!));
      const x = pattern([1, 4, 2, 2]);
      const ea = await new UNetModel(a).eps(x.data, x.shape, 500, ca);
      assert.equal(own().length, 1);
      assert.ok(fs.statSync(path.join(work, own()[0]!)).size > first);
      // Widened and transposed in the copy, the numbers are the float32 twin's.
      const b = await loadCheckpoint(twin);
      const cb = (await new ClipModel(b).encode('a photo of a cat'))[0]![0];
      ca.data.forEach((v, i) => assert.ok(Math.abs(v - cb.data[i]!) < 1e-5, `cond ${i}: ${v} vs ${cb.data[i]}`));
      const eb = await new UNetModel(b).eps(x.data, x.shape, 500, cb);
      ea.forEach((v, i) => assert.ok(Math.abs(v - eb[i]!) < 1e-4, `eps ${i}: ${v} vs ${eb[i]}`));
      await unloadAll();
      assert.deepEqual(own(), [], 'released with its checkpoint');
    } finally {
      configureRuntime({});
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
});

describe('hostile files', () => {
  const write = (name: string, bytes: Buffer) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, bytes);
    return p;
  };
  const withHeader = (header: unknown, data = Buffer.alloc(0), declared?: bigint) => {
    const json = Buffer.from(typeof header === 'string' ? header : JSON.stringify(header));
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(declared ?? BigInt(json.length));
    return Buffer.concat([len, json, data]);
  };
  const rejects = async (name: string, bytes: Buffer, re: RegExp) => {
    const p = write(name, bytes);
    await assert.rejects(SafetensorsFile.open(p), (err: Error) => {
      assert.ok(err instanceof ModelFileError, `${name}: ${err}`);
      assert.match(err.message, new RegExp(`^${name.replace('.', '\\.')}: `));
      assert.match(err.message, re);
      return true;
    });
  };

  test('each malformed file is a ModelFileError naming the file and the problem', async () => {
    await rejects('short.safetensors', Buffer.alloc(5), /too short/);
    await rejects('past.safetensors', withHeader({}, Buffer.alloc(0), 1000n), /runs past the end/);
    await rejects('huge.safetensors', withHeader({}, Buffer.alloc(0), 200_000_000n), /exceeds the limit/);
    await rejects('bigint.safetensors', withHeader({}, Buffer.alloc(0), 0xffffffffffffffffn), /exceeds the limit/);
    await rejects('json.safetensors', withHeader('{"a": '), /not valid JSON/);
    await rejects('array.safetensors', withHeader('[1,2]'), /not a JSON object/);
    const badUtf8 = Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]);
    await rejects('utf8.safetensors', Buffer.concat([Buffer.from([7, 0, 0, 0, 0, 0, 0, 0]), badUtf8]), /UTF-8/);
    const t = (extra: object) => ({ w: { dtype: 'F32', shape: [2], data_offsets: [0, 8], ...extra } });
    await rejects('dtype.safetensors', withHeader(t({ dtype: 'Q4' }), Buffer.alloc(8)), /unknown dtype "Q4"/);
    await rejects('shape.safetensors', withHeader(t({ shape: [-1] }), Buffer.alloc(8)), /invalid shape/);
    await rejects('shape2.safetensors', withHeader(t({ shape: [1e300] }), Buffer.alloc(8)), /invalid shape/);
    await rejects('len.safetensors', withHeader(t({ data_offsets: [0, 4] }), Buffer.alloc(8)), /do not hold 8 bytes/);
    await rejects('trunc.safetensors', withHeader(t({}), Buffer.alloc(4)), /run past the end of the data/);
    await rejects('order.safetensors', withHeader(t({ data_offsets: [8, 0] }), Buffer.alloc(8)), /data_offsets/);
    await rejects('overlap.safetensors', withHeader({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } }, Buffer.alloc(12)), /overlap/);
    await rejects('meta.safetensors', withHeader({ __metadata__: { a: 1 } }), /__metadata__/);
    await rejects('proto.safetensors', withHeader('{"__proto__": {"dtype": "F32", "shape": [1], "data_offsets": [0, 3]}}', Buffer.alloc(4)), /do not hold 4 bytes/);
    await assert.rejects(SafetensorsFile.open(path.join(dir, 'missing.safetensors')), /missing\.safetensors: cannot open/);
  });

  test('a file truncated after it was opened is a clear error, not zeros', async () => {
    const p = path.join(dir, 'shrinks.safetensors');
    fs.copyFileSync(ckptPath, p);
    const f = await SafetensorsFile.open(p);
    fs.truncateSync(p, f.dataStart + 16);
    await assert.rejects(f.readFloat32('first_stage_model.decoder.conv_out.weight'), /truncated/);
  });

  test('not SD1.x, pickles and mismatched parts are refused at load, and nothing stays cached', async () => {
    const only = withHeader({ 'model.diffusion_model.other.weight': { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, Buffer.alloc(4));
    await assert.rejects(loadCheckpoint(write('other.safetensors', only)), /no UNet .*not an SD1\.x checkpoint/);
    fs.writeFileSync(path.join(dir, 'old.ckpt'), 'PK\u0003\u0004 pickle');
    await assert.rejects(loadCheckpoint(path.join(dir, 'old.ckpt')), /old\.ckpt: file of 11 bytes is too short for a zip/);
    const mixed = path.join(dir, 'mixed.safetensors');
    writeFixture(mixed, { ...TINY, clip: { ...TINY.clip!, hidden: 64 }, unet: { ...TINY.unet, contextDim: 32 } });
    await assert.rejects(loadCheckpoint(mixed), /text encoder's width 64 does not match the UNet's context width 32/);
    // Keys of SD1.x with a weight of the wrong shape: the session fails, naming the file; a later call tries again.
    const bad = path.join(dir, 'badshape.safetensors');
    writeFixture(bad, TINY);
    const f = await SafetensorsFile.open(bad);
    const key = 'model.diffusion_model.out.2.weight';
    const info = f.info(key);
    const header = JSON.parse(fs.readFileSync(bad).subarray(8, f.dataStart).toString());
    header[key].shape = [info.shape[0], info.shape[1]! / 2, info.shape[2], info.shape[3]! * 2];
    let json = Buffer.from(JSON.stringify(header));
    json = Buffer.concat([json, Buffer.alloc(f.dataStart - 8 - json.length, 0x20)]);
    const bytes = fs.readFileSync(bad);
    json.copy(bytes, 8);
    fs.writeFileSync(bad, bytes);
    const ck = await loadCheckpoint(bad);
    const unet = new UNetModel(ck);
    const ctx = { shape: [1, 77, 32], data: new Float32Array(77 * 32) };
    await assert.rejects(unet.eps(new Float32Array(256), [1, 4, 8, 8], 10, ctx), /^ModelFileError: badshape\.safetensors: its unet weights do not form a valid model/);
    await assert.rejects(unet.eps(new Float32Array(256), [1, 4, 8, 8], 10, ctx), /badshape\.safetensors/);
    // Fixed on disk, the same path loads: the failure was not cached.
    writeFixture(mixed, TINY);
    assert.ok(await loadCheckpoint(mixed));
  });
});
