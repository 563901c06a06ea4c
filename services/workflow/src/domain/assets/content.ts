import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createBLAKE3 } from 'hash-wasm';
import sharp from '../../files/sharp.ts';
import { hashFileOffThread } from './hash-pool.ts';

/**
 * Content of assets: BLAKE3 hashing, MIME types, image dimensions, and the
 * blob store. Paths are stored logically, `<root>/<relative path>` with root
 * one of input, output, temp, models (the service's folders, wherever the
 * flags put them) or blobs (content uploaded through /api/assets, one file
 * per hash), so moving a folder does not orphan rows.
 */
export type AssetRoot = 'input' | 'output' | 'temp' | 'models' | 'blobs' | 'workspaces';
/** The service's folders; `workspaces` (hosted runtime) holds each workspace's own input folder. */
export type AssetDirs = Record<Exclude<AssetRoot, 'workspaces'>, string> & { workspaces?: string };

export const HASH_RE = /^blake3:[0-9a-f]{64}$/;

/** `blake3:<hex>` in any case and with spaces around → canonical form, or undefined when it is not one. */
export function canonicalHash(s: string): string | undefined {
  const h = s.trim().toLowerCase();
  return HASH_RE.test(h) ? h : undefined;
}

interface Hasher {
  update(chunk: Buffer): unknown;
  digest(enc: 'hex'): string;
}

/**
 * The native BLAKE3 (napi-rs, SIMD: 2 MB in about 1 ms) when its prebuilt
 * binary loads on this platform, else the WebAssembly one (about ten times
 * slower); both give the same digests.
 */
const newHasher: Promise<() => Hasher | Promise<Hasher>> = import('@napi-rs/blake-hash')
  .then((m) => () => new m.Blake3Hasher() as Hasher)
  .catch(() =>
    () =>
      createBLAKE3().then((h) => {
        h.init();
        return h as Hasher;
      }),
  );

/** BLAKE3 of a stream of chunks, as `blake3:<hex>`. */
export class Blake3Stream {
  private hasher: Hasher | undefined;
  private readonly ready: Promise<void>;
  size = 0;
  constructor() {
    this.ready = newHasher.then(async (make) => {
      this.hasher = await make();
    });
  }
  async update(chunk: Buffer): Promise<void> {
    if (!this.hasher) await this.ready;
    this.hasher!.update(chunk);
    this.size += chunk.length;
  }
  async digest(): Promise<string> {
    if (!this.hasher) await this.ready;
    return `blake3:${this.hasher!.digest('hex')}`;
  }
}

export async function hashFile(file: string): Promise<{ hash: string; size: number }> {
  const off = hashFileOffThread(file);
  if (off) {
    try {
      return await off;
    } catch (err) {
      // A file error (ENOENT, EISDIR, …) is the caller's; a failed worker leaves the hash to this thread.
      if ((err as { code?: string }).code) throw err;
    }
  }
  const h = new Blake3Stream();
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1024 * 1024 })) await h.update(chunk as Buffer);
  return { hash: await h.digest(), size: h.size };
}

const MIME_BY_EXT: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.bmp': 'image/bmp',
  '.tif': 'image/tiff',
  '.tiff': 'image/tiff',
  '.avif': 'image/avif',
  '.svg': 'image/svg+xml',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.mov': 'video/quicktime',
  '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav',
  '.flac': 'audio/flac',
  '.ogg': 'audio/ogg',
  '.json': 'application/json',
  '.txt': 'text/plain',
  '.safetensors': 'application/safetensors',
  '.glb': 'model/gltf-binary',
};

/** The bytes an image format starts with, for uploads without a telling file name. */
function sniff(head: Buffer): string | undefined {
  if (head.length >= 8 && head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
  if (head.length >= 6 && /^GIF8[79]a$/.test(head.subarray(0, 6).toString('latin1'))) return 'image/gif';
  if (head.length >= 12 && head.subarray(0, 4).toString('latin1') === 'RIFF' && head.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return undefined;
}

/** A client's MIME type, if it looks like one (`type/subtype`, parameters dropped). */
export function cleanMime(s: string | undefined): string | undefined {
  const m = s?.split(';', 1)[0]!.trim().toLowerCase();
  return m && /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,127}$/.test(m) ? m : undefined;
}

export function mimeFor(name: string | undefined, head: Buffer | undefined, declared?: string): string {
  const byExt = name ? MIME_BY_EXT[path.extname(name).toLowerCase()] : undefined;
  return byExt ?? (head ? sniff(head) : undefined) ?? (declared && declared !== 'application/octet-stream' ? declared : undefined) ?? 'application/octet-stream';
}

export async function readHead(file: string, n = 16): Promise<Buffer> {
  const fh = await fs.promises.open(file, 'r');
  try {
    const buf = Buffer.alloc(n);
    const { bytesRead } = await fh.read(buf, 0, n, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** `{kind: "image", width, height}` for raster images sharp can read the header of; never throws. */
export async function imageMetadata(file: string, mime: string): Promise<Record<string, unknown> | undefined> {
  if (!mime.startsWith('image/') || mime === 'image/svg+xml') return undefined;
  try {
    const m = await sharp(file, { limitInputPixels: false }).metadata();
    if (m.width && m.height) return { kind: 'image', width: m.width, height: m.height };
  } catch {
    /* not an image sharp understands: no dimensions */
  }
  return undefined;
}

/** Resolves a logical path (`output/sub/x.png`) to the file on disk; undefined when it names no known root. */
export function resolveLogical(dirs: AssetDirs, logical: string): string | undefined {
  const slash = logical.indexOf('/');
  if (slash <= 0) return undefined;
  const root = logical.slice(0, slash) as AssetRoot;
  const base = dirs[root];
  if (!base || !Object.hasOwn(dirs, root)) return undefined;
  const rel = logical.slice(slash + 1);
  if (rel === '' || rel.split('/').some((p) => p === '' || p === '.' || p === '..')) return undefined;
  return path.join(base, ...rel.split('/'));
}

export function blobLogical(hash: string): string {
  const hex = hash.slice('blake3:'.length);
  return `blobs/${hex.slice(0, 2)}/${hex}`;
}

/** A fresh temporary file for an upload in progress, on the blob store's file system so it can be linked in place. */
export function tempUploadPath(dirs: AssetDirs): string {
  const dir = path.join(dirs.blobs, '.uploads');
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, `${randomBytes(12).toString('hex')}.part`);
}

/**
 * Moves a fully written temporary file into the blob store under its hash.
 * Two uploads of the same bytes race safely: the first link wins, the
 * second finds the blob there (same hash, same bytes) and drops its copy.
 */
export async function storeBlob(dirs: AssetDirs, tmp: string, hash: string): Promise<string> {
  const logical = blobLogical(hash);
  const target = resolveLogical(dirs, logical)!;
  await fs.promises.mkdir(path.dirname(target), { recursive: true });
  try {
    await fs.promises.link(tmp, target);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await fs.promises.rm(tmp, { force: true });
  }
  return logical;
}

/** A regular file at the logical path with exactly `size` bytes (a file replaced under the name no longer holds the content). */
export async function fileHolds(dirs: AssetDirs, logical: string | null, size: number): Promise<string | undefined> {
  if (!logical) return undefined;
  const file = resolveLogical(dirs, logical);
  if (!file) return undefined;
  const st = await fs.promises.lstat(file).catch(() => undefined);
  return st?.isFile() && st.size === size ? file : undefined;
}
