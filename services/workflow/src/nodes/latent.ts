import { checkSize, MaskBatch, maskPlanes, MaskPlane } from './image-types.ts';
import { centreCrop, resizePlanes, type UpscaleMethod } from './resample.ts';

/**
 * LATENT values. The reference passes a dict `{samples: tensor, noise_mask?,
 * batch_index?, …}`; here it is the same plain object with a `Tensor` for the
 * tensors: float32 samples in row-major order (torch's contiguous layout) and
 * their shape, [B, C, H, W] for images and [B, C, T, H, W] for video models.
 * Height and width are always the last two dimensions. A node copies the
 * object (`{...latent}`, the reference's `samples.copy()`) and replaces the
 * entries it changes; tensors are never modified in place once made, so
 * cached outputs can be shared.
 *
 * This is the type a model layer takes and returns: `samples` is what a
 * sampler denoises, `noise_mask` ([B, 1, H, W], pixel or latent resolution)
 * restricts where, `batch_index` picks each item's noise seed offset.
 */
export class Tensor {
  readonly shape: readonly number[];
  constructor(
    shape: readonly number[],
    readonly data: Float32Array,
  ) {
    this.shape = Object.freeze([...shape]);
    if (numel(shape) !== data.length) throw new Error(`a tensor of shape [${shape.join(', ')}] needs ${numel(shape)} values, got ${data.length}`);
  }
  get ndim(): number {
    return this.shape.length;
  }
  /** Size of dimension `d` (negative counts from the end). */
  dim(d: number): number {
    return this.shape[d < 0 ? this.shape.length + d : d]!;
  }
  /** Values per item of the first dimension. */
  get itemSize(): number {
    return this.data.length / this.shape[0]!;
  }
  describe(): string {
    return `<Tensor [${this.shape.join(', ')}]>`;
  }
  toJSON(): string {
    return this.describe();
  }
}

export interface Latent {
  samples: Tensor;
  noise_mask?: Tensor;
  batch_index?: number[];
  [key: string]: unknown;
}

/** Most values one latent tensor may hold (256 MiB of float32): bounds what a prompt can make allocate. */
export const MAX_LATENT_VALUES = 64 * 1024 * 1024;

export function numel(shape: readonly number[]): number {
  let n = 1;
  for (const s of shape) n *= s;
  return n;
}

/** A zeroed tensor, after checking its shape against the limits. */
export function zeros(shape: readonly number[]): Tensor {
  for (const s of shape) if (!Number.isInteger(s) || s < 0) throw new RangeError(`invalid tensor shape [${shape.join(', ')}]`);
  if (numel(shape) > MAX_LATENT_VALUES) throw new RangeError(`a latent of shape [${shape.join(', ')}] exceeds the limit of ${MAX_LATENT_VALUES} values`);
  return new Tensor(shape, new Float32Array(numel(shape)));
}

export function isLatent(v: unknown): v is Latent {
  return typeof v === 'object' && v !== null && (v as Latent).samples instanceof Tensor;
}

/** Items [start, start + length) of the first dimension (a view-free copy). */
export function sliceBatch(t: Tensor, start: number, length: number): Tensor {
  const per = t.itemSize;
  return new Tensor([length, ...t.shape.slice(1)], t.data.slice(start * per, (start + length) * per));
}

/** torch.cat along the first dimension; the other dimensions must agree. */
export function catBatch(parts: readonly Tensor[]): Tensor {
  const rest = parts[0]!.shape.slice(1);
  for (const p of parts) {
    if (p.ndim !== rest.length + 1 || p.shape.slice(1).some((s, i) => s !== rest[i])) {
      throw new Error(`Sizes of tensors must match except in dimension 0. Expected [${rest.join(', ')}] but got [${p.shape.slice(1).join(', ')}]`);
    }
  }
  const out = zeros([parts.reduce((n, p) => n + p.shape[0]!, 0), ...rest]);
  let o = 0;
  for (const p of parts) {
    out.data.set(p.data, o);
    o += p.data.length;
  }
  return out;
}

/** tensor.repeat(times, 1, …): the whole batch `times` times over. */
export function repeatBatch(t: Tensor, times: number): Tensor {
  const out = zeros([t.shape[0]! * times, ...t.shape.slice(1)]);
  for (let i = 0; i < times; i++) out.data.set(t.data, i * t.data.length);
  return out;
}

/** comfy.utils.repeat_to_batch_size: the first n items, or the batch repeated and cut to n. */
export function repeatToBatchSize(t: Tensor, n: number): Tensor {
  const b = t.shape[0]!;
  if (b === n) return t;
  if (b > n) return sliceBatch(t, 0, n);
  return sliceBatch(repeatBatch(t, Math.ceil(n / b)), 0, n);
}

/** Applies `fn` to every [H, W] plane (all leading dimensions flattened) and assembles the result. */
export function mapPlanes(t: Tensor, fn: (plane: Float32Array, w: number, h: number, index: number) => { data: Float32Array; w: number; h: number }, checkInterrupt: () => void = () => {}): Tensor {
  const h = t.dim(-2);
  const w = t.dim(-1);
  const planes = t.data.length / (w * h);
  let out: Tensor | undefined;
  for (let i = 0; i < planes; i++) {
    checkInterrupt();
    const r = fn(t.data.subarray(i * w * h, (i + 1) * w * h), w, h, i);
    out ??= zeros([...t.shape.slice(0, -2), r.h, r.w]);
    out.data.set(r.data, i * r.w * r.h);
  }
  return out ?? zeros([...t.shape.slice(0, -2), h, w]);
}

/** comfy.utils.common_upscale on a latent tensor: torch.nn.functional.interpolate per plane, or bislerp. */
export function upscaleTensor(t: Tensor, width: number, height: number, method: UpscaleMethod | 'bislerp', crop: 'disabled' | 'center', checkInterrupt: () => void = () => {}): Tensor {
  if (method === 'bislerp') {
    if (crop === 'center') t = centreCropTensor(t, width, height);
    return bislerp(t, width, height, checkInterrupt);
  }
  const h = t.dim(-2);
  const w = t.dim(-1);
  const planes = t.data.length / (w * h);
  if (planes === 0) return zeros([...t.shape.slice(0, -2), h, w]);
  checkSize(width, height);
  const out = zeros([...t.shape.slice(0, -2), height, width]);
  resizePlanes(t.data, planes, w, h, width, height, method, crop, checkInterrupt, out.data);
  return out;
}

function centreCropTensor(t: Tensor, width: number, height: number): Tensor {
  const r = centreCrop(t.dim(-1), t.dim(-2), width, height);
  return cropTensor(t, r.x, r.y, r.w, r.h);
}

/** t[..., y:y+h, x:x+w] (bounds already inside the tensor). */
export function cropTensor(t: Tensor, x: number, y: number, w: number, h: number): Tensor {
  if (x === 0 && y === 0 && w === t.dim(-1) && h === t.dim(-2)) return t;
  return mapPlanes(t, (plane, pw) => {
    const out = new Float32Array(w * h);
    for (let r = 0; r < h; r++) out.set(plane.subarray((y + r) * pw + x, (y + r) * pw + x + w), r * w);
    return { data: out, w, h };
  });
}

/**
 * comfy.utils.bislerp: separable "bilinear" resize whose interpolation is a
 * slerp of each pixel's channel vector (width pass, then height pass), with
 * the magnitudes interpolated linearly. Works on [N, C, H, W] (5-D tensors
 * are folded into N first, as common_upscale does).
 */
function bislerp(t: Tensor, width: number, height: number, checkInterrupt: () => void): Tensor {
  const lead = t.shape.slice(0, -3);
  const c = t.dim(-3);
  const n = numel(lead);
  const h = t.dim(-2);
  const w = t.dim(-1);
  // Both passes' results are bounded before anything is allocated.
  if (numel([...lead, c, h, width]) > MAX_LATENT_VALUES || numel([...lead, c, height, width]) > MAX_LATENT_VALUES) {
    throw new RangeError(`a latent of shape [${[...lead, c, height, width].join(', ')}] exceeds the limit of ${MAX_LATENT_VALUES} values`);
  }
  // Width pass: for each row, out[x] = slerp(in[c1[x]], in[c2[x]], r[x]); then the height pass along columns.
  const across = bilinearCoords(w, width);
  const wide = new Float32Array(n * c * h * width);
  const rowsOf = Int32Array.from({ length: h }, (_, y) => y * w);
  slerpGrid(t.data, wide, n, c, h * w, h, width, rowsOf, rowsOf, across.c1, across.c2, new Float32Array(h), across.ratio, checkInterrupt);
  const down = bilinearCoords(h, height);
  const out = new Float32Array(n * c * height * width);
  const cols = Int32Array.from({ length: width }, (_, x) => x);
  slerpGrid(wide, out, n, c, h * width, height, width, down.c1.map((y) => y * width), down.c2.map((y) => y * width), cols, cols, down.ratio, new Float32Array(width), checkInterrupt);
  return new Tensor([...lead, c, height, width], out);
}

/**
 * One pass of bislerp over n items of c channels (planes of inPlane samples
 * in, rows × cols out): output (y, x) slerps the channel vectors at
 * rowA[y] + colA[x] and rowB[y] + colB[x] by rowR[y] + colR[x] (one of the
 * two ratios is 0 in each pass). One small function serves both passes, so
 * V8 optimises one loop nest, once.
 */
function slerpGrid(src: Float32Array, out: Float32Array, n: number, c: number, inPlane: number, rows: number, cols: number, rowA: Int32Array, rowB: Int32Array, colA: Int32Array, colB: Int32Array, rowR: Float32Array, colR: Float32Array, checkInterrupt: () => void): void {
  const outPlane = rows * cols;
  for (let b = 0; b < n; b++) {
    checkInterrupt();
    const si = b * c * inPlane;
    const so = b * c * outPlane;
    for (let y = 0; y < rows; y++) {
      const a = si + rowA[y]!;
      const e = si + rowB[y]!;
      const ry = rowR[y]!;
      const o = so + y * cols;
      for (let x = 0; x < cols; x++) slerpInto(src, out, c, a + colA[x]!, e + colB[x]!, inPlane, o + x, outPlane, ry + colR[x]!);
    }
  }
}

/** generate_bilinear_data: torch's bilinear sample positions of an index ramp (half-pixel centres, clamped). */
function bilinearCoords(inSize: number, outSize: number) {
  const c1 = new Int32Array(outSize);
  const c2 = new Int32Array(outSize);
  const ratio = new Float32Array(outSize);
  const scale = Math.fround(inSize / outSize);
  for (let i = 0; i < outSize; i++) {
    const real = Math.max(0, Math.fround(scale * (i + 0.5) - 0.5));
    const f = Math.min(Math.floor(real), inSize - 1);
    const next = f < inSize - 1;
    c1[i] = f;
    ratio[i] = next ? Math.fround(real - f) : 0;
    c2[i] = Math.min(f + 1, inSize - 1);
  }
  return { c1, c2, ratio };
}

/** One slerp of the channel vectors at offsets a and b (channel stride `sa`) into `out` at o (stride `so`). */
function slerpInto(src: Float32Array, out: Float32Array, c: number, a: number, b: number, sa: number, o: number, so: number, r: number): void {
  if (c === 4) {
    slerp4(src, out, a, b, sa, o, so, r);
    return;
  }
  let na = 0;
  let nb = 0;
  for (let k = 0; k < c; k++) {
    na += src[a + k * sa]! ** 2;
    nb += src[b + k * sa]! ** 2;
  }
  na = Math.sqrt(na);
  nb = Math.sqrt(nb);
  let dot = 0;
  for (let k = 0; k < c; k++) dot += (na === 0 ? 0 : src[a + k * sa]! / na) * (nb === 0 ? 0 : src[b + k * sa]! / nb);
  if (dot > 1 - 1e-5) {
    for (let k = 0; k < c; k++) out[o + k * so] = src[a + k * sa]!;
    return;
  }
  if (dot < 1e-5 - 1) {
    for (let k = 0; k < c; k++) out[o + k * so] = src[a + k * sa]! * (1 - r) + src[b + k * sa]! * r;
    return;
  }
  const omega = Math.acos(dot);
  const s = Math.sin(omega);
  const wa = Math.sin((1 - r) * omega) / s;
  const wb = Math.sin(r * omega) / s;
  const mag = na * (1 - r) + nb * r;
  for (let k = 0; k < c; k++) out[o + k * so] = (wa * (na === 0 ? 0 : src[a + k * sa]! / na) + wb * (nb === 0 ? 0 : src[b + k * sa]! / nb)) * mag;
}

/**
 * slerpInto for 4 channels (SD1.x/SDXL latents), each sample read once: the
 * same operations in the same order (x ** 2 is x · x in V8's pow), so the
 * same bits.
 */
function slerp4(src: Float32Array, out: Float32Array, a: number, b: number, sa: number, o: number, so: number, r: number): void {
  const a0 = src[a]!;
  const a1 = src[a + sa]!;
  const a2 = src[a + 2 * sa]!;
  const a3 = src[a + 3 * sa]!;
  const b0 = src[b]!;
  const b1 = src[b + sa]!;
  const b2 = src[b + 2 * sa]!;
  const b3 = src[b + 3 * sa]!;
  const na = Math.sqrt(0 + a0 * a0 + a1 * a1 + a2 * a2 + a3 * a3);
  const nb = Math.sqrt(0 + b0 * b0 + b1 * b1 + b2 * b2 + b3 * b3);
  const u0 = na === 0 ? 0 : a0 / na;
  const u1 = na === 0 ? 0 : a1 / na;
  const u2 = na === 0 ? 0 : a2 / na;
  const u3 = na === 0 ? 0 : a3 / na;
  const v0 = nb === 0 ? 0 : b0 / nb;
  const v1 = nb === 0 ? 0 : b1 / nb;
  const v2 = nb === 0 ? 0 : b2 / nb;
  const v3 = nb === 0 ? 0 : b3 / nb;
  const dot = 0 + u0 * v0 + u1 * v1 + u2 * v2 + u3 * v3;
  if (dot > 1 - 1e-5) {
    out[o] = a0;
    out[o + so] = a1;
    out[o + 2 * so] = a2;
    out[o + 3 * so] = a3;
    return;
  }
  if (dot < 1e-5 - 1) {
    out[o] = a0 * (1 - r) + b0 * r;
    out[o + so] = a1 * (1 - r) + b1 * r;
    out[o + 2 * so] = a2 * (1 - r) + b2 * r;
    out[o + 3 * so] = a3 * (1 - r) + b3 * r;
    return;
  }
  const omega = Math.acos(dot);
  const s = Math.sin(omega);
  const wa = Math.sin((1 - r) * omega) / s;
  const wb = Math.sin(r * omega) / s;
  const mag = na * (1 - r) + nb * r;
  out[o] = (wa * u0 + wb * v0) * mag;
  out[o + so] = (wa * u1 + wb * v1) * mag;
  out[o + 2 * so] = (wa * u2 + wb * v2) * mag;
  out[o + 3 * so] = (wa * u3 + wb * v3) * mag;
}

/** A MASK as the [B, 1, H, W] tensor SetLatentNoiseMask stores. */
export function maskTensor(mask: MaskBatch): Tensor {
  const planes = maskPlanes(mask);
  const { width: w, height: h } = planes[0]!;
  const t = zeros([planes.length, 1, h, w]);
  planes.forEach((p, i) => {
    if (p.width !== w || p.height !== h) throw new Error('the masks of a batch differ in size');
    t.data.set(p.data, i * w * h);
  });
  return t;
}

/** Per-item vector norm over dimension 1 (channels): shape [B, 1, …rest]. */
export function channelNorm(t: Tensor): Float32Array {
  const b = t.shape[0]!;
  const c = t.shape[1]!;
  const rest = t.data.length / (b * c);
  const out = new Float32Array(b * rest);
  for (let i = 0; i < b; i++) {
    for (let j = 0; j < rest; j++) {
      let s = 0;
      for (let k = 0; k < c; k++) s += t.data[(i * c + k) * rest + j]! ** 2;
      out[i * rest + j] = Math.sqrt(s);
    }
  }
  return out;
}
