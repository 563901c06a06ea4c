import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from '../files/sharp.ts';
import { Blake3Stream, HEAD_BYTES } from './assets/content.ts';
import { addTextChunks, readTextChunks } from '../files/png.ts';

/** Uploads larger than this go to a temporary file as they arrive instead of staying in memory. */
export const SPOOL_MEMORY_LIMIT = 8 * 1024 * 1024;

/**
 * An upload's bytes as they arrived: chunks in memory (a 2 MB image is never
 * copied into one buffer twice), or, past SPOOL_MEMORY_LIMIT, a temporary
 * file, so concurrent large uploads cannot exhaust the service's memory.
 */
export class UploadBody {
  chunks: Buffer[] = [];
  size = 0;
  /** The temporary file holding the bytes once they outgrew memory. */
  file?: string;
  private fh?: fs.promises.FileHandle;
  private spoolDir?: string;
  private digest?: string;
  private blake?: Blake3Stream;
  /** The first HEAD_BYTES bytes (or fewer, for a shorter body). */
  head: Buffer = Buffer.alloc(0);

  /** `blake3`: the body is also hashed (BLAKE3) as it arrives, for its asset registration. */
  constructor(opts: { blake3?: boolean } = {}) {
    if (opts.blake3) this.blake = new Blake3Stream();
  }

  async push(chunk: Buffer): Promise<void> {
    this.size += chunk.length;
    if (this.head.length < HEAD_BYTES) this.head = Buffer.concat([this.head, chunk.subarray(0, HEAD_BYTES - this.head.length)]);
    if (this.blake) await this.blake.update(chunk);
    if (this.fh) {
      await this.fh.write(chunk);
      return;
    }
    this.chunks.push(chunk);
    if (this.size > SPOOL_MEMORY_LIMIT) {
      this.spoolDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'wf-upload-'));
      this.file = path.join(this.spoolDir, 'body');
      this.fh = await fs.promises.open(this.file, 'wx', 0o600);
      await this.fh.writev(this.chunks);
      this.chunks = [];
    }
  }

  /** Ends writing (call once the part is read). */
  async finish(): Promise<void> {
    await this.fh?.close();
    this.fh = undefined;
  }

  /** Called once by dispose (the owner of a buffer the chunks are views of takes it back). */
  onDispose?: () => void;

  /** Removes the temporary file, if any; the chunks are not to be read after this. */
  async dispose(): Promise<void> {
    const released = this.onDispose;
    this.onDispose = undefined;
    released?.();
    await this.finish().catch(() => undefined);
    if (this.spoolDir) await fs.promises.rm(this.spoolDir, { recursive: true, force: true });
  }

  async buffer(): Promise<Buffer> {
    return this.file ? fs.promises.readFile(this.file) : Buffer.concat(this.chunks);
  }

  /** `blake3:<hex>` of the body when it was hashed as it arrived (see the constructor), else undefined. */
  async blake3(): Promise<string | undefined> {
    return this.blake?.digest();
  }

  /** SHA-256 of the upload, computed only when a same-named file of the same size must be compared. */
  async sha256(): Promise<string> {
    if (this.digest === undefined) {
      const h = createHash('sha256');
      if (this.file) for await (const c of fs.createReadStream(this.file)) h.update(c as Buffer);
      else for (const c of this.chunks) h.update(c);
      this.digest = h.digest('hex');
    }
    return this.digest;
  }
}

/** Where an upload landed and whether it reused an existing file. */
export interface PlacedFile {
  name: string;
  path: string;
  reused: boolean;
  /**
   * With `written`, when the upload wrote the file: a handle on the file it
   * wrote (the caller closes it). While it is open the file's inode cannot be
   * reused, so (device, inode) identifies this write (see fileStamp).
   */
  handle?: fs.promises.FileHandle;
}

async function sameContent(file: string, body: UploadBody): Promise<boolean> {
  const st = await fs.promises.stat(file).catch(() => undefined);
  if (!st?.isFile() || st.size !== body.size) return false;
  const h = createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex') === (await body.sha256());
}

/** `name (1).ext`: Python's splitext, so `.bashrc` has no extension and `a.tar.gz` keeps `.gz`. */
function numbered(name: string, i: number): string {
  const ext = path.extname(name);
  return `${name.slice(0, name.length - ext.length)} (${i})${ext}`;
}

/** Writes a hidden temporary file in `folder`; with keepOpen also returns an open handle on it. */
async function writeTemp(folder: string, data: Buffer[] | Buffer | UploadBody, keepOpen = false): Promise<{ tmp: string; handle?: fs.promises.FileHandle }> {
  const tmp = path.join(folder, `.upload-${randomBytes(8).toString('hex')}.tmp`);
  if (data instanceof UploadBody && data.file) {
    await fs.promises.copyFile(data.file, tmp, fs.constants.COPYFILE_EXCL);
    return { tmp, handle: keepOpen ? await fs.promises.open(tmp, 'r') : undefined };
  }
  if (!keepOpen) {
    // A body held in memory (at most SPOOL_MEMORY_LIMIT) goes to the page cache in about a millisecond: written
    // synchronously, as the reference writes it, instead of three round trips through the thread pool (open, writev,
    // close), each waiting for a pool thread and then for the event loop on a busy machine.
    const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o644);
    try {
      // One writev for all the chunks (an upload arrives in dozens); a write may take less than asked: the rest goes in further calls.
      let rest = data instanceof UploadBody ? data.chunks : Array.isArray(data) ? data : [data];
      while (rest.length > 0) {
        let n = fs.writevSync(fd, rest.length > 1024 ? rest.slice(0, 1024) : rest);
        let i = 0;
        while (i < rest.length && n >= rest[i]!.length) n -= rest[i++]!.length;
        rest = rest.slice(i);
        if (n > 0) rest[0] = rest[0]!.subarray(n);
      }
    } finally {
      fs.closeSync(fd);
    }
    return { tmp };
  }
  const fh = await fs.promises.open(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o644);
  try {
    await fh.writev(data instanceof UploadBody ? data.chunks : Array.isArray(data) ? data : [data]);
  } catch (err) {
    await fh.close();
    throw err;
  }
  if (keepOpen) return { tmp, handle: fh };
  await fh.close();
  return { tmp };
}

/**
 * Puts an upload at `folder/name` as the reference does: with overwrite the
 * file is replaced; without, a file of that name with the same bytes is
 * reused and one with other bytes moves the upload to `name (1).ext`, `name
 * (2).ext`, … The bytes go to a hidden temporary file first and appear under
 * their name in one step (rename, or link when the name must still be free),
 * so a reader never sees half a file and two uploads racing for one name
 * never overwrite each other. `content` is what is written when it differs
 * from what is compared (the mask route writes the composite, compares the
 * mask, as the reference).
 */
export async function placeUpload(
  folder: string,
  name: string,
  body: UploadBody,
  overwrite: boolean,
  content?: () => Promise<Buffer>,
  /** Called with a handle on the written file before it appears under its name; the handle stays open (PlacedFile.handle). */
  written?: (handle: fs.promises.FileHandle) => Promise<void>,
): Promise<PlacedFile> {
  const keepOpen = written !== undefined;
  try {
    // Most uploads go to a folder that is already there: a stat on the event loop instead of a round trip through the thread pool.
    if (!fs.statSync(folder, { throwIfNoEntry: false })?.isDirectory()) await fs.promises.mkdir(folder, { recursive: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTDIR') throw new UploadError(400, 'Invalid subfolder: a file has that name');
    throw err;
  }
  if (fs.statSync(path.join(folder, name), { throwIfNoEntry: false })?.isDirectory() && overwrite) throw new UploadError(400, 'Invalid filename: a folder has that name');
  if (overwrite) {
    const { tmp, handle } = await writeTemp(folder, content ? await content() : body, keepOpen);
    const target = path.join(folder, name);
    try {
      if (handle) await written!(handle);
      // Without a handle to hold (assets off) the rename is one metadata call: synchronous, as the write above.
      if (handle) await fs.promises.rename(tmp, target);
      else replaceSync(tmp, target, folder);
    } catch (err) {
      await handle?.close();
      await fs.promises.rm(tmp, { force: true });
      throw err;
    }
    return { name, path: target, reused: false, handle };
  }
  let tmp: string | undefined;
  let handle: fs.promises.FileHandle | undefined;
  let placed = false;
  try {
    for (let i = 0; i < 100_000; i++) {
      const candidate = i === 0 ? name : numbered(name, i);
      const target = path.join(folder, candidate);
      if (await sameContent(target, body)) return { name: candidate, path: target, reused: true };
      if (fs.existsSync(target) || fs.lstatSync(target, { throwIfNoEntry: false })) continue;
      if (tmp === undefined) {
        ({ tmp, handle } = await writeTemp(folder, content ? await content() : body, keepOpen));
        if (handle) await written!(handle);
      }
      try {
        await fs.promises.link(tmp, target);
        placed = true;
        return { name: candidate, path: target, reused: false, handle };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        // Another upload took the name between the check and the link: compare with what it wrote.
        if (await sameContent(target, body)) return { name: candidate, path: target, reused: true };
      }
    }
    throw new Error('no free file name');
  } finally {
    if (!placed) await handle?.close();
    if (tmp) await fs.promises.rm(tmp, { force: true });
  }
}

/** Files from this size up that an overwrite replaces are released in the thread pool (see replaceSync). */
const RELEASE_IN_BACKGROUND = 256 * 1024;

/**
 * rename(tmp, target), where a large file already at `target` is first given
 * a second, hidden name (a hard link) and unlinked by that name in the thread
 * pool afterwards: the rename then drops a link instead of the file's last
 * one, so freeing its blocks (milliseconds for a few MB still in the page
 * cache) happens off the event loop and after the answer can go. Where a
 * link cannot be made the rename frees it as before.
 */
function replaceSync(tmp: string, target: string, folder: string): void {
  const old = fs.lstatSync(target, { throwIfNoEntry: false });
  let trash: string | undefined;
  if (old?.isFile() && old.size >= RELEASE_IN_BACKGROUND) {
    trash = path.join(folder, `.upload-${randomBytes(8).toString('hex')}.old.tmp`);
    try {
      fs.linkSync(target, trash);
    } catch {
      trash = undefined;
    }
  }
  try {
    fs.renameSync(tmp, target);
  } finally {
    if (trash) fs.unlink(trash, () => undefined);
  }
}

/** An upload refused for what is on disk (a file where a folder is needed …): a 400 with this message. */
export class UploadError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class MaskError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * POST /upload/mask: the original image with its alpha channel replaced by
 * the mask's alpha (an opaque mask everywhere when it has none), saved as PNG
 * at compression 4 with the original's text chunks.
 */
export async function compositeMask(originalFile: string | Buffer, mask: Buffer): Promise<Buffer> {
  const original = Buffer.isBuffer(originalFile) ? originalFile : await fs.promises.readFile(originalFile);
  let orig: { data: Buffer; info: { width: number; height: number } };
  let alpha: { data: Buffer; info: { width: number; height: number } };
  try {
    orig = await sharp(original, { limitInputPixels: 16384 * 16384 }).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  } catch {
    throw new MaskError(400, 'The original image cannot be read as an image');
  }
  try {
    alpha = await sharp(mask, { limitInputPixels: 16384 * 16384 }).ensureAlpha().extractChannel(3).raw().toBuffer({ resolveWithObject: true });
  } catch {
    throw new MaskError(400, 'The mask cannot be read as an image');
  }
  if (orig.info.width !== alpha.info.width || orig.info.height !== alpha.info.height) {
    throw new MaskError(400, `The mask is ${alpha.info.width}x${alpha.info.height}, the original ${orig.info.width}x${orig.info.height}: sizes must match`);
  }
  const px = orig.data;
  const a = alpha.data;
  for (let i = 0, j = 3; i < a.length; i++, j += 4) px[j] = a[i]!;
  const png = await sharp(px, { raw: { width: orig.info.width, height: orig.info.height, channels: 4 } }).png({ compressionLevel: 4 }).toBuffer();
  let texts: Array<[string, string]> = [];
  if (original.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) texts = Object.entries(readTextChunks(original));
  return addTextChunks(png, texts);
}
