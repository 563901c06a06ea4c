/**
 * CLIPLoader (type stable_diffusion) on OpenCLIP-H and OpenCLIP-G files, told
 * apart by layer count as the reference's detect_te_model (a 23rd layer is H,
 * a 31st G): the text encoder of a generated SD2.x checkpoint (23 layers) and
 * of an SDXL refiner (31 layers), saved alone in open_clip's layout, encode
 * exactly as the checkpoints' own CLIPs (whose values models-xl.test.ts checks
 * against the reference); and over HTTP, CLIPLoader's CLIP drives the SD2
 * checkpoint's model to the same image as the checkpoint's own CLIP.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { onOneStorage } from '@svc/testkit';
import { loadCheckpoint, loadedModels, unloadAll } from '../src/models/sd1.ts';
import { loadSingleClip, XLClipModel } from '../src/models/sdxl.ts';
import { SafetensorsFile } from '../src/models/safetensors.ts';
import { startWorkflow } from './helpers.ts';
import { openPrefix, REFINER_TINY, SD2_TINY, writeTensors, writeXLFixture, type XLFixtureConfig } from './models-fixture-xl.ts';
import { readOutput, run, type Server } from './nodes-helpers.ts';

const SD2_H: XLFixtureConfig = { ...SD2_TINY, text: { open: { ...SD2_TINY.text.open, layers: 23 } } };
const REFINER_G: XLFixtureConfig = { ...REFINER_TINY, text: { open: { ...REFINER_TINY.text.open, layers: 31 } } };

/** The checkpoint's OpenCLIP text encoder alone, in open_clip's key layout (as a text_encoders file holds it). */
async function extractText(checkpoint: string, family: XLFixtureConfig['family'], out: string): Promise<void> {
  const f = await SafetensorsFile.open(checkpoint);
  const prefix = openPrefix(family);
  const t = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const k of f.tensors.keys()) if (k.startsWith(prefix)) t.set(k.slice(prefix.length), { shape: [...f.info(k).shape], data: await f.readFloat32(k) });
  writeTensors(out, t);
}

let dir: string;
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'clip-loader-'));
  writeXLFixture(path.join(dir, 'sd2.safetensors'), SD2_H);
  writeXLFixture(path.join(dir, 'refiner.safetensors'), REFINER_G);
  await extractText(path.join(dir, 'sd2.safetensors'), 'sd2', path.join(dir, 'clip_h.safetensors'));
  await extractText(path.join(dir, 'refiner.safetensors'), 'sdxl_refiner', path.join(dir, 'clip_g.safetensors'));
});
after(async () => {
  await unloadAll();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('CLIPLoader on OpenCLIP files', () => {
  for (const [file, ckpt, family] of [
    ['clip_h.safetensors', 'sd2.safetensors', 'sd2'],
    ['clip_g.safetensors', 'refiner.safetensors', 'sdxl_refiner'],
  ] as const) {
    test(`${file} is ${family}'s text encoder and encodes as the checkpoint's own`, async () => {
      const alone = await loadSingleClip(path.join(dir, file));
      assert.ok(alone instanceof XLClipModel);
      assert.equal(alone.family, family);
      // A second load is the cached file (its sessions with it), listed among the loaded models.
      const again = await loadSingleClip(path.join(dir, file));
      assert.equal(again!.checkpoint, alone.checkpoint);
      assert.ok(loadedModels().some((m) => m.path === path.join(dir, file) && m.part === 'single-clip'));
      const own = new XLClipModel(await loadCheckpoint(path.join(dir, ckpt)));
      for (const text of ['a castle on a hill', '(red:1.3) sky, blurry']) {
        const [a] = await alone.encode(text);
        const [b] = await own.encode(text);
        assert.deepEqual(a![0].shape, b![0].shape);
        assert.deepEqual(a![0].data, b![0].data, text);
        assert.deepEqual(a![1].pooled_output, b![1].pooled_output);
      }
    });
  }

  test('a CLIP-L file stays SD1.x\'s (null here); a G file without its projection is refused by name', async () => {
    const l = path.join(dir, 'clip_l.safetensors');
    const f = await SafetensorsFile.open(path.join(dir, 'clip_h.safetensors'));
    const t = new Map<string, { shape: number[]; data: Float32Array }>();
    for (const k of f.tensors.keys()) if (!/resblocks\.([3-9]|\d\d)\./.test(k)) t.set(k, { shape: [...f.info(k).shape], data: await f.readFloat32(k) });
    writeTensors(l, t);
    assert.equal(await loadSingleClip(l), null);
    const g = await SafetensorsFile.open(path.join(dir, 'clip_g.safetensors'));
    const noProj = new Map<string, { shape: number[]; data: Float32Array }>();
    for (const k of g.tensors.keys()) if (k !== 'text_projection') noProj.set(k, { shape: [...g.info(k).shape], data: await g.readFloat32(k) });
    writeTensors(path.join(dir, 'g_noproj.safetensors'), noProj);
    await assert.rejects(loadSingleClip(path.join(dir, 'g_noproj.safetensors')), /g_noproj\.safetensors: OpenCLIP-G needs its text_projection/);
  });
});

onOneStorage('CLIPLoader over HTTP', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
    for (const [sub, name] of [
      ['checkpoints', 'sd2.safetensors'],
      ['text_encoders', 'clip_h.safetensors'],
    ]) {
      fs.mkdirSync(path.join(srv.cfg.dataDir, 'models', sub!), { recursive: true });
      fs.copyFileSync(path.join(dir, name!), path.join(srv.cfg.dataDir, 'models', sub!, name!));
    }
  });
  after(() => srv.close());

  test('SD2.x: CLIPLoader(clip_h) → CLIPTextEncode → KSampler gives the image the checkpoint\'s own CLIP gives', async () => {
    const graph = (clip: [string, number]) => ({
      ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sd2.safetensors' } },
      cl: { class_type: 'CLIPLoader', inputs: { clip_name: 'clip_h.safetensors', type: 'stable_diffusion' } },
      pos: { class_type: 'CLIPTextEncode', inputs: { clip, text: 'a castle' } },
      neg: { class_type: 'CLIPTextEncode', inputs: { clip, text: 'blurry' } },
      empty: { class_type: 'EmptyLatentImage', inputs: { width: 64, height: 48, batch_size: 1 } },
      ks: { class_type: 'KSampler', inputs: { model: ['ck', 0], seed: 3, steps: 3, cfg: 6, sampler_name: 'euler', scheduler: 'normal', positive: ['pos', 0], negative: ['neg', 0], latent_image: ['empty', 0], denoise: 1 } },
      dec: { class_type: 'VAEDecode', inputs: { samples: ['ks', 0], vae: ['ck', 2] } },
      save: { class_type: 'SaveImage', inputs: { images: ['dec', 0], filename_prefix: 'sd2' } },
    });
    const own = await run(srv, graph(['ck', 1]));
    assert.equal(own.error, undefined, JSON.stringify(own.error));
    const loaded = await run(srv, graph(['cl', 0]));
    assert.equal(loaded.error, undefined, JSON.stringify(loaded.error));
    const a = await readOutput(srv, own.outputs.save.images[0]);
    const b = await readOutput(srv, loaded.outputs.save.images[0]);
    assert.deepEqual(b.data, a.data);
  });
});
