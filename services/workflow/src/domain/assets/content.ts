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
 * The native BLAKE3 (napi-rs, SIMD: 2 MB in about 0.4 ms) when its prebuilt
 * binary loads on this platform, else undefined and the WebAssembly one
 * (about ten times slower) is used; both give the same digests.
 */
const nativeHasher: Promise<(new () => Hasher) | undefined> = import('@napi-rs/blake-hash').then(
  (m) => m.Blake3Hasher as unknown as new () => Hasher,
  () => undefined,
);
let native: (new () => Hasher) | undefined | null = null;
void nativeHasher.then((n) => {
  native = n;
});

async function newHasher(): Promise<Hasher> {
  const N = native === null ? await nativeHasher : native;
  if (N) return new N();
  const h = await createBLAKE3();
  h.init();
  return h as Hasher;
}

/** BLAKE3 of a stream of chunks, as `blake3:<hex>` (fed as the bytes arrive, e.g. while an upload is written). */
export class Blake3Stream {
  private hasher: Hasher | undefined;
  private ready: Promise<void> | undefined;
  private result: string | undefined;
  size = 0;
  constructor() {
    if (native) this.hasher = new native();
    else this.ready = newHasher().then((h) => {
      this.hasher = h;
    });
  }
  async update(chunk: Buffer): Promise<void> {
    if (!this.hasher) await this.ready;
    this.hasher!.update(chunk);
    this.size += chunk.length;
  }
  /** The digest; the stream takes no more bytes afterwards (a second call answers the same). */
  async digest(): Promise<string> {
    if (this.result === undefined) {
      if (!this.hasher) await this.ready;
      this.result = `blake3:${this.hasher!.digest('hex')}`;
    }
    return this.result;
  }
}

/**
 * BLAKE3 and size of a file. With the native hasher it runs here, reading
 * 1 MB at a time (about 0.2 ms of the event loop per megabyte); with only
 * the WebAssembly one (ten times slower) it runs on the hashing worker.
 */
export async function hashFile(file: string): Promise<{ hash: string; size: number }> {
  const N = native === null ? await nativeHasher : native;
  if (!N) {
    const off = hashFileOffThread(file);
    if (off) {
      try {
        return await off;
      } catch (err) {
        // A file error (ENOENT, EISDIR, …) is the caller's; a failed worker leaves the hash to this thread.
        if ((err as { code?: string }).code) throw err;
      }
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

/** How many leading bytes mimeFor and imageMetadata's header fast path look at. */
export const HEAD_BYTES = 32;

export async function readHead(file: string, n = HEAD_BYTES): Promise<Buffer> {
  const fh = await fs.promises.open(file, 'r');
  try {
    const buf = Buffer.alloc(n);
    const { bytesRead } = await fh.read(buf, 0, n, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * A PNG's size from its first chunk (signature, then IHDR: length 13, type,
 * width and height as 32-bit big-endian), which is what sharp reports for a
 * PNG; undefined when the head is not that.
 */
export function pngSize(head: Buffer): { width: number; height: number } | undefined {
  if (head.length < 24 || !head.subarray(0, 8).equals(PNG_SIGNATURE)) return undefined;
  if (head.readUInt32BE(8) !== 13 || head.toString('latin1', 12, 16) !== 'IHDR') return undefined;
  const width = head.readUInt32BE(16);
  const height = head.readUInt32BE(20);
  // The PNG limit is 2^31 - 1; zero is invalid.
  if (width === 0 || height === 0 || width > 0x7fffffff || height > 0x7fffffff) return undefined;
  return { width, height };
}

/**
 * `{kind: "image", width, height}` for raster images sharp can read the
 * header of; never throws. A PNG's size is read from its head (the bytes
 * already at hand, see pngSize) without opening the file again.
 */
export async function imageMetadata(file: string, mime: string, head?: Buffer): Promise<Record<string, unknown> | undefined> {
  if (!mime.startsWith('image/') || mime === 'image/svg+xml') return undefined;
  const png = head && mime === 'image/png' ? pngSize(head) : undefined;
  if (png) return { kind: 'image', width: png.width, height: png.height };
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
 * Links a fully written temporary file into the blob store under its hash
 * (the caller removes the temporary name; until then it may store the bytes
 * again). Two uploads of the same bytes race safely: the first link wins,
 * the second finds the blob there (same hash, same bytes).
 */
export async function storeBlob(dirs: AssetDirs, tmp: string, hash: string): Promise<string> {
  const logical = blobLogical(hash);
  const target = resolveLogical(dirs, logical)!;
  await fs.promises.mkdir(path.dirname(target), { recursive: true });
  try {
    await fs.promises.link(tmp, target);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return logical;
}

/**
 * Identifies the file now at a path: device, inode, size and modification
 * time (not the change time, which a rename into place moves). A stamp taken
 * from a handle the writer holds open (see handleStamp) names that write:
 * while the handle is open its inode cannot be reused, and afterwards a
 * reused inode would also need the same size and modification time to the
 * nanosecond. Undefined when no regular file is there.
 */
export async function fileStamp(file: string): Promise<string | undefined> {
  const st = await fs.promises.lstat(file, { bigint: true }).catch(() => undefined);
  return st?.isFile() ? stampOf(st) : undefined;
}

function stampOf(st: fs.BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}`;
}

/** The stamp of the file an open handle is on (see fileStamp); the same before and after a rename. */
export async function handleStamp(fh: fs.promises.FileHandle): Promise<string> {
  return stampOf(await fh.stat({ bigint: true }));
}

/** A regular file at the logical path with exactly `size` bytes (a file replaced under the name no longer holds the content). */
export async function fileHolds(dirs: AssetDirs, logical: string | null, size: number): Promise<string | undefined> {
  if (!logical) return undefined;
  const file = resolveLogical(dirs, logical);
  if (!file) return undefined;
  const st = await fs.promises.lstat(file).catch(() => undefined);
  return st?.isFile() && st.size === size ? file : undefined;
}
