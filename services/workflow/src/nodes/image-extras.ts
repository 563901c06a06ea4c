import type { NodeContext, NodeDefinition } from './api.ts';
import { Frame, ImageBatch, MaskBatch, MaskPlane, maskPlanes } from './image-types.ts';
import { resizeFrame, resizePlane } from './resample.ts';
import { combo, IMAGE_IN, MASK_IN, v3 } from './schema.ts';
import { TorchGenerator } from '../models/noise.ts';
import { cannyEdges, checkCanny } from './canny.ts';
import { addNoiseBytes, PORTER_DUFF_MODES, porterDuffPixels, rgbToYcbcrBytes, ycbcrToRgbBytes } from './image-loops.ts';

/**
 * Image nodes of comfy_extras whose reference computes with torch/kornia:
 * ImageAddNoise (nodes_images), Morphology, ImageRGBToYUV, ImageYUVToRGB
 * (nodes_morphology), PorterDuffImageComposite (nodes_compositing) and Canny
 * (nodes_canny). Pixels are read as the reference's float32 values (byte /
 * 255), computed in float32 where the order of operations matters, and
 * written back as the nearest byte. The per-sample loops of Porter-Duff and
 * YCbCr are in image-loops.ts (WebAssembly SIMD, JavaScript where it does
 * not run).
 */

const f32 = Math.fround;

function pyError(message: string, pyType: string): Error {
  return Object.assign(new Error(message), { pyType });
}

function* eachFrame(images: ImageBatch, ctx: NodeContext): Generator<Frame> {
  for (const f of images.frames) {
    ctx.checkInterrupt();
    yield f;
  }
}

/** ImageAddNoise: clip(image + strength · torch.randn(image.size()) with manual_seed(seed), 0, 1). */
function addNoise(images: ImageBatch, seed: number, strength: number, ctx: NodeContext): ImageBatch {
  const total = images.frames.reduce((n, f) => n + f.data.length, 0);
  const stream = new TorchGenerator(seed).randnStream(total);
  const noise = new Float32Array(Math.min(NOISE_CHUNK, total));
  const s = f32(strength);
  const out: Frame[] = [];
  for (const f of eachFrame(images, ctx)) {
    const src = f.data;
    const data = Buffer.allocUnsafe(src.length);
    for (let at = 0; at < src.length; at += NOISE_CHUNK) {
      const n = Math.min(NOISE_CHUNK, src.length - at);
      stream.read(noise, n);
      addNoiseBytes(src.subarray(at, at + n), noise, n, s, data, at);
    }
    out.push(new Frame(f.width, f.height, f.channels, data));
  }
  return new ImageBatch(out);
}

/** ImageAddNoise's noise values held at once. */
const NOISE_CHUNK = 1 << 16;

/**
 * Running min or max over windows [i - k//2, i - k//2 + k) clipped to the
 * line, for every line of one channel (kornia's flat square kernel with its
 * geodesic border: samples outside the image never win). Separable, so rows
 * then columns; a monotonic deque makes it O(1) per sample for any k.
 */
function extremeFilter(src: Uint8Array, w: number, h: number, c: number, k: number, max: boolean, ctx: NodeContext): Uint8Array {
  const before = Math.floor(k / 2);
  const after = k - before - 1;
  // The comparison is written inline on a loop-invariant flag: a comparator closure chosen per call left the deque loop with a polymorphic call.
  const pass = (inp: Uint8Array, out: Uint8Array, lines: number, len: number, lineStride: number, step: number) => {
    const dq = new Int32Array(len);
    for (let line = 0; line < lines; line++) {
      if ((line & 63) === 63) ctx.checkInterrupt();
      for (let ch = 0; ch < c; ch++) {
        const base = line * lineStride + ch;
        let head = 0;
        let tail = 0;
        let next = 0;
        for (let i = 0; i < len; i++) {
          const hi = Math.min(len - 1, i + after);
          while (next <= hi) {
            const v = inp[base + next * step]!;
            while (tail > head && (max ? v >= inp[base + dq[tail - 1]! * step]! : v <= inp[base + dq[tail - 1]! * step]!)) tail--;
            dq[tail++] = next++;
          }
          while (dq[head]! < i - before) head++;
          out[base + i * step] = inp[base + dq[head]! * step]!;
        }
      }
    }
  };
  const tmp = new Uint8Array(src.length);
  pass(src, tmp, h, w, w * c, c);
  const out = new Uint8Array(src.length);
  pass(tmp, out, w, h, c, w * c);
  return out;
}

const MORPH_OPS = ['erode', 'dilate', 'open', 'close', 'gradient', 'bottom_hat', 'top_hat'] as const;

function morphology(f: Frame, op: string, k: number, ctx: NodeContext): Frame {
  const { width: w, height: h, channels: c } = f;
  const src = new Uint8Array(f.data.buffer, f.data.byteOffset, f.data.length);
  const erode = (d: Uint8Array) => extremeFilter(d, w, h, c, k, false, ctx);
  const dilate = (d: Uint8Array) => extremeFilter(d, w, h, c, k, true, ctx);
  let out: Uint8Array;
  const diff = (a: Uint8Array, b: Uint8Array) => {
    const d = new Uint8Array(a.length);
    for (let i = 0; i < a.length; i++) d[i] = a[i]! - b[i]!;
    return d;
  };
  if (op === 'erode') out = erode(src);
  else if (op === 'dilate') out = dilate(src);
  else if (op === 'open') out = dilate(erode(src));
  else if (op === 'close') out = erode(dilate(src));
  else if (op === 'gradient') out = diff(dilate(src), erode(src));
  else if (op === 'top_hat') out = diff(src, dilate(erode(src)));
  else if (op === 'bottom_hat') out = diff(erode(dilate(src)), src);
  else throw pyError(`Invalid operation ${op} for morphology. Must be one of 'erode', 'dilate', 'open', 'close', 'gradient', 'tophat', 'bottomhat'`, 'ValueError');
  return new Frame(w, h, c, Buffer.from(out.buffer, out.byteOffset, out.length));
}

/** kornia.color.rgb_to_ycbcr of one frame: Y, Cb, Cr each as a grey RGB frame. */
function rgbToYuv(f: Frame): [Frame, Frame, Frame] {
  if (f.channels !== 3) throw pyError(`Input size must have a shape of (*, 3, H, W). Got torch.Size([1, ${f.channels}, ${f.height}, ${f.width}])`, 'ValueError');
  return rgbToYcbcrBytes(f.data, f.width * f.height).map((p) => new Frame(f.width, f.height, 3, p)) as [Frame, Frame, Frame];
}

/** ImageYUVToRGB: the channel means of Y, U and V, through kornia.color.ycbcr_to_rgb. */
function yuvToRgb(Y: Frame, U: Frame, V: Frame): Frame {
  for (const f of [U, V]) {
    if (f.width !== Y.width || f.height !== Y.height) throw pyError(`Sizes of tensors must match except in dimension 3. Expected size ${Y.height}x${Y.width} but got size ${f.height}x${f.width}`, 'RuntimeError');
  }
  return new Frame(Y.width, Y.height, 3, ycbcrToRgbBytes(Y, U, V, Y.width * Y.height));
}

async function porterDuffComposite(source: ImageBatch, sourceAlpha: MaskBatch, destination: ImageBatch, destinationAlpha: MaskBatch, mode: string, ctx: NodeContext): Promise<[ImageBatch, MaskBatch]> {
  const sa = maskPlanes(sourceAlpha);
  const da = maskPlanes(destinationAlpha);
  const n = Math.min(source.frames.length, sa.length, destination.frames.length, da.length);
  const m = (PORTER_DUFF_MODES as readonly string[]).indexOf(mode);
  if (m < 0) throw pyError(`'${mode}'`, 'KeyError');
  const images: Frame[] = [];
  const masks: MaskPlane[] = [];
  for (let i = 0; i < n; i++) {
    ctx.checkInterrupt();
    let src = source.frames[i]!;
    const dst = destination.frames[i]!;
    if (src.channels !== dst.channels) throw pyError('', 'AssertionError');
    let dAlpha = da[i]!;
    let sAlpha = sa[i]!;
    const w = dst.width;
    const h = dst.height;
    // The reference's resizes: bicubic with a centre crop, to the destination's size.
    if (dAlpha.width !== w || dAlpha.height !== h) dAlpha = resizePlane(dAlpha, w, h, 'bicubic', 'center', () => ctx.checkInterrupt());
    if (src.width !== w || src.height !== h) src = await resizeFrame(src, w, h, 'bicubic', 'center', () => ctx.checkInterrupt());
    if (sAlpha.width !== dAlpha.width || sAlpha.height !== dAlpha.height) sAlpha = resizePlane(sAlpha, dAlpha.width, dAlpha.height, 'bicubic', 'center', () => ctx.checkInterrupt());
    const c = dst.channels;
    const { image, mask } = porterDuffPixels(m, src.data, dst.data, sAlpha.data, dAlpha.data, w * h, c);
    images.push(new Frame(w, h, c, image));
    masks.push(new MaskPlane(w, h, mask));
  }
  if (n === 0) throw pyError('stack expects a non-empty TensorList', 'RuntimeError');
  return [new ImageBatch(images), new MaskBatch(masks)];
}

/**
 * The reference's Canny on one frame: kornia.filters.canny's edge map
 * (canny.ts), white on black in three channels. kornia converts only
 * three-channel images to grey; any other count fails in its suppression
 * convolution, with this error.
 */
function canny(f: Frame, low: number, high: number, batch: number, ctx: NodeContext): Frame {
  const { width: w, height: h, channels: c } = f;
  if (c !== 3) throw pyError(`Given groups=1, weight of size [8, 1, 3, 3], expected input[1, ${c}, ${h}, ${w}] to have 1 channels, but got ${c} channels instead`, 'RuntimeError');
  const edges = cannyEdges(f.data, w, h, c, low, high, { batch, progress: () => ctx.checkInterrupt() });
  return new Frame(w, h, 3, edgeBytes(edges));
}

/** The edge map as RGB bytes, white on black (a function of its own: V8 optimises its loop without the caller's code after it). */
function edgeBytes(edges: Uint8Array): Buffer {
  const out = Buffer.alloc(edges.length * 3);
  for (let i = 0; i < edges.length; i++) if (edges[i]) out.fill(255, i * 3, i * 3 + 3);
  return out;
}

/** The reference's PREFERED_KONTEXT_RESOLUTIONS (width, height). */
const KONTEXT_RESOLUTIONS: Array<[number, number]> = [
  [672, 1568], [688, 1504], [720, 1456], [752, 1392], [800, 1328], [832, 1248], [880, 1184], [944, 1104], [1024, 1024],
  [1104, 944], [1184, 880], [1248, 832], [1328, 800], [1392, 752], [1456, 720], [1504, 688], [1568, 672],
];

export const imageExtraNodes: NodeDefinition[] = [
  ...v3('comfy_extras.nodes_images', [
    {
      name: 'ImageAddNoise',
      category: 'image',
      searchAliases: ['film grain'],
      inputs: {
        required: {
          image: IMAGE_IN,
          seed: ['INT', { default: 0, min: 0, max: 0xffffffffffffffff, control_after_generate: true, tooltip: 'The random seed used for creating the noise.' }],
          strength: ['FLOAT', { default: 0.5, min: 0.0, max: 1.0, step: 0.01 }],
        },
      },
      outputs: ['IMAGE'],
      execute: ({ image, seed, strength }, ctx) => [addNoise(image as ImageBatch, seed, strength, ctx)],
    },
  ]),
  ...v3('comfy_extras.nodes_morphology', [
    {
      name: 'Morphology',
      displayName: 'ImageMorphology',
      category: 'image/postprocessing',
      inputs: { required: { image: IMAGE_IN, operation: combo(MORPH_OPS), kernel_size: ['INT', { default: 3, min: 3, max: 999, step: 1 }] } },
      outputs: ['IMAGE'],
      execute: ({ image, operation, kernel_size }, ctx) => [new ImageBatch([...eachFrame(image as ImageBatch, ctx)].map((f) => morphology(f, operation, kernel_size, ctx)))],
    },
    {
      name: 'ImageRGBToYUV',
      category: 'image/batch',
      inputs: { required: { image: IMAGE_IN } },
      outputs: ['IMAGE', 'IMAGE', 'IMAGE'],
      outputNames: ['Y', 'U', 'V'],
      execute: ({ image }, ctx) => {
        const parts = [...eachFrame(image as ImageBatch, ctx)].map(rgbToYuv);
        return [0, 1, 2].map((k) => new ImageBatch(parts.map((p) => p[k]!)));
      },
    },
    {
      name: 'ImageYUVToRGB',
      category: 'image/batch',
      inputs: { required: { Y: IMAGE_IN, U: IMAGE_IN, V: IMAGE_IN } },
      outputs: ['IMAGE'],
      execute: ({ Y, U, V }) => {
        const [y, u, v] = [Y, U, V] as ImageBatch[];
        if (u!.frames.length !== y!.frames.length || v!.frames.length !== y!.frames.length) {
          throw pyError(`Sizes of tensors must match except in dimension 3. Expected size ${y!.frames.length} but got size ${u!.frames.length !== y!.frames.length ? u!.frames.length : v!.frames.length}`, 'RuntimeError');
        }
        return [new ImageBatch(y!.frames.map((f, i) => yuvToRgb(f, u!.frames[i]!, v!.frames[i]!)))];
      },
    },
  ]),
  ...v3('comfy_extras.nodes_compositing', [
    {
      name: 'PorterDuffImageComposite',
      displayName: 'Porter-Duff Image Composite',
      category: 'mask/compositing',
      inputs: {
        required: {
          source: IMAGE_IN,
          source_alpha: MASK_IN,
          destination: IMAGE_IN,
          destination_alpha: MASK_IN,
          mode: combo(PORTER_DUFF_MODES, { default: 'DST' }),
        },
      },
      outputs: ['IMAGE', 'MASK'],
      execute: ({ source, source_alpha, destination, destination_alpha, mode }, ctx) => porterDuffComposite(source, source_alpha, destination, destination_alpha, mode, ctx),
    },
  ]),
  ...v3('comfy_extras.nodes_flux', [
    {
      name: 'FluxKontextImageScale',
      category: 'advanced/conditioning/flux',
      description: 'This node resizes the image to one that is more optimal for flux kontext.',
      inputs: { required: { image: IMAGE_IN } },
      outputs: ['IMAGE'],
      execute: async ({ image }, ctx) => {
        const img = image as ImageBatch;
        const aspect = img.width / img.height;
        // min() over (|aspect − w/h|, w, h) tuples: ties go to the smaller width.
        let best = KONTEXT_RESOLUTIONS[0]!;
        for (const r of KONTEXT_RESOLUTIONS) {
          const d = Math.abs(aspect - r[0] / r[1]);
          const bd = Math.abs(aspect - best[0] / best[1]);
          if (d < bd || (d === bd && (r[0] < best[0] || (r[0] === best[0] && r[1] < best[1])))) best = r;
        }
        const frames = [];
        for (const f of eachFrame(img, ctx)) frames.push(await resizeFrame(f, best[0], best[1], 'lanczos', 'center', () => ctx.checkInterrupt()));
        return [new ImageBatch(frames)];
      },
    },
  ]),
  ...v3('comfy_extras.nodes_canny', [
    {
      name: 'Canny',
      category: 'image/preprocessors',
      inputs: {
        required: {
          image: IMAGE_IN,
          low_threshold: ['FLOAT', { default: 0.4, min: 0.01, max: 0.99, step: 0.01 }],
          high_threshold: ['FLOAT', { default: 0.8, min: 0.01, max: 0.99, step: 0.01 }],
        },
      },
      outputs: ['IMAGE'],
      execute: ({ image, low_threshold, high_threshold }, ctx) => {
        const img = image as ImageBatch;
        checkCanny(img.width, img.height, low_threshold, high_threshold);
        return [new ImageBatch([...eachFrame(img, ctx)].map((f) => canny(f, low_threshold, high_threshold, img.frames.length, ctx)))];
      },
    },
  ]),
];
