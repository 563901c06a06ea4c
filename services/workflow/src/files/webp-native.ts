/**
 * WebP of RGB frames in this process: the Node-API addon that `npm install`
 * builds (services/workflow/native/webp-encoder.c, scripts/build-native.mjs)
 * over Google's static libwebp 1.6.0, the release whose cwebp files/cwebp.ts
 * runs. The same encoder with the same configuration gives cwebp's bytes
 * (checked for both modes, every method and qualities 0-100), without a
 * process start, a picture file and the page faults of a fresh process for
 * every frame: the reference's Pillow keeps its libwebp warm in its own
 * process too. Several frames go through libwebp's animation encoder with
 * Pillow's settings, giving img2webp's (files/img2webp.ts) and so the
 * reference's files, background included. An encode runs on the calling
 * thread (the execution thread), whose memory stays warm from one picture to
 * the next as Pillow's does, and ends early once the main thread raises the
 * thread's stop flag to terminate it (processes/child-processes.ts). Used
 * only when the addon reports the libwebp release sharp was built
 * with; where it was not built (no C compiler, another platform) callers
 * fall back to cwebp and img2webp.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { stopFlag } from '../processes/child-processes.ts';
import type { AnimationEncoder, StillEncoder } from './webp-encoders.ts';

/** The addon's calls (synchronous: they run on the calling thread and throw what they refuse or fail). */
interface WebpAddon {
  encode(rgb: Uint8Array, width: number, height: number, lossless: boolean, quality: number, method: number, stop?: Int32Array): Buffer;
  /** Pillow's animation (libwebp's WebPAnimEncoder with its settings). */
  encodeAnimation(frames: Uint8Array[], width: number, height: number, delayMs: number, lossless: boolean, quality: number, method: number, stop?: Int32Array): Buffer;
  /** libwebp's encoder version, 0xMMmmpp. */
  version(): number;
}

export const NATIVE_WEBP_ADDON = path.join(import.meta.dirname, '..', '..', 'native', 'build', 'webp-encoder.node');

/**
 * The largest frame encoded in this process (2048²). libwebp's lossless encoder takes about ten times the picture's
 * bytes at the default method (+487 MiB for a 4096² frame, +120 for 2048²): a larger frame goes to cwebp or img2webp,
 * in a process of its own, where running out of memory ends the tool and not the service.
 */
export const IN_PROCESS_MAX_PIXELS = 2048 * 2048;

/** libwebp's `1.6.0` as WebPGetEncoderVersion() reports it (0x010600); NaN for anything else. */
export function encoderVersionNumber(release: string): number {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(release);
  return m ? (Number(m[1]) << 16) | (Number(m[2]) << 8) | Number(m[3]) : NaN;
}

/** The addon at `file`, or null when it is missing, does not load or reports another release than `libwebpVersion`. */
function load(file: string, libwebpVersion: string): WebpAddon | null {
  try {
    const addon = createRequire(import.meta.url)(file) as WebpAddon;
    return addon.version() === encoderVersionNumber(libwebpVersion) ? addon : null;
  } catch {
    return null;
  }
}

/** The addon as a still encoder, or null where it is not usable. */
export function nativeWebpEncoder(libwebpVersion: string, file = NATIVE_WEBP_ADDON): StillEncoder | null {
  const addon = load(file, libwebpVersion);
  if (!addon) return null;
  return {
    // async: an argument the addon refuses (a RangeError) or a failed encode rejects.
    encodeRgb: async (rgb, width, height, lossless, quality, method) =>
      width * height > IN_PROCESS_MAX_PIXELS ? null : addon.encode(rgb, width, height, lossless, quality, method, stopFlag()),
  };
}

/** The addon as an animation encoder (two frames or more), or null where it is not usable. */
export function nativeWebpAnimationEncoder(libwebpVersion: string, file = NATIVE_WEBP_ADDON): AnimationEncoder | null {
  const addon = load(file, libwebpVersion);
  if (!addon) return null;
  return {
    async encodeAnimationRgb(frames, width, height, delayMs, lossless, quality, method) {
      // As img2webp's: one frame is a still picture's business, and libwebp keeps timestamps in an int.
      if (frames.length < 2 || frames.length * delayMs > 0x7fffffff || width * height > IN_PROCESS_MAX_PIXELS) return null;
      return addon.encodeAnimation(frames, width, height, delayMs, lossless, quality, method, stopFlag());
    },
  };
}
