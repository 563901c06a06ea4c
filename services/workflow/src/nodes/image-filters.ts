import sharp from '../files/sharp.ts';
import type { NodeContext, NodeDefinition } from './api.ts';
import { alphaFix, checkSize, clampByte, Frame, ImageBatch, toByte, withChannels } from './image-types.ts';
import { takesPendingImages } from './pending-images.ts';
import { onnxKernelsAvailable, onnxSeparableConv } from './image-kernels.ts';
import { resizeFrame } from './resample.ts';
import { simdKernels } from './simd-kernels.ts';
import { combo, IMAGE_IN, v3 } from './schema.ts';

const POST = { category: 'image/postprocessing' };

/** Index into 0..n-1 reflected at the edges without repeating them (torch's 'reflect' padding). */
function reflect(i: number, n: number): number {
  if (n === 1) return 0;
  const period = 2 * (n - 1);
  i = ((i % period) + period) % period;
  return i < n ? i : period - i;
}

/** The reference's gaussian_kernel, one axis: samples of exp(-x²/2σ²) on linspace(-1, 1, size), normalised. */
export function gaussianKernel1d(size: number, sigma: number): Float64Array {
  const k = new Float64Array(size);
  let sum = 0;
  for (let i = 0; i < size; i++) {
    const x = size === 1 ? -1 : -1 + (2 * i) / (size - 1);
    k[i] = Math.exp(-(x * x) / (2 * sigma * sigma));
    sum += k[i]!;
  }
  for (let i = 0; i < size; i++) k[i]! /= sum;
  return k;
}

/** Separable convolution with reflect padding, in float (values stay on the 0..255 scale). */
function convolveSeparable(f: Frame, k: Float64Array, ctx: NodeContext): Float32Array {
  const { width: w, height: h, channels: c, data } = f;
  const r = (k.length - 1) / 2;
  const xs = Int32Array.from({ length: w + 2 * r }, (_, i) => reflect(i - r, w) * c);
  const ys = Int32Array.from({ length: h + 2 * r }, (_, i) => reflect(i - r, h));
  const tmp = new Float32Array(w * h * c);
  for (let y = 0; y < h; y++) {
    const row = y * w * c;
    for (let x = 0; x < w; x++) {
      const o = row + x * c;
      for (let t = 0; t < k.length; t++) {
        const wt = k[t]!;
        const s = row + xs[x + t]!;
        for (let ch = 0; ch < c; ch++) tmp[o + ch]! += wt * data[s + ch]!;
      }
    }
    if ((y & 127) === 127) ctx.checkInterrupt();
  }
  const out = new Float32Array(w * h * c);
  const rowLen = w * c;
  for (let y = 0; y < h; y++) {
    const o = y * rowLen;
    for (let t = 0; t < k.length; t++) {
      const wt = k[t]!;
      const s = ys[y + t]! * rowLen;
      for (let i = 0; i < rowLen; i++) out[o + i]! += wt * tmp[s + i]!;
    }
    if ((y & 127) === 127) ctx.checkInterrupt();
  }
  return out;
}

/**
 * The reference's separable convolution with reflect padding, as p·x + q·conv
 * (blur: p = 0, q = 1), in WebAssembly SIMD float32 (simd-kernels.ts): each
 * source row reflect-padded by r pixels and convolved horizontally into a
 * ring of 2r + 1 float rows (a row's reflected neighbours above and below are
 * always among the last 2r + 1 made), then each output row as the weighted
 * sum of its rows, rounded half up to bytes. torch's float32 conv2d sums the
 * same products in another order: within a rounding step of it. Undefined
 * where the kernels cannot run or the radius is not below both sides (as
 * torch's reflect padding needs).
 */
function simdConvolution(f: Frame, k1d: Float64Array, p: number, q: number, ctx: NodeContext): Buffer | undefined {
  const k = simdKernels();
  const { width: w, height: h, channels: c } = f;
  const K = k1d.length;
  const r = (K - 1) / 2;
  if (!k || r >= w || r >= h) return undefined;
  const src = bytes(f.data);
  const rowLen = w * c;
  const align = (n: number) => (n + 15) & ~15;
  const kernAt = 0;
  const offsAt = K * 16;
  const padAt = offsAt + align(K * 4);
  const padF32At = padAt + align((w + 2 * r) * c + 16);
  const ringStride = align(rowLen * 4 + 64);
  const ringAt = padF32At + align((w + 2 * r) * c * 4 + 64);
  const xAt = ringAt + K * ringStride;
  const outAt = xAt + align(rowLen + 16);
  k.reserve(outAt + align(rowLen + 16));
  const { u8, i32, f32 } = k;
  for (let t = 0; t < K; t++) f32.fill(k1d[t]!, (kernAt >> 2) + t * 4, (kernAt >> 2) + t * 4 + 4);
  const out = Buffer.allocUnsafe(h * rowLen);
  const slot = (row: number) => ringAt + (row % K) * ringStride;
  let next = 0;
  for (let y = 0; y < h; y++) {
    for (const last = Math.min(h - 1, y + r); next <= last; next++) {
      const from = next * rowLen;
      u8.set(src.subarray(from, from + rowLen), padAt + r * c);
      for (let j = 1; j <= r; j++) {
        u8.copyWithin(padAt + (r - j) * c, padAt + (r + j) * c, padAt + (r + j + 1) * c);
        u8.copyWithin(padAt + (r + w - 1 + j) * c, padAt + (r + w - 1 - j) * c, padAt + (r + w - j) * c);
      }
      k.toF32(padAt, (w + 2 * r) * c, padF32At);
      k.convH(padF32At, kernAt, K, c, rowLen, slot(next));
    }
    for (let t = 0; t < K; t++) i32[(offsAt >> 2) + t] = slot(reflect(y - r + t, h));
    if (p !== 0) u8.set(src.subarray(y * rowLen, (y + 1) * rowLen), xAt);
    k.convV(offsAt, kernAt, K, outAt, rowLen, p, q, xAt);
    out.set(u8.subarray(outAt, outAt + rowLen), y * rowLen);
    if ((y & 127) === 127) ctx.checkInterrupt();
  }
  return out;
}

/** Largest kernel side run as one libvips convolution (its cost grows with the square of the side). */
const SHARP_KERNEL_MAX = 11;

/**
 * The torch (reflect-padded) 2-D convolution of frame pixels at chosen
 * places: `at(x, y, out, o)` writes the channels of (x, y) as bytes into `out`
 * from `o`. Reflected indices are tabled once per frame.
 */
function reflectConvolver(f: Frame, kernel2d: number[], size: number) {
  const r = (size - 1) / 2;
  const { width: w, height: h, channels: c } = f;
  const data = bytes(f.data);
  const xs = Int32Array.from({ length: w + 2 * r }, (_, i) => reflect(i - r, w) * c);
  const ys = Int32Array.from({ length: h + 2 * r }, (_, i) => reflect(i - r, h) * w * c);
  const k = Float64Array.from(kernel2d);
  return (x: number, y: number, out: Uint8Array, o: number): void => {
    for (let ch = 0; ch < c; ch++) {
      let acc = 0;
      for (let ky = 0; ky < size; ky++) {
        const row = ys[y + ky]! + ch;
        for (let kx = 0; kx < size; kx++) acc += k[ky * size + kx]! * data[row + xs[x + kx]!]!;
      }
      out[o + ch] = clampByte(acc);
    }
  };
}

/** A plain Uint8Array view of a Buffer (sharp's Buffers and JavaScript's have different hidden classes). */
function bytes(b: Buffer): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.length);
}

/** Calls `fn` for every pixel within `r` of an edge (each once). */
function forEachBorderPixel(w: number, h: number, r: number, fn: (x: number, y: number) => void): void {
  for (let y = 0; y < h; y++) {
    if (y < r || y >= h - r) for (let x = 0; x < w; x++) fn(x, y);
    else
      for (let x = 0; x < Math.min(r, w); x++) {
        fn(x, y);
        if (w - 1 - x >= r) fn(w - 1 - x, y);
      }
  }
}

/** libvips' convolution in float, rounded to bytes (its final cast truncates: +0.5 makes it round). */
function sharpConvolution(f: Frame, kernel2d: number[], size: number) {
  return f.pipeline().convolve({ width: size, height: size, kernel: kernel2d, scale: 1 }).linear(1, 0.5);
}

/**
 * A 2-D convolution through libvips (sharp.convolve), in float and rounded
 * to bytes. libvips extends edges by copying them where torch reflects, so
 * the outermost `r` rows and columns are recomputed here with reflection;
 * the interior needs no padded copy. Only for RGB frames: sharp premultiplies
 * alpha.
 */
async function convolveSharp(f: Frame, kernel2d: number[], size: number): Promise<Buffer> {
  const out = await sharpConvolution(f, kernel2d, size).raw().toBuffer();
  const at = reflectConvolver(f, kernel2d, size);
  const ov = bytes(out);
  forEachBorderPixel(f.width, f.height, (size - 1) / 2, (x, y) => at(x, y, ov, (y * f.width + x) * f.channels));
  return out;
}

/**
 * The same convolution as a pending frame (see Frame): libvips runs it when
 * the pixels are used, in the consumer's pipeline (SaveImage encodes while
 * it convolves). libvips has no reflect edge mode and sharp no step after
 * the convolution that could paste the torch border in, so the border is
 * corrected with a bitwise XOR against an image that is zero except on the
 * border, where it holds (libvips' value XOR torch's value). libvips' values
 * there come from convolving bands `2r + 1` wide along each edge, where each
 * border pixel has the same neighbourhood and edge as in the whole image; so
 * the pixels are bit for bit those of convolveSharp. The kernel must be non-negative (values stay in
 * 0..255.5, so the XOR sees the bytes the cast would give).
 */
async function pendingConvolution(f: Frame, kernel2d: number[], size: number): Promise<Frame> {
  const r = (size - 1) / 2;
  const { width: w, height: h, channels: c } = f;
  const data = await f.materialise();
  // Top and bottom bands stacked in one image, left and right bands side by side in another: each band keeps its image edge.
  const band = 2 * r + 1;
  const rows = Buffer.allocUnsafe(w * 2 * band * c);
  data.copy(rows, 0, 0, w * band * c);
  data.copy(rows, w * band * c, (h - band) * w * c);
  const cols = Buffer.allocUnsafe(2 * band * h * c);
  for (let y = 0; y < h; y++) {
    data.copy(cols, y * 2 * band * c, y * w * c, (y * w + band) * c);
    data.copy(cols, (y * 2 + 1) * band * c, ((y + 1) * w - band) * c, (y + 1) * w * c);
  }
  const [rowsOut, colsOut] = await Promise.all([
    sharpConvolution(new Frame(w, 2 * band, c, rows), kernel2d, size).raw().toBuffer(),
    sharpConvolution(new Frame(2 * band, h, c, cols), kernel2d, size).raw().toBuffer(),
  ]);
  const xor = Buffer.alloc(w * h * c);
  const xv = bytes(xor);
  const rowsV = bytes(rowsOut);
  const colsV = bytes(colsOut);
  const torchAt = reflectConvolver(f, kernel2d, size);
  let differs = false;
  forEachBorderPixel(w, h, r, (x, y) => {
    const o = (y * w + x) * c;
    torchAt(x, y, xv, o);
    // Where libvips' value of (x, y) is in the band images.
    let vips = colsV;
    let at: number;
    if (y < r) {
      vips = rowsV;
      at = (y * w + x) * c;
    } else if (y >= h - r) {
      vips = rowsV;
      at = ((y - h + 2 * band) * w + x) * c;
    } else at = (y * 2 * band + (x < r ? x : x - w + 2 * band)) * c;
    for (let ch = 0; ch < c; ch++) {
      const v = xv[o + ch]! ^ vips[at + ch]!;
      xv[o + ch] = v;
      if (v !== 0) differs = true;
    }
  });
  const raw = { raw: { width: w, height: h, channels: c } };
  return new Frame(w, h, c, {
    pipeline: () => {
      const p = sharpConvolution(f, kernel2d, size);
      return differs ? p.boolean(xor, 'eor', raw) : p;
    },
  });
}

function outer(k: Float64Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < k.length; i++) for (let j = 0; j < k.length; j++) out.push(k[i]! * k[j]!);
  return out;
}

/**
 * The reference's Gaussian as libvips' own separable Gaussian blur
 * (vips_gaussblur through sharp.blur, float precision): its mask
 * exp(−x²/2σ'²) for |x| below the first offset whose value drops under
 * `minAmplitude`, normalised, is the reference's exp(−t²/2σ²) on
 * t = linspace(−1, 1, 2r + 1) when σ' = σ·r and the cut falls between r and
 * r + 1. libvips extends edges by copying where torch reflects, so the frame
 * is padded by reflection first (and cropped after); it casts its float
 * result to the input's format by truncation, so the samples go in as 16 bits,
 * v·256 + 128, and come out as bytes (sharp's 16 → 8 bit step): the nearest
 * byte of the float result. `sharpen` keeps 16 bits out and mixes there.
 * RGB only (sharp premultiplies alpha), and only where the mask's cut is
 * representable (sharp takes amplitudes from 0.001: σ from about 0.27).
 */
function vipsGaussianParams(radius: number, sigma: number): { sigma: number; minAmplitude: number } | undefined {
  const s = sigma * radius;
  const sig2 = 2 * s * s;
  const at = (x: number) => Math.exp(-(x * x) / sig2);
  const minAmplitude = Math.sqrt(at(radius) * at(radius + 1));
  if (!(minAmplitude >= 0.001 && minAmplitude <= 1) || !(at(radius) > minAmplitude && at(radius + 1) < minAmplitude)) return undefined;
  return { sigma: s, minAmplitude };
}

/** Largest radius run by libvips' separable Gaussian (without ONNX Runtime): its cost grows with the radius much faster than ORT's (63 taps at 1,536²: 2.9 s). */
const VIPS_GAUSSIAN_MAX_RADIUS = 15;

async function vipsGaussian(f: Frame, radius: number, sigma: number, sharpenBy?: number): Promise<Buffer | undefined> {
  const { width: w, height: h, channels: c } = f;
  if (c !== 3 || radius > VIPS_GAUSSIAN_MAX_RADIUS || radius >= w || radius >= h) return undefined;
  const params = vipsGaussianParams(radius, sigma);
  if (!params) return undefined;
  const r = radius;
  const pw = w + 2 * r;
  const ph = h + 2 * r;
  const src = bytes(f.data);
  // Reflect-padded 16-bit copy: v·256 + 128 (blur only: the +128 turns libvips' truncation into rounding).
  const offset = sharpenBy === undefined ? 128 : 0;
  const padded = new Uint16Array(pw * ph * c);
  const xs = Int32Array.from({ length: pw }, (_, i) => reflect(i - r, w) * c);
  for (let y = 0; y < ph; y++) {
    const row = reflect(y - r, h) * w * c;
    let o = y * pw * c;
    for (let x = 0; x < pw; x++, o += 3) {
      const s = row + xs[x]!;
      padded[o] = src[s]! * 256 + offset;
      padded[o + 1] = src[s + 1]! * 256 + offset;
      padded[o + 2] = src[s + 2]! * 256 + offset;
    }
  }
  let p = sharp(padded, { raw: { width: pw, height: ph, channels: 3 } }).blur({ sigma: params.sigma, minAmplitude: params.minAmplitude, precision: 'float' });
  const rowLen = w * c;
  const out = Buffer.allocUnsafe(h * rowLen);
  if (sharpenBy === undefined) {
    const { data } = await p.raw().toBuffer({ resolveWithObject: true });
    for (let y = 0; y < h; y++) data.copy(out, y * rowLen, ((y + r) * pw + r) * c, ((y + r) * pw + r + w) * c);
    return out;
  }
  p = p.toColourspace('rgb16');
  const data = await p.raw({ depth: 'ushort' }).toBuffer();
  if (data.length !== pw * ph * c * 2) return undefined;
  const blurred = new Uint16Array(data.buffer, data.byteOffset, data.length / 2);
  const a = sharpenBy;
  const dst = bytes(out);
  for (let y = 0; y < h; y++) {
    const bo = ((y + r) * pw + r) * c;
    const o = y * rowLen;
    for (let i = 0; i < rowLen; i++) {
      const v = (1 + a) * src[o + i]! - (a * blurred[bo + i]!) / 256 + 0.5;
      dst[o + i] = v <= 0 ? 0 : v >= 255 ? 255 : v;
    }
  }
  return out;
}

/**
 * Whether the ONNX kernels take this convolution: torch's reflect padding
 * needs the radius below both sides (the reference fails otherwise; the
 * typed-array path reflects again), and tiny frames are not worth a run.
 */
function onnxConvolution(f: Frame, radius: number): boolean {
  return radius < f.width && radius < f.height && f.width * f.height >= 64 && onnxKernelsAvailable();
}

/**
 * Largest kernel side convolved by simdConvolution: every radius the nodes
 * take (up to 31). At 1024², CPU per call against ONNX Runtime's separable
 * convolutions in the same process: radius 5 18 / 50 ms, 11 34 / 73 ms,
 * 16 50 / 96 ms, 31 112 / 158 ms; against libvips' 3×3 2-D convolution
 * 9 / 50 ms. Its memory is a few rows, at any size (no strips needed).
 */
const SIMD_BLUR_MAX = 63;

/**
 * ImageBlur of one frame, by the fastest engine measured that gives the
 * reference's pixels: the WebAssembly SIMD separable convolution
 * (simdConvolution) wherever the radius is below both sides. Otherwise, or
 * without WebAssembly SIMD: libvips' 2-D convolution for RGB up to 5×5, ONNX
 * Runtime's depthwise convolutions as a 1×K and a K×1 pass beyond and for
 * RGBA (image-kernels.ts; 1,536², one thread: radius 5 97 ms, 11 106 ms
 * against libvips' separable Gaussian's 106 and 214 ms in the same run).
 * Without ONNX Runtime: libvips' separable Gaussian (`vipsGaussian`), then
 * libvips' 2-D convolution up to 11×11 (pending: SaveImage encodes while it
 * convolves) and typed arrays for the rest.
 */
export async function blurFrame(f: Frame, radius: number, sigma: number, ctx: NodeContext): Promise<Frame> {
  const size = radius * 2 + 1;
  const k = gaussianKernel1d(size, sigma);
  await f.materialise();
  if (size <= SIMD_BLUR_MAX) {
    const simd = simdConvolution(f, k, 0, 1, ctx);
    if (simd) return new Frame(f.width, f.height, f.channels, simd);
  }
  // Up to 5×5 libvips' 2-D convolution is the fastest (no padded 16-bit copy); beyond, its separable Gaussian.
  if (f.channels === 3 && size <= 5 && f.width > size && f.height > size) return new Frame(f.width, f.height, 3, await convolveSharp(f, outer(k), size));
  if (onnxConvolution(f, radius)) return new Frame(f.width, f.height, f.channels, await onnxSeparableConv(f.data, f.width, f.height, f.channels, k));
  const vips = await vipsGaussian(f, radius, sigma);
  if (vips) return new Frame(f.width, f.height, 3, vips);
  if (f.channels === 3 && size <= SHARP_KERNEL_MAX) {
    // Pending only where the edge bands are a small part of the image.
    if (f.width >= 8 * size && f.height >= 8 * size) return pendingConvolution(f, outer(k), size);
    return new Frame(f.width, f.height, 3, await convolveSharp(f, outer(k), size));
  }
  const out = convolveSeparable(f, k, ctx);
  const data = Buffer.alloc(out.length);
  for (let i = 0; i < out.length; i++) data[i] = clampByte(out[i]!);
  return new Frame(f.width, f.height, f.channels, data);
}

/** The reference's sharpen kernel: -10·alpha·gaussian, centre raised so it sums to 1; i.e. (1+a)·x − a·blur(x). */
export async function sharpenFrame(f: Frame, radius: number, sigma: number, alpha: number, ctx: NodeContext): Promise<Frame> {
  const size = radius * 2 + 1;
  const k = gaussianKernel1d(size, sigma);
  const a = alpha * 10;
  if (size <= SIMD_BLUR_MAX) {
    await f.materialise();
    const simd = simdConvolution(f, k, 1 + a, -a, ctx);
    if (simd) return new Frame(f.width, f.height, f.channels, simd);
  }
  // Up to 5×5 libvips' 2-D convolution is the fastest (25 taps, rounded in its own cast); beyond, the separable Gaussian.
  if (f.channels === 3 && size <= 5 && f.width > size && f.height > size) {
    const k2 = outer(k).map((v) => -a * v);
    const centre = (size * size - 1) / 2;
    k2[centre] = k2[centre]! + 1 + a;
    return new Frame(f.width, f.height, 3, await convolveSharp(f, k2, size));
  }
  if (onnxConvolution(f, radius)) return new Frame(f.width, f.height, f.channels, await onnxSeparableConv(f.data, f.width, f.height, f.channels, k, 1 + a, -a));
  const vips = await vipsGaussian(f, radius, sigma, a);
  if (vips) return new Frame(f.width, f.height, 3, vips);
  if (f.channels === 3 && size <= SHARP_KERNEL_MAX) {
    const k2 = outer(k).map((v) => -a * v);
    const centre = (size * size - 1) / 2;
    k2[centre] = k2[centre]! + 1 + a;
    return new Frame(f.width, f.height, 3, await convolveSharp(f, k2, size));
  }
  const blurred = convolveSeparable(f, k, ctx);
  const data = Buffer.alloc(blurred.length);
  for (let i = 0; i < blurred.length; i++) data[i] = clampByte((1 + a) * f.data[i]! - a * blurred[i]!);
  return new Frame(f.width, f.height, f.channels, data);
}

type BlendMode = 'normal' | 'multiply' | 'screen' | 'overlay' | 'soft_light' | 'difference';
const BLEND_MODES: BlendMode[] = ['normal', 'multiply', 'screen', 'overlay', 'soft_light', 'difference'];

/**
 * Each mode's value of two samples, a function of its own: a table is filled
 * through one of them, so that V8 optimises each fill for its mode (one
 * function switching on the mode was compiled again for every mode a fresh
 * server met).
 */
const BLEND_VALUES: Record<BlendMode, (a: number, b: number) => number> = {
  normal: (_a, b) => b,
  multiply: (a, b) => a * b,
  screen: (a, b) => 1 - (1 - a) * (1 - b),
  overlay: (a, b) => (a <= 0.5 ? 2 * a * b : 1 - 2 * (1 - a) * (1 - b)),
  soft_light: (a, b) => {
    const g = a <= 0.25 ? ((16 * a - 12) * a + 4) * a : Math.sqrt(a);
    return b <= 0.5 ? a - (1 - 2 * b) * a * (1 - a) : a + (2 * b - 1) * (g - a);
  },
  difference: (a, b) => a - b,
};

/** Two batches combined item by item; a batch of one broadcasts, as tensors do. */
export function broadcastPairs(b1: number, b2: number): number {
  if (b1 === b2 || b2 === 1 || b1 === 1) return Math.max(b1, b2);
  throw Object.assign(new Error(`The size of tensor a (${b1}) must match the size of tensor b (${b2}) at non-singleton dimension 0`), { pyType: 'RuntimeError' });
}

/** The last few blend tables made (64 KiB each), by mode and factor: a graph run again reuses its table. */
const blendTables = new Map<string, Uint8Array>();

/** The result depends on the two input bytes only: one table of 256² results, then a lookup per sample. */
function blendTable(mode: BlendMode, factor: number): Uint8Array {
  const key = `${mode} ${factor}`;
  let table = blendTables.get(key);
  if (table) return table;
  table = new Uint8Array(65536);
  const value = BLEND_VALUES[mode];
  for (let a = 0; a < 256; a++) blendRow(table, a, factor, value);
  if (blendTables.size >= 8) blendTables.delete(blendTables.keys().next().value!);
  blendTables.set(key, table);
  return table;
}

/** Row `a` of a blend table: image1's byte a against every byte of image2. */
function blendRow(table: Uint8Array, a: number, factor: number, value: (a: number, b: number) => number): void {
  const x = a / 255;
  for (let c = 0; c < 256; c++) table[(a << 8) | c] = toByte(x * (1 - factor) + value(x, c / 255) * factor);
}

async function blend(image1: ImageBatch, image2: ImageBatch, factor: number, mode: BlendMode, ctx: NodeContext): Promise<ImageBatch> {
  [image1, image2] = alphaFix(image1, image2);
  const f1 = image1.frames[0]!;
  let frames2 = image2.frames;
  const f2 = frames2[0]!;
  if (f1.width !== f2.width || f1.height !== f2.height || image1.frames.length !== frames2.length) {
    frames2 = await Promise.all(frames2.map((f) => resizeFrame(f, f1.width, f1.height, 'bicubic', 'center', () => ctx.checkInterrupt())));
  }
  const n = broadcastPairs(image1.frames.length, frames2.length);
  checkSize(f1.width, f1.height, n);
  const table = blendTable(mode, factor);
  const out: Frame[] = [];
  for (let b = 0; b < n; b++) {
    ctx.checkInterrupt();
    const a = bytes(image1.frames[Math.min(b, image1.frames.length - 1)]!.data);
    const c = bytes(frames2[Math.min(b, frames2.length - 1)]!.data);
    const data = Buffer.allocUnsafe(a.length);
    lookUpPairs(a, c, table, bytes(data));
    out.push(new Frame(f1.width, f1.height, f1.channels, data));
  }
  return new ImageBatch(out);
}

/** out[i] = table[a[i]·256 + c[i]] (plain Uint8Array views: one hidden class, one optimised loop). */
function lookUpPairs(a: Uint8Array, c: Uint8Array, table: Uint8Array, out: Uint8Array): void {
  const k = simdKernels();
  if (k) {
    // In the kernels' memory: the table, then chunks of both inputs and of the output.
    const CHUNK = 1 << 16;
    const aAt = table.length;
    const cAt = aAt + CHUNK;
    const outAt = cAt + CHUNK;
    k.reserve(outAt + CHUNK);
    const u8 = k.u8;
    u8.set(table, 0);
    for (let i = 0; i < a.length; i += CHUNK) {
      const n = Math.min(CHUNK, a.length - i);
      u8.set(a.subarray(i, i + n), aAt);
      u8.set(c.subarray(i, i + n), cAt);
      k.lut2(aAt, cAt, 0, outAt, n);
      out.set(u8.subarray(outAt, outAt + n), i);
    }
    return;
  }
  for (let i = 0; i < a.length; i++) out[i] = table[(a[i]! << 8) | c[i]!]!;
}

const COLOURS = 1 << 24;

/**
 * A map from 24-bit colours to non-negative integers: open addressing with
 * linear probing over the colours present, grown at half full. It replaces
 * tables over all 2^24 colours (64 MiB each, whose pages were faulted in one
 * by one as colours were first seen); a few thousand colours stay in cache.
 */
class ColourMap {
  #bits = 12;
  #keys = new Int32Array(1 << 12).fill(-1);
  #values = new Int32Array(1 << 12);
  #size = 0;
  get(key: number): number {
    const keys = this.#keys;
    const mask = keys.length - 1;
    let h = Math.imul(key, 0x9e3779b1) >>> (32 - this.#bits);
    for (;;) {
      const k = keys[h]!;
      if (k === key) return this.#values[h]!;
      if (k === -1) return -1;
      h = (h + 1) & mask;
    }
  }
  /** Adds a colour not yet in the map. */
  set(key: number, value: number): void {
    if (++this.#size * 2 > this.#keys.length) this.#grow();
    this.#put(key, value);
  }
  #put(key: number, value: number): void {
    const keys = this.#keys;
    const mask = keys.length - 1;
    let h = Math.imul(key, 0x9e3779b1) >>> (32 - this.#bits);
    while (keys[h] !== -1) h = (h + 1) & mask;
    keys[h] = key;
    this.#values[h] = value;
  }
  #grow(): void {
    const keys = this.#keys;
    const values = this.#values;
    this.#bits++;
    this.#keys = new Int32Array(1 << this.#bits).fill(-1);
    this.#values = new Int32Array(1 << this.#bits);
    for (let i = 0; i < keys.length; i++) if (keys[i] !== -1) this.#put(keys[i]!, values[i]!);
  }
}

/**
 * Median cut as PIL's quantize() does it for RGB images: boxes of the colour
 * histogram are split at the median of their widest channel, the most
 * populous box first, and each box's palette entry is its mean colour. An
 * image with no more colours than asked keeps them exactly.
 *
 * The histogram numbers distinct colours in the order they first appear (a
 * hash table of the colours present, `ColourMap`); a box is a range
 * of those, sorted by its split channel with a stable counting sort (the
 * order, and so the cut, of a stable comparison sort).
 */
export function medianCut(data: Uint8Array, colors: number): number[] {
  const n = data.length / 3;
  const { keys, counts } = histogram(data, n);
  const u = keys.length;
  const boxes: Box[] = [{ start: 0, end: u, count: n }];
  const sorter = { keys: new Uint32Array(u), counts: new Float64Array(u), bucket: new Uint32Array(257) };
  while (boxes.length < colors) {
    const pick = fullestBox(boxes);
    if (pick < 0) break;
    const box = boxes[pick]!;
    const { start, end } = box;
    sortByChannel(keys, counts, start, end, widestChannel(keys, start, end), sorter);
    const cut = medianIndex(counts, start, end, box.count);
    let lc = 0;
    for (let i = start; i < cut; i++) lc += counts[i]!;
    boxes.splice(pick, 1, { start, end: cut, count: lc }, { start: cut, end, count: box.count - lc });
  }
  return boxes.map((b) => boxMean(keys, counts, b));
}

/** A range of the histogram's colours, and how many pixels they cover. */
type Box = { start: number; end: number; count: number };

/** The distinct colours (0xRRGGBB) in the order they first appear, with their pixel counts. */
function histogram(data: Uint8Array, n: number): { keys: Uint32Array; counts: Float64Array } {
  const slot = new ColourMap();
  const keys = new Uint32Array(Math.min(n, COLOURS));
  const counts = new Float64Array(keys.length);
  let u = 0;
  let last = -1;
  let lastSlot = 0;
  for (let i = 0, j = 0; i < n; i++, j += 3) {
    const key = (data[j]! << 16) | (data[j + 1]! << 8) | data[j + 2]!;
    // Neighbouring pixels often share a colour: the previous one's slot is kept.
    if (key !== last) {
      let s = slot.get(key);
      if (s < 0) {
        keys[u] = key;
        s = u++;
        slot.set(key, s);
      }
      last = key;
      lastSlot = s;
    }
    counts[lastSlot]!++;
  }
  return { keys: keys.subarray(0, u), counts: counts.subarray(0, u) };
}

/** The box to split next: the one covering most pixels among those with two colours or more; −1 if none. */
function fullestBox(boxes: Box[]): number {
  let pick = -1;
  for (let i = 0; i < boxes.length; i++) if (boxes[i]!.end - boxes[i]!.start > 1 && (pick < 0 || boxes[i]!.count > boxes[pick]!.count)) pick = i;
  return pick;
}

/** The channel (0 red, 1 green, 2 blue) whose values spread widest over keys[start, end); the first among equals. */
function widestChannel(keys: Uint32Array, start: number, end: number): number {
  let axis = 0;
  let widest = -1;
  for (let c = 0; c < 3; c++) {
    const shift = 16 - 8 * c;
    let lo = 255;
    let hi = 0;
    for (let i = start; i < end; i++) {
      const v = (keys[i]! >> shift) & 255;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    if (hi - lo > widest) {
      widest = hi - lo;
      axis = c;
    }
  }
  return axis;
}

/** Stable counting sort of keys[start, end) (and their counts) by one channel. */
function sortByChannel(keys: Uint32Array, counts: Float64Array, start: number, end: number, channel: number, tmp: { keys: Uint32Array; counts: Float64Array; bucket: Uint32Array }): void {
  const shift = 16 - 8 * channel;
  const { bucket } = tmp;
  bucket.fill(0);
  for (let i = start; i < end; i++) bucket[((keys[i]! >> shift) & 255) + 1]!++;
  for (let v = 0; v < 256; v++) bucket[v + 1]! += bucket[v]!;
  for (let i = start; i < end; i++) {
    const at = start + bucket[(keys[i]! >> shift) & 255]!++;
    tmp.keys[at] = keys[i]!;
    tmp.counts[at] = counts[i]!;
  }
  keys.set(tmp.keys.subarray(start, end), start);
  counts.set(tmp.counts.subarray(start, end), start);
}

/** Where a sorted box is cut: after the colour at which half of its pixels are reached (at least one colour each side). */
function medianIndex(counts: Float64Array, start: number, end: number, count: number): number {
  let acc = 0;
  let cut = start + 1;
  for (let i = start; i < end - 1; i++) {
    acc += counts[i]!;
    cut = i + 1;
    if (acc * 2 >= count) break;
  }
  return cut;
}

/** A box's colour: the pixel-weighted mean of each channel, rounded. */
function boxMean(keys: Uint32Array, counts: Float64Array, b: Box): number {
  let r = 0;
  let g = 0;
  let bl = 0;
  for (let i = b.start; i < b.end; i++) {
    const k = keys[i]!;
    const m = counts[i]!;
    r += (k >> 16) * m;
    g += ((k >> 8) & 255) * m;
    bl += (k & 255) * m;
  }
  return (Math.round(r / b.count) << 16) | (Math.round(g / b.count) << 8) | Math.round(bl / b.count);
}

/**
 * The palette entry nearest to a colour (squared RGB distance; the first in
 * palette order among equals). RGB space is cut into 16³ cells; a cell's
 * candidates, listed on its first use, are the entries that could be nearest
 * to some colour in it: those whose distance to the cell is at most the
 * smallest farthest-distance of any entry to the cell. Every entry nearest to
 * a colour of the cell (ties included) is among them, so scanning them in
 * palette order with a strict < gives the full search's answer.
 */
function nearestPalette(palette: number[]): (key: number) => number {
  const m = palette.length;
  const pr = Int32Array.from(palette, (p) => p >> 16);
  const pg = Int32Array.from(palette, (p) => (p >> 8) & 255);
  const pb = Int32Array.from(palette, (p) => p & 255);
  const cells: (Int32Array | undefined)[] = new Array(4096).fill(undefined);
  const minD = new Float64Array(m);
  const axis = (v: number, lo: number, hi: number) => (v < lo ? lo - v : v > hi ? v - hi : 0);
  const far = (v: number, lo: number, hi: number) => Math.max(v - lo, hi - v);
  const listCell = (cell: number): Int32Array => {
    const r0 = (cell >> 8) << 4;
    const g0 = ((cell >> 4) & 15) << 4;
    const b0 = (cell & 15) << 4;
    let bound = Infinity;
    for (let j = 0; j < m; j++) {
      const dr = axis(pr[j]!, r0, r0 + 15);
      const dg = axis(pg[j]!, g0, g0 + 15);
      const db = axis(pb[j]!, b0, b0 + 15);
      minD[j] = dr * dr + dg * dg + db * db;
      const fr = far(pr[j]!, r0, r0 + 15);
      const fg = far(pg[j]!, g0, g0 + 15);
      const fb = far(pb[j]!, b0, b0 + 15);
      const d = fr * fr + fg * fg + fb * fb;
      if (d < bound) bound = d;
    }
    const list: number[] = [];
    for (let j = 0; j < m; j++) if (minD[j]! <= bound) list.push(j);
    return (cells[cell] = Int32Array.from(list));
  };
  // Large palettes have long candidate lists: each colour's answer is also kept (images repeat colours).
  const cache = m > 32 ? new ColourMap() : undefined;
  return (key: number): number => {
    if (cache !== undefined) {
      const hit = cache.get(key);
      if (hit >= 0) return palette[hit]!;
    }
    const r = key >> 16;
    const g = (key >> 8) & 255;
    const b = key & 255;
    const cell = ((r >> 4) << 8) | ((g >> 4) << 4) | (b >> 4);
    const list = cells[cell] ?? listCell(cell);
    let best = list[0]!;
    let bestD = Infinity;
    for (let i = 0; i < list.length; i++) {
      const j = list[i]!;
      const dr = r - pr[j]!;
      const dg = g - pg[j]!;
      const db = b - pb[j]!;
      const d = dr * dr + dg * dg + db * db;
      if (d < bestD) {
        bestD = d;
        best = j;
      }
    }
    cache?.set(key, best);
    return palette[best]!;
  };
}

/** normalized_bayer_matrix(n) of the reference, as rows. */
function bayerMatrix(n: number): number[][] {
  if (n === 0) return [[0]];
  const q = 4 ** n;
  const m = bayerMatrix(n - 1).map((row) => row.map((v) => v * q));
  const size = m.length;
  const out: number[][] = Array.from({ length: size * 2 }, () => new Array(size * 2).fill(0));
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      out[y]![x] = (m[y]![x]! - 1.5) / q;
      out[y]![x + size] = (m[y]![x]! + 0.5) / q;
      out[y + size]![x] = (m[y]![x]! + 1.5) / q;
      out[y + size]![x + size] = (m[y]![x]! - 0.5) / q;
    }
  }
  return out;
}

const clampRound = (v: number) => (v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v));

/**
 * One row of Floyd–Steinberg error diffusion: each value rounded and clamped,
 * its nearest palette colour written to `data`, the error spread 7/16 right,
 * and 3/16, 5/16, 1/16 to the row below (`below`, when there is one).
 */
function floydSteinbergRow(err: Float32Array, below: Float32Array, more: boolean, data: Uint8Array, o: number, w: number, nearest: (key: number) => number): void {
  for (let x = 0, i = 0; x < w; x++, i += 3) {
    const r = clampRound(err[i]!);
    const g = clampRound(err[i + 1]!);
    const b = clampRound(err[i + 2]!);
    const p = nearest((r << 16) | (g << 8) | b);
    const pr = p >> 16;
    const pg = (p >> 8) & 255;
    const pb = p & 255;
    data[o + i] = pr;
    data[o + i + 1] = pg;
    data[o + i + 2] = pb;
    const er = r - pr;
    const eg = g - pg;
    const eb = b - pb;
    if (x + 1 < w) {
      err[i + 3]! += (er * 7) / 16;
      err[i + 4]! += (eg * 7) / 16;
      err[i + 5]! += (eb * 7) / 16;
    }
    if (more) {
      if (x > 0) {
        below[i - 3]! += (er * 3) / 16;
        below[i - 2]! += (eg * 3) / 16;
        below[i - 1]! += (eb * 3) / 16;
      }
      below[i]! += (er * 5) / 16;
      below[i + 1]! += (eg * 5) / 16;
      below[i + 2]! += (eb * 5) / 16;
      if (x + 1 < w) {
        below[i + 3]! += (er * 1) / 16;
        below[i + 4]! += (eg * 1) / 16;
        below[i + 5]! += (eb * 1) / 16;
      }
    }
  }
}

/** ImageQuantize: a median-cut palette, then no dithering, Floyd–Steinberg error diffusion, or an ordered Bayer threshold (the reference's matrix and spread). */
async function quantizeFrame(f: Frame, colors: number, dither: string, ctx: NodeContext): Promise<Frame> {
  const rgb = f.channels === 3 ? f : withChannels(f, 3);
  const { width: w, height: h } = rgb;
  const src = new Uint8Array(rgb.data.buffer, rgb.data.byteOffset, rgb.data.length);
  const palette = medianCut(src, colors);
  const nearest = nearestPalette(palette);
  const data = Buffer.alloc(w * h * 3);
  if (dither === 'floyd-steinberg') floydSteinberg(src, w, h, nearest, data, ctx);
  else {
    const bayer = dither.startsWith('bayer') ? Number(dither.split('-').at(-1)) : 0;
    const m = bayer ? bayerMatrix(Math.log2(bayer)) : [[0]];
    const spread = (2 * 256) / palette.length;
    for (let y = 0; y < h; y++) {
      if ((y & 63) === 63) ctx.checkInterrupt();
      if (bayer) bayerRow(src, data, y * w * 3, w, m[y % bayer]!, bayer, spread, nearest);
      else nearestRow(src, data, y * w * 3, w, nearest);
    }
  }
  return new Frame(w, h, 3, data);
}

/** Floyd–Steinberg over the frame, row by row: the diffused values of this row and the next in float32 (as the whole-frame array they replace). */
function floydSteinberg(src: Uint8Array, w: number, h: number, nearest: (key: number) => number, data: Uint8Array, ctx: NodeContext): void {
  const rowLen = w * 3;
  let cur = new Float32Array(rowLen);
  let below = new Float32Array(rowLen);
  cur.set(src.subarray(0, rowLen));
  for (let y = 0; y < h; y++) {
    if ((y & 63) === 63) ctx.checkInterrupt();
    const more = y + 1 < h;
    if (more) below.set(src.subarray((y + 1) * rowLen, (y + 2) * rowLen));
    floydSteinbergRow(cur, below, more, data, y * rowLen, w, nearest);
    const t = cur;
    cur = below;
    below = t;
  }
}

/** One row, each pixel its nearest palette colour. */
function nearestRow(src: Uint8Array, data: Uint8Array, o: number, w: number, nearest: (key: number) => number): void {
  for (let x = 0, i = o; x < w; x++, i += 3) {
    const p = nearest((src[i]! << 16) | (src[i + 1]! << 8) | src[i + 2]!);
    data[i] = p >> 16;
    data[i + 1] = (p >> 8) & 255;
    data[i + 2] = p & 255;
  }
}

/** One row through the ordered Bayer threshold (`row` the matrix's row for it), then the nearest palette colour. */
function bayerRow(src: Uint8Array, data: Uint8Array, o: number, w: number, row: number[], bayer: number, spread: number, nearest: (key: number) => number): void {
  for (let x = 0, i = o; x < w; x++, i += 3) {
    const t = spread * row[x % bayer]! + 0.5;
    const r = Math.trunc(Math.min(255, Math.max(0, src[i]! + t)));
    const g = Math.trunc(Math.min(255, Math.max(0, src[i + 1]! + t)));
    const b = Math.trunc(Math.min(255, Math.max(0, src[i + 2]! + t)));
    const p = nearest((r << 16) | (g << 8) | b);
    data[i] = p >> 16;
    data[i + 1] = (p >> 8) & 255;
    data[i + 2] = p & 255;
  }
}

export const imageFilterNodes: NodeDefinition[] = [
  {
    name: 'ImageInvert',
    displayName: 'Invert Image',
    category: 'image',
    essentialsCategory: 'Image Tools',
    searchAliases: ['reverse colors'],
    inputs: { required: { image: ['IMAGE'] } },
    outputs: ['IMAGE'],
    execute: ({ image }) => [
      new ImageBatch(
        (image as ImageBatch).frames.map((f) => {
          const data = Buffer.alloc(f.data.length);
          for (let i = 0; i < data.length; i++) data[i] = 255 - f.data[i]!;
          return new Frame(f.width, f.height, f.channels, data);
        }),
      ),
    ],
  },
  ...v3('comfy_extras.nodes_post_processing', [
  {
    ...POST,
    name: 'ImageBlend',
    displayName: 'Image Blend',
    essentialsCategory: 'Image Tools',
    inputs: {
      required: {
        image1: IMAGE_IN,
        image2: IMAGE_IN,
        blend_factor: ['FLOAT', { default: 0.5, min: 0.0, max: 1.0, step: 0.01 }],
        blend_mode: combo(BLEND_MODES),
      },
    },
    outputs: ['IMAGE'],
    execute: async ({ image1, image2, blend_factor, blend_mode }, ctx) => [await blend(image1, image2, blend_factor, blend_mode, ctx)],
  },
  // Reads its input itself and returns RGB blurs of up to 11×11 pending (encoded by SaveImage as they are convolved).
  takesPendingImages({
    ...POST,
    name: 'ImageBlur',
    displayName: 'Image Blur',
    inputs: {
      required: {
        image: IMAGE_IN,
        blur_radius: ['INT', { default: 1, min: 1, max: 31, step: 1 }],
        sigma: ['FLOAT', { default: 1.0, min: 0.1, max: 10.0, step: 0.1 }],
      },
    },
    outputs: ['IMAGE'],
    execute: async ({ image, blur_radius, sigma }, ctx) => {
      if (blur_radius === 0) return [image];
      const frames: Frame[] = [];
      for (const f of (image as ImageBatch).frames) {
        ctx.checkInterrupt();
        frames.push(await blurFrame(f, blur_radius, sigma, ctx));
      }
      return [new ImageBatch(frames)];
    },
  }),
  {
    ...POST,
    name: 'ImageQuantize',
    inputs: {
      required: {
        image: IMAGE_IN,
        colors: ['INT', { default: 256, min: 1, max: 256, step: 1 }],
        dither: combo(['none', 'floyd-steinberg', 'bayer-2', 'bayer-4', 'bayer-8', 'bayer-16']),
      },
    },
    outputs: ['IMAGE'],
    execute: async ({ image, colors, dither }, ctx) => {
      const frames: Frame[] = [];
      for (const f of (image as ImageBatch).frames) {
        ctx.checkInterrupt();
        frames.push(await quantizeFrame(f, colors, dither, ctx));
      }
      return [new ImageBatch(frames)];
    },
  },
  {
    ...POST,
    name: 'ImageSharpen',
    inputs: {
      required: {
        image: IMAGE_IN,
        sharpen_radius: ['INT', { default: 1, min: 1, max: 31, step: 1, advanced: true }],
        sigma: ['FLOAT', { default: 1.0, min: 0.1, max: 10.0, step: 0.01, advanced: true }],
        alpha: ['FLOAT', { default: 1.0, min: 0.0, max: 5.0, step: 0.01, advanced: true }],
      },
    },
    outputs: ['IMAGE'],
    execute: async ({ image, sharpen_radius, sigma, alpha }, ctx) => {
      if (sharpen_radius === 0) return [image];
      const frames: Frame[] = [];
      for (const f of (image as ImageBatch).frames) {
        ctx.checkInterrupt();
        frames.push(await sharpenFrame(f, sharpen_radius, sigma, alpha, ctx));
      }
      return [new ImageBatch(frames)];
    },
  },
]),
];
