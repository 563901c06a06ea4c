/**
 * Lossy WebP at libwebp's default method (4) through @napi-rs/image's build
 * of libwebp instead of libvips' webpsave. Both call libwebp's encoder with
 * the same configuration (default preset, the quality, method 4, no sharp
 * YUV) and give the same bytes; sharp's build of the library took about 20 %
 * more CPU per encode than this one or the reference's Pillow on this
 * machine (1024² RGB, q80: 114–122 ms against 96–101 and 97–99, alternating
 * runs; see the workflow README, issue 29). Loaded on first use; where the
 * package's native part is missing (a platform it has no build for), callers
 * fall back to sharp.
 */
import { createRequire } from 'node:module';

interface NapiImage {
  Transformer: { fromRgbaPixels(input: Uint8Array, width: number, height: number): { webp(quality?: number): Promise<Buffer> } };
}

let loaded: NapiImage | null | undefined;

function load(): NapiImage | null {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)('@napi-rs/image') as NapiImage;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}

/** The simple-format WebP (one `VP8 ` chunk) of RGBA pixels, or null when the library cannot be loaded here. */
export async function encodeLossyRgba(rgba: Uint8Array, width: number, height: number, quality: number): Promise<Buffer | null> {
  const lib = load();
  if (!lib) return null;
  return lib.Transformer.fromRgbaPixels(rgba, width, height).webp(quality);
}
