import fs from 'node:fs';
import path from 'node:path';
import send from '@fastify/send';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { handleStamp } from '../domain/assets/content.ts';
import { compositeMask, MaskError, placeUpload, SPOOL_MEMORY_LIMIT, UploadBody, UploadError, type PlacedFile } from '../domain/uploads.ts';
import { releaseBodyChunks } from '../http/body-chunks.ts';
import { MultipartError, multipartBoundary, parseMultipart, type MultipartLimits } from '../http/multipart.ts';
import { mayViewOutput } from '../domain/output-owners.ts';
import { channelImage, contentDisposition, previewImage, safeContentType, ViewError } from '../domain/view.ts';
import { readSafetensorsMetadata } from '../domain/models.ts';
import { parseAnnotated, safeJoin, type FolderType, UnsafePathError } from '../files/paths.ts';
import type { StoredObject } from '../files/content-store.ts';
import type { SharedContent } from '../files/shared-content.ts';
import type { ModelFolders } from '../domain/models.ts';
import { dual } from './common.ts';
import type { RouteCtx } from './context.ts';
import type { NodeScope } from '../nodes/api.ts';
import { queryString, sendError } from './replies.ts';

const FOLDER_TYPES = new Set<FolderType>(['input', 'output', 'temp']);

/** A file an upload route stored (what the assets hook receives). */
export interface StoredUpload {
  type: FolderType;
  subfolder: string;
  name: string;
  /** Absolute path of the stored file. */
  path: string;
  size: number;
  mimeType: string;
  /** The same bytes were already there under this name and were kept. */
  reused: boolean;
  /** BLAKE3 (`blake3:<hex>`) and first bytes of the stored file, when the upload hashed them as they arrived. */
  hash?: string;
  head?: Buffer;
  /**
   * The stamp (device and inode, see fileStamp) of the file this upload wrote,
   * held open until the answer is sent: the hash stands for the file at the
   * path while the path has this stamp.
   */
  stamp?: string;
}

export interface FileRoutesOptions {
  dirs: Record<FolderType, string>;
  models: ModelFolders;
  maxUploadSize: number;
  multiUser: boolean;
  /** A file landed in the input folder: LoadImage's choices (object_info) must be listed again. */
  onInputChanged?: (scope: NodeScope) => void;
  /**
   * Assets hook: extra fields for the upload answer (the reference adds
   * `asset` when assets are enabled). Called once the file is stored.
   */
  uploadAnswerExtras?: (file: StoredUpload, req: FastifyRequest) => Promise<Record<string, unknown> | undefined>;
  /**
   * Assets hook: an upload's file is in place and its hash known (stamp: see
   * StoredUpload.stamp); returns the release, called once it is registered.
   */
  uploadPlaced?: (w: { hash: string; size: number; head: Buffer; stamp: string }) => () => void;
  /** Assets hook: the stored file a `blake3:<hash>` name in /view stands for. */
  resolveHashName?: (name: string, req: FastifyRequest) => Promise<{ path: string; filename: string } | undefined>;
  /**
   * The shared content store (scale-out): uploads are put there, and /view
   * serves from it a file that is not on this process's disk.
   */
  content?: SharedContent;
}

class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

interface UploadForm {
  image?: { filename: string; mimetype: string; body: UploadBody };
  fields: Record<string, string>;
}

/** The form's bounds, on both paths (the streaming parser's names in parentheses). */
const FORM_LIMITS: MultipartLimits = { maxFiles: 8, maxFields: 32, maxParts: 40, maxFieldBytes: 1024 * 1024, maxHeaderPairs: 100, maxHeaderBytes: 80 * 1024 };

/**
 * Reads a multipart upload: the `image` file into memory (bounded by
 * max_upload_size), the first value of each other field. A body that
 * declares a length up to SPOOL_MEMORY_LIMIT is read whole into one buffer
 * and parsed there (http/multipart.ts: the file is a view of that buffer,
 * written with one call); a larger body, or one sent without a length, is
 * parsed as it streams in and spooled past the limit.
 */
async function readForm(req: FastifyRequest, maxUploadSize: number, blake3: boolean): Promise<UploadForm> {
  if (!req.isMultipart()) throw new Refusal(400, 'Expected a multipart/form-data body with an image field');
  const boundary = multipartBoundary(req.headers['content-type']);
  const declared = req.headers['content-length'] === undefined ? NaN : Number(req.headers['content-length']);
  if (boundary !== undefined && req.headers['transfer-encoding'] === undefined && Number.isSafeInteger(declared) && declared >= 0 && declared <= SPOOL_MEMORY_LIMIT) {
    const whole = await readWholeBody(req, declared);
    // The parser's chunks are copied into `whole`: free them now, not at some later collection (see releaseBodyChunks).
    releaseBodyChunks(declared);
    return formFromBuffer(whole, boundary, maxUploadSize, blake3);
  }
  const form: UploadForm = { fields: {} };
  try {
    const parts = req.parts({ preservePath: true, limits: { fileSize: maxUploadSize, files: FORM_LIMITS.maxFiles, fields: FORM_LIMITS.maxFields, parts: FORM_LIMITS.maxParts, fieldSize: FORM_LIMITS.maxFieldBytes, headerPairs: FORM_LIMITS.maxHeaderPairs } });
    for await (const part of parts) {
      if (part.type === 'file') {
        if (part.fieldname !== 'image' || form.image) {
          part.file.resume();
          continue;
        }
        const body = new UploadBody({ blake3 });
        form.image = { filename: part.filename, mimetype: part.mimetype, body };
        for await (const chunk of part.file) await body.push(chunk as Buffer);
        await body.finish();
        if (part.file.truncated) throw new Refusal(413, tooLarge(maxUploadSize));
      } else if (!(part.fieldname in form.fields)) {
        form.fields[part.fieldname] = typeof part.value === 'string' ? part.value : String(part.value);
      }
    }
  } catch (err) {
    await form.image?.body.dispose();
    if (err instanceof Refusal) throw err;
    const e = err as { code?: string; statusCode?: number; message?: string };
    if (e.code === 'FST_REQ_FILE_TOO_LARGE') throw new Refusal(413, tooLarge(maxUploadSize));
    if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) throw new Refusal(e.statusCode, `Invalid multipart body: ${e.message}`);
    if (e.message && /multipart|boundary|Unexpected end|terminated early|Malformed/i.test(e.message)) throw new Refusal(400, `Invalid multipart body: ${e.message}`);
    throw err;
  }
  return form;
}

/**
 * The body buffer of the last upload, kept for the next one: a fresh buffer
 * of a few MB costs its page faults again and counts as new external memory
 * (a young-generation collection every few uploads). Taken by one upload at
 * a time (a concurrent one allocates its own), given back when its body is
 * disposed, dropped after SPARE_IDLE_MS without uploads.
 */
let spareBody: Buffer | undefined;
let spareTimer: NodeJS.Timeout | undefined;
const SPARE_IDLE_MS = 30_000;

function takeBodyBuffer(length: number): Buffer {
  const spare = spareBody;
  if (spare && spare.length >= length) {
    spareBody = undefined;
    return spare;
  }
  // Whole megabytes (at least one), so that bodies of similar sizes reuse one buffer; never beyond the in-memory limit.
  const size = Math.min(SPOOL_MEMORY_LIMIT, Math.max(1 << 20, Math.ceil(length / (1 << 20)) * (1 << 20)));
  return Buffer.allocUnsafeSlow(Math.max(size, length));
}

function giveBackBodyBuffer(buf: Buffer): void {
  if (spareBody && spareBody.length >= buf.length) return;
  spareBody = buf;
  if (spareTimer) spareTimer.refresh();
  else {
    spareTimer = setTimeout(() => {
      spareBody = undefined;
      spareTimer = undefined;
    }, SPARE_IDLE_MS);
    spareTimer.unref();
  }
}

/** A body of `length` bytes into one buffer (a view of a reused one: see takeBodyBuffer); a body that ends early (or runs long) is a 400. */
function readWholeBody(req: FastifyRequest, length: number): Promise<{ body: Buffer; whole: Buffer }> {
  const raw = req.raw;
  return new Promise((resolve, reject) => {
    const whole = takeBodyBuffer(length);
    const buf = whole.subarray(0, length);
    let got = 0;
    const done = (err?: Error) => {
      raw.off('data', onData);
      raw.off('end', onEnd);
      raw.off('error', onError);
      raw.off('close', onClose);
      if (err) {
        giveBackBodyBuffer(whole);
        reject(err);
      } else resolve({ body: buf, whole });
    };
    const onData = (chunk: Buffer) => {
      if (got + chunk.length > length) {
        raw.resume();
        return done(new Refusal(400, 'Invalid multipart body: longer than its Content-Length'));
      }
      chunk.copy(buf, got);
      got += chunk.length;
    };
    const onEnd = () => (got === length ? done() : done(new Refusal(400, 'Invalid multipart body: Unexpected end of multipart data')));
    const onError = (err: Error) => done(new Refusal(400, `Invalid multipart body: ${err.message}`));
    const onClose = () => {
      if (!raw.complete) done(new Refusal(400, 'Invalid multipart body: the request ended before its body'));
    };
    raw.on('data', onData);
    raw.on('end', onEnd);
    raw.on('error', onError);
    raw.on('close', onClose);
  });
}

/**
 * The form in a body held whole (see readForm): the same answers as the
 * streaming path gives. The image's chunks are views of `whole`, which goes
 * back for reuse when the image's body is disposed (at once when the form
 * has no image or is refused).
 */
async function formFromBuffer({ body: buf, whole }: { body: Buffer; whole: Buffer }, boundary: string, maxUploadSize: number, blake3: boolean): Promise<UploadForm> {
  let form: UploadForm | undefined;
  try {
    form = await formFromParts(buf, boundary, maxUploadSize, blake3);
    return form;
  } finally {
    if (form?.image) form.image.body.onDispose = () => giveBackBodyBuffer(whole);
    else giveBackBodyBuffer(whole);
  }
}

async function formFromParts(buf: Buffer, boundary: string, maxUploadSize: number, blake3: boolean): Promise<UploadForm> {
  let parts;
  try {
    parts = parseMultipart(buf, boundary, FORM_LIMITS);
  } catch (err) {
    if (err instanceof MultipartError) throw new Refusal(err.status, `Invalid multipart body: ${err.message}`);
    throw err;
  }
  const form: UploadForm = { fields: {} };
  for (const part of parts) {
    if (part.name === undefined) continue;
    // As the streaming path: a name that an object inherits is refused, never used as a key.
    if (part.name in Object.prototype) throw new Refusal(400, 'Invalid multipart body: prototype property is not allowed as field name');
    if (part.file) {
      if (part.name !== 'image' || form.image) continue;
      if (part.data.length > maxUploadSize) throw new Refusal(413, tooLarge(maxUploadSize));
      const body = new UploadBody({ blake3 });
      await body.push(part.data);
      await body.finish();
      form.image = { filename: part.filename ?? '', mimetype: part.contentType, body };
    } else if (!(part.name in form.fields)) {
      form.fields[part.name] = part.value ?? '';
    }
  }
  return form;
}

function tooLarge(limit: number): string {
  return `File too large: the upload limit (max_upload_size) is ${limit} bytes`;
}

/**
 * Files: POST /upload/image, POST /upload/mask (deprecated), GET /view and
 * GET /view_metadata/{folder}. Every name goes through files/paths.ts; the
 * statuses are the reference's (upload traversal 400; /view: a name with `..`
 * or a leading `/` 400, a subfolder that leaves its folder 403).
 */
export function fileRoutes(app: FastifyInstance, ctx: RouteCtx, opts: FileRoutesOptions): void {
  const guard = (fn: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>) => async (req: FastifyRequest, reply: FastifyReply) => {
    try {
      return await fn(req, reply);
    } catch (err) {
      if (err instanceof Refusal || err instanceof ViewError || err instanceof MaskError || err instanceof UploadError) return sendError(reply, err.status, err.message);
      if (err instanceof UnsafePathError) return sendError(reply, err.status, err.message);
      throw err;
    }
  };

  /** The upload's target folder and name, refused (400) when any part could leave its folder. */
  const target = (req: FastifyRequest, form: UploadForm): { type: FolderType; subfolder: string; folder: string; name: string } => {
    const image = form.image;
    if (!image) throw new Refusal(400, 'No image: the form needs a file in the "image" field');
    const name = image.filename;
    if (!name) throw new Refusal(400, 'The image has no file name');
    const rawType = form.fields.type || 'input';
    if (!FOLDER_TYPES.has(rawType as FolderType)) throw new Refusal(400, `Invalid type "${rawType}": expected input, temp or output`);
    const type = rawType as FolderType;
    const subfolder = form.fields.subfolder ?? '';
    let file: string;
    try {
      file = safeJoin(ctx.folders(req).dirs[type], path.posix.normalize(subfolder || '.') === '.' ? '' : subfolder, name);
    } catch (err) {
      if (err instanceof UnsafePathError) throw new Refusal(400, `${err.message}: uploads stay inside the ${type} folder`);
      throw err;
    }
    return { type, subfolder, folder: path.dirname(file), name };
  };

  /** Multi-user: an upload never replaces a file another user's job produced. */
  const guardOthersOutput = async (req: FastifyRequest, t: ReturnType<typeof target>, overwrite: boolean) => {
    if (!opts.multiUser || !overwrite || t.type === 'input') return;
    if (!fs.existsSync(path.join(t.folder, t.name))) return;
    if (!(await mayViewOutput(ctx.storageDb(), ctx.owner(req), { filename: t.name, subfolder: t.subfolder, type: t.type }))) {
      throw new Refusal(403, "The file belongs to another user's job and cannot be overwritten");
    }
  };

  /**
   * `stored`: the file holds the upload's own bytes (not the mask route's
   * composite), so their size and hash taken on the way in describe it.
   */
  const answer = async (req: FastifyRequest, reply: FastifyReply, t: ReturnType<typeof target>, placed: PlacedFile, form: UploadForm, stored?: { size: number; hash?: string; head: Buffer; stamp?: string }) => {
    const stamp = stored?.stamp;
    if (t.type === 'input' && !placed.reused) opts.onInputChanged?.(ctx.folders(req));
    // Before the answer: a prompt sent to another process right after it finds the file in the store.
    await opts.content?.putQuietly(placed.path);
    const body: Record<string, unknown> = { name: placed.name, subfolder: t.subfolder, type: t.type };
    if (opts.uploadAnswerExtras) {
      const size = stored?.hash ? stored.size : (await fs.promises.stat(placed.path)).size;
      const extra = await opts.uploadAnswerExtras(
        {
          type: t.type,
          subfolder: t.subfolder,
          name: placed.name,
          path: placed.path,
          size,
          mimeType: form.image!.mimetype,
          reused: placed.reused,
          ...(stored?.hash && stamp ? { hash: stored.hash, head: stored.head, stamp } : {}),
        },
        req,
      );
      if (extra) Object.assign(body, extra);
    }
    return reply.type('application/json').send(JSON.stringify(body));
  };

  const tooBig = (req: FastifyRequest): boolean => {
    const len = Number(req.headers['content-length']);
    // The multipart envelope adds a little; anything beyond the limit plus room for the fields cannot hold an allowed file.
    return Number.isFinite(len) && len > opts.maxUploadSize + 2 * 1024 * 1024;
  };

  const multipartDoc = (required: string[], extra: Record<string, unknown> = {}) => ({
    consumes: ['multipart/form-data'],
    body: {
      type: 'object',
      required,
      properties: {
        image: { type: 'string', format: 'binary', description: 'The file' },
        type: { type: 'string', enum: ['input', 'temp', 'output'], default: 'input' },
        overwrite: { type: 'string', description: '"true" or "1" replaces an existing file' },
        subfolder: { type: 'string' },
        ...extra,
      },
    },
  });

  dual(
    app,
    'POST',
    '/upload/image',
    { operationId: 'uploadImage', tags: ['upload'], ...multipartDoc(['image']) } as any,
    guard(async (req, reply) => {
      if (tooBig(req)) throw new Refusal(413, tooLarge(opts.maxUploadSize));
      // With assets on, the bytes are hashed as they arrive: the asset registration does not read the file again.
      const form = await readForm(req, opts.maxUploadSize, opts.uploadAnswerExtras !== undefined);
      const body = form.image?.body as UploadBody;
      let stored: { t: ReturnType<typeof target>; placed: PlacedFile };
      let stamp: string | undefined;
      let release: (() => void) | undefined;
      try {
        const t = target(req, form);
        const overwrite = form.fields.overwrite === 'true' || form.fields.overwrite === '1';
        await guardOthersOutput(req, t, overwrite);
        // Hashed: the write is made known (uploadPlaced) before it is in place, and a handle on it stays open until its asset is registered (see StoredUpload.stamp).
        const written = async (handle: fs.promises.FileHandle) => {
          const hash = await body.blake3();
          if (!hash) return;
          stamp = await handleStamp(handle);
          release = opts.uploadPlaced?.({ hash, size: body.size, head: body.head, stamp });
        };
        stored = { t, placed: await placeUpload(t.folder, t.name, body, overwrite, undefined, opts.uploadAnswerExtras !== undefined ? written : undefined) };
      } finally {
        // The spool goes before the answer: a client that saw the answer never finds it.
        await form.image?.body.dispose();
      }
      try {
        return await answer(req, reply, stored.t, stored.placed, form, { size: body.size, hash: await body.blake3(), head: body.head, stamp: stored.placed.handle ? stamp : undefined });
      } finally {
        release?.();
        await stored.placed.handle?.close();
      }
    }),
    { validate: false },
  );

  dual(
    app,
    'POST',
    '/upload/mask',
    {
      operationId: 'uploadMask',
      tags: ['upload'],
      deprecated: true,
      description: 'Deprecated: composite the mask onto the image client side and upload the result with POST /api/upload/image (uploadImage). Still functional.',
      ...multipartDoc(['image', 'original_ref'], { original_ref: { type: 'string', description: 'JSON {filename, subfolder?, type? (default output)}' } }),
    } as any,
    guard(async (req, reply) => {
      if (tooBig(req)) throw new Refusal(413, tooLarge(opts.maxUploadSize));
      const form = await readForm(req, opts.maxUploadSize, false);
      let stored: { t: ReturnType<typeof target>; placed: PlacedFile };
      try {
        stored = await maskUpload(req, form);
      } finally {
        await form.image?.body.dispose();
      }
      return answer(req, reply, stored.t, stored.placed, form);
    }),
    { validate: false },
  );

  async function maskUpload(req: FastifyRequest, form: UploadForm) {
    const t = target(req, form);
    let ref: unknown;
    try {
      ref = JSON.parse(form.fields.original_ref ?? '');
    } catch {
      throw new Refusal(400, 'original_ref must be a JSON object with a filename');
    }
    if (!ref || typeof ref !== 'object' || Array.isArray(ref) || typeof (ref as any).filename !== 'string') throw new Refusal(400, 'original_ref must be a JSON object with a filename');
    const r = ref as { filename: string; subfolder?: unknown; type?: unknown };
    const original = resolveViewFile(req, r.filename, typeof r.type === 'string' ? r.type : 'output', typeof r.subfolder === 'string' ? r.subfolder : undefined);
    const st = await fs.promises.stat(original.path).catch(() => undefined);
    // Not on this disk: the shared store's copy (an output another process wrote).
    const storedOriginal = !st?.isFile() && opts.content ? await opts.content.read(original.path) : undefined;
    if (!st?.isFile() && !storedOriginal) throw new Refusal(404, 'original_ref: the original image does not exist');
    if (opts.multiUser && original.type !== 'input' && !(await mayViewOutput(ctx.storageDb(), ctx.owner(req), { filename: original.filename, subfolder: original.subfolder, type: original.type }))) {
      throw new Refusal(404, 'original_ref: the original image does not exist');
    }
    const mask = await form.image!.body.buffer();
    const composite = await compositeMask(storedOriginal ?? original.path, mask);
    const overwrite = form.fields.overwrite === 'true' || form.fields.overwrite === '1';
    await guardOthersOutput(req, t, overwrite);
    return { t, placed: await placeUpload(t.folder, t.name, form.image!.body, overwrite, async () => composite) };
  }

  /** The reference's /view name rules, with the stricter ones of files/paths.ts on top. */
  const resolveViewFile = (req: FastifyRequest, rawName: string, rawType: string, subfolder: string | undefined) => {
    const { name, type: annotated } = parseAnnotated(rawName, 'output');
    const isAnnotated = name !== rawName;
    if (!name) throw new Refusal(400, 'Invalid filename');
    if (name.startsWith('/') || name.includes('..')) throw new Refusal(400, 'Invalid filename');
    const type = isAnnotated ? annotated : rawType;
    if (!FOLDER_TYPES.has(type as FolderType)) throw new Refusal(400, `Invalid type "${type}": expected input, output or temp`);
    // The reference serves the base name of what it is given.
    const filename = name.slice(name.lastIndexOf('/') + 1);
    if (!filename) throw new Refusal(400, 'Invalid filename');
    const sub = subfolder ?? '';
    let file: string;
    try {
      file = safeJoin(ctx.folders(req).dirs[type as FolderType], sub, filename);
    } catch (err) {
      if (err instanceof UnsafePathError) throw new Refusal(err.message.startsWith('Invalid filename') || err.message.startsWith('Invalid path') ? 400 : err.status, err.message);
      throw err;
    }
    return { path: file, type: type as FolderType, filename, subfolder: sub };
  };

  dual(
    app,
    'GET',
    '/view',
    {
      operationId: 'viewFile',
      tags: ['view'],
      querystring: {
        type: 'object',
        required: ['filename'],
        properties: {
          filename: { type: 'string' },
          type: { type: 'string', enum: ['input', 'output', 'temp'], default: 'output' },
          subfolder: { type: 'string' },
          preview: { type: 'string' },
          channel: { type: 'string', enum: ['rgba', 'rgb', 'a'] },
        },
      },
    },
    guard(async (req, reply) => {
      const q = req.query;
      const rawName = queryString(q, 'filename');
      if (rawName === undefined) return sendError(reply, 404, 'File not found: no filename given');
      let file: string;
      let filename: string;
      let ownerCheck: { filename: string; subfolder: string; type: FolderType } | undefined;
      if (/^blake3:/i.test(rawName) && opts.resolveHashName) {
        const hit = await opts.resolveHashName(rawName, req);
        if (!hit) return sendError(reply, 404, 'File not found');
        file = hit.path;
        filename = hit.filename;
      } else {
        const v = resolveViewFile(req, rawName, queryString(q, 'type') ?? 'output', queryString(q, 'subfolder'));
        file = v.path;
        filename = v.filename;
        if (opts.multiUser && v.type !== 'input') ownerCheck = v;
      }
      let st = await fs.promises.stat(file).catch(() => undefined);
      // Hosted runtime: outputs saved before workspaces had their own output folder are in the shared one (and
      // shown only to the workspace whose job wrote them: the owner check below).
      if (!st?.isFile() && ownerCheck?.type === 'output') {
        const legacy = (() => {
          try {
            return safeJoin(opts.dirs.output, ownerCheck.subfolder, ownerCheck.filename);
          } catch {
            return undefined;
          }
        })();
        const lst = legacy && legacy !== file ? await fs.promises.stat(legacy).catch(() => undefined) : undefined;
        if (lst?.isFile()) {
          file = legacy!;
          st = lst;
        }
      }
      // Not on this disk (written by a process elsewhere): the shared content store's copy.
      let stored: StoredObject | undefined;
      if (!st?.isFile() && opts.content) stored = await opts.content.head(file);
      if (!st?.isFile() && !stored) return sendError(reply, 404, 'File not found');
      const readStored = async (f: string): Promise<Buffer> => {
        const b = await opts.content!.read(f);
        if (!b) throw new Refusal(404, 'File not found');
        return b;
      };
      if (ownerCheck && !(await mayViewOutput(ctx.storageDb(), ctx.owner(req), ownerCheck))) return sendError(reply, 404, 'File not found');

      const disposition = contentDisposition(filename);
      const preview = queryString(q, 'preview');
      const channel = queryString(q, 'channel') ?? 'rgba';
      if (preview !== undefined) {
        const out = await previewImage(stored ? await readStored(file) : file, preview, queryString(q, 'channel') ?? '');
        return reply.header('Content-Disposition', disposition).header('Cache-Control', 'no-cache').type(out.type).send(out.body);
      }
      if (channel === 'rgb' || channel === 'a') {
        const png = await channelImage(stored ? await readStored(file) : file, channel);
        return reply.header('Content-Disposition', disposition).header('Cache-Control', 'no-cache').type('image/png').send(png);
      }
      const r = stored
        ? await opts.content!.send(req.raw, file, stored)
        : await send(req.raw, '/' + encodeURIComponent(path.basename(file)), { root: path.dirname(file), dotfiles: 'allow', index: false, cacheControl: false });
      if (!r) return sendError(reply, 404, 'File not found');
      if (r.type !== 'file') {
        r.stream.destroy?.();
        return sendError(reply, r.statusCode >= 400 ? r.statusCode : 404, 'File not found');
      }
      const headers = r.headers as Record<string, string | number>;
      if (r.statusCode !== 304) headers['Content-Type'] = safeContentType(String(headers['Content-Type'] ?? headers['content-type'] ?? ''));
      delete headers['content-type'];
      headers['Content-Disposition'] = disposition;
      headers['Cache-Control'] = 'no-cache';
      headers['X-Content-Type-Options'] = 'nosniff';
      return reply.code(r.statusCode).headers(headers).send(r.stream);
    }),
    { validate: false },
  );

  dual(
    app,
    'GET',
    '/view_metadata/:folder_name',
    {
      operationId: 'viewMetadata',
      tags: ['view'],
      params: { type: 'object', properties: { folder_name: { type: 'string' } } },
      querystring: { type: 'object', required: ['filename'], properties: { filename: { type: 'string' } } },
    },
    guard(async (req, reply) => {
      const folder = (req.params as { folder_name: string }).folder_name;
      const filename = queryString(req.query, 'filename');
      if (!filename || !filename.endsWith('.safetensors')) return sendError(reply, 404, 'Not found: filename must name a .safetensors file');
      const file = opts.models.fullPath(folder, filename);
      if (!file) return sendError(reply, 404, 'Model file not found');
      const meta = await readSafetensorsMetadata(file);
      if (meta === undefined) return sendError(reply, 404, 'The file has no safetensors metadata');
      return reply.type('application/json').send(JSON.stringify(meta));
    }),
    { validate: false },
  );
}
