/**
 * Outpainting chains against what the reference's own nodes computed on the
 * tiny checkpoint's VAE (test/fixtures/models-reference-outpaint.json, written
 * by bench/workflow/models-reference-outpaint.ts): ImagePadForOutpaint's
 * padded image and feathered mask, then VAEEncodeForInpaint (grown noise mask)
 * and InpaintModelConditioning (concat latent and mask on both conditionings,
 * the latent and its noise mask), the nodes called directly and queued over
 * HTTP (LoadImage → ImageBatch → ImagePadForOutpaint → … → SaveLatent).
 *
 * The service's IMAGE is 8-bit, so the padded grey 0.5 is 128/255 here.
 * VAEEncodeForInpaint greys every pixel under the rounded mask itself, so its
 * chain is the reference's to float precision; InpaintModelConditioning
 * encodes the padded image as it is, so its latent is compared with the
 * reference's on the image rounded to bytes (`latent_bytes`), and with the
 * all-float chain within what the 0.002 grey step moves it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { onOneStorage } from '@svc/testkit';
import { loadCheckpoint, unloadAll, VaeModel, type FloatTensor } from '../src/models/sd1.ts';
import type { NodeContext, NodeDefinition } from '../src/nodes/api.ts';
import { Frame, ImageBatch, MaskBatch } from '../src/nodes/image-types.ts';
import { imageTransformNodes } from '../src/nodes/image-transform.ts';
import { Tensor } from '../src/nodes/latent.ts';
import { decodeSafetensors } from '../src/nodes/safetensors.ts';
import { inpaintNodes } from '../src/nodes/sd/inpaint-nodes.ts';
import { startWorkflow } from './helpers.ts';
import { closeTo, readReference, type Summary } from './models-compare.ts';
import { TINY, writeFixture } from './models-fixture.ts';
import { loaded, run, savedMask, type Pixels, type Server } from './nodes-helpers.ts';

const ref = readReference('models-reference-outpaint.json');
/**
 * The tiny VAE's encoder against torch's, as models-tiled-vae.test.ts allows: on these inputs the largest
 * difference measured was 3.6e-5 (the pixels it encodes are the reference's bit for bit; the order of the
 * float32 sums in its convolutions and attention is not).
 */
const VAE_TOL = 1e-4;

/** The settings models-reference-outpaint.py ran (its CASES). */
const CASES = [
  { name: 'feathered', width: 45, height: 37, batch: 2, left: 16, top: 8, right: 0, bottom: 24, feathering: 12, grow: 6 },
  { name: 'plain', width: 40, height: 32, batch: 1, left: 0, top: 0, right: 32, bottom: 0, feathering: 40, grow: 0 },
  { name: 'all-sides', width: 24, height: 24, batch: 1, left: 8, top: 8, right: 8, bottom: 16, feathering: 5, grow: 3 },
];
type Case = (typeof CASES)[number];

/** Frame k of the reference script's image: bytes (37x + 11y + 71c + 5((xy) mod 13) + 53k) mod 256. */
function pixels(c: Case, k: number): Pixels {
  const data: number[] = [];
  for (let y = 0; y < c.height; y++) for (let x = 0; x < c.width; x++) for (let ch = 0; ch < 3; ch++) data.push((37 * x + 11 * y + 71 * ch + 5 * ((x * y) % 13) + 53 * k) % 256);
  return { width: c.width, height: c.height, channels: 3, data };
}

const node = (defs: NodeDefinition[], name: string) => defs.find((d) => d.name === name)!;
const ctx = { checkInterrupt: () => {}, progress: () => {} } as unknown as NodeContext;
const tensor = (t: Tensor | FloatTensor): FloatTensor => ({ shape: [...t.shape], data: t.data });

/** An 8-bit image batch as the reference's float tensor [B, H, W, 3]. */
function imageTensor(img: ImageBatch): FloatTensor {
  const { width: w, height: h } = img;
  const data = new Float32Array(img.frames.length * w * h * 3);
  img.frames.forEach((f, n) => {
    for (let i = 0; i < w * h; i++) for (let c = 0; c < 3; c++) data[(n * w * h + i) * 3 + c] = f.data[i * f.channels + c]! / 255;
  });
  return { shape: [img.frames.length, h, w, 3], data };
}

/** The padded image: the reference's values within half a byte level (its 0.5 grey is 128/255 here), and its bytes exactly. */
function padded(img: ImageBatch, expected: Summary & Record<string, unknown>, bytesSum: number, what: string): void {
  const t = imageTensor(img);
  assert.deepEqual(t.shape, expected.shape, `${what}: shape`);
  expected.head.forEach((v, i) => assert.ok(Math.abs(t.data[i]! - v) <= 0.5 / 255 + 1e-7, `${what}: value ${i} is ${t.data[i]}, expected ${v}`));
  let sum = 0;
  for (const f of img.frames) for (const b of f.data) sum += b;
  assert.equal(sum, bytesSum, `${what}: the sum of its bytes`);
}

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outpaint-'));
  writeFixture(path.join(dir, 'tiny.safetensors'), TINY);
});
after(async () => {
  await unloadAll();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('ImagePadForOutpaint → VAEEncodeForInpaint / InpaintModelConditioning (the nodes called directly)', () => {
  for (const c of CASES) {
    test(`${c.name}: ${c.width}×${c.height}×${c.batch} padded ${c.left}/${c.top}/${c.right}/${c.bottom}, feathering ${c.feathering}, grow ${c.grow}`, async () => {
      const vae = new VaeModel(await loadCheckpoint(path.join(dir, 'tiny.safetensors')));
      const expected = ref[c.name];
      const image = new ImageBatch(Array.from({ length: c.batch }, (_, k) => new Frame(c.width, c.height, 3, Buffer.from(pixels(c, k).data))));
      const [img, mask] = (await node(imageTransformNodes, 'ImagePadForOutpaint').execute({ image, left: c.left, top: c.top, right: c.right, bottom: c.bottom, feathering: c.feathering }, ctx)) as [ImageBatch, MaskBatch];
      padded(img, expected.image, expected.image_bytes_sum, 'padded image');
      const plane = mask.planes[0]!;
      closeTo({ shape: [mask.planes.length, plane.height, plane.width], data: plane.data }, expected.mask, 1e-7, 'mask');

      const [lat] = (await node(inpaintNodes, 'VAEEncodeForInpaint').execute({ pixels: img, vae, mask, grow_mask_by: c.grow }, ctx)) as [{ samples: Tensor; noise_mask: Tensor }];
      closeTo(tensor(lat.samples), expected.vae_encode_for_inpaint.samples, VAE_TOL, 'VAEEncodeForInpaint latent');
      closeTo(tensor(lat.noise_mask), expected.vae_encode_for_inpaint.noise_mask, 0, 'VAEEncodeForInpaint noise mask');

      const cond = [[{ shape: [1, 2, 8], data: new Float32Array(16) }, {}]];
      const [pos, neg, ilat] = (await node(inpaintNodes, 'InpaintModelConditioning').execute({ positive: cond, negative: cond, vae, pixels: img, mask, noise_mask: true }, ctx)) as [
        [FloatTensor, Record<string, FloatTensor>][],
        [FloatTensor, Record<string, FloatTensor>][],
        { samples: Tensor; noise_mask: Tensor },
      ];
      const imc = expected.inpaint_model_conditioning;
      closeTo(pos[0]![1].concat_latent_image!, imc.concat_latent_image, VAE_TOL, 'concat_latent_image');
      assert.ok(imc.concat_mask_is_noise_mask && imc.same_on_negative);
      closeTo(pos[0]![1].concat_mask!, imc.noise_mask, 1e-7, 'concat_mask');
      assert.deepEqual(neg[0]![1].concat_latent_image!.data, pos[0]![1].concat_latent_image!.data);
      assert.deepEqual(neg[0]![1].concat_mask!.data, pos[0]![1].concat_mask!.data);
      closeTo(tensor(ilat.noise_mask), imc.noise_mask, 1e-7, 'InpaintModelConditioning noise mask');
      closeTo(tensor(ilat.samples), imc.latent_bytes, VAE_TOL, 'InpaintModelConditioning latent (the padded image as bytes)');
      closeTo(tensor(ilat.samples), imc.latent, 1e-2, 'InpaintModelConditioning latent (the all-float chain: grey 128/255 for 0.5)');
    });
  }
});

onOneStorage('outpainting chains over HTTP', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
    fs.mkdirSync(path.join(srv.cfg.dataDir, 'models', 'checkpoints'), { recursive: true });
    fs.copyFileSync(path.join(dir, 'tiny.safetensors'), path.join(srv.cfg.dataDir, 'models', 'checkpoints', 'tiny.safetensors'));
  });
  after(() => srv.close());

  const savedLatent = (res: Awaited<ReturnType<typeof run>>, id: string): FloatTensor => {
    const item = res.outputs[id].latents[0];
    const t = decodeSafetensors(fs.readFileSync(path.join(srv.cfg.dataDir, item.type, item.subfolder, item.filename)), 1 << 20).tensors.latent_tensor!;
    return { shape: [...t.shape], data: t.data };
  };

  test("LoadImage ×2 → ImageBatch → ImagePadForOutpaint → VAEEncodeForInpaint and InpaintModelConditioning → SaveLatent: the reference's latents and mask", async () => {
    const c = CASES[0]!;
    const expected = ref[c.name];
    const graph: Record<string, unknown> = {
      ...(await loaded(srv, pixels(c, 0), 'a')),
      ...(await loaded(srv, pixels(c, 1), 'b')),
      both: { class_type: 'ImageBatch', inputs: { image1: ['a', 0], image2: ['b', 0] } },
      pad: { class_type: 'ImagePadForOutpaint', inputs: { image: ['both', 0], left: c.left, top: c.top, right: c.right, bottom: c.bottom, feathering: c.feathering } },
      ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'tiny.safetensors' } },
      enc: { class_type: 'VAEEncodeForInpaint', inputs: { pixels: ['pad', 0], vae: ['ck', 2], mask: ['pad', 1], grow_mask_by: c.grow } },
      text: { class_type: 'CLIPTextEncode', inputs: { text: 'a wider view', clip: ['ck', 1] } },
      imc: { class_type: 'InpaintModelConditioning', inputs: { positive: ['text', 0], negative: ['text', 0], vae: ['ck', 2], pixels: ['pad', 0], mask: ['pad', 1], noise_mask: true } },
      s1: { class_type: 'SaveLatent', inputs: { samples: ['enc', 0], filename_prefix: 'outpaint/enc' } },
      s2: { class_type: 'SaveLatent', inputs: { samples: ['imc', 2], filename_prefix: 'outpaint/imc' } },
    };
    const res = await run(srv, graph);
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    closeTo(savedLatent(res, 's1'), expected.vae_encode_for_inpaint.samples, VAE_TOL, 'VAEEncodeForInpaint latent');
    closeTo(savedLatent(res, 's2'), expected.inpaint_model_conditioning.latent_bytes, VAE_TOL, 'InpaintModelConditioning latent');
    // The mask output as an image: the reference's mask, each value the nearest byte.
    const [m] = await savedMask(srv, graph, ['pad', 1]);
    assert.deepEqual([m!.width, m!.height], [c.width + c.left + c.right, c.height + c.top + c.bottom]);
    expected.mask.head.forEach((v: number, i: number) => assert.ok(Math.abs(m!.data[i]! - v * 255) <= 0.5 + 1e-4, `mask value ${i}: ${m!.data[i]} vs ${v * 255}`));
  });
});
