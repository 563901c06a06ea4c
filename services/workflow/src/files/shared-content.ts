import fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import send from '@fastify/send';
import { checkKey, downloadObject, openContentStore, readObject, type ContentRoot, type ContentStore, type StoredObject } from './content-store.ts';
import { parseAnnotated, safeRelative } from './paths.ts';
import { workspaceFolderName, workspacesRoot } from './workspace-folders.ts';

/** What a route answers with, local file or stored object alike: the shape @fastify/send gives. */
export interface SendResult {
  statusCode: number;
  headers: Record<string, string | number>;
  stream: Readable;
  type: 'file' | 'error';
}

/** A prompt input that names an image file (LoadImage and its kin), annotated or not. */
const IMAGE_NAME = /\.(png|jpe?g|webp|gif|bmp|tiff?|avif)( \[(input|output|temp)\])?$/i;
/** Names fetched for one prompt at most (a prompt is bounded, this bounds the store requests too). */
const MAX_MATERIALIZED = 256;

/** Previews, channels and masks read a stored file whole: no more than this. */
const MAX_BUFFERED = 512 * 1024 * 1024;

export interface SharedDirs {
  input: string;
  output: string;
  temp: string;
  blobs: string;
  /** Hosted runtime: each workspace's own input folder below it. */
  workspaces?: string;
}

/**
 * The service's folders mirrored in a shared content store, so a file one
 * process wrote is served by any other (an API process on another machine,
 * with another data dir). The writer puts each file once it is complete;
 * readers use their own disk first and the store when the file is not there.
 */
export class SharedContent {
  private readonly roots: Array<[ContentRoot, string]>;

  constructor(
    readonly store: ContentStore,
    readonly dirs: SharedDirs,
    private readonly log: { warn(o: object, m: string): void },
  ) {
    const roots: Array<[ContentRoot, string | undefined]> = [
      ['input', dirs.input],
      ['output', dirs.output],
      ['temp', dirs.temp],
      ['blobs', dirs.blobs],
      ['workspaces', dirs.workspaces],
    ];
    // The deepest folder first: a blobs folder inside an output folder still maps to blobs/.
    this.roots = roots.filter((r): r is [ContentRoot, string] => r[1] !== undefined).map(([k, d]) => [k, path.resolve(d)] as [ContentRoot, string]).sort((a, b) => b[1].length - a[1].length);
  }

  /** The key of a file below one of the service's folders; undefined for anything else. */
  keyOf(file: string): string | undefined {
    const full = path.resolve(file);
    for (const [root, dir] of this.roots) {
      if (full.startsWith(dir + path.sep)) {
        const rel = full.slice(dir.length + 1).split(path.sep).join('/');
        try {
          return checkKey(`${root}/${rel}`);
        } catch {
          return undefined;
        }
      }
    }
    return undefined;
  }

  /** The local path a logical key stands for in this process. */
  localPath(key: string): string | undefined {
    checkKey(key);
    const [root, ...rest] = key.split('/');
    const dir = this.roots.find(([r]) => r === root)?.[1];
    return dir ? path.join(dir, ...rest) : undefined;
  }

  /**
   * Puts a file the process wrote (a job's output, an upload, an asset blob)
   * into the store. Files outside the service's folders are ignored.
   */
  async putFile(file: string): Promise<void> {
    const key = this.keyOf(file);
    if (!key) return;
    await this.store.put(key, { file }, { contentType: send.mime.getType(file) ?? undefined });
  }

  /**
   * The hook for NodeEnv.fileWritten: a file a node saved, named as the node
   * reports it (folder type, subfolder, name) in the job owner's folders.
   * Failures are logged, never fail the job (the local file is still there).
   */
  async fileWritten(info: { type: 'input' | 'output' | 'temp'; subfolder: string; filename: string }, owner: string): Promise<void> {
    const base = info.type !== 'temp' && this.dirs.workspaces ? path.join(this.dirs.workspaces, workspaceFolderName(owner), info.type) : this.dirs[info.type];
    const sub = info.subfolder.replace(/^\/+|\/+$/g, '');
    const file = path.resolve(base, sub, info.filename);
    if (!file.startsWith(path.resolve(base) + path.sep)) return;
    try {
      await this.putFile(file);
    } catch (err) {
      this.log.warn({ err, file }, 'a written file could not be put in the shared content store');
    }
  }

  /** Like putFile, logging instead of throwing (for hooks whose caller must not fail). */
  async putQuietly(file: string): Promise<void> {
    try {
      await this.putFile(file);
    } catch (err) {
      this.log.warn({ err, file }, 'a file could not be put in the shared content store');
    }
  }

  async deleteFile(file: string): Promise<void> {
    const key = this.keyOf(file);
    if (key) await this.store.delete(key).catch((err) => this.log.warn({ err, key }, 'a stored file could not be deleted'));
  }

  /** The stored object behind a local path that is missing here. */
  async head(file: string): Promise<StoredObject | undefined> {
    const key = this.keyOf(file);
    return key ? this.store.head(key) : undefined;
  }

  /** A stored file's bytes, for work that needs them whole (image previews, masks). */
  async read(file: string): Promise<Buffer | undefined> {
    const key = this.keyOf(file);
    return key ? readObject(this.store, key, MAX_BUFFERED) : undefined;
  }

  /**
   * Makes a file present locally, fetching it from the store when it is not
   * (an input uploaded through another process, before a node reads it).
   * True when the file is there afterwards.
   */
  async ensureLocal(file: string): Promise<boolean> {
    if (await isFile(file)) return true;
    const key = this.keyOf(file);
    if (!key) return false;
    return downloadObject(this.store, key, file);
  }

  /**
   * Fetches the image files a prompt names that are not on this disk (an
   * upload another process received, `name.png [output]` written elsewhere):
   * for an API process before it validates the prompt, for a worker before
   * it runs it. Every string input that names an image is resolved as
   * LoadImage resolves it (so it cannot leave its folder) against the
   * prompt owner's folders. Returns how many files were fetched.
   */
  async materialize(prompt: Record<string, unknown>, dirs: { input: string; output: string; temp: string }): Promise<number> {
    const names = new Set<string>();
    for (const node of Object.values(prompt)) {
      const inputs = (node as { inputs?: unknown } | null)?.inputs;
      if (!inputs || typeof inputs !== 'object') continue;
      for (const v of Object.values(inputs)) if (typeof v === 'string' && IMAGE_NAME.test(v) && names.size < MAX_MATERIALIZED) names.add(v);
    }
    let fetched = 0;
    await Promise.all(
      [...names].map(async (name) => {
        const { name: rel, type } = parseAnnotated(name, 'input');
        let file: string;
        try {
          file = safeRelative(dirs[type], rel);
        } catch {
          return; // validation refuses the name itself
        }
        if (await isFile(file)) return;
        try {
          if (this.keyOf(file) && (await downloadObject(this.store, this.keyOf(file)!, file))) fetched++;
        } catch (err) {
          this.log.warn({ err, file }, 'a prompt input could not be fetched from the shared content store');
        }
      }),
    );
    return fetched;
  }

  /**
   * Answers a GET/HEAD for a stored file with what @fastify/send would give
   * for the same file on disk: Accept-Ranges, Last-Modified and the weak ETag
   * of the writer's file, Content-Type from the name, conditional requests
   * (304, 412) and one byte range (206, 416; several ranges: the whole file).
   */
  async send(req: IncomingMessage, file: string, meta?: StoredObject): Promise<SendResult | undefined> {
    const key = this.keyOf(file);
    if (!key) return undefined;
    const obj = meta ?? (await this.store.head(key));
    if (!obj) return undefined;
    const mtime = new Date(obj.mtimeMs);
    const headers: Record<string, string | number> = {
      'Accept-Ranges': 'bytes',
      'Last-Modified': mtime.toUTCString(),
      ETag: `W/"${obj.size.toString(16)}-${mtime.getTime().toString(16)}"`,
    };
    let type = send.mime.getType(file) ?? 'application/octet-stream';
    if (send.isUtf8MimeType(type)) type += '; charset=utf-8';
    headers['Content-Type'] = type;
    const h = req.headers;
    if (h['if-match'] || h['if-unmodified-since'] || h['if-none-match'] || h['if-modified-since']) {
      if (preconditionFailed(h, headers)) return errorResult(412);
      if (notModified(h, headers)) {
        delete headers['Content-Type'];
        return { statusCode: 304, headers, stream: Readable.from([]), type: 'file' };
      }
    }
    let statusCode = 200;
    let range: { start: number; end: number } | undefined;
    const rh = h.range;
    if (typeof rh === 'string' && /^ *bytes=/.test(rh) && rangeFresh(h, headers)) {
      const ranges = parseRanges(obj.size, rh);
      if (ranges === 'unsatisfiable') return errorResult(416, { 'Content-Range': `bytes */${obj.size}` });
      if (ranges && ranges.length === 1) {
        range = ranges[0]!;
        statusCode = 206;
        headers['Content-Range'] = `bytes ${range.start}-${range.end}/${obj.size}`;
      }
    }
    const len = range ? range.end - range.start + 1 : obj.size;
    headers['Content-Length'] = len;
    if (req.method === 'HEAD' || len === 0) return { statusCode, headers, stream: Readable.from([]), type: 'file' };
    const stream = await this.store.get(key, range);
    if (!stream) return undefined;
    return { statusCode, headers, stream, type: 'file' };
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}

async function isFile(file: string): Promise<boolean> {
  return (await fs.promises.stat(file).catch(() => undefined))?.isFile() === true;
}

function errorResult(statusCode: number, extra: Record<string, string> = {}): SendResult {
  return { statusCode, headers: { ...extra }, stream: Readable.from([]), type: 'error' };
}

function tokens(v: string): string[] {
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}

function etagMatches(list: string, etag: string): boolean {
  return tokens(list).some((m) => m === etag || 'W/' + m === etag);
}

function preconditionFailed(h: IncomingMessage['headers'], headers: Record<string, string | number>): boolean {
  const ifMatch = h['if-match'];
  if (ifMatch && ifMatch !== '*' && !etagMatches(ifMatch, String(headers.ETag))) return true;
  const ius = h['if-unmodified-since'];
  if (ius) {
    const since = Date.parse(ius);
    if (!Number.isNaN(since) && Date.parse(String(headers['Last-Modified'])) > since) return true;
  }
  return false;
}

function notModified(h: IncomingMessage['headers'], headers: Record<string, string | number>): boolean {
  if (h['cache-control']?.includes('no-cache')) return false;
  const inm = h['if-none-match'];
  if (inm !== undefined) return inm === '*' || etagMatches(inm, String(headers.ETag));
  const ims = h['if-modified-since'];
  return ims !== undefined && Date.parse(String(headers['Last-Modified'])) <= Date.parse(ims);
}

function rangeFresh(h: IncomingMessage['headers'], headers: Record<string, string | number>): boolean {
  const raw = h['if-range'];
  if (raw === undefined) return true;
  const ifRange = String(raw);
  if (ifRange.includes('"')) return ifRange.includes(String(headers.ETag));
  const t = Date.parse(ifRange);
  return !Number.isNaN(t) && Date.parse(String(headers['Last-Modified'])) <= t;
}

/**
 * `bytes=a-b,c-,-n` against a size, read as @fastify/send reads it (so a
 * stored file answers exactly as the file on disk would): parts that are not
 * a valid range are skipped, no valid part at all is unsatisfiable, and
 * overlapping or adjacent ranges merge (one merged range is a 206).
 */
function parseRanges(size: number, header: string): Array<{ start: number; end: number }> | 'unsatisfiable' {
  const ranges: Array<{ start: number; end: number; index: number }> = [];
  const parts = header.slice(header.indexOf('=') + 1).split(',');
  parts.forEach((part, index) => {
    const dash = part.indexOf('-');
    if (dash < 0) return;
    let start = parseInt(part.slice(0, dash), 10);
    let end = parseInt(part.slice(dash + 1), 10);
    if (Number.isNaN(start)) {
      start = size - end;
      end = size - 1;
    } else if (Number.isNaN(end) || end > size - 1) {
      end = size - 1;
    }
    if (!Number.isNaN(start) && !Number.isNaN(end) && start > -1 && start <= end) ranges.push({ start, end, index });
  });
  if (ranges.length === 0) return 'unsatisfiable';
  if (ranges.length === 1) return ranges;
  ranges.sort((a, b) => a.start - b.start);
  const merged = [ranges[0]!];
  for (const r of ranges.slice(1)) {
    const cur = merged[merged.length - 1]!;
    if (r.start > cur.end + 1) merged.push(r);
    else {
      cur.end = Math.max(cur.end, r.end);
      cur.index = Math.min(cur.index, r.index);
    }
  }
  return merged.sort((a, b) => a.index - b.index);
}

/**
 * A local file through @fastify/send when it is on this disk, else the
 * shared store's copy with the same headers; undefined when neither holds it.
 */
export async function sendLocalOrStored(req: IncomingMessage, file: string, content: SharedContent | undefined, options: Parameters<typeof send>[2]): Promise<SendResult | undefined> {
  if (!content || (await isFile(file))) return (await send(req, '/' + encodeURIComponent(path.basename(file)), { root: path.dirname(file), ...options })) as SendResult;
  return content.send(req, file);
}

/** The shared content the flags configure (see openContentStore), over the service's folders; undefined without one. */
export async function openSharedContent(
  config: { dataDir: string; runtime: 'local' | 'cloud'; flags: Record<string, unknown>; dirs: { input: string; output: string; temp: string } },
  log: { warn(o: object, m: string): void },
  env: NodeJS.ProcessEnv = process.env,
): Promise<SharedContent | undefined> {
  const store = await openContentStore(config.flags, env);
  if (!store) return undefined;
  return new SharedContent(
    store,
    {
      input: config.dirs.input,
      output: config.dirs.output,
      temp: config.dirs.temp,
      blobs: path.join(config.dataDir, 'assets', 'blobs'),
      ...(config.runtime === 'cloud' ? { workspaces: workspacesRoot(config.dataDir) } : {}),
    },
    log,
  );
}
