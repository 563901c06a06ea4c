/**
 * VAEEncodeForInpaint (nodes.py): the image cropped to the VAE's cell as
 * VAEEncode does, the mask resized to it (bilinear), the masked pixels set to
 * grey (0.5) before encoding, and the LATENT's noise_mask the rounded mask
 * grown by `grow_mask_by` pixels (a box filter, clamped) — so a KSampler
 * denoises only there.
 */
import { resizeBilinear } from '../../models/conditioning.ts';
import { VaeModel, type ConditioningEntry, type FloatTensor } from '../../models/sd1.ts';
import type { NodeDefinition } from '../api.ts';
import { ImageBatch, MaskBatch, maskPlanes } from '../image-types.ts';
import { Tensor, type Latent } from '../latent.ts';

function nodeError(message: string, pyType = 'RuntimeError'): Error {
  return Object.assign(new Error(message), { pyType });
}

/** torch.round: halves to the even neighbour. */
function roundEven(v: number): number {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * The reference's encode: pixels [B,H,W,3] in [0,1], mask planes (any size;
 * resized to the image), the VAE's cell size → the pixels to encode and the
 * noise mask [n, 1, h, w] at pixel resolution.
 */
export function inpaintPrepare(pixels: FloatTensor, masks: { width: number; height: number; data: Float32Array }[], cell: number, grow: number): { pixels: FloatTensor; noiseMask: FloatTensor; mask: FloatTensor } {
  const [b, H, W] = pixels.shape as [number, number, number];
  const C = pixels.shape[3]!;
  const h = Math.floor(H / cell) * cell;
  const w = Math.floor(W / cell) * cell;
  if (h === 0 || w === 0) throw nodeError(`an image of ${W}x${H} is smaller than the VAE's ${cell}-pixel cell`);
  const oy = Math.floor((H % cell) / 2);
  const ox = Math.floor((W % cell) / 2);
  // Each mask plane bilinearly resized to the whole image, then cropped as the pixels.
  const planes = masks.map((m) => {
    const full = m.width === W && m.height === H ? m.data : resizeBilinear(m.data, m.height, m.width, H, W);
    const out = new Float32Array(h * w);
    for (let y = 0; y < h; y++) out.set(full.subarray((y + oy) * W + ox, (y + oy) * W + ox + w), y * w);
    return out;
  });
  const rounded = planes.map((p) => p.map(roundEven));
  // m = 1 − round(mask), broadcast over the pixel batch as torch does (one mask plane, or one per image).
  if (rounded.length !== 1 && rounded.length !== b) throw nodeError(`a mask batch of ${rounded.length} does not fit ${b} images`);
  const px = new Float32Array(b * h * w * 3);
  for (let n = 0; n < b; n++) {
    const keep = rounded[rounded.length === 1 ? 0 : n]!;
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) {
        const m = 1 - keep[y * w + x]!;
        for (let c = 0; c < 3; c++) {
          const v = pixels.data[((n * H + y + oy) * W + x + ox) * C + c]!;
          px[((n * h + y) * w + x) * 3 + c] = Math.fround(Math.fround(Math.fround(v - 0.5) * m) + 0.5);
        }
      }
  }
  // conv2d(round(mask), ones(k×k), padding ⌈(k−1)/2⌉), clamped to [0, 1], cut to [:h, :w], rounded.
  const pad = Math.ceil((grow - 1) / 2);
  const noise = new Float32Array(rounded.length * h * w);
  rounded.forEach((r, i) => {
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) {
        let v: number;
        if (grow === 0) v = planes[i]![y * w + x]!;
        else {
          let s = 0;
          for (let dy = 0; dy < grow; dy++)
            for (let dx = 0; dx < grow; dx++) {
              const yy = y - pad + dy;
              const xx = x - pad + dx;
              if (yy >= 0 && yy < h && xx >= 0 && xx < w) s += r[yy * w + xx]!;
            }
          v = Math.min(1, Math.max(0, s));
        }
        noise[i * h * w + y * w + x] = roundEven(v);
      }
  });
  const mask = new Float32Array(planes.length * h * w);
  planes.forEach((p, i) => mask.set(p, i * h * w));
  return { pixels: { shape: [b, h, w, 3], data: px }, noiseMask: { shape: [rounded.length, 1, h, w], data: noise }, mask: { shape: [planes.length, 1, h, w], data: mask } };
}

function imageTensor(pixels: ImageBatch): FloatTensor {
  const { width: W, height: H } = pixels;
  const data = new Float32Array(pixels.frames.length * H * W * 3);
  pixels.frames.forEach((f, n) => {
    const src = f.data;
    for (let i = 0; i < H * W; i++) for (let c = 0; c < 3; c++) data[(n * H * W + i) * 3 + c] = src[i * f.channels + c]! / 255;
  });
  return { shape: [pixels.frames.length, H, W, 3], data };
}

function conditioning(v: unknown, name: string): ConditioningEntry[] {
  if (!Array.isArray(v) || v.some((e) => !Array.isArray(e) || !e[0] || !(e[0].data instanceof Float32Array))) throw nodeError(`the ${name} input is not a CONDITIONING`);
  return v as ConditioningEntry[];
}

export const inpaintNodes: NodeDefinition[] = [
  {
    name: 'VAEEncodeForInpaint',
    displayName: 'VAE Encode (for Inpainting)',
    category: 'latent/inpaint',
    inputs: { required: { pixels: ['IMAGE'], vae: ['VAE'], mask: ['MASK'], grow_mask_by: ['INT', { default: 6, min: 0, max: 64, step: 1 }] } },
    outputs: ['LATENT'],
    execute: async ({ pixels, vae, mask, grow_mask_by }, ctx) => {
      if (!(vae instanceof VaeModel)) throw nodeError('ERROR: vae input is invalid: None\n\nIf the vae is from a checkpoint loader node your checkpoint does not contain a valid vae model.');
      if (!(pixels instanceof ImageBatch)) throw nodeError('the pixels input is not an IMAGE');
      if (!(mask instanceof MaskBatch)) throw nodeError('the mask input is not a MASK');
      const prep = inpaintPrepare(imageTensor(pixels), maskPlanes(mask), vae.downscale, Number(grow_mask_by));
      const z = await vae.encode(prep.pixels);
      ctx.checkInterrupt();
      return [{ samples: new Tensor(z.shape, z.data), noise_mask: new Tensor(prep.noiseMask.shape, prep.noiseMask.data) } satisfies Latent];
    },
  },
  {
    name: 'InpaintModelConditioning',
    displayName: 'InpaintModelConditioning',
    category: 'conditioning/inpaint',
    inputs: {
      required: {
        positive: ['CONDITIONING'],
        negative: ['CONDITIONING'],
        vae: ['VAE'],
        pixels: ['IMAGE'],
        mask: ['MASK'],
        noise_mask: [
          'BOOLEAN',
          { default: true, tooltip: 'Add a noise mask to the latent so sampling will only happen within the mask. Might improve results or completely break things depending on the model.' },
        ],
      },
    },
    outputs: ['CONDITIONING', 'CONDITIONING', 'LATENT'],
    outputNames: ['positive', 'negative', 'latent'],
    execute: async ({ positive, negative, vae, pixels, mask, noise_mask }, ctx) => {
      if (!(vae instanceof VaeModel)) throw nodeError('ERROR: vae input is invalid: None\n\nIf the vae is from a checkpoint loader node your checkpoint does not contain a valid vae model.');
      if (!(pixels instanceof ImageBatch)) throw nodeError('the pixels input is not an IMAGE');
      if (!(mask instanceof MaskBatch)) throw nodeError('the mask input is not a MASK');
      const pos = conditioning(positive, 'positive');
      const neg = conditioning(negative, 'negative');
      const img = imageTensor(pixels);
      // The reference crops to multiples of 8 here whatever the VAE; the greyed image is the model's masked_image.
      const prep = inpaintPrepare(img, maskPlanes(mask), 8, 0);
      const concat = await vae.encode(prep.pixels);
      const orig = await vae.encode(img);
      ctx.checkInterrupt();
      const values = { concat_latent_image: concat, concat_mask: prep.mask };
      const latent: Latent = { samples: new Tensor(orig.shape, orig.data) };
      if (noise_mask !== false) latent.noise_mask = new Tensor(prep.mask.shape, prep.mask.data);
      return [pos.map(([t, o]) => [t, { ...o, ...values }]), neg.map(([t, o]) => [t, { ...o, ...values }]), latent];
    },
  },
];
