/**
 * SD2.x (ε and v-prediction), SDXL and the SDXL refiner in the model layer,
 * against values the reference computed on the same generated checkpoints
 * (test/fixtures/models-reference-xl.json, written by
 * bench/workflow/models-reference-xl.ts): detection, text encoders
 * (OpenCLIP-H/G, CLIP-L, penultimate layer, pooled output, weights),
 * CLIPTextEncodeSDXL(Refiner)'s conditioning, SDXL's adm vector, UNet outputs,
 * sampling with ModelSamplingDiscrete (eps, v, lcm, x0, zsnr) and RescaleCFG,
 * img2img and a refiner pass; and hostile variants of these files.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { detectCheckpoint } from '../src/models/detect-families.ts';
import { encodeAdm, ModelSampling, rescaleCfg } from '../src/models/model-sampling.ts';
import { calculateSigmas } from '../src/models/schedules.ts';
import { SafetensorsFile } from '../src/models/safetensors.ts';
import { loadCheckpoint, sample, unloadAll, UNetModel, VaeModel, type FloatTensor } from '../src/models/sd1.ts';
import { inpaintPrepare } from '../src/nodes/sd/inpaint-nodes.ts';
import { loadDualClip, XLClipModel } from '../src/models/sdxl.ts';
import { REFINER_TINY, SD2_TINY, SDXL_TINY, writeSdxlTextEncoders, writeTensors, writeXLFixture, type XLFixtureConfig } from './models-fixture-xl.ts';
import { closeTo, pattern, type Summary } from './models-compare.ts';

const ref = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'models-reference-xl.json'), 'utf8'));

/**
 * Sampled latents: these random tiny UNets amplify float32 rounding at cfg 6 (a 1e-6 relative change of the
 * conditioning moves the 4-step SD2 v result by 4e-4 of its largest value), so four steps agree with the
 * reference to ~1e-3 of the largest value while the single UNet calls agree to 1e-5. A wrong formula shows
 * as differences of order 1 (e.g. 9.5 on the first step of v sampled as ε).
 */
const SAMPLE_TOL = 2e-3;

const zeros = (shape: number[]): FloatTensor => ({ shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) });

let dir: string;
const files: Record<string, string> = {};

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-xl-'));
  const write = (name: string, cfg: XLFixtureConfig) => {
    files[name] = path.join(dir, `${name}.safetensors`);
    writeXLFixture(files[name]!, cfg);
  };
  write('sd2eps', SD2_TINY);
  write('sd2v', { ...SD2_TINY, vpredSpread: true });
  write('sdxl', SDXL_TINY);
  write('refiner', REFINER_TINY);
});

after(async () => {
  await unloadAll();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The reference's direct diffusion_model call: batch item 0 at t=999, item 1 at t=500, one context. */
async function directUnet(model: UNetModel, context: FloatTensor & { y?: Float32Array }): Promise<FloatTensor> {
  const x = pattern([2, 4, 8, 8]);
  const half = x.data.length / 2;
  const e0 = await model.eps(x.data.slice(0, half), [1, 4, 8, 8], 999, context);
  const e1 = await model.eps(x.data.slice(half), [1, 4, 8, 8], 500, context);
  return { shape: [2, 4, 8, 8], data: Float32Array.from([...e0, ...e1]) };
}

describe('SD2.x: OpenCLIP-H, ε and v-prediction, ModelSamplingDiscrete, RescaleCFG', () => {
  test('detection: family, widths, 64-channel heads, and ε or v by the probe bias as the reference decides', async () => {
    const eps = await loadCheckpoint(files.sd2eps!);
    const v = await loadCheckpoint(files.sd2v!);
    assert.equal(eps.detected.family, 'sd2');
    assert.equal(eps.detected.unet.linearProjection, true);
    assert.equal(eps.detected.unet.headChannels, 64);
    assert.equal(eps.detected.textEncoders![0]!.name, 'h');
    assert.equal(eps.detected.textEncoders![0]!.layout, 'openclip');
    assert.equal(eps.detected.textEncoders![0]!.projection, 64);
    assert.equal(ref.sd2.eps.model_type, 'EPS');
    assert.equal(ref.sd2.v.model_type, 'V_PREDICTION');
    assert.equal(eps.detected.modelType, 'eps');
    assert.equal(v.detected.modelType, 'v_prediction');
    assert.equal(new UNetModel(v).sampling.kind, 'v_prediction');
  });

  test('CLIPTextEncode: penultimate layer, normed, pooled output, weights; CLIPSetLastLayer -1', async () => {
    const clip = new XLClipModel(await loadCheckpoint(files.sd2eps!));
    for (const [prompt, expected] of Object.entries(ref.sd2.eps.cond) as [string, { cond: Summary; pooled: Summary }][]) {
      const [[cond, opts]] = (await clip.encode(prompt)) as [[FloatTensor, { pooled_output: FloatTensor }]];
      closeTo(cond, expected.cond, 1e-5, `cond ${JSON.stringify(prompt)}`);
      closeTo(opts.pooled_output, expected.pooled, 1e-5, `pooled ${JSON.stringify(prompt)}`);
    }
    const [[cond, opts]] = (await clip.withLayer(-1).encode('a photo of a cat')) as [[FloatTensor, { pooled_output: FloatTensor }]];
    closeTo(cond, ref.sd2.eps['cond_layer-1'].cond, 1e-5, 'layer -1');
    closeTo(opts.pooled_output, ref.sd2.eps['cond_layer-1'].pooled, 1e-5, 'layer -1 pooled');
  });

  test('UNet output and sampling: v-prediction checkpoint, ε checkpoint, and ModelSamplingDiscrete switching eps/v/lcm/x0/zsnr', async () => {
    for (const key of ['eps', 'v'] as const) {
      const ck = await loadCheckpoint(key === 'eps' ? files.sd2eps! : files.sd2v!);
      const clip = new XLClipModel(ck);
      const model = new UNetModel(ck);
      const positive = await clip.encode('a photo of a cat');
      const negative = await clip.encode('');
      closeTo(await directUnet(model, positive[0]![0]), ref.sd2[key].unet, 1e-4, `${key} unet`);
      const latent = zeros([1, 4, 8, 8]);
      const base = { positive, negative, cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 4, latent };
      closeTo(await sample({ ...base, model, seed: 11 }), ref.sd2[key].sample, SAMPLE_TOL, `${key} sample`);
      if (key === 'eps') {
        for (const kind of ['v_prediction', 'lcm', 'x0'] as const) {
          const m = model.clone({ sampling: ModelSampling.discrete(kind) });
          const lcm = kind === 'lcm';
          const out = await sample({ ...base, model: m, seed: 12, samplerName: lcm ? 'lcm' : 'euler', scheduler: lcm ? 'sgm_uniform' : 'normal', cfg: lcm ? 1.5 : kind === 'x0' ? 1 : 6 });
          closeTo(out, ref.sd2.eps[`sample_${kind}`], SAMPLE_TOL, `ModelSamplingDiscrete ${kind}`);
        }
        // The node patches a clone: the loaded model keeps its own sampling.
        assert.equal(model.sampling.kind, 'eps');
        const z = ModelSampling.discrete('v_prediction', true);
        for (const [s, expected] of Object.entries(ref.sd2.eps.zsnr_sigmas) as [string, number[]][]) {
          const got = calculateSigmas(z.schedule, s, 6);
          expected.forEach((e, i) => assert.ok(Math.abs(got[i]! - e) <= 1e-5 * Math.max(1, e), `zsnr ${s}[${i}]: ${got[i]} vs ${e}`));
        }
        const l = ModelSampling.discrete('lcm');
        for (const [s, expected] of Object.entries(ref.sd2.eps.lcm_sigmas) as [string, number[]][]) {
          const got = calculateSigmas(l.schedule, s, 4);
          expected.forEach((e, i) => assert.ok(Math.abs(got[i]! - e) <= 1e-5 * Math.max(1, e), `lcm ${s}[${i}]: ${got[i]} vs ${e}`));
        }
        // Zero terminal SNR puts σ_max near 4,500: the first step cancels two latents of that size (float32 ulp 5e-4 there).
        closeTo(await sample({ ...base, model: model.clone({ sampling: z }), seed: 13 }), ref.sd2.eps.sample_vzsnr, SAMPLE_TOL, 'v + zsnr');
      } else {
        const rc = model.clone({ cfgFunction: (c, u, x, s, cfg, b) => rescaleCfg(0.7, c, u, x, s, cfg, b) });
        // One guided call (the UNet agrees to ~3e-5, times cfg 7 and 1/0.18215) and four steps at cfg 7.
        const one = await sample({ ...base, model: rc, seed: 14, cfg: 7, steps: 1 });
        closeTo(one, ref.sd2.v.sample_rescale_1, SAMPLE_TOL, 'RescaleCFG, one step');
        closeTo(await sample({ ...base, model, seed: 14, cfg: 7, steps: 1 }), ref.sd2.v.sample_1, SAMPLE_TOL, 'plain CFG, one step');
        // The CFG function itself, on fixed inputs, as the reference's patched sampler_cfg_function computes it.
        const pat = (scale: number) => pattern([2, 4, 4, 4], scale).data;
        const xo = pat(3);
        const cp = pat(1).map((v) => v * 0.5 + 0.1);
        const up = new Float32Array(128);
        const src = pat(2);
        for (let i = 0; i < 128; i++) up[i] = src[i - (i % 4) + 3 - (i % 4)]!;
        for (const sg of [14.614642, 0.5]) {
          const got = rescaleCfg(0.7, cp, up, xo, Math.fround(sg), 7, 2);
          closeTo({ shape: [2, 4, 4, 4], data: got }, ref.sd2.v[`rescale_fn_${sg}`], 1e-6, `rescale_cfg σ=${sg}`);
        }
        closeTo(await sample({ ...base, model: rc, seed: 14, cfg: 7 }), ref.sd2.v.sample_rescale, 1e-2, 'RescaleCFG, four steps');
        closeTo(await sample({ ...base, model, seed: 15, steps: 5, denoise: 0.6, latent: pattern([1, 4, 8, 8]) }), ref.sd2.v.sample_img2img, SAMPLE_TOL, 'img2img denoise 0.6');
      }
    }
  });
});

describe('SDXL base and refiner: CLIP-L + OpenCLIP-G, pooled output, adm size/crop/aesthetic conditioning', () => {
  test('detection: sdxl and sdxl_refiner from the text encoders and the adm width', async () => {
    const xl = await loadCheckpoint(files.sdxl!);
    const rf = await loadCheckpoint(files.refiner!);
    assert.equal(xl.detected.family, 'sdxl');
    assert.deepEqual(
      xl.detected.textEncoders!.map((t) => [t.name, t.layout]),
      [
        ['l', 'hf'],
        ['g', 'openclip'],
      ],
    );
    assert.equal(xl.detected.unet.admInChannels, 128 + 6 * 256);
    assert.equal(rf.detected.family, 'sdxl_refiner');
    assert.equal(rf.detected.unet.admInChannels, 128 + 5 * 256);
    assert.equal(new UNetModel(xl).latentFormat.scaleFactor, 0.13025);
    assert.equal(ref.sdxl.model_type, 'EPS');
  });

  test('CLIPTextEncode and CLIPTextEncodeSDXL: [L | G] penultimate, not normed; G pooled; chunks padded to the longer text', async () => {
    const clip = new XLClipModel(await loadCheckpoint(files.sdxl!));
    for (const [prompt, expected] of Object.entries(ref.sdxl.cond) as [string, { cond: Summary; pooled: Summary }][]) {
      const [[cond, opts]] = (await clip.encode(prompt)) as [[FloatTensor, { pooled_output: FloatTensor }]];
      closeTo(cond, expected.cond, 1e-5, `cond ${JSON.stringify(prompt)}`);
      closeTo(opts.pooled_output, expected.pooled, 1e-5, `pooled ${JSON.stringify(prompt)}`);
    }
    const extra = { width: 1024, height: 768, crop_w: 16, crop_h: 32, target_width: 1024, target_height: 1024 };
    const [[cond, opts]] = (await clip.encodeSDXL('a photo of a cat, '.repeat(20), 'a dog', extra)) as [[FloatTensor, Record<string, unknown> & { pooled_output: FloatTensor }]];
    closeTo(cond, ref.sdxl.cond_sdxl.cond, 1e-5, 'CLIPTextEncodeSDXL cond');
    closeTo(opts.pooled_output, ref.sdxl.cond_sdxl.pooled, 1e-5, 'CLIPTextEncodeSDXL pooled');
    const { pooled_output: _p, ...rest } = opts;
    assert.deepEqual(rest, ref.sdxl.cond_sdxl_opts);
    // encode_adm with the node's sizes, and with the defaults the sampler gives (latent × 8).
    const adm = encodeAdm('sdxl', opts, [1, 4, 96, 128], 'positive', 128 + 1536);
    closeTo({ shape: [1, adm.length], data: adm }, ref.sdxl.adm, 1e-4, 'adm');
    const adm2 = encodeAdm('sdxl', { pooled_output: opts.pooled_output }, [1, 4, 6, 8], 'positive', 128 + 1536);
    closeTo({ shape: [1, adm2.length], data: adm2 }, ref.sdxl.adm_default, 1e-4, 'adm defaults');
  });

  test('UNet with y, sampling, and a CLIPTextEncodeSDXL workflow latent (euler_ancestral, karras)', async () => {
    const ck = await loadCheckpoint(files.sdxl!);
    const clip = new XLClipModel(ck);
    const model = new UNetModel(ck);
    const positive = await clip.encode('a photo of a cat');
    const negative = await clip.encode('');
    const [ctx, opts] = model.withAdm(positive, [1, 4, 8, 8], 'positive')[0]!;
    closeTo(await directUnet(model, ctx as FloatTensor & { y: Float32Array }), ref.sdxl.unet, 1e-4, 'unet');
    void opts;
    closeTo(await sample({ model, positive, negative, cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 4, seed: 21, latent: zeros([1, 4, 8, 8]) }), ref.sdxl.sample, SAMPLE_TOL, 'sample');
    const size = { width: 512, height: 512, crop_w: 0, crop_h: 0, target_width: 512, target_height: 512 };
    const pos = await clip.encodeSDXL('a castle', 'a castle, oil', size);
    const neg = await clip.encodeSDXL('blurry', 'blurry', size);
    const lat = await sample({ model, positive: pos, negative: neg, cfg: 7, samplerName: 'euler_ancestral', scheduler: 'karras', steps: 5, seed: 22, latent: zeros([1, 4, 6, 8]) });
    closeTo(lat, ref.sdxl.workflow.latent, SAMPLE_TOL, 'workflow latent');
  });

  test('refiner: CLIPTextEncodeSDXLRefiner (aesthetic score), adm, a KSamplerAdvanced second half and plain CLIPTextEncode', async () => {
    const ck = await loadCheckpoint(files.refiner!);
    const clip = new XLClipModel(ck);
    const model = new UNetModel(ck);
    const pos = await clip.encodeTokensXL(clip.tokenize('a castle'), { aesthetic_score: 6, width: 1024, height: 1024 });
    const neg = await clip.encodeTokensXL(clip.tokenize('blurry'), { aesthetic_score: 2.5, width: 1024, height: 1024 });
    closeTo(pos[0]![0], ref.refiner.cond.cond, 1e-5, 'cond');
    const pooled = pos[0]![1].pooled_output as FloatTensor;
    closeTo(pooled, ref.refiner.cond.pooled, 1e-5, 'pooled');
    const adm = encodeAdm('sdxl_refiner', pos[0]![1], [1, 4, 128, 128], 'positive', 128 + 1280);
    closeTo({ shape: [1, adm.length], data: adm }, ref.refiner.adm, 1e-4, 'adm');
    const admNeg = encodeAdm('sdxl_refiner', { pooled_output: pooled }, [1, 4, 8, 8], 'negative', 128 + 1280);
    closeTo({ shape: [1, admNeg.length], data: admNeg }, ref.refiner.adm_negative_default, 1e-4, 'adm negative default (2.5)');
    const start = pattern([1, 4, 8, 8], 2.0);
    const second = await sample({ model, positive: pos, negative: neg, cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 5, seed: 31, latent: start, disableNoise: true, startStep: 3, lastStep: 10000, forceFullDenoise: true });
    closeTo(second, ref.refiner.sample, SAMPLE_TOL, 'refiner second half');
    const plain = await sample({ model, positive: await clip.encode('a castle'), negative: await clip.encode(''), cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 4, seed: 32, latent: zeros([1, 4, 8, 8]) });
    closeTo(plain, ref.refiner.sample_plain, SAMPLE_TOL, 'refiner plain');
  });

  test('an SD1.x-width conditioning or one without pooled_output on SDXL is a clear error', async () => {
    const ck = await loadCheckpoint(files.sdxl!);
    const model = new UNetModel(ck);
    const clip = new XLClipModel(ck);
    const [[t]] = await clip.encode('x');
    await assert.rejects(
      sample({ model, positive: [[t, {}]], negative: [[t, {}]], cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 1, seed: 1, latent: zeros([1, 4, 8, 8]) }),
      /no pooled_output/,
    );
    const narrow = { shape: [1, 77, 64], data: new Float32Array(77 * 64) };
    await assert.rejects(
      sample({ model, positive: [[narrow, { pooled_output: { shape: [1, 128], data: new Float32Array(128) } }]], negative: [[t, { pooled_output: { shape: [1, 128], data: new Float32Array(128) } }]], cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 1, seed: 1, latent: zeros([1, 4, 8, 8]) }),
      /width 64/,
    );
  });
});

describe('hostile SD2/SDXL files', () => {
  /** Rewrites a fixture's header through `edit` (the data stays). */
  function variant(src: string, name: string, edit: (h: Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>) => void): string {
    const buf = fs.readFileSync(src);
    const n = Number(buf.readBigUInt64LE(0));
    const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
    edit(header);
    let json = Buffer.from(JSON.stringify(header));
    json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.length));
    const out = path.join(dir, name);
    fs.writeFileSync(out, Buffer.concat([len, json, buf.subarray(8 + n)]));
    return out;
  }

  test('each is a ModelFileError naming the file and the problem', async () => {
    const cases: [string, (h: Record<string, any>) => void, RegExp][] = [
      ['no-g.safetensors', (h) => delete h['conditioner.embedders.1.model.text_projection'], /text_projection missing/],
      ['bad-adm.safetensors', (h) => (h['model.diffusion_model.label_emb.0.0.weight'].shape = [512, 832]), /adm_in_channels 832 is not the pooled width 128 \+ 1536/],
      ['bad-inproj.safetensors', (h) => (h['conditioner.embedders.1.model.transformer.resblocks.1.attn.in_proj_weight'].shape = [128, 384]), /in_proj_weight has shape/],
      ['edm.safetensors', (h) => (h.edm_mean = { dtype: 'F32', shape: [0], data_offsets: [0, 0] }), /EDM-sampled SDXL/],
      ['no-label-emb2.safetensors', (h) => delete h['model.diffusion_model.label_emb.0.2.weight'], /label_emb\.0\.2/],
    ];
    for (const [name, edit, re] of cases) {
      const file = variant(files.sdxl!, name, edit);
      await assert.rejects(
        (async () => {
          const f = await SafetensorsFile.open(file);
          detectCheckpoint(f);
        })(),
        (err: Error) => err.message.includes(name) && re.test(err.message),
        name,
      );
    }
    // SD2 text encoder whose width does not match the UNet's context.
    const wide = variant(files.sd2eps!, 'sd2-ctx.safetensors', (h) => {
      h['model.diffusion_model.input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight'].shape = [32, 128];
    });
    await assert.rejects(loadCheckpoint(wide), /cross-attention context widths differ|does not match the UNet's context width/);
  });
});

describe('DualCLIPLoader (sdxl): CLIP-L and OpenCLIP-G from files of their own', () => {
  test('the same conditioning and pooled output as the checkpoint\'s CLIP, whichever order and G layout', async () => {
    const l = path.join(dir, 'clip_l.safetensors');
    const gHf = path.join(dir, 'clip_g.safetensors');
    const gOc = path.join(dir, 'clip_g_openclip.safetensors');
    await writeSdxlTextEncoders(files.sdxl!, l, gHf, 'hf');
    await writeSdxlTextEncoders(files.sdxl!, l, gOc, 'openclip');
    const own = new XLClipModel(await loadCheckpoint(files.sdxl!));
    const size = { width: 512, height: 512, crop_w: 0, crop_h: 0, target_width: 512, target_height: 512 };
    const expected = await own.encodeSDXL('a castle, (oil:1.3)', 'a castle', size);
    for (const [a, b] of [
      [l, gHf],
      [gHf, l],
      [gOc, l],
    ] as const) {
      const dual = await loadDualClip(a, b);
      assert.equal(dual.family, 'sdxl');
      assert.deepEqual(dual.encoders.map((e) => e.name), ['l', 'g']);
      const [[cond, opts]] = await dual.encodeSDXL('a castle, (oil:1.3)', 'a castle', size);
      const [[econd, eopts]] = expected;
      closeTo(cond, { shape: econd.shape, head: Array.from(econd.data.subarray(0, 512)), sum: econd.data.reduce((s, v) => s + v, 0), absmax: Math.max(...econd.data.map(Math.abs)) }, 1e-6, `${path.basename(a)} + ${path.basename(b)}`);
      const ep = eopts.pooled_output as FloatTensor;
      closeTo(opts.pooled_output as FloatTensor, { shape: ep.shape, head: Array.from(ep.data), sum: ep.data.reduce((s, v) => s + v, 0), absmax: Math.max(...ep.data.map(Math.abs)) }, 1e-6, 'pooled');
    }
    // A G without its projection cannot feed SDXL's adm; a file with no text encoder is named.
    const noProj = path.join(dir, 'g_noproj.safetensors');
    const g = await SafetensorsFile.open(gHf);
    const keep = new Map<string, { shape: number[]; data: Float32Array }>();
    for (const k of g.tensors.keys()) if (k !== 'text_projection.weight') keep.set(k, { shape: [...g.info(k).shape], data: await g.readFloat32(k) });
    writeTensors(noProj, keep);
    await assert.rejects(loadDualClip(l, noProj), /g_noproj\.safetensors: OpenCLIP-G needs its text_projection|clip_l\.safetensors: OpenCLIP-G needs its text_projection/);
    await assert.rejects(loadDualClip(l, files.sd2eps!), /sd2eps\.safetensors: no CLIP text encoder/);
  });
});

describe('attention (memory budget)', () => {
  test('one UNet session serves every latent size (the fused attention slices nothing per size) and gives the same output run again', async () => {
    const ck = await loadCheckpoint(files.sdxl!);
    const model = new UNetModel(ck);
    const clip = new XLClipModel(ck);
    const outs: Float32Array[] = [];
    for (const shape of [[1, 4, 32, 32], [1, 4, 24, 40], [1, 4, 32, 32]]) {
      const [ctx] = model.withAdm(await clip.encode('a castle'), shape, 'positive')[0]!;
      outs.push(await model.eps(pattern(shape).data, shape, 700, ctx));
    }
    assert.deepEqual(ck.sessionKinds().filter((k) => k.startsWith('unet')), ['unet']);
    assert.deepEqual(outs[2], outs[0]);
  });
});

describe('VAEEncodeForInpaint', () => {
  test('cropped pixels greyed under the mask, the latent, and the grown noise mask as the reference (grow 6, 5, 0)', async () => {
    const vae = new VaeModel(await loadCheckpoint(files.sd2eps!));
    const img = { shape: [1, 37, 45, 3], data: Float32Array.from({ length: 37 * 45 * 3 }, (_, i) => ((i * 7919) % 256) / 255) };
    const mask = { width: 24, height: 20, data: Float32Array.from({ length: 20 * 24 }, (_, i) => (Math.floor(i / 24) + (i % 24)) / 41.7) };
    for (const grow of [6, 5, 0]) {
      const prep = inpaintPrepare(img, [mask], vae.downscale, grow);
      const expected = ref.sd2.eps.inpaint[String(grow)];
      closeTo(prep.noiseMask, expected.noise_mask, 0, `noise mask, grow ${grow}`);
      closeTo(await vae.encode(prep.pixels), expected.samples, 1e-5, `latent, grow ${grow}`);
    }
  });
});

describe('inpainting UNet (9 input channels)', () => {
  test('InpaintModelConditioning\'s mask and masked image feed the UNet as the reference\'s concat_cond; without a mask, ones and the blank image', async () => {
    const file = path.join(dir, 'sd2-inpaint.safetensors');
    writeXLFixture(file, { ...SD2_TINY, unet: { ...SD2_TINY.unet, inChannels: 9 } });
    const ck = await loadCheckpoint(file);
    assert.equal(ck.detected.unet.inChannels, 9);
    assert.equal(ck.detected.modelType, 'eps');
    assert.deepEqual(ref.inpaint.concat_keys, ['mask', 'masked_image']);
    const clip = new XLClipModel(ck);
    const vae = new VaeModel(ck);
    const model = new UNetModel(ck);
    const img = { shape: [1, 40, 48, 3], data: Float32Array.from({ length: 40 * 48 * 3 }, (_, i) => ((i * 7919) % 256) / 255) };
    const m = new Float32Array(40 * 48);
    for (let y = 8; y < 30; y++) for (let x = 12; x < 40; x++) m[y * 48 + x] = 1;
    // InpaintModelConditioning: cell 8, the mask unrounded as concat_mask and noise_mask.
    const prep = inpaintPrepare(img, [{ width: 48, height: 40, data: m }], 8, 0);
    const concat = await vae.encode(prep.pixels);
    const orig = await vae.encode(img);
    closeTo(concat, ref.inpaint.concat_latent, 1e-5, 'concat latent');
    closeTo(orig, ref.inpaint.latent, 1e-5, 'latent');
    const values = { concat_latent_image: concat, concat_mask: prep.mask };
    const positive = (await clip.encode('a window')).map(([t, o]) => [t, { ...o, ...values }] as [FloatTensor, Record<string, unknown>]);
    const negative = (await clip.encode('')).map(([t, o]) => [t, { ...o, ...values }] as [FloatTensor, Record<string, unknown>]);
    const out = await sample({ model, positive, negative, cfg: 5, samplerName: 'euler', scheduler: 'normal', steps: 3, seed: 41, latent: orig, noiseMask: prep.mask });
    closeTo(out, ref.inpaint.sample, SAMPLE_TOL, 'inpaint sample');
    const plain = await sample({ model, positive: await clip.encode('a window'), negative: await clip.encode(''), cfg: 5, samplerName: 'euler', scheduler: 'normal', steps: 3, seed: 42, latent: zeros([1, 4, 6, 5]) });
    closeTo(plain, ref.inpaint.sample_nomask, SAMPLE_TOL, 'no mask: ones and the blank image');
  });
});
