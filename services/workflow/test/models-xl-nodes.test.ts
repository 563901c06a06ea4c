/**
 * SD2.x and SDXL over HTTP and the WebSocket (SQLite and PostgreSQL), on
 * generated checkpoints in <data-dir>/models/checkpoints: /object_info of the
 * SDXL text nodes, ModelSamplingDiscrete and RescaleCFG; an SDXL
 * CLIPTextEncodeSDXL → KSampler → VAEDecode → SaveImage workflow against the
 * reference's image on the same checkpoint (test/fixtures/models-reference-xl.json);
 * SDXL base + refiner in two KSamplerAdvanced halves; SD2.x v-prediction with
 * ModelSamplingDiscrete and RescaleCFG; img2img; and the errors a user meets
 * when mixing families or loading a broken file.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { onOneStorage } from '@svc/testkit';
import { unloadAll } from '../src/models/sd1.ts';
import { startWorkflow } from './helpers.ts';
import { TINY, writeFixture } from './models-fixture.ts';
import { REFINER_TINY, SD2_TINY, SDXL_TINY, writeSdxlTextEncoders, writeXLFixture } from './models-fixture-xl.ts';
import { readOutput, run, type Server } from './nodes-helpers.ts';

const ref = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'models-reference-xl.json'), 'utf8'));

onOneStorage('workflow SD2.x and SDXL nodes', (storage) => {
  let srv: Server;
  let ckptDir: string;
  before(async () => {
    srv = await startWorkflow(storage);
    ckptDir = path.join(srv.cfg.dataDir, 'models', 'checkpoints');
    fs.mkdirSync(ckptDir, { recursive: true });
    writeXLFixture(path.join(ckptDir, 'sdxl.safetensors'), SDXL_TINY);
    writeXLFixture(path.join(ckptDir, 'refiner.safetensors'), REFINER_TINY);
    writeXLFixture(path.join(ckptDir, 'sd2-v.safetensors'), { ...SD2_TINY, vpredSpread: true });
    writeXLFixture(path.join(ckptDir, 'sd2.safetensors'), SD2_TINY);
    writeXLFixture(path.join(ckptDir, 'sd2-inpaint.safetensors'), { ...SD2_TINY, unet: { ...SD2_TINY.unet, inChannels: 9 } });
    writeFixture(path.join(ckptDir, 'sd1.safetensors'), TINY);
    const te = path.join(srv.cfg.dataDir, 'models', 'text_encoders');
    fs.mkdirSync(te, { recursive: true });
    await writeSdxlTextEncoders(path.join(ckptDir, 'sdxl.safetensors'), path.join(te, 'clip_l.safetensors'), path.join(te, 'clip_g.safetensors'), 'hf');
  });
  after(async () => {
    await srv.close();
    await unloadAll();
  });

  test('/object_info: the SDXL text nodes, ModelSamplingDiscrete and RescaleCFG as the reference lists them', async () => {
    const r = await srv.http.get('/object_info');
    assert.equal(r.status, 200);
    const xl = r.body.CLIPTextEncodeSDXL;
    assert.deepEqual(Object.keys(xl.input.required), ['clip', 'width', 'height', 'crop_w', 'crop_h', 'target_width', 'target_height', 'text_g', 'text_l']);
    assert.deepEqual(xl.input.required.width, ['INT', { default: 1024, min: 0, max: 16384 }]);
    assert.deepEqual(xl.input.required.text_g, ['STRING', { multiline: true, dynamicPrompts: true }]);
    assert.deepEqual(xl.output, ['CONDITIONING']);
    assert.equal(xl.category, 'advanced/conditioning');
    assert.equal(xl.python_module, 'comfy_extras.nodes_clip_sdxl');
    const rf = r.body.CLIPTextEncodeSDXLRefiner;
    assert.deepEqual(Object.keys(rf.input.required), ['ascore', 'width', 'height', 'text', 'clip']);
    assert.deepEqual(rf.input.required.ascore, ['FLOAT', { default: 6.0, min: 0.0, max: 1000.0, step: 0.01 }]);
    const ms = r.body.ModelSamplingDiscrete;
    assert.deepEqual(ms.input.required.sampling, [['eps', 'v_prediction', 'lcm', 'x0', 'img_to_img']]);
    assert.deepEqual(ms.input.required.zsnr, ['BOOLEAN', { default: false }]);
    assert.equal(ms.category, 'advanced/model');
    assert.deepEqual(r.body.RescaleCFG.input.required.multiplier, ['FLOAT', { default: 0.7, min: 0.0, max: 1.0, step: 0.01 }]);
    const dual = r.body.DualCLIPLoader;
    assert.deepEqual(dual.input.required.clip_name1, [['clip_g.safetensors', 'clip_l.safetensors']]);
    assert.deepEqual(dual.input.required.type, [['sdxl']]);
    assert.deepEqual(dual.input.optional.device, [['default', 'cpu'], { advanced: true }]);
    assert.deepEqual(dual.output, ['CLIP']);
    assert.equal(dual.category, 'advanced/loaders');
    assert.ok(r.body.CheckpointLoaderSimple.input.required.ckpt_name[0].includes('sdxl.safetensors'));
  });

  for (const via of ['checkpoint', 'DualCLIPLoader'] as const) {
    test(`SDXL: CLIPTextEncodeSDXL → KSampler → VAEDecode gives the reference\'s image on the same checkpoint (CLIP from the ${via})`, async () => {
      const clip = via === 'checkpoint' ? ['ck', 1] : ['dual', 0];
      const enc = (text_g: string, text_l: string) => ({
        class_type: 'CLIPTextEncodeSDXL',
        inputs: { clip, width: 512, height: 512, crop_w: 0, crop_h: 0, target_width: 512, target_height: 512, text_g, text_l },
      });
      const res = await run(srv, {
        dual: { class_type: 'DualCLIPLoader', inputs: { clip_name1: 'clip_g.safetensors', clip_name2: 'clip_l.safetensors', type: 'sdxl' } },
        ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sdxl.safetensors' } },
        pos: enc('a castle', 'a castle, oil'),
        neg: enc('blurry', 'blurry'),
        empty: { class_type: 'EmptyLatentImage', inputs: { width: 64, height: 48, batch_size: 1 } },
        ks: {
          class_type: 'KSampler',
          inputs: { model: ['ck', 0], seed: 22, steps: 5, cfg: 7, sampler_name: 'euler_ancestral', scheduler: 'karras', positive: ['pos', 0], negative: ['neg', 0], latent_image: ['empty', 0], denoise: 1 },
        },
        dec: { class_type: 'VAEDecode', inputs: { samples: ['ks', 0], vae: ['ck', 2] } },
        save: { class_type: 'SaveImage', inputs: { images: ['dec', 0], filename_prefix: 'sdxl' } },
      });
      assert.equal(res.error, undefined, JSON.stringify(res.error));
      const px = await readOutput(srv, res.outputs.save.images[0]);
      assert.deepEqual([px.width, px.height, px.channels], [64, 48, 3]);
      const expected = Buffer.from(ref.sdxl.workflow.bytes, 'base64');
      let worst = 0;
      let off = 0;
      px.data.forEach((v, i) => {
        worst = Math.max(worst, Math.abs(v - expected[i]!));
        if (Math.abs(v - expected[i]!) > 1) off++;
      });
      assert.ok(off <= expected.length * 0.001, `${off} of ${expected.length} bytes differ by more than one level (worst ${worst})`);
    });
  }

  test('SDXL base + refiner (KSamplerAdvanced halves, CLIPTextEncodeSDXLRefiner), SD2 v-prediction, ModelSamplingDiscrete, RescaleCFG, img2img', async () => {
    const res = await run(srv, {
      base: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sdxl.safetensors' } },
      refiner: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'refiner.safetensors' } },
      bpos: { class_type: 'CLIPTextEncode', inputs: { text: 'a (castle:1.2) at dusk', clip: ['base', 1] } },
      bneg: { class_type: 'CLIPTextEncode', inputs: { text: 'blurry', clip: ['base', 1] } },
      rpos: { class_type: 'CLIPTextEncodeSDXLRefiner', inputs: { ascore: 6, width: 1024, height: 1024, text: 'a castle at dusk', clip: ['refiner', 1] } },
      rneg: { class_type: 'CLIPTextEncodeSDXLRefiner', inputs: { ascore: 2.5, width: 1024, height: 1024, text: 'blurry', clip: ['refiner', 1] } },
      empty: { class_type: 'EmptyLatentImage', inputs: { width: 64, height: 64, batch_size: 1 } },
      first: {
        class_type: 'KSamplerAdvanced',
        inputs: { model: ['base', 0], add_noise: 'enable', noise_seed: 5, steps: 6, cfg: 6, sampler_name: 'euler', scheduler: 'normal', positive: ['bpos', 0], negative: ['bneg', 0], latent_image: ['empty', 0], start_at_step: 0, end_at_step: 4, return_with_leftover_noise: 'enable' },
      },
      second: {
        class_type: 'KSamplerAdvanced',
        inputs: { model: ['refiner', 0], add_noise: 'disable', noise_seed: 5, steps: 6, cfg: 6, sampler_name: 'euler', scheduler: 'normal', positive: ['rpos', 0], negative: ['rneg', 0], latent_image: ['first', 0], start_at_step: 4, end_at_step: 10000, return_with_leftover_noise: 'disable' },
      },
      dec: { class_type: 'VAEDecode', inputs: { samples: ['second', 0], vae: ['refiner', 2] } },
      save: { class_type: 'SaveImage', inputs: { images: ['dec', 0], filename_prefix: 'refined' } },
      sd2: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sd2.safetensors' } },
      v: { class_type: 'ModelSamplingDiscrete', inputs: { model: ['sd2', 0], sampling: 'v_prediction', zsnr: true } },
      rescale: { class_type: 'RescaleCFG', inputs: { model: ['v', 0], multiplier: 0.7 } },
      skip: { class_type: 'CLIPSetLastLayer', inputs: { clip: ['sd2', 1], stop_at_clip_layer: -1 } },
      spos: { class_type: 'CLIPTextEncode', inputs: { text: 'a lighthouse', clip: ['skip', 0] } },
      sneg: { class_type: 'CLIPTextEncode', inputs: { text: '', clip: ['skip', 0] } },
      sks: {
        class_type: 'KSampler',
        inputs: { model: ['rescale', 0], seed: 9, steps: 3, cfg: 5, sampler_name: 'dpmpp_2m', scheduler: 'karras', positive: ['spos', 0], negative: ['sneg', 0], latent_image: ['empty', 0], denoise: 1 },
      },
      sdec: { class_type: 'VAEDecode', inputs: { samples: ['sks', 0], vae: ['sd2', 2] } },
      // img2img on the SD2 v checkpoint: encode the decoded image and resample half of it.
      sv: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sd2-v.safetensors' } },
      senc: { class_type: 'VAEEncode', inputs: { pixels: ['sdec', 0], vae: ['sv', 2] } },
      vpos: { class_type: 'CLIPTextEncode', inputs: { text: 'a lighthouse', clip: ['sv', 1] } },
      i2i: {
        class_type: 'KSampler',
        inputs: { model: ['sv', 0], seed: 3, steps: 4, cfg: 4, sampler_name: 'euler', scheduler: 'normal', positive: ['vpos', 0], negative: ['sneg', 0], latent_image: ['senc', 0], denoise: 0.5 },
      },
      idec: { class_type: 'VAEDecode', inputs: { samples: ['i2i', 0], vae: ['sv', 2] } },
      save2: { class_type: 'SaveImage', inputs: { images: ['idec', 0], filename_prefix: 'sd2' } },
    });
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    for (const [node, size] of [
      ['save', 64],
      ['save2', 64],
    ] as const) {
      const px = await readOutput(srv, res.outputs[node].images[0]);
      assert.deepEqual([px.width, px.height], [size, size]);
      assert.ok(new Set(px.data).size > 16, `${node}: not a flat image`);
    }
    const progress = res.messages.filter((m) => m.type === 'progress' && m.data.node === 'second');
    assert.equal(progress.at(-1)?.data.max, 2);
  });

  test('VAEEncodeForInpaint: object_info, and a masked SD2 inpaint with a grown mask runs to an image', async () => {
    const info = (await srv.http.get('/object_info/VAEEncodeForInpaint')).body.VAEEncodeForInpaint;
    assert.deepEqual(info.input.required, { pixels: ['IMAGE'], vae: ['VAE'], mask: ['MASK'], grow_mask_by: ['INT', { default: 6, min: 0, max: 64, step: 1 }] });
    assert.equal(info.category, 'latent/inpaint');
    assert.equal(info.display_name, 'VAE Encode (for Inpainting)');
    const res = await run(srv, {
      ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sd2.safetensors' } },
      img: { class_type: 'EmptyImage', inputs: { width: 44, height: 36, batch_size: 1, color: 0x336699 } },
      mask: { class_type: 'SolidMask', inputs: { value: 1, width: 16, height: 16 } },
      pad: { class_type: 'MaskComposite', inputs: { destination: ['zero', 0], source: ['mask', 0], x: 8, y: 8, operation: 'add' } },
      zero: { class_type: 'SolidMask', inputs: { value: 0, width: 44, height: 36 } },
      enc: { class_type: 'VAEEncodeForInpaint', inputs: { pixels: ['img', 0], vae: ['ck', 2], mask: ['pad', 0], grow_mask_by: 6 } },
      pos: { class_type: 'CLIPTextEncode', inputs: { text: 'a window', clip: ['ck', 1] } },
      ks: {
        class_type: 'KSampler',
        inputs: { model: ['ck', 0], seed: 2, steps: 2, cfg: 4, sampler_name: 'euler', scheduler: 'normal', positive: ['pos', 0], negative: ['pos', 0], latent_image: ['enc', 0], denoise: 1 },
      },
      dec: { class_type: 'VAEDecode', inputs: { samples: ['ks', 0], vae: ['ck', 2] } },
      save: { class_type: 'SaveImage', inputs: { images: ['dec', 0], filename_prefix: 'inpaint' } },
    });
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    const px = await readOutput(srv, res.outputs.save.images[0]);
    // Cropped to the VAE's 8-pixel cell as the reference: 44×36 → 40×32.
    assert.deepEqual([px.width, px.height], [40, 32]);
  });

  test('InpaintModelConditioning into a 9-channel inpainting checkpoint: object_info, and a run to an image', async () => {
    const info = (await srv.http.get('/object_info/InpaintModelConditioning')).body.InpaintModelConditioning;
    assert.deepEqual(Object.keys(info.input.required), ['positive', 'negative', 'vae', 'pixels', 'mask', 'noise_mask']);
    assert.deepEqual(info.output, ['CONDITIONING', 'CONDITIONING', 'LATENT']);
    assert.deepEqual(info.output_name, ['positive', 'negative', 'latent']);
    assert.equal(info.category, 'conditioning/inpaint');
    const res = await run(srv, {
      ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sd2-inpaint.safetensors' } },
      img: { class_type: 'EmptyImage', inputs: { width: 48, height: 40, batch_size: 1, color: 0x336699 } },
      zero: { class_type: 'SolidMask', inputs: { value: 0, width: 48, height: 40 } },
      hole: { class_type: 'SolidMask', inputs: { value: 1, width: 16, height: 16 } },
      mask: { class_type: 'MaskComposite', inputs: { destination: ['zero', 0], source: ['hole', 0], x: 16, y: 16, operation: 'add' } },
      pos: { class_type: 'CLIPTextEncode', inputs: { text: 'a window', clip: ['ck', 1] } },
      neg: { class_type: 'CLIPTextEncode', inputs: { text: '', clip: ['ck', 1] } },
      cond: { class_type: 'InpaintModelConditioning', inputs: { positive: ['pos', 0], negative: ['neg', 0], vae: ['ck', 2], pixels: ['img', 0], mask: ['mask', 0], noise_mask: true } },
      ks: {
        class_type: 'KSampler',
        inputs: { model: ['ck', 0], seed: 7, steps: 3, cfg: 5, sampler_name: 'euler', scheduler: 'normal', positive: ['cond', 0], negative: ['cond', 1], latent_image: ['cond', 2], denoise: 1 },
      },
      dec: { class_type: 'VAEDecode', inputs: { samples: ['ks', 0], vae: ['ck', 2] } },
      save: { class_type: 'SaveImage', inputs: { images: ['dec', 0], filename_prefix: 'inpaint9' } },
      orig: { class_type: 'VAEEncode', inputs: { pixels: ['img', 0], vae: ['ck', 2] } },
      odec: { class_type: 'VAEDecode', inputs: { samples: ['orig', 0], vae: ['ck', 2] } },
      osave: { class_type: 'SaveImage', inputs: { images: ['odec', 0], filename_prefix: 'orig9' } },
    });
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    const a = await readOutput(srv, res.outputs.save.images[0]);
    const b = await readOutput(srv, res.outputs.osave.images[0]);
    assert.deepEqual([a.width, a.height], [48, 40]);
    // The values themselves are compared with the reference in models-xl.test.ts (the VAE's global attention spreads
    // the hole's change over the whole decoded image, so pixels outside it are not the original's either).
    assert.ok(new Set(a.data).size > 16, 'not a flat image');
    assert.notDeepEqual(a.data, b.data);
  });

  test('mixing families and broken files: clear node errors, and the server keeps running', async () => {
    // SD1 CLIP into CLIPTextEncodeSDXL.
    let res = await run(srv, {
      ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sd1.safetensors' } },
      e: { class_type: 'CLIPTextEncodeSDXL', inputs: { clip: ['ck', 1], width: 64, height: 64, crop_w: 0, crop_h: 0, target_width: 64, target_height: 64, text_g: 'a', text_l: 'b' } },
      z: { class_type: 'ConditioningZeroOut', inputs: { conditioning: ['e', 0] } },
      p: { class_type: 'PreviewAny', inputs: { source: ['z', 0] } },
    });
    assert.equal(res.error?.node_id, 'e');
    assert.match(res.error.exception_message, /needs an SDXL text encoder/);
    // SD1 conditioning into the SDXL model.
    res = await run(srv, {
      sd1: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sd1.safetensors' } },
      xl: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sdxl.safetensors' } },
      pos: { class_type: 'CLIPTextEncode', inputs: { text: 'a', clip: ['sd1', 1] } },
      empty: { class_type: 'EmptyLatentImage', inputs: { width: 32, height: 32, batch_size: 1 } },
      ks: {
        class_type: 'KSampler',
        inputs: { model: ['xl', 0], seed: 1, steps: 1, cfg: 2, sampler_name: 'euler', scheduler: 'normal', positive: ['pos', 0], negative: ['pos', 0], latent_image: ['empty', 0], denoise: 1 },
      },
      dec: { class_type: 'VAEDecode', inputs: { samples: ['ks', 0], vae: ['xl', 2] } },
      save: { class_type: 'SaveImage', inputs: { images: ['dec', 0], filename_prefix: 'mix' } },
    });
    assert.equal(res.error?.node_id, 'ks');
    assert.match(res.error.exception_message, /pooled_output|width 32/);
    // An SDXL file whose adm width does not fit its text encoder.
    const src = fs.readFileSync(path.join(ckptDir, 'sdxl.safetensors'));
    const n = Number(src.readBigUInt64LE(0));
    const header = JSON.parse(src.subarray(8, 8 + n).toString('utf8'));
    header['model.diffusion_model.label_emb.0.0.weight'].shape = [512, 832];
    const json = Buffer.from(JSON.stringify(header).padEnd(n, ' '));
    fs.writeFileSync(path.join(ckptDir, 'bad-xl.safetensors'), Buffer.concat([src.subarray(0, 8), json, src.subarray(8 + n)]));
    res = await run(srv, {
      ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'bad-xl.safetensors' } },
      e: { class_type: 'CLIPTextEncode', inputs: { text: 'a', clip: ['ck', 1] } },
      p: { class_type: 'PreviewAny', inputs: { source: ['e', 0] } },
    });
    assert.equal(res.error?.node_id, 'ck');
    assert.match(res.error.exception_message, /bad-xl\.safetensors: the UNet's adm_in_channels 832 is not the pooled width 128 \+ 1536/);
    const ok = await run(srv, {
      ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sd2-v.safetensors' } },
      e: { class_type: 'CLIPTextEncode', inputs: { text: 'a', clip: ['ck', 1] } },
      p: { class_type: 'PreviewAny', inputs: { source: ['e', 0] } },
    });
    assert.equal(ok.error, undefined, JSON.stringify(ok.error));
  });
});
