/**
 * The reference's own ControlNet example (ComfyUI_examples,
 * controlnet/controlnet_example.png: its embedded prompt, test/fixtures/examples)
 * queued unchanged over HTTP and the WebSocket, with generated models written
 * under the file names it asks for (a PyTorch .ckpt checkpoint, a VAE, a
 * ControlNet) and its scribble image: the reference's image on the same
 * models (bench/workflow/models-reference-control.ts runs the reference's
 * nodes on the same graph).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { onOneStorage } from '@svc/testkit';
import { SafetensorsFile } from '../src/models/safetensors.ts';
import { unloadAll } from '../src/models/sd1.ts';
import { startWorkflow } from './helpers.ts';
import { readReference } from './models-compare.ts';
import { EXAMPLE_TINY, writeControlNet } from './models-control-fixture.ts';
import { writeTensors } from './models-fixture-xl.ts';
import { writeFixture } from './models-fixture.ts';
import { readOutput, run, type Server } from './nodes-helpers.ts';
import { safetensorsToTorch } from './torch-zip-writer.ts';

const EXAMPLES = path.join(import.meta.dirname, 'fixtures', 'examples');
const ref = readReference('models-reference-control.json');

onOneStorage('the reference\'s ControlNet example workflow', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
    const models = path.join(srv.cfg.dataDir, 'models');
    for (const d of ['checkpoints', 'vae', 'controlnet']) fs.mkdirSync(path.join(models, d), { recursive: true });
    const twin = path.join(srv.cfg.dataDir, 'tiny.safetensors');
    writeFixture(twin, EXAMPLE_TINY);
    await safetensorsToTorch(twin, path.join(models, 'checkpoints', 'Anything-V3.0.ckpt'));
    // VAELoader's file: the checkpoint's own VAE weights, under the single-file VAE names.
    const f = await SafetensorsFile.open(twin);
    const vae = new Map<string, { shape: number[]; data: Float32Array }>();
    for (const [k, info] of f.tensors) if (k.startsWith('first_stage_model.')) vae.set(k.slice('first_stage_model.'.length), { shape: [...info.shape], data: await f.readFloat32(k) });
    writeTensors(path.join(models, 'vae', 'vae-ft-mse-840000-ema-pruned.safetensors'), vae);
    writeControlNet(path.join(models, 'controlnet', 'control_scribble.safetensors'), EXAMPLE_TINY);
    const input = path.join(srv.cfg.dataDir, 'input');
    fs.mkdirSync(input, { recursive: true });
    fs.copyFileSync(path.join(EXAMPLES, 'input_scribble_example.png'), path.join(input, 'input_scribble_example.png'));
  });
  after(async () => {
    await srv.close();
    await unloadAll();
  });

  test('controlnet_example.png\'s prompt, unchanged, gives the reference\'s image', async () => {
    const prompt = JSON.parse(fs.readFileSync(path.join(EXAMPLES, 'controlnet_example.json'), 'utf8'));
    const res = await run(srv, prompt);
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    const px = await readOutput(srv, res.outputs['9'].images[0]);
    assert.deepEqual([px.width, px.height, px.channels], [512, 512, 3]);
    const expected = Buffer.from(ref.example_controlnet.bytes, 'base64');
    let off = 0;
    let worst = 0;
    px.data.forEach((v, i) => {
      const d = Math.abs(v - expected[i]!);
      worst = Math.max(worst, d);
      if (d > 1) off++;
    });
    assert.ok(off <= expected.length * 0.001, `${off} of ${expected.length} bytes differ by more than one level (worst ${worst})`);
  });
});
