import type { NodeContext, NodeDefinition } from './api.ts';
import { alphaFix, checkSize, clampByte, Frame, ImageBatch, MaskBatch, MaskPlane, maskPlanes, MAX_RESOLUTION, repeatToBatch, toByte } from './image-types.ts';
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
    const c = d.channels;
    const data = Buffer.from(d.data);
    const m = masks?.[b];
    for (let yy = y0; yy < y1; yy++) {
      for (let xx = x0; xx < x1; xx++) {
        const di = (yy * dw + xx) * c;
        const si = ((yy - y) * sw + (xx - x)) * c;
        if (!m) {
          s.data.copy(data, di, si, si + c);
          continue;
        }
        const a = m.data[(yy - y) * sw + (xx - x)]!;
        for (let ch = 0; ch < c; ch++) data[di + ch] = clampByte(a * s.data[si + ch]! + (1 - a) * d.data[di + ch]!);
      }
    }
    out.push(new Frame(dw, dh, c, data));
  }
  return new ImageBatch(out);
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
      const px = f.width * f.height;
      const data = Buffer.alloc(px * 4);
      const a = resized[b]!.data;
      for (let i = 0; i < px; i++) {
        data[i * 4] = f.data[i * f.channels]!;
        data[i * 4 + 1] = f.data[i * f.channels + 1]!;
        data[i * 4 + 2] = f.data[i * f.channels + 2]!;
        data[i * 4 + 3] = toByte(1 - a[i]!);
      }
      return new Frame(f.width, f.height, 4, data);
    }),
  );
}

function splitAlpha(image: ImageBatch): [ImageBatch, MaskBatch] {
  const rgb: Frame[] = [];
  const masks: MaskPlane[] = [];
  for (const f of image.frames) {
    const px = f.width * f.height;
    const mask = new Float32Array(px);
    if (f.channels === 3) {
      rgb.push(f);
    } else {
      const data = Buffer.alloc(px * 3);
      for (let i = 0; i < px; i++) {
        data[i * 3] = f.data[i * 4]!;
        data[i * 3 + 1] = f.data[i * 4 + 1]!;
        data[i * 3 + 2] = f.data[i * 4 + 2]!;
        mask[i] = 1 - f.data[i * 4 + 3]! / 255;
      }
      rgb.push(new Frame(f.width, f.height, 3, data));
    }
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
