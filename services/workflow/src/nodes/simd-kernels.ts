/**
 * Pixel loops in WebAssembly SIMD (128-bit vectors: 4 × int32 or float32,
 * 16 bytes), for the kernels where typed-array JavaScript stayed slower than
 * the reference's C: PIL's lanczos passes (fixed-point int32, as PIL) and the
 * small Gaussian blurs (float32, as torch's conv2d).
 *
 * The module is assembled here from its instructions (no toolchain, no
 * dependency): a few functions over one imported memory. Images never move
 * into that memory whole: each call works on a few rows (a source row in, a
 * ring of intermediate rows, an output row out), copied in and out by the
 * callers, so the memory stays a few rows wide whatever the image (it grows
 * to the widest rows seen and is kept per thread). Every vector loop may read
 * and write up to 16 bytes past the end of its rows: the layouts pad for it.
 *
 * `simdKernels()` is undefined where WebAssembly SIMD does not validate (the
 * callers then keep their JavaScript loops) or WORKFLOW_IMAGE_KERNELS=js.
 */

import {
  type Code, uleb, sleb, bytesOfString, vec, section, I32, F32, V128, get, set, i32, add, mul, geS, load32, store32, f32load, block, loop, brIf, br, inc, whileLt, simd, v128load, v128store, load32zero, i32x4splat, f32x4splat, i32x4lane0, i16x8extLowU8, i16x8extHighU8, i32x4extLowU16, i32x4extHighU16, i16x8narrowS32, i8x16narrowU16, i32x4shrS, i32x4add, i32x4mul, f32x4add, f32x4mul, f32x4fromI32, i32x4truncSatF32, type Fn, encodeModule, f64x2splat, f64x2add, f64x2mul, f64x2fromI32LowU, f64x2promoteLow, f32x4demoteZero, i32x4truncSatF64Zero, shuffle, highToLow, lowPairs, f32toF64, v128zero, i32x4eq, v128and, v128or, f32x4sub, f32x4pmin, f32x4pmax, f64x2sub, f64x2div, f64x2floor, f64x2ge, f64x2fromI32LowS, i32x4shl, i32x4minS, i32x4maxS, f32const, f64const, f32splat, f64splat, i8x16swizzle, f32x4gt, f32x4div, f32x4fromI32U, v128xor,
} from '../wasm/assemble.ts';

// ---- the kernels ----

/** PIL's fixed-point precision for 8-bit images. */
const PIL_BITS = 22;
const PIL_HALF = 1 << (PIL_BITS - 1);

const shl = [0x74];
/** ptr + index·4 */
const at4 = (ptr: number, index: number): Code => [...get(ptr), ...get(index), ...i32(2), ...shl, ...add];

/**
 * lanczosH(src, xo, n, kk, k, ow, dst, c): PIL's horizontal pass over one
 * row of 3- or 4-channel pixels, one pixel per vector (its channels in the
 * lanes): for output x, n[x] taps from src + xo[x] (bytes, step c) with the
 * int32 weights kk[x·k …], summed from 2^21, shifted right by 22 and clipped
 * to 0..255 (i32 → i16 signed saturation, then i16 → u8 unsigned: PIL's
 * clip8); 4 bytes stored at dst + x·c (the fourth, for c = 3, belongs to
 * the next pixel, which overwrites it). xo and n are int32 arrays. Reads 4
 * bytes at each tap: src needs a byte of padding, dst one too.
 */
function lanczosH(): Fn {
  const [src, xo, n, kk, k, ow, dst, c] = [0, 1, 2, 3, 4, 5, 6, 7];
  const [x, p, t, e, kb, acc] = [8, 9, 10, 11, 12, 13];
  return {
    name: 'lanczosH',
    params: [I32, I32, I32, I32, I32, I32, I32, I32],
    locals: [I32, I32, I32, I32, I32, V128],
    body: [
      i32(0), set(x),
      get(kk), set(kb),
      whileLt(x, ow,
        get(src), at4(xo, x), load32(), add, set(p),
        at4(n, x), load32(), set(e),
        i32(PIL_HALF), i32x4splat, set(acc),
        i32(0), set(t),
        whileLt(t, e,
          get(acc),
          get(p), load32zero, i16x8extLowU8, i32x4extLowU16,
          at4(kb, t), load32(), i32x4splat,
          i32x4mul, i32x4add, set(acc),
          inc(p, get(c)),
          inc(t, i32(1)),
        ),
        get(dst),
        get(acc), i32(PIL_BITS), i32x4shrS, get(acc), i16x8narrowS32,
        get(acc), i8x16narrowU16,
        i32x4lane0,
        store32(),
        inc(dst, get(c)),
        inc(kb, [...get(k), ...i32(2), ...shl]),
        inc(x, i32(1)),
      ),
    ],
  };
}

/**
 * lanczosV(offs, kk, m, dst, len): PIL's vertical pass for one output row,
 * 16 samples a vector: the m source rows at the byte addresses offs[0 … m)
 * (int32 array) weighted by kk[0 … m), summed from 2^21 in int32, shifted
 * right by 22 and clipped to bytes, stored at dst. Reads and writes up to
 * 15 bytes past len.
 */
function lanczosV(): Fn {
  const [offs, kk, m, dst, len] = [0, 1, 2, 3, 4];
  const [i, t, kv, v, lo, hi, a0, a1, a2, a3] = [5, 6, 7, 8, 9, 10, 11, 12, 13, 14];
  const half = [...i32(PIL_HALF), ...i32x4splat];
  const shr = [...i32(PIL_BITS), ...i32x4shrS];
  const acc = (a: number, part: number, ext: Code): Code => [...get(a), ...get(part), ...ext, ...get(kv), ...i32x4mul, ...i32x4add, ...set(a)];
  return {
    name: 'lanczosV',
    params: [I32, I32, I32, I32, I32],
    locals: [I32, I32, V128, V128, V128, V128, V128, V128, V128, V128],
    body: [
      i32(0), set(i),
      whileLt(i, len,
        half, set(a0), half, set(a1), half, set(a2), half, set(a3),
        i32(0), set(t),
        whileLt(t, m,
          at4(offs, t), load32(), get(i), add, v128load(), set(v),
          at4(kk, t), load32(), i32x4splat, set(kv),
          get(v), i16x8extLowU8, set(lo),
          get(v), i16x8extHighU8, set(hi),
          acc(a0, lo, i32x4extLowU16),
          acc(a1, lo, i32x4extHighU16),
          acc(a2, hi, i32x4extLowU16),
          acc(a3, hi, i32x4extHighU16),
          inc(t, i32(1)),
        ),
        get(dst), get(i), add,
        get(a0), shr, get(a1), shr, i16x8narrowS32,
        get(a2), shr, get(a3), shr, i16x8narrowS32,
        i8x16narrowU16,
        v128store(),
        inc(i, i32(16)),
      ),
    ],
  };
}

/**
 * toF32(src, n, dst): bytes → float32, 16 a step. Reads up to 15 bytes and
 * writes up to 15 floats past n.
 */
function toF32(): Fn {
  const [src, n, dst] = [0, 1, 2];
  const [i, v, lo, hi, o] = [3, 4, 5, 6, 7];
  const put = (part: number, ext: Code, off: number): Code => [...get(o), ...get(part), ...ext, ...f32x4fromI32, ...v128store(off)];
  return {
    name: 'toF32',
    params: [I32, I32, I32],
    locals: [I32, V128, V128, V128, I32],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        get(src), get(i), add, v128load(), set(v),
        get(v), i16x8extLowU8, set(lo),
        get(v), i16x8extHighU8, set(hi),
        at4(dst, i), set(o),
        put(lo, i32x4extLowU16, 0), put(lo, i32x4extHighU16, 16), put(hi, i32x4extLowU16, 32), put(hi, i32x4extHighU16, 48),
        inc(i, i32(16)),
      ),
    ],
  };
}

/**
 * convH(src, kern, K, c, n, dst): one row of a horizontal convolution in
 * float32, 4 samples a vector: dst[i] = Σₜ kern[t] · src[i + t·c] for
 * i < n (src: the row as float32, padded by (K − 1)/2 pixels each side; kern:
 * K vectors of 4 equal float32; dst: float32), summed in tap order from 0.
 * Writes up to 3 floats past n.
 */
function convH(): Fn {
  const [src, kern, K, c, n, dst] = [0, 1, 2, 3, 4, 5];
  const [i, t, p, acc, kp, step] = [6, 7, 8, 9, 10, 11];
  return {
    name: 'convH',
    params: [I32, I32, I32, I32, I32, I32],
    locals: [I32, I32, I32, V128, I32, I32],
    body: [
      get(c), i32(2), shl, set(step),
      i32(0), set(i),
      whileLt(i, n,
        i32(0), i32x4splat, f32x4fromI32, set(acc),
        at4(src, i), set(p),
        get(kern), set(kp),
        i32(0), set(t),
        whileLt(t, K,
          get(acc),
          get(p), v128load(),
          get(kp), v128load(),
          f32x4mul, f32x4add, set(acc),
          inc(p, get(step)),
          inc(kp, i32(16)),
          inc(t, i32(1)),
        ),
        at4(dst, i), get(acc), v128store(),
        inc(i, i32(4)),
      ),
    ],
  };
}

/**
 * resH(src, xo, w, k, ow, dst, c): one row of a horizontal resampling in
 * float32, one pixel a vector (its channels in the lanes): for output x,
 * Σₜ w[x·k + t] · src[xo[x·k + t] …] over its k taps, in tap order from 0
 * (src: the row as float32; xo: int32 byte offsets into it; w: float32),
 * stored as 4 floats at dst + x·c·4 (for c = 3 the fourth is the next
 * pixel's, which overwrites it). Reads and writes a float past the row.
 */
function resH(): Fn {
  const [src, xo, w, k, ow, dst, c] = [0, 1, 2, 3, 4, 5, 6];
  const [x, t, acc, b] = [7, 8, 9, 10];
  return {
    name: 'resH',
    params: [I32, I32, I32, I32, I32, I32, I32],
    locals: [I32, I32, V128, I32],
    body: [
      i32(0), set(x),
      i32(0), set(b),
      whileLt(x, ow,
        i32(0), i32x4splat, f32x4fromI32, set(acc),
        i32(0), set(t),
        whileLt(t, k,
          get(acc),
          get(src), get(xo), get(b), get(t), add, i32(2), shl, add, load32(), add, v128load(),
          get(w), get(b), get(t), add, i32(2), shl, add, f32load(), f32x4splat,
          f32x4mul, f32x4add, set(acc),
          inc(t, i32(1)),
        ),
        get(dst), get(acc), v128store(),
        inc(dst, [...get(c), ...i32(2), ...shl]),
        inc(b, get(k)),
        inc(x, i32(1)),
      ),
    ],
  };
}

/**
 * convV(offs, kern, K, dst, len, p, q, x): one output row of the vertical
 * pass, 16 samples a step: s = Σₜ kern[t] · row_t[i] (float32 rows at the
 * byte addresses offs[0 … K), summed in tap order; kern as for convH), then p·x[i] + q·s when
 * p ≠ 0 (sharpen: x the source bytes), else s; rounded half up
 * (floor(v + 0.5), truncation after +0.5, clipped to 0..255) to bytes at
 * dst. Reads and writes up to 15 samples past len.
 */
function convV(): Fn {
  const [offs, kern, K, dst, len, p, q, x] = [0, 1, 2, 3, 4, 5, 6, 7];
  const [i, t, kv, r, a0, a1, a2, a3, xv, xl, xh] = [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18];
  const zero = [...i32(0), ...i32x4splat];
  const acc = (a: number, off: number): Code => [...get(a), ...get(r), ...v128load(off), ...get(kv), ...f32x4mul, ...f32x4add, ...set(a)];
  // v → v·q + p·x (x: the 4 source samples as float)
  const mix = (a: number, xs: Code): Code => [...get(a), ...get(q), ...f32x4splat, ...f32x4mul, ...xs, ...f32x4fromI32, ...get(p), ...f32x4splat, ...f32x4mul, ...f32x4add, ...set(a)];
  const round = (a: number): Code => [...get(a), ...i32(0x3f000000), ...i32x4splat, ...f32x4add, ...i32x4truncSatF32];
  return {
    name: 'convV',
    params: [I32, I32, I32, I32, I32, F32, F32, I32],
    locals: [I32, I32, V128, I32, V128, V128, V128, V128, V128, V128, V128],
    body: [
      i32(0), set(i),
      whileLt(i, len,
        zero, f32x4fromI32, set(a0), zero, f32x4fromI32, set(a1), zero, f32x4fromI32, set(a2), zero, f32x4fromI32, set(a3),
        i32(0), set(t),
        whileLt(t, K,
          at4(offs, t), load32(), get(i), i32(2), shl, add, set(r),
          get(kern), get(t), i32(4), shl, add, v128load(), set(kv),
          acc(a0, 0), acc(a1, 16), acc(a2, 32), acc(a3, 48),
          inc(t, i32(1)),
        ),
        get(p), [0x43, 0, 0, 0, 0], [0x5c], // p != 0.0
        [0x04, 0x40],
        get(x), get(i), add, v128load(), set(xv),
        get(xv), i16x8extLowU8, set(xl),
        get(xv), i16x8extHighU8, set(xh),
        mix(a0, [...get(xl), ...i32x4extLowU16]),
        mix(a1, [...get(xl), ...i32x4extHighU16]),
        mix(a2, [...get(xh), ...i32x4extLowU16]),
        mix(a3, [...get(xh), ...i32x4extHighU16]),
        [0x0b],
        get(dst), get(i), add,
        round(a0), round(a1), i16x8narrowS32,
        round(a2), round(a3), i16x8narrowS32,
        i8x16narrowU16,
        v128store(),
        inc(i, i32(16)),
      ),
    ],
  };
}

/**
 * intH(src, xo, n, kk, k, ow, dst, c): lanczosH's weighted sums without the
 * rounding, shift and clip: for output x the int32 sum of n[x] taps from
 * src + xo[x] (bytes, step c) times kk[x·k …], stored as int32 at
 * dst + x·c·4 (16 bytes: for c = 3 the fourth lane is the next pixel's,
 * which overwrites it). src needs a byte of padding, dst 4.
 */
function intH(): Fn {
  const [src, xo, n, kk, k, ow, dst, c] = [0, 1, 2, 3, 4, 5, 6, 7];
  const [x, p, t, e, kb, acc] = [8, 9, 10, 11, 12, 13];
  return {
    name: 'intH',
    params: [I32, I32, I32, I32, I32, I32, I32, I32],
    locals: [I32, I32, I32, I32, I32, V128],
    body: [
      i32(0), set(x),
      get(kk), set(kb),
      whileLt(x, ow,
        get(src), at4(xo, x), load32(), add, set(p),
        at4(n, x), load32(), set(e),
        i32(0), i32x4splat, set(acc),
        i32(0), set(t),
        whileLt(t, e,
          get(acc),
          get(p), load32zero, i16x8extLowU8, i32x4extLowU16,
          at4(kb, t), load32(), i32x4splat,
          i32x4mul, i32x4add, set(acc),
          inc(p, get(c)),
          inc(t, i32(1)),
        ),
        get(dst), get(acc), v128store(),
        inc(dst, [...get(c), ...i32(2), ...shl]),
        inc(kb, [...get(k), ...i32(2), ...shl]),
        inc(x, i32(1)),
      ),
    ],
  };
}

/**
 * intV(offs, kk, m, dst, len, bias, shift): one output row from m int32 rows
 * at the byte addresses offs[0 … m) weighted by kk[0 … m): (bias + Σ) >> shift
 * (arithmetic), clipped to bytes, 16 samples a step. Reads up to 15 int32
 * and writes up to 15 bytes past len.
 */
function intV(): Fn {
  const [offs, kk, m, dst, len, bias, shift] = [0, 1, 2, 3, 4, 5, 6];
  const [i, t, kv, r, a0, a1, a2, a3] = [7, 8, 9, 10, 11, 12, 13, 14];
  const start = [...get(bias), ...i32x4splat];
  const acc = (a: number, off: number): Code => [...get(a), ...get(r), ...v128load(off), ...get(kv), ...i32x4mul, ...i32x4add, ...set(a)];
  const shr = (a: number): Code => [...get(a), ...get(shift), ...i32x4shrS];
  return {
    name: 'intV',
    params: [I32, I32, I32, I32, I32, I32, I32],
    locals: [I32, I32, V128, I32, V128, V128, V128, V128],
    body: [
      i32(0), set(i),
      whileLt(i, len,
        start, set(a0), start, set(a1), start, set(a2), start, set(a3),
        i32(0), set(t),
        whileLt(t, m,
          at4(offs, t), load32(), get(i), i32(2), shl, add, set(r),
          at4(kk, t), load32(), i32x4splat, set(kv),
          acc(a0, 0), acc(a1, 16), acc(a2, 32), acc(a3, 48),
          inc(t, i32(1)),
        ),
        get(dst), get(i), add,
        shr(a0), shr(a1), i16x8narrowS32,
        shr(a2), shr(a3), i16x8narrowS32,
        i8x16narrowU16,
        v128store(),
        inc(i, i32(16)),
      ),
    ],
  };
}

/** lut2(a, c, table, out, n): out[i] = table[a[i]·256 + c[i]] for i < n (bytes; a 64 KiB table). */
function lut2(): Fn {
  const [a, c, table, out, n] = [0, 1, 2, 3, 4];
  const i = 5;
  const load8 = [0x2d, 0, 0];
  const store8 = [0x3a, 0, 0];
  return {
    name: 'lut2',
    params: [I32, I32, I32, I32, I32],
    locals: [I32],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        get(out), get(i), add,
        get(table), get(a), get(i), add, load8, i32(8), shl, get(c), get(i), add, load8, [0x72], add, load8,
        store8,
        inc(i, i32(1)),
      ),
    ],
  };
}


/**
 * resH64(src, xo, w, k, ow, dst, c): resampleBytes' horizontal pass exactly:
 * for output x the double sum, in tap order from 0, of w[x·k + t] (float32)
 * times the source bytes at src + xo[x·k + t] (channels in the lanes, two
 * float64 lanes a vector), rounded to float32 and stored as 4 floats at
 * dst + x·c·4 (for c = 3 the fourth is the next pixel's, which overwrites
 * it). Reads 4 bytes at each tap (src needs a byte of padding).
 */
function resH64(): Fn {
  const [src, xo, w, k, ow, dst, c] = [0, 1, 2, 3, 4, 5, 6];
  const [x, t, lo, hi, b, v, wv] = [7, 8, 9, 10, 11, 12, 13];
  return {
    name: 'resH64',
    params: [I32, I32, I32, I32, I32, I32, I32],
    locals: [I32, I32, V128, V128, I32, V128, V128],
    body: [
      i32(0), set(x),
      i32(0), set(b),
      whileLt(x, ow,
        i32(0), i32x4splat, f64x2fromI32LowU, set(lo),
        i32(0), i32x4splat, f64x2fromI32LowU, set(hi),
        i32(0), set(t),
        whileLt(t, k,
          get(src), get(xo), get(b), get(t), add, i32(2), shl, add, load32(), add,
          load32zero, i16x8extLowU8, i32x4extLowU16, set(v),
          get(w), get(b), get(t), add, i32(2), shl, add, f32load(), f32toF64, f64x2splat, set(wv),
          get(lo), get(v), f64x2fromI32LowU, get(wv), f64x2mul, f64x2add, set(lo),
          get(hi), get(v), get(v), highToLow, f64x2fromI32LowU, get(wv), f64x2mul, f64x2add, set(hi),
          inc(t, i32(1)),
        ),
        get(dst), get(lo), f32x4demoteZero, get(hi), f32x4demoteZero, lowPairs, v128store(),
        inc(dst, [...get(c), ...i32(2), ...shl]),
        inc(b, get(k)),
        inc(x, i32(1)),
      ),
    ],
  };
}

/**
 * resV64(offs, w, K, dst, len, steps): resampleBytes' vertical pass exactly,
 * 4 samples a step in two float64 halves, over the K float32 rows at the
 * byte addresses offs[0 … K) with the float32 weights w[0 … K): with
 * `steps` 0 the double sum w₀r₀ + w₁r₁ + … in tap order plus 0.5 (its 2- and
 * 4-tap loops); with `steps` 1 a float32 sum from 0.5 rounded after each tap
 * (its general loop and three-tap loop); then truncated and clipped to
 * bytes at dst. Reads up to 3 floats and writes up to 3 bytes past len.
 */
function resV64(): Fn {
  const [offs, w, K, dst, len, steps] = [0, 1, 2, 3, 4, 5];
  const [i, t, lo, hi, r, wv, row] = [6, 7, 8, 9, 10, 11, 12];
  const half = [0x44, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f, ...f64x2splat];
  const zero = [...i32(0), ...i32x4splat, ...f64x2fromI32LowU];
  const fround = (a: number): Code => [...get(steps), 0x04, V128, ...get(a), ...f32x4demoteZero, ...f64x2promoteLow, 0x05, ...get(a), 0x0b, ...set(a)];
  return {
    name: 'resV64',
    params: [I32, I32, I32, I32, I32, I32],
    locals: [I32, I32, V128, V128, I32, V128, V128],
    body: [
      i32(0), set(i),
      whileLt(i, len,
        get(steps), [0x04, V128], half, [0x05], zero, [0x0b], set(lo),
        get(lo), set(hi),
        i32(0), set(t),
        whileLt(t, K,
          at4(offs, t), load32(), get(i), i32(2), shl, add, set(r),
          get(w), get(t), i32(2), shl, add, f32load(), f32toF64, f64x2splat, set(wv),
          get(r), v128load(), set(row),
          get(lo), get(row), f64x2promoteLow, get(wv), f64x2mul, f64x2add, set(lo),
          get(hi), get(row), get(row), highToLow, f64x2promoteLow, get(wv), f64x2mul, f64x2add, set(hi),
          fround(lo), fround(hi),
          inc(t, i32(1)),
        ),
        get(steps), i32(0), [0x46], [0x04, 0x40],
        get(lo), half, f64x2add, set(lo),
        get(hi), half, f64x2add, set(hi),
        [0x0b],
        get(dst), get(i), add,
        get(lo), i32x4truncSatF64Zero, get(hi), i32x4truncSatF64Zero, lowPairs,
        get(lo), i16x8narrowS32, get(lo), i8x16narrowU16,
        i32x4lane0, store32(),
        inc(i, i32(4)),
      ),
    ],
  };
}

/**
 * crossRow(up, mid, down, dst, n, max): one row of a grey dilation (max ≠ 0)
 * or erosion with the 3×3 cross, 4 samples a vector: dst[i] is mid[i] then
 * mid[i − 1], mid[i + 1], up[i] and down[i] taken in that order with
 * f32x4.pmax (a < b ? b : a) or pmin (b < a ? b : a), i.e. exactly the
 * scalar `if (u > v) v = u` (`u < v`) of masks.ts' crossRound, NaN and −0
 * included. Float32 rows at byte addresses; mid[−1] and mid[n] are read
 * (padding holding −∞ for max, +∞ for min, which never win). Writes up to 3
 * floats past n and reads up to 4.
 */
function crossRow(): Fn {
  const [up, mid, down, dst, n, max] = [0, 1, 2, 3, 4, 5];
  const [i, o, v] = [6, 7, 8];
  const pick = (op: number): Code[] => [
    get(mid), get(o), add, v128load(), set(v),
    get(v), get(mid), get(o), add, i32(4), [0x6b], v128load(), simd(op),
    get(mid), get(o), add, v128load(4), simd(op),
    get(up), get(o), add, v128load(), simd(op),
    get(down), get(o), add, v128load(), simd(op),
    set(v),
    get(dst), get(o), add, get(v), v128store(),
  ];
  return {
    name: 'crossRow',
    params: [I32, I32, I32, I32, I32, I32],
    locals: [I32, I32, V128],
    body: [
      i32(0), set(i),
      get(max), [0x04, 0x40],
      whileLt(i, n, get(i), i32(2), shl, set(o), ...pick(0xeb), inc(i, i32(4))),
      [0x05],
      whileLt(i, n, get(i), i32(2), shl, set(o), ...pick(0xea), inc(i, i32(4))),
      [0x0b],
    ],
  };
}

/**
 * maskBytes(src, n, dst): mask floats → grey RGB bytes, 4 samples a step:
 * each v as image-types' toByte (0 at or below 0 and for NaN, 255 at or
 * above 1, else round(v·255) half up: v·255 + 0.5 in float64, exact, then
 * truncated and saturated to a byte), written three times at dst (12 bytes
 * a step). Reads up to 3 floats and writes up to 13 bytes past n.
 */
function maskBytes(): Fn {
  const [src, n, dst] = [0, 1, 2];
  const [i, v, lo, hi, b] = [3, 4, 5, 6, 7];
  const f64 = (bytes: number[]): Code => [0x44, ...bytes, ...f64x2splat];
  const scale = (x: number): Code => [...get(x), ...f64([0, 0, 0, 0, 0, 0xe0, 0x6f, 0x40]), ...f64x2mul, ...f64([0, 0, 0, 0, 0, 0, 0xe0, 0x3f]), ...f64x2add, ...set(x)];
  return {
    name: 'maskBytes',
    params: [I32, I32, I32],
    locals: [I32, V128, V128, V128, V128],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        at4(src, i), v128load(), set(v),
        get(v), f64x2promoteLow, set(lo),
        get(v), get(v), highToLow, f64x2promoteLow, set(hi),
        scale(lo), scale(hi),
        get(lo), i32x4truncSatF64Zero, get(hi), i32x4truncSatF64Zero, lowPairs, set(b),
        get(b), get(b), i16x8narrowS32, set(b),
        get(b), get(b), i8x16narrowU16, set(b),
        get(dst),
        get(b), get(b), shuffle([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3]),
        v128store(),
        inc(dst, i32(12)),
        inc(i, i32(4)),
      ),
    ],
  };
}

// ---- mask kernels (masks.ts, compositing.ts) ----

/** v > 1 ? 1 : v < 0 ? 0 : v on the vector on the stack (pmin / pmax: NaN and −0 kept, as the scalar comparisons). */
const clamp01: Code = [...f32splat(1), ...f32x4pmin, ...f32splat(0), ...f32x4pmax];

/**
 * colorMask3 / colorMask4(src, n, rgb, dst): ImageColorToMask over n pixels
 * of 3 (4) bytes at src: 1.0 where the pixel's red, green and blue bytes are
 * those of `rgb` (red | green << 8 | blue << 16), else 0, as float32 at dst,
 * 4 pixels a step. Reads up to 16 bytes past the pixels, writes up to 3
 * floats past n.
 */
function colorMask(c: 3 | 4): Fn {
  const [src, n, rgb, dst] = [0, 1, 2, 3];
  const [i, key] = [4, 5];
  const z = 16;
  const lanes = c === 3 ? [0, 1, 2, z, 3, 4, 5, z, 6, 7, 8, z, 9, 10, 11, z] : [0, 1, 2, z, 4, 5, 6, z, 8, 9, 10, z, 12, 13, 14, z];
  return {
    name: `colorMask${c}`,
    params: [I32, I32, I32, I32],
    locals: [I32, V128],
    body: [
      i32(0), set(i),
      get(rgb), i32x4splat, set(key),
      whileLt(i, n,
        get(dst),
        get(src), v128load(), v128zero, shuffle(lanes), get(key), i32x4eq,
        f32splat(1), v128and,
        v128store(),
        inc(src, i32(4 * c)),
        inc(dst, i32(16)),
        inc(i, i32(4)),
      ),
    ],
  };
}

/** invert(src, n, dst): dst[i] = 1 − src[i] (float32: the double difference rounded, as JavaScript). Writes up to 3 floats past n. */
function invert(): Fn {
  const [src, n, dst] = [0, 1, 2];
  const i = 3;
  return {
    name: 'invert',
    params: [I32, I32, I32],
    locals: [I32],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        get(dst), f32splat(1), get(src), v128load(), f32x4sub, v128store(),
        inc(src, i32(16)),
        inc(dst, i32(16)),
        inc(i, i32(4)),
      ),
    ],
  };
}

/**
 * clampMask(src, n, dst), and addClamp / subClamp / mulClamp(a, b, n, dst):
 * float32 samples, 4 a step, each clamped to 0..1 as masks.ts' MaskComposite
 * (after a[i] + b[i], a[i] − b[i], a[i] · b[i]: float32 results equal to the
 * double results rounded, as float64 carries more than twice float32's
 * precision). dst may be a or src. Writes up to 3 floats past n.
 */
function clampMask(): Fn {
  const [src, n, dst] = [0, 1, 2];
  const i = 3;
  return {
    name: 'clampMask',
    params: [I32, I32, I32],
    locals: [I32],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        get(dst), get(src), v128load(), clamp01, v128store(),
        inc(src, i32(16)),
        inc(dst, i32(16)),
        inc(i, i32(4)),
      ),
    ],
  };
}

function combineClamp(name: string, op: number): Fn {
  const [a, b, n, dst] = [0, 1, 2, 3];
  const i = 4;
  return {
    name,
    params: [I32, I32, I32, I32],
    locals: [I32],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        get(dst), get(a), v128load(), get(b), v128load(), simd(op), clamp01, v128store(),
        inc(a, i32(16)),
        inc(b, i32(16)),
        inc(dst, i32(16)),
        inc(i, i32(4)),
      ),
    ],
  };
}

/**
 * andMask / orMask / xorMask(a, b, n, dst): MaskComposite's logical
 * operations, 1.0 or 0 a sample: each operand true where torch.round gives
 * a non-zero value, which is where |v| > ½ or v is NaN (halves round to the
 * even 0). dst may be a. Writes up to 3 floats past n.
 */
function logicMask(name: string, op: Code): Fn {
  const [a, b, n, dst] = [0, 1, 2, 3];
  const i = 4;
  const truth = (p: number): Code[] => [get(p), v128load(), simd(0xe0), f32splat(0.5), simd(0x45), simd(0x4d)];
  return {
    name,
    params: [I32, I32, I32, I32],
    locals: [I32],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        get(dst), ...truth(a), ...truth(b), op, f32splat(1), v128and, v128store(),
        inc(a, i32(16)),
        inc(b, i32(16)),
        inc(dst, i32(16)),
        inc(i, i32(4)),
      ),
    ],
  };
}

/**
 * joinAlpha3(rgb, a, n, dst): JoinImageWithAlpha over n pixels: each RGB
 * pixel (3 bytes at rgb) and toByte(1 − a[i]) as its alpha, 4 bytes at dst,
 * 4 pixels a step. toByte exactly: 1 − a and its product by 255 in float64
 * as JavaScript, rounded half up as Math.round (the floor, plus one where
 * the exact remainder is at least ½), clamped to 0..255; NaN gives 0. Reads
 * up to 16 bytes past the pixels and 3 floats past n; writes up to 12 bytes
 * past n pixels.
 */
function joinAlpha3(): Fn {
  const [rgb, a, n, dst] = [0, 1, 2, 3];
  const [i, av, x, f] = [4, 5, 6, 7];
  const z = 16;
  /** toByte(1 − lanes 0, 1 of the vector on the stack) as int32 lanes 0, 1 (2, 3 zero). */
  const byte2: Code[] = [
    f64x2promoteLow, set(x),
    f64splat(1), get(x), f64x2sub, f64splat(255), f64x2mul, set(x),
    get(x), f64x2floor, set(f),
    get(f),
    get(x), get(f), f64x2sub, f64splat(0.5), f64x2ge, f64splat(1), v128and,
    f64x2add,
    i32x4truncSatF64Zero,
  ];
  return {
    name: 'joinAlpha3',
    params: [I32, I32, I32, I32],
    locals: [I32, V128, V128, V128],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        get(dst),
        get(rgb), v128load(), v128zero, shuffle([0, 1, 2, z, 3, 4, 5, z, 6, 7, 8, z, 9, 10, 11, z]),
        get(a), v128load(), set(av),
        get(av), ...byte2,
        get(av), get(av), highToLow, ...byte2,
        lowPairs,
        i32(0), i32x4splat, i32x4maxS, i32(255), i32x4splat, i32x4minS,
        i32(24), i32x4shl,
        v128or,
        v128store(),
        inc(rgb, i32(12)),
        inc(a, i32(16)),
        inc(dst, i32(16)),
        inc(i, i32(4)),
      ),
    ],
  };
}

/**
 * splitAlpha4(src, n, rgb, mask): SplitImageWithAlpha over n RGBA pixels
 * (4 bytes at src): their RGB bytes at rgb (3 a pixel) and 1 − alpha / 255
 * at mask, computed in float64 and rounded to float32 as JavaScript, 4
 * pixels a step. Writes up to 16 bytes past the RGB bytes and 3 floats past n.
 */
function splitAlpha4(): Fn {
  const [src, n, rgb, mask] = [0, 1, 2, 3];
  const [i, v, al] = [4, 5, 6];
  const z = 16;
  const m2: Code[] = [f64x2fromI32LowS, set(v), f64splat(1), get(v), f64splat(255), f64x2div, f64x2sub, f32x4demoteZero];
  return {
    name: 'splitAlpha4',
    params: [I32, I32, I32, I32],
    locals: [I32, V128, V128],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        get(src), v128load(), set(v),
        get(rgb), get(v), get(v), shuffle([0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 0, 0, 0, 0]), v128store(),
        get(v), v128zero, shuffle([3, z, z, z, 7, z, z, z, 11, z, z, z, 15, z, z, z]), set(al),
        get(mask),
        get(al), ...m2,
        get(al), get(al), highToLow, ...m2,
        lowPairs,
        v128store(),
        inc(src, i32(16)),
        inc(rgb, i32(12)),
        inc(mask, i32(16)),
        inc(i, i32(4)),
      ),
    ],
  };
}

// ---- mask row kernels (issue 29: ImageToMask, LoadImageMask, ThresholdMask, FeatherMask, ImageCompositeMasked) ----


/**
 * unitBytes(src, n, step, sel, flip, dst): one channel of n pixels as
 * float32 b / 255, 4 pixels a step: the 16 bytes at src through the swizzle
 * pattern at sel (the 4 pixels' channel bytes to lanes 0, 4, 8, 12, zero
 * elsewhere: an int32 each), b = that byte xor `flip` (0, or 255 for
 * 255 − byte), converted (exact) and divided by 255 in float32, which is
 * correctly rounded: for every byte the float32 rounding of JavaScript's
 * double byte / 255 and 1 − byte / 255 (the tests check all 256). src
 * advances by `step` (4 pixels' bytes) a step. Reads up to 16 bytes past
 * the last step's src, writes up to 3 floats past n.
 */
function unitBytes(): Fn {
  const [src, n, step, sel, flip, dst] = [0, 1, 2, 3, 4, 5];
  const [i, pat, fv] = [6, 7, 8];
  return {
    name: 'unitBytes',
    params: [I32, I32, I32, I32, I32, I32],
    locals: [I32, V128, V128],
    body: [
      get(sel), v128load(), set(pat),
      get(flip), i32x4splat, set(fv),
      i32(0), set(i),
      whileLt(i, n,
        get(dst),
        get(src), v128load(), get(pat), i8x16swizzle, get(fv), v128xor, f32x4fromI32U, f32splat(255), f32x4div,
        v128store(),
        inc(src, get(step)),
        inc(dst, i32(16)),
        inc(i, i32(4)),
      ),
    ],
  };
}

/**
 * thresholdMask(src, n, t, dst): 1.0 where src[i] > t, else 0 (NaN: 0),
 * float32, 4 a step. Writes up to 3 floats past n.
 */
function thresholdMask(): Fn {
  const [src, n, t, dst] = [0, 1, 2, 3];
  const [i, tv] = [4, 5];
  return {
    name: 'thresholdMask',
    params: [I32, I32, F32, I32],
    locals: [I32, V128],
    body: [
      get(t), f32x4splat, set(tv),
      i32(0), set(i),
      whileLt(i, n,
        get(dst), get(src), v128load(), get(tv), f32x4gt, f32splat(1), v128and, v128store(),
        inc(src, i32(16)),
        inc(dst, i32(16)),
        inc(i, i32(4)),
      ),
    ],
  };
}

/**
 * scale64(p, rates, rstep, n): p[i] = float32(p[i] · r) for i < n, with r
 * the float64 at rates + i·rstep (rstep 8: a rate per sample; 0: one rate),
 * the product in float64 (rounded once there, then to float32, as a
 * JavaScript `*=` on a Float32Array): 4 samples a step, then the last n % 4
 * one at a time, so nothing past n is read or written but the rates' 32
 * bytes at a rate of its own (rstep 0: rates holds it 4 times).
 */
function scale64(): Fn {
  const [p, rates, rstep, n] = [0, 1, 2, 3];
  const [i, v, n4, vstep] = [4, 5, 6, 7];
  const f64load = [0x2b, 3, 0];
  const f64mul = [0xa2];
  const f32demote = [0xb6];
  const f32store = [0x38, 2, 0];
  return {
    name: 'scale64',
    params: [I32, I32, I32, I32],
    locals: [I32, V128, I32, I32],
    body: [
      get(rstep), i32(2), shl, set(vstep),
      get(n), i32(-4), [0x71], set(n4),
      i32(0), set(i),
      whileLt(i, n4,
        get(p), v128load(), set(v),
        get(p),
        get(v), f64x2promoteLow, get(rates), v128load(), f64x2mul, f32x4demoteZero,
        get(v), get(v), highToLow, f64x2promoteLow, get(rates), v128load(16), f64x2mul, f32x4demoteZero,
        lowPairs,
        v128store(),
        inc(p, i32(16)),
        inc(rates, get(vstep)),
        inc(i, i32(4)),
      ),
      whileLt(i, n,
        get(p), get(p), f32load(), f32toF64, get(rates), f64load, f64mul, f32demote, f32store,
        inc(p, i32(4)),
        inc(rates, get(rstep)),
        inc(i, i32(1)),
      ),
    ],
  };
}

/**
 * blendPx3 / blendPx4(src, dst, mask, n, out): n pixels of 3 (4) bytes, 4
 * a step: a·s + (1 − a)·d per channel, with a the float32 mask[i] and s, d
 * the source and destination bytes, in float64 as JavaScript (products,
 * then their sum), rounded half up and clipped to a byte (NaN: 0) into
 * out. Rounding: v + ½ truncated (saturating) where v ≥ ½, else 0. That is
 * Math.round(v) clamped: v + ½ is exact from ½ up, or rounds within the
 * binade above without reaching the next integer; below ½ (where 0.5 − 2^−54
 * + ½ would round up to 1) the result is 0 anyway. Shuffles are kept to
 * patterns of one operand (a generic two-operand shuffle costs several
 * times more). Reads and writes up to 3 pixels (and 4 bytes) past n at each
 * pointer.
 */
function blendPx(c: 3 | 4): Fn {
  const [src, dst, mask, n, out] = [0, 1, 2, 3, 4];
  const [i, s, d, a01, a23, i01, i23, w, g0, g1, g2, g3, half, one, qs, qd] = [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 23];
  /** The bytes of v (s or d) widened to int32 quarters: samples 0-3, 4-7, 8-11 (12-15) in the locals from `at`. */
  const quarters = (v: number, at: number): Code => [
    ...get(v), ...i16x8extLowU8, ...set(w),
    ...get(w), ...i32x4extLowU16, ...set(at),
    ...get(w), ...i32x4extHighU16, ...set(at + 1),
    ...get(v), ...i16x8extHighU8, ...set(w),
    ...get(w), ...i32x4extLowU16, ...set(at + 2),
    ...(c === 4 ? [...get(w), ...i32x4extHighU16, ...set(at + 3)] : []),
  ];
  /** Samples j, j + 1 (j even) of s or d as float64, from its quarter ⌊j / 4⌋. */
  const sample = (q0: number, j: number): Code => {
    const q = q0 + (j >> 2);
    return j % 4 === 0 ? [...get(q), ...f64x2fromI32LowS] : [...get(q), ...get(q), ...highToLow, ...f64x2fromI32LowS];
  };
  const bytes8 = (p: number): number[] => Array.from({ length: 8 }, (_, b) => p * 8 + b);
  /** The float64 pair of per-pixel values for samples j, j + 1 (pixels ⌊j / c⌋, ⌊(j + 1) / c⌋: both in lo (pixels 0, 1) or both in hi). */
  const pixels = (lo: number, hi: number, j: number): Code => {
    const p = Math.floor(j / c);
    const q = Math.floor((j + 1) / c);
    if ((p < 2) !== (q < 2)) throw new Error('blendPx: a pair across the pixel halves');
    const v = p < 2 ? lo : hi;
    return [...get(v), ...get(v), ...shuffle([...bytes8(p % 2), ...bytes8(q % 2)])];
  };
  const pair = (j: number): Code => [
    ...pixels(a01, a23, j), ...sample(qs, j), ...f64x2mul,
    ...pixels(i01, i23, j), ...sample(qd, j), ...f64x2mul,
    ...f64x2add, ...set(w),
    ...get(w), ...get(half), ...f64x2add,
    ...get(w), ...get(half), ...f64x2ge, ...v128and,
    ...i32x4truncSatF64Zero,
  ];
  const group = (j: number, g: number): Code => [...pair(j), ...pair(j + 2), ...lowPairs, ...set(g)];
  return {
    name: `blendPx${c}`,
    params: [I32, I32, I32, I32, I32],
    locals: [I32, ...new Array(22).fill(V128)],
    body: [
      f64splat(0.5), set(half),
      f64splat(1), set(one),
      i32(0), set(i),
      whileLt(i, n,
        get(src), v128load(), set(s),
        get(dst), v128load(), set(d),
        quarters(s, qs), quarters(d, qd),
        get(mask), v128load(), set(w),
        get(w), f64x2promoteLow, set(a01),
        get(w), get(w), highToLow, f64x2promoteLow, set(a23),
        get(one), get(a01), f64x2sub, set(i01),
        get(one), get(a23), f64x2sub, set(i23),
        group(0, g0), group(4, g1), group(8, g2),
        c === 4 ? group(12, g3) : [],
        get(out),
        get(g0), get(g1), i16x8narrowS32,
        get(g2), get(c === 4 ? g3 : g2), i16x8narrowS32,
        i8x16narrowU16,
        v128store(),
        inc(src, i32(4 * c)),
        inc(dst, i32(4 * c)),
        inc(out, i32(4 * c)),
        inc(mask, i32(16)),
        inc(i, i32(4)),
      ),
    ],
  };
}

// ---- image kernels (image-loops.ts: PorterDuffImageComposite, YCbCr; plane-loops.ts: float-plane resizes) ----

/** This block's instructions (a namespace of their own: other blocks define some of the same). */
const op = {
  f32x4div: simd(0xe7),
  f32x4ne: simd(0x42),
  f32x4gt: simd(0x44),
  f32x4replace: (lane: number): Code => simd(0x20, lane),
  f64x2min: simd(0xf4),
  f64x2max: simd(0xf5),
  f64x2lt: simd(0x49),
  v128bitselect: simd(0x52),
  i32x4replace: (lane: number): Code => simd(0x1c, lane),
  i32x4allTrue: simd(0xa3),
  /** v128.load64_zero, alignment hint 1 byte. */
  load64zero: simd(0x5d, 0, 0),
  /** v128.load64_lane into lane `lane` (address, vector on the stack), alignment hint 1 byte. */
  load64lane: (lane: number): Code => simd(0x57, 0, 0, lane),
};

/** The four bytes at the address on the stack as float32 lanes (0 … 255). */
const bytes4ToF32: Code = [...load32zero, ...i16x8extLowU8, ...i32x4extLowU16, ...f32x4fromI32];

/**
 * image-types' toByte of the four float32 lanes of local `v`, as the packed
 * i32 of four bytes on the stack: v·255 + 0.5 in float64 (exact), truncated
 * and saturated to 0..255 — 0 at or below 0 and for NaN, 255 at or above 1,
 * Math.round(v·255) between. `t` is a scratch v128 local.
 */
const toBytes4 = (v: number, t: number): Code => [
  ...get(v), ...f64x2promoteLow, ...f64splat(255), ...f64x2mul, ...f64splat(0.5), ...f64x2add, ...i32x4truncSatF64Zero,
  ...get(v), ...get(v), ...highToLow, ...f64x2promoteLow, ...f64splat(255), ...f64x2mul, ...f64splat(0.5), ...f64x2add, ...i32x4truncSatF64Zero,
  ...lowPairs, ...set(t),
  ...get(t), ...get(t), ...i16x8narrowS32, ...set(t),
  ...get(t), ...get(t), ...i8x16narrowU16,
  ...i32x4lane0,
];

/** Float lanes as byte lanes for i8x16.shuffle (both operands the same vector). */
const floatLanes = (lanes: number[]): Code => shuffle(lanes.flatMap((l) => [4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3]));

/**
 * An arithmetic expression over float32 inputs as JavaScript evaluates it:
 * in float64, each operation rounded to double, in the order written.
 * Leaves name inputs; numbers are constants; ['lt', a, b, x, y] is a < b ? x : y.
 */
export type Expr = string | number | ['+' | '-' | '*' | 'min' | 'max', Expr, Expr] | ['lt', Expr, Expr, Expr, Expr];

const F64_OPS = { '+': f64x2add, '-': f64x2sub, '*': f64x2mul, min: op.f64x2min, max: op.f64x2max } as const;
const F32_OPS = { '+': f32x4add, '-': f32x4sub, '*': f32x4mul, min: simd(0xe8), max: simd(0xe9) } as const;

function leavesOf(e: Expr, out = new Set<string>()): Set<string> {
  if (typeof e === 'string') out.add(e);
  else if (typeof e !== 'number') for (const x of e.slice(1) as Expr[]) leavesOf(x, out);
  return out;
}

/** Whether float32 arithmetic gives the expression's float32 rounding: a leaf, a constant, or one operation on them (a single IEEE operation rounded to double then to float32 is its float32 result, float64 having over twice float32's precision). */
function f32Exact(e: Expr): boolean {
  if (typeof e !== 'object') return true;
  return e[0] !== 'lt' && typeof e[1] !== 'object' && typeof e[2] !== 'object';
}

/** f64x2 code of `e` with leaf `name` in local `at(name)`. */
function exprF64(e: Expr, at: (name: string) => number): Code {
  if (typeof e === 'number') return f64splat(e);
  if (typeof e === 'string') return get(at(e));
  if (e[0] === 'lt') return [...exprF64(e[3], at), ...exprF64(e[4], at), ...exprF64(e[1], at), ...exprF64(e[2], at), ...op.f64x2lt, ...op.v128bitselect];
  return [...exprF64(e[1], at), ...exprF64(e[2], at), ...F64_OPS[e[0]]];
}

/** f32x4 code of an f32Exact expression with leaf `name` in local `at(name)`. */
function exprF32(e: Expr, at: (name: string) => number): Code {
  if (typeof e === 'number') return f32splat(e);
  if (typeof e === 'string') return get(at(e));
  if (e[0] === 'lt') throw new Error('not a float32 expression');
  return [...exprF32(e[1], at), ...exprF32(e[2], at), ...F32_OPS[e[0]]];
}

/**
 * Code leaving float32(e) on the stack, from the float32 vectors in locals
 * `f32At(name)`: in float32 where that rounds alike (f32Exact), else in two
 * float64 halves (each leaf promoted into the locals `f64At(name)` and
 * `f64At(name) + 1`) demoted once at the end, as Math.fround of the double.
 */
function exprCode(e: Expr, f32At: (name: string) => number, f64At: (name: string) => number, lo: number): Code {
  if (f32Exact(e)) return exprF32(e, f32At);
  const code: Code = [];
  for (const name of leavesOf(e)) {
    code.push(...get(f32At(name)), ...f64x2promoteLow, ...set(f64At(name)));
    code.push(...get(f32At(name)), ...get(f32At(name)), ...highToLow, ...f64x2promoteLow, ...set(f64At(name) + 1));
  }
  code.push(...exprF64(e, f64At), ...f32x4demoteZero, ...set(lo));
  code.push(...exprF64(e, (n) => f64At(n) + 1), ...f32x4demoteZero);
  code.push(...set(lo + 1), ...get(lo), ...get(lo + 1), ...lowPairs);
  return code;
}

/**
 * pdAlpha<m>(sm, dm, n, a1, a2, al, mk): PorterDuffImageComposite's alphas
 * for n pixels, 4 a step: a1 = 1 − sm[i], a2 = 1 − dm[i] (the masks), the
 * mode's alpha al = float32(alpha(a1, a2)) and the output mask mk = 1 − al,
 * each stored as float32. Reads and writes up to 3 floats past n.
 */
function pdAlpha(m: number, alpha: Expr): Fn {
  const [sm, dm, n, a1, a2, al, mk] = [0, 1, 2, 3, 4, 5, 6];
  const [i, sa, da, x, lo] = [7, 8, 9, 10, 11];
  const f64Base = 13;
  const f32At = (name: string) => (name === 'sa' ? sa : da);
  const f64At = (name: string) => f64Base + (name === 'sa' ? 0 : 2);
  const at = (p: number): Code => at4(p, i);
  return {
    name: `pdAlpha${m}`,
    params: [I32, I32, I32, I32, I32, I32, I32],
    locals: [I32, V128, V128, V128, V128, V128, V128, V128, V128, V128],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        f32splat(1), at(sm), v128load(), f32x4sub, set(sa),
        f32splat(1), at(dm), v128load(), f32x4sub, set(da),
        at(a1), get(sa), v128store(),
        at(a2), get(da), v128store(),
        exprCode(alpha, f32At, f64At, lo), set(x),
        at(al), get(x), v128store(),
        at(mk), f32splat(1), get(x), f32x4sub, v128store(),
        inc(i, i32(4)),
      ),
    ],
  };
}

/**
 * pdImage<m>(sb, db, a1, a2, al, n, out): PorterDuffImageComposite's image
 * for n samples, 4 a step, with each sample's alphas a1, a2 and al (float32,
 * spread to the samples): s = float32(sb[i] / 255) · a1 and d likewise from
 * db and a2 (float32 products), x = float32(image(s, a1, d, a2)), then
 * x / al (float32) where al > 1e-5, else 0, as a byte (toByte) at out.
 * Reads up to 3 samples and writes up to 3 bytes past n.
 */
function pdImage(m: number, image: Expr, threshold: number): Fn {
  const [sb, db, a1, a2, al, n, out] = [0, 1, 2, 3, 4, 5, 6];
  const [i, s, d, sa, da, x, av, lo, t] = [7, 8, 9, 10, 11, 12, 13, 14, 16];
  const f64Base = 17;
  const order = ['s', 'd', 'sa', 'da'];
  const f32At = (name: string) => [s, d, sa, da][order.indexOf(name)]!;
  const f64At = (name: string) => f64Base + 2 * order.indexOf(name);
  const unit = (p: number): Code => [...get(p), ...get(i), ...add, ...bytes4ToF32, ...f32splat(255), ...op.f32x4div];
  return {
    name: `pdImage${m}`,
    params: [I32, I32, I32, I32, I32, I32, I32],
    locals: [I32, ...new Array(17).fill(V128)],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        at4(a1, i), v128load(), set(sa),
        at4(a2, i), v128load(), set(da),
        unit(sb), get(sa), f32x4mul, set(s),
        unit(db), get(da), f32x4mul, set(d),
        at4(al, i), v128load(), set(av),
        exprCode(image, f32At, f64At, lo), get(av), op.f32x4div,
        get(av), f32splat(threshold), op.f32x4gt, v128and,
        set(x),
        get(out), get(i), add,
        toBytes4(x, t),
        store32(),
        inc(i, i32(4)),
      ),
    ],
  };
}

/**
 * spread3 / spread4(src, n, dst): each of n floats written c times in a
 * row (a pixel's value for each of its samples), 4 floats a step. Reads up
 * to 3 floats and writes up to 3·c floats past n.
 */
function spread(c: 3 | 4): Fn {
  const [src, n, dst] = [0, 1, 2];
  const [i, v] = [3, 4];
  const groups = c === 3 ? [[0, 0, 0, 1], [1, 1, 2, 2], [2, 3, 3, 3]] : [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]];
  return {
    name: `spread${c}`,
    params: [I32, I32, I32],
    locals: [I32, V128],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        at4(src, i), v128load(), set(v),
        ...groups.map((g, k) => [...get(dst), ...get(v), ...get(v), ...floatLanes(g), ...v128store(16 * k)]),
        inc(dst, i32(16 * c)),
        inc(i, i32(4)),
      ),
    ],
  };
}

const f32load0 = f32load();
/** 16 bytes at the address on the stack: the 4 pixels of 3 bytes there, channel `ch` of each as int32 lanes (c: bytes a pixel, 3 or 4). */
const channelOf = (c: 3 | 4, ch: number): Code => {
  const z = 16;
  return [...v128zero, ...shuffle([0, 1, 2, 3].flatMap((p) => [p * c + ch, z, z, z]))];
};

/**
 * rgbToYcbcr(src, n, yp, up, vp): kornia's rgb_to_ycbcr over n RGB pixels
 * (3 bytes at src), in float32 and its order: with u = float32(byte / 255),
 * y = (0.299·r + 0.587·g) + 0.114·b, cb = (b − y)·0.564 + 0.5,
 * cr = (r − y)·0.713 + 0.5 (each constant float32, each operation rounded
 * to float32); each as toByte written 3 times (a grey RGB pixel) at yp, up,
 * vp. 4 pixels a step; reads up to 16 bytes past the pixels, writes up to 16
 * bytes past each output.
 */
function rgbToYcbcr(): Fn {
  const [src, n, yp, up, vp] = [0, 1, 2, 3, 4];
  const [i, r, g, b, y, t, px] = [5, 6, 7, 8, 9, 10, 11];
  const unit = (ch: number): Code => [...get(px), ...channelOf(3, ch), ...f32x4fromI32, ...f32splat(255), ...op.f32x4div];
  const triple = shuffle([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3]);
  const put = (dst: number, v: number): Code => [...get(dst), ...toBytes4(v, t), ...i32x4splat, ...set(t), ...get(t), ...get(t), ...triple, ...v128store(), ...inc(dst, i32(12))];
  return {
    name: 'rgbToYcbcr',
    params: [I32, I32, I32, I32, I32],
    locals: [I32, V128, V128, V128, V128, V128, V128],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        get(src), v128load(), set(px),
        unit(0), set(r), unit(1), set(g), unit(2), set(b),
        f32splat(0.299), get(r), f32x4mul, f32splat(0.587), get(g), f32x4mul, f32x4add, f32splat(0.114), get(b), f32x4mul, f32x4add, set(y),
        put(yp, y),
        get(b), get(y), f32x4sub, f32splat(0.564), f32x4mul, f32splat(0.5), f32x4add, set(b),
        put(up, b),
        get(r), get(y), f32x4sub, f32splat(0.713), f32x4mul, f32splat(0.5), f32x4add, set(r),
        put(vp, r),
        inc(src, i32(12)),
        inc(i, i32(4)),
      ),
    ],
  };
}

/**
 * means3 / means4(src, n, dst): the float32 mean of each pixel's c channels
 * (bytes at src) as torch.mean: float32(byte / 255) summed in float32 from
 * the first channel, then / c. 4 pixels a step; reads up to 16 bytes past
 * the pixels, writes up to 3 floats past n.
 */
function means(c: 3 | 4): Fn {
  const [src, n, dst] = [0, 1, 2];
  const [i, px] = [3, 4];
  const unit = (ch: number): Code => [...get(px), ...channelOf(c, ch), ...f32x4fromI32, ...f32splat(255), ...op.f32x4div];
  const sum: Code = [...unit(0)];
  for (let ch = 1; ch < c; ch++) sum.push(...unit(ch), ...f32x4add);
  return {
    name: `means${c}`,
    params: [I32, I32, I32],
    locals: [I32, V128],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        get(src), v128load(), set(px),
        at4(dst, i), sum, f32splat(c), op.f32x4div, v128store(),
        inc(src, i32(4 * c)),
        inc(i, i32(4)),
      ),
    ],
  };
}

/**
 * ycbcrToRgb(ys, us, vs, n, dst): kornia's ycbcr_to_rgb of float32 planes in
 * float32 and its order: cb = u − 0.5, cr = v − 0.5, r = y + 1.403·cr,
 * g = (y − 0.714·cr) − 0.344·cb, b = y + 1.773·cb; each as toByte, RGB
 * interleaved at dst. 4 pixels a step; reads up to 3 floats past n, writes
 * up to 16 bytes past the pixels.
 */
function ycbcrToRgb(): Fn {
  const [ys, us, vs, n, dst] = [0, 1, 2, 3, 4];
  const [i, y, cb, cr, v, t] = [5, 6, 7, 8, 9, 10];
  return {
    name: 'ycbcrToRgb',
    params: [I32, I32, I32, I32, I32],
    locals: [I32, V128, V128, V128, V128, V128],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        at4(ys, i), v128load(), set(y),
        at4(us, i), v128load(), f32splat(0.5), f32x4sub, set(cb),
        at4(vs, i), v128load(), f32splat(0.5), f32x4sub, set(cr),
        get(dst),
        get(y), f32splat(1.403), get(cr), f32x4mul, f32x4add, set(v),
        toBytes4(v, t), i32x4splat,
        get(y), f32splat(0.714), get(cr), f32x4mul, f32x4sub, f32splat(0.344), get(cb), f32x4mul, f32x4sub, set(v),
        toBytes4(v, t), op.i32x4replace(1),
        get(y), f32splat(1.773), get(cb), f32x4mul, f32x4add, set(v),
        toBytes4(v, t), op.i32x4replace(2),
        set(t), get(t), get(t), shuffle([0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 12, 13, 14, 15]),
        v128store(),
        inc(dst, i32(12)),
        inc(i, i32(4)),
      ),
    ],
  };
}

/**
 * noisyBytes(src, noise, n, s, dst): ImageAddNoise's samples, 4 a step:
 * the byte of float32(b / 255 + float32(s · noise)) for the bytes b at src
 * and the float32 values at noise (b / 255 in float32 is correctly rounded,
 * as the reference's LoadImage values are), stored as bytes at dst. Reads
 * up to 3 bytes and floats past n, writes up to 3 bytes past it.
 */
function noisyBytes(): Fn {
  const [src, noise, n, s, dst] = [0, 1, 2, 3, 4];
  const [i, v, t] = [5, 6, 7];
  return {
    name: 'noisyBytes',
    params: [I32, I32, I32, F32, I32],
    locals: [I32, V128, V128],
    body: [
      i32(0), set(i),
      whileLt(i, n,
        get(src), get(i), add, bytes4ToF32, f32splat(255), op.f32x4div,
        get(s), f32x4splat, at4(noise, i), v128load(), f32x4mul,
        f32x4add, set(v),
        get(dst), get(i), add, toBytes4(v, t), store32(),
        inc(i, i32(4)),
      ),
    ],
  };
}

/** acc ← float32(acc + w·row) lane by lane where w ≠ 0 (acc kept where w is ±0), the sum in float64 as JavaScript's `Math.fround(acc + w * x)`; w and row are float32 vectors on locals. */
const tapF64 = (acc: number, w: number, row: number, lo: number): Code => [
  ...get(acc), ...f64x2promoteLow, ...get(w), ...f64x2promoteLow, ...get(row), ...f64x2promoteLow, ...f64x2mul, ...f64x2add, ...f32x4demoteZero, ...set(lo),
  ...get(acc), ...get(acc), ...highToLow, ...f64x2promoteLow,
  ...get(w), ...get(w), ...highToLow, ...f64x2promoteLow,
  ...get(row), ...get(row), ...highToLow, ...f64x2promoteLow,
  ...f64x2mul, ...f64x2add, ...f32x4demoteZero,
  ...set(row), ...get(lo), ...get(row), ...lowPairs,
  ...get(acc),
  ...get(w), ...f32splat(0), ...op.f32x4ne,
  ...op.v128bitselect, ...set(acc),
];

/**
 * float32(0 + w·x) on the vector on the stack (p = w·x in float32, x in
 * local x): the product exact in float64 rounds once to float32, so it is
 * the float32 product — but where it is exactly zero (x is ±0, w finite)
 * 0 + it is +0, while a product that only underflows float32 keeps its sign.
 */
const plusZeroProduct = (x: number, p: number): Code => [
  ...set(p), ...get(p), ...f32splat(0), ...f32x4add, ...get(p),
  ...get(x), ...f32splat(0), ...simd(0x41), // f32x4.eq
  ...op.v128bitselect,
];

/** f32x4 of float32(0 + w·x) where w ≠ 0, else +0 (locals w, x; p a scratch local): a first tap from an accumulator of 0. */
const firstTap = (w: number, x: number, p: number): Code => [
  ...get(w), ...get(x), ...f32x4mul, ...plusZeroProduct(x, p),
  ...v128zero,
  ...get(w), ...f32splat(0), ...op.f32x4ne,
  ...op.v128bitselect,
];

/**
 * planeH(src, stride, rows, xo, w, k, ow, owPad, dst): the horizontal pass
 * of a float-plane resampling (plane-loops' resamplePlane), 4 outputs a
 * step: for each of `rows` rows (float32 at src, `stride` bytes apart) and
 * output x, acc = float32(acc + w·src[…]) over its k ≥ 1 taps in order from
 * 0, skipping weights ±0, the sum in float64 (the first tap's in float32:
 * plusZeroProduct); the rows' ow outputs packed at dst. Tap tables are
 * tap-major: xo[t·owPad + x] (int32 byte offsets into the row) and
 * w[t·owPad + x] (float32; lanes past ow hold offset 0, weight 0). Writes up
 * to 3 floats past the last row.
 *
 * Two taps that read neighbouring samples (bilinear away from the right
 * edge: offsets o and o + 4 in all four lanes) are loaded as one 64-bit pair
 * a lane and split by two shuffles, instead of eight single-float gathers;
 * the arithmetic is the same.
 */
function planeH(): Fn {
  const [src, stride, rows, xo, w, k, ow, owPad, dst] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const [r, x, t, p, wd, stepT, acc, wv, v, lo, two, b, q] = [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21];
  const lane = (j: number): Code => [...get(src), ...get(p), ...load32(4 * j), ...add, ...f32load0, ...op.f32x4replace(j)];
  const gather: Code = [...v128zero, ...lane(0), ...lane(1), ...lane(2), ...lane(3), ...set(v)];
  const weights: Code = [...get(p), ...get(wd), ...add, ...v128load(), ...set(wv)];
  const tapAddress = (j: number): Code => [...get(src), ...get(p), ...load32(4 * j), ...add];
  // Both taps of the group's four outputs neighbours: tap 1's offsets are tap 0's plus 4.
  const adjacent: Code = [...get(p), ...get(stepT), ...add, ...v128load(), ...get(p), ...v128load(), ...i32(4), ...i32x4splat, ...i32x4add, ...i32x4eq, ...op.i32x4allTrue];
  const pairs: Code = [
    ...tapAddress(0), ...op.load64zero, ...set(q),
    ...tapAddress(1), ...get(q), ...op.load64lane(1), ...set(q),
    ...tapAddress(2), ...op.load64zero, ...set(b),
    ...tapAddress(3), ...get(b), ...op.load64lane(1), ...set(b),
    ...get(q), ...get(b), ...shuffle([0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27]), ...set(v),
    ...get(q), ...get(b), ...shuffle([4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31]), ...set(b),
    ...weights, ...firstTap(wv, v, lo), ...set(acc),
    ...get(p), ...get(stepT), ...add, ...get(wd), ...add, ...v128load(), ...set(wv),
    ...tapF64(acc, wv, b, lo),
  ];
  return {
    name: 'planeH',
    params: [I32, I32, I32, I32, I32, I32, I32, I32, I32],
    locals: [I32, I32, I32, I32, I32, I32, V128, V128, V128, V128, I32, V128, V128],
    body: [
      get(w), get(xo), [0x6b], set(wd),
      get(owPad), i32(2), shl, set(stepT),
      get(k), i32(2), [0x46], set(two), // i32.eq
      i32(0), set(r),
      whileLt(r, rows,
        i32(0), set(x),
        whileLt(x, ow,
          at4(xo, x), set(p),
          get(two), adjacent, [0x71], [0x04, 0x40], // i32.and; if
          pairs,
          [0x05], // else
          weights, gather, firstTap(wv, v, lo), set(acc),
          inc(p, get(stepT)),
          i32(1), set(t),
          whileLt(t, k,
            weights, gather,
            tapF64(acc, wv, v, lo),
            inc(p, get(stepT)),
            inc(t, i32(1)),
          ),
          [0x0b],
          at4(dst, x), get(acc), v128store(),
          inc(x, i32(4)),
        ),
        inc(src, get(stride)),
        inc(dst, [...get(ow), ...i32(2), ...shl]),
        inc(r, i32(1)),
      ),
    ],
  };
}

/**
 * planeV(band, oh, yo, yw, k, n, dst): the vertical pass of a float-plane
 * resampling: for each of oh output rows (n floats each, packed at dst),
 * acc = float32(acc + w·row[i]) over its k taps in order from 0, skipping
 * weights ±0 (a row without any is 0), the sum in float64 (the first tap's
 * in float32: plusZeroProduct); tap t of row y reads the float32 row
 * at band + yo[y·k + t] (byte offset) with weight yw[y·k + t]. A tap at a
 * time over the row, 4 samples a step. Reads up to 3 floats past each row,
 * writes up to 3 past the last.
 */
function planeV(): Fn {
  const [band, oh, yo, yw, k, n, dst] = [0, 1, 2, 3, 4, 5, 6];
  const [y, i, t, e, row, first, wf, w64, a, x, lo] = [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17];
  const half = (hi: boolean): Code => {
    const low = (l: number): Code => (hi ? [...get(l), ...get(l), ...highToLow, ...f64x2promoteLow] : [...get(l), ...f64x2promoteLow]);
    return [...low(a), ...get(w64), ...low(x), ...f64x2mul, ...f64x2add, ...f32x4demoteZero];
  };
  const each = (...body: Code[]): Code => [...i32(0), ...set(i), ...whileLt(i, n, ...body, inc(i, i32(4)))];
  return {
    name: 'planeV',
    params: [I32, I32, I32, I32, I32, I32, I32],
    locals: [I32, I32, I32, I32, I32, I32, F32, V128, V128, V128, V128],
    body: [
      i32(0), set(y),
      whileLt(y, oh,
        i32(1), set(first),
        get(y), get(k), mul, set(t),
        get(t), get(k), add, set(e),
        whileLt(t, e,
          block(
            at4(yw, t), f32load0, set(wf),
            get(wf), f32const(0), [0x5b], brIf(0), // f32.eq: a weight of ±0 is skipped
            get(band), at4(yo, t), load32(), add, set(row),
            get(first), [0x04, 0x40],
            each(at4(dst, i), get(wf), f32x4splat, at4(row, i), v128load(), set(x), get(x), f32x4mul, plusZeroProduct(x, lo), v128store()),
            i32(0), set(first),
            [0x05],
            get(wf), f32toF64, f64x2splat, set(w64),
            each(
              at4(dst, i), v128load(), set(a),
              at4(row, i), v128load(), set(x),
              at4(dst, i), half(false), set(lo), half(true), set(x), get(lo), get(x), lowPairs, v128store(),
            ),
            [0x0b],
          ),
          inc(t, i32(1)),
        ),
        get(first), [0x04, 0x40],
        each(at4(dst, i), v128zero, v128store()),
        [0x0b],
        inc(dst, [...get(n), ...i32(2), ...shl]),
        inc(y, i32(1)),
      ),
    ],
  };
}

/**
 * gatherRows(band, ro, oh, xo, ow, dst): nearest-neighbour rows of a float
 * plane: output row y, x is the float32 at band + ro[y] + xo[x] (byte
 * offsets) plus 0 (−0 becomes +0, as JavaScript's `v + 0`), rows of ow
 * floats packed at dst, 4 a step. Reads xo up to 3 past ow (pad with 0),
 * writes up to 3 floats past the last row.
 */
function gatherRows(): Fn {
  const [band, ro, oh, xo, ow, dst] = [0, 1, 2, 3, 4, 5];
  const [y, x, row] = [6, 7, 8];
  const lane = (j: number): Code => [...get(row), ...at4(xo, x), ...load32(4 * j), ...add, ...f32load0, ...op.f32x4replace(j)];
  return {
    name: 'gatherRows',
    params: [I32, I32, I32, I32, I32, I32],
    locals: [I32, I32, I32],
    body: [
      i32(0), set(y),
      whileLt(y, oh,
        get(band), at4(ro, y), load32(), add, set(row),
        i32(0), set(x),
        whileLt(x, ow,
          at4(dst, x),
          v128zero, lane(0), lane(1), lane(2), lane(3), f32splat(0), f32x4add,
          v128store(),
          inc(x, i32(4)),
        ),
        inc(dst, [...get(ow), ...i32(2), ...shl]),
        inc(y, i32(1)),
      ),
    ],
  };
}

/**
 * PorterDuffImageComposite's image and alpha of each mode (index in
 * image-loops' PD_MODE_NAMES), as its JavaScript evaluates them: s and d the
 * premultiplied samples, sa and da the alphas.
 */
const oneMinus = (a: Expr): Expr => ['-', 1, a];
const PD_IMAGE: Expr[] = [
  ['min', 1, ['max', 0, ['+', 's', 'd']]], // ADD
  0, // CLEAR
  ['+', ['+', ['*', oneMinus('da'), 's'], ['*', oneMinus('sa'), 'd']], ['min', 's', 'd']], // DARKEN
  'd', // DST
  ['+', ['*', 'sa', 'd'], ['*', oneMinus('da'), 's']], // DST_ATOP
  ['*', 'd', 'sa'], // DST_IN
  ['*', oneMinus('sa'), 'd'], // DST_OUT
  ['+', 'd', ['*', oneMinus('da'), 's']], // DST_OVER
  ['+', ['+', ['*', oneMinus('da'), 's'], ['*', oneMinus('sa'), 'd']], ['max', 's', 'd']], // LIGHTEN
  ['*', 's', 'd'], // MULTIPLY
  ['lt', ['*', 2, 'd'], 'da', ['*', ['*', 2, 's'], 'd'], ['-', ['*', 'sa', 'da'], ['*', ['*', 2, ['-', 'da', 's']], ['-', 'sa', 'd']]]], // OVERLAY
  ['-', ['+', 's', 'd'], ['*', 's', 'd']], // SCREEN
  's', // SRC
  ['+', ['*', 'da', 's'], ['*', oneMinus('sa'), 'd']], // SRC_ATOP
  ['*', 's', 'da'], // SRC_IN
  ['*', oneMinus('da'), 's'], // SRC_OUT
  ['+', 's', ['*', oneMinus('sa'), 'd']], // SRC_OVER
  ['+', ['*', oneMinus('da'), 's'], ['*', oneMinus('sa'), 'd']], // XOR
];
const UNION: Expr = ['-', ['+', 'sa', 'da'], ['*', 'sa', 'da']];
const PD_ALPHA: Expr[] = [
  ['min', 1, ['max', 0, ['+', 'sa', 'da']]], // ADD
  0, // CLEAR
  UNION, // DARKEN
  'da', // DST
  'sa', // DST_ATOP
  ['*', 'sa', 'da'], // DST_IN
  ['*', oneMinus('sa'), 'da'], // DST_OUT
  ['+', 'da', ['*', oneMinus('da'), 'sa']], // DST_OVER
  UNION, // LIGHTEN
  ['*', 'sa', 'da'], // MULTIPLY
  UNION, // OVERLAY
  UNION, // SCREEN
  'sa', // SRC
  'da', // SRC_ATOP
  ['*', 'sa', 'da'], // SRC_IN
  ['*', oneMinus('da'), 'sa'], // SRC_OUT
  ['+', 'sa', ['*', oneMinus('sa'), 'da']], // SRC_OVER
  ['+', ['*', oneMinus('da'), 'sa'], ['*', oneMinus('sa'), 'da']], // XOR
];

/** The largest float32 at or below 1e-5: for a float32 a, a > 1e-5 (in double) exactly when a > this. */
function belowThreshold(): number {
  const f = new Float32Array([1e-5]);
  if (f[0]! > 1e-5) new Int32Array(f.buffer)[0]! -= 1;
  return f[0]!;
}

function imageKernelFns(): Fn[] {
  const t = belowThreshold();
  return [
    ...PD_ALPHA.map((e, m) => pdAlpha(m, e)),
    ...PD_IMAGE.map((e, m) => pdImage(m, e, t)),
    spread(3), spread(4),
    rgbToYcbcr(), means(3), means(4), ycbcrToRgb(),
    planeH(), planeV(), gatherRows(), noisyBytes(),
  ];
}

/** The image kernels' exports (imageKernelFns, by name). */
export interface ImageKernels {
  /** pdAlpha[m](sm, dm, n, a1, a2, al, mk) */
  pdAlpha: Array<(sm: number, dm: number, n: number, a1: number, a2: number, al: number, mk: number) => void>;
  /** pdImage[m](sb, db, a1, a2, al, n, out) */
  pdImage: Array<(sb: number, db: number, a1: number, a2: number, al: number, n: number, out: number) => void>;
  spread3(src: number, n: number, dst: number): void;
  spread4(src: number, n: number, dst: number): void;
  rgbToYcbcr(src: number, n: number, yp: number, up: number, vp: number): void;
  means3(src: number, n: number, dst: number): void;
  means4(src: number, n: number, dst: number): void;
  ycbcrToRgb(ys: number, us: number, vs: number, n: number, dst: number): void;
  planeH(src: number, stride: number, rows: number, xo: number, w: number, k: number, ow: number, owPad: number, dst: number): void;
  planeV(band: number, oh: number, yo: number, yw: number, k: number, n: number, dst: number): void;
  gatherRows(band: number, ro: number, oh: number, xo: number, ow: number, dst: number): void;
  noisyBytes(src: number, noise: number, n: number, s: number, dst: number): void;
}

function imageKernelExports(e: Record<string, (...a: number[]) => void>): ImageKernels {
  const fn = (name: string) => e[name] as never;
  return {
    pdAlpha: PD_ALPHA.map((_, m) => fn(`pdAlpha${m}`)),
    pdImage: PD_IMAGE.map((_, m) => fn(`pdImage${m}`)),
    spread3: fn('spread3'),
    spread4: fn('spread4'),
    rgbToYcbcr: fn('rgbToYcbcr'),
    means3: fn('means3'),
    means4: fn('means4'),
    ycbcrToRgb: fn('ycbcrToRgb'),
    planeH: fn('planeH'),
    planeV: fn('planeV'),
    gatherRows: fn('gatherRows'),
    noisyBytes: fn('noisyBytes'),
  };
}

// ---- instances ----

export interface SimdKernels extends ImageKernels {
  /** The module's memory as bytes (a new view after every `reserve` that grew it). */
  u8: Uint8Array;
  i32: Int32Array;
  f32: Float32Array;
  /** Makes the memory at least `bytes` long. */
  reserve(bytes: number): void;
  lanczosH(src: number, xo: number, n: number, kk: number, k: number, ow: number, dst: number, c: number): void;
  lanczosV(offs: number, kk: number, m: number, dst: number, len: number): void;
  toF32(src: number, n: number, dst: number): void;
  convH(src: number, kern: number, K: number, c: number, n: number, dst: number): void;
  resH(src: number, xo: number, w: number, k: number, ow: number, dst: number, c: number): void;
  resH64(src: number, xo: number, w: number, k: number, ow: number, dst: number, c: number): void;
  resV64(offs: number, w: number, K: number, dst: number, len: number, steps: number): void;
  convV(offs: number, kern: number, K: number, dst: number, len: number, p: number, q: number, x: number): void;
  intH(src: number, xo: number, n: number, kk: number, k: number, ow: number, dst: number, c: number): void;
  intV(offs: number, kk: number, m: number, dst: number, len: number, bias: number, shift: number): void;
  lut2(a: number, c: number, table: number, out: number, n: number): void;
  crossRow(up: number, mid: number, down: number, dst: number, n: number, max: number): void;
  maskBytes(src: number, n: number, dst: number): void;
  colorMask3(src: number, n: number, rgb: number, dst: number): void;
  colorMask4(src: number, n: number, rgb: number, dst: number): void;
  invert(src: number, n: number, dst: number): void;
  clampMask(src: number, n: number, dst: number): void;
  addClamp(a: number, b: number, n: number, dst: number): void;
  subClamp(a: number, b: number, n: number, dst: number): void;
  mulClamp(a: number, b: number, n: number, dst: number): void;
  andMask(a: number, b: number, n: number, dst: number): void;
  orMask(a: number, b: number, n: number, dst: number): void;
  xorMask(a: number, b: number, n: number, dst: number): void;
  joinAlpha3(rgb: number, a: number, n: number, dst: number): void;
  splitAlpha4(src: number, n: number, rgb: number, mask: number): void;
  // mask row kernels
  unitBytes(src: number, n: number, step: number, sel: number, flip: number, dst: number): void;
  thresholdMask(src: number, n: number, t: number, dst: number): void;
  scale64(p: number, rates: number, rstep: number, n: number): void;
  blendPx3(src: number, dst: number, mask: number, n: number, out: number): void;
  blendPx4(src: number, dst: number, mask: number, n: number, out: number): void;
}

let kernels: SimdKernels | undefined | null = null;

/**
 * The kernels' memory from the start (32 MiB): the largest working set the
 * nodes size for (GrowMask's rows, 16 MiB; a group of whole planes, 4 MiB
 * each way, with its tap tables), mapped but not touched until a kernel
 * uses it. Growing a WebAssembly memory detaches its ArrayBuffer, and the
 * first detach in a thread invalidates V8's ArrayBufferDetaching protector:
 * every optimised function of the thread that reads a typed array is thrown
 * away at once (about 40 after the image bench's first 50 rows, compiled
 * again over the next prompts), and what is optimised afterwards checks for
 * detaching on every access (3–4 % more time over the whole image bench).
 * Only a working set beyond this grows it.
 */
const INITIAL_PAGES = 512;

/**
 * Lays out regions of the kernels' memory: each of `sizes` bytes plus 64 of
 * padding (the kernels' overrun), 16-byte aligned; returns their offsets and
 * reserves the total (the typed-array views change when it grows).
 */
export function regions(k: SimdKernels, sizes: number[]): number[] {
  const at: number[] = [];
  let end = 0;
  for (const s of sizes) {
    at.push(end);
    end += Math.ceil((s + 64) / 16) * 16;
  }
  k.reserve(end);
  return at;
}

/** This thread's instance of the SIMD kernels, made on first use; undefined where they cannot run. */
export function simdKernels(): SimdKernels | undefined {
  if (kernels !== null) return kernels;
  kernels = undefined;
  if (process.env.WORKFLOW_IMAGE_KERNELS === 'js') return undefined;
  try {
    const bytes = encodeModule([...imageKernelFns(), lanczosH(), lanczosV(), toF32(), convH(), resH(), resH64(), resV64(), convV(), intH(), intV(), lut2(), crossRow(), maskBytes(),
      colorMask(3), colorMask(4), invert(), clampMask(), combineClamp('addClamp', 0xe4), combineClamp('subClamp', 0xe5), combineClamp('mulClamp', 0xe6),
      logicMask('andMask', v128and), logicMask('orMask', v128or), logicMask('xorMask', simd(0x51)), joinAlpha3(), splitAlpha4(),
      unitBytes(), thresholdMask(), scale64(), blendPx(3), blendPx(4)]);
    if (!WebAssembly.validate(bytes)) return undefined;
    const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES });
    const inst = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { mem: memory } });
    const e = inst.exports as unknown as SimdKernels;
    const k: SimdKernels = {
      ...imageKernelExports(inst.exports as Record<string, (...a: number[]) => void>),
      u8: new Uint8Array(memory.buffer),
      i32: new Int32Array(memory.buffer),
      f32: new Float32Array(memory.buffer),
      reserve(n: number) {
        if (n <= memory.buffer.byteLength) return;
        memory.grow(Math.ceil((n - memory.buffer.byteLength) / 65536));
        k.u8 = new Uint8Array(memory.buffer);
        k.i32 = new Int32Array(memory.buffer);
        k.f32 = new Float32Array(memory.buffer);
      },
      lanczosH: e.lanczosH,
      lanczosV: e.lanczosV,
      toF32: e.toF32,
      convH: e.convH,
      resH: e.resH,
      resH64: e.resH64,
      resV64: e.resV64,
      convV: e.convV,
      intH: e.intH,
      intV: e.intV,
      lut2: e.lut2,
      crossRow: e.crossRow,
      maskBytes: e.maskBytes,
      colorMask3: e.colorMask3,
      colorMask4: e.colorMask4,
      invert: e.invert,
      clampMask: e.clampMask,
      addClamp: e.addClamp,
      subClamp: e.subClamp,
      mulClamp: e.mulClamp,
      andMask: e.andMask,
      orMask: e.orMask,
      xorMask: e.xorMask,
      joinAlpha3: e.joinAlpha3,
      splitAlpha4: e.splitAlpha4,
      unitBytes: e.unitBytes,
      thresholdMask: e.thresholdMask,
      scale64: e.scale64,
      blendPx3: e.blendPx3,
      blendPx4: e.blendPx4,
    };
    kernels = k;
  } catch {
    kernels = undefined;
  }
  return kernels;
}
