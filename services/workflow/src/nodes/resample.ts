import { checkSize, clampByte, Frame, MaskPlane, pyRound } from './image-types.ts';
import { nearestPlane, nearestPlanes, resamplePlane, resamplePlanes, type Taps } from './plane-loops.ts';
import { simdKernels, type SimdKernels } from './simd-kernels.ts';

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
 *   these are separable typed-array passes with precomputed taps
 *   (`resampleBytes`: loops per channel count and tap count), the reference's
 *   values up to the final rounding to bytes. Measured against ONNX Runtime's
 *   `Resize` (same semantics, MLAS): as fast or faster for bilinear on this
 *   2-core machine under load, and ORT's cubic shrink only runs unoptimised
 *   (seconds for a megapixel), so these stay here.
 * - `lanczos`: the reference goes through PIL's LANCZOS (a = 3, support scaled
 *   when shrinking, RGBA premultiplied as RGBa). `pilLanczos` computes it as
 *   PIL does, enlarging and shrinking: fixed-point weights of 2^22, a
 *   horizontal pass clipped to bytes, then a vertical one (PIL's pixels exactly
 *   on the reference fixtures). libvips' lanczos3 was 8–12 levels off PIL's on
 *   textured images, and enlarges on a grid shifted by a quarter pixel.
 */
export const UPSCALE_METHODS = ['nearest-exact', 'bilinear', 'area', 'bicubic', 'lanczos'] as const;
export type UpscaleMethod = (typeof UPSCALE_METHODS)[number];
export const CROP_METHODS = ['disabled', 'center'] as const;

export type { Taps };

export function makeTaps(inSize: number, outSize: number, method: Exclude<UpscaleMethod, 'lanczos'> | 'pil-lanczos'): Taps {
  // One small function a method: each is optimised on its own, and quickly.
  switch (method) {
    case 'nearest-exact':
      return nearestTaps(inSize, outSize);
    case 'bilinear':
      return bilinearTaps(inSize, outSize);
    case 'bicubic':
      return bicubicTaps(inSize, outSize);
    case 'area':
      return areaTaps(inSize, outSize);
    default:
      return pilLanczosTaps(inSize, outSize);
  }
}

function nearestTaps(inSize: number, outSize: number): Taps {
  const scale = inSize / outSize;
  const idx = new Int32Array(outSize);
  for (let i = 0; i < outSize; i++) idx[i] = Math.min(Math.floor((i + 0.5) * scale), inSize - 1);
  return { k: 1, idx, w: new Float32Array(outSize).fill(1) };
}

function bilinearTaps(inSize: number, outSize: number): Taps {
  const scale = inSize / outSize;
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

const CUBIC_A = -0.75;
const cubicNear = (x: number) => ((CUBIC_A + 2) * x - (CUBIC_A + 3)) * x * x + 1;
const cubicFar = (x: number) => ((CUBIC_A * x - 5 * CUBIC_A) * x + 8 * CUBIC_A) * x - 4 * CUBIC_A;

function bicubicTaps(inSize: number, outSize: number): Taps {
  const scale = inSize / outSize;
  const idx = new Int32Array(outSize * 4);
  const w = new Float32Array(outSize * 4);
  for (let i = 0; i < outSize; i++) {
    const s = (i + 0.5) * scale - 0.5;
    const f = Math.floor(s);
    const t = s - f;
    w[i * 4] = cubicFar(t + 1);
    w[i * 4 + 1] = cubicNear(t);
    w[i * 4 + 2] = cubicNear(1 - t);
    w[i * 4 + 3] = cubicFar(2 - t);
    for (let k = 0; k < 4; k++) idx[i * 4 + k] = Math.min(inSize - 1, Math.max(0, f - 1 + k));
  }
  return { k: 4, idx, w };
}

function areaTaps(inSize: number, outSize: number): Taps {
  // The widest window (2 for an exact 2:1 shrink, where the bound ceil(in/out) + 1 would say 3): the vertical pass has fast paths for 2 and 4 taps.
  let k = 1;
  for (let i = 0; i < outSize; i++) k = Math.max(k, Math.ceil(((i + 1) * inSize) / outSize) - Math.floor((i * inSize) / outSize));
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

/** PIL's resampling taps for LANCZOS (support 3, widened by the shrink factor). */
function pilLanczosTaps(inSize: number, outSize: number): Taps {
  const scale = inSize / outSize;
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

/** Cuts a centred region whose aspect ratio is the target's (common_upscale with crop="center"; Python's round, halves to even). */
export function centreCrop(w: number, h: number, ow: number, oh: number): { x: number; y: number; w: number; h: number } {
  const oldAspect = w / h;
  const newAspect = ow / oh;
  let x = 0;
  let y = 0;
  if (oldAspect > newAspect) x = pyRound((w - w * (newAspect / oldAspect)) / 2);
  else if (oldAspect < newAspect) y = pyRound((h - h * (oldAspect / newAspect)) / 2);
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
  if (method === 'nearest-exact') return nearestFrame(f, ow, oh, checkInterrupt);
  if (method === 'lanczos') return new Frame(ow, oh, f.channels, pilLanczos(f, ow, oh, checkInterrupt));
  const src = bytes(f.data);
  if (method === 'bilinear') {
    const simd = simdKernels();
    if (simd) return new Frame(ow, oh, f.channels, resampleFloatSimd(simd, src, f.width, f.height, f.channels, ow, oh, makeTaps(f.width, ow, method), makeTaps(f.height, oh, method), checkInterrupt));
    if (f.channels === 3) return new Frame(ow, oh, 3, await vipsBilinear(f, ow, oh));
  }
  if (method === 'area') {
    const ax = areaWindows(f.width, ow);
    const ay = areaWindows(f.height, oh);
    if (ax && ay) return new Frame(ow, oh, f.channels, areaBytes(src, f.width, f.height, f.channels, ow, oh, ax, ay, checkInterrupt));
  }
  const simd = simdKernels();
  if (simd) return new Frame(ow, oh, f.channels, resampleFloatSimd(simd, src, f.width, f.height, f.channels, ow, oh, makeTaps(f.width, ow, method), makeTaps(f.height, oh, method), checkInterrupt, true));
  return new Frame(ow, oh, f.channels, resampleBytes(src, f.width, f.height, f.channels, ow, oh, makeTaps(f.width, ow, method), makeTaps(f.height, oh, method), checkInterrupt));
}

/**
 * resampleBytes' separable passes in WebAssembly SIMD: each needed source
 * row through the horizontal taps into a ring of float32 rows, then each
 * output row as the weighted sum of its rows plus 0.5, truncated and
 * clipped to bytes; source rows are copied in one at a time and output rows
 * out. `exact` (bicubic, area): resampleBytes' own arithmetic, bit for bit
 * (simd-kernels.ts resH64 → resV64: double sums in two float64 lanes, rounded
 * to float32 where it rounds, its double or float32-step vertical loop by
 * tap count). Otherwise (bilinear) float32 throughout (toF32 → resH →
 * convV): torch's arithmetic (float32 products and sums, horizontal first,
 * as its separable upsampling), 4 lanes; it differs from resampleBytes'
 * double sums only where a value falls within a float32 rounding of a half
 * level.
 */
function resampleFloatSimd(k: SimdKernels, src: Uint8Array, w: number, h: number, c: number, ow: number, oh: number, tx: Taps, ty: Taps, checkInterrupt: () => void, exact = false): Buffer {
  const kx = tx.k;
  const ky = ty.k;
  const rowIn = w * c;
  const rowLen = ow * c;
  const lo = new Int32Array(oh);
  const hi = new Int32Array(oh);
  let ringRows = 1;
  for (let y = 0; y < oh; y++) {
    let a = h;
    let b = -1;
    for (let t = 0; t < ky; t++) {
      if (ty.w[y * ky + t] === 0) continue;
      const r = ty.idx[y * ky + t]!;
      if (r < a) a = r;
      if (r > b) b = r;
    }
    if (b < 0) a = b = 0;
    lo[y] = a;
    hi[y] = b;
    if (b - a + 1 > ringRows) ringRows = b - a + 1;
  }
  const align = (n: number) => (n + 15) & ~15;
  const xoAt = 0;
  const xwAt = xoAt + align(ow * kx * 4);
  const kernAt = xwAt + align(ow * kx * 4);
  const offsAt = kernAt + ky * 16;
  const rowAt = offsAt + align(ky * 4);
  const rowF32At = rowAt + align(rowIn + 16);
  const ringStride = align(rowLen * 4 + 64);
  const ringAt = rowF32At + align(rowIn * 4 + 64);
  const outAt = ringAt + ringRows * ringStride;
  k.reserve(outAt + align(rowLen + 16));
  const { u8, i32, f32 } = k;
  // Exact: offsets into the byte row; else into its float copy.
  for (let i = 0; i < ow * kx; i++) i32[(xoAt >> 2) + i] = tx.idx[i]! * c * (exact ? 1 : 4);
  f32.set(tx.w, xwAt >> 2);
  // resampleBytes' vertical loops: a double sum for 2 and 4 taps, float32 steps for the others.
  const steps = ky === 2 || ky === 4 ? 0 : 1;
  const slot = (r: number) => ringAt + (r % ringRows) * ringStride;
  const out = Buffer.allocUnsafe(oh * rowLen);
  let next = 0;
  for (let y = 0; y < oh; y++) {
    for (; next <= hi[y]!; next++) {
      if (next < lo[y]!) continue;
      u8.set(src.subarray(next * rowIn, (next + 1) * rowIn), rowAt);
      if (exact) k.resH64(rowAt, xoAt, xwAt, kx, ow, slot(next), c);
      else {
        k.toF32(rowAt, rowIn, rowF32At);
        k.resH(rowF32At, xoAt, xwAt, kx, ow, slot(next), c);
      }
    }
    for (let t = 0; t < ky; t++) {
      const wt = ty.w[y * ky + t]!;
      // A tap of weight 0 may name a row not made (yet): it reads one that is, times 0.
      i32[(offsAt >> 2) + t] = slot(wt === 0 ? lo[y]! : ty.idx[y * ky + t]!);
      if (exact) f32[(kernAt >> 2) + t] = wt;
      else f32.fill(wt, (kernAt >> 2) + t * 4, (kernAt >> 2) + t * 4 + 4);
    }
    if (exact) k.resV64(offsAt, kernAt, ky, outAt, rowLen, steps);
    else k.convV(offsAt, kernAt, ky, outAt, rowLen, 0, 1, 0);
    out.set(u8.subarray(outAt, outAt + rowLen), y * rowLen);
    if ((y & 127) === 127) checkInterrupt();
  }
  return out;
}

/**
 * torch's bilinear resize of an RGB frame through libvips' affine transform
 * with its bilinear interpolator (multithreaded C, 3–5× faster than the
 * typed-array passes): scale out/in on each axis with the input and output
 * offsets that put pixel centres at +0.5 (source (i + 0.5)·in/out − 0.5, as
 * torch). libvips fills what falls outside the image with black where torch
 * clamps the source position to the edge, so the output rows and columns
 * whose source position leaves [0, in − 1] are recomputed here from torch's
 * taps. libvips interpolates in fixed point: within one level of torch's
 * float sums (the reference fixtures' tolerance).
 */
async function vipsBilinear(f: Frame, ow: number, oh: number): Promise<Buffer> {
  const { width: w, height: h } = f;
  const sx = ow / w;
  const sy = oh / h;
  const { data, info } = await f
    .pipeline()
    .affine([sx, 0, 0, sy], { interpolator: 'bilinear', idx: 0.5, idy: 0.5, odx: -0.5, ody: -0.5 })
    .raw()
    .toBuffer({ resolveWithObject: true });
  let out = data;
  if (info.width !== ow || info.height !== oh || info.channels !== 3) {
    // libvips rounds its output area outwards: keep the top-left ow×oh.
    out = Buffer.allocUnsafe(ow * oh * 3);
    for (let y = 0; y < oh; y++) data.copy(out, y * ow * 3, y * info.width * info.channels, (y * info.width + ow) * info.channels);
  }
  const tx = makeTaps(w, ow, 'bilinear');
  const ty = makeTaps(h, oh, 'bilinear');
  const outside = (i: number, scale: number, n: number) => {
    const src = (i + 0.5) / scale - 0.5;
    return src < 0 || src > n - 1;
  };
  const src = bytes(f.data);
  const dst = bytes(out);
  const at = (x: number, y: number) => {
    for (let ch = 0; ch < 3; ch++) {
      let v = 0.5;
      for (let a = 0; a < 2; a++) {
        const row = ty.idx[y * 2 + a]! * w;
        const wy = ty.w[y * 2 + a]!;
        for (let b = 0; b < 2; b++) v += wy * tx.w[x * 2 + b]! * src[(row + tx.idx[x * 2 + b]!) * 3 + ch]!;
      }
      dst[(y * ow + x) * 3 + ch] = v <= 0 ? 0 : v >= 255 ? 255 : v;
    }
  };
  for (let y = 0; y < oh; y++) {
    if (outside(y, sy, h)) {
      for (let x = 0; x < ow; x++) at(x, y);
      continue;
    }
    let left = 0;
    for (; left < ow && outside(left, sx, w); left++) at(left, y);
    for (let x = ow - 1; x >= left && outside(x, sx, w); x--) at(x, y);
  }
  return out;
}

/** A plain Uint8Array view of a Buffer (sharp's Buffers and JavaScript's have different hidden classes). */
function bytes(b: Uint8Array): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/**
 * Separable resampling of 8-bit interleaved samples (HWC) in float: each
 * needed source row through the horizontal taps into a float row, then each
 * output row as the weighted sum of its `ty.k` float rows, rounded to bytes.
 * The loops are written per channel count and per vertical tap count (2 for
 * bilinear, 4 for bicubic) so that V8 keeps the sums in registers; this is
 * the same arithmetic as torch's separable kernels (float weights, float
 * sums), 3 to 5 times faster than one generic loop.
 */
export function resampleBytes(src: Uint8Array, w: number, h: number, c: number, ow: number, oh: number, tx: Taps, ty: Taps, checkInterrupt: () => void = noop): Buffer {
  const kx = tx.k;
  const ky = ty.k;
  const xo = new Int32Array(tx.idx.length);
  for (let i = 0; i < xo.length; i++) xo[i] = tx.idx[i]! * c;
  const xw = tx.w;
  const yw = ty.w;
  const yi = ty.idx;
  // Each output row reads a window of source rows that only moves down: the horizontally resampled rows live in a
  // ring of the widest window's size (memory: that many float rows, not the whole intermediate image).
  const lo = new Int32Array(oh);
  const hi = new Int32Array(oh);
  let ringRows = 1;
  for (let y = 0; y < oh; y++) {
    let a = h;
    let b = -1;
    for (let t = 0; t < ky; t++) {
      if (yw[y * ky + t] === 0) continue;
      const r = yi[y * ky + t]!;
      if (r < a) a = r;
      if (r > b) b = r;
    }
    if (b < 0) a = b = 0;
    lo[y] = a;
    hi[y] = b;
    if (b - a + 1 > ringRows) ringRows = b - a + 1;
  }
  const rowLen = ow * c;
  const ring = new Float32Array(ringRows * rowLen);
  const slot = new Int32Array(h);
  for (let r = 0; r < h; r++) slot[r] = (r % ringRows) * rowLen;
  const out = Buffer.allocUnsafe(oh * rowLen);
  const dst = bytes(out);
  const acc = new Float32Array(rowLen);
  let next = 0;
  for (let y = 0; y < oh; y++) {
    for (; next <= hi[y]!; next++) if (next >= lo[y]!) horizontalRow(src, next * w * c, ring, slot[next]!, ow, c, kx, xo, xw);
    const b = y * ky;
    const o = y * rowLen;
    if (ky === 2) verticalRow2(ring, slot[yi[b]!]!, yw[b]!, slot[yi[b + 1]!]!, yw[b + 1]!, dst, o, rowLen);
    else if (ky === 3) verticalRow3f(ring, slot[yi[b]!]!, yw[b]!, slot[yi[b + 1]!]!, yw[b + 1]!, slot[yi[b + 2]!]!, yw[b + 2]!, dst, o, rowLen);
    else if (ky === 4) verticalRow4(ring, slot[yi[b]!]!, yw[b]!, slot[yi[b + 1]!]!, yw[b + 1]!, slot[yi[b + 2]!]!, yw[b + 2]!, slot[yi[b + 3]!]!, yw[b + 3]!, dst, o, rowLen);
    else {
      acc.fill(0.5);
      for (let t = 0; t < ky; t++) {
        const wt = yw[b + t]!;
        if (wt === 0) continue;
        const s = slot[yi[b + t]!]!;
        for (let i = 0; i < rowLen; i++) acc[i]! += wt * ring[s + i]!;
      }
      for (let i = 0; i < rowLen; i++) {
        const v = acc[i]!;
        dst[o + i] = v <= 0 ? 0 : v >= 255 ? 255 : v;
      }
    }
    if ((y & 127) === 127) checkInterrupt();
  }
  return out;
}

function horizontalRow(src: Uint8Array, rin: number, tmp: Float32Array, rout: number, ow: number, c: number, kx: number, xo: Int32Array, xw: Float32Array): void {
  if (c === 3 && kx === 3) {
    for (let x = 0, o = rout, b = 0; x < ow; x++, o += 3, b += 3) {
      const w0 = xw[b]!;
      const w1 = xw[b + 1]!;
      const w2 = xw[b + 2]!;
      const p0 = rin + xo[b]!;
      const p1 = rin + xo[b + 1]!;
      const p2 = rin + xo[b + 2]!;
      tmp[o] = w0 * src[p0]! + w1 * src[p1]! + w2 * src[p2]!;
      tmp[o + 1] = w0 * src[p0 + 1]! + w1 * src[p1 + 1]! + w2 * src[p2 + 1]!;
      tmp[o + 2] = w0 * src[p0 + 2]! + w1 * src[p1 + 2]! + w2 * src[p2 + 2]!;
    }
  } else if (c === 3) {
    for (let x = 0, o = rout, b = 0; x < ow; x++, o += 3, b += kx) {
      let a0 = 0;
      let a1 = 0;
      let a2 = 0;
      for (let t = 0; t < kx; t++) {
        const wt = xw[b + t]!;
        const s = rin + xo[b + t]!;
        a0 += wt * src[s]!;
        a1 += wt * src[s + 1]!;
        a2 += wt * src[s + 2]!;
      }
      tmp[o] = a0;
      tmp[o + 1] = a1;
      tmp[o + 2] = a2;
    }
  } else if (c === 4) {
    for (let x = 0, o = rout, b = 0; x < ow; x++, o += 4, b += kx) {
      let a0 = 0;
      let a1 = 0;
      let a2 = 0;
      let a3 = 0;
      for (let t = 0; t < kx; t++) {
        const wt = xw[b + t]!;
        const s = rin + xo[b + t]!;
        a0 += wt * src[s]!;
        a1 += wt * src[s + 1]!;
        a2 += wt * src[s + 2]!;
        a3 += wt * src[s + 3]!;
      }
      tmp[o] = a0;
      tmp[o + 1] = a1;
      tmp[o + 2] = a2;
      tmp[o + 3] = a3;
    }
  } else {
    for (let x = 0, o = rout, b = 0; x < ow; x++, o += c, b += kx) {
      for (let ch = 0; ch < c; ch++) {
        let a = 0;
        for (let t = 0; t < kx; t++) a += xw[b + t]! * src[rin + xo[b + t]! + ch]!;
        tmp[o + ch] = a;
      }
    }
  }
}

function verticalRow2(tmp: Float32Array, s0: number, w0: number, s1: number, w1: number, dst: Uint8Array, o: number, n: number): void {
  for (let i = 0; i < n; i++) {
    const v = w0 * tmp[s0 + i]! + w1 * tmp[s1 + i]! + 0.5;
    dst[o + i] = v <= 0 ? 0 : v >= 255 ? 255 : v;
  }
}

/**
 * Three taps (area shrinking by less than 2): the general loop's arithmetic
 * exactly, a float32 sum from 0.5 rounded after each tap (Math.fround as the
 * Float32Array stores), without its row of partial sums. A weight of 0 (a
 * shorter window's padding) adds 0, as the general loop's skipped tap.
 */
function verticalRow3f(tmp: Float32Array, s0: number, w0: number, s1: number, w1: number, s2: number, w2: number, dst: Uint8Array, o: number, n: number): void {
  for (let i = 0; i < n; i++) {
    let v = Math.fround(0.5 + w0 * tmp[s0 + i]!);
    v = Math.fround(v + w1 * tmp[s1 + i]!);
    v = Math.fround(v + w2 * tmp[s2 + i]!);
    dst[o + i] = v <= 0 ? 0 : v >= 255 ? 255 : v;
  }
}

function verticalRow4(tmp: Float32Array, s0: number, w0: number, s1: number, w1: number, s2: number, w2: number, s3: number, w3: number, dst: Uint8Array, o: number, n: number): void {
  for (let i = 0; i < n; i++) {
    const v = w0 * tmp[s0 + i]! + w1 * tmp[s1 + i]! + w2 * tmp[s2 + i]! + w3 * tmp[s3 + i]! + 0.5;
    dst[o + i] = v <= 0 ? 0 : v >= 255 ? 255 : v;
  }
}

/**
 * torch's area windows on one axis (adaptive average pooling: output i
 * averages inputs floor(i·in/out) … ceil((i + 1)·in/out) − 1) when every
 * window's length is a power of two: the first input `lo`, the length `n`,
 * and `mul` = D / n with D the longest window, so that a window's sum times
 * `mul` is its mean times D, an integer. Undefined when a window is another
 * length (3 for a 1.6× shrink), whose mean is not exact in binary.
 * Enlarging gives lengths 1 and 2 only, an exact 2:1 or 4:1 shrink 2 or 4.
 */
interface AreaWindows {
  lo: Int32Array;
  n: Int32Array;
  mul: Int32Array;
  bits: number;
}

function areaWindows(inSize: number, outSize: number): AreaWindows | undefined {
  const lo = new Int32Array(outSize);
  const n = new Int32Array(outSize);
  let longest = 1;
  for (let i = 0; i < outSize; i++) {
    const start = Math.floor((i * inSize) / outSize);
    const len = Math.ceil(((i + 1) * inSize) / outSize) - start;
    if (len > 256 || (len & (len - 1)) !== 0) return undefined;
    lo[i] = start;
    n[i] = len;
    if (len > longest) longest = len;
  }
  const mul = new Int32Array(outSize);
  for (let i = 0; i < outSize; i++) mul[i] = longest / n[i]!;
  return { lo, n, mul, bits: Math.log2(longest) };
}

/**
 * `area` where both axes' windows have power-of-two lengths (areaWindows),
 * in integers: each needed source row's window sums times `mul` (the
 * horizontal mean times Dx, exact), then per output row the sum over its
 * rows times the vertical `mul` (the mean times Dx·Dy), rounded half up by a
 * shift. Every mean here is exact in binary, so this is bit for bit the float
 * passes' result (resampleBytes: the exact mean plus 0.5, truncated), in a
 * fraction of the time.
 */
function areaBytes(src: Uint8Array, w: number, h: number, c: number, ow: number, oh: number, ax: AreaWindows, ay: AreaWindows, checkInterrupt: () => void): Buffer {
  const simd = simdKernels();
  if (simd) return areaBytesSimd(simd, src, w, h, c, ow, oh, ax, ay, checkInterrupt);
  const rowLen = ow * c;
  let ringRows = 1;
  for (let y = 0; y < oh; y++) if (ay.n[y]! > ringRows) ringRows = ay.n[y]!;
  const ring = new Int32Array(ringRows * rowLen);
  const out = Buffer.allocUnsafe(oh * rowLen);
  const dst = bytes(out);
  const shift = ax.bits + ay.bits;
  const half = (1 << shift) >> 1;
  const xo = new Int32Array(ow);
  for (let x = 0; x < ow; x++) xo[x] = ax.lo[x]! * c;
  let next = 0;
  for (let y = 0; y < oh; y++) {
    const a = ay.lo[y]!;
    const m = ay.n[y]!;
    if (next < a) next = a;
    for (; next < a + m; next++) areaRow(src, next * w * c, ring, (next % ringRows) * rowLen, ow, c, xo, ax.n, ax.mul);
    const o = y * rowLen;
    const my = ay.mul[y]!;
    const r0 = (a % ringRows) * rowLen;
    if (m <= 2) areaColumn2(ring, r0, m === 2 ? ((a + 1) % ringRows) * rowLen : -1, my, half, shift, dst, o, rowLen);
    else {
      for (let i = 0; i < rowLen; i++) {
        let v = 0;
        for (let t = 0; t < m; t++) v += ring[((a + t) % ringRows) * rowLen + i]!;
        dst[o + i] = (v * my + half) >> shift;
      }
    }
    if ((y & 127) === 127) checkInterrupt();
  }
  return out;
}

/**
 * areaBytes in WebAssembly SIMD (simd-kernels.ts intH / intV: the same
 * integers), source rows copied in one at a time, the windows' sums in a ring
 * of int32 rows, output rows copied out.
 */
function areaBytesSimd(k: SimdKernels, src: Uint8Array, w: number, h: number, c: number, ow: number, oh: number, ax: AreaWindows, ay: AreaWindows, checkInterrupt: () => void): Buffer {
  const rowIn = w * c;
  const rowLen = ow * c;
  let kx = 1;
  for (let x = 0; x < ow; x++) if (ax.n[x]! > kx) kx = ax.n[x]!;
  let ringRows = 1;
  for (let y = 0; y < oh; y++) if (ay.n[y]! > ringRows) ringRows = ay.n[y]!;
  const align = (n: number) => (n + 15) & ~15;
  const xoAt = 0;
  const nAt = xoAt + align(ow * 4);
  const kxAt = nAt + align(ow * 4);
  const kyAt = kxAt + align(ow * kx * 4);
  const offsAt = kyAt + align(ringRows * 4);
  const rowAt = offsAt + align(ringRows * 4);
  const ringStride = align(rowLen * 4 + 64);
  const ringAt = rowAt + align(rowIn + 16);
  const outAt = ringAt + ringRows * ringStride;
  k.reserve(outAt + align(rowLen + 16));
  const { u8, i32 } = k;
  for (let x = 0; x < ow; x++) {
    i32[(xoAt >> 2) + x] = ax.lo[x]! * c;
    i32[(nAt >> 2) + x] = ax.n[x]!;
    for (let t = 0; t < kx; t++) i32[(kxAt >> 2) + x * kx + t] = ax.mul[x]!;
  }
  const shift = ax.bits + ay.bits;
  const half = (1 << shift) >> 1;
  const out = Buffer.allocUnsafe(oh * rowLen);
  let next = 0;
  for (let y = 0; y < oh; y++) {
    const a = ay.lo[y]!;
    const m = ay.n[y]!;
    if (next < a) next = a;
    for (; next < a + m; next++) {
      u8.set(src.subarray(next * rowIn, (next + 1) * rowIn), rowAt);
      k.intH(rowAt, xoAt, nAt, kxAt, kx, ow, ringAt + (next % ringRows) * ringStride, c);
    }
    for (let t = 0; t < m; t++) {
      i32[(offsAt >> 2) + t] = ringAt + ((a + t) % ringRows) * ringStride;
      i32[(kyAt >> 2) + t] = ay.mul[y]!;
    }
    k.intV(offsAt, kyAt, m, outAt, rowLen, half, shift);
    out.set(u8.subarray(outAt, outAt + rowLen), y * rowLen);
    if ((y & 127) === 127) checkInterrupt();
  }
  return out;
}

/** One output row of areaBytes from one ring row at `r0`, or two (`r1` ≥ 0). */
function areaColumn2(ring: Int32Array, r0: number, r1: number, my: number, half: number, shift: number, dst: Uint8Array, o: number, n: number): void {
  if (r1 < 0) for (let i = 0; i < n; i++) dst[o + i] = (ring[r0 + i]! * my + half) >> shift;
  else for (let i = 0; i < n; i++) dst[o + i] = ((ring[r0 + i]! + ring[r1 + i]!) * my + half) >> shift;
}

/** One source row's horizontal window sums times their `mul` (areaBytes). */
function areaRow(src: Uint8Array, rin: number, ring: Int32Array, rout: number, ow: number, c: number, xo: Int32Array, n: Int32Array, mul: Int32Array): void {
  if (c === 3) {
    for (let x = 0, o = rout; x < ow; x++, o += 3) {
      const p = rin + xo[x]!;
      const k = mul[x]!;
      const len = n[x]!;
      if (len === 1) {
        ring[o] = src[p]! * k;
        ring[o + 1] = src[p + 1]! * k;
        ring[o + 2] = src[p + 2]! * k;
      } else if (len === 2) {
        ring[o] = (src[p]! + src[p + 3]!) * k;
        ring[o + 1] = (src[p + 1]! + src[p + 4]!) * k;
        ring[o + 2] = (src[p + 2]! + src[p + 5]!) * k;
      } else {
        let s0 = 0;
        let s1 = 0;
        let s2 = 0;
        for (let t = 0, q = p; t < len; t++, q += 3) {
          s0 += src[q]!;
          s1 += src[q + 1]!;
          s2 += src[q + 2]!;
        }
        ring[o] = s0 * k;
        ring[o + 1] = s1 * k;
        ring[o + 2] = s2 * k;
      }
    }
    return;
  }
  for (let x = 0, o = rout; x < ow; x++, o += c) {
    const p = rin + xo[x]!;
    const k = mul[x]!;
    const len = n[x]!;
    for (let ch = 0; ch < c; ch++) {
      let s = 0;
      for (let t = 0, q = p + ch; t < len; t++, q += c) s += src[q]!;
      ring[o + ch] = s * k;
    }
  }
}

/** PIL's fixed-point precision for 8-bit images (32 − 8 − 2 bits). */
const PIL_PRECISION_BITS = 22;

/**
 * PIL's taps for one axis in the form its loops use: per output position the
 * first source index `lo`, the tap count `n` and `n` weights as integers of
 * 2^22 (normalize_coeffs_8bpc: rounded away from zero) at `kk[i · k …]`.
 */
interface PilTaps {
  k: number;
  lo: Int32Array;
  n: Int32Array;
  kk: Int32Array;
}

function pilTaps(inSize: number, outSize: number): PilTaps {
  // PIL's precompute_coeffs with its lanczos filter, in double as PIL: the support widened by the shrink factor,
  // taps at (x + xmin − centre + 0.5) · (1 / filterscale), the filter nonzero on [−3, 3), weights normalised by
  // their sum, then normalize_coeffs_8bpc (integers of 2^22, rounded away from zero).
  const scale = inSize / outSize;
  const filterscale = Math.max(scale, 1);
  const support = 3 * filterscale;
  const ss = 1 / filterscale;
  const k = Math.ceil(support) * 2 + 1;
  const lo = new Int32Array(outSize);
  const n = new Int32Array(outSize);
  const kk = new Int32Array(outSize * k);
  const one = 2 ** PIL_PRECISION_BITS;
  const sinc = (x: number) => {
    if (x === 0) return 1;
    x *= Math.PI;
    return Math.sin(x) / x;
  };
  const ws = new Float64Array(k);
  for (let i = 0; i < outSize; i++) {
    const centre = (i + 0.5) * scale;
    const xmin = Math.max(0, Math.trunc(centre - support + 0.5));
    const m = Math.min(inSize, Math.trunc(centre + support + 0.5)) - xmin;
    let ww = 0;
    for (let x = 0; x < m; x++) {
      const t = (x + xmin - centre + 0.5) * ss;
      const v = t >= -3 && t < 3 ? sinc(t) * sinc(t / 3) : 0;
      ws[x] = v;
      ww += v;
    }
    lo[i] = xmin;
    n[i] = m;
    for (let x = 0; x < m; x++) {
      const v = ww !== 0 ? ws[x]! / ww : ws[x]!;
      kk[i * k + x] = v < 0 ? Math.trunc(v * one - 0.5) : Math.trunc(v * one + 0.5);
    }
  }
  return { k, lo, n, kk };
}

/**
 * Image.resize(LANCZOS) for 8-bit RGB/RGBA as PIL computes it (the
 * reference's comfy.utils.lanczos): taps in double, weights as fixed-point
 * integers, a horizontal pass rounded and clipped to bytes, then a vertical
 * one; RGBA goes through PIL's premultiplied RGBa and back.
 *
 * PIL sums in 32-bit integers (|weight| ≤ 2^22 · 1.3, samples ≤ 255: no
 * overflow), so the sums here are int32 too (`| 0`, `>> 22` is PIL's
 * arithmetic shift), and the clip to 0..255 is a Uint8ClampedArray store of
 * an integer. The horizontally resampled rows live in a ring of the widest
 * vertical window (each output row's window of source rows only moves down),
 * computed when the first output row needs them; RGBA rows are premultiplied
 * one at a time into a scratch row.
 */
function pilLanczos(f: Frame, ow: number, oh: number, checkInterrupt: () => void): Buffer {
  const simd = simdKernels();
  if (simd) return pilLanczosSimd(simd, f, ow, oh, checkInterrupt);
  const { width: w, height: h, channels: c } = f;
  const src = bytes(f.data);
  const rowIn = w * c;
  const rowLen = ow * c;
  const out = Buffer.allocUnsafe(oh * rowLen);
  const dst = new Uint8ClampedArray(out.buffer, out.byteOffset, out.byteLength);
  // PIL skips a pass whose size does not change.
  const tx = ow === w ? undefined : pilTaps(w, ow);
  const ty = oh === h ? undefined : pilTaps(h, oh);
  const pre = c === 4 ? new Uint8Array(rowIn) : undefined;
  /** Source row r (premultiplied when RGBA) as a view of `src` or of the scratch row. */
  const sourceRow = (r: number): [Uint8Array, number] => {
    if (pre === undefined) return [src, r * rowIn];
    pilPremultiplyRow(src, r * rowIn, pre, rowIn);
    return [pre, 0];
  };
  if (ty === undefined) {
    // Horizontal pass only, straight into the output.
    for (let y = 0; y < h; y++) {
      const [s, o] = sourceRow(y);
      pilHorizontalRow(s, o, dst, y * rowLen, ow, c, tx!);
      if ((y & 127) === 127) checkInterrupt();
    }
  } else {
    const { k: ky, lo, n, kk } = ty;
    let ringRows = 1;
    for (let y = 0; y < oh; y++) if (n[y]! > ringRows) ringRows = n[y]!;
    let mid: Uint8ClampedArray;
    let slotOf: (r: number) => number;
    const ringed = tx !== undefined || pre !== undefined;
    if (!ringed) {
      // Vertical pass only, on the source rows themselves.
      mid = new Uint8ClampedArray(src.buffer, src.byteOffset, src.byteLength);
      slotOf = (r) => r * rowLen;
    } else {
      mid = new Uint8ClampedArray(ringRows * rowLen);
      slotOf = (r) => (r % ringRows) * rowLen;
    }
    const offs = new Int32Array(ky);
    let next = 0;
    for (let y = 0; y < oh; y++) {
      const a = lo[y]!;
      const m = n[y]!;
      if (ringed) {
        if (next < a) next = a;
        for (; next < a + m; next++) {
          const [s, o] = sourceRow(next);
          if (tx === undefined) mid.set(s.subarray(o, o + rowIn), slotOf(next));
          else pilHorizontalRow(s, o, mid, slotOf(next), ow, c, tx);
        }
      }
      for (let t = 0; t < m; t++) offs[t] = slotOf(a + t);
      pilVerticalRow(mid, offs, kk, y * ky, m, dst, y * rowLen, rowLen);
      if ((y & 127) === 127) checkInterrupt();
    }
  }
  if (c === 4) pilUnpremultiply(out);
  return out;
}

/**
 * pilLanczos with its loops in WebAssembly SIMD (simd-kernels.ts: the same
 * int32 arithmetic, 4 or 16 samples an instruction): the same passes and
 * ring of horizontally resampled rows, in the kernels' memory; source rows
 * are copied in one at a time (premultiplied there when RGBA) and output rows
 * copied out, so that memory holds the taps and a few rows.
 */
function pilLanczosSimd(k: SimdKernels, f: Frame, ow: number, oh: number, checkInterrupt: () => void): Buffer {
  const { width: w, height: h, channels: c } = f;
  const src = bytes(f.data);
  const rowIn = w * c;
  const rowLen = ow * c;
  const out = Buffer.allocUnsafe(oh * rowLen);
  const tx = ow === w ? undefined : pilTaps(w, ow);
  const ty = oh === h ? undefined : pilTaps(h, oh);
  let ringRows = 1;
  if (ty) for (let y = 0; y < oh; y++) if (ty.n[y]! > ringRows) ringRows = ty.n[y]!;
  // Layout (16-byte aligned blocks): horizontal offsets, counts, weights; vertical weights; row offsets; a source row; the ring; an output row.
  const align = (n: number) => (n + 15) & ~15;
  const xoAt = 0;
  const nAt = xoAt + align(tx ? ow * 4 : 0);
  const kxAt = nAt + align(tx ? ow * 4 : 0);
  const kyAt = kxAt + align(tx ? tx.kk.length * 4 : 0);
  const offsAt = kyAt + align(ty ? ty.kk.length * 4 : 0);
  const rowAt = offsAt + align(ringRows * 4);
  const ringStride = align(rowLen + 16);
  const ringAt = rowAt + align(rowIn + 16);
  const outAt = ringAt + ringRows * ringStride;
  k.reserve(outAt + align(rowLen + 16));
  const { u8, i32 } = k;
  if (tx) {
    for (let x = 0; x < ow; x++) i32[(xoAt >> 2) + x] = tx.lo[x]! * c;
    i32.set(tx.n, nAt >> 2);
    i32.set(tx.kk, kxAt >> 2);
  }
  if (ty) i32.set(ty.kk, kyAt >> 2);
  /** Source row r into the row block (premultiplied when RGBA). */
  const rowIntoMemory = (r: number) => {
    if (c === 4) pilPremultiplyRow(src, r * rowIn, u8, rowIn, rowAt);
    else u8.set(src.subarray(r * rowIn, (r + 1) * rowIn), rowAt);
  };
  if (!ty) {
    for (let y = 0; y < h; y++) {
      rowIntoMemory(y);
      k.lanczosH(rowAt, xoAt, nAt, kxAt, tx!.k, ow, outAt, c);
      out.set(u8.subarray(outAt, outAt + rowLen), y * rowLen);
      if ((y & 127) === 127) checkInterrupt();
    }
  } else {
    const { k: ky, lo, n } = ty;
    let next = 0;
    for (let y = 0; y < oh; y++) {
      const a = lo[y]!;
      const m = n[y]!;
      if (next < a) next = a;
      for (; next < a + m; next++) {
        rowIntoMemory(next);
        const slot = ringAt + (next % ringRows) * ringStride;
        if (tx) k.lanczosH(rowAt, xoAt, nAt, kxAt, tx.k, ow, slot, c);
        else u8.copyWithin(slot, rowAt, rowAt + rowIn);
      }
      for (let t = 0; t < m; t++) i32[(offsAt >> 2) + t] = ringAt + ((a + t) % ringRows) * ringStride;
      k.lanczosV(offsAt, kyAt + y * ky * 4, m, outAt, rowLen);
      out.set(u8.subarray(outAt, outAt + rowLen), y * rowLen);
      if ((y & 127) === 127) checkInterrupt();
    }
  }
  if (c === 4) pilUnpremultiply(out);
  return out;
}

/** One row of PIL's horizontal pass: int32 sums from 2^21, shifted right by 22, clipped to bytes by the clamped array. */
function pilHorizontalRow(src: Uint8Array, rin: number, mid: Uint8ClampedArray, rout: number, ow: number, c: number, tx: PilTaps): void {
  const { k, lo, n, kk } = tx;
  const half = 1 << (PIL_PRECISION_BITS - 1);
  if (c === 3) {
    for (let x = 0, o = rout, b = 0; x < ow; x++, o += 3, b += k) {
      let s0 = half;
      let s1 = half;
      let s2 = half;
      let p = rin + lo[x]! * 3;
      for (let t = b, e = b + n[x]!; t < e; t++, p += 3) {
        const kv = kk[t]!;
        s0 = (s0 + Math.imul(kv, src[p]!)) | 0;
        s1 = (s1 + Math.imul(kv, src[p + 1]!)) | 0;
        s2 = (s2 + Math.imul(kv, src[p + 2]!)) | 0;
      }
      mid[o] = s0 >> PIL_PRECISION_BITS;
      mid[o + 1] = s1 >> PIL_PRECISION_BITS;
      mid[o + 2] = s2 >> PIL_PRECISION_BITS;
    }
    return;
  }
  if (c === 4) {
    for (let x = 0, o = rout, b = 0; x < ow; x++, o += 4, b += k) {
      let s0 = half;
      let s1 = half;
      let s2 = half;
      let s3 = half;
      let p = rin + lo[x]! * 4;
      for (let t = b, e = b + n[x]!; t < e; t++, p += 4) {
        const kv = kk[t]!;
        s0 = (s0 + Math.imul(kv, src[p]!)) | 0;
        s1 = (s1 + Math.imul(kv, src[p + 1]!)) | 0;
        s2 = (s2 + Math.imul(kv, src[p + 2]!)) | 0;
        s3 = (s3 + Math.imul(kv, src[p + 3]!)) | 0;
      }
      mid[o] = s0 >> PIL_PRECISION_BITS;
      mid[o + 1] = s1 >> PIL_PRECISION_BITS;
      mid[o + 2] = s2 >> PIL_PRECISION_BITS;
      mid[o + 3] = s3 >> PIL_PRECISION_BITS;
    }
    return;
  }
  for (let x = 0, o = rout, b = 0; x < ow; x++, o += c, b += k) {
    for (let ch = 0; ch < c; ch++) {
      let ss = half;
      for (let t = 0; t < n[x]!; t++) ss = (ss + Math.imul(kk[b + t]!, src[rin + (lo[x]! + t) * c + ch]!)) | 0;
      mid[o + ch] = ss >> PIL_PRECISION_BITS;
    }
  }
}

/** One output row of PIL's vertical pass over the `m` rows at `offs` of `mid`, weights at `kk[b …]`. */
function pilVerticalRow(mid: Uint8ClampedArray, offs: Int32Array, kk: Int32Array, b: number, m: number, dst: Uint8ClampedArray, o: number, len: number): void {
  const half = 1 << (PIL_PRECISION_BITS - 1);
  if (m === 7) {
    const r0 = offs[0]!, r1 = offs[1]!, r2 = offs[2]!, r3 = offs[3]!, r4 = offs[4]!, r5 = offs[5]!, r6 = offs[6]!;
    const k0 = kk[b]!, k1 = kk[b + 1]!, k2 = kk[b + 2]!, k3 = kk[b + 3]!, k4 = kk[b + 4]!, k5 = kk[b + 5]!, k6 = kk[b + 6]!;
    for (let i = 0; i < len; i++) {
      let ss = (half + Math.imul(k0, mid[r0 + i]!)) | 0;
      ss = (ss + Math.imul(k1, mid[r1 + i]!)) | 0;
      ss = (ss + Math.imul(k2, mid[r2 + i]!)) | 0;
      ss = (ss + Math.imul(k3, mid[r3 + i]!)) | 0;
      ss = (ss + Math.imul(k4, mid[r4 + i]!)) | 0;
      ss = (ss + Math.imul(k5, mid[r5 + i]!)) | 0;
      ss = (ss + Math.imul(k6, mid[r6 + i]!)) | 0;
      dst[o + i] = ss >> PIL_PRECISION_BITS;
    }
    return;
  }
  if (m === 6) {
    const r0 = offs[0]!, r1 = offs[1]!, r2 = offs[2]!, r3 = offs[3]!, r4 = offs[4]!, r5 = offs[5]!;
    const k0 = kk[b]!, k1 = kk[b + 1]!, k2 = kk[b + 2]!, k3 = kk[b + 3]!, k4 = kk[b + 4]!, k5 = kk[b + 5]!;
    for (let i = 0; i < len; i++) {
      let ss = (half + Math.imul(k0, mid[r0 + i]!)) | 0;
      ss = (ss + Math.imul(k1, mid[r1 + i]!)) | 0;
      ss = (ss + Math.imul(k2, mid[r2 + i]!)) | 0;
      ss = (ss + Math.imul(k3, mid[r3 + i]!)) | 0;
      ss = (ss + Math.imul(k4, mid[r4 + i]!)) | 0;
      ss = (ss + Math.imul(k5, mid[r5 + i]!)) | 0;
      dst[o + i] = ss >> PIL_PRECISION_BITS;
    }
    return;
  }
  // Other windows (shrinking: wider): four rows at a time into an int32 row of partial sums (a missing fourth tap weighs 0).
  if (partial.length < len) partial = new Int32Array(len);
  const acc = partial;
  for (let t = 0; t < m; t += 4) {
    const r0 = offs[t]!;
    const k0 = kk[b + t]!;
    const r1 = t + 1 < m ? offs[t + 1]! : r0;
    const k1 = t + 1 < m ? kk[b + t + 1]! : 0;
    const r2 = t + 2 < m ? offs[t + 2]! : r0;
    const k2 = t + 2 < m ? kk[b + t + 2]! : 0;
    const r3 = t + 3 < m ? offs[t + 3]! : r0;
    const k3 = t + 3 < m ? kk[b + t + 3]! : 0;
    const first = t === 0;
    const last = t + 4 >= m;
    for (let i = 0; i < len; i++) {
      let ss = first ? half : acc[i]!;
      ss = (ss + Math.imul(k0, mid[r0 + i]!)) | 0;
      ss = (ss + Math.imul(k1, mid[r1 + i]!)) | 0;
      ss = (ss + Math.imul(k2, mid[r2 + i]!)) | 0;
      ss = (ss + Math.imul(k3, mid[r3 + i]!)) | 0;
      if (last) dst[o + i] = ss >> PIL_PRECISION_BITS;
      else acc[i] = ss;
    }
  }
}

/** pilVerticalRow's row of partial sums for other windows (grown to the longest row). */
let partial = new Int32Array(0);

/** PIL's RGBA → RGBa of one row: each colour times alpha / 255, rounded as its MULDIV255. */
function pilPremultiplyRow(d: Uint8Array, from: number, out: Uint8Array, len: number, to = 0): void {
  for (let i = to, j = from, e = to + len; i < e; i += 4, j += 4) {
    const a = d[j + 3]!;
    let t = d[j]! * a + 128;
    out[i] = ((t >> 8) + t) >> 8;
    t = d[j + 1]! * a + 128;
    out[i + 1] = ((t >> 8) + t) >> 8;
    t = d[j + 2]! * a + 128;
    out[i + 2] = ((t >> 8) + t) >> 8;
    out[i + 3] = a;
  }
}

/** PIL's RGBa → RGBA: colour · 255 / alpha, truncated and clipped; alpha 0 and 255 keep the colour. */
function pilUnpremultiply(d: Uint8Array): void {
  for (let i = 0; i < d.length; i += 4) {
    const a = d[i + 3]!;
    if (a === 0 || a === 255) continue;
    for (let ch = 0; ch < 3; ch++) d[i + ch] = Math.min(255, Math.trunc((255 * d[i + ch]!) / a));
  }
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

/**
 * Resizes a mask plane (floats, no clamping: as torch leaves them). Lanczos
 * goes through bytes, as the reference's PIL path does. With `into` (ow × oh
 * floats, all +0), nearest and separable resizes write their samples there
 * (the result's data is then `into`): a latent's planes go straight into its
 * tensor, without a plane-sized allocation each.
 */
export function resizePlane(p: MaskPlane, ow: number, oh: number, method: UpscaleMethod, crop: 'disabled' | 'center' = 'disabled', checkInterrupt: () => void = noop, into?: Float32Array): MaskPlane {
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
  if (method === 'nearest-exact') return new MaskPlane(ow, oh, nearestPlane(p.data, p.width, ow, oh, makeTaps(p.width, ow, method).idx, makeTaps(p.height, oh, method).idx, checkInterrupt, true, into));
  return new MaskPlane(ow, oh, resamplePlane(p.data, p.width, p.height, ow, oh, makeTaps(p.width, ow, method), makeTaps(p.height, oh, method), checkInterrupt, true, into));
}

/**
 * resizePlane over `count` planes of w × h (one after another in `data`, as
 * a latent's) into `out` (count planes of ow × oh, all +0), with one set of
 * taps for all of them. A centre crop moves the taps instead of copying the
 * planes; lanczos (not a latent method) goes plane by plane through resizePlane.
 */
export function resizePlanes(data: Float32Array, count: number, w: number, h: number, ow: number, oh: number, method: UpscaleMethod, crop: 'disabled' | 'center', checkInterrupt: () => void, out: Float32Array): void {
  checkSize(ow, oh);
  const r = crop === 'center' ? centreCrop(w, h, ow, oh) : { x: 0, y: 0, w, h };
  if (method === 'lanczos' || (r.w === ow && r.h === oh)) {
    for (let p = 0; p < count; p++) {
      checkInterrupt();
      const plane = new MaskPlane(w, h, data.subarray(p * w * h, (p + 1) * w * h));
      out.set(resizePlane(plane, ow, oh, method, crop, checkInterrupt).data, p * ow * oh);
    }
    return;
  }
  if (method === 'nearest-exact') {
    const xs = shifted(makeTaps(r.w, ow, method), r.x).idx;
    const ys = shifted(makeTaps(r.h, oh, method), r.y).idx;
    nearestPlanes(data, count, w, h, ow, oh, xs, ys, checkInterrupt, true, out);
    return;
  }
  resamplePlanes(data, count, w, h, ow, oh, shifted(makeTaps(r.w, ow, method), r.x), shifted(makeTaps(r.h, oh, method), r.y), checkInterrupt, true, out);
}

/** Taps read `by` samples further on (a crop's offset). */
function shifted(t: Taps, by: number): Taps {
  if (by === 0) return t;
  const idx = new Int32Array(t.idx.length);
  for (let i = 0; i < idx.length; i++) idx[i] = t.idx[i]! + by;
  return { k: t.k, idx, w: t.w };
}
