import type { NodeContext, NodeDefinition } from './api.ts';
import { checkSize, Frame, ImageBatch, MaskBatch, MaskPlane, MAX_BATCH, MAX_RESOLUTION, newFrame, pyRound, withChannels } from './image-types.ts';
import { takesPendingImages } from './pending-images.ts';
import { CROP_METHODS, cropFrame, resizeFrame, UPSCALE_METHODS, type UpscaleMethod } from './resample.ts';
import { combo, IMAGE_IN, v3 } from './schema.ts';

async function resizeBatch(images: ImageBatch, w: number, h: number, method: UpscaleMethod, crop: 'disabled' | 'center', ctx: NodeContext): Promise<ImageBatch> {
  checkSize(w, h, images.frames.length);
  const frames: Frame[] = [];
  for (const f of images.frames) {
    ctx.checkInterrupt();
    frames.push(await resizeFrame(f, w, h, method, crop, () => ctx.checkInterrupt()));
  }
  return new ImageBatch(frames);
}

function mapFrames(images: ImageBatch, fn: (f: Frame) => Frame, ctx: NodeContext): ImageBatch {
  return new ImageBatch(
    images.frames.map((f) => {
      ctx.checkInterrupt();
      return fn(f);
    }),
  );
}

/** torch.rot90(image, k, dims=[2, 1]): k quarter turns clockwise. */
function rotateFrame(f: Frame, k: number): Frame {
  const { width: w, height: h, channels: c, data } = f;
  if (k === 0) return f;
  const ow = k === 2 ? w : h;
  const oh = k === 2 ? h : w;
  const out = Buffer.alloc(data.length);
  for (let y = 0; y < oh; y++) {
    for (let x = 0; x < ow; x++) {
      // Source pixel of output (x, y) for each turn.
      const sx = k === 1 ? y : k === 2 ? w - 1 - x : w - 1 - y;
      const sy = k === 1 ? h - 1 - x : k === 2 ? h - 1 - y : x;
      data.copy(out, (y * ow + x) * c, (sy * w + sx) * c, (sy * w + sx + 1) * c);
    }
  }
  return new Frame(ow, oh, c, out);
}

function flipFrame(f: Frame, vertical: boolean): Frame {
  const { width: w, height: h, channels: c, data } = f;
  const out = Buffer.alloc(data.length);
  for (let y = 0; y < h; y++) {
    if (vertical) {
      data.copy(out, y * w * c, (h - 1 - y) * w * c, (h - y) * w * c);
      continue;
    }
    for (let x = 0; x < w; x++) data.copy(out, (y * w + x) * c, (y * w + (w - 1 - x)) * c, (y * w + (w - x)) * c);
  }
  return new Frame(w, h, c, out);
}

/** A frame of one colour per channel (values 0..255). */
function solidFrame(w: number, h: number, c: 3 | 4, value: number[]): Frame {
  const f = newFrame(w, h, c);
  // Buffer.fill repeats the pixel natively (a per-sample loop took ~15 ms at 1280²).
  f.data.fill(Buffer.from(value.slice(0, c)));
  return f;
}

/** Copies `src` into `dst` at (x, y); both have the same channel count. */
function paste(dst: Frame, src: Frame, x: number, y: number): void {
  const c = dst.channels;
  for (let r = 0; r < src.height; r++) src.data.copy(dst.data, ((y + r) * dst.width + x) * c, r * src.width * c, (r + 1) * src.width * c);
}

function padForOutpaint(images: ImageBatch, left: number, top: number, right: number, bottom: number, feathering: number, ctx: NodeContext): [ImageBatch, MaskBatch] {
  const d2 = images.height;
  const d3 = images.width;
  const w = d3 + left + right;
  const h = d2 + top + bottom;
  checkSize(w, h, images.frames.length);
  const frames = images.frames.map((f) => {
    ctx.checkInterrupt();
    // 0.5 grey, the nearest byte level (the reference keeps 0.5; its PNG writer truncates that to 127).
    const out = solidFrame(w, h, f.channels, [128, 128, 128, 128]);
    paste(out, f, left, top);
    return out;
  });
  const mask = new Float32Array(w * h).fill(1);
  const feather = feathering > 0 && feathering * 2 < d2 && feathering * 2 < d3;
  for (let i = 0; i < d2; i++) {
    if (!feather) {
      mask.fill(0, (top + i) * w + left, (top + i) * w + left + d3);
      continue;
    }
    for (let j = 0; j < d3; j++) {
      let v = 0;
      if (feather) {
        const d = Math.min(top !== 0 ? i : d2, bottom !== 0 ? d2 - i : d2, left !== 0 ? j : d3, right !== 0 ? d3 - j : d3);
        if (d < feathering) {
          const t = (feathering - d) / feathering;
          v = t * t;
        }
      }
      mask[(top + i) * w + left + j] = v;
    }
    if ((i & 255) === 255) ctx.checkInterrupt();
  }
  return [new ImageBatch(frames), new MaskBatch([new MaskPlane(w, h, mask)])];
}

const SPACING_COLORS: Record<string, number[]> = {
  white: [255, 255, 255, 255],
  black: [0, 0, 0, 255],
  red: [255, 0, 0, 255],
  green: [0, 255, 0, 255],
  blue: [0, 0, 255, 255],
};

async function stitch(
  image1: ImageBatch,
  image2: ImageBatch | undefined,
  direction: string,
  matchSize: boolean,
  spacing: number,
  spacingColor: string,
  ctx: NodeContext,
): Promise<ImageBatch> {
  if (!image2) return image1;
  const horizontal = direction === 'left' || direction === 'right';
  // Batches of different sizes: the shorter repeats its last image.
  const n = Math.max(image1.frames.length, image2.frames.length);
  let f1 = Array.from({ length: n }, (_, i) => image1.frames[Math.min(i, image1.frames.length - 1)]!);
  let f2 = Array.from({ length: n }, (_, i) => image2.frames[Math.min(i, image2.frames.length - 1)]!);
  if (matchSize) {
    const { width: w1, height: h1 } = f1[0]!;
    const aspect = f2[0]!.width / f2[0]!.height;
    const tw = horizontal ? Math.trunc(h1 * aspect) : w1;
    const th = horizontal ? h1 : Math.trunc(w1 / aspect);
    checkSize(tw, th, n);
    const resized: Frame[] = [];
    for (const f of image2.frames) resized.push(await resizeFrame(f, tw, th, 'lanczos', 'disabled', () => ctx.checkInterrupt()));
    f2 = Array.from({ length: n }, (_, i) => resized[Math.min(i, resized.length - 1)]!);
  } else {
    // Pads the other dimension, centred: white pads with 1.0 and every other colour with 0 (the reference's pad value).
    const padValue = spacingColor === 'white' ? 255 : 0;
    const h1 = f1[0]!.height;
    const h2 = f2[0]!.height;
    const w1 = f1[0]!.width;
    const w2 = f2[0]!.width;
    const pad = (f: Frame, tw: number, th: number) => {
      const out = solidFrame(tw, th, f.channels, [padValue, padValue, padValue, padValue]);
      paste(out, f, Math.trunc((tw - f.width) / 2), Math.trunc((th - f.height) / 2));
      return out;
    };
    if (horizontal && h1 !== h2) {
      const th = Math.max(h1, h2);
      if (h1 < th) f1 = f1.map((f) => pad(f, f.width, th));
      if (h2 < th) f2 = f2.map((f) => pad(f, f.width, th));
    } else if (!horizontal && w1 !== w2) {
      const tw = Math.max(w1, w2);
      if (w1 < tw) f1 = f1.map((f) => pad(f, tw, f.height));
      if (w2 < tw) f2 = f2.map((f) => pad(f, tw, f.height));
    }
  }
  const channels = Math.max(f1[0]!.channels, f2[0]!.channels) as 3 | 4;
  f1 = f1.map((f) => withChannels(f, channels));
  f2 = f2.map((f) => withChannels(f, channels));
  const space = spacing > 0 ? spacing + (spacing % 2) : 0;
  const out: Frame[] = [];
  for (let i = 0; i < n; i++) {
    ctx.checkInterrupt();
    const [a, b] = direction === 'left' || direction === 'up' ? [f2[i]!, f1[i]!] : [f1[i]!, f2[i]!];
    if (horizontal && a.height !== b.height) throw Object.assign(new Error(`Sizes of tensors must match except in dimension 2. Expected size ${a.height} but got size ${b.height}`), { pyType: 'RuntimeError' });
    if (!horizontal && a.width !== b.width) throw Object.assign(new Error(`Sizes of tensors must match except in dimension 1. Expected size ${a.width} but got size ${b.width}`), { pyType: 'RuntimeError' });
    const w = horizontal ? a.width + space + b.width : a.width;
    const h = horizontal ? a.height : a.height + space + b.height;
    checkSize(w, h, n);
    const frame = space > 0 ? solidFrame(w, h, channels, SPACING_COLORS[spacingColor]!) : newFrame(w, h, channels);
    paste(frame, a, 0, 0);
    paste(frame, b, horizontal ? a.width + space : 0, horizontal ? 0 : a.height + space);
    out.push(frame);
  }
  return new ImageBatch(out);
}

function batchImages(image1: ImageBatch, image2: ImageBatch): Promise<ImageBatch> | ImageBatch {
  const c1 = image1.frames[0]!.channels;
  const c2 = image2.frames[0]!.channels;
  const c = Math.max(c1, c2) as 3 | 4;
  const a = c1 === c ? image1.frames : image1.frames.map((f) => withChannels(f, c));
  let b = c2 === c ? image2.frames : image2.frames.map((f) => withChannels(f, c));
  checkSize(image1.width, image1.height, a.length + b.length);
  if (a.length + b.length > MAX_BATCH) throw new RangeError(`a batch of ${a.length + b.length} images exceeds the limit of ${MAX_BATCH}`);
  if (image2.width !== image1.width || image2.height !== image1.height) {
    return Promise.all(b.map((f) => resizeFrame(f, image1.width, image1.height, 'bilinear', 'center'))).then((r) => {
      b = r;
      return new ImageBatch([...a, ...b]);
    });
  }
  return new ImageBatch([...a, ...b]);
}

const SCALE_ALIASES = ['resize', 'resize image', 'scale image', 'image resize', 'zoom', 'zoom in', 'change size'];

export const imageTransformNodes: NodeDefinition[] = [
  {
    name: 'ImageScale',
    displayName: 'Upscale Image',
    category: 'image/upscaling',
    essentialsCategory: 'Image Tools',
    searchAliases: SCALE_ALIASES,
    inputs: {
      required: {
        image: ['IMAGE'],
        upscale_method: [[...UPSCALE_METHODS]],
        width: ['INT', { default: 512, min: 0, max: MAX_RESOLUTION, step: 1 }],
        height: ['INT', { default: 512, min: 0, max: MAX_RESOLUTION, step: 1 }],
        crop: [[...CROP_METHODS]],
      },
    },
    outputs: ['IMAGE'],
    execute: async ({ image, upscale_method, width, height, crop }, ctx) => {
      const img = image as ImageBatch;
      if (width === 0 && height === 0) return [img];
      if (width === 0) width = Math.max(1, pyRound((img.width * height) / img.height));
      else if (height === 0) height = Math.max(1, pyRound((img.height * width) / img.width));
      return [await resizeBatch(img, width, height, upscale_method, crop, ctx)];
    },
  },
  {
    name: 'ImageScaleBy',
    displayName: 'Upscale Image By',
    category: 'image/upscaling',
    inputs: {
      required: {
        image: ['IMAGE'],
        upscale_method: [[...UPSCALE_METHODS]],
        scale_by: ['FLOAT', { default: 1.0, min: 0.01, max: 8.0, step: 0.01 }],
      },
    },
    outputs: ['IMAGE'],
    execute: async ({ image, upscale_method, scale_by }, ctx) => {
      const img = image as ImageBatch;
      return [await resizeBatch(img, pyRound(img.width * scale_by), pyRound(img.height * scale_by), upscale_method, 'disabled', ctx)];
    },
  },
  {
    name: 'ImagePadForOutpaint',
    displayName: 'Pad Image for Outpainting',
    category: 'image',
    searchAliases: ['extend canvas', 'expand image'],
    inputs: {
      required: {
        image: ['IMAGE'],
        left: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 8 }],
        top: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 8 }],
        right: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 8 }],
        bottom: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 8 }],
        feathering: ['INT', { default: 40, min: 0, max: MAX_RESOLUTION, step: 1, advanced: true }],
      },
    },
    outputs: ['IMAGE', 'MASK'],
    execute: ({ image, left, top, right, bottom, feathering }, ctx) => padForOutpaint(image, left, top, right, bottom, feathering, ctx),
  },
  {
    name: 'ImageBatch',
    displayName: 'Batch Images',
    category: 'image',
    deprecated: true,
    searchAliases: ['combine images', 'merge images', 'stack images'],
    inputs: { required: { image1: ['IMAGE'], image2: ['IMAGE'] } },
    outputs: ['IMAGE'],
    execute: async ({ image1, image2 }) => [await batchImages(image1, image2)],
  },
  ...v3('comfy_extras.nodes_post_processing', [
    {
      name: 'ImageScaleToTotalPixels',
      category: 'image/upscaling',
      inputs: {
        required: {
          image: IMAGE_IN,
          upscale_method: combo(UPSCALE_METHODS),
          megapixels: ['FLOAT', { default: 1.0, min: 0.01, max: 16.0, step: 0.01 }],
          resolution_steps: ['INT', { default: 1, min: 1, max: 256, advanced: true }],
        },
      },
      outputs: ['IMAGE'],
      execute: async ({ image, upscale_method, megapixels, resolution_steps }, ctx) => {
        const img = image as ImageBatch;
        const scale = Math.sqrt((megapixels * 1024 * 1024) / (img.width * img.height));
        const steps = resolution_steps as number;
        const w = pyRound((img.width * scale) / steps) * steps;
        const h = pyRound((img.height * scale) / steps) * steps;
        return [await resizeBatch(img, w, h, upscale_method, 'disabled', ctx)];
      },
    },
  ]),
  ...v3('comfy_extras.nodes_images', [
    {
      name: 'ImageCrop',
      displayName: 'Crop Image',
      category: 'image/transform',
      searchAliases: ['trim'],
      inputs: {
        required: {
          image: IMAGE_IN,
          width: ['INT', { default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }],
          height: ['INT', { default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }],
          x: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
          y: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
        },
      },
      outputs: ['IMAGE'],
      execute: ({ image, width, height, x, y }, ctx) => {
        const img = image as ImageBatch;
        x = Math.min(x, img.width - 1);
        y = Math.min(y, img.height - 1);
        const w = Math.min(width, img.width - x);
        const h = Math.min(height, img.height - y);
        return [mapFrames(img, (f) => cropFrame(f, x, y, w, h), ctx)];
      },
    },
    takesPendingImages({
      name: 'RepeatImageBatch',
      category: 'image/batch',
      searchAliases: ['duplicate image', 'clone image'],
      inputs: { required: { image: IMAGE_IN, amount: ['INT', { default: 1, min: 1, max: 4096 }] } },
      outputs: ['IMAGE'],
      execute: ({ image, amount }) => {
        const img = image as ImageBatch;
        const n = img.frames.length * amount;
        checkSize(img.width, img.height, n);
        if (n > MAX_BATCH) throw new RangeError(`a batch of ${n} images exceeds the limit of ${MAX_BATCH}`);
        // Frames are immutable, so the copies share their pixels.
        return [new ImageBatch(Array.from({ length: n }, (_, i) => img.frames[i % img.frames.length]!))];
      },
    }),
    takesPendingImages({
      name: 'ImageFromBatch',
      category: 'image/batch',
      searchAliases: ['select image', 'pick from batch', 'extract image'],
      inputs: {
        required: { image: IMAGE_IN, batch_index: ['INT', { default: 0, min: 0, max: 4095 }], length: ['INT', { default: 1, min: 1, max: 4096 }] },
      },
      outputs: ['IMAGE'],
      execute: ({ image, batch_index, length }) => {
        const frames = (image as ImageBatch).frames;
        const start = Math.min(frames.length - 1, batch_index);
        const n = Math.min(frames.length - start, length);
        return [new ImageBatch(frames.slice(start, start + n))];
      },
    }),
    {
      name: 'ImageStitch',
      displayName: 'Image Stitch',
      description: 'Stitches image2 to image1 in the specified direction.\nIf image2 is not provided, returns image1 unchanged.\nOptional spacing can be added between images.',
      category: 'image/transform',
      searchAliases: ['combine images', 'join images', 'concatenate images', 'side by side'],
      inputs: {
        required: {
          image1: IMAGE_IN,
          direction: combo(['right', 'down', 'left', 'up'], { default: 'right' }),
          match_image_size: ['BOOLEAN', { default: true }],
          spacing_width: ['INT', { default: 0, min: 0, max: 1024, step: 2 }],
          spacing_color: combo(['white', 'black', 'red', 'green', 'blue'], { default: 'white' }),
        },
        optional: { image2: IMAGE_IN },
      },
      outputs: ['IMAGE'],
      execute: async ({ image1, image2, direction, match_image_size, spacing_width, spacing_color }, ctx) => [
        await stitch(image1, image2 ?? undefined, direction, match_image_size, spacing_width, spacing_color, ctx),
      ],
    },
    takesPendingImages({
      name: 'GetImageSize',
      displayName: 'Get Image Size',
      description: 'Returns width and height of the image, and passes it through unchanged.',
      category: 'image',
      searchAliases: ['dimensions', 'resolution', 'image info'],
      inputs: { required: { image: IMAGE_IN } },
      outputs: ['INT', 'INT', 'INT'],
      outputNames: ['width', 'height', 'batch_size'],
      execute: ({ image }) => [(image as ImageBatch).width, (image as ImageBatch).height, (image as ImageBatch).frames.length],
    }),
    {
      name: 'ImageRotate',
      displayName: 'Rotate',
      category: 'image/transform',
      searchAliases: ['turn', 'flip orientation'],
      inputs: { required: { image: IMAGE_IN, rotation: combo(['none', '90 degrees', '180 degrees', '270 degrees']) } },
      outputs: ['IMAGE'],
      execute: ({ image, rotation }, ctx) => {
        const k = rotation.startsWith('90') ? 1 : rotation.startsWith('180') ? 2 : rotation.startsWith('270') ? 3 : 0;
        return [k === 0 ? image : mapFrames(image, (f) => rotateFrame(f, k), ctx)];
      },
    },
    {
      name: 'ImageFlip',
      category: 'image/transform',
      searchAliases: ['mirror', 'reflect'],
      inputs: { required: { image: IMAGE_IN, flip_method: combo(['x-axis: vertically', 'y-axis: horizontally']) } },
      outputs: ['IMAGE'],
      execute: ({ image, flip_method }, ctx) => [mapFrames(image, (f) => flipFrame(f, flip_method.startsWith('x')), ctx)],
    },
    {
      name: 'ImageScaleToMaxDimension',
      category: 'image/upscaling',
      inputs: {
        required: {
          image: IMAGE_IN,
          upscale_method: combo(['area', 'lanczos', 'bilinear', 'nearest-exact', 'bilinear', 'bicubic']),
          largest_size: ['INT', { default: 512, min: 0, max: MAX_RESOLUTION, step: 1 }],
        },
      },
      outputs: ['IMAGE'],
      execute: async ({ image, upscale_method, largest_size }, ctx) => {
        const img = image as ImageBatch;
        let w = largest_size;
        let h = largest_size;
        if (img.height > img.width) w = pyRound((img.width / img.height) * largest_size);
        else if (img.width > img.height) h = pyRound((img.height / img.width) * largest_size);
        return [await resizeBatch(img, w, h, upscale_method, 'disabled', ctx)];
      },
    },
    {
      name: 'ResizeAndPadImage',
      category: 'image/transform',
      searchAliases: ['fit to size'],
      inputs: {
        required: {
          image: IMAGE_IN,
          target_width: ['INT', { default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }],
          target_height: ['INT', { default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }],
          padding_color: combo(['white', 'black']),
          interpolation: combo(['area', 'bicubic', 'nearest-exact', 'bilinear', 'lanczos']),
        },
      },
      outputs: ['IMAGE'],
      execute: async ({ image, target_width, target_height, padding_color, interpolation }, ctx) => {
        const img = image as ImageBatch;
        const scale = Math.min(target_width / img.width, target_height / img.height);
        const nw = Math.trunc(img.width * scale);
        const nh = Math.trunc(img.height * scale);
        checkSize(target_width, target_height, img.frames.length);
        const resized = await resizeBatch(img, nw, nh, interpolation, 'disabled', ctx);
        const v = padding_color === 'black' ? 0 : 255;
        return [
          mapFrames(
            resized,
            (f) => {
              const out = solidFrame(target_width, target_height, f.channels, [v, v, v, v]);
              paste(out, f, Math.trunc((target_width - nw) / 2), Math.trunc((target_height - nh) / 2));
              return out;
            },
            ctx,
          ),
        ];
      },
    },
  ]),
];
