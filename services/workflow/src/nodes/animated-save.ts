import fs from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import sharp from '../files/sharp.ts';
import type { Sharp } from 'sharp';
import { asciiJson } from '../files/png.ts';
import { defaultStillEncoder, type StillEncoder } from '../files/cwebp.ts';
import { defaultAnimationEncoder, type AnimationEncoder } from '../files/img2webp.ts';
import { encodeLossyRgba } from '../files/libwebp.ts';
import { pilExif, withExifChunk } from '../files/webp-exif.ts';
import type { NodeContext, NodeDefinition } from './api.ts';
import { checkSize, Frame, ImageBatch } from './image-types.ts';
import { saveImagePath } from './image-io.ts';
import { takesPendingImages } from './pending-images.ts';
import { combo, IMAGE_IN, v3 } from './schema.ts';

/**
 * SaveAnimatedPNG and SaveAnimatedWEBP (comfy_extras.nodes_images, through
 * the reference's ImageSaveHelper): the whole batch as one animated file,
 * each frame shown int(1000 / fps) ms, looping forever.
 *
 * APNG: written here from the frames' own PNG encodings (sharp's zlib
 * stream of each frame becomes its IDAT or fdAT data), with PIL's layout:
 * acTL, the first frame as the default image, full-size frames (disposal
 * none, blend source), consecutive identical frames merged into one with
 * the summed delay, and the prompt and extra_pnginfo in private `comf`
 * chunks after the image data (`keyword NUL json`). One frame left is a
 * plain PNG. WebP: libwebp (through @napi-rs/image for one lossy frame at
 * the default method, Google's cwebp for any other RGB frame, Google's
 * img2webp for several RGB frames, else libvips' webpsave: lossless or
 * quality, method = effort 0/4/6, the animation encoder for several
 * frames), the prompt in
 * EXIF Model as `prompt:<json>` and extra_pnginfo keys from Make downwards
 * as `<key>:<json>`, in PIL's EXIF layout (files/webp-exif.ts).
 */

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** The IHDR body and the concatenated IDAT data of a PNG that sharp wrote. */
function pngParts(png: Buffer): { ihdr: Buffer; data: Buffer } {
  let ihdr: Buffer | undefined;
  const idat: Buffer[] = [];
  for (let off = 8; off + 12 <= png.length; ) {
    const len = png.readUInt32BE(off);
    const type = png.toString('latin1', off + 4, off + 8);
    const body = png.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') ihdr = body;
    else if (type === 'IDAT') idat.push(body);
    off += 12 + len;
  }
  if (!ihdr) throw new Error('PNG without IHDR');
  return { ihdr, data: Buffer.concat(idat) };
}

function fcTL(seq: number, w: number, h: number, delayMs: number): Buffer {
  const b = Buffer.alloc(26);
  b.writeUInt32BE(seq, 0);
  b.writeUInt32BE(w, 4);
  b.writeUInt32BE(h, 8);
  b.writeUInt32BE(0, 12);
  b.writeUInt32BE(0, 16);
  b.writeUInt16BE(Math.min(65535, delayMs), 20);
  b.writeUInt16BE(1000, 22);
  b[24] = 0; // APNG_DISPOSE_OP_NONE
  b[25] = 0; // APNG_BLEND_OP_SOURCE
  return chunk('fcTL', b);
}

function hasPrompt(prompt: unknown): boolean {
  return prompt !== undefined && prompt !== null && !(typeof prompt === 'object' && Object.keys(prompt as object).length === 0);
}

function metadataTexts(prompt: unknown, extra: unknown): Array<[string, string]> {
  const texts: Array<[string, string]> = [];
  if (hasPrompt(prompt)) texts.push(['prompt', asciiJson(prompt)]);
  if (extra && typeof extra === 'object') for (const [k, v] of Object.entries(extra as Record<string, unknown>)) texts.push([k, asciiJson(v)]);
  return texts;
}

export async function encodeApng(frames: Frame[], delayMs: number, compressLevel: number, texts: Array<[string, string]>, ctx: NodeContext): Promise<Buffer> {
  // Merge runs of identical frames (PIL does, adding their durations).
  const runs: Array<{ frame: Frame; delay: number }> = [];
  for (const f of frames) {
    const last = runs[runs.length - 1];
    if (last && last.frame.channels === f.channels && last.frame.data.equals(f.data)) last.delay += delayMs;
    else runs.push({ frame: f, delay: delayMs });
  }
  const encoded: Array<{ ihdr: Buffer; data: Buffer }> = [];
  for (const r of runs) {
    ctx.checkInterrupt();
    encoded.push(pngParts(await r.frame.pipeline().png({ compressionLevel: compressLevel, adaptiveFiltering: true }).toBuffer()));
  }
  const { width: w, height: h } = frames[0]!;
  const parts: Buffer[] = [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', encoded[0]!.ihdr)];
  if (runs.length > 1) {
    const actl = Buffer.alloc(8);
    actl.writeUInt32BE(runs.length, 0);
    actl.writeUInt32BE(0, 4);
    parts.push(chunk('acTL', actl));
  }
  let seq = 0;
  encoded.forEach((e, i) => {
    if (runs.length > 1) parts.push(fcTL(seq++, w, h, runs[i]!.delay));
    if (i === 0) {
      parts.push(chunk('IDAT', e.data));
      return;
    }
    const body = Buffer.alloc(4 + e.data.length);
    body.writeUInt32BE(seq++, 0);
    e.data.copy(body, 4);
    parts.push(chunk('fdAT', body));
  });
  for (const [k, v] of texts) parts.push(chunk('comf', Buffer.concat([Buffer.from(k, 'latin1'), Buffer.from([0]), Buffer.from(v, 'latin1')])));
  parts.push(chunk('IEND', Buffer.alloc(0)));
  return Buffer.concat(parts);
}

/**
 * The reference's EXIF entries: the prompt in Model (0x0110) as `prompt:<json>`, then each extra_pnginfo key from
 * Make (0x010f) downwards as `<key>:<json>`.
 */
function exifEntries(texts: Array<[string, string]>, withPrompt: boolean): Array<[number, string]> {
  const entries: Array<[number, string]> = [];
  let tag = 0x010f;
  texts.forEach(([k, v], i) => {
    if (withPrompt && i === 0) entries.push([0x0110, `prompt:${v}`]);
    else {
      if (tag < 0) throw new Error('extra_pnginfo has more entries than the EXIF tags below Make (0x010f) can hold');
      entries.push([tag--, `${k}:${v}`]);
    }
  });
  return entries;
}

/** The file SaveAnimatedWEBP writes for `frames` (EXIF included); exported for the fallback tests. */
export async function encodeWebp(
  frames: Frame[],
  delayMs: number,
  lossless: boolean,
  quality: number,
  method: number,
  exif: Buffer,
  stillEncoder: StillEncoder = defaultStillEncoder(),
  animationEncoder: AnimationEncoder = defaultAnimationEncoder(),
): Promise<Buffer> {
  const { width: w, height: h, channels: c } = frames[0]!;
  checkSize(w, h, frames.length);
  let bytes: Buffer | null = null;
  // One lossy frame at the default method: libwebp through @napi-rs/image (files/libwebp.ts: the same bytes for
  // less CPU), from the frame's own pipeline, so that a pending frame (LoadImage's) is decoded by libvips straight
  // into the RGBA the encoder takes.
  if (frames.length === 1 && !lossless && method === 4 && c === 3) {
    bytes = await encodeLossyRgba(await frames[0]!.pipeline().ensureAlpha().raw().toBuffer(), w, h, quality);
  }
  // Any other single RGB frame: Google's libwebp build in this process (files/webp-native.ts), or where it was not
  // built its cwebp (files/cwebp.ts): the reference's bytes for less CPU than libvips' build, and quality 0, which
  // sharp refuses.
  if (!bytes && frames.length === 1 && c === 3) {
    bytes = await stillEncoder.encodeRgb(await frames[0]!.materialise(), w, h, lossless, quality, method);
  }
  // Several RGB frames: libwebp's animation encoder in this process, or Google's img2webp (files/img2webp.ts): the
  // reference's keyframe settings, which libvips does not expose, so its lossy animations were not the reference's.
  if (!bytes && frames.length > 1 && frames.every((f) => f.channels === 3)) {
    const rgb = await Promise.all(frames.map((f) => f.materialise()));
    bytes = await animationEncoder.encodeAnimationRgb(rgb, w, h, delayMs, lossless, quality, method);
  }
  if (!bytes) {
    // libvips writes one frame as a still image, as the reference's PIL does; several as one tall raw image of pages.
    let img: Sharp;
    if (frames.length === 1) img = frames[0]!.pipeline();
    else {
      await Promise.all(frames.map((f) => f.materialise()));
      const raw = Buffer.concat(frames.map((f) => (f.channels === c ? f.data : Buffer.alloc(w * h * c))));
      img = sharp(raw, { raw: { width: w, height: h * frames.length, channels: c, pageHeight: h } });
    }
    bytes = await img.webp({ lossless, quality, effort: method, loop: 0, delay: frames.map(() => Math.min(65535, delayMs)) }).toBuffer();
  }
  return withExifChunk(bytes, exif);
}

/** Writes `bytes` under the next free counter of `prefix` in the output folder; never overwrites. */
async function writeOutput(prefix: string, ext: string, first: Frame, bytes: Buffer, ctx: NodeContext): Promise<Record<string, unknown>> {
  const target = saveImagePath(prefix, ctx.env.dirs.output, first.width, first.height);
  for (let counter = target.counter; ; counter++) {
    const file = `${target.filename}_${String(counter).padStart(5, '0')}_.${ext}`;
    try {
      fs.writeFileSync(path.join(target.folder, file), bytes, { flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw err;
    }
    const item: Record<string, unknown> = { filename: file, subfolder: target.subfolder, type: 'output' };
    const extra = await ctx.env.fileWritten?.({ filename: file, subfolder: target.subfolder, type: 'output' });
    if (extra) Object.assign(item, extra);
    return item;
  }
}

function uiOf(item: Record<string, unknown>, frames: number): Record<string, unknown[]> {
  return frames > 1 ? { images: [item], animated: [true] } : { images: [item] };
}

const WEBP_METHODS: Record<string, number> = { default: 4, fastest: 0, slowest: 6 };

export const animatedSaveNodes: NodeDefinition[] = v3('comfy_extras.nodes_images', [
  takesPendingImages({
    name: 'SaveAnimatedWEBP',
    category: 'image/animation',
    inputs: {
      required: {
        images: IMAGE_IN,
        filename_prefix: ['STRING', { default: 'ComfyUI' }],
        fps: ['FLOAT', { default: 6.0, min: 0.01, max: 1000.0, step: 0.01 }],
        lossless: ['BOOLEAN', { default: true }],
        quality: ['INT', { default: 80, min: 0, max: 100 }],
        method: combo(Object.keys(WEBP_METHODS)),
      },
      hidden: { prompt: 'PROMPT', extra_pnginfo: 'EXTRA_PNGINFO' },
    },
    outputs: [],
    outputNode: true,
    execute: async ({ images, filename_prefix, fps, lossless, quality, method, prompt, extra_pnginfo }, ctx) => {
      const frames = (images as ImageBatch).frames;
      const texts = metadataTexts(prompt, extra_pnginfo);
      const exif = pilExif(exifEntries(texts, hasPrompt(prompt)));
      const bytes = await encodeWebp(frames, Math.trunc(1000 / fps), lossless === true, quality, WEBP_METHODS[method] ?? 4, exif);
      return { ui: uiOf(await writeOutput(String(filename_prefix), 'webp', frames[0]!, bytes, ctx), frames.length) };
    },
  }),
  {
    name: 'SaveAnimatedPNG',
    category: 'image/animation',
    inputs: {
      required: {
        images: IMAGE_IN,
        filename_prefix: ['STRING', { default: 'ComfyUI' }],
        fps: ['FLOAT', { default: 6.0, min: 0.01, max: 1000.0, step: 0.01 }],
        compress_level: ['INT', { default: 4, min: 0, max: 9, advanced: true }],
      },
      hidden: { prompt: 'PROMPT', extra_pnginfo: 'EXTRA_PNGINFO' },
    },
    outputs: [],
    outputNode: true,
    execute: async ({ images, filename_prefix, fps, compress_level, prompt, extra_pnginfo }, ctx) => {
      const frames = (images as ImageBatch).frames;
      const bytes = await encodeApng(frames, Math.trunc(1000 / fps), compress_level, metadataTexts(prompt, extra_pnginfo), ctx);
      return { ui: uiOf(await writeOutput(String(filename_prefix), 'png', frames[0]!, bytes, ctx), frames.length) };
    },
  },
]);
