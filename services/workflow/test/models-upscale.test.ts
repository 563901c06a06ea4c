import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { onOneStorage, type StorageKind } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';
import { image, putInput, readOutput, run, type Server } from './nodes-helpers.ts';
import { patternPixel, writeEsrgan } from './esrgan-fixture.ts';

/**
 * UpscaleModelLoader and ImageUpscaleWithModel on a tiny generated ESRGAN
 * (RRDBNet ×4). Expected bytes come from the reference's own tiled_scale
 * (tile 512, overlap 32) over the published RRDBNet forward pass in torch,
 * each tile's output clamped to [0, 1] as spandrel's model descriptor does:
 * bench/workflow/models-reference-esrgan.py <ComfyUI> <file> 560 24. The
 * 560-pixel-wide image takes two tiles, so the blended overlap is checked.
 */
const W = 560;
const H = 24;
const REFERENCE = {
  sum: 77857067,
  samples: [
    [0, 0, [100, 192, 169]],
    [1, 0, [52, 142, 122]],
    [5, 3, [54, 141, 101]],
    [2239, 95, [64, 158, 125]],
    [1919, 10, [48, 134, 162]],
    [1950, 40, [97, 178, 194]],
    [1985, 50, [57, 149, 150]],
    [2000, 20, [30, 111, 133]],
    [2047, 7, [0, 1, 141]],
    [2048, 90, [0, 44, 140]],
    [2100, 33, [0, 2, 88]],
    [1120, 48, [49, 137, 103]],
  ] as Array<[number, number, number[]]>,
};

function upscalePrompt(model: string, img = 'pattern.png') {
  return {
    '1': { class_type: 'LoadImage', inputs: { image: img } },
    '2': { class_type: 'UpscaleModelLoader', inputs: { model_name: model } },
    '3': { class_type: 'ImageUpscaleWithModel', inputs: { upscale_model: ['2', 0], image: ['1', 0] } },
    '4': { class_type: 'SaveImage', inputs: { images: ['3', 0], filename_prefix: 'up' } },
  };
}

onOneStorage('upscale models (ESRGAN)', (storage: StorageKind) => {
  let srv: Server;

  before(async () => {
    srv = await startWorkflow(storage);
    const dir = path.join(srv.cfg.dataDir, 'models', 'upscale_models');
    fs.mkdirSync(dir, { recursive: true });
    writeEsrgan(path.join(dir, 'tiny_x4.safetensors'), 'new');
    writeEsrgan(path.join(dir, 'tiny_x4_old.safetensors'), 'old');
    fs.writeFileSync(path.join(dir, 'garbage.safetensors'), Buffer.concat([Buffer.from([16, 0, 0, 0, 0, 0, 0, 0]), Buffer.from('{"a":{"dtype":1}')]));
    fs.writeFileSync(path.join(dir, 'pickle.pth'), 'not unpickled');
    await putInput(srv, 'pattern.png', image(W, H, 3, (x, y) => [0, 1, 2].map((c) => patternPixel(x, y, c))));
  });
  after(() => srv.close());

  test('object_info lists the folder and the two nodes as the reference', async () => {
    const info = (await srv.http.get('/object_info')).body;
    assert.deepEqual(info.UpscaleModelLoader.input.required.model_name[0], ['garbage.safetensors', 'pickle.pth', 'tiny_x4.safetensors', 'tiny_x4_old.safetensors']);
    assert.deepEqual(info.UpscaleModelLoader.output, ['UPSCALE_MODEL']);
    assert.equal(info.UpscaleModelLoader.category, 'loaders');
    assert.deepEqual(info.ImageUpscaleWithModel.input.required, { upscale_model: ['UPSCALE_MODEL'], image: ['IMAGE'] });
    assert.equal(info.ImageUpscaleWithModel.display_name, 'Upscale Image (using Model)');
    assert.equal(info.ImageUpscaleWithModel.category, 'image/upscaling');
  });

  for (const model of ['tiny_x4.safetensors', 'tiny_x4_old.safetensors']) {
    test(`${model}: ×4 in two blended tiles, the reference's bytes`, async () => {
      const r = await run(srv, upscalePrompt(model));
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      const px = await readOutput(srv, r.outputs['4'].images[0]);
      assert.deepEqual([px.width, px.height], [W * 4, H * 4]);
      for (const [x, y, want] of REFERENCE.samples) {
        const got = px.data.slice((y * px.width + x) * 3, (y * px.width + x) * 3 + 3);
        // ONNX Runtime and torch sum the convolutions in other orders: a byte may land one below or above.
        for (let c = 0; c < 3; c++) assert.ok(Math.abs(got[c]! - want[c]!) <= 1, `pixel ${x},${y}: ${got} vs ${want}`);
      }
      const sum = px.data.reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(sum - REFERENCE.sum) < px.data.length * 0.01, `byte sum ${sum} vs ${REFERENCE.sum}`);
      const progress = r.messages.filter((m) => m.type === 'progress' && m.data.node === '3');
      assert.equal(progress.at(-1)?.data.max, 2);
    });
  }

  test('hostile and unsupported files are node errors; an unknown name is refused at validation', async () => {
    const garbage = await run(srv, upscalePrompt('garbage.safetensors'));
    assert.equal(garbage.error?.node_id, '2');
    assert.equal(garbage.error?.exception_type, 'UnsupportedModelError');
    assert.match(garbage.error?.exception_message, /garbage\.safetensors/);
    const pickle = await run(srv, upscalePrompt('pickle.pth'));
    assert.match(pickle.error?.exception_message, /pickle\.pth: neither a PyTorch zip checkpoint/);
    const r = await srv.http.post('/prompt', { prompt: upscalePrompt('../../secret.safetensors') });
    assert.equal(r.status, 400);
    assert.equal(r.body.node_errors['2'].errors[0].type, 'value_not_in_list');
  });
});
