/**
 * The model nodes over HTTP and the WebSocket on a generated tiny SD1.x
 * checkpoint in <data-dir>/models/checkpoints: /object_info shapes, the
 * reference's default workflow (same SaveImage bytes as the reference on this
 * checkpoint, test/fixtures/models-reference.json), KSamplerAdvanced,
 * VAEEncode, CLIPSetLastLayer, progress, and clear errors for bad files and names.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { SUPPORTED_SAMPLERS } from '../src/models/samplers.ts';
import { SUPPORTED_SCHEDULERS } from '../src/models/schedules.ts';
import { unloadAll } from '../src/models/sd1.ts';
import { startWorkflow, WsClient } from './helpers.ts';
import { TINY, writeFixture } from './models-fixture.ts';
import { defaultWorkflow, readOutput, run, type Server } from './nodes-helpers.ts';

const ref = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'models-reference.json'), 'utf8'));

forEachStorage('workflow model nodes', (storage) => {
  let srv: Server;
  let ckptDir: string;
  before(async () => {
    srv = await startWorkflow(storage);
    ckptDir = path.join(srv.cfg.dataDir, 'models', 'checkpoints');
    fs.mkdirSync(path.join(ckptDir, 'sd1'), { recursive: true });
    writeFixture(path.join(ckptDir, 'sd1', 'tiny.safetensors'), TINY);
  });
  after(async () => {
    await srv.close();
    await unloadAll();
  });

  test('/object_info: the reference\'s inputs, outputs and categories; the checkpoint list and the samplers that work', async () => {
    const r = await srv.http.get('/object_info');
    assert.equal(r.status, 200);
    const ck = r.body.CheckpointLoaderSimple;
    assert.deepEqual(ck.input.required.ckpt_name, [['sd1/tiny.safetensors'], { tooltip: 'The name of the checkpoint (model) to load.' }]);
    assert.deepEqual(ck.output, ['MODEL', 'CLIP', 'VAE']);
    assert.deepEqual(ck.output_name, ['MODEL', 'CLIP', 'VAE']);
    assert.equal(ck.category, 'loaders');
    assert.equal(ck.python_module, 'nodes');
    const ks = r.body.KSampler;
    assert.deepEqual(ks.input.required.seed, ['INT', { default: 0, min: 0, max: 0xffffffffffffffff, control_after_generate: true, tooltip: 'The random seed used for creating the noise.' }]);
    assert.deepEqual(ks.input.required.sampler_name[0], [...SUPPORTED_SAMPLERS]);
    assert.deepEqual(ks.input.required.scheduler[0], [...SUPPORTED_SCHEDULERS]);
    assert.deepEqual(Object.keys(ks.input.required), ['model', 'seed', 'steps', 'cfg', 'sampler_name', 'scheduler', 'positive', 'negative', 'latent_image', 'denoise']);
    assert.deepEqual(ks.output, ['LATENT']);
    assert.equal(ks.category, 'sampling');
    const ka = r.body.KSamplerAdvanced;
    assert.deepEqual(ka.input.required.add_noise, [['enable', 'disable']]);
    assert.deepEqual(ka.input.required.return_with_leftover_noise, [['disable', 'enable']]);
    assert.deepEqual(Object.keys(ka.input.required), ['model', 'add_noise', 'noise_seed', 'steps', 'cfg', 'sampler_name', 'scheduler', 'positive', 'negative', 'latent_image', 'start_at_step', 'end_at_step', 'return_with_leftover_noise']);
    assert.deepEqual(r.body.CLIPTextEncode.input.required.text, ['STRING', { multiline: true, dynamicPrompts: true, tooltip: 'The text to be encoded.' }]);
    assert.deepEqual(r.body.CLIPTextEncode.output, ['CONDITIONING']);
    assert.deepEqual(r.body.VAEDecode.input.required, { samples: ['LATENT', { tooltip: 'The latent to be decoded.' }], vae: ['VAE', { tooltip: 'The VAE model used for decoding the latent.' }] });
    assert.deepEqual(r.body.VAEEncode.input.required, { pixels: ['IMAGE'], vae: ['VAE'] });
    assert.deepEqual(r.body.CLIPSetLastLayer.input.required.stop_at_clip_layer, ['INT', { default: -1, min: -24, max: -1, step: 1 }]);
    assert.equal(r.body.CheckpointLoader.deprecated, true);
  });

  test('the default workflow gives the reference\'s image on the same checkpoint, with progress per step and the prompt in the PNG', async () => {
    const res = await run(srv, defaultWorkflow('sd1/tiny.safetensors', 'default'));
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    const item = res.outputs['9'].images[0];
    const px = await readOutput(srv, item);
    assert.deepEqual([px.width, px.height, px.channels], [48, 32, 3]);
    const expected = Buffer.from(ref.default_workflow.bytes, 'base64');
    let off = 0;
    px.data.forEach((v, i) => {
      assert.ok(Math.abs(v - expected[i]!) <= 1, `byte ${i}: ${v} vs ${expected[i]}`);
      if (v !== expected[i]) off++;
    });
    assert.ok(off <= expected.length * 0.001, `${off} of ${expected.length} bytes differ by one level`);
    const progress = res.messages.filter((m) => m.type === 'progress' && m.data.node === '3');
    assert.ok(progress.length >= 1);
    assert.deepEqual(progress.at(-1)!.data.max, 20);
    assert.deepEqual(progress.at(-1)!.data.value, 20);
    const png = fs.readFileSync(path.join(srv.cfg.dataDir, item.type, item.subfolder, item.filename)).toString('latin1');
    assert.match(png, /tEXtprompt\0\{[^\0]*"4": ?\{"class_type": ?"CheckpointLoaderSimple"/);
  });

  test('KSamplerAdvanced in two halves, VAEEncode → KSampler with denoise, CLIPSetLastLayer: run and give finite images', async () => {
    const g = {
      ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sd1/tiny.safetensors' } },
      skip: { class_type: 'CLIPSetLastLayer', inputs: { clip: ['ck', 1], stop_at_clip_layer: -2 } },
      pos: { class_type: 'CLIPTextEncode', inputs: { text: 'a (red:1.2) cat', clip: ['skip', 0] } },
      neg: { class_type: 'CLIPTextEncode', inputs: { text: '', clip: ['skip', 0] } },
      empty: { class_type: 'EmptyLatentImage', inputs: { width: 32, height: 32, batch_size: 2 } },
      a: {
        class_type: 'KSamplerAdvanced',
        inputs: { model: ['ck', 0], add_noise: 'enable', noise_seed: 1, steps: 4, cfg: 5, sampler_name: 'dpmpp_2m', scheduler: 'karras', positive: ['pos', 0], negative: ['neg', 0], latent_image: ['empty', 0], start_at_step: 0, end_at_step: 2, return_with_leftover_noise: 'enable' },
      },
      b: {
        class_type: 'KSamplerAdvanced',
        inputs: { model: ['ck', 0], add_noise: 'disable', noise_seed: 1, steps: 4, cfg: 5, sampler_name: 'dpmpp_2m', scheduler: 'karras', positive: ['pos', 0], negative: ['neg', 0], latent_image: ['a', 0], start_at_step: 2, end_at_step: 10000, return_with_leftover_noise: 'disable' },
      },
      dec: { class_type: 'VAEDecode', inputs: { samples: ['b', 0], vae: ['ck', 2] } },
      enc: { class_type: 'VAEEncode', inputs: { pixels: ['dec', 0], vae: ['ck', 2] } },
      img2img: {
        class_type: 'KSampler',
        inputs: { model: ['ck', 0], seed: 2, steps: 3, cfg: 1, sampler_name: 'euler_ancestral', scheduler: 'simple', positive: ['pos', 0], negative: ['neg', 0], latent_image: ['enc', 0], denoise: 0.5 },
      },
      dec2: { class_type: 'VAEDecode', inputs: { samples: ['img2img', 0], vae: ['ck', 2] } },
      save: { class_type: 'SaveImage', inputs: { images: ['dec2', 0], filename_prefix: 'adv' } },
      // Inpainting: a mask of zeros keeps the encoded latent as it is (the sampler's output outside the mask is the input).
      zero: { class_type: 'SolidMask', inputs: { value: 0, width: 32, height: 32 } },
      masked: { class_type: 'SetLatentNoiseMask', inputs: { samples: ['enc', 0], mask: ['zero', 0] } },
      inpaint: {
        class_type: 'KSampler',
        inputs: { model: ['ck', 0], seed: 4, steps: 2, cfg: 3, sampler_name: 'ddim', scheduler: 'normal', positive: ['pos', 0], negative: ['neg', 0], latent_image: ['masked', 0], denoise: 1 },
      },
      dec3: { class_type: 'VAEDecode', inputs: { samples: ['inpaint', 0], vae: ['ck', 2] } },
      dec4: { class_type: 'VAEDecode', inputs: { samples: ['enc', 0], vae: ['ck', 2] } },
      kept: { class_type: 'SaveImage', inputs: { images: ['dec3', 0], filename_prefix: 'kept' } },
      orig: { class_type: 'SaveImage', inputs: { images: ['dec4', 0], filename_prefix: 'orig' } },
    };
    const res = await run(srv, g);
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    assert.equal(res.outputs.save.images.length, 2);
    const px = await readOutput(srv, res.outputs.save.images[0]);
    assert.deepEqual([px.width, px.height], [32, 32]);
    const kept = await readOutput(srv, res.outputs.kept.images[1]);
    const orig = await readOutput(srv, res.outputs.orig.images[1]);
    kept.data.forEach((v, i) => assert.ok(Math.abs(v - orig.data[i]!) <= 1, `masked-out pixel ${i}: ${v} vs ${orig.data[i]}`));
  });

  test('bad names fail validation; a malformed or pickled file is a node error naming the file; nothing half-loaded stays', async () => {
    let r = await srv.http.post('/prompt', { prompt: defaultWorkflow('../../secret.safetensors', 'x') });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.type, 'prompt_outputs_failed_validation');
    // The folder is read at validation (files come and go while the server runs), hence a custom validation.
    assert.equal(r.body.node_errors['4'].errors[0].type, 'custom_validation_failed');
    assert.match(r.body.node_errors['4'].errors[0].details, /ckpt_name: '\.\.\/\.\.\/secret\.safetensors' not in/);
    fs.writeFileSync(path.join(ckptDir, 'broken.safetensors'), Buffer.concat([Buffer.from([0xff, 0xff, 0, 0, 0, 0, 0, 0]), Buffer.from('{}')]));
    fs.writeFileSync(path.join(ckptDir, 'old.ckpt'), 'PK\u0003\u0004');
    for (const [name, re] of [
      ['broken.safetensors', /broken\.safetensors: header length 65535 runs past the end of the file/],
      ['old.ckpt', /old\.ckpt: file of 4 bytes is too short for a zip/],
    ] as const) {
      const res = await run(srv, defaultWorkflow(name, 'x'));
      assert.ok(res.error, `${name} fails`);
      assert.equal(res.error.node_id, '4');
      assert.equal(res.error.node_type, 'CheckpointLoaderSimple');
      assert.match(res.error.exception_message, re);
    }
    // A textual inversion that exists but is malformed is a node error naming the file (a missing one is left out, as the reference).
    fs.mkdirSync(path.join(srv.cfg.dataDir, 'models', 'embeddings'), { recursive: true });
    fs.writeFileSync(path.join(srv.cfg.dataDir, 'models', 'embeddings', 'style.safetensors'), 'x');
    const withEmbedding = defaultWorkflow('sd1/tiny.safetensors', 'emb', 16, 16);
    (withEmbedding['6'] as any).inputs.text = 'a cat, embedding:style';
    const emb = await run(srv, withEmbedding);
    assert.equal(emb.error?.node_id, '6');
    assert.match(emb.error.exception_message, /embedding:style: .*style\.safetensors: /);
    (withEmbedding['6'] as any).inputs.text = 'a cat, embedding:absent';
    assert.equal((await run(srv, withEmbedding)).error, undefined);
    // The server still runs prompts afterwards.
    const ok = await run(srv, defaultWorkflow('sd1/tiny.safetensors', 'again', 16, 16));
    assert.equal(ok.error, undefined, JSON.stringify(ok.error));
  });

  test('interrupt stops sampling between steps; the prompt ends interrupted and the next one runs', async () => {
    const clientId = randomUUID();
    const ws = new WsClient(srv.url, clientId);
    await ws.opened;
    try {
      const g = defaultWorkflow('sd1/tiny.safetensors', 'int', 16, 16);
      (g['3'] as any).inputs.steps = 10000;
      const r = await srv.http.post('/prompt', { prompt: g, client_id: clientId });
      assert.equal(r.status, 200);
      const id = r.body.prompt_id;
      await ws.until((ms) => ms.some((m) => m.type === 'progress' && m.data.prompt_id === id && m.data.node === '3'));
      const t0 = performance.now();
      assert.equal((await srv.http.post('/interrupt', { prompt_id: id })).status, 200);
      const msgs = await ws.promptDone(id);
      const interrupted = msgs.find((m) => m.type === 'execution_interrupted');
      assert.ok(interrupted, JSON.stringify(msgs.map((m) => m.type)));
      assert.equal(interrupted.data.node_id, '3');
      assert.ok(performance.now() - t0 < 5000, 'stopped within a few steps');
      const last = msgs.filter((m) => m.type === 'progress' && m.data.node === '3').at(-1)!;
      assert.ok(last.data.value < 10000);
    } finally {
      ws.close();
    }
    const ok = await run(srv, defaultWorkflow('sd1/tiny.safetensors', 'after', 16, 16));
    assert.equal(ok.error, undefined, JSON.stringify(ok.error));
  });
});
