import sharp from '../files/sharp.ts';
import type { Sharp } from 'sharp';

/**
 * IMAGE and MASK values. The reference's IMAGE is a float tensor [B,H,W,C];
 * here a batch is an array of 8-bit raw RGB(A) frames that sharp reads and
 * writes without conversion, and a MASK batch an array of float planes.
 *
 * A frame may also be pending: libvips work (`FrameRecipe`) that has not run
 * yet, so that a consumer that hands pixels back to libvips (SaveImage's PNG
 * encoder) runs it in the same libvips pipeline instead of waiting for raw
 * pixels to be made, copied to JavaScript and read back. Code that reads
 * `data` needs the pixels made first (`materialise`); the node wrappers
 * (`materialisingInputs`) do that for every node that does not take pending
 * frames, so only the nodes that know about them ever see one.
 */
export interface FrameRecipe {
  /**
   * A new sharp pipeline ending in this frame's pixels (before any output
   * format is chosen). Called once per use: a sharp instance runs only once.
   * Every call must give the same pixels, as consumers of one cached output
   * may each build their own.
   */
  pipeline(): Sharp;
}

export class Frame {
  #data: Buffer | undefined;
  #making: Promise<Buffer> | undefined;
  /** How the pixels are made while the frame is pending (dropped once they are, with what it holds). */
  #recipe: FrameRecipe | undefined;
  constructor(
    readonly width: number,
    readonly height: number,
    readonly channels: 3 | 4,
    data: Buffer | Uint8Array | FrameRecipe,
  ) {
    if (ArrayBuffer.isView(data)) {
      // A pack may hand over any Uint8Array.
      const bytes = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
      if (bytes.length !== width * height * channels) throw new Error(`frame data is ${bytes.length} bytes, expected ${width * height * channels}`);
      this.#data = bytes;
    } else this.#recipe = data;
  }
  /** The raw pixels; throws while the frame is pending (see `materialise`). */
  get data(): Buffer {
    if (this.#data === undefined) throw new Error(`${this.describe()} is pending: its pixels are read before they were made`);
    return this.#data;
  }
  get pending(): boolean {
    return this.#data === undefined;
  }
  /** Makes the pixels of a pending frame once (later and concurrent calls share them). */
  materialise(): Promise<Buffer> {
    if (this.#data !== undefined) return Promise.resolve(this.#data);
    this.#making ??= this.#recipe!
      .pipeline()
      .raw()
      .toBuffer({ resolveWithObject: true })
      .then(({ data, info }) => {
        if (info.width !== this.width || info.height !== this.height || info.channels !== this.channels) {
          throw new Error(`${this.describe()}: its recipe made ${info.width}x${info.height}x${info.channels}`);
        }
        this.#data = data;
        this.#recipe = undefined;
        return data;
      });
    return this.#making;
  }
  /** A sharp pipeline of this frame's pixels: the recipe's while pending, else over the raw pixels. */
  pipeline(): Sharp {
    if (this.#data === undefined) return this.#recipe!.pipeline();
    return sharp(this.#data, { raw: { width: this.width, height: this.height, channels: this.channels } });
  }
  describe(): string {
    return `<IMAGE ${this.width}x${this.height}x${this.channels}>`;
  }
  toJSON(): string {
    return this.describe();
  }
}

export class MaskPlane {
  constructor(
    readonly width: number,
    readonly height: number,
    /** Values 0..1, row-major. */
    readonly data: Float32Array,
  ) {}
  describe(): string {
    return `<MASK ${this.width}x${this.height}>`;
  }
  toJSON(): string {
    return this.describe();
  }
}

/** IMAGE: a batch of frames of one size. */
export class ImageBatch {
  constructor(readonly frames: Frame[]) {
    if (frames.length === 0) throw new Error('an image batch needs at least one image');
  }
  get width(): number {
    return this.frames[0]!.width;
  }
  /** Whether a frame is pending (see Frame). */
  get pending(): boolean {
    return this.frames.some((f) => f.pending);
  }
  /** Makes the pixels of every pending frame. */
  async materialise(): Promise<this> {
    await Promise.all(this.frames.map((f) => f.materialise()));
    return this;
  }
  get height(): number {
    return this.frames[0]!.height;
  }
  describe(): string {
    return `<IMAGE batch of ${this.frames.length}, ${this.width}x${this.height}>`;
  }
  toJSON(): string {
    return this.describe();
  }
}

/** MASK: a batch of planes of one size. */
export class MaskBatch {
  constructor(readonly planes: MaskPlane[]) {}
  describe(): string {
    return `<MASK batch of ${this.planes.length}>`;
  }
  toJSON(): string {
    return this.describe();
  }
}

/** Largest side an image node will create or load: bounds memory (about 400 MB for a 10k×10k RGBA frame). */
export const MAX_IMAGE_SIDE = 16384;
export const MAX_IMAGE_PIXELS = 64 * 1024 * 1024;
export const MAX_BATCH = 4096;

export function checkSize(width: number, height: number, batch = 1): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) throw new RangeError(`invalid image size ${width}x${height}`);
  if (width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE || width * height * batch > MAX_IMAGE_PIXELS) {
    throw new RangeError(`image of ${batch}×${width}×${height} pixels exceeds the limit of ${MAX_IMAGE_PIXELS} pixels`);
  }
}

/** The reference's MAX_RESOLUTION (nodes.py): the largest side an INT size input accepts. */
export const MAX_RESOLUTION = MAX_IMAGE_SIDE;

/** A zeroed frame after checking its size against the limits. */
export function newFrame(width: number, height: number, channels: 3 | 4, batch = 1): Frame {
  checkSize(width, height, batch);
  return new Frame(width, height, channels, Buffer.alloc(width * height * channels));
}

/** A zeroed mask plane after checking its size against the limits. */
export function newPlane(width: number, height: number, batch = 1): MaskPlane {
  checkSize(width, height, batch);
  return new MaskPlane(width, height, new Float32Array(width * height));
}

/** Float 0..1 → byte, rounding to nearest (the reference keeps floats; a byte is the nearest of its 256 levels). */
export function toByte(v: number): number {
  return v <= 0 ? 0 : v >= 1 ? 255 : Math.round(v * 255);
}

/** Float already on the 0..255 scale → byte. */
export function clampByte(v: number): number {
  return v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v);
}

/** A frame with 3 or 4 channels: drops alpha, or adds an opaque one (the reference pads with 1.0). */
export function withChannels(f: Frame, channels: 3 | 4): Frame {
  if (f.channels === channels) return f;
  const n = f.width * f.height;
  const out = Buffer.alloc(n * channels);
  if (channels === 3) {
    for (let i = 0, j = 0; i < n; i++, j += 4) {
      out[i * 3] = f.data[j]!;
      out[i * 3 + 1] = f.data[j + 1]!;
      out[i * 3 + 2] = f.data[j + 2]!;
    }
  } else {
    for (let i = 0, j = 0; i < n; i++, j += 3) {
      out[i * 4] = f.data[j]!;
      out[i * 4 + 1] = f.data[j + 1]!;
      out[i * 4 + 2] = f.data[j + 2]!;
      out[i * 4 + 3] = 255;
    }
  }
  return new Frame(f.width, f.height, channels, out);
}

/** comfy.utils.repeat_to_batch_size: the first `n` items, cycling through them when there are fewer. */
export function repeatToBatch<T>(items: readonly T[], n: number): T[] {
  if (items.length === n) return [...items];
  if (items.length > n) return items.slice(0, n);
  return Array.from({ length: n }, (_, i) => items[i % items.length]!);
}

/** The planes of a mask batch, which must all have one size (a tensor [B,H,W]). */
export function maskPlanes(m: MaskBatch): MaskPlane[] {
  if (m.planes.length === 0) throw new Error('a mask batch needs at least one mask');
  return m.planes;
}

/**
 * node_helpers.image_alpha_fix: brings two images to the same channel count.
 * The reference pads the destination when the *source* has fewer channels
 * (giving it a fifth channel); the source gains the opaque alpha instead.
 */
export function alphaFix(dst: ImageBatch, src: ImageBatch): [ImageBatch, ImageBatch] {
  const dc = dst.frames[0]!.channels;
  const sc = src.frames[0]!.channels;
  if (dc === sc) return [dst, src];
  if (dc < sc) return [dst, new ImageBatch(src.frames.map((f) => withChannels(f, dc)))];
  return [dst, new ImageBatch(src.frames.map((f) => withChannels(f, sc === 3 ? 4 : sc)))];
}

/** Python's round(): halves go to the even neighbour. */
export function pyRound(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
