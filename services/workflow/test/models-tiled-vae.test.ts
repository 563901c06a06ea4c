/**
 * VAEDecodeTiled and VAEEncodeTiled against what the reference's own nodes
 * computed on the tiny checkpoint's VAE (test/fixtures/models-reference-tiled.json,
 * written by bench/workflow/models-reference-tiled.ts): three tilings
 * averaged, feathered overlaps, the decoder's overlap cut to a quarter tile,
 * the encoder's centre crop; and over HTTP, the nodes as the reference lists
 * them, progress per tile, and an overlap the encoder cannot tile as a clear error.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { onOneStorage } from '@svc/testkit';
import { loadCheckpoint, unloadAll, VaeModel } from '../src/models/sd1.ts';
import { decodeTiled, encodeTiled } from '../src/models/vae-tiled.ts';
import { startWorkflow } from './helpers.ts';
import { closeTo, pattern } from './models-compare.ts';
import { TINY, writeFixture } from './models-fixture.ts';
import { run, type Server } from './nodes-helpers.ts';

const ref = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'models-reference-tiled.json'), 'utf8'));
const quiet = { step: () => {}, checkInterrupt: () => {} };

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tiled-vae-'));
  writeFixture(path.join(dir, 'tiny.safetensors'), TINY);
});
after(async () => {
  await unloadAll();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('tiled VAE decode and encode', () => {
  test("decode: the reference's pixels for four tile/overlap settings", async () => {
    const vae = new VaeModel(await loadCheckpoint(path.join(dir, 'tiny.safetensors')));
    const z = pattern([2, 4, 20, 28], 2.0);
    for (const [key, [tile, overlap]] of Object.entries({ '64:16': [64, 16], '96:64': [96, 64], '128:32': [128, 32], '512:64': [512, 64] })) {
      const ov = tile < overlap * 4 ? Math.floor(tile / 4) : overlap;
      closeTo(await decodeTiled(vae, z, Math.floor(tile / 8), Math.floor(ov / 8), quiet), ref.decode[key], 1e-4, `decode ${key}`);
    }
  });

  test("encode: the reference's latents for four tile/overlap settings, the odd-sized image cropped about its centre", async () => {
    const vae = new VaeModel(await loadCheckpoint(path.join(dir, 'tiny.safetensors')));
    const p = pattern([1, 150, 226, 3], 1.5);
    const pixels = { shape: p.shape, data: p.data.map((v) => Math.min(1, Math.max(0, Math.fround(Math.fround(v + 1.5) / 3)))) };
    for (const [key, [tile, overlap]] of Object.entries({ '64:0': [64, 0], '128:32': [128, 32], '192:64': [192, 64], '512:64': [512, 64] })) {
      closeTo(await encodeTiled(vae, pixels, tile!, overlap!, quiet), ref.encode[key], 1e-4, `encode ${key}`);
    }
  });
});

onOneStorage('VAEDecodeTiled and VAEEncodeTiled nodes', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
    fs.mkdirSync(path.join(srv.cfg.dataDir, 'models', 'checkpoints'), { recursive: true });
    fs.copyFileSync(path.join(dir, 'tiny.safetensors'), path.join(srv.cfg.dataDir, 'models', 'checkpoints', 'tiny.safetensors'));
  });
  after(() => srv.close());

  test('listed as the reference lists them; decode → encode round trip with progress per tile; an overlap of half a tile is refused', async () => {
    const info = (await srv.http.get('/object_info')).body;
    assert.deepEqual(info.VAEDecodeTiled.input.required.tile_size, ['INT', { default: 512, min: 64, max: 4096, step: 32 }]);
    assert.deepEqual(info.VAEEncodeTiled.input.required.tile_size, ['INT', { default: 512, min: 64, max: 4096, step: 64 }]);
    assert.equal(info.VAEDecodeTiled.display_name, 'VAE Decode (Tiled)');
    assert.equal(info.VAEEncodeTiled.category, '_for_testing');
    const graph = (encTile: number, encOverlap: number) => ({
      ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'tiny.safetensors' } },
      empty: { class_type: 'EmptyLatentImage', inputs: { width: 160, height: 96, batch_size: 1 } },
      dec: { class_type: 'VAEDecodeTiled', inputs: { samples: ['empty', 0], vae: ['ck', 2], tile_size: 64, overlap: 32, temporal_size: 64, temporal_overlap: 8 } },
      enc: { class_type: 'VAEEncodeTiled', inputs: { pixels: ['dec', 0], vae: ['ck', 2], tile_size: encTile, overlap: encOverlap, temporal_size: 64, temporal_overlap: 8 } },
      save: { class_type: 'SaveLatent', inputs: { samples: ['enc', 0], filename_prefix: 'tiled' } },
    });
    const ok = await run(srv, graph(64, 0));
    assert.equal(ok.error, undefined, JSON.stringify(ok.error));
    const progress = ok.messages.filter((m) => m.type === 'progress' && m.data.node === 'dec');
    assert.ok(progress.length > 3, 'one progress message per tile');
    assert.equal(progress.at(-1)!.data.value, progress.at(-1)!.data.max);
    const bad = await run(srv, graph(64, 32));
    assert.equal(bad.error?.node_id, 'enc');
    assert.match(bad.error?.exception_message, /an overlap of 32 needs tiles of more than 64 pixels/);
  });
});
