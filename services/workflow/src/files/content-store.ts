import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { checkRealPath, UnsafePathError } from './paths.ts';

/**
 * Where outputs and asset blobs live so that every process can read them:
 * the shared content store. Keys are logical paths, `<root>/<relative
 * path>` (output/sub/x.png, temp/…, input/…, workspaces/<ws>/input/…,
 * blobs/ab/<hex>), the same names the assets tables keep.
 */
export interface StoredObject {
  size: number;
  /** The writer's file modification time (ms): Last-Modified and the ETag are the ones the writer's disk would give. */
  mtimeMs: number;
}

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

export interface ContentStore {
  readonly kind: 'directory' | 's3';
  /** Stores a file's bytes (or a buffer) under the key, replacing what was there. */
  put(key: string, body: { file: string } | Buffer, opts?: { mtimeMs?: number; contentType?: string }): Promise<void>;
  head(key: string): Promise<StoredObject | undefined>;
  /** The bytes (of the range, when given) as a stream; undefined when the key holds nothing. */
  get(key: string, range?: ByteRange): Promise<Readable | undefined>;
  delete(key: string): Promise<void>;
  close(): Promise<void>;
}

export const CONTENT_ROOTS = ['input', 'output', 'temp', 'blobs', 'workspaces'] as const;
export type ContentRoot = (typeof CONTENT_ROOTS)[number];

/** S3 keys are at most 1024 bytes; the prefix takes part of that. */
const MAX_KEY_BYTES = 900;

/**
 * Refuses a key that could leave its place: a known root first, then
 * non-empty components without `.`/`..`, backslashes, control characters,
 * lone surrogates or over-long names. Returns the key unchanged.
 */
export function checkKey(key: string): string {
  const parts = key.split('/');
  const bad = (why: string): never => {
    throw new UnsafePathError(`Invalid content key: ${why}`, 400);
  };
  if (!(CONTENT_ROOTS as readonly string[]).includes(parts[0]!)) bad('unknown root');
  if (parts.length < 2) bad('no name');
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) bad('too long');
  if (/[\u0000-\u001f\u007f\\]/.test(key) || /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(key)) bad('forbidden character');
  for (const p of parts) if (p === '' || p === '.' || p === '..' || Buffer.byteLength(p) > 255) bad('bad component');
  return key;
}

function mtimeOf(st: fs.Stats): number {
  return st.mtime.getTime();
}

/**
 * A directory shared by every process (a network file system, a volume):
 * `<root>/<key>`. Writes land in a temporary file renamed into place, so a
 * reader never sees half a file.
 */
export class DirectoryStore implements ContentStore {
  readonly kind = 'directory' as const;
  readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
    fs.mkdirSync(this.root, { recursive: true });
  }

  /** The file of a key, proven to stay below the root (symlinks included). */
  pathOf(key: string): string {
    checkKey(key);
    const full = path.join(this.root, ...key.split('/'));
    checkRealPath(this.root, full);
    return full;
  }

  async put(key: string, body: { file: string } | Buffer, opts: { mtimeMs?: number } = {}): Promise<void> {
    const target = this.pathOf(key);
    if (!Buffer.isBuffer(body) && path.resolve(body.file) === target) return;
    await fs.promises.mkdir(path.dirname(target), { recursive: true });
    const tmp = `${target}.${randomBytes(6).toString('hex')}.part`;
    try {
      if (Buffer.isBuffer(body)) await fs.promises.writeFile(tmp, body, { flag: 'wx' });
      else await fs.promises.copyFile(body.file, tmp, fs.constants.COPYFILE_EXCL);
      const mtime = opts.mtimeMs ?? (Buffer.isBuffer(body) ? undefined : mtimeOf(await fs.promises.stat(body.file)));
      if (mtime !== undefined) await fs.promises.utimes(tmp, new Date(), new Date(mtime));
      await fs.promises.rename(tmp, target);
    } catch (err) {
      await fs.promises.rm(tmp, { force: true });
      throw err;
    }
  }

  async head(key: string): Promise<StoredObject | undefined> {
    const st = await fs.promises.stat(this.pathOf(key)).catch(() => undefined);
    return st?.isFile() ? { size: st.size, mtimeMs: mtimeOf(st) } : undefined;
  }

  async get(key: string, range?: ByteRange): Promise<Readable | undefined> {
    const file = this.pathOf(key);
    const fh = await fs.promises.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW).catch(() => undefined);
    if (!fh) return undefined;
    if (!(await fh.stat()).isFile()) {
      await fh.close();
      return undefined;
    }
    return fh.createReadStream(range ? { start: range.start, end: range.end } : {});
  }

  async delete(key: string): Promise<void> {
    await fs.promises.rm(this.pathOf(key), { force: true });
  }

  async close(): Promise<void> {}
}

export interface S3Options {
  /** `http(s)://host:port` of an S3-compatible service; unset means AWS itself. */
  endpoint?: string;
  bucket: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Keys live under this prefix (several deployments in one bucket). */
  prefix: string;
  /** Bucket in the path (`/bucket/key`) instead of the host name: what most S3-compatible servers expect. */
  forcePathStyle: boolean;
}

type S3Module = typeof import('@aws-sdk/client-s3');

function notFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404;
}

/**
 * An S3-compatible bucket, through the AWS SDK (loaded only when configured:
 * it costs about 100 ms and 20 MB of heap to load). Single PUTs: an object is
 * at most 5 GiB. Checksums only where the API requires them, as many
 * S3-compatible servers do not take the SDK's trailing CRC uploads.
 */
export class S3Store implements ContentStore {
  readonly kind = 's3' as const;
  private constructor(
    private readonly s3: S3Module,
    private readonly client: InstanceType<S3Module['S3Client']>,
    readonly opts: S3Options,
  ) {}

  static async open(opts: S3Options): Promise<S3Store> {
    const s3 = await import('@aws-sdk/client-s3');
    const client = new s3.S3Client({
      region: opts.region,
      ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
      forcePathStyle: opts.forcePathStyle,
      ...(opts.accessKeyId && opts.secretAccessKey ? { credentials: { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey } } : {}),
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
      // A bucket that stops answering fails the request instead of holding it (and its client) forever.
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
    });
    return new S3Store(s3, client, opts);
  }

  private objectKey(key: string): string {
    return this.opts.prefix + checkKey(key);
  }

  async put(key: string, body: { file: string } | Buffer, opts: { mtimeMs?: number; contentType?: string } = {}): Promise<void> {
    const Key = this.objectKey(key);
    let Body: Buffer | fs.ReadStream;
    let ContentLength: number;
    let mtime = opts.mtimeMs;
    if (Buffer.isBuffer(body)) {
      Body = body;
      ContentLength = body.length;
    } else {
      // Opened once: the length and the bytes are those of the same file even if the name is replaced meanwhile.
      const fh = await fs.promises.open(body.file, 'r');
      const st = await fh.stat();
      ContentLength = st.size;
      mtime ??= mtimeOf(st);
      Body = fh.createReadStream({ start: 0, end: Math.max(0, st.size - 1) });
      if (st.size === 0) {
        Body.destroy();
        Body = Buffer.alloc(0);
      }
    }
    await this.client.send(
      new this.s3.PutObjectCommand({
        Bucket: this.opts.bucket,
        Key,
        Body,
        ContentLength,
        ContentType: opts.contentType ?? 'application/octet-stream',
        Metadata: mtime !== undefined ? { mtime: String(Math.trunc(mtime)) } : undefined,
      }),
    );
  }

  async head(key: string): Promise<StoredObject | undefined> {
    try {
      const r = await this.client.send(new this.s3.HeadObjectCommand({ Bucket: this.opts.bucket, Key: this.objectKey(key) }));
      const m = Number(r.Metadata?.mtime);
      return { size: r.ContentLength ?? 0, mtimeMs: Number.isFinite(m) && m > 0 ? m : (r.LastModified?.getTime() ?? 0) };
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
  }

  async get(key: string, range?: ByteRange): Promise<Readable | undefined> {
    try {
      const r = await this.client.send(new this.s3.GetObjectCommand({ Bucket: this.opts.bucket, Key: this.objectKey(key), Range: range ? `bytes=${range.start}-${range.end}` : undefined }));
      const body = r.Body as Readable | undefined;
      return body ?? Readable.from([]);
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new this.s3.DeleteObjectCommand({ Bucket: this.opts.bucket, Key: this.objectKey(key) }));
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

/** Reads a whole object (previews, channel extraction, mask compositing), refusing one larger than `max` bytes. */
export async function readObject(store: ContentStore, key: string, max: number): Promise<Buffer | undefined> {
  const meta = await store.head(key);
  if (!meta) return undefined;
  if (meta.size > max) throw new UnsafePathError(`The stored file is larger than ${max} bytes`, 400);
  const s = await store.get(key);
  if (!s) return undefined;
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of s) {
    n += (c as Buffer).length;
    if (n > max) {
      s.destroy();
      throw new UnsafePathError(`The stored file is larger than ${max} bytes`, 400);
    }
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Copies an object to a local file (written aside, renamed into place). False when the key holds nothing. */
export async function downloadObject(store: ContentStore, key: string, file: string): Promise<boolean> {
  const s = await store.get(key);
  if (!s) return false;
  await fs.promises.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${randomBytes(6).toString('hex')}.part`;
  try {
    await pipeline(s, fs.createWriteStream(tmp, { flags: 'wx' }));
    await fs.promises.rename(tmp, file);
  } catch (err) {
    await fs.promises.rm(tmp, { force: true });
    throw err;
  }
  return true;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

/**
 * The store the flags ask for: an S3-compatible bucket with `--s3-bucket` /
 * WORKFLOW_S3_BUCKET, a shared directory with `--content-dir` /
 * WORKFLOW_CONTENT_DIR, else none (every process shares --data-dir, which is
 * the store then).
 */
export async function openContentStore(flags: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): Promise<ContentStore | undefined> {
  const bucket = str(flags.s3Bucket) ?? str(env.WORKFLOW_S3_BUCKET);
  if (bucket) {
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new Error(`--s3-bucket must be an S3 bucket name (3-63 lowercase letters, digits, dots, hyphens), got ${bucket}`);
    const endpoint = str(flags.s3Endpoint) ?? str(env.WORKFLOW_S3_ENDPOINT);
    if (endpoint && !/^https?:\/\/[^/?#\s]+\/?$/i.test(endpoint)) throw new Error(`--s3-endpoint must be http(s)://host[:port], got ${endpoint}`);
    const accessKeyId = str(flags.s3AccessKeyId) ?? str(env.WORKFLOW_S3_ACCESS_KEY_ID);
    const secretAccessKey = str(flags.s3SecretAccessKey) ?? str(env.WORKFLOW_S3_SECRET_ACCESS_KEY);
    if (!accessKeyId !== !secretAccessKey) throw new Error('WORKFLOW_S3_ACCESS_KEY_ID and WORKFLOW_S3_SECRET_ACCESS_KEY go together');
    let prefix = str(flags.s3Prefix) ?? str(env.WORKFLOW_S3_PREFIX) ?? '';
    if (prefix) {
      prefix = prefix.replace(/^\/+|\/+$/g, '');
      if (prefix.split('/').some((p) => p === '' || p === '.' || p === '..') || /[\u0000-\u001f\u007f\\]/.test(prefix)) throw new Error(`--s3-prefix must be a plain path, got ${prefix}`);
      prefix += '/';
    }
    const style = str(flags.s3ForcePathStyle) ?? str(env.WORKFLOW_S3_FORCE_PATH_STYLE);
    const forcePathStyle = style === undefined ? endpoint !== undefined || flags.s3ForcePathStyle === true : !/^(0|false|no)$/i.test(style);
    return S3Store.open({ endpoint, bucket, region: str(flags.s3Region) ?? str(env.WORKFLOW_S3_REGION) ?? str(env.AWS_REGION) ?? 'us-east-1', accessKeyId, secretAccessKey, prefix, forcePathStyle });
  }
  const dir = str(flags.contentDir) ?? str(env.WORKFLOW_CONTENT_DIR);
  return dir ? new DirectoryStore(dir) : undefined;
}
