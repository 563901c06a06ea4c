import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import type { Kysely } from 'kysely';
import { Blake3Stream, cleanMime, mimeFor, tempUploadPath } from '../assets/content.ts';
import { AssetError } from '../assets/errors.ts';
import type { AssetService, Created, Viewer } from '../assets/service.ts';
import { safeJoin, safeRelative } from '../../files/paths.ts';
import { getPrompt } from '../prompts.ts';
import { fetchHead, OutboundRefused, remoteFilename, type OutboundConfig } from './outbound.ts';
import { writeZip } from './zip.ts';

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const wellFormedText = (s: string) => !LONE.test(s);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** AssetInfo: the light shape of import responses. */
export function assetInfo(c: Created): Record<string, unknown> {
  return { id: c.row.id, filename: c.row.name, mime_type: c.row.mime_type ?? 'application/octet-stream', size_bytes: c.row.size };
}

/**
 * Published assets a caller may import: those listed by a hub workflow that
 * is not rejected (only that share's when `shareId` is given), or shared
 * assets (owner ''). Returns asset id → the owner it is published from.
 */
export async function publishedOwners(db: Kysely<any>, ids: string[], shareId: string | undefined): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const rows = await db.selectFrom('assets').select(['id', 'owner']).where('id', 'in', ids).execute();
  const ownerOf = new Map(rows.map((r) => [r.id as string, r.owner as string]));
  let hub = db.selectFrom('hub_workflows').select(['share_id', 'workspace_id', 'detail']).where('status', '!=', 'rejected');
  if (shareId !== undefined) hub = hub.where('share_id', '=', shareId);
  else hub = hub.where((eb) => eb.or(ids.map((id) => eb('detail', 'like', `%${id}%`))));
  for (const h of await hub.execute()) {
    let listed: Array<{ id?: unknown }> = [];
    try {
      listed = (JSON.parse(h.detail as string) as { assets?: Array<{ id?: unknown }> }).assets ?? [];
    } catch {
      continue;
    }
    for (const a of listed) {
      const id = typeof a.id === 'string' ? a.id.toLowerCase() : undefined;
      const owner = id ? ownerOf.get(id) : undefined;
      // The publisher's own assets, or shared ones it listed.
      if (id && owner !== undefined && (owner === h.workspace_id || owner === '')) out.set(id, owner);
    }
  }
  if (shareId === undefined) for (const [id, owner] of ownerOf) if (owner === '') out.set(id, '');
  return out;
}

/** Imports published assets: new references of the caller to the same stored content (no bytes copied). */
export async function importPublished(svc: AssetService, viewer: Viewer, ids: string[], shareId: string | undefined): Promise<Created[]> {
  const wanted = [...new Set(ids.map((i) => i.toLowerCase()))];
  if (shareId !== undefined) {
    const share = await svc.db.selectFrom('hub_workflows').select('share_id').where('share_id', '=', shareId).where('status', '!=', 'rejected').executeTakeFirst();
    if (!share) throw new AssetError(400, 'SHARE_NOT_FOUND', `Share ${shareId} not found`, { share_id: shareId });
  }
  const published = await publishedOwners(svc.db, wanted, shareId);
  const missing = wanted.filter((id) => !published.has(id));
  if (missing.length) throw new AssetError(400, 'ASSET_NOT_PUBLISHED', shareId ? 'Some assets do not belong to this share' : 'Some assets are not published', { asset_ids: missing });
  const out: Created[] = [];
  for (const id of wanted) {
    const from = published.get(id)!;
    const src = await svc.visible({ owner: from, owners: [from] }, id);
    if (!src.hash) throw new AssetError(400, 'ASSET_NOT_PUBLISHED', `Asset ${id} has no stored content`, { asset_ids: [id] });
    // The caller's own asset with these bytes is returned as it is.
    const own = await svc.db.selectFrom('assets').select('id').where('owner', '=', viewer.owner).where('hash', '=', src.hash).orderBy('created_at').executeTakeFirst();
    if (own) {
      const row = await svc.visible(viewer, own.id as string);
      out.push({ row, tags: [], created: false });
      continue;
    }
    out.push(await svc.fromHash({ owner: viewer.owner, owners: [viewer.owner, from] }, { hash: src.hash, name: src.name, tags: ['imported'], userMetadata: { imported_from: id }, mimeType: src.mime_type ?? undefined }));
  }
  return out;
}

/** A name in `dir` that is free, or already holds exactly these bytes: `name`, `name (1).ext`, … */
async function freeName(dir: string, name: string, sameAs: string): Promise<{ name: string; exists: boolean }> {
  const ext = path.extname(name);
  const stem = name.slice(0, name.length - ext.length);
  const digest = async (f: string) => createHash('sha256').update(await fs.promises.readFile(f)).digest('hex');
  for (let i = 0; i < 10_000; i++) {
    const candidate = i === 0 ? name : `${stem} (${i})${ext}`;
    const st = await fs.promises.stat(path.join(dir, candidate)).catch(() => undefined);
    if (!st) return { name: candidate, exists: false };
    const src = await fs.promises.stat(sameAs);
    if (st.size === src.size && (await digest(path.join(dir, candidate))) === (await digest(sameAs))) return { name: candidate, exists: true };
  }
  throw new AssetError(409, 'NAME_CONFLICT', `No free file name for ${name}`);
}

/**
 * Copies `file` into `dir` under `name`, or under the first free `name (n).ext`
 * (kept as it is when a file there holds the same bytes). The copy is linked
 * into place, which never replaces a file: concurrent downloads to one name
 * (in any process sharing the folder) each end up in a file of their own.
 */
async function placeFile(dir: string, name: string, file: string): Promise<{ name: string; exists: boolean }> {
  const tmp = path.join(dir, `.${randomUUID()}.part`);
  let copied = false;
  try {
    for (;;) {
      const target = await freeName(dir, name, file);
      if (target.exists) return target;
      if (!copied) {
        await fs.promises.copyFile(file, tmp);
        copied = true;
      }
      try {
        await fs.promises.link(tmp, path.join(dir, target.name));
        return target;
      } catch (err) {
        // Taken since freeName looked: look again (it may now hold these very bytes).
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
  } finally {
    if (copied) await fs.promises.rm(tmp, { force: true });
  }
}

/**
 * Downloads assets into the runtime's input folder (where LoadImage and the
 * other loaders read), each at its target path (default: its name). A file
 * there with other bytes is kept; the asset lands beside it as `name (1).ext`.
 */
export async function downloadToInput(svc: AssetService, viewer: Viewer, inputDir: string, items: Array<{ assetId: string; targetPath?: string }>, progress: (done: number, total: number, file: Record<string, unknown>) => void): Promise<Record<string, unknown>> {
  const files: Record<string, unknown>[] = [];
  let i = 0;
  for (const it of items) {
    const { row, file } = await svc.contentFile(viewer, it.assetId);
    const rel = (it.targetPath ?? row.name).replace(/^\/+/, '');
    const full = safeRelative(inputDir, rel);
    const dir = path.dirname(full);
    await fs.promises.mkdir(dir, { recursive: true });
    safeJoin(inputDir, path.relative(inputDir, dir), path.basename(full));
    const target = await placeFile(dir, path.basename(full), file);
    const subfolder = path.relative(inputDir, dir).split(path.sep).join('/');
    const entry = { asset_id: row.id, filename: target.name, subfolder, type: 'input' };
    files.push(entry);
    progress(++i, items.length, entry);
  }
  return { files };
}

/**
 * Reserves an export archive's name for the workspace: `name`, or the first
 * free `stem-2.zip`, `stem-3.zip`, … The row is the reservation (its primary
 * key decides between concurrent exports of one name, on any process), so an
 * earlier archive is never replaced under a client reading it.
 */
export async function reserveExportName(db: Kysely<any>, owner: string, name: string): Promise<string> {
  const stem = name.slice(0, -4);
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? name : `${stem}-${n}.zip`;
    const taken = await db.selectFrom('cloud_asset_exports').select('name').where('owner', '=', owner).where('name', '=', candidate).executeTakeFirst();
    if (taken) continue;
    const inserted = await db
      .insertInto('cloud_asset_exports')
      .values({ owner, name: candidate, task_id: '', file: null, size: null, created_at: Date.now() })
      .onConflict((oc) => oc.columns(['owner', 'name']).doNothing())
      .returning('name')
      .execute();
    if (inserted.length > 0) return candidate;
  }
}

/** Ties a reserved export name to its task, or gives it back when no task of its own came of it (an idempotent repeat). */
export async function settleExportName(db: Kysely<any>, owner: string, name: string, taskId: string | null): Promise<void> {
  const q = db.updateTable('cloud_asset_exports').where('owner', '=', owner).where('name', '=', name).where('task_id', '=', '');
  if (taskId !== null) await q.set({ task_id: taskId }).execute();
  else await db.deleteFrom('cloud_asset_exports').where('owner', '=', owner).where('name', '=', name).where('task_id', '=', '').execute();
}

/** Exports assets into one zip archive; names inside are the assets' names, made unique. */
export async function exportZip(svc: AssetService, viewer: Viewer, ids: string[], out: string, progress: (done: number, total: number) => void): Promise<{ size: number; files: number }> {
  const entries: Array<{ name: string; file: string }> = [];
  const used = new Set<string>();
  for (const id of ids) {
    const { row, file } = await svc.contentFile(viewer, id);
    const base = row.name.replace(/[\u0000-\u001f\u007f\\/:]/g, '_').replace(/^\.+/, '_') || row.id;
    let name = base;
    const ext = path.extname(base);
    for (let n = 1; used.has(name.toLowerCase()); n++) name = `${base.slice(0, base.length - ext.length)} (${n})${ext}`;
    used.add(name.toLowerCase());
    entries.push({ name, file });
  }
  await fs.promises.mkdir(path.dirname(out), { recursive: true });
  const tmp = `${out}.${randomUUID()}.part`;
  try {
    const size = await writeZip(tmp, entries, (done) => progress(done, entries.length));
    await fs.promises.rename(tmp, out);
    return { size, files: entries.length };
  } catch (err) {
    await fs.promises.rm(tmp, { force: true });
    throw err;
  }
}

/** Output files of a finished job become assets of its workspace (those already registered are returned as they are), with extra tags. */
export async function assetsFromJob(svc: AssetService, viewer: Viewer, promptId: string, tags: string[]): Promise<Created[] | null> {
  const job = await getPrompt(svc.db, promptId, viewer.owner);
  if (!job) return null;
  const out: Created[] = [];
  const seen = new Set<string>();
  for (const nodeOut of Object.values(job.outputs ?? {})) {
    if (!nodeOut || typeof nodeOut !== 'object') continue;
    for (const items of Object.values(nodeOut)) {
      if (!Array.isArray(items)) continue;
      for (const item of items as Array<Record<string, unknown>>) {
        if (!item || typeof item !== 'object' || typeof item.filename !== 'string') continue;
        const type = (item.type ?? 'output') as string;
        if (type !== 'output') continue;
        const key = `${item.subfolder ?? ''}/${item.filename}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const c = await svc.registerFile({ type: 'output', subfolder: typeof item.subfolder === 'string' ? item.subfolder : '', filename: item.filename, owner: viewer.owner, jobId: job.id });
        if (!c) continue;
        if (tags.length) await svc.addTags(viewer, c.row.id, tags);
        out.push(c);
      }
    }
  }
  return out;
}

const LAYER = /^(.*?)(clipspace-)(painted-masked|painted|paint|mask)(-.+)$/;

/**
 * The mask editor saves four layers of one edit, named
 * `clipspace-{mask,paint,painted,painted-masked}-<id>.png` in the input
 * folder: given any one, the four names (the given one must exist).
 */
export async function maskLayers(inputDir: string, filename: string): Promise<Record<string, string> | null> {
  const m = LAYER.exec(filename);
  if (!m) return null;
  let full: string;
  try {
    full = safeRelative(inputDir, filename);
  } catch {
    return null;
  }
  if (!(await fs.promises.stat(full).catch(() => undefined))?.isFile()) return null;
  const [, prefix, cs, , rest] = m;
  const name = (layer: string) => `${prefix}${cs}${layer}${rest}`;
  return { mask: name('mask'), paint: name('paint'), painted: name('painted'), painted_masked: name('painted-masked') };
}

/** RemoteAssetMetadata of a URL, from its headers and first bytes. */
export async function remoteMetadata(cfg: OutboundConfig, url: string): Promise<Record<string, unknown>> {
  const r = await fetchHead(cfg, url, { maxBytes: 64 });
  if (r.status < 200 || r.status >= 300) throw new OutboundRefused(`The remote server answered ${r.status}`);
  const out: Record<string, unknown> = {};
  const filename = remoteFilename(r.headers, r.url);
  const declared = cleanMime(typeof r.headers['content-type'] === 'string' ? r.headers['content-type'].split(';')[0] : undefined);
  out.content_type = declared && declared !== 'application/octet-stream' ? declared : mimeFor(filename, r.head, declared);
  const len = lengthOf(r.headers);
  if (len !== undefined) out.content_length = len;
  if (filename) out.filename = filename;
  return out;
}

function lengthOf(h: Record<string, string | string[] | undefined>): number | undefined {
  const range = typeof h['content-range'] === 'string' ? /\/(\d+)$/.exec(h['content-range']) : null;
  if (range) return Number(range[1]);
  const cl = h['content-length'];
  return typeof cl === 'string' && /^\d{1,15}$/.test(cl) ? Number(cl) : undefined;
}

/** Downloads a URL (through the guard, at most `maxBytes`) into a temporary upload file: what `POST /api/assets {url}` stores. */
export async function downloadUrl(cfg: OutboundConfig, svc: AssetService, url: string, maxBytes: number): Promise<{ tmp: string; hash: string; size: number; filename?: string; mime?: string }> {
  const r = await fetchHead(cfg, url, { maxBytes: 0, keepBody: true });
  const body = r.body!;
  if (r.status < 200 || r.status >= 300) {
    body.destroy();
    throw new OutboundRefused(`The remote server answered ${r.status}`);
  }
  const declaredLen = lengthOf(r.headers);
  if (declaredLen !== undefined && declaredLen > maxBytes) {
    body.destroy();
    throw new AssetError(413, 'FILE_TOO_LARGE', `The remote file is larger than the maximum of ${maxBytes} bytes.`, { max_upload_size: maxBytes });
  }
  const tmp = tempUploadPath(svc.dirs);
  const hasher = new Blake3Stream();
  let size = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      size += chunk.length;
      if (size > maxBytes) return cb(new AssetError(413, 'FILE_TOO_LARGE', `The remote file is larger than the maximum of ${maxBytes} bytes.`, { max_upload_size: maxBytes }));
      hasher.update(chunk).then(() => cb(null, chunk), cb);
    },
  });
  const timer = setTimeout(() => body.destroy(new OutboundRefused(`The download took longer than ${cfg.timeoutMs * 6} ms`)), cfg.timeoutMs * 6);
  try {
    body.resume();
    await pipeline(body, counter, fs.createWriteStream(tmp));
  } catch (err) {
    await fs.promises.rm(tmp, { force: true });
    if (err instanceof AssetError || err instanceof OutboundRefused) throw err;
    throw new OutboundRefused(`The remote file could not be read: ${(err as Error).message}`);
  } finally {
    clearTimeout(timer);
  }
  if (size === 0) {
    await fs.promises.rm(tmp, { force: true });
    throw new AssetError(400, 'EMPTY_UPLOAD', 'The remote file is empty.');
  }
  const ct = r.headers['content-type'];
  return { tmp, hash: await hasher.digest(), size, filename: remoteFilename(r.headers, r.url), mime: cleanMime(typeof ct === 'string' ? ct.split(';')[0] : undefined) };
}

export function isUuid(s: unknown): s is string {
  return typeof s === 'string' && UUID.test(s);
}

/**
 * `POST /api/assets` with a JSON body `{url, name?, tags?, user_metadata?,
 * mime_type?, id?}`: the URL is downloaded through the outbound guard (at
 * most the upload limit) and stored as an upload would be.
 */
export function assetFromUrl(cfg: OutboundConfig, maxBytes: number) {
  return async (body: Record<string, unknown>, viewer: Viewer, svc: AssetService): Promise<{ status: number; body: Record<string, unknown> }> => {
    const bad = (message: string, field: string) => new AssetError(400, 'INVALID_BODY', message, { errors: [{ loc: [field], msg: message }] });
    const str = (k: string, max: number) => {
      const v = body[k];
      if (v === undefined || v === null || v === '') return undefined;
      if (typeof v !== 'string' || v.length > max || /[\u0000]/.test(v) || !wellFormedText(v)) throw bad(`${k} must be a string of at most ${max} characters`, k);
      return v;
    };
    const url = str('url', 4096);
    if (!url) throw bad('url is required (or send multipart/form-data with a file)', 'url');
    const name = str('name', 512);
    const mimeRaw = str('mime_type', 200);
    const mimeType = mimeRaw ? cleanMime(mimeRaw) : undefined;
    if (mimeRaw && !mimeType) throw bad('mime_type must look like type/subtype', 'mime_type');
    const id = str('id', 64);
    if (id && !UUID.test(id)) throw bad('id must be a UUID', 'id');
    let tags: string[] = [];
    if (body.tags !== undefined && body.tags !== null) {
      if (!Array.isArray(body.tags) || body.tags.length > 128 || body.tags.some((t) => typeof t !== 'string' || t.length > 256 || !wellFormedText(t) || /\u0000/.test(t))) throw bad('tags must be a list of strings', 'tags');
      tags = [...new Set((body.tags as string[]).map((t) => t.trim().toLowerCase()).filter(Boolean))];
    }
    const um = body.user_metadata;
    if (um !== undefined && um !== null && (typeof um !== 'object' || Array.isArray(um))) throw bad('user_metadata must be a JSON object', 'user_metadata');
    let got;
    try {
      got = await downloadUrl(cfg, svc, url, maxBytes);
    } catch (err) {
      if (err instanceof OutboundRefused) throw new AssetError(400, 'INVALID_URL', err.message, { url });
      throw err;
    }
    const c = await svc.upload(viewer, { tmp: got.tmp, hash: got.hash, size: got.size, clientName: got.filename, declaredMime: got.mime, name, tags, userMetadata: { ...((um as Record<string, unknown>) ?? {}), source_url: url }, mimeType, id: id?.toLowerCase() });
    return { status: c.created ? 201 : 200, body: { ...(await svc.presentOne(c.row)), created_new: c.created } };
  };
}
