import { randomBytes } from 'node:crypto';
import type { NodeContext, NodeDefinition } from './api.ts';
import { saveBatch } from './image-io.ts';
import { checkSize, Frame, ImageBatch, MaskBatch, MaskPlane, maskPlanes, MAX_RESOLUTION, newPlane, toByte } from './image-types.ts';
import { channelUnits, colorMask, compositeSamples, featherSamples, invertSamples, thresholdSamples } from './mask-loops.ts';
import { cropPlane } from './resample.ts';
import { simdKernels, type SimdKernels } from './simd-kernels.ts';
import { combo, IMAGE_IN, MASK_IN, v3 } from './schema.ts';

function mapPlanes(mask: MaskBatch, fn: (p: MaskPlane) => MaskPlane, ctx: NodeContext): MaskBatch {
  return new MaskBatch(
    maskPlanes(mask).map((p) => {
      ctx.checkInterrupt();
      return fn(p);
    }),
  );
}

/** Samples per call of maskBytes (64 KiB of floats in, 48 KiB of bytes out). */
const CHUNK = 16384;
const CHUNK_OUT = CHUNK * 4 + 64;

/** MASK → IMAGE: each plane becomes a grey RGB frame. */
export function maskToImage(mask: MaskBatch): ImageBatch {
  const k = simdKernels();
  return new ImageBatch(
    maskPlanes(mask).map((p) => {
      const data = Buffer.allocUnsafe(p.data.length * 3);
      const d = p.data;
      const o = new Uint8Array(data.buffer, data.byteOffset, data.length);
      if (k) {
        // toByte on 4 samples a step, each written three times (simd-kernels.ts maskBytes), a chunk at a time.
        k.reserve(CHUNK_OUT + CHUNK * 3 + 64);
        for (let s = 0; s < d.length; s += CHUNK) {
          const m = Math.min(CHUNK, d.length - s);
          k.f32.set(d.subarray(s, s + m), 0);
          k.maskBytes(0, m, CHUNK_OUT);
          o.set(k.u8.subarray(CHUNK_OUT, CHUNK_OUT + 3 * m), 3 * s);
        }
        return new Frame(p.width, p.height, 3, data);
      }
      for (let i = 0, j = 0; i < d.length; i++, j += 3) {
        const v = toByte(d[i]!);
        o[j] = v;
        o[j + 1] = v;
        o[j + 2] = v;
      }
      return new Frame(p.width, p.height, 3, data);
    }),
  );
}

function composite(destination: MaskBatch, source: MaskBatch, x: number, y: number, op: string): MaskBatch {
  const dst = maskPlanes(destination);
  const src = maskPlanes(source);
  if (src.length !== dst.length && src.length !== 1 && dst.length !== 1) {
    throw Object.assign(new Error(`The size of tensor a (${dst.length}) must match the size of tensor b (${src.length}) at non-singleton dimension 0`), { pyType: 'RuntimeError' });
  }
  const n = Math.max(dst.length, src.length);
  const { width: dw, height: dh } = dst[0]!;
  const { width: sw, height: sh } = src[0]!;
  checkSize(dw, dh, n);
  const right = Math.min(x + sw, dw);
  const bottom = Math.min(y + sh, dh);
  const out: MaskPlane[] = [];
  for (let b = 0; b < n; b++) {
    const dd = dst[Math.min(b, dst.length - 1)]!.data;
    const sd = src[Math.min(b, src.length - 1)]!.data;
    out.push(new MaskPlane(dw, dh, compositeSamples(dd, sd, dw, dh, sw, x, y, right, bottom, op)));
  }
  return new MaskBatch(out);
}

/**
 * FeatherMask: edges fade linearly over the given widths. The reference
 * indexes the right and bottom edges with `-x`, so its first step scales
 * column/row 0 instead of the last one; here the fade starts at the edge it
 * names (the outermost column/row gets 1/width). The loops: mask-loops.ts.
 */
function feather(p: MaskPlane, left: number, top: number, right: number, bottom: number): MaskPlane {
  const { width: w, height: h } = p;
  return new MaskPlane(w, h, featherSamples(p.data, w, h, Math.min(left, w), Math.min(top, h), Math.min(right, w), Math.min(bottom, h)));
}

/** Sliding max (or min) over a window of radius r along one line; samples outside the line are ignored. */
function slide(src: Float32Array, start: number, stride: number, len: number, r: number, max: boolean, out: Float32Array, g: Float32Array, hbuf: Float32Array): void {
  // van Herk / Gil-Werman: block-wise prefix and suffix extrema give any window in O(1).
  const k = 2 * r + 1;
  const pick = max ? Math.max : Math.min;
  const fill = max ? -Infinity : Infinity;
  const total = len + 2 * r;
  for (let i = 0; i < total; i++) {
    const j = i - r;
    const v = j >= 0 && j < len ? src[start + j * stride]! : fill;
    g[i] = i % k === 0 ? v : pick(g[i - 1]!, v);
  }
  for (let i = total - 1; i >= 0; i--) {
    const j = i - r;
    const v = j >= 0 && j < len ? src[start + j * stride]! : fill;
    hbuf[i] = i === total - 1 || (i + 1) % k === 0 ? v : pick(hbuf[i + 1]!, v);
  }
  for (let j = 0; j < len; j++) out[start + j * stride] = pick(hbuf[j]!, g[j + 2 * r]!);
}

/**
 * GrowMask: |expand| rounds of grey dilation (erosion when negative) with a
 * 3×3 footprint, square or cross (tapered corners). Square rounds compose to
 * one (2n+1)² window, done separably in O(pixels); cross rounds run one by
 * one, at most width+height of them (after that nothing changes), each
 * checking for interrupts.
 */
function grow(p: MaskPlane, expand: number, tapered: boolean, ctx: NodeContext): MaskPlane {
  const { width: w, height: h } = p;
  const max = expand > 0;
  const n = Math.min(Math.abs(expand), w + h);
  if (n === 0) return p;
  if (!tapered) {
    const r = Math.min(n, Math.max(w, h));
    const a = p.data.slice();
    const b = new Float32Array(a.length);
    const g = new Float32Array(Math.max(w, h) + 2 * r);
    const hb = new Float32Array(g.length);
    for (let y = 0; y < h; y++) slide(a, y * w, 1, w, r, max, b, g, hb);
    ctx.checkInterrupt();
    for (let x = 0; x < w; x++) slide(b, x, w, h, r, max, a, g, hb);
    return new MaskPlane(w, h, a);
  }
  // Up to SIMD_ROUNDS rounds (any plane), or more where NaN samples make the rounds' comparisons order-dependent:
  // the rounds themselves, streamed in WebAssembly SIMD; otherwise the diamond in O(pixels).
  const simd = simdKernels();
  const fits = simd !== undefined && (n + 2) * 3 * (w + 8) * 4 <= SIMD_ROUNDS_MEMORY;
  if (fits && n <= SIMD_ROUNDS) return crossRoundsSimd(simd, p, n, max, ctx);
  const nan = hasNaN(p.data);
  if (fits && nan) return crossRoundsSimd(simd, p, n, max, ctx);
  if (n > 2 && !nan) return diamond(p, n, max, ctx);
  let cur = p.data.slice();
  let next = new Float32Array(cur.length);
  for (let it = 0; it < n; it++) {
    ctx.checkInterrupt();
    crossRound(cur, next, w, h, max);
    const t = cur;
    cur = next;
    next = t;
  }
  return new MaskPlane(w, h, cur);
}

/** Rounds up to which GrowMask (tapered) runs them one by one in SIMD rather than as the diamond (measured on 1024²: 8 rounds in 5 ms against the diamond's 46, 32 in 12 against 44, break-even near 128). */
const SIMD_ROUNDS = 96;
/** Bound on the rows crossRoundsSimd keeps (3 per round) in the kernels' memory, which stays that large for the thread's life: 16 MiB is 96 rounds up to 4096 wide, about 80 at 16384. */
const SIMD_ROUNDS_MEMORY = 16 * 1024 * 1024;

/**
 * n rounds of the 3×3 cross, each exactly crossRound (the kernel takes the
 * same samples in the same order with the same comparison), streamed: each
 * round keeps a ring of 3 rows in the kernels' memory, and a source row goes
 * through all n rounds while the plane is read once, so the working set is
 * 3(n + 1) rows instead of two planes per round. Rows are padded by one
 * sample of −∞ (+∞ for erosion) each side; the missing rows above the first
 * and below the last are a row of that fill.
 */
function crossRoundsSimd(k: SimdKernels, p: MaskPlane, n: number, max: boolean, ctx: NodeContext): MaskPlane {
  const { width: w, height: h } = p;
  const fill = max ? -Infinity : Infinity;
  // Floats per row slot: 4 before the row (the last is its left padding), the row, 4 after (padding, then what the kernel writes past it).
  const S = w + 8;
  const slot = (level: number, y: number) => (1 + level * 3 + (y % 3)) * S + 4;
  k.reserve((1 + (n + 1) * 3) * S * 4 + 64);
  const f = k.f32;
  f.fill(fill, 0, S);
  for (let level = 0; level <= n; level++) for (let y = 0; y < 3; y++) f[slot(level, y) - 1] = fill;
  const F = 4 * 4;
  const src = p.data;
  const out = new Float32Array(w * h);
  for (let yi = 0; yi < h + n; yi++) {
    if (yi < h) {
      const a = slot(0, yi);
      f.set(src.subarray(yi * w, yi * w + w), a);
      f[a + w] = fill;
    }
    for (let level = 1; level <= n; level++) {
      const y = yi - level;
      if (y < 0) break;
      if (y >= h) continue;
      const d = slot(level, y);
      k.crossRow(y > 0 ? slot(level - 1, y - 1) * 4 : F, slot(level - 1, y) * 4, y + 1 < h ? slot(level - 1, y + 1) * 4 : F, d * 4, w, max ? 1 : 0);
      f[d + w] = fill;
      if (level === n) out.set(f.subarray(d, d + w), y * w);
    }
    if ((yi & 63) === 63) ctx.checkInterrupt();
  }
  return new MaskPlane(w, h, out);
}

function hasNaN(d: Float32Array): boolean {
  for (let i = 0; i < d.length; i++) if (d[i] !== d[i]) return true;
  return false;
}

/**
 * n rounds of the 3×3 cross (samples outside the plane ignored) in
 * O(pixels): they compose to the max (min) over the diamond |dx| + |dy| ≤ n
 * within the plane (the plane is a rectangle, so every sample of the diamond
 * is reached by a staircase of cross steps inside it). With m = ⌊(n − 1)/2⌋,
 * the diamond is the 45°-rotated square {(t + s, t − s) : |t|, |s| ≤ m} (the
 * samples of even parity up to 2m) grown by n − 2m ∈ {1, 2} cross rounds.
 * The square is two sliding windows of 2m + 1, along the diagonals then the
 * anti-diagonals, on a copy padded by m + 2 with −∞ (+∞ for erosion), so
 * every intermediate point lies in the copy and the padding never wins.
 */
function diamond(p: MaskPlane, n: number, max: boolean, ctx: NodeContext): MaskPlane {
  const { width: w, height: h } = p;
  const m = (n - 1) >> 1;
  const rounds = n - 2 * m;
  // Row-wise windows need m more padding (their windows stay inside the copy): used unless that padding is more than
  // 4× the plane's area, and when no sample has its sign bit set (then the float bits order as int32 and compare
  // without branches); otherwise each diagonal is walked on its own in float.
  const rowWise = (w + 4 * m + 2 * rounds) * (h + 4 * m + 2 * rounds) <= 4 * w * h + 4096 && nonNegative(p.data);
  const pad = m + rounds + (rowWise ? m : 0);
  const W = w + 2 * pad;
  const H = h + 2 * pad;
  // Padding never wins: −∞ (+∞ for erosion); in the int32 form +0 (the least non-negative float) and +∞.
  const fill = rowWise ? (max ? 0 : 0x7f800000) : max ? -Infinity : Infinity;
  const A = rowWise ? new Int32Array(W * H) : new Float32Array(W * H);
  const B = rowWise ? new Int32Array(W * H) : new Float32Array(W * H);
  A.fill(fill);
  B.fill(fill);
  const src = rowWise ? new Int32Array(p.data.buffer, p.data.byteOffset, p.data.length) : p.data;
  for (let y = 0; y < h; y++) A.set(src.subarray(y * w, y * w + w), (y + pad) * W + pad);
  let a = A;
  let b = B;
  if (rowWise) {
    const ai = A as Int32Array;
    const bi = B as Int32Array;
    if (m > 0) {
      const g = new Int32Array(ai.length);
      const hb = new Int32Array(ai.length);
      diagonalRows(ai, bi, W, H, m, 1, max, g, hb);
      ctx.checkInterrupt();
      diagonalRows(bi, ai, W, H, m, -1, max, g, hb);
    }
    for (let it = 0; it < rounds; it++) {
      ctx.checkInterrupt();
      crossRoundBits(it % 2 ? bi : ai, it % 2 ? ai : bi, W, H, max);
    }
    if (rounds % 2) [a, b] = [b, a];
  } else {
    const af = A as Float32Array;
    const bf = B as Float32Array;
    if (m > 0) {
      const k = 2 * m + 1;
      const line = Math.min(W, H) + 2 * m;
      const g = new Float32Array(line);
      const hb = new Float32Array(line);
      // Down-right diagonals: from every sample of the top row and of the left column.
      for (let x = 0; x < W; x++) diagonalSlide(af, bf, x, W + 1, Math.min(W - x, H), m, k, max, g, hb);
      for (let y = 1; y < H; y++) diagonalSlide(af, bf, y * W, W + 1, Math.min(W, H - y), m, k, max, g, hb);
      ctx.checkInterrupt();
      // Down-left anti-diagonals: from every sample of the top row and of the right column.
      for (let x = 0; x < W; x++) diagonalSlide(bf, af, x, W - 1, Math.min(x + 1, H), m, k, max, g, hb);
      for (let y = 1; y < H; y++) diagonalSlide(bf, af, y * W + W - 1, W - 1, Math.min(W, H - y), m, k, max, g, hb);
    }
    for (let it = 0; it < rounds; it++) {
      ctx.checkInterrupt();
      crossRound(it % 2 ? bf : af, it % 2 ? af : bf, W, H, max);
    }
    if (rounds % 2) [a, b] = [b, a];
  }
  const out = new Float32Array(w * h);
  const dst = rowWise ? new Int32Array(out.buffer) : out;
  for (let y = 0; y < h; y++) dst.set(a.subarray((y + pad) * W + pad, (y + pad) * W + pad + w), y * w);
  return new MaskPlane(w, h, out);
}

/** Whether no sample has its sign bit set (no negative value, no −0): their bits then order as the floats. */
function nonNegative(d: Float32Array): boolean {
  const bits = new Int32Array(d.buffer, d.byteOffset, d.length);
  for (let i = 0; i < bits.length; i++) if (bits[i]! < 0) return false;
  return true;
}

/**
 * One cross round on the int32 bits of non-negative floats, without branches
 * (max(v, u) = v ^ ((v ^ u) & ((v − u) >> 31)): the differences stay within
 * int32). The border rows and columns are not written: they are padding.
 */
function crossRoundBits(cur: Int32Array, next: Int32Array, w: number, h: number, max: boolean): void {
  for (let y = 1; y < h - 1; y++) {
    const row = y * w;
    if (max) {
      for (let i = row + 1, end = row + w - 1; i < end; i++) {
        let v = cur[i]!;
        let u = cur[i - 1]!;
        v ^= (v ^ u) & ((v - u) >> 31);
        u = cur[i + 1]!;
        v ^= (v ^ u) & ((v - u) >> 31);
        u = cur[i - w]!;
        v ^= (v ^ u) & ((v - u) >> 31);
        u = cur[i + w]!;
        v ^= (v ^ u) & ((v - u) >> 31);
        next[i] = v;
      }
    } else {
      for (let i = row + 1, end = row + w - 1; i < end; i++) {
        let v = cur[i]!;
        let u = cur[i - 1]!;
        v ^= (v ^ u) & ((u - v) >> 31);
        u = cur[i + 1]!;
        v ^= (v ^ u) & ((u - v) >> 31);
        u = cur[i - w]!;
        v ^= (v ^ u) & ((u - v) >> 31);
        u = cur[i + w]!;
        v ^= (v ^ u) & ((u - v) >> 31);
        next[i] = v;
      }
    }
  }
}

/**
 * Sliding max (min) of radius r along every diagonal (dx = 1: down-right,
 * −1: down-left) of a W×H copy holding the int32 bits of non-negative
 * floats, row by row so that memory is read in order: van Herk / Gil-Werman
 * with blocks of k = 2r + 1 rows, `g` the extremum from the block's first row
 * (or the line's first sample) down to each sample, `hb` from each sample
 * down to the block's last row (or the line's last sample), and each window
 * the extremum of `hb` at its first sample and `g` at its last (branch-free,
 * as crossRoundBits). Written for the samples whose window lies inside the
 * copy (at least r from every side); the others keep what `out` held.
 */
function diagonalRows(src: Int32Array, out: Int32Array, W: number, H: number, r: number, dx: 1 | -1, max: boolean, g: Int32Array, hb: Int32Array): void {
  const k = 2 * r + 1;
  // s = 1 for max, 0 for min: the branch-free pick takes u where (v − u) >> 31 (max) or (u − v) >> 31 (min) is −1.
  const s = max ? 1 : 0;
  // The first sample of a line in a row: column 0 going down-right, W − 1 going down-left.
  const x0 = dx === 1 ? 0 : W - 1;
  for (let y = 0; y < H; y++) {
    const row = y * W;
    if (y % k === 0) {
      g.set(src.subarray(row, row + W), row);
      continue;
    }
    const back = W + dx;
    g[row + x0] = src[row + x0]!;
    for (let i = row + (dx === 1 ? 1 : 0), e = row + (dx === 1 ? W : W - 1); i < e; i++) {
      const u = g[i - back]!;
      const v = src[i]!;
      g[i] = v ^ ((v ^ u) & ((s ? v - u : u - v) >> 31));
    }
  }
  // The last sample of a line in a row: column W − 1 going down-right, 0 going down-left.
  const x1 = dx === 1 ? W - 1 : 0;
  for (let y = H - 1; y >= 0; y--) {
    const row = y * W;
    if (y === H - 1 || y % k === k - 1) {
      hb.set(src.subarray(row, row + W), row);
      continue;
    }
    const ahead = W + dx;
    hb[row + x1] = src[row + x1]!;
    for (let i = row + (dx === 1 ? 0 : 1), e = row + (dx === 1 ? W - 1 : W); i < e; i++) {
      const u = hb[i + ahead]!;
      const v = src[i]!;
      hb[i] = v ^ ((v ^ u) & ((s ? v - u : u - v) >> 31));
    }
  }
  // Window of sample (x, y): from (x − r·dx, y − r) to (x + r·dx, y + r).
  const first = -r * W - r * dx;
  const last = r * W + r * dx;
  for (let y = r; y < H - r; y++) {
    for (let i = y * W + r, e = y * W + W - r; i < e; i++) {
      const v = hb[i + first]!;
      const u = g[i + last]!;
      out[i] = v ^ ((v ^ u) & ((s ? v - u : u - v) >> 31));
    }
  }
}

/**
 * Sliding max (min) of radius r (window k = 2r + 1) along one line of `len`
 * samples from `start` by `stride`, samples beyond the line ignored (van Herk
 * / Gil-Werman: block-wise prefix and suffix extrema, O(1) per sample).
 */
function diagonalSlide(src: Float32Array, out: Float32Array, start: number, stride: number, len: number, r: number, k: number, max: boolean, g: Float32Array, hb: Float32Array): void {
  if (r === 0) {
    for (let j = 0, i = start; j < len; j++, i += stride) out[i] = src[i]!;
    return;
  }
  const fill = max ? -Infinity : Infinity;
  const total = len + 2 * r;
  if (max) {
    for (let i = 0, q = 0; i < total; i++, q++) {
      const j = i - r;
      const v = j >= 0 && j < len ? src[start + j * stride]! : fill;
      if (q === k) q = 0;
      g[i] = q === 0 ? v : g[i - 1]! > v ? g[i - 1]! : v;
    }
    for (let i = total - 1; i >= 0; i--) {
      const j = i - r;
      const v = j >= 0 && j < len ? src[start + j * stride]! : fill;
      hb[i] = i === total - 1 || (i + 1) % k === 0 ? v : hb[i + 1]! > v ? hb[i + 1]! : v;
    }
    for (let j = 0, i = start; j < len; j++, i += stride) {
      const u = hb[j]!;
      const v = g[j + 2 * r]!;
      out[i] = u > v ? u : v;
    }
  } else {
    for (let i = 0, q = 0; i < total; i++, q++) {
      const j = i - r;
      const v = j >= 0 && j < len ? src[start + j * stride]! : fill;
      if (q === k) q = 0;
      g[i] = q === 0 ? v : g[i - 1]! < v ? g[i - 1]! : v;
    }
    for (let i = total - 1; i >= 0; i--) {
      const j = i - r;
      const v = j >= 0 && j < len ? src[start + j * stride]! : fill;
      hb[i] = i === total - 1 || (i + 1) % k === 0 ? v : hb[i + 1]! < v ? hb[i + 1]! : v;
    }
    for (let j = 0, i = start; j < len; j++, i += stride) {
      const u = hb[j]!;
      const v = g[j + 2 * r]!;
      out[i] = u < v ? u : v;
    }
  }
}

/**
 * One round of grey dilation (`max`) or erosion with the 3×3 cross: each
 * sample and its four neighbours inside the plane. Interior samples take no
 * bounds checks and no calls; the edges go through `crossAt`.
 */
function crossRound(cur: Float32Array, next: Float32Array, w: number, h: number, max: boolean): void {
  for (let y = 0; y < h; y++) {
    const row = y * w;
    if (y === 0 || y === h - 1 || w < 3) {
      for (let x = 0; x < w; x++) next[row + x] = crossAt(cur, w, h, x, y, max);
      continue;
    }
    next[row] = crossAt(cur, w, h, 0, y, max);
    next[row + w - 1] = crossAt(cur, w, h, w - 1, y, max);
    if (max) {
      for (let i = row + 1, end = row + w - 1; i < end; i++) {
        let v = cur[i]!;
        let u = cur[i - 1]!;
        if (u > v) v = u;
        u = cur[i + 1]!;
        if (u > v) v = u;
        u = cur[i - w]!;
        if (u > v) v = u;
        u = cur[i + w]!;
        if (u > v) v = u;
        next[i] = v;
      }
    } else {
      for (let i = row + 1, end = row + w - 1; i < end; i++) {
        let v = cur[i]!;
        let u = cur[i - 1]!;
        if (u < v) v = u;
        u = cur[i + 1]!;
        if (u < v) v = u;
        u = cur[i - w]!;
        if (u < v) v = u;
        u = cur[i + w]!;
        if (u < v) v = u;
        next[i] = v;
      }
    }
  }
}

function crossAt(cur: Float32Array, w: number, h: number, x: number, y: number, max: boolean): number {
  const i = y * w + x;
  let v = cur[i]!;
  const take = (u: number) => {
    if (max ? u > v : u < v) v = u;
  };
  if (x > 0) take(cur[i - 1]!);
  if (x < w - 1) take(cur[i + 1]!);
  if (y > 0) take(cur[i - w]!);
  if (y < h - 1) take(cur[i + w]!);
  return v;
}

const CHANNELS = ['red', 'green', 'blue', 'alpha'];

export const maskNodes: NodeDefinition[] = v3('comfy_extras.nodes_mask', [
  {
    name: 'MaskToImage',
    displayName: 'Convert Mask to Image',
    category: 'mask',
    searchAliases: ['convert mask'],
    inputs: { required: { mask: MASK_IN } },
    outputs: ['IMAGE'],
    execute: ({ mask }) => [maskToImage(mask)],
  },
  {
    name: 'ImageToMask',
    displayName: 'Convert Image to Mask',
    category: 'mask',
    searchAliases: ['extract channel', 'channel to mask'],
    inputs: { required: { image: IMAGE_IN, channel: combo(CHANNELS) } },
    outputs: ['MASK'],
    execute: ({ image, channel }) => {
      const c = CHANNELS.indexOf(channel);
      return [
        new MaskBatch(
          (image as ImageBatch).frames.map((f) => {
            const n = f.width * f.height;
            // Alpha of an RGB image is opaque (the reference raises an IndexError there).
            const out = c >= f.channels ? new Float32Array(n).fill(1) : channelUnits(f.data, n, f.channels, c);
            return new MaskPlane(f.width, f.height, out);
          }),
        ),
      ];
    },
  },
  {
    name: 'ImageColorToMask',
    category: 'mask',
    searchAliases: ['color keying', 'chroma key'],
    inputs: { required: { image: IMAGE_IN, color: ['INT', { default: 0, min: 0, max: 0xffffff, step: 1, display: 'number' }] } },
    outputs: ['MASK'],
    execute: ({ image, color }) => [
      new MaskBatch(
        (image as ImageBatch).frames.map((f) => new MaskPlane(f.width, f.height, colorMask(f.data, f.width * f.height, f.channels, color))),
      ),
    ],
  },
  {
    name: 'SolidMask',
    category: 'mask',
    inputs: {
      required: {
        value: ['FLOAT', { default: 1.0, min: 0.0, max: 1.0, step: 0.01 }],
        width: ['INT', { default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }],
        height: ['INT', { default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }],
      },
    },
    outputs: ['MASK'],
    execute: ({ value, width, height }) => {
      const p = newPlane(width, height);
      p.data.fill(value);
      return [new MaskBatch([p])];
    },
  },
  {
    name: 'InvertMask',
    category: 'mask',
    searchAliases: ['reverse mask', 'flip mask'],
    inputs: { required: { mask: MASK_IN } },
    outputs: ['MASK'],
    execute: ({ mask }, ctx) => [
      mapPlanes(
        mask,
        (p) => new MaskPlane(p.width, p.height, invertSamples(p.data)),
        ctx,
      ),
    ],
  },
  {
    name: 'CropMask',
    category: 'mask',
    searchAliases: ['cut mask', 'extract mask region', 'mask slice'],
    inputs: {
      required: {
        mask: MASK_IN,
        x: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
        y: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
        width: ['INT', { default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }],
        height: ['INT', { default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }],
      },
    },
    outputs: ['MASK'],
    execute: ({ mask, x, y, width, height }, ctx) => {
      const first = maskPlanes(mask)[0]!;
      const w = Math.min(width, first.width - x);
      const h = Math.min(height, first.height - y);
      // The reference slices to an empty tensor here, which fails later in whatever node receives it.
      if (w <= 0 || h <= 0) throw Object.assign(new Error(`crop at (${x}, ${y}) is outside the ${first.width}x${first.height} mask`), { pyType: 'ValueError' });
      return [mapPlanes(mask, (p) => cropPlane(p, x, y, w, h), ctx)];
    },
  },
  {
    name: 'MaskComposite',
    category: 'mask',
    searchAliases: ['combine masks', 'blend masks', 'layer masks'],
    inputs: {
      required: {
        destination: MASK_IN,
        source: MASK_IN,
        x: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
        y: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
        operation: combo(['multiply', 'add', 'subtract', 'and', 'or', 'xor']),
      },
    },
    outputs: ['MASK'],
    execute: ({ destination, source, x, y, operation }) => [composite(destination, source, x, y, operation)],
  },
  {
    name: 'FeatherMask',
    category: 'mask',
    searchAliases: ['soft edge mask', 'blur mask edges', 'gradient mask edge'],
    inputs: {
      required: {
        mask: MASK_IN,
        left: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
        top: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
        right: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
        bottom: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
      },
    },
    outputs: ['MASK'],
    execute: ({ mask, left, top, right, bottom }, ctx) => [mapPlanes(mask, (p) => feather(p, left, top, right, bottom), ctx)],
  },
  {
    name: 'GrowMask',
    displayName: 'Grow Mask',
    category: 'mask',
    searchAliases: ['expand mask', 'shrink mask'],
    inputs: {
      required: {
        mask: MASK_IN,
        expand: ['INT', { default: 0, min: -MAX_RESOLUTION, max: MAX_RESOLUTION, step: 1 }],
        tapered_corners: ['BOOLEAN', { default: true, advanced: true }],
      },
    },
    outputs: ['MASK'],
    execute: ({ mask, expand, tapered_corners }, ctx) => [mapPlanes(mask, (p) => grow(p, expand, tapered_corners, ctx), ctx)],
  },
  {
    name: 'ThresholdMask',
    category: 'mask',
    searchAliases: ['binary mask'],
    inputs: { required: { mask: MASK_IN, value: ['FLOAT', { default: 0.5, min: 0.0, max: 1.0, step: 0.01 }] } },
    outputs: ['MASK'],
    execute: ({ mask, value }, ctx) => [
      mapPlanes(mask, (p) => new MaskPlane(p.width, p.height, thresholdSamples(p.data, value)), ctx),
    ],
  },
  {
    name: 'MaskPreview',
    displayName: 'Preview Mask',
    description: 'Saves the input images to your ComfyUI output directory.',
    category: 'mask',
    searchAliases: ['show mask', 'view mask', 'inspect mask', 'debug mask'],
    inputs: { required: { mask: MASK_IN }, hidden: { prompt: 'PROMPT', extra_pnginfo: 'EXTRA_PNGINFO' } },
    outputs: [],
    outputNode: true,
    execute: async ({ mask, prompt, extra_pnginfo }, ctx) => {
      const suffix = Array.from(randomBytes(5), (b) => 'abcdefghijklmnopqrstupvxyz'[b % 26]).join('');
      return { ui: { images: await saveBatch(maskToImage(mask), `ComfyUI_temp_${suffix}`, 'temp', ctx, { prompt, extra_pnginfo }, 4) } };
    },
  },
]);
