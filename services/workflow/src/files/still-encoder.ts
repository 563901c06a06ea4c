/** Something that encodes one RGB frame as WebP: files/webp-native.ts in this process, files/cwebp.ts through cwebp. */
export interface StillEncoder {
  /** The simple-format WebP (one `VP8L` or `VP8 ` chunk) of RGB pixels, or null when the encoder is not usable here. */
  encodeRgb(rgb: Buffer, width: number, height: number, lossless: boolean, quality: number, method: number): Promise<Buffer | null>;
}
