/**
 * Textual inversions with SD2.x and SDXL text encoders: each encoder reads
 * its own vectors from the file (clip_l, clip_g, clip_h, the reference's
 * embedding keys). An embedding made of a word's own token vectors must
 * encode exactly as the word, plain and weighted, through every encoder;
 * over HTTP, CLIPTextEncodeSDXL with `embedding:` gives the word's image.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { onOneStorage } from '@svc/testkit';
import { ClipTokenizer, tokenizeWithWeights } from '../src/models/clip-tokenizer.ts';
import { SafetensorsFile } from '../src/models/safetensors.ts';
import { loadCheckpoint, unloadAll } from '../src/models/sd1.ts';
import { XLClipModel } from '../src/models/sdxl.ts';
import { embeddingOptions } from '../src/nodes/sd/embeddings.ts';
import { startWorkflow } from './helpers.ts';
import { SD2_TINY, SDXL_TINY, writeTensors, writeXLFixture } from './models-fixture-xl.ts';
import { readOutput, run, type Server } from './nodes-helpers.ts';

const TABLES = {
  sdxl: { clip_l: 'conditioner.embedders.0.transformer.text_model.embeddings.token_embedding.weight', clip_g: 'conditioner.embedders.1.model.token_embedding.weight' },
  sd2: { clip_h: 'cond_stage_model.model.token_embedding.weight' },
} as const;

/** models/embeddings/<name>.safetensors holding, under each key, the token vectors of `word` from the checkpoint's tables. */
async function wordEmbedding(checkpoint: string, tables: Record<string, string>, word: string, out: string): Promise<void> {
  const ids = tokenizeWithWeights(word, ClipTokenizer.shared())[0]!.map((t) => t.token).slice(1);
  const tokens = ids.slice(0, ids.indexOf(49407));
  const f = await SafetensorsFile.open(checkpoint);
  const t = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const [key, table] of Object.entries(tables)) {
    const all = await f.readFloat32(table);
    const D = f.info(table).shape[1]!;
    const data = new Float32Array(tokens.length * D);
    tokens.forEach((id, i) => data.set(all.subarray(id * D, (id + 1) * D), i * D));
    t.set(key, { shape: [tokens.length, D], data });
  }
  writeTensors(out, t);
}

let dir: string;
const dirs = () => ({ models: path.join(dir, 'models') }) as never;
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'xl-emb-'));
  const ck = path.join(dir, 'models', 'checkpoints');
  const emb = path.join(dir, 'models', 'embeddings');
  fs.mkdirSync(ck, { recursive: true });
  fs.mkdirSync(emb, { recursive: true });
  writeXLFixture(path.join(ck, 'sdxl.safetensors'), SDXL_TINY);
  writeXLFixture(path.join(ck, 'sd2.safetensors'), SD2_TINY);
  await wordEmbedding(path.join(ck, 'sdxl.safetensors'), TABLES.sdxl, 'castle', path.join(emb, 'xl_castle.safetensors'));
  await wordEmbedding(path.join(ck, 'sdxl.safetensors'), TABLES.sdxl, 'lighthouse', path.join(emb, 'xl_lighthouse.safetensors'));
  await wordEmbedding(path.join(ck, 'sd2.safetensors'), TABLES.sd2, 'castle', path.join(emb, 'h_castle.safetensors'));
});
after(async () => {
  await unloadAll();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('SD2.x and SDXL textual inversions', () => {
  for (const [family, prefix] of [
    ['sdxl', 'xl'],
    ['sd2', 'h'],
  ] as const) {
    test(`${family}: an embedding of a word's own vectors encodes as the word, plain and weighted; a missing name is dropped`, async () => {
      const clip = new XLClipModel(await loadCheckpoint(path.join(dir, 'models', 'checkpoints', `${family}.safetensors`)));
      const pairs: Array<[string, string]> = [
        [`a embedding:${prefix}_castle on a hill`, 'a castle on a hill'],
        [`(embedding:${prefix}_castle:1.3), blurry`, '(castle:1.3), blurry'],
        ['a embedding:nope castle', 'a castle'],
      ];
      if (family === 'sdxl') pairs.push(['embedding:xl_lighthouse at night', 'lighthouse at night']);
      for (const [withEmb, plain] of pairs) {
        const [a] = await clip.encode(withEmb, await embeddingOptions(dirs(), [withEmb], clip));
        const [b] = await clip.encode(plain);
        assert.deepEqual(a![0].shape, b![0].shape, withEmb);
        let worst = 0;
        a![0].data.forEach((v: number, i: number) => (worst = Math.max(worst, Math.abs(v - b![0].data[i]!))));
        assert.ok(worst <= 1e-6, `${withEmb}: differs from "${plain}" by ${worst}`);
        const pa = a![1].pooled_output as { data: Float32Array } | undefined;
        const pb = b![1].pooled_output as { data: Float32Array } | undefined;
        assert.deepEqual(pa?.data, pb?.data);
      }
    });
  }
});

onOneStorage('SDXL embeddings over HTTP', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
    for (const sub of ['checkpoints', 'embeddings']) fs.cpSync(path.join(dir, 'models', sub), path.join(srv.cfg.dataDir, 'models', sub), { recursive: true });
  });
  after(() => srv.close());

  test("CLIPTextEncodeSDXL with embedding: in both texts gives the word's image", async () => {
    const graph = (g: string, l: string) => ({
      ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sdxl.safetensors' } },
      pos: { class_type: 'CLIPTextEncodeSDXL', inputs: { clip: ['ck', 1], width: 512, height: 512, crop_w: 0, crop_h: 0, target_width: 512, target_height: 512, text_g: g, text_l: l } },
      neg: { class_type: 'CLIPTextEncode', inputs: { clip: ['ck', 1], text: 'blurry' } },
      empty: { class_type: 'EmptyLatentImage', inputs: { width: 64, height: 48, batch_size: 1 } },
      ks: { class_type: 'KSampler', inputs: { model: ['ck', 0], seed: 5, steps: 3, cfg: 6, sampler_name: 'euler', scheduler: 'normal', positive: ['pos', 0], negative: ['neg', 0], latent_image: ['empty', 0], denoise: 1 } },
      dec: { class_type: 'VAEDecode', inputs: { samples: ['ks', 0], vae: ['ck', 2] } },
      save: { class_type: 'SaveImage', inputs: { images: ['dec', 0], filename_prefix: 'emb' } },
    });
    const word = await run(srv, graph('a castle', 'a castle, oil'));
    assert.equal(word.error, undefined, JSON.stringify(word.error));
    const emb = await run(srv, graph('a embedding:xl_castle', 'a embedding:xl_castle, oil'));
    assert.equal(emb.error, undefined, JSON.stringify(emb.error));
    const a = await readOutput(srv, word.outputs.save.images[0]);
    const b = await readOutput(srv, emb.outputs.save.images[0]);
    let off = 0;
    a.data.forEach((v, i) => (off += Math.abs(v - b.data[i]!) > 1 ? 1 : 0));
    assert.equal(off, 0);
  });
});
