/**
 * IMAGE and MASK values. The reference's IMAGE is a float tensor [B,H,W,C];
 * here a batch is an array of 8-bit raw RGB(A) frames that sharp reads and
 * writes without conversion, and a MASK batch an array of float planes.
 */
export class Frame {
  constructor(
    readonly width: number,
    readonly height: number,
    readonly channels: 3 | 4,
    readonly data: Buffer,
  ) {
    if (data.length !== width * height * channels) throw new Error(`frame data is ${data.length} bytes, expected ${width * height * channels}`);
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
