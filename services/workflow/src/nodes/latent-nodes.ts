import type { NodeContext, NodeDefinition } from './api.ts';
import { ImageBatch, MAX_RESOLUTION, MaskBatch, maskPlanes } from './image-types.ts';
import { catBatch, channelNorm, cropTensor, type Latent, mapPlanes, maskTensor, MAX_LATENT_VALUES, numel, repeatBatch, repeatToBatchSize, sliceBatch, Tensor, upscaleTensor, zeros } from './latent.ts';
import { resizePlane } from './resample.ts';
import { gaussianKernel1d } from './image-filters.ts';
import { combo, v3 } from './schema.ts';

/**
 * Latent nodes that need no model: nodes.py (EmptyLatentImage … SetLatentNoiseMask),
 * comfy_extras.nodes_latent (arithmetic, batching, tonemap operation),
 * nodes_mask's LatentCompositeMasked and nodes_rebatch. Formulas follow the
 * reference's torch code; results are float32 as there.
 */

const LATENT_UPSCALE_METHODS = ['nearest-exact', 'bilinear', 'area', 'bicubic', 'bislerp'] as const;

/** Python's slice bounds of `a:b` over a dimension of length n (negative = from the end, clipped). */
function pySlice(a: number, b: number, n: number): [number, number] {
  const norm = (i: number) => (i < 0 ? Math.max(0, i + n) : Math.min(i, n));
  const s = norm(a);
  return [s, Math.max(s, norm(b))];
}

function shapeError(a: readonly number[], b: readonly number[]): Error {
  return Object.assign(new Error(`The size of tensor a ([${a.join(', ')}]) must match the size of tensor b ([${b.join(', ')}])`), { pyType: 'RuntimeError' });
}

/** Broadcasts b's batch against a's (equal, or one of them 1); the rest of the shape must match. */
function broadcastPair(a: Tensor, b: Tensor): [Tensor, Tensor] {
  if (a.ndim !== b.ndim || a.shape.slice(1).some((s, i) => s !== b.shape[i + 1])) throw shapeError(a.shape, b.shape);
  const ba = a.shape[0]!;
  const bb = b.shape[0]!;
  if (ba === bb) return [a, b];
  if (bb === 1) return [a, repeatBatch(b, ba)];
  if (ba === 1) return [repeatBatch(a, bb), b];
  throw shapeError(a.shape, b.shape);
}

function elementwise(a: Tensor, b: Tensor, fn: (x: number, y: number) => number): Tensor {
  [a, b] = broadcastPair(a, b);
  const out = zeros(a.shape);
  for (let i = 0; i < out.data.length; i++) out.data[i] = fn(a.data[i]!, b.data[i]!);
  return out;
}

/** nodes_latent.reshape_latent_to: bilinear center-cropped to the target's size, repeated to its batch. */
function reshapeLatentTo(target: Tensor, t: Tensor, repeat = true): Tensor {
  if (t.ndim !== target.ndim || t.shape.slice(1).some((s, i) => s !== target.shape[i + 1])) {
    if (t.ndim !== target.ndim || t.shape.slice(1, -2).some((s, i) => s !== target.shape[i + 1])) throw shapeError(target.shape, t.shape);
    t = upscaleTensor(t, target.dim(-1), target.dim(-2), 'bilinear', 'center');
  }
  return repeat ? repeatToBatchSize(t, target.shape[0]!) : t;
}

function range(start: number, n: number): number[] {
  return Array.from({ length: n }, (_, i) => start + i);
}

function checkLatentIn(v: unknown): Latent {
  if (typeof v !== 'object' || v === null || !((v as Latent).samples instanceof Tensor)) throw new TypeError('expected a LATENT');
  return v as Latent;
}

/** nodes.py (V1) latent nodes: bare input specs as the reference's object_info shows them. */
const coreLatentNodes: NodeDefinition[] = [
  {
    name: 'EmptyLatentImage',
    displayName: 'Empty Latent Image',
    description: 'Create a new batch of empty latent images to be denoised via sampling.',
    category: 'latent',
    inputs: {
      required: {
        width: ['INT', { default: 512, min: 16, max: MAX_RESOLUTION, step: 8, tooltip: 'The width of the latent images in pixels.' }],
        height: ['INT', { default: 512, min: 16, max: MAX_RESOLUTION, step: 8, tooltip: 'The height of the latent images in pixels.' }],
        batch_size: ['INT', { default: 1, min: 1, max: 4096, tooltip: 'The number of latent images in the batch.' }],
      },
    },
    outputs: ['LATENT'],
    outputTooltips: ['The empty latent image batch.'],
    execute: ({ width, height, batch_size }) => [{ samples: zeros([batch_size, 4, Math.floor(height / 8), Math.floor(width / 8)]) } satisfies Latent],
  },
  {
    name: 'LatentFromBatch',
    displayName: 'Latent From Batch',
    category: 'latent/batch',
    inputs: {
      required: {
        samples: ['LATENT'],
        batch_index: ['INT', { default: 0, min: 0, max: 63 }],
        length: ['INT', { default: 1, min: 1, max: 64 }],
      },
    },
    outputs: ['LATENT'],
    execute: ({ samples, batch_index, length }) => {
      const s: Latent = { ...checkLatentIn(samples) };
      const b = s.samples.shape[0]!;
      const start = Math.min(b - 1, batch_index);
      const len = Math.min(b - start, length);
      s.samples = sliceBatch(s.samples, start, len);
      if (samples.noise_mask) {
        let masks: Tensor = samples.noise_mask;
        if (masks.shape[0] !== 1) {
          if (masks.shape[0]! < b) masks = sliceBatch(repeatBatch(masks, Math.ceil(b / masks.shape[0]!)), 0, b);
          const [a, e] = pySlice(start, start + len, masks.shape[0]!);
          s.noise_mask = sliceBatch(masks, a, e - a);
        }
      }
      s.batch_index = samples.batch_index === undefined ? range(start, len) : samples.batch_index.slice(start, start + len);
      return [s];
    },
  },
  {
    name: 'RepeatLatentBatch',
    displayName: 'Repeat Latent Batch',
    category: 'latent/batch',
    inputs: { required: { samples: ['LATENT'], amount: ['INT', { default: 1, min: 1, max: 64 }] } },
    outputs: ['LATENT'],
    execute: ({ samples, amount }) => {
      const s: Latent = { ...checkLatentIn(samples) };
      s.samples = repeatBatch(samples.samples, amount);
      // The reference repeats the original masks (its resized copy is unused).
      if (samples.noise_mask && samples.noise_mask.shape[0] > 1) s.noise_mask = repeatBatch(samples.noise_mask, amount);
      if (s.batch_index) {
        const idx = s.batch_index;
        const offset = Math.max(...idx) - Math.min(...idx) + 1;
        const more: number[] = [];
        for (let i = 1; i < amount; i++) for (const x of idx) more.push(x + i * offset);
        s.batch_index = [...idx, ...more];
      }
      return [s];
    },
  },
  {
    name: 'LatentUpscale',
    displayName: 'Upscale Latent',
    category: 'latent',
    inputs: {
      required: {
        samples: ['LATENT'],
        upscale_method: [[...LATENT_UPSCALE_METHODS]],
        width: ['INT', { default: 512, min: 0, max: MAX_RESOLUTION, step: 8 }],
        height: ['INT', { default: 512, min: 0, max: MAX_RESOLUTION, step: 8 }],
        crop: [['disabled', 'center']],
      },
    },
    outputs: ['LATENT'],
    execute: ({ samples, upscale_method, width, height, crop }, ctx) => {
      checkLatentIn(samples);
      if (width === 0 && height === 0) return [samples];
      const t: Tensor = samples.samples;
      if (width === 0) {
        height = Math.max(64, height);
        width = Math.max(64, pyRound((t.dim(-1) * height) / t.dim(-2)));
      } else if (height === 0) {
        width = Math.max(64, width);
        height = Math.max(64, pyRound((t.dim(-2) * width) / t.dim(-1)));
      } else {
        width = Math.max(64, width);
        height = Math.max(64, height);
      }
      return [{ ...samples, samples: upscaleTensor(t, Math.floor(width / 8), Math.floor(height / 8), upscale_method, crop, () => ctx.checkInterrupt()) }];
    },
  },
  {
    name: 'LatentUpscaleBy',
    displayName: 'Upscale Latent By',
    category: 'latent',
    inputs: {
      required: {
        samples: ['LATENT'],
        upscale_method: [[...LATENT_UPSCALE_METHODS]],
        scale_by: ['FLOAT', { default: 1.5, min: 0.01, max: 8.0, step: 0.01 }],
      },
    },
    outputs: ['LATENT'],
    execute: ({ samples, upscale_method, scale_by }, ctx) => {
      const t = checkLatentIn(samples).samples;
      const w = pyRound(t.dim(-1) * scale_by);
      const h = pyRound(t.dim(-2) * scale_by);
      if (numel([...t.shape.slice(0, -2), h, w]) > MAX_LATENT_VALUES) throw new RangeError(`a latent of ${w}x${h} exceeds the limit`);
      return [{ ...samples, samples: upscaleTensor(t, w, h, upscale_method, 'disabled', () => ctx.checkInterrupt()) }];
    },
  },
  {
    name: 'LatentRotate',
    displayName: 'Rotate Latent',
    category: 'latent/transform',
    inputs: { required: { samples: ['LATENT'], rotation: [['none', '90 degrees', '180 degrees', '270 degrees']] } },
    outputs: ['LATENT'],
    execute: ({ samples, rotation }) => {
      const k = String(rotation).startsWith('90') ? 1 : String(rotation).startsWith('180') ? 2 : String(rotation).startsWith('270') ? 3 : 0;
      return [{ ...checkLatentIn(samples), samples: rot90(samples.samples, k) }];
    },
  },
  {
    name: 'LatentFlip',
    displayName: 'Flip Latent',
    category: 'latent/transform',
    inputs: { required: { samples: ['LATENT'], flip_method: [['x-axis: vertically', 'y-axis: horizontally']] } },
    outputs: ['LATENT'],
    execute: ({ samples, flip_method }) => {
      checkLatentIn(samples);
      const vertical = String(flip_method).startsWith('x');
      const out = mapPlanes(samples.samples, (p, w, h) => {
        const o = new Float32Array(w * h);
        for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) o[y * w + x] = vertical ? p[(h - 1 - y) * w + x]! : p[y * w + (w - 1 - x)]!;
        return { data: o, w, h };
      });
      return [{ ...samples, samples: out }];
    },
  },
  {
    name: 'LatentComposite',
    displayName: 'Latent Composite',
    category: 'latent',
    inputs: {
      required: {
        samples_to: ['LATENT'],
        samples_from: ['LATENT'],
        x: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 8 }],
        y: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 8 }],
        feather: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 8 }],
      },
    },
    outputs: ['LATENT'],
    execute: ({ samples_to, samples_from, x, y, feather }) => [{ ...checkLatentIn(samples_to), samples: latentComposite(samples_to.samples, checkLatentIn(samples_from).samples, Math.floor(x / 8), Math.floor(y / 8), Math.floor(feather / 8)) }],
  },
  {
    name: 'LatentBlend',
    displayName: 'Latent Blend',
    category: '_for_testing',
    inputs: { required: { samples1: ['LATENT'], samples2: ['LATENT'], blend_factor: ['FLOAT', { default: 0.5, min: 0, max: 1, step: 0.01 }] } },
    outputs: ['LATENT'],
    execute: ({ samples1, samples2, blend_factor }) => {
      const a = checkLatentIn(samples1).samples;
      let b = checkLatentIn(samples2).samples;
      if (a.shape.length !== b.shape.length || a.shape.some((s, i) => s !== b.shape[i])) b = upscaleTensor(b, a.dim(-1), a.dim(-2), 'bicubic', 'center');
      const f = Math.fround(blend_factor);
      return [{ ...samples1, samples: elementwise(a, b, (p, q) => p * f + q * (1 - f)) }];
    },
  },
  {
    name: 'LatentCrop',
    displayName: 'Crop Latent',
    category: 'latent/transform',
    inputs: {
      required: {
        samples: ['LATENT'],
        width: ['INT', { default: 512, min: 64, max: MAX_RESOLUTION, step: 8 }],
        height: ['INT', { default: 512, min: 64, max: MAX_RESOLUTION, step: 8 }],
        x: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 8 }],
        y: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 8 }],
      },
    },
    outputs: ['LATENT'],
    execute: ({ samples, width, height, x, y }) => {
      const t = checkLatentIn(samples).samples;
      const W = t.dim(-1);
      const H = t.dim(-2);
      x = Math.floor(x / 8);
      y = Math.floor(y / 8);
      // The reference keeps at least 8 latent pixels (64 image pixels) when it can.
      if (x > W - 8) x = W - 8;
      if (y > H - 8) y = H - 8;
      const [y0, y1] = pySlice(y, Math.floor(height / 8) + y, H);
      const [x0, x1] = pySlice(x, Math.floor(width / 8) + x, W);
      return [{ ...samples, samples: cropTensor(t, x0, y0, x1 - x0, y1 - y0) }];
    },
  },
  {
    name: 'SetLatentNoiseMask',
    displayName: 'Set Latent Noise Mask',
    category: 'latent/inpaint',
    inputs: { required: { samples: ['LATENT'], mask: ['MASK'] } },
    outputs: ['LATENT'],
    execute: ({ samples, mask }) => [{ ...checkLatentIn(samples), noise_mask: maskTensor(mask as MaskBatch) }],
  },
];

function pyRound(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** torch.rot90(t, k, dims=[3, 2]): k quarter turns clockwise as the image is shown. */
function rot90(t: Tensor, k: number): Tensor {
  k = ((k % 4) + 4) % 4;
  if (k === 0) return t;
  return mapPlanes(t, (p, w, h) => {
    const ow = k === 2 ? w : h;
    const oh = k === 2 ? h : w;
    const o = new Float32Array(w * h);
    for (let y = 0; y < oh; y++) {
      for (let x = 0; x < ow; x++) {
        // rot90 over dims [3, 2] turns clockwise: out[y][x] = in[h-1-x][y] (k=1), in[h-1-y][w-1-x] (k=2), in[x][w-1-y] (k=3).
        const v = k === 1 ? p[(h - 1 - x) * w + y]! : k === 2 ? p[(h - 1 - y) * w + (w - 1 - x)]! : p[x * w + (w - 1 - y)]!;
        o[y * ow + x] = v;
      }
    }
    return { data: o, w: ow, h: oh };
  });
}

/** LatentComposite.composite: paste (optionally feathered) with the reference's slicing. */
function latentComposite(to: Tensor, from: Tensor, x: number, y: number, feather: number): Tensor {
  const H = to.dim(-2);
  const W = to.dim(-1);
  const fh = from.dim(-2);
  const fw = from.dim(-1);
  // from[:, :, :H - y, :W - x] and s[:, :, y:y + fh, x:x + fw] must cover the same region.
  const [sy0, sy1] = pySlice(0, H - y, fh);
  const [sx0, sx1] = pySlice(0, W - x, fw);
  const [dy0, dy1] = pySlice(y, y + fh, H);
  const [dx0, dx1] = pySlice(x, x + fw, W);
  const rows = sy1 - sy0;
  const cols = sx1 - sx0;
  if (rows !== dy1 - dy0 || cols !== dx1 - dx0) throw shapeError([to.shape[0]!, to.shape[1]!, dy1 - dy0, dx1 - dx0], [from.shape[0]!, from.shape[1]!, rows, cols]);
  if (to.shape[1] !== from.shape[1] || (from.shape[0] !== to.shape[0] && from.shape[0] !== 1)) throw shapeError(to.shape, from.shape);
  const mask = new Float32Array(rows * cols).fill(1);
  if (feather > 0) {
    for (let t = 0; t < feather; t++) {
      const f = Math.fround((1 / feather) * (t + 1));
      const mulRow = (r: number) => {
        if (r >= 0 && r < rows) for (let c = 0; c < cols; c++) mask[r * cols + c] = Math.fround(mask[r * cols + c]! * f);
      };
      const mulCol = (c: number) => {
        if (c >= 0 && c < cols) for (let r = 0; r < rows; r++) mask[r * cols + c] = Math.fround(mask[r * cols + c]! * f);
      };
      if (y !== 0) mulRow(t);
      if (y + rows < H) mulRow(rows - 1 - t);
      if (x !== 0) mulCol(t);
      if (x + cols < W) mulCol(cols - 1 - t);
    }
  }
  const out = new Tensor(to.shape, to.data.slice());
  const planes = to.data.length / (W * H);
  const C = to.shape[1]!;
  for (let p = 0; p < planes; p++) {
    const fp = from.shape[0] === 1 ? p % C : p;
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const di = p * W * H + (dy0 + r) * W + dx0 + c;
        const sv = from.data[fp * fw * fh + r * fw + c]!;
        const m = mask[r * cols + c]!;
        out.data[di] = feather > 0 ? sv * m + out.data[di]! * (1 - m) : sv;
      }
    }
  }
  return out;
}

/** nodes_mask.composite for latents (multiplier 8): source pasted at (x, y) through an optional bilinear-resized mask. */
function compositeMaskedLatent(dst: Tensor, src: Tensor, x: number, y: number, mask: MaskBatch | undefined, resizeSource: boolean, ctx: NodeContext): Tensor {
  if (dst.ndim !== 4 || src.ndim !== 4) throw new Error('LatentCompositeMasked takes 4-D latents');
  if (resizeSource) src = upscaleTensor(src, dst.dim(-1), dst.dim(-2), 'bilinear', 'disabled', () => ctx.checkInterrupt());
  src = repeatToBatchSize(src, dst.shape[0]!);
  const [B, C, H, W] = dst.shape as [number, number, number, number];
  const sh = src.dim(-2);
  const sw = src.dim(-1);
  if (src.shape[1] !== C) throw shapeError(dst.shape, src.shape);
  x = Math.max(-sw * 8, Math.min(x, W * 8));
  y = Math.max(-sh * 8, Math.min(y, H * 8));
  const left = Math.floor(x / 8);
  const top = Math.floor(y / 8);
  const cols = Math.min(sw, W - left);
  const rows = Math.min(sh, H - top);
  let m: Float32Array[] | undefined;
  if (mask) {
    const planes = maskPlanes(mask).map((p) => resizePlane(p, sw, sh, 'bilinear', 'disabled', () => ctx.checkInterrupt()).data);
    m = Array.from({ length: B }, (_, b) => planes[b % planes.length]!);
  }
  const out = new Tensor(dst.shape, dst.data.slice());
  for (let b = 0; b < B; b++) {
    ctx.checkInterrupt();
    for (let c = 0; c < C; c++) {
      for (let r = 0; r < rows; r++) {
        for (let q = 0; q < cols; q++) {
          const di = ((b * C + c) * H + top + r) * W + left + q;
          const sv = src.data[((b * C + c) * sh + r) * sw + q]!;
          if (!m) {
            out.data[di] = sv;
            continue;
          }
          const a = m[b]![r * sw + q]!;
          out.data[di] = a * sv + (1 - a) * out.data[di]!;
        }
      }
    }
  }
  return out;
}

const maskLatentNodes: NodeDefinition[] = [
  {
    name: 'LatentCompositeMasked',
    category: 'latent',
    pythonModule: 'comfy_extras.nodes_mask',
    inputs: {
      required: {
        destination: ['LATENT'],
        source: ['LATENT'],
        x: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 8 }],
        y: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 8 }],
        resize_source: ['BOOLEAN', { default: false }],
      },
      optional: { mask: ['MASK'] },
    },
    outputs: ['LATENT'],
    execute: ({ destination, source, x, y, resize_source, mask }, ctx) => [
      { ...checkLatentIn(destination), samples: compositeMaskedLatent(destination.samples, checkLatentIn(source).samples, x, y, mask, resize_source === true, ctx) },
    ],
  },
];

const LATENT_IN = ['LATENT', {}] as ['LATENT', Record<string, unknown>];

/** A LATENT_OPERATION value: a function of the latent tensor, as the reference's closures. */
export type LatentOperation = ((latent: Tensor) => Tensor) & { describe?: () => string };

function tonemapReinhard(multiplier: number): LatentOperation {
  const op: LatentOperation = (latent) => {
    const B = latent.shape[0]!;
    const C = latent.shape[1]!;
    const rest = latent.data.length / (B * C);
    const mag = channelNorm(latent);
    for (let i = 0; i < mag.length; i++) mag[i] = mag[i]! + 1e-10;
    const out = zeros(latent.shape);
    for (let b = 0; b < B; b++) {
      const m = mag.subarray(b * rest, (b + 1) * rest);
      let mean = 0;
      for (const v of m) mean += v;
      mean /= rest;
      let v2 = 0;
      for (const v of m) v2 += (v - mean) ** 2;
      // torch.std is the unbiased (n - 1) estimate; NaN for one value, as there.
      const std = Math.sqrt(v2 / (rest - 1));
      const top = (std * 5 + mean) * multiplier;
      for (let j = 0; j < rest; j++) {
        const scaled = m[j]! * (1 / top);
        const nm = (scaled / (scaled + 1)) * top;
        for (let c = 0; c < C; c++) {
          const i = (b * C + c) * rest + j;
          out.data[i] = (latent.data[i]! / m[j]!) * nm;
        }
      }
    }
    return out;
  };
  op.describe = () => `<LATENT_OPERATION tonemap_reinhard ${multiplier}>`;
  return op;
}

/**
 * LatentOperationSharpen: each position's channel vector normalised by its
 * length, convolved per channel with K = s·G + (1 − s)·δ (G the reference's
 * normalised Gaussian on linspace(−1, 1), s = −10·alpha: the kernel whose
 * centre is raised so it sums to 1) over reflected borders, then scaled back.
 * K is applied as s·(G ⊛ x) + (1 − s)·x, G separably.
 */
function latentSharpen(radius: number, sigma: number, alpha: number): LatentOperation {
  const size = radius * 2 + 1;
  const g = gaussianKernel1d(size, sigma);
  const s = alpha * -10;
  const op: LatentOperation = (latent) => {
    if (latent.ndim !== 4) throw new Error('LatentOperationSharpen takes 4-D latents');
    const [B, C, H, W] = latent.shape as [number, number, number, number];
    if (radius >= H || radius >= W) throw Object.assign(new Error(`Padding size should be less than the corresponding input dimension, but got: padding (${radius}, ${radius}) at dimension ${radius >= W ? 3 : 2} of input [${B}, ${C}, ${H}, ${W}]`), { pyType: 'RuntimeError' });
    const lum = channelNorm(latent);
    for (let i = 0; i < lum.length; i++) lum[i] = lum[i]! + 1e-6;
    const refl = (i: number, n: number) => (i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i);
    const out = zeros(latent.shape);
    const plane = new Float32Array(H * W);
    const tmp = new Float64Array(H * W);
    for (let b = 0; b < B; b++) {
      for (let c = 0; c < C; c++) {
        const base = (b * C + c) * H * W;
        for (let i = 0; i < H * W; i++) plane[i] = latent.data[base + i]! / lum[b * H * W + i]!;
        for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) {
          let acc = 0;
          for (let t = 0; t < size; t++) acc += g[t]! * plane[y * W + refl(x + t - radius, W)]!;
          tmp[y * W + x] = acc;
        }
        for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) {
          let acc = 0;
          for (let t = 0; t < size; t++) acc += g[t]! * tmp[refl(y + t - radius, H) * W + x]!;
          const i = y * W + x;
          out.data[base + i] = lum[b * H * W + i]! * (s * acc + (1 - s) * plane[i]!);
        }
      }
    }
    return out;
  };
  op.describe = () => `<LATENT_OPERATION sharpen ${radius} ${sigma} ${alpha}>`;
  return op;
}

/** comfy_extras.nodes_latent (V3): options objects, COMBO inputs, null output tooltips. */
const extraLatentNodes: NodeDefinition[] = v3('comfy_extras.nodes_latent', [
  {
    name: 'LatentAdd',
    category: 'latent/advanced',
    inputs: { required: { samples1: LATENT_IN, samples2: LATENT_IN } },
    outputs: ['LATENT'],
    execute: ({ samples1, samples2 }) => {
      const a = checkLatentIn(samples1).samples;
      return [{ ...samples1, samples: elementwise(a, reshapeLatentTo(a, checkLatentIn(samples2).samples), (p, q) => p + q) }];
    },
  },
  {
    name: 'LatentSubtract',
    category: 'latent/advanced',
    inputs: { required: { samples1: LATENT_IN, samples2: LATENT_IN } },
    outputs: ['LATENT'],
    execute: ({ samples1, samples2 }) => {
      const a = checkLatentIn(samples1).samples;
      return [{ ...samples1, samples: elementwise(a, reshapeLatentTo(a, checkLatentIn(samples2).samples), (p, q) => p - q) }];
    },
  },
  {
    name: 'LatentMultiply',
    category: 'latent/advanced',
    inputs: { required: { samples: LATENT_IN, multiplier: ['FLOAT', { default: 1.0, min: -10.0, max: 10.0, step: 0.01 }] } },
    outputs: ['LATENT'],
    execute: ({ samples, multiplier }) => {
      const a = checkLatentIn(samples).samples;
      const out = zeros(a.shape);
      for (let i = 0; i < out.data.length; i++) out.data[i] = a.data[i]! * multiplier;
      return [{ ...samples, samples: out }];
    },
  },
  {
    name: 'LatentInterpolate',
    category: 'latent/advanced',
    inputs: { required: { samples1: LATENT_IN, samples2: LATENT_IN, ratio: ['FLOAT', { default: 1.0, min: 0.0, max: 1.0, step: 0.01 }] } },
    outputs: ['LATENT'],
    execute: ({ samples1, samples2, ratio }) => {
      const s1 = checkLatentIn(samples1).samples;
      const s2 = reshapeLatentTo(s1, checkLatentIn(samples2).samples);
      const B = s1.shape[0]!;
      const C = s1.shape[1]!;
      const rest = s1.data.length / (B * C);
      const m1 = channelNorm(s1);
      const m2 = channelNorm(s2);
      const nan0 = (v: number) => (Number.isNaN(v) ? 0 : v === Infinity ? 3.4028234663852886e38 : v === -Infinity ? -3.4028234663852886e38 : v);
      const out = zeros(s1.shape);
      const t = new Float32Array(C);
      for (let b = 0; b < B; b++) {
        for (let j = 0; j < rest; j++) {
          const n1 = m1[b * rest + j]!;
          const n2 = m2[b * rest + j]!;
          let mt = 0;
          for (let c = 0; c < C; c++) {
            const i = (b * C + c) * rest + j;
            t[c] = Math.fround(nan0(Math.fround(s1.data[i]! / n1)) * ratio + nan0(Math.fround(s2.data[i]! / n2)) * (1 - ratio));
            mt += t[c]! ** 2;
          }
          mt = Math.sqrt(mt);
          for (let c = 0; c < C; c++) out.data[(b * C + c) * rest + j] = nan0(Math.fround(t[c]! / mt)) * (n1 * ratio + n2 * (1 - ratio));
        }
      }
      return [{ ...samples1, samples: out }];
    },
  },
  {
    name: 'LatentConcat',
    category: 'latent/advanced',
    inputs: { required: { samples1: LATENT_IN, samples2: LATENT_IN, dim: combo(['x', '-x', 'y', '-y', 't', '-t']) } },
    outputs: ['LATENT'],
    execute: ({ samples1, samples2, dim }) => {
      const s1 = checkLatentIn(samples1).samples;
      const s2 = repeatToBatchSize(checkLatentIn(samples2).samples, s1.shape[0]!);
      const [a, b] = String(dim).includes('-') ? [s2, s1] : [s1, s2];
      const d = String(dim).includes('x') ? a.ndim - 1 : String(dim).includes('y') ? a.ndim - 2 : a.ndim - 3;
      return [{ ...samples1, samples: catDim(a, b, d) }];
    },
  },
  {
    name: 'LatentCut',
    category: 'latent/advanced',
    inputs: {
      required: {
        samples: LATENT_IN,
        dim: combo(['x', 'y', 't']),
        index: ['INT', { default: 0, min: -MAX_RESOLUTION, max: MAX_RESOLUTION, step: 1 }],
        amount: ['INT', { default: 1, min: 1, max: MAX_RESOLUTION, step: 1 }],
      },
    },
    outputs: ['LATENT'],
    execute: ({ samples, dim, index, amount }) => {
      const s = checkLatentIn(samples).samples;
      const d = String(dim).includes('x') ? s.ndim - 1 : String(dim).includes('y') ? s.ndim - 2 : s.ndim - 3;
      const n = s.shape[d]!;
      if (index >= 0) {
        index = Math.min(index, n - 1);
        amount = Math.min(n - index, amount);
      } else {
        index = Math.max(index, -n);
        amount = Math.min(-index, amount);
      }
      if (index < 0) index += n;
      return [{ ...samples, samples: narrow(s, d, index, amount) }];
    },
  },
  {
    name: 'LatentBatch',
    category: 'latent/batch',
    inputs: { required: { samples1: LATENT_IN, samples2: LATENT_IN } },
    outputs: ['LATENT'],
    execute: ({ samples1, samples2 }) => {
      const s1 = checkLatentIn(samples1).samples;
      const s2 = reshapeLatentTo(s1, checkLatentIn(samples2).samples, false);
      return [
        {
          ...samples1,
          samples: catBatch([s1, s2]),
          batch_index: [...(samples1.batch_index ?? range(0, s1.shape[0]!)), ...(samples2.batch_index ?? range(0, s2.shape[0]!))],
        },
      ];
    },
  },
  {
    name: 'LatentBatchSeedBehavior',
    category: 'latent/advanced',
    inputs: { required: { samples: LATENT_IN, seed_behavior: combo(['random', 'fixed'], { default: 'fixed' }) } },
    outputs: ['LATENT'],
    execute: ({ samples, seed_behavior }) => {
      const out: Latent = { ...checkLatentIn(samples) };
      if (seed_behavior === 'random') delete out.batch_index;
      else if (seed_behavior === 'fixed') out.batch_index = Array(out.samples.shape[0]).fill((samples.batch_index ?? [0])[0]);
      return [out];
    },
  },
  {
    name: 'LatentApplyOperation',
    category: 'latent/advanced/operations',
    experimental: true,
    inputs: { required: { samples: LATENT_IN, operation: ['LATENT_OPERATION', {}] } },
    outputs: ['LATENT'],
    execute: ({ samples, operation }) => [{ ...checkLatentIn(samples), samples: (operation as LatentOperation)(samples.samples) }],
  },
  {
    name: 'LatentOperationSharpen',
    category: 'latent/advanced/operations',
    experimental: true,
    inputs: {
      required: {
        sharpen_radius: ['INT', { default: 9, min: 1, max: 31, step: 1 }],
        sigma: ['FLOAT', { default: 1.0, min: 0.1, max: 10.0, step: 0.1 }],
        alpha: ['FLOAT', { default: 0.1, min: 0.0, max: 5.0, step: 0.01 }],
      },
    },
    outputs: ['LATENT_OPERATION'],
    execute: ({ sharpen_radius, sigma, alpha }) => [latentSharpen(sharpen_radius, sigma, alpha)],
  },
  {
    name: 'LatentOperationTonemapReinhard',
    category: 'latent/advanced/operations',
    experimental: true,
    inputs: { required: { multiplier: ['FLOAT', { default: 1.0, min: 0.0, max: 100.0, step: 0.01 }] } },
    outputs: ['LATENT_OPERATION'],
    execute: ({ multiplier }) => [tonemapReinhard(multiplier)],
  },
]);

/** torch.cat((a, b), dim=d): all other dimensions must agree. */
function catDim(a: Tensor, b: Tensor, d: number): Tensor {
  if (a.ndim !== b.ndim || d < 1 || a.shape.some((s, i) => i !== d && s !== b.shape[i])) {
    throw Object.assign(new Error(`Sizes of tensors must match except in dimension ${d}. Got [${a.shape.join(', ')}] and [${b.shape.join(', ')}]`), { pyType: 'RuntimeError' });
  }
  const outer = numel(a.shape.slice(0, d));
  const ia = numel(a.shape.slice(d));
  const ib = numel(b.shape.slice(d));
  const shape = [...a.shape];
  shape[d] = a.shape[d]! + b.shape[d]!;
  const out = zeros(shape);
  for (let o = 0; o < outer; o++) {
    out.data.set(a.data.subarray(o * ia, (o + 1) * ia), o * (ia + ib));
    out.data.set(b.data.subarray(o * ib, (o + 1) * ib), o * (ia + ib) + ia);
  }
  return out;
}

/** torch.narrow(t, d, start, length). */
function narrow(t: Tensor, d: number, start: number, length: number): Tensor {
  const outer = numel(t.shape.slice(0, d));
  const inner = numel(t.shape.slice(d + 1));
  const n = t.shape[d]!;
  const shape = [...t.shape];
  shape[d] = length;
  const out = zeros(shape);
  for (let o = 0; o < outer; o++) out.data.set(t.data.subarray((o * n + start) * inner, (o * n + start + length) * inner), o * length * inner);
  return out;
}

/** One list item of RebatchLatents: samples, masks (undefined = all ones at 8× resolution), batch indices. */
interface RebatchPart {
  samples: Tensor;
  mask: Tensor | undefined;
  idx: number[];
}

function rebatchLatents(latents: Latent[], batchSize: number): Latent[] {
  const out: RebatchPart[] = [];
  const anyMask = latents.some((l) => l.noise_mask !== undefined);
  let cur: RebatchPart | undefined;
  let processed = 0;
  const ones = (s: Tensor) => {
    const m = zeros([s.shape[0]!, 1, s.dim(-2) * 8, s.dim(-1) * 8]);
    m.data.fill(1);
    return m;
  };
  const slice = (p: RebatchPart, start: number, n: number): RebatchPart => {
    const b = p.samples.shape[0]!;
    const [a, e] = pySlice(start, start + n, b);
    let mask: Tensor | undefined;
    if (p.mask) {
      const [ma, me] = pySlice(start, start + n, p.mask.shape[0]!);
      mask = sliceBatch(p.mask, ma, me - ma);
    }
    return { samples: sliceBatch(p.samples, a, e - a), mask, idx: p.idx.slice(start, start + n) };
  };
  for (const l of latents) {
    const s = checkLatentIn(l).samples;
    let mask = l.noise_mask;
    if (!mask && anyMask) mask = ones(s);
    if (mask && mask.shape[0]! < s.shape[0]!) mask = sliceBatch(repeatBatch(mask, Math.floor((s.shape[0]! - 1) / mask.shape[0]!) + 1), 0, s.shape[0]!);
    const next: RebatchPart = { samples: s, mask, idx: l.batch_index ?? range(processed, s.shape[0]!) };
    processed += next.idx.length;
    if (!cur) cur = next;
    else if (next.samples.dim(-1) !== cur.samples.dim(-1) || next.samples.dim(-2) !== cur.samples.dim(-2)) {
      out.push(slice(cur, 0, batchSize));
      cur = next;
    } else {
      cur = { samples: catBatch([cur.samples, next.samples]), mask: cur.mask && next.mask ? catBatch([cur.mask, next.mask]) : undefined, idx: [...cur.idx, ...next.idx] };
    }
    if (cur.samples.shape[0]! > batchSize) {
      const num = Math.floor(cur.samples.shape[0]! / batchSize);
      for (let i = 0; i < num; i++) out.push(slice(cur, i * batchSize, batchSize));
      const rest = cur.samples.shape[0]! - num * batchSize;
      cur = rest > 0 ? slice(cur, num * batchSize, rest) : undefined;
    }
  }
  if (cur) out.push(slice(cur, 0, batchSize));
  return out.map((p) => {
    const l: Latent = { samples: p.samples, batch_index: p.idx };
    // Masks that are all ones are dropped, as the reference's mean() == 1 check does.
    if (p.mask) {
      let sum = 0;
      for (const v of p.mask.data) sum += v;
      if (Math.fround(sum / p.mask.data.length) !== 1) l.noise_mask = p.mask;
    }
    return l;
  });
}

const wanLatentNodes: NodeDefinition[] = v3('comfy_extras.nodes_wan', [
  {
    name: 'TrimVideoLatent',
    category: 'latent/video',
    inputs: { required: { samples: LATENT_IN, trim_amount: ['INT', { default: 0, min: 0, max: 99999 }] } },
    outputs: ['LATENT'],
    execute: ({ samples, trim_amount }) => {
      const s = checkLatentIn(samples).samples;
      // samples[:, :, trim_amount:]: the frames of a video latent (dimension 2).
      const n = s.shape[2] ?? 0;
      const start = Math.min(trim_amount, n);
      return [{ ...samples, samples: narrow(s, 2, start, n - start) }];
    },
  },
]);

const rebatchNodes: NodeDefinition[] = v3('comfy_extras.nodes_rebatch', [
  {
    name: 'RebatchLatents',
    displayName: 'Rebatch Latents',
    category: 'latent/batch',
    inputIsList: true,
    inputs: { required: { latents: LATENT_IN, batch_size: ['INT', { default: 1, min: 1, max: 4096 }] } },
    outputs: ['LATENT'],
    outputIsList: [true],
    execute: ({ latents, batch_size }) => [rebatchLatents(latents as Latent[], batch_size[0])],
  },
  {
    name: 'RebatchImages',
    displayName: 'Rebatch Images',
    category: 'image/batch',
    inputIsList: true,
    inputs: { required: { images: ['IMAGE', {}], batch_size: ['INT', { default: 1, min: 1, max: 4096 }] } },
    outputs: ['IMAGE'],
    outputIsList: [true],
    execute: ({ images, batch_size }) => {
      const size = batch_size[0] as number;
      const all = (images as ImageBatch[]).flatMap((b) => b.frames);
      const out: ImageBatch[] = [];
      for (let i = 0; i < all.length; i += size) {
        const frames = all.slice(i, i + size);
        const f0 = frames[0]!;
        const bad = frames.find((f) => f.width !== f0.width || f.height !== f0.height || f.channels !== f0.channels);
        if (bad) throw Object.assign(new Error(`Sizes of tensors must match except in dimension 0. Expected size ${f0.height}x${f0.width}x${f0.channels} but got ${bad.height}x${bad.width}x${bad.channels}`), { pyType: 'RuntimeError' });
        out.push(new ImageBatch(frames));
      }
      return [out];
    },
  },
]);

export const latentNodes: NodeDefinition[] = [...coreLatentNodes, ...maskLatentNodes, ...extraLatentNodes, ...wanLatentNodes, ...rebatchNodes];
