import { simdKernels, type SimdKernels } from './simd-kernels.ts';

/**
 * The per-sample loops of the mask nodes (ImageColorToMask, InvertMask,
 * MaskComposite, JoinImageWithAlpha, SplitImageWithAlpha): in WebAssembly
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

function kernels(): SimdKernels | undefined {
  const k = simdKernels();
  k?.reserve(3 * REGION);
  return k;
}

/** A plain Uint8Array over a Buffer's bytes (Buffers made by sharp and by JavaScript have different hidden classes). */
function bytesOf(b: Uint8Array): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/** ImageColorToMask: 1 where a pixel's R, G, B bytes are those of `color` (0xRRGGBB), else 0. */
export function colorMask(pixels: Uint8Array, n: number, channels: 3 | 4, color: number, simd = true): Float32Array {
  const out = new Float32Array(n);
  // A colour outside 0..0xffffff (a pack's call; the input's range keeps prompts from it) matches no pixel.
  if (!Number.isInteger(color) || color < 0 || color > 0xffffff) return out;
  const r = (color >> 16) & 255;
  const g = (color >> 8) & 255;
  const b = color & 255;
  const d = bytesOf(pixels);
  const k = simd ? kernels() : undefined;
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
  const out = new Float32Array(n);
  const k = simd ? kernels() : undefined;
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
  const o = new Float32Array(dw * dh);
  const k = simd ? kernels() : undefined;
  if (k) {
    // Any other operation is xor, as in the JavaScript loops below.
    const combine = op === 'add' ? k.addClamp : op === 'subtract' ? k.subClamp : op === 'multiply' ? k.mulClamp : op === 'and' ? k.andMask : op === 'or' ? k.orMask : k.xorMask;
    // Regions: the destination's rows at A, the source's row at B, the output rows at C (byte addresses).
    const A = 0;
    const B = REGION;
    const C = 2 * REGION;
    const rows = Math.max(1, Math.floor(CHUNK / dw));
    const f32 = k.f32;
    for (let r0 = 0; r0 < dh; r0 += rows) {
      const r1 = Math.min(dh, r0 + rows);
      f32.set(dst.subarray(r0 * dw, r1 * dw), A / 4);
      for (let yy = r0; yy < r1; yy++) {
        const a = A + (yy - r0) * dw * 4;
        const c = C + (yy - r0) * dw * 4;
        if (yy < y || yy >= bottom || right <= x) {
          k.clampMask(a, dw, c);
          continue;
        }
        const srow = (yy - y) * sw - x;
        f32.set(src.subarray(srow + x, srow + right), B / 4);
        // In this order: each call's overrun (up to 3 floats) is overwritten by the next call's samples.
        k.clampMask(a, x, c);
        combine(a + x * 4, B, right - x, c + x * 4);
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
