import { regions, simdKernels } from './simd-kernels.ts';

/**
 * The per-sample loops of PorterDuffImageComposite and of ImageRGBToYUV /
 * ImageYUVToRGB (kornia's YCbCr): in WebAssembly SIMD where it runs
 * (simd-kernels.ts' image kernels), a chunk of pixels at a time copied
 * through the kernels' memory, else in JavaScript. Both give the same bytes
 * (and mask floats): typed-array loops ran at 20–50 ns a sample here, several
 * times the reference's vectorised torch.
 *
 * Every function returns new arrays; inputs are only read. `simd` false
 * takes the JavaScript loops (the tests compare both).
 */

const f32 = Math.fround;

/** A plain Uint8Array over a Buffer's bytes (Buffers made by sharp and by JavaScript have different hidden classes). */
const bytesOf = (b: Uint8Array) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

/** image-types' toByte, kept local so that the hot loops below inline it. */
const byteOf = (v: number) => (v <= 0 ? 0 : v >= 1 ? 255 : Math.round(v * 255));

/** byte / 255 as float32, the reference's LoadImage value of each byte. */
const UNIT = Float32Array.from({ length: 256 }, (_, v) => v / 255);
/** float32 c · (byte / 255) for each byte: the reference's per-channel products, made once. */
const scaledUnits = (c: number) => Float32Array.from(UNIT, (u) => f32(f32(c) * u));
const Y_R = scaledUnits(0.299);
const Y_G = scaledUnits(0.587);
const Y_B = scaledUnits(0.114);

// ---- PorterDuffImageComposite ----

export const PORTER_DUFF_MODES = ['ADD', 'CLEAR', 'DARKEN', 'DST', 'DST_ATOP', 'DST_IN', 'DST_OUT', 'DST_OVER', 'LIGHTEN', 'MULTIPLY', 'OVERLAY', 'SCREEN', 'SRC', 'SRC_ATOP', 'SRC_IN', 'SRC_OUT', 'SRC_OVER', 'XOR'] as const;

/**
 * porter_duff_composite's image for one premultiplied sample (alphas are
 * 1 − mask), mode by its index in PORTER_DUFF_MODES. One function switching
 * on a small integer, so that the pixel loop's call stays monomorphic and is
 * inlined whatever the mode (a function per mode made the loop megamorphic:
 * three times slower from the second mode a thread ran). simd-kernels.ts'
 * PD_IMAGE writes the same expressions for the SIMD kernels.
 */
function pdImage(m: number, s: number, sa: number, d: number, da: number): number {
  switch (m) {
    case 0: // ADD
      return Math.min(1, Math.max(0, s + d));
    case 1: // CLEAR
      return 0;
    case 2: // DARKEN
      return (1 - da) * s + (1 - sa) * d + Math.min(s, d);
    case 3: // DST
      return d;
    case 4: // DST_ATOP
      return sa * d + (1 - da) * s;
    case 5: // DST_IN
      return d * sa;
    case 6: // DST_OUT
      return (1 - sa) * d;
    case 7: // DST_OVER
      return d + (1 - da) * s;
    case 8: // LIGHTEN
      return (1 - da) * s + (1 - sa) * d + Math.max(s, d);
    case 9: // MULTIPLY
      return s * d;
    case 10: // OVERLAY
      return 2 * d < da ? 2 * s * d : sa * da - 2 * (da - s) * (sa - d);
    case 11: // SCREEN
      return s + d - s * d;
    case 12: // SRC
      return s;
    case 13: // SRC_ATOP
      return da * s + (1 - sa) * d;
    case 14: // SRC_IN
      return s * da;
    case 15: // SRC_OUT
      return (1 - da) * s;
    case 16: // SRC_OVER
      return s + (1 - sa) * d;
    default: // XOR
      return (1 - da) * s + (1 - sa) * d;
  }
}

/** porter_duff_composite's alpha, from the two alphas alone (simd-kernels.ts' PD_ALPHA). */
function pdAlpha(m: number, sa: number, da: number): number {
  switch (m) {
    case 0: // ADD
      return Math.min(1, Math.max(0, sa + da));
    case 1: // CLEAR
      return 0;
    case 3: // DST
      return da;
    case 4: // DST_ATOP
    case 12: // SRC
      return sa;
    case 5: // DST_IN
    case 9: // MULTIPLY
    case 14: // SRC_IN
      return sa * da;
    case 6: // DST_OUT
      return (1 - sa) * da;
    case 7: // DST_OVER
      return da + (1 - da) * sa;
    case 13: // SRC_ATOP
      return da;
    case 15: // SRC_OUT
      return (1 - da) * sa;
    case 16: // SRC_OVER
      return sa + (1 - sa) * da;
    case 17: // XOR
      return (1 - da) * sa + (1 - sa) * da;
    default: // DARKEN, LIGHTEN, OVERLAY, SCREEN
      return sa + da - sa * da;
  }
}

/** Pixels a chunk of the SIMD path: its spread alphas (a float a sample, up to 4 a pixel) are 64 KiB each. */
const PD_CHUNK = 4096;

/**
 * porter_duff_composite of one frame pair, mode index `m`: source and
 * destination bytes (`c` a pixel) premultiplied by their alphas 1 − mask,
 * combined by the mode, divided by the mode's alpha where it is above 1e-5
 * (else 0), as bytes; and 1 − alpha as the output mask.
 */
export function porterDuffPixels(m: number, source: Uint8Array, destination: Uint8Array, sourceMask: Float32Array, destinationMask: Float32Array, px: number, c: 3 | 4, simd = true): { image: Buffer; mask: Float32Array } {
  const out = Buffer.allocUnsafe(px * c);
  const ob = bytesOf(out);
  const outMask = new Float32Array(px);
  const sd = bytesOf(source);
  const dd = bytesOf(destination);
  const k = simd ? simdKernels() : undefined;
  if (k) {
    const P = PD_CHUNK;
    const [SB, DB, SM, DM, A1, A2, AL, MK, A1E, A2E, ALE, OUT] = regions(k, [4 * P, 4 * P, 4 * P, 4 * P, 4 * P, 4 * P, 4 * P, 4 * P, 16 * P, 16 * P, 16 * P, 4 * P]) as [number, number, number, number, number, number, number, number, number, number, number, number];
    const spread = c === 3 ? k.spread3 : k.spread4;
    const alphaOf = k.pdAlpha[m]!;
    const imageOf = k.pdImage[m]!;
    for (let p0 = 0; p0 < px; p0 += P) {
      const n = Math.min(P, px - p0);
      const u8 = k.u8;
      const fl = k.f32;
      u8.set(sd.subarray(p0 * c, (p0 + n) * c), SB);
      u8.set(dd.subarray(p0 * c, (p0 + n) * c), DB);
      fl.set(sourceMask.subarray(p0, p0 + n), SM / 4);
      fl.set(destinationMask.subarray(p0, p0 + n), DM / 4);
      alphaOf(SM, DM, n, A1, A2, AL, MK);
      spread(A1, n, A1E);
      spread(A2, n, A2E);
      spread(AL, n, ALE);
      imageOf(SB, DB, A1E, A2E, ALE, n * c, OUT);
      ob.set(u8.subarray(OUT, OUT + n * c), p0 * c);
      outMask.set(fl.subarray(MK / 4, MK / 4 + n), p0);
    }
    return { image: out, mask: outMask };
  }
  for (let p = 0, o = 0; p < px; p++) {
    const a1 = f32(1 - sourceMask[p]!);
    const a2 = f32(1 - destinationMask[p]!);
    const alpha = f32(pdAlpha(m, a1, a2));
    for (let ch = 0; ch < c; ch++, o++) {
      const v = alpha > 1e-5 ? f32(f32(pdImage(m, f32(UNIT[sd[o]!]! * a1), a1, f32(UNIT[dd[o]!]! * a2), a2)) / alpha) : 0;
      ob[o] = byteOf(v);
    }
    outMask[p] = f32(1 - alpha);
  }
  return { image: out, mask: outMask };
}

// ---- kornia's YCbCr ----

/** Pixels a chunk of the SIMD path. */
const YUV_CHUNK = 8192;

/** kornia.color.rgb_to_ycbcr of n RGB pixels: Y, Cb, Cr each as the bytes of a grey RGB frame. */
export function rgbToYcbcrBytes(pixels: Uint8Array, n: number, simd = true): [Buffer, Buffer, Buffer] {
  const src = bytesOf(pixels);
  const planes = [Buffer.allocUnsafe(n * 3), Buffer.allocUnsafe(n * 3), Buffer.allocUnsafe(n * 3)] as [Buffer, Buffer, Buffer];
  const [yp, up, vp] = planes.map(bytesOf) as [Uint8Array, Uint8Array, Uint8Array];
  const k = simd ? simdKernels() : undefined;
  if (k) {
    const P = YUV_CHUNK;
    const [S, Y, U, V] = regions(k, [3 * P, 3 * P, 3 * P, 3 * P]) as [number, number, number, number];
    for (let p0 = 0; p0 < n; p0 += P) {
      const m = Math.min(P, n - p0);
      const u8 = k.u8;
      u8.set(src.subarray(p0 * 3, (p0 + m) * 3), S);
      k.rgbToYcbcr(S, m, Y, U, V);
      yp.set(u8.subarray(Y, Y + 3 * m), p0 * 3);
      up.set(u8.subarray(U, U + 3 * m), p0 * 3);
      vp.set(u8.subarray(V, V + 3 * m), p0 * 3);
    }
    return planes;
  }
  const kb = f32(0.564);
  const kr = f32(0.713);
  for (let i = 0, o = 0; i < n; i++, o += 3) {
    const r = src[o]!;
    const b = src[o + 2]!;
    // float32 throughout, in kornia's order: y = (0.299 r + 0.587 g) + 0.114 b, cb = (b − y) · 0.564 + 0.5, cr = (r − y) · 0.713 + 0.5.
    const y = f32(f32(Y_R[r]! + Y_G[src[o + 1]!]!) + Y_B[b]!);
    const cb = f32(f32(f32(UNIT[b]! - y) * kb) + 0.5);
    const cr = f32(f32(f32(UNIT[r]! - y) * kr) + 0.5);
    const yv = byteOf(y);
    const uv = byteOf(cb);
    const vv = byteOf(cr);
    yp[o] = yp[o + 1] = yp[o + 2] = yv;
    up[o] = up[o + 1] = up[o + 2] = uv;
    vp[o] = vp[o + 1] = vp[o + 2] = vv;
  }
  return planes;
}

/** The float32 channel means of n pixels of c bytes (torch.mean over the last dimension: a float32 running sum over the channels, then / c). */
function channelMeans(bytes: Uint8Array, n: number, c: number): Float32Array {
  const d = bytesOf(bytes);
  const out = new Float32Array(n);
  for (let i = 0, o = 0; i < n; i++, o += c) {
    let s = UNIT[d[o]!]!;
    for (let k = 1; k < c; k++) s = f32(s + UNIT[d[o + k]!]!);
    out[i] = s / c;
  }
  return out;
}

/** A frame's bytes and channels, for ycbcrToRgbBytes. */
export interface Channels {
  data: Uint8Array;
  channels: 3 | 4;
}

/** ImageYUVToRGB on one frame of n pixels: the channel means of Y, U and V through kornia.color.ycbcr_to_rgb, as RGB bytes. */
export function ycbcrToRgbBytes(Y: Channels, U: Channels, V: Channels, n: number, simd = true): Buffer {
  const out = Buffer.allocUnsafe(n * 3);
  const ob = bytesOf(out);
  const k = simd ? simdKernels() : undefined;
  if (k) {
    const P = YUV_CHUNK;
    const [SY, SU, SV, MY, MU, MV, O] = regions(k, [4 * P, 4 * P, 4 * P, 4 * P, 4 * P, 4 * P, 3 * P]) as [number, number, number, number, number, number, number];
    const planes = [
      [Y, SY, MY],
      [U, SU, MU],
      [V, SV, MV],
    ] as const;
    for (let p0 = 0; p0 < n; p0 += P) {
      const m = Math.min(P, n - p0);
      for (const [f, S, M] of planes) {
        const c = f.channels;
        k.u8.set(bytesOf(f.data).subarray(p0 * c, (p0 + m) * c), S);
        if (c === 3) k.means3(S, m, M);
        else k.means4(S, m, M);
      }
      k.ycbcrToRgb(MY, MU, MV, m, O);
      ob.set(k.u8.subarray(O, O + 3 * m), p0 * 3);
    }
    return out;
  }
  const ys = channelMeans(Y.data, n, Y.channels);
  const us = channelMeans(U.data, n, U.channels);
  const vs = channelMeans(V.data, n, V.channels);
  const kr = f32(1.403);
  const kgr = f32(0.714);
  const kgb = f32(0.344);
  const kb = f32(1.773);
  for (let i = 0, o = 0; i < n; i++, o += 3) {
    const y = ys[i]!;
    const cb = f32(us[i]! - 0.5);
    const cr = f32(vs[i]! - 0.5);
    ob[o] = byteOf(f32(y + f32(kr * cr)));
    ob[o + 1] = byteOf(f32(f32(y - f32(kgr * cr)) - f32(kgb * cb)));
    ob[o + 2] = byteOf(f32(y + f32(kb * cb)));
  }
  return out;
}

// ---- ImageAddNoise ----

/**
 * out[at + i] = the byte of float32(src[i] / 255 + float32(s · noise[i]))
 * for i < n: ImageAddNoise's samples (clamped to 0..1 by the byte).
 */
export function addNoiseBytes(src: Uint8Array, noise: Float32Array, n: number, strength: number, out: Uint8Array, at: number, simd = true): void {
  const s = f32(strength);
  const k = simd ? simdKernels() : undefined;
  if (k) {
    const [S, N, D] = regions(k, [n, 4 * n, n]) as [number, number, number];
    k.u8.set(bytesOf(src).subarray(0, n), S);
    k.f32.set(noise.subarray(0, n), N / 4);
    k.noisyBytes(S, N, n, s, D);
    out.set(k.u8.subarray(D, D + n), at);
    return;
  }
  const b = bytesOf(src);
  for (let i = 0; i < n; i++) out[at + i] = byteOf(f32(UNIT[b[i]!]! + f32(s * noise[i]!)));
}
