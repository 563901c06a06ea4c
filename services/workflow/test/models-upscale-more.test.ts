import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { onOneStorage, type StorageKind } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';
import { image, putInput, readOutput, run, type Server } from './nodes-helpers.ts';
import { patternPixel, UPSCALE_CASES, writeCompact, writeUpscaleCase } from './esrgan-fixture.ts';

/**
 * Real-ESRGAN's compact model (SRVGGNetCompact, ×4 and ×2) and its
 * pixel-unshuffled RRDBNet ×2 and ×1 through UpscaleModelLoader and
 * ImageUpscaleWithModel, against the bytes the reference computes with the
 * same files: spandrel's ModelLoader and comfy.utils.tiled_scale
 * (test/fixtures/models-reference-upscale.json, written by
 * bench/workflow/models-reference-upscale.ts). Each image is two tiles wide;
 * the unshuffled ones have odd sizes, so each tile is reflect-padded.
 */
const ref = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'models-reference-upscale.json'), 'utf8')) as Record<
  string,
  { scale: number; size: [number, number]; sum: number; samples: Array<[number, number, number[]]> }
>;

function upscalePrompt(model: string, img: string) {
  return {
    '1': { class_type: 'LoadImage', inputs: { image: img } },
    '2': { class_type: 'UpscaleModelLoader', inputs: { model_name: model } },
    '3': { class_type: 'ImageUpscaleWithModel', inputs: { upscale_model: ['2', 0], image: ['1', 0] } },
    '4': { class_type: 'SaveImage', inputs: { images: ['3', 0], filename_prefix: 'up' } },
  };
}

onOneStorage('upscale models (compact and pixel-unshuffled Real-ESRGAN)', (storage: StorageKind) => {
  let srv: Server;

  before(async () => {
    srv = await startWorkflow(storage);
    const dir = path.join(srv.cfg.dataDir, 'models', 'upscale_models');
    fs.mkdirSync(dir, { recursive: true });
    for (const c of UPSCALE_CASES) {
      writeUpscaleCase(path.join(dir, `${c.name}.safetensors`), c);
      await putInput(srv, `${c.name}.png`, image(c.width, c.height, 3, (x, y) => [0, 1, 2].map((ch) => patternPixel(x, y, ch))));
    }
    // Hostile: a compact model whose last conv does not give channels × scale², and one whose PReLU does not fit.
    writeCompact(path.join(dir, 'odd.safetensors'), { features: 4, convs: 1, scale: 2 });
    const odd = fs.readFileSync(path.join(dir, 'odd.safetensors'));
    const len = Number(odd.readBigUInt64LE(0));
    const header = JSON.parse(odd.subarray(8, 8 + len).toString());
    header['body.1.weight'].shape = [2];
    header['body.1.weight'].data_offsets = [header['body.1.weight'].data_offsets[0], header['body.1.weight'].data_offsets[0] + 8];
    let json = Buffer.from(JSON.stringify(header));
    json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
    const lenBuf = Buffer.alloc(8);
    lenBuf.writeBigUInt64LE(BigInt(json.length));
    fs.writeFileSync(path.join(dir, 'bad_prelu.safetensors'), Buffer.concat([lenBuf, json, odd.subarray(8 + len)]));
    await putInput(srv, 'tiny.png', image(1, 1, 3, () => [1, 2, 3]));
  });
  after(() => srv.close());

  for (const c of UPSCALE_CASES) {
    test(`${c.name}: ×${ref[c.name]!.scale} in two blended tiles, the reference's bytes`, async () => {
      const want = ref[c.name]!;
      const r = await run(srv, upscalePrompt(`${c.name}.safetensors`, `${c.name}.png`));
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      const px = await readOutput(srv, r.outputs['4'].images[0]);
      assert.deepEqual([px.width, px.height], want.size);
      for (const [x, y, rgb] of want.samples) {
        const got = px.data.slice((y * px.width + x) * 3, (y * px.width + x) * 3 + 3);
        // ONNX Runtime and torch sum the convolutions in other orders: a byte may land one below or above.
        for (let ch = 0; ch < 3; ch++) assert.ok(Math.abs(got[ch]! - rgb[ch]!) <= 1, `${c.name} pixel ${x},${y}: ${got} vs ${rgb}`);
      }
      const sum = px.data.reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(sum - want.sum) < px.data.length * 0.01, `byte sum ${sum} vs ${want.sum}`);
    });
  }

  test('a malformed compact model is a node error naming the file; a 1×1 image is padded (reflect, then replicate) as spandrel pads it', async () => {
    const bad = await run(srv, upscalePrompt('bad_prelu.safetensors', 'tiny.png'));
    assert.equal(bad.error?.node_id, '2');
    assert.match(bad.error?.exception_message, /bad_prelu\.safetensors: body\.1\.weight must be 4 PReLU slopes/);
    const small = await run(srv, upscalePrompt('rrdb_x1_unshuffle.safetensors', 'tiny.png'));
    assert.equal(small.error, undefined, JSON.stringify(small.error));
    const px = await readOutput(srv, small.outputs['4'].images[0]);
    assert.deepEqual([px.width, px.height], [1, 1]);
  });
});
