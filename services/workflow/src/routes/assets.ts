import fs from 'node:fs';
import path from 'node:path';
import multipart from '@fastify/multipart';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isTransientStorageError } from '@svc/storage';
import { Blake3Stream, canonicalHash, cleanMime, tempUploadPath } from '../domain/assets/content.ts';
import { CURSOR_SORTS, decodeCursor, encodeCursor, type CursorSort } from '../domain/assets/cursor.ts';
import { AssetError, checkJsonValue, checkText, isPlainObject } from '../domain/assets/errors.ts';
import { listTags, tagHistogram, type AssetFilter, type SortColumn } from '../domain/assets/repo.ts';
import { AssetSeeder, pruneMissing, SEED_ROOTS, type SeedRoot } from '../domain/assets/seeder.ts';
import type { AssetService, Viewer } from '../domain/assets/service.ts';
import { sendLocalOrStored } from '../files/shared-content.ts';
import { assetSchemas as S } from '../schemas/assets.ts';
import { dual, type Handler, type RouteDoc } from './common.ts';
import type { RouteCtx } from './context.ts';

export interface AssetRoutesOptions {
  /** Undefined when assets are disabled: every route answers 503 SERVICE_DISABLED. */
  service?: AssetService;
  seeder?: AssetSeeder;
  maxUploadSize: number;
  /** A JSON body `{url, …}` on POST /api/assets: the URL is fetched (through the outbound guard) and stored. */
  fromUrl?: (body: Record<string, unknown>, viewer: Viewer, svc: AssetService) => Promise<{ status: number; body: unknown }>;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SORTS = new Set(['name', 'created_at', 'updated_at', 'size', 'last_access_time']);
const MAX_TAG = 256;
const MAX_TAGS = 128;

type Query = Record<string, string | string[] | undefined>;

function badQuery(message: string, field: string): AssetError {
  return new AssetError(400, 'INVALID_QUERY', message, { errors: [{ loc: [field], msg: message }] });
}

function badBody(message: string, field?: string): AssetError {
  return new AssetError(400, 'INVALID_BODY', message, field ? { errors: [{ loc: [field], msg: message }] } : {});
}

/** One value of a scalar query parameter (a repeated one is refused, as the reference's validation does). */
function scalar(q: Query, name: string, maxLength = 4096): string | undefined {
  const v = q[name];
  if (Array.isArray(v)) throw badQuery(`${name} must be given once`, name);
  if (v !== undefined) checkText(v, name, 'INVALID_QUERY', maxLength);
  return v;
}

function intQuery(q: Query, name: string, dflt: number, min: number, max: number): number {
  const v = scalar(q, name);
  if (v === undefined || v === '') return dflt;
  if (!/^\s*[+-]?\d{1,12}\s*$/.test(v)) throw badQuery(`${name} must be an integer`, name);
  const n = Number(v);
  if (n < min || n > max) throw badQuery(`${name} must be between ${min} and ${max}`, name);
  return n;
}

/** Tags from repeated parameters or comma-separated values: trimmed, lower-cased, without duplicates. */
function tagList(values: unknown[], field: string, code: string): string[] {
  const out: string[] = [];
  for (const v of values) {
    if (typeof v !== 'string') throw new AssetError(400, code, `${field} must be strings`, { errors: [{ loc: [field], msg: 'must be strings' }] });
    for (const part of v.split(',')) {
      const t = checkText(part.trim().toLowerCase(), field, code, MAX_TAG);
      if (t && !out.includes(t)) out.push(t);
    }
  }
  if (out.length > MAX_TAGS) throw new AssetError(400, code, `at most ${MAX_TAGS} ${field}`, { field });
  return out;
}

function queryTags(q: Query, name: string): string[] {
  const v = q[name];
  return v === undefined ? [] : tagList(Array.isArray(v) ? v : [v], name, 'INVALID_QUERY');
}

/** The filters GET /api/assets and the tag histogram share. */
function parseFilter(q: Query, viewer: Viewer): AssetFilter & { hash?: string } {
  const nameContains = scalar(q, 'name_contains');
  const raw = scalar(q, 'metadata_filter');
  let metadataFilter: Record<string, unknown> | undefined;
  if (raw !== undefined && raw.trim() !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (err) {
      throw badQuery(`metadata_filter must be JSON: ${(err as Error).message}`, 'metadata_filter');
    }
    if (!isPlainObject(parsed)) throw badQuery('metadata_filter must be a JSON object', 'metadata_filter');
    checkJsonValue(parsed, 'metadata_filter', 'INVALID_QUERY');
    if (Object.keys(parsed).length > 32) throw badQuery('metadata_filter has more than 32 keys', 'metadata_filter');
    metadataFilter = parsed;
  }
  const hashRaw = scalar(q, 'asset_hash') ?? scalar(q, 'hash');
  let hash: string | undefined;
  if (hashRaw !== undefined && hashRaw !== '') {
    hash = canonicalHash(hashRaw);
    if (!hash) throw badQuery("hash must be like 'blake3:<hex>'", 'asset_hash');
  }
  // include_public=false: only the caller's own assets, not the shared ones.
  let owners = viewer.owners;
  const pub = scalar(q, 'include_public')?.trim().toLowerCase();
  if (pub === 'false' || pub === '0' || pub === 'no') owners = [viewer.owner];
  else if (pub !== undefined && pub !== '' && pub !== 'true' && pub !== '1' && pub !== 'yes') throw badQuery('include_public must be a boolean', 'include_public');
  return { owners, includeTags: queryTags(q, 'include_tags'), excludeTags: queryTags(q, 'exclude_tags'), nameContains: nameContains || undefined, metadataFilter, hash };
}

function parseId(req: FastifyRequest): string | undefined {
  const id = (req.params as { id?: string }).id ?? '';
  return UUID_RE.test(id) ? id.toLowerCase() : undefined;
}

function jsonBody(req: FastifyRequest): Record<string, unknown> {
  const b = req.body;
  if (!isPlainObject(b)) throw new AssetError(400, 'INVALID_JSON', 'Request body must be a JSON object.');
  return b;
}

function optString(b: Record<string, unknown>, key: string, maxLength = 512): string | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw badBody(`${key} must be a string`, key);
  return checkText(v, key, 'INVALID_BODY', maxLength);
}

function optUuid(b: Record<string, unknown>, key: string): string | undefined {
  const v = optString(b, key, 64)?.trim();
  if (!v) return undefined;
  if (!UUID_RE.test(v)) throw badBody(`${key} must be a UUID`, key);
  return v.toLowerCase();
}

function optMetadata(v: unknown, key: string): Record<string, unknown> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isPlainObject(v)) throw badBody(`${key} must be a JSON object`, key);
  checkJsonValue(v, key, 'INVALID_BODY');
  return v;
}

/** Content types a browser would run or render as a document: served as downloads. */
function dangerous(mime: string): boolean {
  const m = mime.split(';')[0]!.trim().toLowerCase();
  return /^(text\/(html|javascript|css|xml|xsl)|application\/(xhtml\+xml|xml|javascript|ecmascript|x-javascript)|image\/svg\+xml)$/.test(m) || m.endsWith('+xml');
}

function contentDisposition(kind: 'inline' | 'attachment', name: string): string {
  return `${kind}; filename*=UTF-8''${encodeURIComponent(name.replace(/[\r\n]/g, ''))}`;
}

/** A path segment that is not a UUID names no asset: the reference's router answers its plain 404. */
function notFound(reply: FastifyReply): FastifyReply {
  return reply.code(404).type('text/plain; charset=utf-8').send('404: Not Found');
}

interface UploadFields {
  tags: string[];
  fields: Record<string, string>;
  file?: { tmp: string; hash: string; size: number; clientName: string; mimetype: string };
  fileSeen: boolean;
}

export function assetRoutes(app: FastifyInstance, ctx: RouteCtx, opts: AssetRoutesOptions): void {
  const viewer = (req: FastifyRequest): Viewer => {
    const owner = ctx.owner(req);
    return { owner, owners: ctx.scope(req) === undefined ? [owner] : [...new Set(['', owner])] };
  };

  /** Every handler: 503 when assets are off, the service otherwise. */
  const on = (h: (req: FastifyRequest, reply: FastifyReply, svc: AssetService) => unknown): Handler => {
    return (req, reply) => {
      if (!opts.service) throw new AssetError(503, 'SERVICE_DISABLED', 'Assets system is disabled. Start the server without --disable-assets to use this feature.');
      return h(req, reply, opts.service);
    };
  };

  void app.register(async (scope) => {
    if (!scope.hasRequestDecorator('parts')) await scope.register(multipart);

    // The local asset error body everywhere below, including for bodies that do not parse.
    scope.setErrorHandler((err: FastifyError, req, reply) => {
      if (err instanceof AssetError) return reply.code(err.status).type('application/json').send(JSON.stringify(err.body()));
      const code = err.code ?? '';
      const status = err.statusCode ?? 500;
      if (status === 413 || code === 'FST_REQ_FILE_TOO_LARGE' || code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        const e = new AssetError(413, 'FILE_TOO_LARGE', `The upload is larger than the maximum of ${opts.maxUploadSize} bytes.`, { max_upload_size: opts.maxUploadSize });
        return reply.code(413).type('application/json').send(JSON.stringify(e.body()));
      }
      if (code.startsWith('FST_ERR_CTP') || err instanceof SyntaxError || (status === 400 && !isTransientStorageError(err))) {
        const e = new AssetError(400, 'INVALID_JSON', 'Request body must be valid JSON.', { reason: err.message });
        return reply.code(400).type('application/json').send(JSON.stringify(e.body()));
      }
      if (status >= 400 && status < 500) return reply.code(status).type('application/json').send(JSON.stringify(new AssetError(status, 'BAD_REQUEST', err.message).body()));
      throw err;
    });

    dual(scope, 'HEAD', '/assets/hash/:hash', S.checkAssetByHash, on(async (req, reply, svc) => {
      const hash = canonicalHash((req.params as { hash: string }).hash ?? '');
      if (!hash) throw new AssetError(400, 'INVALID_HASH', "hash must be like 'blake3:<hex>'");
      return reply.code((await svc.hashExists(viewer(req), hash)) ? 200 : 404).send();
    }), {
      validate: false,
      // @fastify/swagger leaves HEAD routes out and would suffix the id with -head; the reference documents this one as checkAssetByHash.
      config: { swagger: { exposeHeadRoute: true }, swaggerTransform: ({ schema }: { schema: RouteDoc }) => ({ schema: { ...schema, operationId: S.checkAssetByHash.operationId } }) },
    });

    dual(scope, 'GET', '/assets', S.listAssets, on(async (req, reply, svc) => {
      const q = req.query as Query;
      const v = viewer(req);
      const filter = parseFilter(q, v);
      const limit = intQuery(q, 'limit', 20, 1, 500);
      const offset = intQuery(q, 'offset', 0, 0, 100_000_000);
      const sort = (scalar(q, 'sort') || 'created_at').toLowerCase();
      if (!SORTS.has(sort)) throw badQuery(`sort must be one of ${[...SORTS].join(', ')}`, 'sort');
      const order = (scalar(q, 'order') || 'desc').toLowerCase();
      if (order !== 'asc' && order !== 'desc') throw badQuery('order must be asc or desc', 'order');
      const afterRaw = scalar(q, 'after', 1 << 20);
      const after = afterRaw !== undefined && afterRaw !== '' ? decodeCursor(afterRaw, sort, order) : undefined;
      const page = await svc.listPage(filter, { sort: sort as SortColumn, order, limit, offset, after });
      const last = page.rows[page.rows.length - 1];
      const nextCursor = page.more && last && CURSOR_SORTS.has(sort) ? encodeCursor(sort as CursorSort, order, (last as any)[sort], last.id) : undefined;
      const body: Record<string, unknown> = {
        assets: await svc.presentMany(page.rows, page.tags),
        total: page.total,
        has_more: after ? nextCursor !== undefined : offset + page.rows.length < page.total,
      };
      if (nextCursor) body.next_cursor = nextCursor;
      return reply.type('application/json').send(JSON.stringify(body));
    }), { validate: false });

    dual(scope, 'POST', '/assets', S.createAsset, on(async (req, reply, svc) => {
      const v = viewer(req);
      if (!req.isMultipart() && opts.fromUrl && isPlainObject(req.body) && 'url' in req.body) {
        const r = await opts.fromUrl(req.body, v, svc);
        return reply.code(r.status).type('application/json').send(JSON.stringify(r.body));
      }
      if (!req.isMultipart()) throw new AssetError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Use multipart/form-data for uploads.');
      const form = await readUpload(req, svc, opts.maxUploadSize);
      try {
        const f = form.fields;
        const name = f.name !== undefined ? checkText(f.name, 'name', 'INVALID_BODY') : undefined;
        let userMetadata: Record<string, unknown> = {};
        if (f.user_metadata !== undefined && f.user_metadata.trim() !== '') {
          let parsed: unknown;
          try {
            parsed = JSON.parse(f.user_metadata);
          } catch (err) {
            throw badBody(`user_metadata must be JSON: ${(err as Error).message}`, 'user_metadata');
          }
          userMetadata = optMetadata(parsed, 'user_metadata') ?? {};
        }
        let hash: string | undefined;
        if (f.hash !== undefined && f.hash.trim() !== '') {
          hash = canonicalHash(f.hash);
          if (!hash) throw new AssetError(400, 'INVALID_HASH', "hash must be like 'blake3:<hex>'");
        }
        const mimeType = f.mime_type !== undefined && f.mime_type.trim() !== '' ? cleanMime(f.mime_type) : undefined;
        if (f.mime_type !== undefined && f.mime_type.trim() !== '' && !mimeType) throw badBody('mime_type must look like type/subtype', 'mime_type');
        const previewId = f.preview_id !== undefined && f.preview_id.trim() !== '' ? f.preview_id.trim() : undefined;
        if (previewId && !UUID_RE.test(previewId)) throw badBody('preview_id must be a UUID', 'preview_id');
        const id = f.id !== undefined && f.id.trim() !== '' ? f.id.trim() : undefined;
        if (id && !UUID_RE.test(id)) throw badBody('id must be a UUID', 'id');
        const tags = tagList(form.tags.flatMap(expandJsonList), 'tags', 'INVALID_BODY');
        const common = { tags, userMetadata, mimeType, previewId: previewId?.toLowerCase(), id: id?.toLowerCase() };
        let result;
        if (form.file && hash && form.file.hash !== hash) {
          throw new AssetError(400, 'HASH_MISMATCH', `Uploaded content hash ${form.file.hash} does not match the provided hash ${hash}.`, { expected: hash, actual: form.file.hash });
        }
        if (!form.file) {
          if (!hash || !(await svc.hashExists(v, hash))) {
            throw new AssetError(form.fileSeen ? 400 : 400, form.fileSeen ? 'EMPTY_UPLOAD' : 'MISSING_FILE', form.fileSeen ? 'Uploaded file is empty.' : "Form must include a 'file' part or a known 'hash'.");
          }
          result = await svc.fromHash(v, { hash, name: name || hash.slice('blake3:'.length), ...common });
        } else {
          const file = form.file;
          form.file = undefined;
          result = await svc.upload(v, { tmp: file.tmp, hash: file.hash, size: file.size, clientName: cleanClientName(file.clientName), declaredMime: cleanMime(file.mimetype), name, ...common });
        }
        const body = { ...(await svc.presentOne(result.row)), created_new: result.created };
        return reply.code(result.created ? 201 : 200).type('application/json').send(JSON.stringify(body));
      } finally {
        if (form.file) await fs.promises.rm(form.file.tmp, { force: true });
      }
    }), { validate: false });

    dual(scope, 'POST', '/assets/from-hash', S.createAssetFromHash, on(async (req, reply, svc) => {
      const b = jsonBody(req);
      if (typeof b.hash !== 'string') throw badBody('hash is required', 'hash');
      const hash = canonicalHash(b.hash);
      if (!hash) throw badBody("hash must be 'blake3:<hex>'", 'hash');
      const name = optString(b, 'name');
      const tags = b.tags === undefined || b.tags === null ? [] : tagList(Array.isArray(b.tags) ? b.tags : [b.tags], 'tags', 'INVALID_BODY');
      const userMetadata = optMetadata(b.user_metadata, 'user_metadata') ?? {};
      const mimeRaw = optString(b, 'mime_type', 200);
      const mimeType = mimeRaw ? cleanMime(mimeRaw) : undefined;
      if (mimeRaw && !mimeType) throw badBody('mime_type must look like type/subtype', 'mime_type');
      const result = await svc.fromHash(viewer(req), { hash, name: name || hash.slice('blake3:'.length), tags, userMetadata, mimeType, previewId: optUuid(b, 'preview_id'), id: optUuid(b, 'id') });
      const body = { ...(await svc.presentOne(result.row)), created_new: result.created };
      return reply.code(201).type('application/json').send(JSON.stringify(body));
    }), { validate: false });

    dual(scope, 'GET', '/assets/:id', S.getAsset, on(async (req, reply, svc) => {
      const id = parseId(req);
      if (!id) return notFound(reply);
      const row = await svc.visible(viewer(req), id);
      return reply.type('application/json').send(JSON.stringify(await svc.presentOne(row)));
    }), { validate: false });

    dual(scope, 'PUT', '/assets/:id', S.updateAsset, on(async (req, reply, svc) => {
      const id = parseId(req);
      if (!id) return notFound(reply);
      const b = jsonBody(req);
      const name = optString(b, 'name');
      if (name !== undefined && name.trim() === '') throw badBody('name must not be empty', 'name');
      const userMetadata = optMetadata(b.user_metadata, 'user_metadata');
      const previewId = b.preview_id === null ? null : optUuid(b, 'preview_id');
      const mimeRaw = optString(b, 'mime_type', 200);
      const mimeType = mimeRaw ? cleanMime(mimeRaw) : undefined;
      if (mimeRaw && !mimeType) throw badBody('mime_type must look like type/subtype', 'mime_type');
      if (name === undefined && userMetadata === undefined && !('preview_id' in b) && mimeType === undefined) {
        throw badBody('Provide at least one of: name, user_metadata, preview_id, mime_type.');
      }
      const row = await svc.update(viewer(req), id, { name, userMetadata, previewId: 'preview_id' in b ? previewId ?? null : undefined, mimeType });
      return reply.type('application/json').send(JSON.stringify(await svc.presentOne(row)));
    }), { validate: false });

    dual(scope, 'DELETE', '/assets/:id', S.deleteAsset, on(async (req, reply, svc) => {
      const id = parseId(req);
      if (!id) return notFound(reply);
      const raw = scalar(req.query as Query, 'delete_content');
      const del = raw !== undefined && ['true', '1', 'yes'].includes(raw.toLowerCase());
      if (raw !== undefined && !del && !['false', '0', 'no', ''].includes(raw.toLowerCase())) throw badQuery('delete_content must be a boolean', 'delete_content');
      await svc.delete(viewer(req), id, del);
      return reply.code(204).send();
    }), { validate: false });

    dual(scope, 'GET', '/assets/:id/content', S.getAssetContent, on(async (req, reply, svc) => {
      const id = parseId(req);
      if (!id) return notFound(reply);
      const want = (scalar(req.query as Query, 'disposition') ?? 'attachment').trim().toLowerCase();
      let disposition: 'inline' | 'attachment' = want === 'inline' ? 'inline' : 'attachment';
      const { row, file } = await svc.contentFile(viewer(req), id);
      let type = row.mime_type ?? 'application/octet-stream';
      if (dangerous(type)) {
        type = 'application/octet-stream';
        disposition = 'attachment';
      }
      // Not on this disk: the shared content store's copy, with the same headers.
      const r = await sendLocalOrStored(req.raw, file, svc.content, { dotfiles: 'allow', index: false, cacheControl: false, lastModified: true, etag: true });
      if (!r) throw new AssetError(404, 'FILE_NOT_FOUND', 'Underlying file not found on disk.', { id });
      if (r.type !== 'file') {
        r.stream.destroy?.();
        if (r.statusCode === 416) {
          const size = row.size;
          return reply.code(416).header('Content-Range', `bytes */${size}`).header('Accept-Ranges', 'bytes').send();
        }
        throw new AssetError(404, 'FILE_NOT_FOUND', 'Underlying file not found on disk.', { id });
      }
      const headers = r.headers as Record<string, string>;
      delete headers['content-type'];
      headers['Content-Type'] = type;
      headers['Content-Disposition'] = contentDisposition(disposition, row.name);
      headers['X-Content-Type-Options'] = 'nosniff';
      headers['Cache-Control'] = 'private, no-cache';
      return reply.code(r.statusCode).headers(headers).send(r.stream);
    }), { validate: false });

    const tagsBody = (req: FastifyRequest): string[] => {
      const b = jsonBody(req);
      if (!Array.isArray(b.tags) || b.tags.length === 0) throw badBody('tags must be a non-empty list of strings', 'tags');
      const tags = tagList(b.tags, 'tags', 'INVALID_BODY');
      if (tags.length === 0) throw badBody('tags must hold at least one non-empty tag', 'tags');
      return tags;
    };

    dual(scope, 'POST', '/assets/:id/tags', S.addAssetTags, on(async (req, reply, svc) => {
      const id = parseId(req);
      if (!id) return notFound(reply);
      const r = await svc.addTags(viewer(req), id, tagsBody(req));
      return reply.type('application/json').send(JSON.stringify({ added: r.added, already_present: r.already, total_tags: r.total }));
    }), { validate: false });

    dual(scope, 'DELETE', '/assets/:id/tags', S.removeAssetTags, on(async (req, reply, svc) => {
      const id = parseId(req);
      if (!id) return notFound(reply);
      const r = await svc.removeTags(viewer(req), id, tagsBody(req));
      return reply.type('application/json').send(JSON.stringify({ removed: r.removed, not_present: r.notPresent, total_tags: r.total }));
    }), { validate: false });

    dual(scope, 'GET', '/tags', S.listTags, on(async (req, reply, svc) => {
      const q = req.query as Query;
      const limit = intQuery(q, 'limit', 100, 1, 1000);
      const offset = intQuery(q, 'offset', 0, 0, 10_000_000);
      const search = scalar(q, 'search')?.trim() || undefined;
      const prefix = scalar(q, 'prefix')?.trim() || undefined;
      const order = scalar(q, 'order') ?? 'count_desc';
      if (order !== 'count_desc' && order !== 'name_asc') throw badQuery('order must be count_desc or name_asc', 'order');
      const r = await listTags(svc.db, { owners: viewer(req).owners, search, prefix, order, limit, offset });
      return reply.type('application/json').send(JSON.stringify({ tags: r.tags, total: r.total, has_more: offset + r.tags.length < r.total }));
    }), { validate: false });

    dual(scope, 'GET', '/assets/tags/refine', S.refineAssetTags, on(async (req, reply, svc) => {
      const q = req.query as Query;
      const filter = parseFilter(q, viewer(req));
      const limit = intQuery(q, 'limit', 100, 1, 1000);
      const counts = await tagHistogram(svc.db, svc.d, filter, limit);
      return reply.type('application/json').send(JSON.stringify({ tag_counts: counts }));
    }), { validate: false });

    dual(scope, 'POST', '/assets/seed', S.seedAssets, on(async (req, reply) => {
      const seeder = opts.seeder!;
      const b = req.body;
      let roots: unknown = SEED_ROOTS;
      if (isPlainObject(b) && b.roots !== undefined) roots = b.roots;
      if (!Array.isArray(roots)) throw badBody('roots must be a list of models, input, output', 'roots');
      const valid = SEED_ROOTS.filter((r) => roots.includes(r));
      if (valid.length === 0) throw badBody('No valid roots specified', 'roots');
      const wait = ['true', '1', 'yes'].includes((scalar(req.query as Query, 'wait') ?? '').toLowerCase());
      if (!seeder.start(valid as SeedRoot[])) {
        // The reference's body, with the local error object beside it so every 4xx carries one.
        return reply.code(409).send({ status: 'already_running', ...new AssetError(409, 'SCAN_IN_PROGRESS', 'An asset scan is already running.').body() });
      }
      if (!wait) return reply.code(202).send({ status: 'started' });
      await seeder.wait();
      const s = seeder.getStatus();
      return reply.send({ status: 'completed', progress: s.progress ?? { scanned: 0, total: 0, created: 0, skipped: 0 }, errors: s.errors });
    }), { validate: false });

    dual(scope, 'GET', '/assets/seed/status', S.getAssetSeedStatus, on(async (_req, reply) => reply.send(opts.seeder!.getStatus())), { validate: false });

    dual(scope, 'POST', '/assets/seed/cancel', S.cancelAssetSeed, on(async (_req, reply) => reply.send({ status: opts.seeder!.cancel() ? 'cancelling' : 'idle' })), { validate: false });

    dual(scope, 'POST', '/assets/prune', S.pruneAssets, on(async (_req, reply, svc) => {
      if (opts.seeder!.isRunning()) return reply.code(409).send({ status: 'scan_running', marked: 0, ...new AssetError(409, 'SCAN_IN_PROGRESS', 'An asset scan is running; prune after it ends.').body() });
      return reply.send({ status: 'completed', marked: await pruneMissing(svc) });
    }), { validate: false });
  });
}

/** The uploader's file name, as a display name: its last component, without control characters or unpaired surrogates, at most 255 characters. */
function cleanClientName(raw: string): string {
  const base = path.basename(raw.replace(/\\/g, '/'));
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
  return Array.from(clean).slice(0, 255).join('');
}

/** A tags form field may hold a JSON list (`["input","x"]`) as well as comma-separated text. */
function expandJsonList(s: string): string[] {
  const t = s.trim();
  if (t.startsWith('[')) {
    try {
      const arr = JSON.parse(t);
      if (Array.isArray(arr)) return arr.map((x) => (typeof x === 'string' ? x : JSON.stringify(x)));
    } catch {
      /* plain text after all */
    }
  }
  return [s];
}

/**
 * Reads the multipart form in order: the first `file` part is streamed to a
 * temporary file while it is hashed; text fields keep their first value
 * (`tags` keeps all). Nothing of the file is held in memory.
 */
async function readUpload(req: FastifyRequest, svc: AssetService, maxUploadSize: number): Promise<UploadFields> {
  const form: UploadFields = { tags: [], fields: {}, fileSeen: false };
  try {
    const parts = req.parts({ limits: { fileSize: maxUploadSize, files: 4, fields: 64, parts: 80, fieldSize: 1024 * 1024, headerPairs: 100 } });
    for await (const part of parts) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file' || form.fileSeen) {
          part.file.resume();
          continue;
        }
        form.fileSeen = true;
        const tmp = tempUploadPath(svc.dirs);
        const hasher = new Blake3Stream();
        const fh = await fs.promises.open(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o644);
        form.file = { tmp, hash: '', size: 0, clientName: part.filename ?? '', mimetype: part.mimetype ?? '' };
        try {
          for await (const chunk of part.file) {
            await hasher.update(chunk as Buffer);
            await fh.write(chunk as Buffer);
          }
        } finally {
          await fh.close();
        }
        if (part.file.truncated) throw new AssetError(413, 'FILE_TOO_LARGE', `The upload is larger than the maximum of ${maxUploadSize} bytes.`, { max_upload_size: maxUploadSize });
        form.file.hash = await hasher.digest();
        form.file.size = hasher.size;
        if (hasher.size === 0) {
          await fs.promises.rm(tmp, { force: true });
          form.file = undefined;
        }
      } else {
        const value = typeof part.value === 'string' ? part.value : String(part.value ?? '');
        if (part.fieldname === 'tags') form.tags.push(value);
        else if (!(part.fieldname in form.fields) && /^[a-z_]{1,32}$/.test(part.fieldname)) form.fields[part.fieldname] = value;
      }
    }
  } catch (err) {
    if (form.file) await fs.promises.rm(form.file.tmp, { force: true });
    form.file = undefined;
    if (err instanceof AssetError) throw err;
    const e = err as FastifyError;
    if (e.statusCode === 413 || e.code === 'FST_REQ_FILE_TOO_LARGE') throw new AssetError(413, 'FILE_TOO_LARGE', `The upload is larger than the maximum of ${maxUploadSize} bytes.`, { max_upload_size: maxUploadSize });
    if ((e.statusCode && e.statusCode >= 400 && e.statusCode < 500) || /multipart|boundary|Unexpected end|terminated early|Malformed/i.test(e.message ?? '')) {
      throw new AssetError(400, 'INVALID_BODY', `Invalid multipart body: ${e.message}`);
    }
    throw err;
  }
  return form;
}
