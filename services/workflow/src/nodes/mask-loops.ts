import { simdKernels, type SimdKernels } from './simd-kernels.ts';

/**
 * The per-sample loops of the mask nodes (ImageColorToMask, InvertMask,
 * MaskComposite, JoinImageWithAlpha, SplitImageWithAlpha, ImageToMask,
 * LoadImageMask, ThresholdMask, FeatherMask, ImageCompositeMasked's masked
 * blend): in WebAssembly
 * SIMD where it runs (simd-kernels.ts), a chunk of samples at a time copied
 * through the kernels' memory, else in JavaScript. Both give the same bits:
 * typed-array loops here run at a few nanoseconds a sample, several times
 * the reference's vectorised torch, and the chunks' copies are memcpy.
 *
 * Every function returns new arrays; inputs are only read. `simd` false
 * takes the JavaScript loops (the tests compare both).
 */

/** Samples (pixels) a chunk: 64 KiB of float32, so that a chunk's regions stay in cache. */
const CHUNK = 16384;
/** Bytes of one region of the kernels' memory: a chunk of float32 (or of 4-byte pixels) and the kernels' overrun. */
const REGION = CHUNK * 4 + 64;

/** The kernels with (at least) 4 regions of memory. */
function kernels(): SimdKernels | undefined {
  const k = simdKernels();
  k?.reserve(4 * REGION);
  return k;
}

/**
 * A plane of n float32 samples whose every sample the caller writes: its
 * memory is not zeroed first (a 1024² plane reused from freed memory is
 * 4 MiB of memset otherwise; fresh pages come zeroed from the kernel anyway).
 */
function unfilled(n: number): Float32Array {
  return new Float32Array(Buffer.allocUnsafeSlow(n * 4).buffer, 0, n);
}

/** A plain Uint8Array over a Buffer's bytes (Buffers made by sharp and by JavaScript have different hidden classes). */
function bytesOf(b: Uint8Array): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/** ImageColorToMask: 1 where a pixel's R, G, B bytes are those of `color` (0xRRGGBB), else 0. */
export function colorMask(pixels: Uint8Array, n: number, channels: 3 | 4, color: number, simd = true): Float32Array {
  // A colour outside 0..0xffffff (a pack's call; the input's range keeps prompts from it) matches no pixel.
  if (!Number.isInteger(color) || color < 0 || color > 0xffffff) return new Float32Array(n);
  const r = (color >> 16) & 255;
  const g = (color >> 8) & 255;
  const b = color & 255;
  const d = bytesOf(pixels);
  const k = simd ? kernels() : undefined;
  const out = k ? unfilled(n) : new Float32Array(n);
  if (k) {
    const key = r | (g << 8) | (b << 16);
    for (let s = 0; s < n; s += CHUNK) {
      const m = Math.min(CHUNK, n - s);
      k.u8.set(d.subarray(s * channels, (s + m) * channels), 0);
      if (channels === 3) k.colorMask3(0, m, key, REGION);
      else k.colorMask4(0, m, key, REGION);
      out.set(k.f32.subarray(REGION / 4, REGION / 4 + m), s);
    }
    return out;
  }
  for (let i = 0, j = 0; i < n; i++, j += channels) out[i] = d[j] === r && d[j + 1] === g && d[j + 2] === b ? 1 : 0;
  return out;
}

/** InvertMask: 1 − v for each sample. */
export function invertSamples(d: Float32Array, simd = true): Float32Array {
  const n = d.length;
  const k = simd ? kernels() : undefined;
  const out = k ? unfilled(n) : new Float32Array(n);
  if (k) {
    for (let s = 0; s < n; s += CHUNK) {
      const m = Math.min(CHUNK, n - s);
      k.f32.set(d.subarray(s, s + m), 0);
      k.invert(0, m, 0);
      out.set(k.f32.subarray(0, m), s);
    }
    return out;
  }
  for (let i = 0; i < n; i++) out[i] = 1 - d[i]!;
  return out;
}

/** torch.round(): halves go to the even neighbour, so 0.5 rounds to 0. */
function roundsToTrue(v: number): boolean {
  const r = Math.round(v);
  return (Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r) !== 0;
}

/** out[i] = src[i] clamped to 0..1 (NaN kept), for i in [from, to). */
function clampSamples(src: Float32Array, out: Float32Array, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    const v = src[i]!;
    out[i] = v > 1 ? 1 : v < 0 ? 0 : v;
  }
}

/**
 * MaskComposite on one plane: `dst` (dw × dh) with `src` (width sw) placed at
 * (x, y) combined by `op` over the rectangle up to (right, bottom), and every
 * sample clamped to 0..1. The sums, differences and products are rounded to
 * float32 before they are clamped, as the reference's tensors (a product too
 * small for float32 becomes ±0, and −0 is not clamped): float32 SIMD gives
 * those roundings, as float64 carries more than twice float32's precision.
 */
export function compositeSamples(dst: Float32Array, src: Float32Array, dw: number, dh: number, sw: number, x: number, y: number, right: number, bottom: number, op: string, simd = true): Float32Array {
  const k = simd ? kernels() : undefined;
  // Every row is written below (clamped, or combined in part).
  const o = k ? unfilled(dw * dh) : new Float32Array(dw * dh);
  if (k) {
    // Any other operation is xor, as in the JavaScript loops below.
    const combine = op === 'add' ? k.addClamp : op === 'subtract' ? k.subClamp : op === 'multiply' ? k.mulClamp : op === 'and' ? k.andMask : op === 'or' ? k.orMask : k.xorMask;
    // Regions: the destination's rows at A, the source's row at B, the output rows at C (byte addresses).
    const A = 0;
    const B = REGION;
    const C = 2 * REGION;
    const rows = Math.max(1, Math.floor(CHUNK / dw));
    // A chunk's source rows fit in B whole when the source is no wider than the destination: copied in one piece.
    const block = sw <= dw;
    const f32 = k.f32;
    for (let r0 = 0; r0 < dh; r0 += rows) {
      const r1 = Math.min(dh, r0 + rows);
      f32.set(dst.subarray(r0 * dw, r1 * dw), A / 4);
      const ya = Math.max(r0, y);
      const yb = Math.min(r1, bottom);
      if (block && right > x && yb > ya) f32.set(src.subarray((ya - y) * sw, (yb - y) * sw), B / 4);
      if (x === 0 && right === dw && sw === dw) {
        // Whole rows (the common case): the chunk's rows above, inside and below the source in one call each, in order.
        const top = Math.min(Math.max(ya, r0), r1);
        const end = Math.max(top, yb);
        if (top > r0) k.clampMask(A, (top - r0) * dw, C);
        if (end > top) combine(A + (top - r0) * dw * 4, B, (end - top) * dw, C + (top - r0) * dw * 4);
        if (r1 > end) k.clampMask(A + (end - r0) * dw * 4, (r1 - end) * dw, C + (end - r0) * dw * 4);
        o.set(f32.subarray(C / 4, C / 4 + (r1 - r0) * dw), r0 * dw);
        continue;
      }
      for (let yy = r0; yy < r1; yy++) {
        const a = A + (yy - r0) * dw * 4;
        const c = C + (yy - r0) * dw * 4;
        if (yy < y || yy >= bottom || right <= x) {
          k.clampMask(a, dw, c);
          continue;
        }
        // The source row's first right − x samples (x ≥ 0 here).
        let b = B + (yy - ya) * sw * 4;
        if (!block) {
          const srow = (yy - y) * sw;
          f32.set(src.subarray(srow, srow + right - x), B / 4);
          b = B;
        }
        // In this order: each call's overrun (up to 3 floats) is overwritten by the next call's samples.
        k.clampMask(a, x, c);
        combine(a + x * 4, b, right - x, c + x * 4);
        k.clampMask(a + right * 4, dw - right, c + right * 4);
      }
      o.set(f32.subarray(C / 4, C / 4 + (r1 - r0) * dw), r0 * dw);
    }
    return o;
  }
  for (let yy = 0; yy < dh; yy++) {
    const row = yy * dw;
    if (yy < y || yy >= bottom || right <= x) {
      clampSamples(dst, o, row, row + dw);
      continue;
    }
    clampSamples(dst, o, row, row + x);
    const srow = (yy - y) * sw - x;
    // One loop per operation: the operation is chosen once per row, not compared per pixel.
    if (op === 'multiply') {
      for (let xx = x; xx < right; xx++) {
        const v = Math.fround(dst[row + xx]! * src[srow + xx]!);
        o[row + xx] = v > 1 ? 1 : v < 0 ? 0 : v;
      }
    } else if (op === 'add') {
      for (let xx = x; xx < right; xx++) {
        const v = Math.fround(dst[row + xx]! + src[srow + xx]!);
        o[row + xx] = v > 1 ? 1 : v < 0 ? 0 : v;
      }
    } else if (op === 'subtract') {
      for (let xx = x; xx < right; xx++) {
        const v = Math.fround(dst[row + xx]! - src[srow + xx]!);
        o[row + xx] = v > 1 ? 1 : v < 0 ? 0 : v;
      }
    } else if (op === 'and') for (let xx = x; xx < right; xx++) o[row + xx] = roundsToTrue(dst[row + xx]!) && roundsToTrue(src[srow + xx]!) ? 1 : 0;
    else if (op === 'or') for (let xx = x; xx < right; xx++) o[row + xx] = roundsToTrue(dst[row + xx]!) || roundsToTrue(src[srow + xx]!) ? 1 : 0;
    else for (let xx = x; xx < right; xx++) o[row + xx] = roundsToTrue(dst[row + xx]!) !== roundsToTrue(src[srow + xx]!) ? 1 : 0;
    clampSamples(dst, o, row + right, row + dw);
  }
  return o;
}

/** JoinImageWithAlpha on one frame: its RGB bytes (of `channels` a pixel) and toByte(1 − alpha) as a fourth byte. */
export function joinAlphaBytes(pixels: Uint8Array, channels: 3 | 4, alpha: Float32Array, n: number, simd = true): Buffer {
  const data = Buffer.alloc(n * 4);
  const o = bytesOf(data);
  const src = bytesOf(pixels);
  const k = simd && channels === 3 ? kernels() : undefined;
  if (k) {
    for (let s = 0; s < n; s += CHUNK) {
      const m = Math.min(CHUNK, n - s);
      k.u8.set(src.subarray(s * 3, (s + m) * 3), 0);
      k.f32.set(alpha.subarray(s, s + m), REGION / 4);
      k.joinAlpha3(0, REGION, m, 2 * REGION);
      o.set(k.u8.subarray(2 * REGION, 2 * REGION + 4 * m), 4 * s);
    }
    return data;
  }
  for (let i = 0, j = 0, q = 0; i < n; i++, j += channels, q += 4) {
    o[q] = src[j]!;
    o[q + 1] = src[j + 1]!;
    o[q + 2] = src[j + 2]!;
    // image-types' toByte(1 − a), inline.
    const v = 1 - alpha[i]!;
    o[q + 3] = v <= 0 ? 0 : v >= 1 ? 255 : Math.round(v * 255);
  }
  return data;
}

/** SplitImageWithAlpha on one RGBA frame: its RGB bytes, and 1 − alpha / 255 as a mask plane. */
export function splitAlphaBytes(pixels: Uint8Array, n: number, simd = true): [Buffer, Float32Array] {
  const data = Buffer.alloc(n * 3);
  const o = bytesOf(data);
  const mask = new Float32Array(n);
  const src = bytesOf(pixels);
  const k = simd ? kernels() : undefined;
  if (k) {
    for (let s = 0; s < n; s += CHUNK) {
      const m = Math.min(CHUNK, n - s);
      k.u8.set(src.subarray(s * 4, (s + m) * 4), 0);
      k.splitAlpha4(0, m, REGION, 2 * REGION);
      o.set(k.u8.subarray(REGION, REGION + 3 * m), 3 * s);
      mask.set(k.f32.subarray(REGION / 2, REGION / 2 + m), s);
    }
    return [data, mask];
  }
  for (let i = 0, j = 0, q = 0; i < n; i++, j += 4, q += 3) {
    o[q] = src[j]!;
    o[q + 1] = src[j + 1]!;
    o[q + 2] = src[j + 2]!;
    mask[i] = 1 - src[j + 3]! / 255;
  }
  return [data, mask];
}

/** byte / 255 and 1 − byte / 255, each computed in double and rounded once to float32, by byte. */
const UNITS = Float32Array.from({ length: 256 }, (_, v) => v / 255);
const INVERTED_UNITS = Float32Array.from({ length: 256 }, (_, v) => 1 - v / 255);

/**
 * ImageToMask and LoadImageMask: channel `ch` of n pixels of `channels`
 * bytes as byte / 255 (`inverted`: 1 − byte / 255, LoadImageMask's alpha),
 * each the double quotient rounded to float32.
 */
export function channelUnits(pixels: Uint8Array, n: number, channels: 1 | 3 | 4, ch: number, inverted = false, simd = true): Float32Array {
  const d = bytesOf(pixels);
  const k = simd ? kernels() : undefined;
  const out = k ? unfilled(n) : new Float32Array(n);
  if (k) {
    // unitBytes' swizzle pattern (in the third region): the channel's byte of each of 4 pixels to the low byte of an int32 lane.
    const sel = 2 * REGION;
    for (let p = 0; p < 4; p++) k.u8.set([p * channels + ch, 0x80, 0x80, 0x80], sel + 4 * p);
    for (let s = 0; s < n; s += CHUNK) {
      const m = Math.min(CHUNK, n - s);
      k.u8.set(d.subarray(s * channels, (s + m) * channels), 0);
      k.unitBytes(0, m, 4 * channels, sel, inverted ? 255 : 0, REGION);
      out.set(k.f32.subarray(REGION / 4, REGION / 4 + m), s);
    }
    return out;
  }
  const table = inverted ? INVERTED_UNITS : UNITS;
  for (let i = 0, j = ch; i < n; i++, j += channels) out[i] = table[d[j]!]!;
  return out;
}

/**
 * The float32 t for which, for every float32 d, d > t exactly where
 * d > value (a double): value itself when float32 holds it, else the
 * float32 below it (none lies between them). NaN stays NaN (never greater).
 */
export function float32Threshold(value: number): number {
  const f = Math.fround(value);
  if (!(f > value)) return f;
  const bits = new Float32Array([f]);
  const u = new Int32Array(bits.buffer);
  // The float32 just below f: one step down in magnitude for a positive f, up for a negative one; below ±0, −2^−149.
  if (f === 0) u[0] = 0x80000001 | 0;
  else u[0]! += f > 0 ? -1 : 1;
  return bits[0]!;
}

/** ThresholdMask: 1 where a sample is above `value`, else 0 (NaN: 0). */
export function thresholdSamples(d: Float32Array, value: number, simd = true): Float32Array {
  const n = d.length;
  const k = simd ? kernels() : undefined;
  const out = k ? unfilled(n) : new Float32Array(n);
  if (k) {
    const t = float32Threshold(value);
    for (let s = 0; s < n; s += CHUNK) {
      const m = Math.min(CHUNK, n - s);
      k.f32.set(d.subarray(s, s + m), 0);
      k.thresholdMask(0, m, t, REGION);
      out.set(k.f32.subarray(REGION / 4, REGION / 4 + m), s);
    }
    return out;
  }
  for (let i = 0; i < n; i++) out[i] = d[i]! > value ? 1 : 0;
  return out;
}

/**
 * FeatherMask on one w × h plane (widths already at most the plane's
 * sides): the first `left` columns scaled by (x + 1) / left, the last
 * `right` by (distance to the right edge + 1) / right, then the first `top`
 * and last `bottom` rows likewise, each step `v *= rate` on float32 (the
 * double product rounded to float32), so a corner sample is scaled by its
 * column's rates and then its row's. Row by row (the steps of one sample
 * keep their order), so memory is read once in order.
 */
export function featherSamples(src: Float32Array, w: number, h: number, left: number, top: number, right: number, bottom: number, simd = true): Float32Array {
  // As many columns as the loops x < left and x < right of the definition run (a pack may pass fractions).
  const L = Math.max(0, Math.ceil(left)) || 0;
  const R = Math.max(0, Math.ceil(right)) || 0;
  const lr = Float64Array.from({ length: L }, (_, x) => (x + 1) / left);
  // Column w − R + j: its distance to the right edge is R − 1 − j.
  const rr = Float64Array.from({ length: R }, (_, j) => (R - j) / right);
  const k = simd ? kernels() : undefined;
  if (k) return featherSimd(k, src, w, h, lr, rr, top, bottom);
  const o = src.slice();
  const r0 = w - R;
  for (let y = 0; y < h; y++) {
    const row = y * w;
    for (let x = 0; x < L; x++) o[row + x]! *= lr[x]!;
    for (let j = 0; j < R; j++) o[row + r0 + j]! *= rr[j]!;
    if (y < top) {
      const rate = (y + 1) / top;
      for (let x = row; x < row + w; x++) o[x]! *= rate;
    }
    if (h - 1 - y < bottom) {
      const rate = (h - y) / bottom;
      for (let x = row; x < row + w; x++) o[x]! *= rate;
    }
  }
  return o;
}

/**
 * featherSamples with scale64: rows copied through the kernels' memory a
 * chunk at a time (one row at a time where a row is longer than a chunk),
 * the column rates (float64) after them.
 */
function featherSimd(k: SimdKernels, src: Float32Array, w: number, h: number, lr: Float64Array, rr: Float64Array, top: number, bottom: number): Float32Array {
  // Every row is copied out below.
  const o = unfilled(w * h);
  const rowsAt = 0;
  const rowBytes = w * 4;
  const rows = Math.max(1, Math.floor(CHUNK / w));
  const lrAt = (rowsAt + rows * rowBytes + 64 + 63) & ~63;
  const rrAt = lrAt + ((lr.length * 8 + 63) & ~63);
  const rateAt = rrAt + ((rr.length * 8 + 63) & ~63);
  k.reserve(rateAt + 64);
  const f64 = new Float64Array(k.f32.buffer);
  f64.set(lr, lrAt / 8);
  f64.set(rr, rrAt / 8);
  const left = lr.length;
  const right = rr.length;
  for (let y0 = 0; y0 < h; y0 += rows) {
    const y1 = Math.min(h, y0 + rows);
    k.f32.set(src.subarray(y0 * w, y1 * w), rowsAt / 4);
    for (let y = y0; y < y1; y++) {
      const p = rowsAt + (y - y0) * rowBytes;
      if (left > 0) k.scale64(p, lrAt, 8, left);
      if (right > 0) k.scale64(p + (w - right) * 4, rrAt, 8, right);
      if (y < top) {
        f64.fill((y + 1) / top, rateAt / 8, rateAt / 8 + 4);
        k.scale64(p, rateAt, 0, w);
      }
      if (h - 1 - y < bottom) {
        f64.fill((h - y) / bottom, rateAt / 8, rateAt / 8 + 4);
        k.scale64(p, rateAt, 0, w);
      }
    }
    o.set(k.f32.subarray(rowsAt / 4, rowsAt / 4 + (y1 - y0) * w), y0 * w);
  }
  return o;
}

/**
 * ImageCompositeMasked's blend: pixels of `c` bytes, each channel
 * a·s + (1 − a)·d in double (a the mask sample as float32, s and d the
 * source and destination bytes) rounded half up and clamped to a byte, over
 * the rectangle (x0, y0)–(x1, y1) of `dst` (width dw), written in place;
 * the source (width sw) and the mask (its size) placed at (x, y). In SIMD
 * the rectangle's rows are gathered into the kernels' memory a chunk of
 * pixels at a time (a row longer than a chunk in pieces).
 */
export function blendMasked(src: Uint8Array, sw: number, dst: Uint8Array, dw: number, c: number, x: number, y: number, x0: number, y0: number, x1: number, y1: number, mask: Float32Array, simd = true): void {
  const k = simd && (c === 3 || c === 4) ? kernels() : undefined;
  if (k) return blendSimd(k, bytesOf(src), sw, bytesOf(dst), dw, c, x, y, x0, y0, x1, y1, mask);
  const n = (x1 - x0) * c;
  for (let yy = y0; yy < y1; yy++) {
    const di = (yy * dw + x0) * c;
    const si = ((yy - y) * sw + (x0 - x)) * c;
    const mi = (yy - y) * sw + (x0 - x);
    if (c === 3) {
      for (let i = 0, m = mi; i < n; i += 3, m++) {
        const a = mask[m]!;
        const ia = 1 - a;
        let v = a * src[si + i]! + ia * dst[di + i]!;
        dst[di + i] = v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v);
        v = a * src[si + i + 1]! + ia * dst[di + i + 1]!;
        dst[di + i + 1] = v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v);
        v = a * src[si + i + 2]! + ia * dst[di + i + 2]!;
        dst[di + i + 2] = v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v);
      }
    } else {
      for (let i = 0, m = mi; i < n; i += c, m++) {
        const a = mask[m]!;
        const ia = 1 - a;
        for (let ch = 0; ch < c; ch++) {
          const v = a * src[si + i + ch]! + ia * dst[di + i + ch]!;
          dst[di + i + ch] = v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v);
        }
      }
    }
  }
}

/** blendSimd's pieces of rows gathered in a chunk: their row, first column and pixels. */
const rowsOf = new Int32Array(CHUNK);
const colsOf = new Int32Array(CHUNK);
const lens = new Int32Array(CHUNK);

function blendSimd(k: SimdKernels, src: Uint8Array, sw: number, dst: Uint8Array, dw: number, c: number, x: number, y: number, x0: number, y0: number, x1: number, y1: number, mask: Float32Array): void {
  // Regions: source bytes, destination bytes, mask floats, output bytes.
  const S = 0;
  const D = REGION;
  const M = 2 * REGION;
  const O = 3 * REGION;
  let pieces = 0;
  let filled = 0;
  const flush = () => {
    if (c === 3) k.blendPx3(S, D, M, filled, O);
    else k.blendPx4(S, D, M, filled, O);
    for (let p = 0, at = 0; p < pieces; p++) {
      const len = lens[p]!;
      const di = (rowsOf[p]! * dw + colsOf[p]!) * c;
      dst.set(k.u8.subarray(O + at * c, O + (at + len) * c), di);
      at += len;
    }
    pieces = 0;
    filled = 0;
  };
  for (let yy = y0; yy < y1; yy++) {
    for (let xa = x0; xa < x1; ) {
      const len = Math.min(x1 - xa, CHUNK - filled);
      const di = (yy * dw + xa) * c;
      const mi = (yy - y) * sw + (xa - x);
      const si = mi * c;
      k.u8.set(src.subarray(si, si + len * c), S + filled * c);
      k.u8.set(dst.subarray(di, di + len * c), D + filled * c);
      k.f32.set(mask.subarray(mi, mi + len), M / 4 + filled);
      rowsOf[pieces] = yy;
      colsOf[pieces] = xa;
      lens[pieces] = len;
      pieces++;
      filled += len;
      xa += len;
      if (filled === CHUNK) flush();
    }
  }
  if (filled > 0) flush();
}
