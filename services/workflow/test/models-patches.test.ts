/**
 * Conditioning (areas, strengths, masks, timestep ranges), LoRA (kohya,
 * LoCon, LoCon with Tucker mid, diffusers, PEFT), textual inversions and the
 * separate loaders, against values the reference computed on the same
 * generated files (test/fixtures/models-reference-patches.json, written by
 * bench/workflow/models-reference-patches.ts); hostile LoRA files; and the
 * nodes over HTTP on SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { onOneStorage } from '@svc/testkit';
import { ClipTokenizer, tokenizeWithWeights } from '../src/models/clip-tokenizer.ts';
import { loadEmbedding } from '../src/models/embeddings.ts';
import { LoadedLora, loraKeyMap, unetToDiffusers, WeightPatches } from '../src/models/lora.ts';
import { ModelFileError } from '../src/models/safetensors.ts';
import { ClipModel, loadCheckpoint, sample, unloadAll, UNetModel, VaeModel, type ConditioningEntry, type FloatTensor } from '../src/models/sd1.ts';
import { pollPause, startWorkflow } from './helpers.ts';
import { TINY, writeFixture } from './models-fixture.ts';
import { EMBEDDING_PROMPTS, embeddingTensors, loraTensors, seeded, taesdTensors, writeTensors } from './models-patches-fixture.ts';
import { readOutput, run, type Server } from './nodes-helpers.ts';
import { closeTo } from './models-compare.ts';

const ref = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'models-reference-patches.json'), 'utf8'));

const UNET = 'model.diffusion_model.';
const CLIP = 'cond_stage_model.transformer.text_model.';

let dir: string;
let ckptPath: string;
let loraPath: string;
let embPath: string;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-patches-'));
  ckptPath = path.join(dir, 'tiny.safetensors');
  writeFixture(ckptPath, TINY);
  loraPath = path.join(dir, 'lora.safetensors');
  writeTensors(loraPath, loraTensors());
  embPath = path.join(dir, 'tiny_emb.safetensors');
  writeTensors(embPath, embeddingTensors());
});

after(async () => {
  await unloadAll();
  fs.rmSync(dir, { recursive: true, force: true });
});

const latent = (): FloatTensor => ({ shape: [1, 4, 8, 8], data: new Float32Array(256) });

describe('conditioning in the model call as the reference computes it', () => {
  test('areas, percentages, strengths, masks (with and without bounds), timestep ranges, areas in the negative', async () => {
    const ck = await loadCheckpoint(ckptPath);
    const model = new UNetModel(ck);
    const clip = new ClipModel(ck);
    const A = (await clip.encode('a photo of a cat'))[0]![0];
    const B = (await clip.encode('a red dog'))[0]![0];
    const N = (await clip.encode(''))[0]![0];
    const ramp: FloatTensor = { shape: [1, 16, 16], data: Float32Array.from({ length: 256 }, (_, i) => (i % 16) / 15) };
    const box: FloatTensor = { shape: [1, 16, 16], data: Float32Array.from({ length: 256 }, (_, i) => (Math.floor(i / 16) >= 4 && Math.floor(i / 16) < 12 && i % 16 >= 8 ? 1 : 0)) };
    const e = (t: FloatTensor, o: Record<string, unknown> = {}): ConditioningEntry => [t, o];
    const cases: Record<string, [ConditioningEntry[], ConditioningEntry[]]> = {
      area: [[e(A), e(B, { area: [4, 4, 2, 4], strength: 0.8, set_area_to_bounds: false })], [e(N)]],
      percentage: [[e(A), e(B, { area: ['percentage', 0.5, 0.25, 0.25, 0.5], strength: 1.5, set_area_to_bounds: false })], [e(N)]],
      mask: [[e(A), e(B, { mask: ramp, mask_strength: 0.7, set_area_to_bounds: false })], [e(N)]],
      mask_bounds: [[e(A), e(B, { mask: box, mask_strength: 1.0, set_area_to_bounds: true })], [e(N)]],
      timestep: [[e(A, { start_percent: 0, end_percent: 0.5 }), e(B, { start_percent: 0.5, end_percent: 1 })], [e(N)]],
      negative_area: [[e(A)], [e(N), e(B, { area: [3, 5, 4, 0], strength: 1.0, set_area_to_bounds: false })]],
      strength: [[e(A, { strength: 0.6 }), e(B)], [e(N)]],
    };
    let i = 0;
    for (const [name, [positive, negative]] of Object.entries(cases)) {
      const out = await sample({ model, positive, negative, cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 5, seed: 50 + i++, latent: latent() });
      closeTo(out, ref.cond[name], 1e-5, name, { absmax: false });
    }
  });
});

describe('LoRA as the reference applies it', () => {
  test('the diffusers names of the tiny UNet (comfy.utils.unet_to_diffusers)', async () => {
    const ck = await loadCheckpoint(ckptPath);
    const map = unetToDiffusers(ck.detected.unet);
    assert.equal(map.get('down_blocks.0.attentions.0.transformer_blocks.0.attn1.to_q'), 'input_blocks.1.1.transformer_blocks.0.attn1.to_q');
    assert.equal(map.get('down_blocks.0.downsamplers.0.conv'), 'input_blocks.2.0.op');
    assert.equal(map.get('up_blocks.0.upsamplers.0.conv'), 'output_blocks.1.2.conv');
    assert.equal(map.get('up_blocks.1.resnets.1.conv_shortcut'), 'output_blocks.3.0.skip_connection');
    assert.equal(map.get('mid_block.resnets.1.time_emb_proj'), 'middle_block.2.emb_layers.1');
  });

  test('kohya, LoCon, LoCon with mid, diffusers and PEFT keys patch the weights the reference patches; text, sampling and model-only results match', async () => {
    const ck = await loadCheckpoint(ckptPath);
    const keyMap = new Map([...loraKeyMap({ file: ck.file, unet: { prefix: UNET, config: ck.detected.unet } }), ...loraKeyMap({ file: ck.file, clip: { prefix: CLIP } })]);
    const lora = await LoadedLora.load(loraPath, keyMap);
    const toRef = (k: string) => (k.startsWith(UNET) ? `diffusion_model.${k.slice(UNET.length)}` : `clip_l.transformer.text_model.${k.slice(CLIP.length)}`);
    assert.deepEqual([...lora.patches.keys()].map(toRef).sort(), ref.lora_keys);
    const model = new UNetModel(ck).clone({ checkpoint: ck.withPatches(new WeightPatches(ck.file, UNET, [{ lora, strength: 0.8 }])) } as never);
    const clip = new ClipModel(ck.withPatches(new WeightPatches(ck.file, CLIP, [{ lora, strength: 1.3 }])));
    const [[A]] = [await clip.encode('a photo of a cat')];
    closeTo(A![0], ref.lora_cond, 1e-5, 'patched text encoder', { absmax: false });
    const [[N]] = [await clip.encode('')];
    closeTo(await sample({ model, positive: [[A![0], {}]], negative: [[N![0], {}]], cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 5, seed: 60, latent: latent() }), ref.lora_sample, 1e-5, 'patched sampling', { absmax: false });
    // LoraLoaderModelOnly at −0.5 with the plain text encoder.
    const plain = new ClipModel(ck);
    const unetOnly = await LoadedLora.load(loraPath, loraKeyMap({ file: ck.file, unet: { prefix: UNET, config: ck.detected.unet } }));
    const m3 = new UNetModel(ck).clone({ checkpoint: ck.withPatches(new WeightPatches(ck.file, UNET, [{ lora: unetOnly, strength: -0.5 }])) } as never);
    const [[pa]] = [await plain.encode('a photo of a cat')];
    const [[pn]] = [await plain.encode('')];
    closeTo(await sample({ model: m3, positive: [[pa![0], {}]], negative: [[pn![0], {}]], cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 5, seed: 61, latent: latent() }), ref.lora_model_only, 1e-5, 'model only', { absmax: false });
  });

  test('hostile LoRA files are ModelFileErrors naming the file and the problem', async () => {
    const ck = await loadCheckpoint(ckptPath);
    const keyMap = new Map([...loraKeyMap({ file: ck.file, unet: { prefix: UNET, config: ck.detected.unet } }), ...loraKeyMap({ file: ck.file, clip: { prefix: CLIP } })]);
    const k = 'lora_unet_down_blocks_0_attentions_0_transformer_blocks_0_attn1_to_q';
    const cases: [string, (f: string) => void, RegExp][] = [
      ['truncated.safetensors', (f) => fs.writeFileSync(f, Buffer.from([0xff, 0xff, 0, 0, 0, 0, 0, 0, 0x7b, 0x7d])), /truncated\.safetensors: header length/],
      ['other.safetensors', (f) => writeTensors(f, { 'lora_unet_label_emb_0_0.lora_up.weight': seeded([8, 2], 1, 1), 'lora_unet_label_emb_0_0.lora_down.weight': seeded([2, 8], 2, 1) }), /other\.safetensors: none of its keys names a weight of this model/],
      ['rank.safetensors', (f) => writeTensors(f, { [`${k}.lora_up.weight`]: seeded([32, 4], 1, 1), [`${k}.lora_down.weight`]: seeded([3, 32], 2, 1) }), /rank\.safetensors: .*disagree on the rank/],
      ['shape.safetensors', (f) => writeTensors(f, { [`${k}.lora_up.weight`]: seeded([16, 4], 1, 1), [`${k}.lora_down.weight`]: seeded([4, 32], 2, 1) }), /shape\.safetensors: .*does not give the weight/],
      ['loha.safetensors', (f) => writeTensors(f, { [`${k}.hada_w1_a`]: seeded([32, 4], 1, 1) }), /loha\.safetensors: .*hada_w1_b is missing/],
      ['half.safetensors', (f) => writeTensors(f, { [`${k}.lora_up.weight`]: seeded([32, 4], 1, 1) }), /half\.safetensors: .*has no/],
      ['alpha.safetensors', (f) => writeTensors(f, { [`${k}.lora_up.weight`]: seeded([32, 4], 1, 1), [`${k}.lora_down.weight`]: seeded([4, 32], 2, 1), [`${k}.alpha`]: seeded([3], 3, 1) }), /alpha\.safetensors: .*alpha must be one finite number/],
      ['old.pt', (f) => fs.writeFileSync(f, 'PK'), /old\.pt: neither a PyTorch zip checkpoint .* nor a safetensors file \(file of 2 bytes is too short/],
    ];
    for (const [name, write, re] of cases) {
      const f = path.join(dir, name);
      write(f);
      await assert.rejects(
        (async () => {
          const l = await LoadedLora.load(f, keyMap);
          // Shapes are checked when the patched weights are computed.
          await new WeightPatches(ck.file, UNET, [{ lora: l, strength: 1 }]).data();
        })(),
        (err: Error) => err instanceof ModelFileError && re.test(err.message),
        name,
      );
    }
  });
});

describe('textual inversions and separate model files', () => {
  test('embedding:name vectors take their tokens\' places (with weights) as the reference encodes them', async () => {
    const vectors = await loadEmbedding(embPath);
    assert.equal(vectors.length, 2);
    const clip = new ClipModel(await loadCheckpoint(ckptPath));
    const embedding = (name: string) => (name === 'tiny_emb' || name === 'tiny_emb.safetensors' ? vectors : undefined);
    for (const p of EMBEDDING_PROMPTS) {
      const chunks = tokenizeWithWeights(p, ClipTokenizer.shared(), { embedding });
      assert.deepEqual(
        chunks.map((c) => c.map((t) => (t.embedding ? -1 : t.token))),
        ref.embedding[p].tokens,
        p,
      );
      const [[c]] = [await clip.encode(p, { embedding })];
      closeTo(c![0], ref.embedding[p].cond, 1e-5, p, { absmax: false });
    }
    await assert.rejects(loadEmbedding(path.join(dir, 'x.pt')), /x\.pt: cannot open \(ENOENT\)/);
  });

  test('a VAE, text encoder and diffusion model in files of their own run as the checkpoint\'s parts', async () => {
    const ck = await loadCheckpoint(ckptPath);
    const copy = async (prefix: string, to: string, file: string) => {
      const t: Record<string, { shape: number[]; data: Float32Array }> = {};
      for (const k of ck.file.tensors.keys()) if (k.startsWith(prefix)) t[to + k.slice(prefix.length)] = { shape: [...ck.file.info(k).shape], data: await ck.file.readFloat32(k) };
      writeTensors(path.join(dir, file), t);
      return path.join(dir, file);
    };
    const vae = new VaeModel(await loadCheckpoint(await copy('first_stage_model.', '', 'vae.safetensors'), 'vae'));
    const clip = new ClipModel(await loadCheckpoint(await copy('cond_stage_model.transformer.', '', 'clip.safetensors'), 'clip'));
    const unet = new UNetModel(await loadCheckpoint(await copy(UNET, '', 'unet.safetensors'), 'unet'));
    const z: FloatTensor = { shape: [1, 4, 4, 4], data: Float32Array.from({ length: 64 }, (_, i) => Math.sin(i)) };
    assert.deepEqual((await vae.decode(z)).data, (await new VaeModel(ck).decode(z)).data);
    const [[a]] = [await clip.encode('a cat')];
    const [[b]] = [await new ClipModel(ck).encode('a cat')];
    assert.deepEqual(a![0].data, b![0].data);
    const opts = { positive: [[a![0], {}]] as ConditioningEntry[], negative: [[a![0], {}]] as ConditioningEntry[], cfg: 3, samplerName: 'euler', scheduler: 'normal', steps: 2, seed: 5, latent: latent() };
    assert.deepEqual((await sample({ model: unet, ...opts })).data, (await sample({ model: new UNetModel(ck), ...opts })).data);
    await assert.rejects(loadCheckpoint(path.join(dir, 'vae.safetensors'), 'clip'), /vae\.safetensors: no CLIP text encoder/);
  });
});

onOneStorage('workflow conditioning, LoRA and loader nodes', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
    const m = path.join(srv.cfg.dataDir, 'models');
    for (const d of ['checkpoints', 'loras', 'embeddings']) fs.mkdirSync(path.join(m, d), { recursive: true });
    writeFixture(path.join(m, 'checkpoints', 'tiny.safetensors'), TINY);
    writeTensors(path.join(m, 'loras', 'style.safetensors'), loraTensors());
    writeTensors(path.join(m, 'embeddings', 'tiny_emb.safetensors'), embeddingTensors());
    fs.mkdirSync(path.join(m, 'vae_approx'), { recursive: true });
    writeTensors(path.join(m, 'vae_approx', 'taesd_encoder.safetensors'), taesdTensors('encoder'));
    writeTensors(path.join(m, 'vae_approx', 'taesd_decoder.safetensors'), taesdTensors('decoder'));
    fs.writeFileSync(path.join(m, 'loras', 'broken.safetensors'), 'not a safetensors file');
  });
  after(async () => {
    await srv.close();
    await unloadAll();
  });

  test('/object_info lists the nodes with the reference\'s inputs; the lists read the folders', async () => {
    const r = await srv.http.get('/object_info');
    assert.equal(r.status, 200);
    for (const n of ['ConditioningCombine', 'ConditioningAverage', 'ConditioningConcat', 'ConditioningSetArea', 'ConditioningSetAreaPercentage', 'ConditioningSetAreaStrength', 'ConditioningSetMask', 'ConditioningZeroOut', 'ConditioningSetTimestepRange', 'VAELoader', 'CLIPLoader', 'UNETLoader', 'LoraLoader', 'LoraLoaderModelOnly']) {
      assert.ok(r.body[n], n);
    }
    assert.deepEqual(r.body.LoraLoader.input.required.lora_name[0], ['broken.safetensors', 'style.safetensors']);
    // VAELoader lists taesd once models/vae_approx holds its encoder and decoder, as vae_list.
    assert.deepEqual(r.body.VAELoader.input.required.vae_name[0], ['taesd']);
    assert.deepEqual(Object.keys(r.body.LoraLoader.input.required), ['model', 'clip', 'lora_name', 'strength_model', 'strength_clip']);
    assert.deepEqual(r.body.LoraLoader.output, ['MODEL', 'CLIP']);
    assert.deepEqual(r.body.ConditioningSetArea.input.required.width, ['INT', { default: 64, min: 64, max: 16384, step: 8 }]);
    assert.deepEqual(r.body.ConditioningSetMask.input.required.set_cond_area, [['default', 'mask bounds']]);
    assert.equal(r.body.ConditioningZeroOut.category, 'advanced/conditioning');
    // /system_stats on the CPU as the reference: os.name, and the system's memory in both memory pairs.
    const stats = await srv.http.get('/system_stats');
    assert.equal(stats.body.system.os, 'posix');
    const dev = stats.body.devices[0];
    assert.deepEqual([dev.name, dev.type, dev.index], ['cpu', 'cpu', null]);
    assert.equal(dev.torch_vram_total, dev.vram_total);
    assert.ok(dev.torch_vram_free > 0 && dev.torch_vram_free <= dev.torch_vram_total);
  });

  test('LoRA, embedding and area conditioning in one workflow give the layer\'s result; a broken LoRA is a node error and the server goes on', async () => {
    const g = (lora: string) => ({
      ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'tiny.safetensors' } },
      lora: { class_type: 'LoraLoader', inputs: { model: ['ck', 0], clip: ['ck', 1], lora_name: lora, strength_model: 0.8, strength_clip: 1.3 } },
      a: { class_type: 'CLIPTextEncode', inputs: { text: 'a photo of a cat, embedding:tiny_emb', clip: ['lora', 1] } },
      b: { class_type: 'CLIPTextEncode', inputs: { text: 'a red dog', clip: ['lora', 1] } },
      n: { class_type: 'CLIPTextEncode', inputs: { text: '', clip: ['lora', 1] } },
      area: { class_type: 'ConditioningSetArea', inputs: { conditioning: ['b', 0], width: 64, height: 64, x: 0, y: 0, strength: 0.8 } },
      both: { class_type: 'ConditioningCombine', inputs: { conditioning_1: ['a', 0], conditioning_2: ['area', 0] } },
      empty: { class_type: 'EmptyLatentImage', inputs: { width: 128, height: 64, batch_size: 1 } },
      ks: { class_type: 'KSampler', inputs: { model: ['lora', 0], seed: 9, steps: 3, cfg: 5, sampler_name: 'euler', scheduler: 'normal', positive: ['both', 0], negative: ['n', 0], latent_image: ['empty', 0], denoise: 1 } },
      dec: { class_type: 'VAEDecode', inputs: { samples: ['ks', 0], vae: ['ck', 2] } },
      save: { class_type: 'SaveImage', inputs: { images: ['dec', 0], filename_prefix: 'lora' } },
      tv: { class_type: 'VAELoader', inputs: { vae_name: 'taesd' } },
      td: { class_type: 'VAEDecode', inputs: { samples: ['ks', 0], vae: ['tv', 0] } },
      ts: { class_type: 'SaveImage', inputs: { images: ['td', 0], filename_prefix: 'taesd' } },
    });
    const res = await run(srv, g('style.safetensors'));
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    const px = await readOutput(srv, res.outputs.save.images[0]);
    const tpx = await readOutput(srv, res.outputs.ts.images[0]);
    assert.deepEqual([tpx.width, tpx.height], [128, 64], 'the TAESD decode of the same latent');
    // The same computation through the model layer.
    const ck = await loadCheckpoint(path.join(srv.cfg.dataDir, 'models', 'checkpoints', 'tiny.safetensors'));
    const keyMap = new Map([...loraKeyMap({ file: ck.file, unet: { prefix: UNET, config: ck.detected.unet } }), ...loraKeyMap({ file: ck.file, clip: { prefix: CLIP } })]);
    const lora = await LoadedLora.load(path.join(srv.cfg.dataDir, 'models', 'loras', 'style.safetensors'), keyMap);
    const model = new UNetModel(ck).clone({ checkpoint: ck.withPatches(new WeightPatches(ck.file, UNET, [{ lora, strength: 0.8 }])) } as never);
    const clip = new ClipModel(ck.withPatches(new WeightPatches(ck.file, CLIP, [{ lora, strength: 1.3 }])));
    const vectors = await loadEmbedding(path.join(srv.cfg.dataDir, 'models', 'embeddings', 'tiny_emb.safetensors'));
    const [[a]] = [await clip.encode('a photo of a cat, embedding:tiny_emb', { embedding: (n) => (n === 'tiny_emb' ? vectors : undefined) })];
    const [[b]] = [await clip.encode('a red dog')];
    const [[n]] = [await clip.encode('')];
    const out = await sample({
      model,
      positive: [[a![0], {}], [b![0], { area: [8, 8, 0, 0], strength: 0.8, set_area_to_bounds: false }]],
      negative: [[n![0], {}]],
      cfg: 5,
      samplerName: 'euler',
      scheduler: 'normal',
      steps: 3,
      seed: 9,
      latent: { shape: [1, 4, 8, 16], data: new Float32Array(512) },
    });
    const img = await new VaeModel(ck).decode(out);
    img.data.forEach((v, i) => assert.ok(Math.abs(Math.trunc(Math.fround(255 * v)) - px.data[i]!) <= 1, `byte ${i}`));
    const bad = await run(srv, g('broken.safetensors'));
    assert.equal(bad.error?.node_id, 'lora');
    assert.match(bad.error.exception_message, /could not load LoRA broken\.safetensors: .*broken\.safetensors: /);
    const missing = await srv.http.post('/prompt', { prompt: g('../checkpoints/tiny.safetensors') });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.node_errors.lora.errors[0].type, 'custom_validation_failed');
    const again = await run(srv, g('style.safetensors'));
    assert.equal(again.error, undefined, JSON.stringify(again.error));
  });
});

describe('previews', () => {
  test('latent→RGB as latent_preview.Latent2RGBPreviewer: first item, SD1.5 factors, (v + 1)/2 clamped, ×255 truncated', async () => {
    const { latentToRgb, SD15_LATENT_RGB_FACTORS } = await import('../src/models/preview.ts');
    const x0 = Float32Array.from({ length: 2 * 4 * 2 * 3 }, (_, i) => Math.sin(i * 0.7) * 2);
    const img = latentToRgb(x0, [2, 4, 2, 3]);
    assert.deepEqual([img.width, img.height], [3, 2]);
    for (let p = 0; p < 6; p++)
      for (let c = 0; c < 3; c++) {
        let v = 0;
        for (let k = 0; k < 4; k++) v += x0[k * 6 + p]! * SD15_LATENT_RGB_FACTORS[k]![c]!;
        const expected = Math.trunc(Math.min(1, Math.max(0, (v + 1) / 2)) * 255);
        assert.ok(Math.abs(img.data[p * 3 + c]! - expected) <= 1, `pixel ${p} channel ${c}`);
      }
  });
});

const previewGraph = (seed = 3) => ({
  ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'tiny.safetensors' } },
  p: { class_type: 'CLIPTextEncode', inputs: { text: 'a cat', clip: ['ck', 1] } },
  n: { class_type: 'CLIPTextEncode', inputs: { text: '', clip: ['ck', 1] } },
  e: { class_type: 'EmptyLatentImage', inputs: { width: 48, height: 32, batch_size: 1 } },
  ks: { class_type: 'KSampler', inputs: { model: ['ck', 0], seed, steps: 3, cfg: 4, sampler_name: 'euler', scheduler: 'normal', positive: ['p', 0], negative: ['n', 0], latent_image: ['e', 0], denoise: 1 } },
  d: { class_type: 'VAEDecode', inputs: { samples: ['ks', 0], vae: ['ck', 2] } },
  s: { class_type: 'SaveImage', inputs: { images: ['d', 0], filename_prefix: 'pv' } },
});

/** Runs a prompt on its own socket: its messages and the binary frames received. */
async function runWithFrames(s: Server, prompt: Record<string, unknown>): Promise<{ msgs: any[]; frames: Buffer[] }> {
  const { randomUUID } = await import('node:crypto');
  const { WsClient } = await import('./helpers.ts');
  const clientId = randomUUID();
  const ws = new WsClient(s.url, clientId);
  await ws.opened;
  try {
    const r = await s.http.post('/prompt', { prompt, client_id: clientId });
    assert.equal(r.status, 200);
    const msgs = await ws.promptDone(r.body.prompt_id);
    return { msgs, frames: [...ws.binary] };
  } finally {
    ws.close();
  }
}

// The preview flags reach execution threads through the process environment (as --ffmpeg-path): the servers with
// previews and those without are in separate suites, each started when the previous suite's threads exist.
onOneStorage('workflow previews (--preview-method latent2rgb, taesd)', (storage) => {
  let srv: Server;
  let srvT: Server;
  before(async () => {
    srv = await startWorkflow(storage, { previewMethod: 'latent2rgb', previewSize: '64' });
    srvT = await startWorkflow(storage, { previewMethod: 'taesd', previewSize: '64' });
    for (const s of [srv, srvT]) {
      fs.mkdirSync(path.join(s.cfg.dataDir, 'models', 'checkpoints'), { recursive: true });
      writeFixture(path.join(s.cfg.dataDir, 'models', 'checkpoints', 'tiny.safetensors'), TINY);
    }
    fs.mkdirSync(path.join(srvT.cfg.dataDir, 'models', 'vae_approx'), { recursive: true });
    writeTensors(path.join(srvT.cfg.dataDir, 'models', 'vae_approx', 'taesd_decoder.safetensors'), taesdTensors('decoder'));
  });
  after(async () => {
    await srv.close();
    await srvT.close();
    await unloadAll();
  });

  test('--preview-method taesd: previews through models/vae_approx/taesd_decoder (other pixels than latent→RGB, same frame size)', async () => {
    const a = await runWithFrames(srv, previewGraph(11));
    const b = await runWithFrames(srvT, previewGraph(11));
    assert.equal(b.msgs.find((m) => m.type === 'execution_error'), undefined);
    assert.equal(b.frames.length, 3);
    const sharp = (await import('sharp')).default;
    const meta = await sharp(b.frames[0]!.subarray(8)).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['jpeg', 64, 43]);
    assert.notDeepEqual(b.frames[2], a.frames[2]);
  });

  test('one JPEG preview frame per step, before the sampler\'s result, sized as ImageOps.contain to --preview-size', async () => {
    const { msgs, frames } = await runWithFrames(srv, previewGraph());
    assert.equal(msgs.find((m) => m.type === 'execution_error'), undefined);
    assert.equal(frames.length, 3);
    const sharp = (await import('sharp')).default;
    for (const frame of frames) {
      assert.equal(frame.readUInt32BE(0), 1, 'PREVIEW_IMAGE');
      assert.equal(frame.readUInt32BE(4), 1, 'JPEG');
      const meta = await sharp(frame.subarray(8)).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['jpeg', 64, 43]);
    }
  });
});

onOneStorage('workflow POST /free (and no previews by default)', (storage) => {
  let plain: Server;
  before(async () => {
    plain = await startWorkflow(storage);
    fs.mkdirSync(path.join(plain.cfg.dataDir, 'models', 'checkpoints'), { recursive: true });
    writeFixture(path.join(plain.cfg.dataDir, 'models', 'checkpoints', 'tiny.safetensors'), TINY);
  });
  after(async () => {
    await plain.close();
    await unloadAll();
  });

  test('unload_models keeps the output cache (models load again on use), free_memory empties it; results unchanged; no preview frames', async () => {
    const { msgs, frames } = await runWithFrames(plain, previewGraph(7));
    assert.equal(msgs.find((m) => m.type === 'execution_error'), undefined);
    assert.equal(frames.length, 0, 'previews are off by default (--preview-method none)');
    const first = msgs.find((m) => m.type === 'executed' && m.data.node === 's')!.data.output;
    const bytes = (await readOutput(plain, first.images[0])).data;
    const executedNodes = (res: Awaited<ReturnType<typeof run>>) => res.messages.filter((m) => m.type === 'executing' && m.data.node).map((m) => m.data.node);
    // /system_stats lists the loaded checkpoint by folder and name (never the server's path), in the thread that holds it.
    const models = async () => (await plain.http.get('/system_stats')).body.models;
    const loaded = await models();
    assert.equal(loaded.count, 1, JSON.stringify(loaded));
    assert.deepEqual(loaded.loaded.map((m: any) => [m.name, m.part, m.execution_thread]), [['checkpoints/tiny.safetensors', 'checkpoint', 0]]);
    assert.ok(loaded.loaded[0].memory > 0 && loaded.memory === loaded.loaded[0].memory, JSON.stringify(loaded));
    assert.equal(loaded.max_model_memory, null);
    assert.equal(JSON.stringify(loaded).includes(plain.cfg.dataDir), false);
    assert.equal((await plain.http.post('/free', { unload_models: true })).status, 200);
    for (let attempt = 0; (await models()).count !== 0; attempt++) await pollPause(attempt);
    assert.deepEqual(await models(), { loaded: [], count: 0, memory: 0, max_model_memory: null });
    const cached = await run(plain, previewGraph(7));
    assert.ok(!executedNodes(cached).includes('ks'), 'the sampler output stays cached');
    assert.equal((await plain.http.post('/free', { free_memory: true })).status, 200);
    const again = await run(plain, previewGraph(7));
    assert.equal(again.error, undefined, JSON.stringify(again.error));
    assert.ok(executedNodes(again).includes('ks'), 'the cache was emptied: the sampler runs again');
    assert.deepEqual((await readOutput(plain, again.outputs.s.images[0])).data, bytes);
  });
});

describe('TAESD', () => {
  test('VAELoader\'s taesd: decode and encode as comfy.sd.VAE runs the reference\'s TAESD (scale 0.18215)', async () => {
    const { TaesdVae } = await import('../src/models/taesd.ts');
    const enc = path.join(dir, 'taesd_encoder.safetensors');
    const dec = path.join(dir, 'taesd_decoder.safetensors');
    writeTensors(enc, taesdTensors('encoder'));
    writeTensors(dec, taesdTensors('decoder'));
    const vae = new TaesdVae(await loadCheckpoint(dec, 'taesd'), await loadCheckpoint(enc, 'taesd'), 0.18215, 0);
    const z: FloatTensor = { shape: [1, 4, 3, 4], data: Float32Array.from({ length: 48 }, (_, i) => Math.sin(i * 0.37) * 3) };
    const img = await vae.decode(z);
    closeTo(img, ref.taesd_decode, 1e-5, 'taesd decode', { absmax: false });
    closeTo(await vae.encode(img), ref.taesd_encode, 1e-5, 'taesd encode', { absmax: false });
    await assert.rejects(async () => new TaesdVae(await loadCheckpoint(enc, 'taesd'), null, 1, 0), /taesd_encoder\.safetensors: not a TAESD decoder/);
  });
});

describe('loaded models and the memory budget', () => {
  test('--max-model-memory: the least recently used checkpoint is unloaded; one that cannot fit is a clear error and is not cached', async () => {
    const { configureModelMemory, checkpointFootprint, loadedCheckpoints } = await import('../src/models/sd1.ts');
    await unloadAll();
    const a = path.join(dir, 'budget-a.safetensors');
    const b = path.join(dir, 'budget-b.safetensors');
    writeFixture(a, TINY, 2);
    writeFixture(b, TINY, 3);
    try {
      const ca = await loadCheckpoint(a);
      const bytes = checkpointFootprint(ca);
      configureModelMemory(Math.floor(bytes * 1.5));
      await loadCheckpoint(b);
      assert.deepEqual(loadedCheckpoints(), [b], 'a was unloaded to make room for b');
      // Using a again makes it the most recent: b goes.
      await loadCheckpoint(a);
      assert.deepEqual(loadedCheckpoints(), [a]);
      configureModelMemory(Math.floor(bytes / 2));
      await unloadAll();
      await assert.rejects(loadCheckpoint(b), (err: Error) => err instanceof ModelFileError && /budget-b\.safetensors: its weights need about \d+ MB as float32, more than --max-model-memory/.test(err.message));
      assert.deepEqual(loadedCheckpoints(), []);
    } finally {
      configureModelMemory(0);
      await unloadAll();
    }
  });
});

describe('conditioning nodes', () => {
  test('Average, Concat, ZeroOut, SetAreaStrength, SetTimestepRange, SetMask, Combine and SetArea build the reference\'s entries', async () => {
    const { conditioningNodes } = await import('../src/nodes/sd/conditioning-nodes.ts');
    const { MaskBatch, MaskPlane } = await import('../src/nodes/image-types.ts');
    const node = (name: string) => conditioningNodes.find((n) => n.name === name)!;
    const exec = async (name: string, inputs: Record<string, unknown>) => ((await node(name).execute(inputs, {} as never)) as unknown[])[0] as ConditioningEntry[];
    const t = (T: number, base: number): FloatTensor => ({ shape: [1, T, 2], data: Float32Array.from({ length: T * 2 }, (_, i) => base + i) });
    const to: ConditioningEntry[] = [[t(3, 10), { strength: 2 }]];
    const from: ConditioningEntry[] = [[t(2, 100), {}], [t(2, 500), {}]];
    // t1·s + t0·(1 − s), t0 the first T tokens of the first `from` entry, zero-padded.
    const avg = await exec('ConditioningAverage', { conditioning_to: to, conditioning_from: from, conditioning_to_strength: 0.25 });
    assert.deepEqual([...avg[0]![0].data], [10, 11, 12, 13, 14, 15].map((v, i) => Math.fround(Math.fround(v * 0.25) + Math.fround((i < 4 ? 100 + i : 0) * 0.75))));
    assert.deepEqual(avg[0]![1], { strength: 2 });
    const cat = await exec('ConditioningConcat', { conditioning_to: to, conditioning_from: from });
    assert.deepEqual(cat[0]![0].shape, [1, 5, 2]);
    assert.deepEqual([...cat[0]![0].data], [10, 11, 12, 13, 14, 15, 100, 101, 102, 103]);
    const zero = await exec('ConditioningZeroOut', { conditioning: to });
    assert.ok(zero[0]![0].data.every((v) => v === 0));
    assert.deepEqual(await exec('ConditioningCombine', { conditioning_1: to, conditioning_2: from }), [...to, ...from]);
    assert.deepEqual((await exec('ConditioningSetArea', { conditioning: to, width: 100, height: 64, x: 17, y: 8, strength: 0.5 }))[0]![1], { strength: 0.5, area: [8, 12, 1, 2], set_area_to_bounds: false });
    assert.deepEqual((await exec('ConditioningSetAreaPercentage', { conditioning: to, width: 0.5, height: 0.25, x: 0.1, y: 0.2, strength: 1 }))[0]![1], { strength: 1, area: ['percentage', 0.25, 0.5, 0.2, 0.1], set_area_to_bounds: false });
    assert.deepEqual((await exec('ConditioningSetAreaStrength', { conditioning: to, strength: 3 }))[0]![1], { strength: 3 });
    assert.deepEqual((await exec('ConditioningSetTimestepRange', { conditioning: to, start: 0.2, end: 0.7 }))[0]![1], { strength: 2, start_percent: 0.2, end_percent: 0.7 });
    const mask = new MaskBatch([new MaskPlane(2, 1, Float32Array.of(0, 1))]);
    const masked = (await exec('ConditioningSetMask', { conditioning: to, mask, strength: 0.5, set_cond_area: 'mask bounds' }))[0]![1];
    assert.deepEqual(masked.mask, { shape: [1, 1, 2], data: Float32Array.of(0, 1) });
    assert.equal(masked.set_area_to_bounds, true);
    assert.equal(masked.mask_strength, 0.5);
    // The input's options are copied, never changed.
    assert.deepEqual(to[0]![1], { strength: 2 });
    await assert.rejects(async () => exec('ConditioningConcat', { conditioning_to: to, conditioning_from: [] }), /conditioning_from is empty/);
  });
});
