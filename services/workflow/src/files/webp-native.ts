/**
 * One RGB frame to WebP in this process: the Node-API addon that `npm install`
 * builds (services/workflow/native/webp-encoder.c, scripts/build-native.mjs)
 * over Google's static libwebp 1.6.0, the release whose cwebp files/cwebp.ts
 * runs. The same encoder with the same configuration gives cwebp's bytes
 * (checked for both modes, every method and qualities 0-100), without a
 * process start, a picture file and the page faults of a fresh process for
 * every frame: the reference's Pillow keeps its libwebp warm in its own
 * process too. The encode runs on libuv's thread pool. Used only when the
 * addon reports the libwebp release sharp was built with; where it was not
 * built (no C compiler, another platform) callers fall back to cwebp.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import type { StillEncoder } from './still-encoder.ts';

interface WebpAddon {
  /** `rgb` must stay attached (not transferred) until the promise settles. */
  encode(rgb: Uint8Array, width: number, height: number, lossless: boolean, quality: number, method: number): Promise<Buffer>;
  /** libwebp's encoder version, 0xMMmmpp. */
  version(): number;
}

export const NATIVE_WEBP_ADDON = path.join(import.meta.dirname, '..', '..', 'native', 'build', 'webp-encoder.node');

/** libwebp's `1.6.0` as WebPGetEncoderVersion() reports it (0x010600); NaN for anything else. */
export function encoderVersionNumber(release: string): number {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(release);
  return m ? (Number(m[1]) << 16) | (Number(m[2]) << 8) | Number(m[3]) : NaN;
}

function load(file: string): WebpAddon | null {
  try {
    return createRequire(import.meta.url)(file) as WebpAddon;
  } catch {
    return null;
  }
}

/** The addon at `file` as a still encoder, or null when it is missing, does not load or reports another release. */
export function nativeWebpEncoder(libwebpVersion: string, file = NATIVE_WEBP_ADDON): StillEncoder | null {
  const addon = load(file);
  if (!addon || addon.version() !== encoderVersionNumber(libwebpVersion)) return null;
  return {
    // async: an argument the addon refuses (it throws a RangeError) rejects, as a failed encode does.
    encodeRgb: async (rgb, width, height, lossless, quality, method) => addon.encode(rgb, width, height, lossless, quality, method),
  };
}
