import type { NodeContext, NodeDefinition } from './api.ts';
import { alphaFix, checkSize, Frame, ImageBatch, MaskBatch, MaskPlane, maskPlanes, MAX_RESOLUTION, repeatToBatch } from './image-types.ts';
import { blendMasked, joinAlphaBytes, splitAlphaBytes } from './mask-loops.ts';
import { resizeFrame, resizePlane } from './resample.ts';
import { IMAGE_IN, MASK_IN, v3 } from './schema.ts';

/**
 * The reference's composite() for images (multiplier 1): the source, repeated
 * to the destination's batch and optionally resized to it, is blended in at
 * (x, y) through the mask (bilinear-resized to the source), clipped to the
 * destination.
 */
async function compositeMasked(destination: ImageBatch, source: ImageBatch, x: number, y: number, resizeSource: boolean, mask: MaskBatch | undefined, ctx: NodeContext): Promise<ImageBatch> {
  [destination, source] = alphaFix(destination, source);
  const { width: dw, height: dh } = destination;
  const n = destination.frames.length;
  checkSize(dw, dh, n);
  let srcFrames = source.frames;
  if (resizeSource) srcFrames = await Promise.all(srcFrames.map((f) => resizeFrame(f, dw, dh, 'bilinear', 'disabled', () => ctx.checkInterrupt())));
  srcFrames = repeatToBatch(srcFrames, n);
  const { width: sw, height: sh } = srcFrames[0]!;
  x = Math.max(-sw, Math.min(x, dw));
  y = Math.max(-sh, Math.min(y, dh));
  let masks: MaskPlane[] | undefined;
  if (mask) masks = repeatToBatch(maskPlanes(mask).map((p) => resizePlane(p, sw, sh, 'bilinear', 'disabled', () => ctx.checkInterrupt())), n);
  const x0 = Math.max(0, x);
  const y0 = Math.max(0, y);
  const x1 = Math.min(dw, x + sw);
  const y1 = Math.min(dh, y + sh);
  const out: Frame[] = [];
  for (let b = 0; b < n; b++) {
    ctx.checkInterrupt();
    const d = destination.frames[b]!;
    const s = srcFrames[b]!;
    const data = Buffer.from(d.data);
    if (x1 > x0 && y1 > y0) pasteRows(bytesOf(s.data), sw, bytesOf(data), dw, d.channels, x, y, x0, y0, x1, y1, masks?.[b]?.data);
    out.push(new Frame(dw, dh, d.channels, data));
  }
  return new ImageBatch(out);
}

/** A plain Uint8Array view (Buffers made by sharp and by JavaScript have different hidden classes). */
function bytesOf(b: Uint8Array): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/**
 * The pasted rectangle (x0, y0)–(x1, y1) of the destination `dst` (width
 * `dw`), from the source `src` (width `sw`) placed at (x, y): copied rows
 * without a mask, else per sample a·s + (1 − a)·d rounded half up and
 * clamped (clampByte), with a the mask's value (mask-loops.ts blendMasked).
 */
function pasteRows(src: Uint8Array, sw: number, dst: Uint8Array, dw: number, c: number, x: number, y: number, x0: number, y0: number, x1: number, y1: number, mask: Float32Array | undefined): void {
  if (mask !== undefined) return blendMasked(src, sw, dst, dw, c, x, y, x0, y0, x1, y1, mask);
  const n = (x1 - x0) * c;
  for (let yy = y0; yy < y1; yy++) {
    const di = (yy * dw + x0) * c;
    const si = ((yy - y) * sw + (x0 - x)) * c;
    dst.set(src.subarray(si, si + n), di);
  }
}

function joinAlpha(image: ImageBatch, alpha: MaskBatch, ctx: NodeContext): ImageBatch {
  const planes = maskPlanes(alpha);
  const n = Math.max(image.frames.length, planes.length);
  checkSize(image.width, image.height, n);
  const frames = repeatToBatch(image.frames, n);
  const resized = repeatToBatch(planes, n).map((p) => resizePlane(p, image.width, image.height, 'bilinear', 'disabled', () => ctx.checkInterrupt()));
  return new ImageBatch(
    frames.map((f, b) => {
      ctx.checkInterrupt();
      const data = joinAlphaBytes(f.data, f.channels, resized[b]!.data, f.width * f.height);
      return new Frame(f.width, f.height, 4, data);
    }),
  );
}

function splitAlpha(image: ImageBatch): [ImageBatch, MaskBatch] {
  const rgb: Frame[] = [];
  const masks: MaskPlane[] = [];
  for (const f of image.frames) {
    const px = f.width * f.height;
    if (f.channels === 3) {
      rgb.push(f);
      masks.push(new MaskPlane(f.width, f.height, new Float32Array(px)));
      continue;
    }
    const [data, mask] = splitAlphaBytes(f.data, px);
    rgb.push(new Frame(f.width, f.height, 3, data));
    masks.push(new MaskPlane(f.width, f.height, mask));
  }
  return [new ImageBatch(rgb), new MaskBatch(masks)];
}

export const compositingNodes: NodeDefinition[] = [
  ...v3('comfy_extras.nodes_mask', [
    {
      name: 'ImageCompositeMasked',
      category: 'image',
      searchAliases: ['paste image', 'overlay', 'layer'],
      inputs: {
        required: {
          destination: IMAGE_IN,
          source: IMAGE_IN,
          x: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
          y: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
          resize_source: ['BOOLEAN', { default: false }],
        },
        optional: { mask: MASK_IN },
      },
      outputs: ['IMAGE'],
      execute: async ({ destination, source, x, y, resize_source, mask }, ctx) => [await compositeMasked(destination, source, x, y, resize_source, mask ?? undefined, ctx)],
    },
  ]),
  ...v3('comfy_extras.nodes_compositing', [
    {
      name: 'SplitImageWithAlpha',
      displayName: 'Split Image with Alpha',
      category: 'mask/compositing',
      searchAliases: ['extract alpha', 'separate transparency', 'remove alpha'],
      inputs: { required: { image: IMAGE_IN } },
      outputs: ['IMAGE', 'MASK'],
      execute: ({ image }) => splitAlpha(image),
    },
    {
      name: 'JoinImageWithAlpha',
      displayName: 'Join Image with Alpha',
      category: 'mask/compositing',
      searchAliases: ['add transparency', 'apply alpha', 'composite alpha', 'RGBA'],
      inputs: { required: { image: IMAGE_IN, alpha: MASK_IN } },
      outputs: ['IMAGE'],
      execute: ({ image, alpha }, ctx) => [joinAlpha(image, alpha, ctx)],
    },
  ]),
];
