/**
 * What encodes WebP from RGB frames for SaveAnimatedWEBP: files/webp-native.ts in this process, files/cwebp.ts and
 * files/img2webp.ts through Google's tools. Each answers null where it is not usable, leaving the frames to the next.
 */
export interface StillEncoder {
  /** The simple-format WebP (one `VP8L` or `VP8 ` chunk) of RGB pixels, or null when the encoder is not usable here. */
  encodeRgb(rgb: Buffer, width: number, height: number, lossless: boolean, quality: number, method: number): Promise<Buffer | null>;
}

export interface AnimationEncoder {
  /** The animated WebP (VP8X, ANIM, ANMF…) of equally sized RGB frames, each shown `delayMs`, or null when not usable here. */
  encodeAnimationRgb(frames: Buffer[], width: number, height: number, delayMs: number, lossless: boolean, quality: number, method: number): Promise<Buffer | null>;
}
