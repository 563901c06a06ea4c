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
 * Separable resampling of `count` float planes (w × h each, one after another
 * in src) with the same taps tx, ty: per plane a horizontal pass into float32
 * rows, then a vertical one; each output is its taps' products added in tap
 * order to a float32 accumulator from 0 (the sum in float64, rounded to
 * float32 after each tap), zero weights skipped, into `out` (count planes of
 * ow × oh, all +0: a new array unless given). `checkInterrupt` runs between
 * planes and every 256 rows of a large plane's passes.
 * resample.ts' resampleSamples, operation for operation, in functions that
 * only ever see Float32Arrays (resampleSamples also runs on bytes, and its
 * polymorphic element loads cost several times more).
 *
 * The tap tables are laid out once for all the planes of a tensor, and the
 * JavaScript around the kernels is split into small functions: a latent's
 * planes used to cost a table each, and one large driver function that
 * took V8 25 ms to optimise in the first prompts of every process.
 */
export function resamplePlanes(src: Float32Array, count: number, w: number, h: number, ow: number, oh: number, tx: Taps, ty: Taps, checkInterrupt: () => void, simd = true, out: Float32Array = new Float32Array(count * oh * ow)): Float32Array {
  if (count === 0 || ow === 0 || oh === 0) return out;
  const k = simd && w > 0 && h > 0 ? simdKernels() : undefined;
  if (k && w * h + h * ow + oh * ow <= WHOLE) return resampleWhole(k, src, count, w, h, ow, oh, tx, ty, checkInterrupt, out);
  for (let p = 0; p < count; p++) {
    const s = src.subarray(p * w * h, (p + 1) * w * h);
    const o = out.subarray(p * oh * ow, (p + 1) * oh * ow);
    if (k) resampleChunked(k, s, w, h, ow, oh, tx, ty, checkInterrupt, o);
    else resampleJs(s, w, h, ow, oh, tx, ty, checkInterrupt, o);
    checkInterrupt();
  }
  return out;
}

/** resamplePlanes of one plane. */
export function resamplePlane(src: Float32Array, w: number, h: number, ow: number, oh: number, tx: Taps, ty: Taps, checkInterrupt: () => void, simd = true, out: Float32Array = new Float32Array(oh * ow)): Float32Array {
  return resamplePlanes(src, 1, w, h, ow, oh, tx, ty, checkInterrupt, simd, out);
}

function resampleJs(src: Float32Array, w: number, h: number, ow: number, oh: number, tx: Taps, ty: Taps, checkInterrupt: () => void, out: Float32Array): void {
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
}

/** Floats of a plane (source, horizontal pass and output together) up to which a resampling runs in one go in the kernels' memory; several planes go together up to this many. */
const WHOLE = 1 << 20;

/**
 * The horizontal taps, tap-major (a vector of 4 outputs' weights loads at
 * once): offsets in bytes at XO, weights at XW, owPad entries per tap, the
 * lanes past ow offset 0 and weight 0.
 */
function layTapsH(k: SimdKernels, XO: number, XW: number, tx: Taps, ow: number, owPad: number): void {
  const kx = tx.k;
  const { i32, f32 } = k;
  i32.fill(0, XO / 4, XO / 4 + kx * owPad);
  f32.fill(0, XW / 4, XW / 4 + kx * owPad);
  for (let x = 0; x < ow; x++) {
    for (let t = 0; t < kx; t++) {
      i32[XO / 4 + t * owPad + x] = tx.idx[x * kx + t]! * 4;
      f32[XW / 4 + t * owPad + x] = tx.w[x * kx + t]!;
    }
  }
}

/** The vertical taps of output rows [y0, y1), row-major: byte offsets of rows of ow floats counted from row `lo` at YO, weights at YW. */
function layTapsV(k: SimdKernels, YO: number, YW: number, ty: Taps, y0: number, y1: number, lo: number, ow: number): void {
  const { i32, f32 } = k;
  for (let t = y0 * ty.k, j = 0; t < y1 * ty.k; t++, j++) {
    i32[YO / 4 + j] = (ty.idx[t]! - lo) * ow * 4;
    f32[YW / 4 + j] = ty.w[t]!;
  }
}

/** Planes small enough to sit whole in the kernels' memory: as many at once as fit in WHOLE, each pass one call a plane. */
function resampleWhole(k: SimdKernels, src: Float32Array, count: number, w: number, h: number, ow: number, oh: number, tx: Taps, ty: Taps, checkInterrupt: () => void, out: Float32Array): Float32Array {
  const owPad = ceil4(ow);
  const group = Math.max(1, Math.min(count, Math.floor(WHOLE / (w * h + h * ow + oh * ow))));
  const [XO, XW, YO, YW, IN, MID, D] = regions(k, [4 * tx.k * owPad, 4 * tx.k * owPad, 4 * ty.k * oh, 4 * ty.k * oh, 4 * group * w * h, 4 * group * h * ow, 4 * group * oh * ow]) as [number, number, number, number, number, number, number];
  layTapsH(k, XO, XW, tx, ow, owPad);
  layTapsV(k, YO, YW, ty, 0, oh, 0, ow);
  for (let p0 = 0; p0 < count; p0 += group) {
    const n = Math.min(group, count - p0);
    k.f32.set(src.subarray(p0 * w * h, (p0 + n) * w * h), IN / 4);
    // Rows are independent in the horizontal pass: the group's planes go as one run of rows.
    k.planeH(IN, 4 * w, n * h, XO, XW, tx.k, ow, owPad, MID);
    checkInterrupt();
    // In plane order: a plane's overrun past its last row lands where the next plane is written after it.
    for (let p = 0; p < n; p++) k.planeV(MID + 4 * p * h * ow, oh, YO, YW, ty.k, ow, D + 4 * p * oh * ow);
    out.set(k.f32.subarray(D / 4, D / 4 + n * oh * ow), p0 * oh * ow);
    checkInterrupt();
  }
  return out;
}

/** A large plane, in chunks of rows copied through the kernels' memory. */
function resampleChunked(k: SimdKernels, src: Float32Array, w: number, h: number, ow: number, oh: number, tx: Taps, ty: Taps, checkInterrupt: () => void, out: Float32Array): void {
  const owPad = ceil4(ow);
  const rows = Math.max(1, Math.floor(CHUNK / Math.max(w, ow)));
  const [XO, XW, IN, OUT] = regions(k, [4 * tx.k * owPad, 4 * tx.k * owPad, 4 * rows * w, 4 * rows * ow]) as [number, number, number, number];
  layTapsH(k, XO, XW, tx, ow, owPad);
  const tmp = new Float32Array(h * ow);
  for (let y0 = 0, next = 256; y0 < h; y0 += rows) {
    const n = Math.min(rows, h - y0);
    k.f32.set(src.subarray(y0 * w, (y0 + n) * w), IN / 4);
    k.planeH(IN, 4 * w, n, XO, XW, tx.k, ow, owPad, OUT);
    tmp.set(k.f32.subarray(OUT / 4, OUT / 4 + n * ow), y0 * ow);
    if (y0 + n >= next) {
      checkInterrupt();
      next += 256;
    }
  }
  verticalChunked(k, tmp, oh, ow, ty, checkInterrupt, out);
}

/** The vertical pass of a large plane: chunks of output rows, each with the band of tmp rows its taps read. */
function verticalChunked(k: SimdKernels, tmp: Float32Array, oh: number, ow: number, ty: Taps, checkInterrupt: () => void, out: Float32Array): void {
  const ky = ty.k;
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
  const { rows: maxRows, band: maxBand } = largest(chunks);
  const [YO, YW, B, D] = regions(k, [4 * ky * maxRows, 4 * ky * maxRows, 4 * maxBand * ow, 4 * maxRows * ow]) as [number, number, number, number];
  let next = 256;
  for (const { y0, y1, lo, hi } of chunks) {
    layTapsV(k, YO, YW, ty, y0, y1, lo, ow);
    k.f32.set(tmp.subarray(lo * ow, (hi + 1) * ow), B / 4);
    k.planeV(B, y1 - y0, YO, YW, ky, ow, D);
    out.set(k.f32.subarray(D / 4, D / 4 + (y1 - y0) * ow), y0 * ow);
    if (y1 >= next) {
      checkInterrupt();
      next = y1 + 256;
    }
  }
}

/** The most output rows and the widest band of any chunk. */
function largest(chunks: RowChunk[]): { rows: number; band: number } {
  let rows = 1;
  let band = 1;
  for (const c of chunks) {
    rows = Math.max(rows, c.y1 - c.y0);
    band = Math.max(band, c.hi - c.lo + 1);
  }
  return { rows, band };
}

/**
 * nearest-exact on `count` float planes (w × h each, one after another) by
 * gathering: output (x, y) of a plane is its source sample at (xs[x], ys[y])
 * plus 0 (what a resampling's one tap of weight 1 gives: 0 + 1 · v, so −0
 * becomes +0). ys is non-decreasing. Into `out` (count planes of ow × oh; a
 * new array unless given).
 */
export function nearestPlanes(data: Float32Array, count: number, w: number, h: number, ow: number, oh: number, xs: Int32Array, ys: Int32Array, checkInterrupt: () => void, simd = true, out: Float32Array = new Float32Array(count * ow * oh)): Float32Array {
  if (count === 0 || ow === 0 || oh === 0) return out;
  const k = simd ? simdKernels() : undefined;
  if (k && w * h + ow * oh <= WHOLE) return gatherWhole(k, data, count, w, h, ow, oh, xs, ys, checkInterrupt, out);
  for (let p = 0; p < count; p++) {
    const s = data.subarray(p * w * h, (p + 1) * w * h);
    const o = out.subarray(p * ow * oh, (p + 1) * ow * oh);
    if (k) gatherChunked(k, s, w, ow, oh, xs, ys, checkInterrupt, o);
    else gatherJs(s, w, ow, oh, xs, ys, checkInterrupt, o);
    checkInterrupt();
  }
  return out;
}

/** nearestPlanes of one plane (its height is not needed: ys says which rows are read). */
export function nearestPlane(data: Float32Array, w: number, ow: number, oh: number, xs: Int32Array, ys: Int32Array, checkInterrupt: () => void, simd = true, out: Float32Array = new Float32Array(ow * oh)): Float32Array {
  if (ow === 0 || oh === 0) return out;
  const k = simd ? simdKernels() : undefined;
  if (k) gatherChunked(k, data, w, ow, oh, xs, ys, checkInterrupt, out);
  else gatherJs(data, w, ow, oh, xs, ys, checkInterrupt, out);
  return out;
}

/** The gather's column offsets (bytes) at XO, 4 lanes of padding past ow at 0. */
function layColumns(k: SimdKernels, XO: number, xs: Int32Array, ow: number): void {
  const { i32 } = k;
  for (let x = 0; x < ow; x++) i32[XO / 4 + x] = xs[x]! * 4;
  i32.fill(0, XO / 4 + ow, XO / 4 + ow + 4);
}

/** Row offsets (bytes, from row `lo`) of output rows [y0, y1) at RO. */
function layRows(k: SimdKernels, RO: number, ys: Int32Array, y0: number, y1: number, lo: number, w: number): void {
  const { i32 } = k;
  for (let y = y0; y < y1; y++) i32[RO / 4 + y - y0] = (ys[y]! - lo) * w * 4;
}

function gatherWhole(k: SimdKernels, data: Float32Array, count: number, w: number, h: number, ow: number, oh: number, xs: Int32Array, ys: Int32Array, checkInterrupt: () => void, out: Float32Array): Float32Array {
  const group = Math.max(1, Math.min(count, Math.floor(WHOLE / (w * h + ow * oh))));
  const [XO, RO, B, D] = regions(k, [4 * (ow + 4), 4 * oh, 4 * group * w * h, 4 * group * oh * ow]) as [number, number, number, number];
  layColumns(k, XO, xs, ow);
  layRows(k, RO, ys, 0, oh, 0, w);
  for (let p0 = 0; p0 < count; p0 += group) {
    const n = Math.min(group, count - p0);
    k.f32.set(data.subarray(p0 * w * h, (p0 + n) * w * h), B / 4);
    for (let p = 0; p < n; p++) k.gatherRows(B + 4 * p * w * h, RO, oh, XO, ow, D + 4 * p * oh * ow);
    out.set(k.f32.subarray(D / 4, D / 4 + n * oh * ow), p0 * oh * ow);
    checkInterrupt();
  }
  return out;
}

function gatherChunked(k: SimdKernels, data: Float32Array, w: number, ow: number, oh: number, xs: Int32Array, ys: Int32Array, checkInterrupt: () => void, out: Float32Array): void {
  const chunks = rowChunks(oh, Math.max(1, Math.floor(CHUNK / ow)), Math.max(1, Math.floor(BAND / w)), (y) => [ys[y]!, ys[y]!]);
  const { rows: maxRows, band: maxBand } = largest(chunks);
  const [XO, RO, B, D] = regions(k, [4 * (ow + 4), 4 * maxRows, 4 * maxBand * w, 4 * maxRows * ow]) as [number, number, number, number];
  layColumns(k, XO, xs, ow);
  let next = 256;
  for (const { y0, y1, lo, hi } of chunks) {
    layRows(k, RO, ys, y0, y1, lo, w);
    k.f32.set(data.subarray(lo * w, (hi + 1) * w), B / 4);
    k.gatherRows(B, RO, y1 - y0, XO, ow, D);
    out.set(k.f32.subarray(D / 4, D / 4 + (y1 - y0) * ow), y0 * ow);
    if (y1 >= next) {
      checkInterrupt();
      next = y1 + 256;
    }
  }
}

function gatherJs(data: Float32Array, w: number, ow: number, oh: number, xs: Int32Array, ys: Int32Array, checkInterrupt: () => void, out: Float32Array): void {
  for (let y = 0; y < oh; y++) {
    const o = y * ow;
    if (y > 0 && ys[y] === ys[y - 1]) out.copyWithin(o, o - ow, o);
    else {
      const row = ys[y]! * w;
      for (let x = 0; x < ow; x++) out[o + x] = data[row + xs[x]!]! + 0;
    }
    if ((y & 255) === 255) checkInterrupt();
  }
}
