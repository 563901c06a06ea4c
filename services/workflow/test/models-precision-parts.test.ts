/**
 * Half precision beyond the UNet (issue 26), on the CPU where ONNX Runtime
 * runs float16 graphs too: the VAE (plain, tiled, a VAELoader's TAESD) with
 * --fp16-vae, ControlNets and Control-LoRAs in the diffusion model's float16,
 * each finite and within a relative tolerance of float32; the text encoders'
 * weight storage (--fp16-text-enc on an fp32 file gives exactly the fp16
 * file's output, bf16 and fp8 round further); the flags as the reference's
 * vae_dtype and text_encoder_dtype read them, with clear errors; and a
 * txt2img prompt over HTTP with every part's half flag.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ControlLoraModel, ControlNetModel, loadControl, T2IAdapterModel, type Planar } from '../src/models/controlnet.ts';
import { discreteSchedule } from '../src/models/model-sampling.ts';
import { configurePrecision, PrecisionError, resolvePrecision, resolveTextEncoderPrecision, resolveVaePrecision, type TextEncoderStorage, type UNetPrecision } from '../src/models/precision.ts';
import { ClipModel, loadCheckpoint, unloadAll, VaeModel, type FloatTensor } from '../src/models/sd1.ts';
import { halfToFloat } from '../src/models/safetensors.ts';
import { XLClipModel } from '../src/models/sdxl.ts';
import { TaesdVae } from '../src/models/taesd.ts';
import { decodeTiled } from '../src/models/vae-tiled.ts';
import { startWorkflow } from './helpers.ts';
import { pattern } from './models-compare.ts';
import { CONTROL_BASE, writeControlNet, writeT2IAdapter } from './models-control-fixture.ts';
import { UNION_BASE, writeControlLora, writeUnionControlNet } from './models-control-more-fixture.ts';
import { TINY, writeFixture } from './models-fixture.ts';
import { SDXL_TINY, writeXLFixture } from './models-fixture-xl.ts';
import { taesdTensors, writeTensors } from './models-patches-fixture.ts';
import { defaultWorkflow, run } from './nodes-helpers.ts';

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-precision-parts-'));
});
after(async () => {
  configurePrecision({ dtype: 'fp32', upcastAttention: false, reason: 'test' });
  await unloadAll();
  fs.rmSync(dir, { recursive: true, force: true });
});

const FP32: UNetPrecision = { dtype: 'fp32', upcastAttention: false, reason: 'test' };
const VAE16: UNetPrecision = { ...FP32, vae: { dtype: 'fp16', cpu: false, reason: 'test' } };
const storing = (storage: TextEncoderStorage): UNetPrecision => ({ ...FP32, textEncoder: { storage, reason: 'test' } });

/** Largest difference relative to the largest fp32 value; every value of `b` finite. */
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

/** An F32 copy of an F16 file, each F16 value nudged by 2⁻¹³ of itself: under half a float16 step, so rounding to float16 restores the file. */
function writeFloat32Twin(from: string, to: string): void {
  const buf = fs.readFileSync(from);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString()) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const tensors: Record<string, { shape: number[]; data: Float32Array }> = {};
  for (const [k, v] of Object.entries(header)) {
    if (k === '__metadata__') continue;
    const [b, e] = v.data_offsets;
    const at = 8 + n + b;
    const data = v.dtype === 'F16' ? new Float32Array((e - b) / 2) : new Float32Array(buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + 8 + n + e));
    if (v.dtype === 'F16') for (let i = 0; i < data.length; i++) data[i] = halfToFloat(buf.readUInt16LE(at + 2 * i)) * (1 + 2 ** -13);
    tensors[k] = { shape: v.shape, data };
  }
  writeTensors(to, tensors);
}

/** `fn` under each precision, every model unloaded before (sessions are made in the precision configured then). */
async function under<T>(ps: UNetPrecision[], fn: () => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (const p of ps) {
    await unloadAll();
    configurePrecision(p);
    out.push(await fn());
  }
  return out;
}

test('flags: the reference\'s vae_dtype and text_encoder_dtype, with clear errors', () => {
  const cpu = { kind: 'cpu' } as const;
  const cuda = { kind: 'cuda', index: 0 } as const;
  // An SD VAE's working dtypes are bf16 and fp32: float16 only when asked, --force-fp16 does not reach it.
  assert.equal(resolveVaePrecision({}, cpu).dtype, 'fp32');
  assert.match(resolveVaePrecision({}, cuda).reason, /cuda:0 \(the reference would pick bf16/);
  assert.equal(resolvePrecision({ forceFp16: true }, cuda, {}).vae!.dtype, 'fp32');
  assert.deepEqual(resolveVaePrecision({ fp16Vae: true }, cpu), { dtype: 'fp16', cpu: false, reason: '--fp16-vae' });
  assert.deepEqual(resolveVaePrecision({ fp16Vae: true, cpuVae: true }, cuda), { dtype: 'fp16', cpu: true, reason: '--fp16-vae' });
  assert.equal(resolveVaePrecision({ cpuVae: true }, cuda).reason, 'the default on the CPU');
  assert.equal(resolveVaePrecision({ fp32Vae: true }, cuda).dtype, 'fp32');
  // Text encoders: the storage named by the flag; the file's own values by default.
  assert.equal(resolveTextEncoderPrecision({}).storage, 'fp32');
  for (const [flag, storage] of [['fp16TextEnc', 'fp16'], ['bf16TextEnc', 'bf16'], ['fp8_e4m3fnTextEnc', 'fp8_e4m3fn'], ['fp8_e5m2TextEnc', 'fp8_e5m2'], ['fp32TextEnc', 'fp32']] as const) {
    assert.equal(resolveTextEncoderPrecision({ [flag]: true }).storage, storage);
  }
  const p = resolvePrecision({ forceFp16: true, fp16Vae: true, fp16TextEnc: true }, cpu, {});
  assert.deepEqual([p.dtype, p.vae!.dtype, p.textEncoder!.storage], ['fp16', 'fp16', 'fp16']);
  const bad: Array<[Record<string, unknown>, RegExp]> = [
    [{ fp16Vae: true, fp32Vae: true }, /--fp16-vae and --fp32-vae cannot be used together/],
    [{ fp16Vae: true, bf16Vae: true }, /--fp16-vae and --bf16-vae cannot be used together/],
    [{ bf16Vae: true }, /--bf16-vae is not supported/],
    [{ fp16TextEnc: true, fp32TextEnc: true }, /--fp16-text-enc and --fp32-text-enc cannot be used together/],
    [{ fp8_e4m3fnTextEnc: true, bf16TextEnc: true }, /--fp8_e4m3fn-text-enc and --bf16-text-enc cannot be used together/],
  ];
  for (const [f, re] of bad) assert.throws(() => resolvePrecision(f, cpu, {}), (e: Error) => e instanceof PrecisionError && re.test(e.message), JSON.stringify(f));
});

test('the VAE with --fp16-vae: decode, encode, tiled decode and a TAESD within fp16 tolerance of fp32; the previews\' TAESD stays fp32', async (t) => {
  const file = path.join(dir, 'tiny.safetensors');
  writeFixture(file, TINY);
  const latent = pattern([1, 4, 8, 12], 1);
  const pixels: FloatTensor = { shape: [1, 3, 32, 48], data: pattern([1, 3, 32, 48], 0.8).data };
  const [d32, d16] = await under([FP32, VAE16], async () => {
    const vae = new VaeModel(await loadCheckpoint(file));
    const progress = { step: () => {}, checkInterrupt: () => {} };
    return [(await vae.decodeRaw(latent)).data, (await vae.encodeRaw(pixels)).data, (await decodeTiled(vae, latent, 8, 2, progress)).data];
  });
  const [dec, enc, tiled] = [0, 1, 2].map((i) => compare(d32![i]!, d16![i]!));
  t.diagnostic(`VAE fp16 vs fp32: decode ${dec.toExponential(2)}, encode ${enc.toExponential(2)}, tiled decode ${tiled.toExponential(2)} relative`);
  for (const [name, r] of [['decode', dec], ['encode', enc], ['tiled decode', tiled]] as const) assert.ok(r > 0 && r < 1e-2, `${name}: fp16 off by ${r} relative`);

  // Overflow: no float32 retry and no error, as the reference (a NaN pixel stays NaN; an 8-bit image stores it as 0, black,
  // as the reference's numpy cast does). ONNX Runtime's CPU runs float16 convolutions in float32 between the casts it
  // removes, so a latent past float16's range does not overflow here; on a GPU it can (gpu.ts --parts counts it).
  const huge: FloatTensor = { shape: [1, 4, 8, 12], data: new Float32Array(4 * 8 * 12).fill(7e4) };
  const [o16] = await under([VAE16], async () => (await new VaeModel(await loadCheckpoint(file)).decode(huge)).data);
  assert.ok(o16!.every((v) => Number.isNaN(v) || (v >= 0 && v <= 1)));

  const taesd = { dec: path.join(dir, 'taesd_decoder.safetensors'), enc: path.join(dir, 'taesd_encoder.safetensors') };
  writeTensors(taesd.dec, taesdTensors('decoder'));
  writeTensors(taesd.enc, taesdTensors('encoder'));
  const [t32, t16] = await under([FP32, VAE16], async () => {
    const [dck, eck] = [await loadCheckpoint(taesd.dec, 'taesd'), await loadCheckpoint(taesd.enc, 'taesd')];
    const [vae, preview] = [new TaesdVae(dck, eck, 0.18215, 0), new TaesdVae(dck, null, 1, 0, false)];
    return [(await vae.decodeRaw(latent)).data, (await vae.encodeRaw(pixels)).data, (await preview.decodeRaw(latent)).data];
  });
  const [td, te] = [compare(t32![0]!, t16![0]!), compare(t32![1]!, t16![1]!)];
  t.diagnostic(`TAESD fp16 vs fp32: decode ${td.toExponential(2)}, encode ${te.toExponential(2)} relative`);
  assert.ok(td > 0 && td < 1e-2 && te > 0 && te < 1e-2, `TAESD: ${td}, ${te}`);
  assert.deepEqual(t16![2], t32![2], 'the previews\' TAESD is float32 whatever --fp16-vae says (latent_preview loads its own)');
});

test('text encoders: float32 compute from weights stored as --fp16/--bf16/--fp8_*-text-enc say', async (t) => {
  const [f16, f32] = [path.join(dir, 'tiny-f16.safetensors'), path.join(dir, 'tiny-f32.safetensors')];
  writeFixture(f16, { ...TINY, dtype: 'F16' });
  writeFloat32Twin(f16, f32);
  const encode = (file: string) => async () => (await new ClipModel(await loadCheckpoint(file)).encode('a photo of a cat'))[0]![0].data;
  const [fromHalfFile, asStored] = [(await under([FP32], encode(f16)))[0]!, (await under([FP32], encode(f32)))[0]!];
  const [s16, sbf16, se4, se5] = await under(['fp16', 'bf16', 'fp8_e4m3fn', 'fp8_e5m2'].map((s) => storing(s as TextEncoderStorage)), encode(f32));
  // The fp32 twin's values round back to the fp16 file's: --fp16-text-enc gives its conditioning (within float32
  // rounding: ONNX Runtime fuses the two graphs' weight reads differently), the file's own values do not.
  const [same, apart] = [compare(fromHalfFile, s16!), compare(fromHalfFile, asStored)];
  t.diagnostic(`CLIP-L: --fp16-text-enc on the fp32 twin against the fp16 file ${same.toExponential(2)}, the twin's own values ${apart.toExponential(2)} relative`);
  assert.ok(same < 1e-6 && same < apart / 10, `--fp16-text-enc on the fp32 twin is the fp16 file's conditioning: ${same} (unrounded: ${apart})`);
  const rel = [sbf16, se4, se5].map((o) => compare(fromHalfFile, o!));
  t.diagnostic(`CLIP-L storage against the fp16 file: bf16 ${rel[0]!.toExponential(2)}, fp8_e4m3fn ${rel[1]!.toExponential(2)}, fp8_e5m2 ${rel[2]!.toExponential(2)} relative`);
  assert.ok(rel[0]! > apart && rel[0]! < 5e-2, `bf16 storage: ${rel[0]}`);
  assert.ok(rel[1]! > rel[0]! && rel[2]! > rel[0]! && rel[1]! < 0.5 && rel[2]! < 0.5, `fp8 storage rounds further: ${rel[1]}, ${rel[2]}`);
  // An fp16 file's weights are already float16: --fp16-text-enc leaves them.
  const [h16] = await under([storing('fp16')], encode(f16));
  assert.deepEqual(h16, fromHalfFile, 'an fp16 file\'s weights are not cast twice');

  // SDXL's two encoders (CLIP-L and OpenCLIP-G, the pooled output too) through the same storage.
  const xl = path.join(dir, 'sdxl.safetensors');
  writeXLFixture(xl, SDXL_TINY);
  const encodeXl = async () => {
    const [[c, o]] = (await new XLClipModel(await loadCheckpoint(xl)).encode('a photo of a cat')) as unknown as [[FloatTensor, { pooled_output: FloatTensor }]];
    return [c.data, o.pooled_output.data];
  };
  const [x32, x16] = await under([FP32, storing('fp16')], encodeXl);
  const [xr, xp] = [compare(x32![0]!, x16![0]!), compare(x32![1]!, x16![1]!)];
  t.diagnostic(`SDXL encoders fp16 storage: hidden ${xr.toExponential(2)}, pooled ${xp.toExponential(2)} relative`);
  assert.ok(xr > 0 && xr < 1e-2 && xp > 0 && xp < 1e-2, `SDXL: ${xr}, ${xp}`);
});

test('ControlNets and Control-LoRAs compute in the diffusion model\'s float16; a T2I adapter stays float32', async (t) => {
  const files = { base: path.join(dir, 'cbase.safetensors'), cn: path.join(dir, 'cn.safetensors'), lora: path.join(dir, 'clora.safetensors'), t2i: path.join(dir, 't2i.safetensors'), union: path.join(dir, 'union.safetensors') };
  writeFixture(files.base, CONTROL_BASE);
  writeUnionControlNet(files.union, UNION_BASE);
  writeControlNet(files.cn, CONTROL_BASE);
  writeControlLora(files.lora, CONTROL_BASE);
  writeT2IAdapter(files.t2i, CONTROL_BASE);
  const hint: Planar = { shape: [1, 3, 64, 64], data: pattern([1, 3, 64, 64], 0.5).data.map((v) => v + 0.5) };
  const FP16: UNetPrecision = { ...FP32, dtype: 'fp16' };
  const outs = await under([FP32, FP16], async () => {
    const model = await loadCheckpoint(files.base);
    const cond = (await new ClipModel(model).encode('a house'))[0]![0];
    const x = pattern([2, 4, 8, 8]);
    const call = { x: x.data, shape: x.shape, sigma: 1, timestep: 700, context: { shape: [2, cond.shape[1]!, cond.shape[2]!], data: new Float32Array([...cond.data, ...cond.data]) }, batched: 1, schedule: discreteSchedule(), model };
    const [cn, lora, t2i, union] = [await loadControl(files.cn), await loadControl(files.lora), await loadControl(files.t2i), await loadControl(files.union)];
    assert.ok(cn instanceof ControlNetModel && lora instanceof ControlLoraModel && t2i instanceof T2IAdapterModel && union instanceof ControlNetModel);
    const flat = (o: { output: Planar[]; middle: Planar[] }) => Float32Array.from([...o.output, ...o.middle].flatMap((p) => [...p.data]));
    const feats = await t2i.forward(hint);
    // A union ControlNet with a type set: its control-type embedding and the hint features' merge in float16 too.
    const typed = flat(await union.withControlType([3]).forward(call, hint));
    return [flat(await cn.forward(call, hint)), flat(await lora.forward(call, hint)), Float32Array.from(feats.input.flatMap((p) => (p ? [...p.data] : []))), typed];
  });
  const [cn, lora, union] = [compare(outs[0]![0]!, outs[1]![0]!), compare(outs[0]![1]!, outs[1]![1]!), compare(outs[0]![3]!, outs[1]![3]!)];
  t.diagnostic(`fp16 vs fp32: ControlNet ${cn.toExponential(2)}, Control-LoRA ${lora.toExponential(2)}, union ControlNet ${union.toExponential(2)} relative`);
  assert.ok(union > 0 && union < 1e-2, `union ControlNet: ${union}`);
  assert.ok(cn > 0 && cn < 1e-2, `ControlNet: ${cn}`);
  assert.ok(lora > 0 && lora < 1e-2, `Control-LoRA: ${lora}`);
  assert.deepEqual(outs[1]![2], outs[0]![2], 'the T2I adapter runs in the sampler\'s float32');
});

test('a txt2img prompt over HTTP with --force-fp16 --fp16-vae --fp16-text-enc; /system_stats names each dtype; conflicts stop the start', async () => {
  await assert.rejects(startWorkflow('sqlite', { fp16Vae: true, fp32Vae: true }), /--fp16-vae and --fp32-vae cannot be used together/);
  await assert.rejects(startWorkflow('sqlite', { bf16Vae: true }), /--bf16-vae is not supported/);
  const srv = await startWorkflow('sqlite', { forceFp16: true, fp16Vae: true, fp16TextEnc: true });
  try {
    const dev = (await srv.http.get('/system_stats')).body.devices[0];
    assert.deepEqual([dev.unet_dtype, dev.vae_dtype, dev.text_encoder_dtype], ['float16', 'float16', 'float16']);
    const ckptDir = path.join(srv.cfg.dataDir, 'models', 'checkpoints');
    fs.mkdirSync(ckptDir, { recursive: true });
    writeFixture(path.join(ckptDir, 'tiny.safetensors'), { ...TINY, dtype: 'F32' });
    const res = await run(srv, defaultWorkflow('tiny.safetensors', 'half'));
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    assert.equal(res.outputs['9'].images.length, 1);
  } finally {
    await srv.close();
  }
  const cpu = await startWorkflow('sqlite', {});
  try {
    const dev = (await cpu.http.get('/system_stats')).body.devices[0];
    assert.deepEqual([dev.unet_dtype, dev.vae_dtype, dev.text_encoder_dtype], ['float32', 'float32', 'float32']);
  } finally {
    await cpu.close();
  }
});
