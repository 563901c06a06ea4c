/**
 * The diffusion model's compute precision (issue 26) on the CPU, where ONNX
 * Runtime runs float16 graphs too: the fp16 UNet's output is within fp16's
 * tolerance of the fp32 one and finite (fp16 and fp32 weight files, attention
 * upcast, a control residual), the flags resolve as the reference's do (fp16 on a
 * GPU by default, fp32 on the CPU, clear errors for flags that exclude each
 * other), and a whole txt2img prompt runs over HTTP with --force-fp16.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { configurePrecision, PrecisionError, resolvePrecision, toHalfBits, type UNetPrecision } from '../src/models/precision.ts';
import { ClipModel, loadCheckpoint, unloadAll, UNetModel } from '../src/models/sd1.ts';
import { startWorkflow } from './helpers.ts';
import { TINY, writeFixture } from './models-fixture.ts';
import { pattern } from './models-compare.ts';
import { SD2_TINY, SDXL_TINY, writeXLFixture } from './models-fixture-xl.ts';
import { defaultWorkflow, run } from './nodes-helpers.ts';

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-precision-'));
});
after(async () => {
  configurePrecision({ dtype: 'fp32', upcastAttention: false, reason: 'test' });
  await unloadAll();
  fs.rmSync(dir, { recursive: true, force: true });
});

const FP32: UNetPrecision = { dtype: 'fp32', upcastAttention: false, reason: 'test' };
const FP16: UNetPrecision = { dtype: 'fp16', upcastAttention: false, reason: 'test' };

test('flags: fp16 on a GPU and fp32 on the CPU by default, the reference\'s overrides, clear errors for conflicts', () => {
  const cpu = { kind: 'cpu' } as const;
  const cuda = { kind: 'cuda', index: 1 } as const;
  const r = (f: Record<string, unknown>, d: Parameters<typeof resolvePrecision>[1] = cpu, env: NodeJS.ProcessEnv = {}) => resolvePrecision(f, d, env);
  // The UNet's part (the VAE's and the text encoders' are models-precision-parts.test.ts's).
  const unet = ({ dtype, upcastAttention, reason }: UNetPrecision) => ({ dtype, upcastAttention, reason });
  assert.deepEqual(unet(r({})), { dtype: 'fp32', upcastAttention: false, reason: 'the default on the CPU' });
  assert.deepEqual(unet(r({}, cuda)), { dtype: 'fp16', upcastAttention: false, reason: 'the default on cuda:1' });
  assert.equal(r({}, { kind: 'webgpu' }).dtype, 'fp16');
  assert.equal(r({ forceFp16: true }).dtype, 'fp16');
  assert.equal(r({ forceFp32: true }, cuda).dtype, 'fp32');
  assert.equal(r({ fp32Unet: true }, cuda).reason, '--fp32-unet');
  // The UNet's own flag wins over --force-*, as in the reference (unet_dtype looks at it first).
  assert.equal(r({ forceFp32: true, fp16Unet: true }).dtype, 'fp16');
  assert.equal(r({ forceFp16: true, fp32Unet: true }).dtype, 'fp32');
  assert.equal(r({}, cpu, { WORKFLOW_UNET_DTYPE: 'fp16' }).reason, 'WORKFLOW_UNET_DTYPE=fp16');
  assert.equal(r({ forceFp16: true, forceUpcastAttention: true }).upcastAttention, true);
  // Upcasting only means something in a float16 graph.
  assert.equal(r({ forceUpcastAttention: true }).upcastAttention, false);
  const bad: Array<[Record<string, unknown>, RegExp, NodeJS.ProcessEnv?]> = [
    [{ forceFp16: true, forceFp32: true }, /--force-fp16 and --force-fp32 cannot be used together/],
    [{ fp16Unet: true, fp32Unet: true }, /--fp16-unet and --fp32-unet cannot be used together/],
    [{ fp16Unet: true }, /--fp16-unet and --fp32-unet cannot be used together/, { WORKFLOW_UNET_DTYPE: 'fp32' }],
    [{ forceUpcastAttention: true, dontUpcastAttention: true }, /--force-upcast-attention and --dont-upcast-attention cannot be used together/],
    [{ bf16Unet: true }, /--bf16-unet is not supported/],
    [{}, /WORKFLOW_UNET_DTYPE must be fp16 or fp32, got "half"/, { WORKFLOW_UNET_DTYPE: 'half' }],
  ];
  for (const [f, re, env] of bad) assert.throws(() => r(f, cpu, env ?? {}), (e: Error) => e instanceof PrecisionError && re.test(e.message), JSON.stringify(f));
  // The half constants: round to nearest even, subnormals, overflow.
  assert.deepEqual([1, -2, 0.1, 65504, 70000, 2 ** -24, 2 ** -26, 0.125].map(toHalfBits), [0x3c00, 0xc000, 0x2e66, 0x7bff, 0x7c00, 0x0001, 0x0000, 0x3000]);
});

/** One UNet call; with `control`, a ControlNet-like residual after the middle block (the graph's float32 control inputs). */
async function eps(file: string, p: UNetPrecision, control = false): Promise<Float32Array> {
  await unloadAll();
  configurePrecision(p);
  const ck = await loadCheckpoint(file);
  const cond = (await new ClipModel(ck).encode('a photo of a cat'))[0]![0];
  const x = pattern([2, 4, 8, 12]);
  const ctx = { ...cond, shape: [2, cond.shape[1]!, cond.shape[2]!], data: Float32Array.from({ length: 2 * cond.data.length }, (_, i) => cond.data[i % cond.data.length]!) };
  if (!control) return new UNetModel(ck).eps(x.data, x.shape, 500, ctx);
  const blocks = ck.detected.unet.inputBlocks;
  const downs = blocks.filter((b) => b.kind === 'down').length;
  const shape = [1, blocks.at(-1)!.outChannels, 8 / 2 ** downs, 12 / 2 ** downs];
  const mid = pattern(shape, 0.5);
  return new UNetModel(ck).eps(x.data, x.shape, 500, ctx, { input: [], middle: [mid], output: [] });
}

/** Largest difference relative to the largest fp32 value; every fp16 value finite. */
function compare(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    assert.ok(Number.isFinite(b[i]!), `value ${i} is ${b[i]}`);
    worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(a[i]!));
  }
  return worst / scale;
}

test('the fp16 UNet is within fp16 tolerance of the fp32 one, finite, from fp16 and fp32 weight files, attention upcast or not', async (t) => {
  for (const dtype of ['F16', 'F32'] as const) {
    const file = path.join(dir, `tiny-${dtype}.safetensors`);
    writeFixture(file, { ...TINY, dtype });
    const ref = await eps(file, FP32);
    const half = await eps(file, FP16);
    const upcast = await eps(file, { ...FP16, upcastAttention: true });
    const [rh, ru] = [compare(ref, half), compare(ref, upcast)];
    t.diagnostic(`${dtype} weights: fp16 ${rh.toExponential(2)}, fp16 with upcast attention ${ru.toExponential(2)} relative to the fp32 output`);
    // float16 keeps 11 significant bits (4.9e-4 relative); a few layers of rounding stay well under 1e-2.
    assert.ok(rh < 1e-2, `${dtype}: fp16 off by ${rh} relative`);
    assert.ok(ru < 1e-2, `${dtype}: fp16 with upcast attention off by ${ru} relative`);
    assert.ok(rh > 0, 'the fp16 graph did compute in float16');
    if (dtype === 'F16') {
      const [c32, c16] = [await eps(file, FP32, true), await eps(file, FP16, true)];
      assert.ok(compare(c32, c16) < 1e-2, `control: fp16 off by ${compare(c32, c16)} relative`);
      assert.ok(compare(ref, c32) > 1e-3, 'the control residual changed the output');
    }
  }
});

test('SD2 (linear projections, 64-channel heads) and SDXL (the adm input y) UNets in fp16 too', async (t) => {
  // SD2_TINY has four levels of 64 channels (two per group): its bottom must keep some pixels, or a group of two
  // nearly equal values normalises float16's rounding into the signal (1.9e-2 off at 8², 2.0e-3 at 32²).
  for (const [name, cfg, side] of [['sd2', SD2_TINY, 32], ['sdxl', SDXL_TINY, 16]] as const) {
    const file = path.join(dir, `${name}.safetensors`);
    writeXLFixture(file, cfg);
    const outs: Float32Array[] = [];
    for (const p of [FP32, FP16]) {
      await unloadAll();
      configurePrecision(p);
      const ck = await loadCheckpoint(file, 'unet');
      const { contextDim: d, admInChannels: adm } = ck.detected.unet;
      const x = pattern([2, 4, side, side]);
      const ctx = { shape: [2, 77, d], data: pattern([2, 77, d], 1).data, y: adm ? pattern([2, adm], 1).data : undefined };
      outs.push(await new UNetModel(ck).eps(x.data, x.shape, 700, ctx));
    }
    const rel = compare(outs[0]!, outs[1]!);
    t.diagnostic(`${name}: fp16 ${rel.toExponential(2)} relative to fp32`);
    assert.ok(rel > 0 && rel < 1e-2, `${name}: fp16 off by ${rel} relative`);
  }
});

test('a txt2img prompt over HTTP with --force-fp16: the image, and /system_stats says float16; a conflict stops the start', async () => {
  await assert.rejects(startWorkflow('sqlite', { forceFp16: true, forceFp32: true }), /--force-fp16 and --force-fp32 cannot be used together/);
  const srv = await startWorkflow('sqlite', { forceFp16: true });
  try {
    const stats = await srv.http.get('/system_stats');
    assert.equal(stats.body.devices[0].unet_dtype, 'float16');
    const ckptDir = path.join(srv.cfg.dataDir, 'models', 'checkpoints');
    fs.mkdirSync(ckptDir, { recursive: true });
    writeFixture(path.join(ckptDir, 'tiny.safetensors'), { ...TINY, dtype: 'F16' });
    const res = await run(srv, defaultWorkflow('tiny.safetensors', 'fp16'));
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    assert.equal(res.outputs['9'].images.length, 1);
  } finally {
    await srv.close();
  }
  const cpu = await startWorkflow('sqlite', {});
  try {
    assert.equal((await cpu.http.get('/system_stats')).body.devices[0].unet_dtype, 'float32');
  } finally {
    await cpu.close();
  }
});
