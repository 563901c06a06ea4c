/**
 * The conditioning nodes that set keys for other model families (Flux,
 * edit models, Stable Audio, video areas) on a tiny SD1.x checkpoint: their
 * /object_info, an SD sampler ignoring the keys it does not read (the same
 * bytes as without them, as the reference's sampler ignores them), and the
 * reference's mapping of a video percentage area onto a 2-D latent (sizes
 * from the first half of the values, offsets from the second).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { unloadAll } from '../src/models/sd1.ts';
import { startWorkflow } from './helpers.ts';
import { TINY, writeFixture } from './models-fixture.ts';
import { readOutput, run, type Server } from './nodes-helpers.ts';

/** Checkpoint, prompts, sampler and decode; `positive` rewires the positive conditioning through extra nodes. */
function workflow(prefix: string, extra: Record<string, unknown> = {}, positive: [string, number] = ['6', 0]): Record<string, unknown> {
  return {
    '4': { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'tiny.safetensors' } },
    '5': { class_type: 'EmptyLatentImage', inputs: { width: 48, height: 32, batch_size: 1 } },
    '6': { class_type: 'CLIPTextEncode', inputs: { text: 'a red bottle', clip: ['4', 1] } },
    '7': { class_type: 'CLIPTextEncode', inputs: { text: 'blur', clip: ['4', 1] } },
    ...extra,
    '3': { class_type: 'KSampler', inputs: { seed: 7, steps: 3, cfg: 6, sampler_name: 'euler', scheduler: 'normal', denoise: 1, model: ['4', 0], positive, negative: ['7', 0], latent_image: ['5', 0] } },
    '8': { class_type: 'VAEDecode', inputs: { samples: ['3', 0], vae: ['4', 2] } },
    '9': { class_type: 'SaveImage', inputs: { filename_prefix: prefix, images: ['8', 0] } },
  };
}

forEachStorage('conditioning nodes of other model families', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
    const dir = path.join(srv.cfg.dataDir, 'models', 'checkpoints');
    fs.mkdirSync(dir, { recursive: true });
    writeFixture(path.join(dir, 'tiny.safetensors'), TINY);
  });
  after(async () => {
    await srv.close();
    await unloadAll();
  });

  async function bytes(prompt: Record<string, unknown>): Promise<number[]> {
    const r = await run(srv, prompt);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    return (await readOutput(srv, r.outputs['9'].images[0])).data;
  }

  test('/object_info as the reference', async () => {
    const info = (await srv.http.get('/object_info')).body;
    assert.deepEqual(info.FluxGuidance.input.required.guidance, ['FLOAT', { default: 3.5, min: 0.0, max: 100.0, step: 0.1 }]);
    assert.equal(info.FluxGuidance.category, 'advanced/conditioning/flux');
    assert.equal(info.FluxDisableGuidance.description, 'This node completely disables the guidance embed on Flux and Flux like models');
    assert.equal(info.FluxKontextMultiReferenceLatentMethod.experimental, true);
    assert.deepEqual(info.ReferenceLatent.input.optional, { latent: ['LATENT'] });
    assert.deepEqual(info.ConditioningStableAudio.output_name, ['positive', 'negative']);
    assert.deepEqual(Object.keys(info.ConditioningSetAreaPercentageVideo.input.required), ['conditioning', 'width', 'height', 'temporal', 'x', 'y', 'z', 'strength']);
  });

  test('an SD sampler ignores the keys these nodes set: the same image as without them', async () => {
    const plain = await bytes(workflow('plain'));
    const chained = await bytes(
      workflow(
        'chained',
        {
          '10': { class_type: 'FluxGuidance', inputs: { conditioning: ['6', 0], guidance: 2.5 } },
          '11': { class_type: 'FluxDisableGuidance', inputs: { conditioning: ['10', 0] } },
          '12': { class_type: 'FluxKontextMultiReferenceLatentMethod', inputs: { conditioning: ['11', 0], reference_latents_method: 'uxo/uno' } },
          '13': { class_type: 'ReferenceLatent', inputs: { conditioning: ['12', 0], latent: ['5', 0] } },
          '14': { class_type: 'ReferenceLatent', inputs: { conditioning: ['13', 0] } },
          '15': { class_type: 'ConditioningStableAudio', inputs: { positive: ['14', 0], negative: ['7', 0], seconds_start: 1, seconds_total: 30 } },
        },
        ['15', 0],
      ),
    );
    assert.deepEqual(chained, plain);
  });

  test('a video percentage area on a 2-D latent: sizes from (temporal, height), offsets from (z, y), as the reference resolves it', async () => {
    // The reference's resolve_areas_and_cond_masks_multidim reads [t, h, w, z, y, x] on a [h, w] latent as sizes (t, h) and offsets (z, y).
    const video = await bytes(
      workflow('video', { '10': { class_type: 'ConditioningSetAreaPercentageVideo', inputs: { conditioning: ['6', 0], width: 1, height: 0.5, temporal: 0.75, x: 0, y: 0.25, z: 0.5, strength: 1.5 } } }, ['10', 0]),
    );
    const same = await bytes(
      workflow('same', { '10': { class_type: 'ConditioningSetAreaPercentage', inputs: { conditioning: ['6', 0], width: 0.5, height: 0.75, x: 0.25, y: 0.5, strength: 1.5 } } }, ['10', 0]),
    );
    assert.deepEqual(video, same);
    const plain = await bytes(workflow('plain2'));
    assert.notDeepEqual(video, plain);
  });
});
