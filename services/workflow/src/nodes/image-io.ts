import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import sharp from '../files/sharp.ts';
import { asciiJson, textChunkParts } from '../files/png.ts';
import { parseAnnotated, safeJoin, UnsafePathError } from '../files/paths.ts';
import type { NodeContext, NodeDefinition, NodeEnv, NodeScope } from './api.ts';
import { checkSize, Frame, ImageBatch, MaskBatch, MaskPlane, MAX_BATCH, MAX_IMAGE_SIDE } from './image-types.ts';
import { existingInput, inputPath, listInputFiles } from './input-files.ts';
import { channelUnits } from './mask-loops.ts';
import { takesPendingImages } from './pending-images.ts';

const IMAGE_EXT = /\.(png|jpe?g|webp|gif|bmp|tiff?|avif)$/i;

/** Image files directly in the input folder, as the reference's LoadImage lists them. */
export function listInputImages(inputDir: string): string[] {
  return listInputFiles(inputDir, IMAGE_EXT);
}

/** Resolves an image name as LoadImage takes it (`sub/name.png`, `name.png [output]`). */
export const imagePath = inputPath;

const existingImage = existingInput;

/** An image LoadImage may open for this caller: a file of its input folder, or an output/temp file its scope lets it read. */
export async function readableImage(scope: NodeScope, name: unknown): Promise<string | undefined> {
  const file = existingImage(scope.dirs, name);
  if (!file || !scope.canRead) return file;
  const { name: rel, type } = parseAnnotated(name as string, 'input');
  if (type === 'input') return file;
  const slash = rel.lastIndexOf('/');
  return (await scope.canRead({ type, subfolder: slash < 0 ? '' : rel.slice(0, slash), filename: rel.slice(slash + 1) })) ? file : undefined;
}

/**
 * SHA-256 digests of image files by their stat (inode, size, modification
 * and change times in nanoseconds): a file rewritten in any way changes its
 * ctime, so an unchanged stat means unchanged bytes and the file is not read
 * and hashed again on every prompt (about 1-4 ms for a 2 MB image). File
 * times tick in clock ticks of a few milliseconds, so a file changed within
 * the last two seconds is hashed but not remembered (as git's racy-clean rule).
 */
const digests = new Map<string, string>();
const DIGESTS_KEPT = 1024;

function fileDigest(file: string): string {
  const st = fs.statSync(file, { bigint: true });
  const key = `${file}\0${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  let d = digests.get(key);
  if (d === undefined) {
    d = createHash('sha256').update(fs.readFileSync(file)).digest('hex');
    if (Date.now() - Number(st.ctimeNs / 1_000_000n) < 2000 || Date.now() - Number(st.mtimeNs / 1_000_000n) < 2000) return d;
    if (digests.size >= DIGESTS_KEPT) digests.delete(digests.keys().next().value!);
    digests.set(key, d);
  }
  return d;
}

/** IS_CHANGED of a loaded image: its content hash; a file outside the input folder behind a read check always re-runs. */
export function imageChanged(scope: NodeScope, name: unknown): unknown {
  if (scope.canRead && typeof name === 'string' && parseAnnotated(name, 'input').type !== 'input') return NaN;
  const file = existingImage(scope.dirs, name);
  return file ? fileDigest(file) : NaN;
}

/**
 * What every node that loads an image file by name shares (LoadImage, LoadImageOutput, WebcamCapture):
 * VALIDATE_INPUTS and IS_CHANGED of its `image` input, and the load itself.
 */
export function imageFileInput(dirs: NodeEnv['dirs']): Pick<NodeDefinition, 'validateInputs' | 'isChanged'> {
  return {
    validateInputs: {
      inputs: ['image'],
      fn: async ({ image }, scope) => ((await readableImage(scope ?? { dirs }, image)) ? true : `Invalid image file: ${image}`),
    },
    isChanged: ({ image }, scope) => imageChanged(scope ?? { dirs }, image),
  };
}

/** Decodes the image file a node names (its IMAGE and the MASK from its alpha); a name it may not read is FileNotFoundError. */
export async function loadImageFile(env: NodeScope, image: unknown): Promise<{ image: ImageBatch; mask: MaskBatch }> {
  const file = await readableImage(env, image);
  if (!file) throw Object.assign(new Error(`Invalid image file: ${image}`), { pyType: 'FileNotFoundError' });
  return decodeImage(file);
}

export async function decodeImage(file: string | Buffer): Promise<{ image: ImageBatch; mask: MaskBatch }> {
  const meta = await sharp(file, { limitInputPixels: MAX_IMAGE_SIDE * MAX_IMAGE_SIDE, animated: true }).metadata();
  const pages = Math.min(meta.pages ?? 1, MAX_BATCH);
  const width = meta.width!;
  const height = meta.pageHeight ?? meta.height!;
  checkSize(width, height, pages);
  const frames: Frame[] = [];
  const planes: MaskPlane[] = [];
  for (let p = 0; p < pages; p++) {
    const pipeline = sharp(file, { page: p, limitInputPixels: MAX_IMAGE_SIDE * MAX_IMAGE_SIDE }).rotate();
    // Without alpha, libvips hands over RGB directly (no per-pixel split) and the mask is the reference's 64x64 zeros.
    if (!meta.hasAlpha) {
      const { data, info } = await pipeline.removeAlpha().raw().toBuffer({ resolveWithObject: true });
      if (frames.length > 0 && (info.width !== frames[0]!.width || info.height !== frames[0]!.height)) continue;
      frames.push(new Frame(info.width, info.height, 3, data));
      planes.push(new MaskPlane(64, 64, new Float32Array(64 * 64)));
      continue;
    }
    const { data, info } = await pipeline.ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    // Frames of another size than the first are dropped, as the reference does.
    if (frames.length > 0 && (info.width !== frames[0]!.width || info.height !== frames[0]!.height)) continue;
    const rgb = Buffer.alloc(info.width * info.height * 3);
    const mask = new Float32Array(info.width * info.height);
    for (let i = 0, j = 0, k = 0; i < data.length; i += 4, j += 3, k++) {
      rgb[j] = data[i]!;
      rgb[j + 1] = data[i + 1]!;
      rgb[j + 2] = data[i + 2]!;
      mask[k] = 1 - data[i + 3]! / 255;
    }
    frames.push(new Frame(info.width, info.height, 3, rgb));
    planes.push(new MaskPlane(info.width, info.height, mask));
  }
  return { image: new ImageBatch(frames), mask: new MaskBatch(planes) };
}

/**
 * LoadImageMask: one channel of the first frame as a mask (the image is read
 * as RGBA, so an image without alpha gives an all-zero mask of its size).
 */
export async function decodeMaskChannel(file: string | Buffer, channel: number): Promise<MaskBatch> {
  const meta = await sharp(file, { limitInputPixels: MAX_IMAGE_SIDE * MAX_IMAGE_SIDE }).metadata();
  checkSize(meta.width!, meta.pageHeight ?? meta.height!);
  const { data, info } = await sharp(file, { limitInputPixels: MAX_IMAGE_SIDE * MAX_IMAGE_SIDE })
    .rotate()
    .ensureAlpha()
    .extractChannel(channel as 0 | 1 | 2 | 3)
    .raw()
    .toBuffer({ resolveWithObject: true });
  // byte / 255 (alpha: 1 − byte / 255), each rounded once to float32.
  const mask = channelUnits(data, info.width * info.height, 1, 0, channel === 3);
  return new MaskBatch([new MaskPlane(info.width, info.height, mask)]);
}

/** A frame as PNG; a pending frame is encoded in the libvips pipeline that makes its pixels. */
export async function encodePng(frame: Frame, compressionLevel = 4): Promise<Buffer> {
  return frame.pipeline().png({ compressionLevel }).toBuffer();
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

/** folder_paths.get_save_image_path: %vars%, subfolder from the prefix, next free counter for that prefix. */
export function saveImagePath(prefix: string, outputDir: string, width: number, height: number) {
  if (prefix.includes('%')) {
    const now = new Date();
    prefix = prefix
      .replaceAll('%width%', String(width))
      .replaceAll('%height%', String(height))
      .replaceAll('%year%', String(now.getFullYear()))
      .replaceAll('%month%', pad2(now.getMonth() + 1))
      .replaceAll('%day%', pad2(now.getDate()))
      .replaceAll('%hour%', pad2(now.getHours()))
      .replaceAll('%minute%', pad2(now.getMinutes()))
      .replaceAll('%second%', pad2(now.getSeconds()));
  }
  const norm = path.posix.normalize(prefix.replaceAll('\\', '/'));
  const subfolder = path.posix.dirname(norm) === '.' ? '' : path.posix.dirname(norm);
  const filename = path.posix.basename(norm);
  let folder: string;
  try {
    folder = safeJoin(outputDir, subfolder, filename === '' ? 'x' : filename);
  } catch (err) {
    if (err instanceof UnsafePathError) throw new Error('**** ERROR: Saving image outside the output folder is not allowed.');
    throw err;
  }
  folder = path.dirname(folder);
  fs.mkdirSync(folder, { recursive: true });
  let counter = 1;
  const lower = filename.toLowerCase();
  for (const f of fs.readdirSync(folder)) {
    if (f.slice(0, filename.length).toLowerCase() !== lower || f[filename.length] !== '_') continue;
    // parseInt stops at the first '_' (or any other non-digit), as splitting there would.
    const digits = Number.parseInt(f.slice(filename.length + 1), 10);
    if (Number.isFinite(digits) && digits + 1 > counter) counter = digits + 1;
  }
  return { folder, filename, counter, subfolder };
}

/** Writes the pieces of a new file in order ('wx': fails with EEXIST when the name is taken). */
function writeNew(file: string, parts: Buffer[]): void {
  const fd = fs.openSync(file, 'wx');
  try {
    let rest = parts.filter((p) => p.length > 0);
    while (rest.length > 0) {
      let n = fs.writevSync(fd, rest);
      // A short write: drop what was written, keep the rest of a partly written piece.
      while (rest.length > 0 && n >= rest[0]!.length) n -= rest.shift()!.length;
      if (rest.length > 0 && n > 0) rest[0] = rest[0]!.subarray(n);
    }
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
    throw err;
  }
  fs.closeSync(fd);
}

/** Writes a batch as PNG files with the prompt and extra_pnginfo in tEXt chunks; never overwrites. */
export async function saveBatch(
  images: ImageBatch,
  prefix: string,
  type: 'output' | 'temp',
  ctx: NodeContext,
  hidden: { prompt?: unknown; extra_pnginfo?: unknown },
  compressionLevel: number,
): Promise<Array<Record<string, unknown>>> {
  const dir = ctx.env.dirs[type];
  const target = saveImagePath(prefix, dir, images.width, images.height);
  const { folder, filename, subfolder } = target;
  let { counter } = target;
  const results: Array<Record<string, unknown>> = [];
  const texts: Array<[string, string]> = [];
  if (hidden.prompt !== undefined && hidden.prompt !== null) texts.push(['prompt', asciiJson(hidden.prompt)]);
  if (hidden.extra_pnginfo && typeof hidden.extra_pnginfo === 'object') {
    for (const [k, v] of Object.entries(hidden.extra_pnginfo as Record<string, unknown>)) texts.push([k, asciiJson(v)]);
  }
  for (let batch = 0; batch < images.frames.length; batch++) {
    ctx.checkInterrupt();
    const parts = textChunkParts(await encodePng(images.frames[batch]!, compressionLevel), texts);
    const base = filename.replaceAll('%batch_num%', String(batch));
    // 'wx' makes two writers that computed the same counter take the next one instead of overwriting.
    for (;;) {
      const file = `${base}_${String(counter).padStart(5, '0')}_.png`;
      try {
        writeNew(path.join(folder, file), parts);
        const item: Record<string, unknown> = { filename: file, subfolder, type };
        const extra = await ctx.env.fileWritten?.({ filename: file, subfolder, type });
        if (extra) Object.assign(item, extra);
        results.push(item);
        counter++;
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        counter++;
      }
    }
  }
  return results;
}

export function imageIoNodes(dirs: NodeEnv['dirs']): NodeDefinition[] {
  return [
    {
      name: 'EmptyImage',
      displayName: 'EmptyImage',
      category: 'image',
      inputs: {
        required: {
          width: ['INT', { default: 512, min: 1, max: MAX_IMAGE_SIDE, step: 1 }],
          height: ['INT', { default: 512, min: 1, max: MAX_IMAGE_SIDE, step: 1 }],
          batch_size: ['INT', { default: 1, min: 1, max: MAX_BATCH }],
          color: ['INT', { default: 0, min: 0, max: 0xffffff, step: 1, display: 'color' }],
        },
      },
      outputs: ['IMAGE'],
      execute: ({ width, height, batch_size, color }) => {
        checkSize(width, height, batch_size);
        const px = Buffer.alloc(width * height * 3);
        const r = (color >> 16) & 0xff;
        const g = (color >> 8) & 0xff;
        const b = color & 0xff;
        for (let i = 0; i < px.length; i += 3) {
          px[i] = r;
          px[i + 1] = g;
          px[i + 2] = b;
        }
        const frames = Array.from({ length: batch_size }, () => new Frame(width, height, 3, px));
        return [new ImageBatch(frames)];
      },
    },
    {
      name: 'LoadImage',
      displayName: 'Load Image',
      category: 'image',
      essentialsCategory: 'Basics',
      searchAliases: ['load image', 'open image', 'import image', 'image input', 'upload image', 'read image', 'image loader'],
      inputs: { required: { image: [[], { image_upload: true }] } },
      dynamicInputs: (scope) => ({ required: { image: [listInputImages((scope?.dirs ?? dirs).input), { image_upload: true }] } }),
      outputs: ['IMAGE', 'MASK'],
      ...imageFileInput(dirs),
      execute: async ({ image }, ctx) => {
        const { image: img, mask } = await loadImageFile(ctx.env, image);
        return [img, mask];
      },
    },
    {
      name: 'LoadImageMask',
      displayName: 'Load Image (as Mask)',
      category: 'mask',
      searchAliases: ['import mask', 'alpha mask', 'channel mask'],
      inputs: { required: { image: [[], { image_upload: true }], channel: [['alpha', 'red', 'green', 'blue']] } },
      dynamicInputs: (scope) => ({ required: { image: [listInputImages((scope?.dirs ?? dirs).input), { image_upload: true }], channel: [['alpha', 'red', 'green', 'blue']] } }),
      outputs: ['MASK'],
      validateInputs: {
        inputs: ['image'],
        fn: async ({ image }, scope) => ((await readableImage(scope ?? { dirs }, image)) ? true : `Invalid image file: ${image}`),
      },
      isChanged: ({ image }, scope) => imageChanged(scope ?? { dirs }, image),
      execute: async ({ image, channel }, ctx) => {
        const file = await readableImage(ctx.env, image);
        if (!file) throw Object.assign(new Error(`Invalid image file: ${image}`), { pyType: 'FileNotFoundError' });
        return [await decodeMaskChannel(file, ['red', 'green', 'blue', 'alpha'].indexOf(channel))];
      },
    },
    takesPendingImages({
      name: 'SaveImage',
      displayName: 'Save Image',
      description: 'Saves the input images to your ComfyUI output directory.',
      category: 'image',
      searchAliases: ['save', 'save image', 'export image', 'output image', 'write image', 'download'],
      inputs: {
        required: {
          images: ['IMAGE', { tooltip: 'The images to save.' }],
          filename_prefix: ['STRING', { default: 'ComfyUI', tooltip: 'The prefix for the file to save. This may include formatting information such as %date:yyyy-MM-dd% or %Empty Latent Image.width% to include values from nodes.' }],
        },
        hidden: { prompt: 'PROMPT', extra_pnginfo: 'EXTRA_PNGINFO' },
      },
      outputs: [],
      outputNode: true,
      essentialsCategory: 'Basics',
      execute: async ({ images, filename_prefix, prompt, extra_pnginfo }, ctx) => ({
        ui: { images: await saveBatch(images as ImageBatch, String(filename_prefix), 'output', ctx, { prompt, extra_pnginfo }, 4) },
      }),
    }),
    takesPendingImages({
      name: 'PreviewImage',
      displayName: 'Preview Image',
      // PreviewImage subclasses SaveImage in the reference and inherits its description and essentials category.
      description: 'Saves the input images to your ComfyUI output directory.',
      category: 'image',
      essentialsCategory: 'Basics',
      searchAliases: ['preview', 'preview image', 'show image', 'view image', 'display image', 'image viewer'],
      inputs: { required: { images: ['IMAGE'] }, hidden: { prompt: 'PROMPT', extra_pnginfo: 'EXTRA_PNGINFO' } },
      outputs: [],
      outputNode: true,
      execute: async ({ images, prompt, extra_pnginfo }, ctx) => {
        const suffix = Array.from(randomBytes(5), (b) => 'abcdefghijklmnopqrstupvxyz'[b % 26]).join('');
        return { ui: { images: await saveBatch(images as ImageBatch, `ComfyUI_temp_${suffix}`, 'temp', ctx, { prompt, extra_pnginfo }, 1) } };
      },
    }),
  ];
}

