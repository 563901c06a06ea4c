import sharp from '../files/sharp.ts';
import { checkSize, clampByte, Frame, MaskPlane } from './image-types.ts';

/**
 * Resampling with the reference's semantics (comfy.utils.common_upscale).
 *
 * How each `upscale_method` is computed, and why:
 * - `nearest-exact`: torch's nearest-exact (source index floor((i + 0.5) · in/out)):
 *   frames and masks copy source samples with torch's indices. sharp's nearest
 *   kernel is not the same when enlarging (1024 → 1536 takes another source
 *   column for 815 of the 1536 columns, rows and columns rounded apart), and it
 *   premultiplies alpha.
 * - `bilinear`, `bicubic`, `area`: torch.nn.functional.interpolate without
 *   antialiasing (half-pixel centres, bicubic a = -0.75 with clamped edges,
 *   area = adaptive average pooling). sharp has no such kernels (its upscaler
 *   aligns pixel centres differently and always antialiases when shrinking), so
 *   these are separable typed-array passes with precomputed taps, exact to the
 *   reference up to the final rounding to bytes.
 * - `lanczos`: the reference goes through PIL's LANCZOS (a = 3, support scaled
 *   when shrinking, premultiplied alpha). Shrinking uses sharp's `lanczos3`
 *   kernel, the same filter (within ±4 levels of PIL). Enlarging uses the
 *   typed-array path with PIL's taps, because libvips enlarges on a grid
 *   shifted by a quarter pixel.
 */
export const UPSCALE_METHODS = ['nearest-exact', 'bilinear', 'area', 'bicubic', 'lanczos'] as const;
export type UpscaleMethod = (typeof UPSCALE_METHODS)[number];
export const CROP_METHODS = ['disabled', 'center'] as const;

/** Per output position: `k` source indices and weights (weight 0 pads shorter rows). */
interface Taps {
  k: number;
  idx: Int32Array;
  w: Float32Array;
}

function makeTaps(inSize: number, outSize: number, method: Exclude<UpscaleMethod, 'lanczos'> | 'pil-lanczos'): Taps {
  const scale = inSize / outSize;
  if (method === 'nearest-exact') {
    const idx = new Int32Array(outSize);
    for (let i = 0; i < outSize; i++) idx[i] = Math.min(Math.floor((i + 0.5) * scale), inSize - 1);
    return { k: 1, idx, w: new Float32Array(outSize).fill(1) };
  }
  if (method === 'bilinear') {
    const idx = new Int32Array(outSize * 2);
    const w = new Float32Array(outSize * 2);
    for (let i = 0; i < outSize; i++) {
      const s = Math.max(0, (i + 0.5) * scale - 0.5);
      const f = Math.min(Math.floor(s), inSize - 1);
      const t = s - f;
      idx[i * 2] = f;
      idx[i * 2 + 1] = f < inSize - 1 ? f + 1 : f;
      w[i * 2] = 1 - t;
      w[i * 2 + 1] = t;
    }
    return { k: 2, idx, w };
  }
  if (method === 'bicubic') {
    const A = -0.75;
    const near = (x: number) => ((A + 2) * x - (A + 3)) * x * x + 1;
    const far = (x: number) => ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    const idx = new Int32Array(outSize * 4);
    const w = new Float32Array(outSize * 4);
    for (let i = 0; i < outSize; i++) {
      const s = (i + 0.5) * scale - 0.5;
      const f = Math.floor(s);
      const t = s - f;
      const ws = [far(t + 1), near(t), near(1 - t), far(2 - t)];
      for (let k = 0; k < 4; k++) {
        idx[i * 4 + k] = Math.min(inSize - 1, Math.max(0, f - 1 + k));
        w[i * 4 + k] = ws[k]!;
      }
    }
    return { k: 4, idx, w };
  }
  if (method === 'area') {
    const k = Math.ceil(inSize / outSize) + 1;
    const idx = new Int32Array(outSize * k);
    const w = new Float32Array(outSize * k);
    for (let i = 0; i < outSize; i++) {
      const start = Math.floor((i * inSize) / outSize);
      const end = Math.ceil(((i + 1) * inSize) / outSize);
      for (let j = start; j < end; j++) {
        idx[i * k + j - start] = j;
        w[i * k + j - start] = 1 / (end - start);
      }
    }
    return { k, idx, w };
  }
  // PIL's resampling taps for LANCZOS (support 3, widened by the shrink factor).
  const fscale = Math.max(scale, 1);
  const support = 3 * fscale;
  const k = Math.ceil(support) * 2 + 1;
  const idx = new Int32Array(outSize * k);
  const w = new Float32Array(outSize * k);
  const sinc = (x: number) => (x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x));
  for (let i = 0; i < outSize; i++) {
    const centre = (i + 0.5) * scale;
    const lo = Math.max(0, Math.trunc(centre - support + 0.5));
    const hi = Math.min(inSize, Math.trunc(centre + support + 0.5));
    let sum = 0;
    const ws: number[] = [];
    for (let j = lo; j < hi; j++) {
      const x = (j - centre + 0.5) / fscale;
      const v = x > -3 && x < 3 ? sinc(x) * sinc(x / 3) : 0;
      ws.push(v);
      sum += v;
    }
    for (let j = 0; j < ws.length && j < k; j++) {
      idx[i * k + j] = lo + j;
      w[i * k + j] = sum !== 0 ? ws[j]! / sum : 0;
    }
  }
  return { k, idx, w };
}

/**
 * Separable resampling of interleaved samples (HWC): rows first, then
 * columns, in float; `checkInterrupt` runs between rows of the second pass.
 */
function resampleSamples(
  src: ArrayLike<number>,
  w: number,
  h: number,
  c: number,
  ow: number,
  oh: number,
  tx: Taps,
  ty: Taps,
  checkInterrupt: () => void,
): Float32Array {
  const tmp = new Float32Array(h * ow * c);
  const kx = tx.k;
  for (let y = 0; y < h; y++) {
    const rowIn = y * w * c;
    const rowOut = y * ow * c;
    for (let x = 0; x < ow; x++) {
      const o = rowOut + x * c;
      for (let t = 0; t < kx; t++) {
        const wt = tx.w[x * kx + t]!;
        if (wt === 0) continue;
        const s = rowIn + tx.idx[x * kx + t]! * c;
        for (let ch = 0; ch < c; ch++) tmp[o + ch]! += wt * src[s + ch]!;
      }
    }
    if ((y & 255) === 255) checkInterrupt();
  }
  const out = new Float32Array(oh * ow * c);
  const ky = ty.k;
  const rowLen = ow * c;
  for (let y = 0; y < oh; y++) {
    const o = y * rowLen;
    for (let t = 0; t < ky; t++) {
      const wt = ty.w[y * ky + t]!;
      if (wt === 0) continue;
      const s = ty.idx[y * ky + t]! * rowLen;
      for (let i = 0; i < rowLen; i++) out[o + i]! += wt * tmp[s + i]!;
    }
    if ((y & 255) === 255) checkInterrupt();
  }
  return out;
}

const noop = () => {};

/** Cuts a centred region whose aspect ratio is the target's (common_upscale with crop="center"). */
function centreCrop(w: number, h: number, ow: number, oh: number): { x: number; y: number; w: number; h: number } {
  const oldAspect = w / h;
  const newAspect = ow / oh;
  let x = 0;
  let y = 0;
  if (oldAspect > newAspect) x = Math.round((w - w * (newAspect / oldAspect)) / 2);
  else if (oldAspect < newAspect) y = Math.round((h - h * (oldAspect / newAspect)) / 2);
  return { x, y, w: w - x * 2, h: h - y * 2 };
}

export function cropFrame(f: Frame, x: number, y: number, w: number, h: number): Frame {
  if (x === 0 && y === 0 && w === f.width && h === f.height) return f;
  const c = f.channels;
  const out = Buffer.alloc(w * h * c);
  for (let r = 0; r < h; r++) f.data.copy(out, r * w * c, ((y + r) * f.width + x) * c, ((y + r) * f.width + x + w) * c);
  return new Frame(w, h, c, out);
}

export function cropPlane(p: MaskPlane, x: number, y: number, w: number, h: number): MaskPlane {
  if (x === 0 && y === 0 && w === p.width && h === p.height) return p;
  const out = new Float32Array(w * h);
  for (let r = 0; r < h; r++) out.set(p.data.subarray((y + r) * p.width + x, (y + r) * p.width + x + w), r * w);
  return new MaskPlane(w, h, out);
}

/** Resizes one frame to ow×oh with an upscale_method and crop mode. */
export async function resizeFrame(
  f: Frame,
  ow: number,
  oh: number,
  method: UpscaleMethod,
  crop: 'disabled' | 'center' = 'disabled',
  checkInterrupt: () => void = noop,
): Promise<Frame> {
  checkSize(ow, oh);
  if (crop === 'center') {
    const r = centreCrop(f.width, f.height, ow, oh);
    f = cropFrame(f, r.x, r.y, r.w, r.h);
  }
  // Same size: torch's kernels reduce to the identity and PIL returns a copy.
  if (f.width === ow && f.height === oh) return f;
  const shrinking = ow <= f.width && oh <= f.height;
  if (method === 'nearest-exact') return nearestFrame(f, ow, oh, checkInterrupt);
  if (method === 'lanczos' && shrinking) {
    const data = await sharp(f.data, { raw: { width: f.width, height: f.height, channels: f.channels } })
      .resize(ow, oh, { kernel: 'lanczos3', fit: 'fill' })
      .raw()
      .toBuffer();
    return new Frame(ow, oh, f.channels, data);
  }
  const kind = method === 'lanczos' ? 'pil-lanczos' : method;
  let src: ArrayLike<number> = f.data;
  if (method === 'lanczos' && f.channels === 4) src = premultiply(f.data);
  const out = resampleSamples(src, f.width, f.height, f.channels, ow, oh, makeTaps(f.width, ow, kind), makeTaps(f.height, oh, kind), checkInterrupt);
  if (method === 'lanczos' && f.channels === 4) unpremultiply(out);
  const data = Buffer.alloc(out.length);
  for (let i = 0; i < out.length; i++) data[i] = clampByte(out[i]!);
  return new Frame(ow, oh, f.channels, data);
}

/** Gathers one output row of `ow` pixels of `c` bytes from source offsets `srcOf` (relative to `row`). */
function gatherRow(src: Uint8Array, row: number, srcOf: Int32Array, ow: number, c: number, out: Uint8Array, o: number): void {
  if (c === 3) {
    for (let x = 0, j = o; x < ow; x++, j += 3) {
      const s = row + srcOf[x]!;
      out[j] = src[s]!;
      out[j + 1] = src[s + 1]!;
      out[j + 2] = src[s + 2]!;
    }
    return;
  }
  if (c === 4) {
    for (let x = 0, j = o; x < ow; x++, j += 4) {
      const s = row + srcOf[x]!;
      out[j] = src[s]!;
      out[j + 1] = src[s + 1]!;
      out[j + 2] = src[s + 2]!;
      out[j + 3] = src[s + 3]!;
    }
    return;
  }
  for (let x = 0, j = o; x < ow; x++, j += c) for (let k = 0; k < c; k++) out[j + k] = src[row + srcOf[x]! + k]!;
}

/**
 * nearest-exact by copying: each distinct source row is gathered once and
 * repeated rows are copied whole. The work is on plain Uint8Array views (a
 * Buffer made by sharp has another hidden class than one made in
 * JavaScript) in a small per-row function, which V8 optimises within the
 * first image.
 */
function nearestFrame(f: Frame, ow: number, oh: number, checkInterrupt: () => void): Frame {
  const { width: w, height: h, channels: c, data } = f;
  const xs = makeTaps(w, ow, 'nearest-exact').idx;
  const ys = makeTaps(h, oh, 'nearest-exact').idx;
  const srcOf = new Int32Array(ow);
  for (let x = 0; x < ow; x++) srcOf[x] = xs[x]! * c;
  const rowLen = ow * c;
  const out = Buffer.allocUnsafe(oh * rowLen);
  const src = new Uint8Array(data.buffer, data.byteOffset, data.length);
  const dst = new Uint8Array(out.buffer, out.byteOffset, out.length);
  for (let y = 0; y < oh; y++) {
    const o = y * rowLen;
    if (y > 0 && ys[y] === ys[y - 1]) dst.copyWithin(o, o - rowLen, o);
    else gatherRow(src, ys[y]! * w * c, srcOf, ow, c, dst, o);
    if ((y & 255) === 255) checkInterrupt();
  }
  return new Frame(ow, oh, c, out);
}

/** Resizes a mask plane (floats, no clamping: as torch leaves them). Lanczos goes through bytes, as the reference's PIL path does. */
export function resizePlane(p: MaskPlane, ow: number, oh: number, method: UpscaleMethod, crop: 'disabled' | 'center' = 'disabled', checkInterrupt: () => void = noop): MaskPlane {
  checkSize(ow, oh);
  if (crop === 'center') {
    const r = centreCrop(p.width, p.height, ow, oh);
    p = cropPlane(p, r.x, r.y, r.w, r.h);
  }
  if (p.width === ow && p.height === oh) return p;
  if (method === 'lanczos') {
    const bytes = new Uint8Array(p.data.length);
    for (let i = 0; i < bytes.length; i++) bytes[i] = Math.min(255, Math.max(0, Math.trunc(p.data[i]! * 255)));
    const out = resampleSamples(bytes, p.width, p.height, 1, ow, oh, makeTaps(p.width, ow, 'pil-lanczos'), makeTaps(p.height, oh, 'pil-lanczos'), checkInterrupt);
    for (let i = 0; i < out.length; i++) out[i] = clampByte(out[i]!) / 255;
    return new MaskPlane(ow, oh, out);
  }
  return new MaskPlane(ow, oh, resampleSamples(p.data, p.width, p.height, 1, ow, oh, makeTaps(p.width, ow, method), makeTaps(p.height, oh, method), checkInterrupt));
}

function premultiply(d: Buffer): Float32Array {
  const out = new Float32Array(d.length);
  for (let i = 0; i < d.length; i += 4) {
    const a = d[i + 3]! / 255;
    out[i] = d[i]! * a;
    out[i + 1] = d[i + 1]! * a;
    out[i + 2] = d[i + 2]! * a;
    out[i + 3] = d[i + 3]!;
  }
  return out;
}

function unpremultiply(d: Float32Array): void {
  for (let i = 0; i < d.length; i += 4) {
    const a = d[i + 3]! / 255;
    if (a <= 0) {
      d[i] = d[i + 1] = d[i + 2] = 0;
      continue;
    }
    d[i] = d[i]! / a;
    d[i + 1] = d[i + 1]! / a;
    d[i + 2] = d[i + 2]! / a;
  }
}
