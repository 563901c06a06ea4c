/**
 * The page's starter workflows that use models (src/web/editor/templates.js:
 * text to image, image to image, inpaint, ControlNet from edges, upscale),
 * queued over HTTP as the page sends them once a user has picked the files,
 * on generated models (smaller sizes and fewer steps so they run in seconds):
 * each validates, runs and saves its image.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { onOneStorage } from '@svc/testkit';
import { unloadAll } from '../src/models/sd1.ts';
import { writeEsrgan } from './esrgan-fixture.ts';
import { writeControlNet } from './models-control-fixture.ts';
import { TINY, writeFixture } from './models-fixture.ts';
import { startWorkflow } from './helpers.ts';
import { image, putInput, readOutput, run, type Server } from './nodes-helpers.ts';

type Template = { id: string; prompt: Record<string, { class_type: string; inputs: Record<string, unknown> }> };
// A browser module without type declarations: loaded as the page loads it.
const templatesModule: string = '../src/web/editor/templates.js';
const { TEMPLATES } = (await import(templatesModule)) as { TEMPLATES: Template[] };

onOneStorage('workflow model templates', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
    const models = path.join(srv.cfg.dataDir, 'models');
    for (const d of ['checkpoints', 'controlnet', 'upscale_models']) fs.mkdirSync(path.join(models, d), { recursive: true });
    writeFixture(path.join(models, 'checkpoints', 'tiny.safetensors'), TINY);
    writeControlNet(path.join(models, 'controlnet', 'cn.safetensors'), TINY);
    writeEsrgan(path.join(models, 'upscale_models', 'x4.safetensors'));
    // An RGBA photo stand-in whose transparent square is the inpainting mask.
    await putInput(srv, 'photo.png', image(64, 64, 4, (x, y) => [(x * 4) % 256, (y * 4) % 256, (x * y) % 256, x > 20 && x < 44 && y > 20 && y < 44 ? 0 : 255]));
  });
  after(async () => {
    await srv.close();
    await unloadAll();
  });

  const picks: Record<string, unknown> = { ckpt_name: 'tiny.safetensors', image: 'photo.png', control_net_name: 'cn.safetensors', model_name: 'x4.safetensors' };
  for (const id of ['txt2img', 'img2img', 'inpaint', 'controlnet', 'upscale']) {
    test(`the "${id}" template runs once its files are picked`, async () => {
      const t = TEMPLATES.find((x) => x.id === id)!;
      assert.ok(t, id);
      const prompt = structuredClone(t.prompt);
      for (const node of Object.values(prompt)) {
        for (const [k, v] of Object.entries(node.inputs)) if (v === '' && k in picks) node.inputs[k] = picks[k];
        if (node.class_type === 'EmptyLatentImage') Object.assign(node.inputs, { width: 64, height: 64 });
        if (node.class_type === 'KSampler') node.inputs.steps = 2;
      }
      const res = await run(srv, prompt);
      assert.equal(res.error, undefined, JSON.stringify(res.error));
      const save = Object.entries(prompt).find(([, n]) => n.class_type === 'SaveImage')![0];
      const px = await readOutput(srv, res.outputs[save].images[0]);
      assert.deepEqual([px.width, px.height], id === 'upscale' ? [256, 256] : [64, 64]);
      assert.ok(px.data.some((v) => v !== px.data[0]), 'not a blank image');
    });
  }
});
