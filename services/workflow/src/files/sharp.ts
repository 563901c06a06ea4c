/**
 * sharp, loaded on its first call instead of at start-up: loading it opens
 * libvips (tens of MiB) and a chain of helper packages, a quarter of the
 * service's start-up time, while most requests never touch an image.
 * `warmSharp()` loads it off the request path once the server is up.
 */
import { createRequire } from 'node:module';
import type SharpModule from 'sharp';

type Sharp = typeof SharpModule;
let loaded: Sharp | undefined;
const load = (): Sharp => (loaded ??= createRequire(import.meta.url)('sharp') as Sharp);

const sharp = new Proxy(function lazySharp() {} as unknown as Sharp, {
  apply: (_target, _this, args: unknown[]) => (load() as (...a: unknown[]) => unknown)(...args),
  get: (_target, key) => (load() as unknown as Record<PropertyKey, unknown>)[key],
  has: (_target, key) => key in load(),
});

export default sharp;

/** Loads sharp now if nothing has yet; later calls are free. */
export function warmSharp(): void {
  load();
}

/** The libwebp release sharp's libvips was built with (the bytes Google's builds must match), or '' when it says none. */
export function sharpLibwebpRelease(): string {
  return (sharp.versions as Record<string, string | undefined>).webp ?? '';
}
