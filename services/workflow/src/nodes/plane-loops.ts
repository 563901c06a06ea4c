import { regions, simdKernels, type SimdKernels } from './simd-kernels.ts';

/**
 * Resizes of float planes (masks, latents): separable resampling and
 * nearest-neighbour gathers, in WebAssembly SIMD where it runs
 * (simd-kernels.ts' planeH, planeV, gatherRows), a band of rows at a time
 * copied through the kernels' memory, else in JavaScript. Both give the same
 * bits: the SIMD passes compute each tap's float64 sum and float32 rounding
 * as the JavaScript does, lane by lane.
 *
 * Inputs are only read; `simd` false takes the JavaScript loops (the tests
 * compare both).
 */

/** Per output position: `k` source indices and weights (weight 0 pads shorter rows); made by resample.ts' makeTaps. */
export interface Taps {
  k: number;
  idx: Int32Array;
  w: Float32Array;
}

/** Floats of a chunk of rows (64 KiB), so that a chunk's regions stay in cache. */
const CHUNK = 16384;
/** The most floats of source rows a vertical chunk copies (a shrink's taps spread over many rows). */
const BAND = 4 * CHUNK;

const ceil4 = (n: number) => (n + 3) & ~3;

/** Output rows [y0, y1) and the source rows [lo, hi] their taps read. */
interface RowChunk {
  y0: number;
  y1: number;
  lo: number;
  hi: number;
}

/**
 * Splits oh output rows (each reading the source rows rowsOf(y) gives, as
 * [min, max]) into chunks of at most `rows` rows whose source band holds at
 * most `band` rows (a single row's band may hold more).
 */
function rowChunks(oh: number, rows: number, band: number, rowsOf: (y: number) => [number, number]): RowChunk[] {
  const chunks: RowChunk[] = [];
  for (let y = 0; y < oh; ) {
    let [lo, hi] = rowsOf(y);
    let y1 = y + 1;
    while (y1 < oh && y1 - y < rows) {
      const [a, b] = rowsOf(y1);
      const nlo = Math.min(lo, a);
      const nhi = Math.max(hi, b);
      if (nhi - nlo + 1 > band) break;
      lo = nlo;
      hi = nhi;
      y1++;
    }
    chunks.push({ y0: y, y1, lo, hi });
    y = y1;
  }
  return chunks;
}

/**
 * Separable resampling of one float plane (w × h → ow × oh) with the taps
 * tx, ty: a horizontal pass into float32 rows, then a vertical one; each
 * output is its taps' products added in tap order to a float32 accumulator
 * from 0 (the sum in float64, rounded to float32 after each tap), zero
 * weights skipped, into `out` (ow × oh, all +0: a new array unless given).
 * `checkInterrupt` runs every 256 rows of each pass.
 * resample.ts' resampleSamples, operation for operation, in a function that
 * only ever sees Float32Arrays (resampleSamples also runs on bytes, and its
 * polymorphic element loads cost several times more).
 */
export function resamplePlane(src: Float32Array, w: number, h: number, ow: number, oh: number, tx: Taps, ty: Taps, checkInterrupt: () => void, simd = true, out: Float32Array = new Float32Array(oh * ow)): Float32Array {
  const k = simd && w > 0 && h > 0 && ow > 0 && oh > 0 ? simdKernels() : undefined;
  if (k) return resamplePlaneSimd(k, src, w, h, ow, oh, tx, ty, checkInterrupt, out);
  const tmp = new Float32Array(h * ow);
  const kx = tx.k;
  const xw = tx.w;
  const xi = tx.idx;
  for (let y = 0; y < h; y++) {
    const rowIn = y * w;
    const rowOut = y * ow;
    for (let x = 0; x < ow; x++) {
      let acc = 0;
      for (let t = x * kx, end = t + kx; t < end; t++) {
        const wt = xw[t]!;
        if (wt !== 0) acc = Math.fround(acc + wt * src[rowIn + xi[t]!]!);
      }
      tmp[rowOut + x] = acc;
    }
    if ((y & 255) === 255) checkInterrupt();
  }
  const ky = ty.k;
  for (let y = 0; y < oh; y++) {
    const o = y * ow;
    for (let t = y * ky, end = t + ky; t < end; t++) {
      const wt = ty.w[t]!;
      if (wt === 0) continue;
      const s = ty.idx[t]! * ow;
      for (let i = 0; i < ow; i++) out[o + i] = Math.fround(out[o + i]! + wt * tmp[s + i]!);
    }
    if ((y & 255) === 255) checkInterrupt();
  }
  return out;
}

/** Floats of a plane (source, horizontal pass and output together) up to which a resampling runs in one go in the kernels' memory. */
const WHOLE = 1 << 20;

function resamplePlaneSimd(k: SimdKernels, src: Float32Array, w: number, h: number, ow: number, oh: number, tx: Taps, ty: Taps, checkInterrupt: () => void, out: Float32Array): Float32Array {
  const kx = tx.k;
  const ky = ty.k;
  const owPad = ceil4(ow);
  const whole = w * h + h * ow + oh * ow <= WHOLE;
  // Horizontal pass: tap tables tap-major (a vector of 4 outputs' weights loads at once), rows in chunks (all at once for a small plane).
  const rows = whole ? h : Math.max(1, Math.floor(CHUNK / Math.max(w, ow)));
  const [XO, XW, IN, OUT] = regions(k, [4 * kx * owPad, 4 * kx * owPad, 4 * rows * w, 4 * rows * ow]) as [number, number, number, number];
  let i32 = k.i32;
  let f32 = k.f32;
  i32.fill(0, XO / 4, XO / 4 + kx * owPad);
  f32.fill(0, XW / 4, XW / 4 + kx * owPad);
  for (let x = 0; x < ow; x++) {
    for (let t = 0; t < kx; t++) {
      i32[XO / 4 + t * owPad + x] = tx.idx[x * kx + t]! * 4;
      f32[XW / 4 + t * owPad + x] = tx.w[x * kx + t]!;
    }
  }
  if (whole) {
    // The horizontal pass's rows stay in the kernels' memory for the vertical one.
    f32.set(src, IN / 4);
    k.planeH(IN, 4 * w, h, XO, XW, kx, ow, owPad, OUT);
    checkInterrupt();
    const [YO, YW, D] = regions(k, [OUT + 4 * h * ow + 64, 4 * ky * oh, 4 * ky * oh, 4 * oh * ow]).slice(1) as [number, number, number];
    i32 = k.i32;
    f32 = k.f32;
    for (let t = 0; t < ky * oh; t++) {
      i32[YO / 4 + t] = ty.idx[t]! * ow * 4;
      f32[YW / 4 + t] = ty.w[t]!;
    }
    k.planeV(OUT, oh, YO, YW, ky, ow, D);
    out.set(f32.subarray(D / 4, D / 4 + oh * ow));
    return out;
  }
  const tmp = new Float32Array(h * ow);
  for (let y0 = 0, next = 256; y0 < h; y0 += rows) {
    const n = Math.min(rows, h - y0);
    f32.set(src.subarray(y0 * w, (y0 + n) * w), IN / 4);
    k.planeH(IN, 4 * w, n, XO, XW, kx, ow, owPad, OUT);
    tmp.set(f32.subarray(OUT / 4, OUT / 4 + n * ow), y0 * ow);
    if (y0 + n >= next) {
      checkInterrupt();
      next += 256;
    }
  }
  // Vertical pass: chunks of output rows, each with the band of tmp rows its taps read.
  const rowsOf = (y: number): [number, number] => {
    let lo = Infinity;
    let hi = -Infinity;
    for (let t = y * ky; t < (y + 1) * ky; t++) {
      lo = Math.min(lo, ty.idx[t]!);
      hi = Math.max(hi, ty.idx[t]!);
    }
    return [lo, hi];
  };
  const chunks = rowChunks(oh, Math.max(1, Math.floor(CHUNK / ow)), Math.max(1, Math.floor(BAND / ow)), rowsOf);
  let maxRows = 1;
  let maxBand = 1;
  for (const c of chunks) {
    maxRows = Math.max(maxRows, c.y1 - c.y0);
    maxBand = Math.max(maxBand, c.hi - c.lo + 1);
  }
  const [YO, YW, B, D] = regions(k, [4 * ky * maxRows, 4 * ky * maxRows, 4 * maxBand * ow, 4 * maxRows * ow]) as [number, number, number, number];
  i32 = k.i32;
  f32 = k.f32;
  let next = 256;
  for (const { y0, y1, lo, hi } of chunks) {
    for (let t = y0 * ky, j = 0; t < y1 * ky; t++, j++) {
      i32[YO / 4 + j] = (ty.idx[t]! - lo) * ow * 4;
      f32[YW / 4 + j] = ty.w[t]!;
    }
    f32.set(tmp.subarray(lo * ow, (hi + 1) * ow), B / 4);
    k.planeV(B, y1 - y0, YO, YW, ky, ow, D);
    out.set(f32.subarray(D / 4, D / 4 + (y1 - y0) * ow), y0 * ow);
    if (y1 >= next) {
      checkInterrupt();
      next = y1 + 256;
    }
  }
  return out;
}

/**
 * nearest-exact on a float plane by gathering: output (x, y) is the source
 * sample at (xs[x], ys[y]) plus 0 (what a resampling's one tap of weight 1
 * gives: 0 + 1 · v, so −0 becomes +0). ys is non-decreasing. Into `out`
 * (ow × oh; a new array unless given).
 */
export function nearestPlane(data: Float32Array, w: number, ow: number, oh: number, xs: Int32Array, ys: Int32Array, checkInterrupt: () => void, simd = true, out: Float32Array = new Float32Array(ow * oh)): Float32Array {
  const k = simd && ow > 0 && oh > 0 ? simdKernels() : undefined;
  if (k) {
    const chunks = rowChunks(oh, Math.max(1, Math.floor(CHUNK / ow)), Math.max(1, Math.floor(BAND / w)), (y) => [ys[y]!, ys[y]!]);
    let maxRows = 1;
    let maxBand = 1;
    for (const c of chunks) {
      maxRows = Math.max(maxRows, c.y1 - c.y0);
      maxBand = Math.max(maxBand, c.hi - c.lo + 1);
    }
    const [XO, RO, B, D] = regions(k, [4 * (ow + 4), 4 * maxRows, 4 * maxBand * w, 4 * maxRows * ow]) as [number, number, number, number];
    const { i32, f32 } = k;
    for (let x = 0; x < ow; x++) i32[XO / 4 + x] = xs[x]! * 4;
    i32.fill(0, XO / 4 + ow, XO / 4 + ow + 4);
    let next = 256;
    for (const { y0, y1, lo, hi } of chunks) {
      for (let y = y0; y < y1; y++) i32[RO / 4 + y - y0] = (ys[y]! - lo) * w * 4;
      f32.set(data.subarray(lo * w, (hi + 1) * w), B / 4);
      k.gatherRows(B, RO, y1 - y0, XO, ow, D);
      out.set(f32.subarray(D / 4, D / 4 + (y1 - y0) * ow), y0 * ow);
      if (y1 >= next) {
        checkInterrupt();
        next = y1 + 256;
      }
    }
    return out;
  }
  for (let y = 0; y < oh; y++) {
    const o = y * ow;
    if (y > 0 && ys[y] === ys[y - 1]) out.copyWithin(o, o - ow, o);
    else {
      const row = ys[y]! * w;
      for (let x = 0; x < ow; x++) out[o + x] = data[row + xs[x]!]! + 0;
    }
    if ((y & 255) === 255) checkInterrupt();
  }
  return out;
}
