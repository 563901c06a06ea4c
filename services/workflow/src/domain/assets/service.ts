import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Storage } from '@svc/storage';
import type { SharedContent } from '../../files/shared-content.ts';
import { workspaceFolderName } from '../../files/workspace-folders.ts';
import { fileHolds, fileStamp, hashFile, imageMetadata, mimeFor, readHead, resolveLogical, storeBlob, type AssetDirs } from './content.ts';
import { AssetError } from './errors.ts';
import * as repo from './repo.ts';
import type { AssetRow } from './repo.ts';

/**
 * Who is asking: `owner` writes, `owners` are read. Single-user: both ''.
 * Multi-user: the user's own assets plus the shared ones (owner '': input
 * files, seeded folders), which are read-only to users.
 */
export interface Viewer {
  owner: string;
  owners: readonly string[];
}

export interface UploadSpec {
  tmp: string;
  hash: string;
  size: number;
  clientName?: string;
  declaredMime?: string;
  name?: string;
  tags: string[];
  userMetadata: Record<string, unknown>;
  mimeType?: string;
  previewId?: string;
  id?: string;
}

export interface Created {
  row: AssetRow;
  tags: string[];
  created: boolean;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

const TOTALS_CACHED = 512;
const RECENT_WRITES = 256;

/** A file write whose content is known without reading it: BLAKE3, size, first bytes, and its stamp (see fileStamp). */
export interface KnownWrite {
  hash: string;
  size: number;
  head: Buffer;
  stamp: string;
}

export class AssetService {
  readonly db;
  readonly d;
  /** The latest uploads' writes by the stamp of the file each wrote (bounded): what a path replaced under a registration now holds. */
  private recentWrites = new Map<string, KnownWrite>();
  /** List totals by (owners' write generations, filter): a cursor walk counts once, any write moves the key. */
  private totals = new Map<string, number>();

  constructor(
    readonly storage: Storage,
    readonly dirs: AssetDirs,
    private readonly log: { warn(o: object, m: string): void },
    /** The shared content store (scale-out): blobs are put there, and content missing here is read from it. */
    readonly content?: SharedContent,
  ) {
    this.db = storage.db;
    this.d = storage.dialect;
  }

  // ---- reading ----

  /** The reference visible to the viewer, or ASSET_NOT_FOUND (someone else's asset is not found either). */
  async visible(viewer: Viewer, id: string): Promise<AssetRow> {
    const row = await repo.getAsset(this.db, this.d, id);
    if (!row || !viewer.owners.includes(row.owner)) throw new AssetError(404, 'ASSET_NOT_FOUND', `AssetReference ${id} not found`, { id });
    return row;
  }

  /** A reference the viewer may change: its own (a shared one is 403 in multi-user mode). */
  async writable(viewer: Viewer, id: string): Promise<AssetRow> {
    const row = await this.visible(viewer, id);
    if (row.owner !== viewer.owner) throw new AssetError(403, 'FORBIDDEN', `AssetReference ${id} is shared and read-only`, { id });
    return row;
  }

  async tagsOf(ids: string[]): Promise<Map<string, string[]>> {
    return repo.tagsOf(this.db, ids);
  }

  /** The reference's Asset object (deprecated asset_hash and prompt_id carry hash and job_id). */
  present(row: AssetRow, tags: string[], preview?: AssetRow): Record<string, unknown> {
    const out: Record<string, unknown> = {
      id: row.id,
      name: row.name,
      hash: row.hash,
      asset_hash: row.hash,
      size: row.size,
      mime_type: row.mime_type ?? 'application/octet-stream',
      tags,
      user_metadata: row.user_metadata,
      metadata: row.metadata,
    };
    const url = this.viewUrl(preview ?? row);
    if (url) out.preview_url = url;
    if (row.preview_id) out.preview_id = row.preview_id;
    out.job_id = row.job_id;
    out.prompt_id = row.job_id;
    if (row.file_path) {
      out.file_path = row.file_path;
      out.display_name = row.file_path.slice(row.file_path.indexOf('/') + 1);
    }
    out.created_at = iso(row.created_at);
    out.updated_at = iso(row.updated_at);
    out.last_access_time = iso(row.last_access_time);
    out.is_immutable = false;
    return out;
  }

  /** Files in input/output are shown through /view; other images through their content route. */
  private viewUrl(row: AssetRow): string | undefined {
    if (row.file_path) {
      const [root, ...rest] = row.file_path.split('/');
      if (root === 'input' || root === 'output') {
        const filename = rest.pop()!;
        let url = `/api/view?type=${root}&filename=${encodeURIComponent(filename)}`;
        if (rest.length > 0) url += `&subfolder=${encodeURIComponent(rest.join('/'))}`;
        return url;
      }
    }
    if (row.mime_type?.startsWith('image/')) return `/api/assets/${row.id}/content?disposition=inline`;
    return undefined;
  }

  /** Asset objects for rows, with their tags and preview rows loaded in two queries. */
  async presentMany(rows: AssetRow[], known?: Map<string, string[]>): Promise<Record<string, unknown>[]> {
    const tags = known ?? (await repo.tagsOf(this.db, rows.map((r) => r.id)));
    const previewIds = [...new Set(rows.map((r) => r.preview_id).filter((x): x is string => !!x))];
    const previews = new Map<string, AssetRow>();
    for (const id of previewIds) {
      const p = await repo.getAsset(this.db, this.d, id);
      if (p) previews.set(id, p);
    }
    return rows.map((r) => this.present(r, tags.get(r.id) ?? [], r.preview_id ? previews.get(r.preview_id) : undefined));
  }

  async presentOne(row: AssetRow): Promise<Record<string, unknown>> {
    return (await this.presentMany([row]))[0]!;
  }

  /** One page of a filtered listing and the filter's total (cached while the owners' assets are unchanged). */
  async listPage(f: repo.AssetFilter, p: repo.PageQuery): Promise<{ rows: AssetRow[]; tags: Map<string, string[]>; more: boolean; total: number }> {
    const filterKey = JSON.stringify([f.owners, f.includeTags, f.excludeTags, f.nameContains ?? null, f.metadataFilter ?? null, f.hash ?? null]);
    // The page is read while the generation is; a write between them only costs the next request a recount.
    const [gens, page] = await Promise.all([repo.generations(this.db, f.owners), repo.listAssets(this.db, this.d, f, p, false)]);
    const key = `${gens}|${filterKey}`;
    let total = this.totals.get(key);
    if (total === undefined) {
      total = await repo.countAssets(this.db, this.d, f);
      if (this.totals.size >= TOTALS_CACHED) this.totals.delete(this.totals.keys().next().value!);
      this.totals.set(key, total);
    }
    return { ...page, total };
  }

  // ---- creating ----

  private async checkPreview(viewer: Viewer, previewId: string | undefined | null): Promise<string | null> {
    if (!previewId) return null;
    const p = await repo.getAsset(this.db, this.d, previewId);
    if (!p || !viewer.owners.includes(p.owner)) throw new AssetError(404, 'ASSET_NOT_FOUND', `Preview asset ${previewId} not found`, { preview_id: previewId });
    return p.id;
  }

  /** A client-chosen id already in use: the same owner gets its asset back (idempotent retry), anyone else a conflict. */
  private async existingById(viewer: Viewer, id: string): Promise<Created | undefined> {
    const row = await repo.getAsset(this.db, this.d, id);
    if (!row) return undefined;
    if (row.owner !== viewer.owner) throw new AssetError(409, 'ID_CONFLICT', `Asset id ${id} is already in use`, { id });
    return { row, tags: (await repo.tagsOf(this.db, [id])).get(id) ?? [], created: false };
  }

  /**
   * Registers uploaded bytes (already hashed into a temporary file). The
   * bytes are stored once per hash; an upload of the same bytes under the
   * same name by the same owner returns the existing asset (created_new
   * false), as does a retry with the same client id.
   */
  async upload(viewer: Viewer, u: UploadSpec): Promise<Created> {
    try {
      if (u.id) {
        const again = await this.existingById(viewer, u.id);
        if (again) return again;
      }
      const head = await readHead(u.tmp);
      const mime = u.mimeType ?? mimeFor(u.clientName || u.name, head, u.declaredMime);
      const metadata = (await imageMetadata(u.tmp, mime)) ?? {};
      const name = u.name || u.clientName || u.hash.slice('blake3:'.length);
      // The bytes may be deleted with the last other reference to them while this one is made: stored again then.
      for (let attempt = 0; ; attempt++) {
        const now = Date.now();
        const content = await repo.getContent(this.db, u.hash);
        if (!content || !(await fileHolds(this.dirs, content.path, content.size))) {
          const logical = await storeBlob(this.dirs, u.tmp, u.hash);
          if (this.content) await this.content.putQuietly(resolveLogical(this.dirs, logical)!);
          if (!content) await repo.putContent(this.db, { hash: u.hash, size: u.size, mime_type: mime, path: logical }, now);
          else await repo.setContentPath(this.db, u.hash, logical);
        }
        try {
          return await this.createReference(viewer, { id: u.id, name, hash: u.hash, size: u.size, mimeType: mime, metadata, tags: u.tags, userMetadata: u.userMetadata, previewId: u.previewId });
        } catch (err) {
          if (!(err instanceof repo.ContentGone) || attempt >= 3) throw err;
        }
      }
    } finally {
      await fs.promises.rm(u.tmp, { force: true });
    }
  }

  /** A new reference to content already stored, without its bytes being sent again. */
  async fromHash(viewer: Viewer, spec: { hash: string; name: string; tags: string[]; userMetadata: Record<string, unknown>; mimeType?: string; previewId?: string; id?: string }): Promise<Created> {
    if (spec.id) {
      const again = await this.existingById(viewer, spec.id);
      if (again) return again;
    }
    const content = await repo.getContent(this.db, spec.hash);
    if (!content || !(await repo.ownerHasHash(this.db, viewer.owners, spec.hash))) {
      throw new AssetError(404, 'ASSET_NOT_FOUND', `Asset content ${spec.hash} does not exist`, { hash: spec.hash });
    }
    const sibling = await sql1(this, spec.hash, viewer);
    try {
      return await this.createReference(viewer, {
        id: spec.id,
        name: spec.name,
        hash: spec.hash,
        size: content.size,
        mimeType: spec.mimeType ?? content.mime_type ?? 'application/octet-stream',
        metadata: sibling?.metadata.kind === 'image' ? { kind: 'image', width: sibling.metadata.width, height: sibling.metadata.height } : {},
        tags: spec.tags,
        userMetadata: spec.userMetadata,
        previewId: spec.previewId,
      });
    } catch (err) {
      // Its last reference was deleted with its content meanwhile: as if that had come first.
      if (err instanceof repo.ContentGone) throw new AssetError(404, 'ASSET_NOT_FOUND', `Asset content ${spec.hash} does not exist`, { hash: spec.hash });
      throw err;
    }
  }

  private async createReference(
    viewer: Viewer,
    s: { id?: string; name: string; hash: string; size: number; mimeType: string; metadata: Record<string, unknown>; tags: string[]; userMetadata: Record<string, unknown>; previewId?: string },
  ): Promise<Created> {
    const previewId = await this.checkPreview(viewer, s.previewId);
    const dedupKey = s.id ? null : `${s.hash}:${s.name}`;
    const id = s.id ?? randomUUID();
    const inserted = await repo.insertAsset(this.db, this.d, {
      id,
      owner: viewer.owner,
      name: s.name,
      hash: s.hash,
      size: s.size,
      mimeType: s.mimeType,
      userMetadata: s.userMetadata,
      metadata: s.metadata,
      previewId,
      jobId: null,
      filePath: null,
      dedupKey,
      now: Date.now(),
      tags: s.tags,
    }, true);
    if (inserted) {
      const row = (await repo.getAsset(this.db, this.d, id))!;
      return { row, tags: (await repo.tagsOf(this.db, [id])).get(id) ?? [], created: true };
    }
    // Lost a race: the same client id, or the same owner's same bytes under the same name.
    const row = s.id ? await repo.getAsset(this.db, this.d, s.id) : await repo.getByDedup(this.db, this.d, viewer.owner, dedupKey!);
    if (!row) throw new AssetError(409, 'ID_CONFLICT', 'The asset could not be created; retry.', {});
    if (row.owner !== viewer.owner) throw new AssetError(409, 'ID_CONFLICT', `Asset id ${row.id} is already in use`, { id: row.id });
    return { row, tags: (await repo.tagsOf(this.db, [row.id])).get(row.id) ?? [], created: false };
  }

  /**
   * A file in one of the service's folders (a job's output, an upload)
   * becomes an asset, keyed by its path: writing the same path again points
   * its asset at the new content. Temp files are not assets. Input files are
   * shared (owner ''), as the input folder is.
   *
   * `known` is what a caller that wrote the file already has (an upload
   * hashed while it arrived): its hash, size and first bytes, so the file is
   * not read again. Then one query finds the content row and the path's
   * asset with its tags, and any writes happen in one transaction. `stamp`
   * (device and inode of the written file, which the caller holds open until
   * this returns) ties the hash to that write: when the path holds another
   * file once the rows are written (a concurrent upload to the same name),
   * it is registered again with what the replacing write is known to hold
   * (a recent upload of this process, see recentWrites), else
   * from what it holds, as without `known`.
   */
  async registerFile(f: {
    type: 'input' | 'output' | 'temp' | 'models';
    subfolder: string;
    filename: string;
    owner: string;
    jobId?: string | null;
    tags?: string[];
    known?: KnownWrite;
    /** Re-registrations after the file was replaced (bounds the retries). */
    depth?: number;
  }): Promise<Created | undefined> {
    if (f.type === 'temp') return undefined;
    const rel = f.subfolder ? `${f.subfolder.replace(/^\/+|\/+$/g, '')}/${f.filename}` : f.filename;
    // Hosted runtime: an input or output file is in its workspace's own folder, and its asset is that workspace's.
    const ownInput = (f.type === 'input' || f.type === 'output') && this.dirs.workspaces !== undefined;
    const logical = ownInput ? `workspaces/${workspaceFolderName(f.owner)}/${f.type}/${rel}` : `${f.type}/${rel}`;
    const file = resolveLogical(this.dirs, logical);
    if (!file) return undefined;
    const known = f.known;
    // The caller's own write is known to others while its handle is open, i.e. until this returns.
    const release = known !== undefined && f.depth === undefined && !this.recentWrites.has(known.stamp) ? this.holdWrite(known) : undefined;
    try {
      return await this.registerKnown(f, file, logical, rel, ownInput);
    } finally {
      release?.();
    }
  }

  /**
   * Makes a write known (see recentWrites) from the moment it is in place
   * until the returned release is called (before its handle is closed), so
   * that a registration of the same path that finds this file there takes
   * its hash instead of reading it.
   */
  holdWrite(w: KnownWrite): () => void {
    this.recentWrites.delete(w.stamp);
    this.recentWrites.set(w.stamp, w);
    if (this.recentWrites.size > RECENT_WRITES) this.recentWrites.delete(this.recentWrites.keys().next().value!);
    // Kept after the release (bounded): the stamp still names the write while the file is unchanged.
    return () => undefined;
  }

  private async registerKnown(
    f: Parameters<AssetService['registerFile']>[0],
    file: string,
    logical: string,
    rel: string,
    ownInput: boolean,
  ): Promise<Created | undefined> {
    const known = f.known;
    /** undefined while the file is still the write `known` describes; else how to register it again. */
    const replaced = async (): Promise<typeof f | undefined> => {
      if (!known) return undefined;
      const now = await fileStamp(file);
      if (now === known.stamp) return undefined;
      const other = now === undefined ? undefined : this.recentWrites.get(now);
      return { ...f, known: other && (f.depth ?? 0) < 8 ? other : undefined, depth: (f.depth ?? 0) + 1 };
    };
    // Checked once the rows are written (a replacement before then is seen too).
    let again: typeof f | undefined;
    const [{ hash, size }, head] = known ? [known, known.head] : await Promise.all([hashFile(file), readHead(file)]);
    const mime = mimeFor(f.filename, head);
    const owner = f.type === 'output' || ownInput ? f.owner : '';
    const jobId = f.jobId ?? null;
    const [state, metadata] = await Promise.all([repo.fileState(this.db, this.d, logical, hash), imageMetadata(file, mime, head).then((m) => m ?? {})]);
    const now = Date.now();
    // The content row: recorded with this file as its place, or moved here when its old place lost the bytes.
    let content: Parameters<typeof repo.recordFile>[2]['content'];
    if (!state.content) content = { put: { hash, size, mime_type: mime, path: logical } };
    else if (state.content.path !== logical && !(await fileHolds(this.dirs, state.content.path, state.content.size))) content = { repoint: { hash, path: logical } };
    const existing = state.asset;
    if (existing) {
      const stale = existing.hash !== hash || existing.missing || (jobId && existing.job_id !== jobId);
      if (!stale && !content) return (again = await replaced()) ? this.registerFile(again) : { row: existing, tags: state.tags, created: false };
      const replace = stale ? { id: existing.id, hash, size, mimeType: mime, metadata, jobId: jobId ?? existing.job_id } : undefined;
      await repo.recordFile(this.db, this.d, { content, replace, now });
      if ((again = await replaced())) return this.registerFile(again);
      const row = replace ? { ...existing, hash, size, mime_type: mime, metadata, job_id: replace.jobId, missing: false, updated_at: now } : existing;
      return { row, tags: state.tags, created: false };
    }
    const asset: repo.NewAsset = {
      id: randomUUID(),
      owner,
      name: f.filename,
      hash,
      size,
      mimeType: mime,
      userMetadata: { filename: rel },
      metadata,
      previewId: null,
      jobId,
      filePath: logical,
      dedupKey: null,
      now,
      tags: [...new Set([f.type, ...(f.tags ?? [])])],
    };
    const inserted = await repo.recordFile(this.db, this.d, { content, insert: asset, now });
    if ((again = await replaced())) return this.registerFile(again);
    if (inserted) return { row: repo.newAssetRow(asset), tags: asset.tags, created: true };
    // Another registration of the same path won the insert: its asset.
    const row = await repo.getByFilePath(this.db, this.d, logical);
    if (!row) return undefined;
    return { row, tags: (await repo.tagsOf(this.db, [row.id])).get(row.id) ?? [], created: false };
  }

  // ---- changing ----

  async update(viewer: Viewer, id: string, c: { name?: string; userMetadata?: Record<string, unknown>; previewId?: string | null; mimeType?: string }): Promise<AssetRow> {
    await this.writable(viewer, id);
    const previewId = c.previewId === undefined ? undefined : await this.checkPreview(viewer, c.previewId);
    if (!(await repo.updateAsset(this.db, this.d, id, { name: c.name, userMetadata: c.userMetadata, previewId, mimeType: c.mimeType }, Date.now()))) {
      throw new AssetError(404, 'ASSET_NOT_FOUND', `Preview asset ${previewId} not found`, { preview_id: previewId });
    }
    // Deleted by a concurrent request since the check above: gone, as for a later request.
    return this.visible(viewer, id);
  }

  /** Deletes the reference; with deleteContent, also the bytes once no reference holds them. */
  async delete(viewer: Viewer, id: string, deleteContent: boolean): Promise<void> {
    const row = await this.writable(viewer, id);
    const remaining = await repo.deleteAsset(this.db, id, row.hash);
    if (!deleteContent || !row.hash || remaining > 0) return;
    await repo.deleteContentIfOrphan(this.db, row.hash, async (content) => {
      for (const logical of new Set([content.path, row.file_path])) {
        const file = logical ? await fileHolds(this.dirs, logical, content.size) : undefined;
        if (file) await fs.promises.rm(file, { force: true }).catch((err) => this.log.warn({ err, file }, 'asset content file could not be removed'));
        const local = logical ? resolveLogical(this.dirs, logical) : undefined;
        if (local && this.content) await this.content.deleteFile(local).catch((err) => this.log.warn({ err, file: local }, 'asset content could not be removed from the shared store'));
      }
    });
  }

  async addTags(viewer: Viewer, id: string, tags: string[]) {
    const row = await this.writable(viewer, id);
    return (await repo.addTags(this.db, id, row.owner, tags, Date.now())) ?? this.gone(id);
  }

  async removeTags(viewer: Viewer, id: string, tags: string[]) {
    await this.writable(viewer, id);
    return (await repo.removeTags(this.db, id, tags, Date.now())) ?? this.gone(id);
  }

  /** A reference deleted by a concurrent request after it was checked. */
  private gone(id: string): never {
    throw new AssetError(404, 'ASSET_NOT_FOUND', `AssetReference ${id} not found`, { id });
  }

  // ---- content ----

  /** Where the asset's bytes are: its own file when it still holds them, else the stored content. */
  async contentFile(viewer: Viewer, id: string): Promise<{ row: AssetRow; file: string }> {
    const row = await this.visible(viewer, id);
    const content = row.hash ? await repo.getContent(this.db, row.hash) : undefined;
    const file =
      (await fileHolds(this.dirs, row.file_path, row.size)) ??
      (content ? await fileHolds(this.dirs, content.path, content.size) : undefined) ??
      (await this.storedHolds(row.file_path, row.size)) ??
      (content ? await this.storedHolds(content.path, content.size) : undefined);
    if (!file) throw new AssetError(404, 'FILE_NOT_FOUND', 'Underlying file not found on disk.', { id });
    await repo.touch(this.db, id, Date.now());
    return { row, file };
  }

  async hashExists(viewer: Viewer, hash: string): Promise<boolean> {
    return repo.ownerHasHash(this.db, viewer.owners, hash);
  }

  /** For /view?filename=blake3:<hex>: the file holding content the viewer has an asset of. */
  async fileForHash(viewer: Viewer, hash: string): Promise<{ path: string; filename: string } | undefined> {
    if (!(await repo.ownerHasHash(this.db, viewer.owners, hash))) return undefined;
    const content = await repo.getContent(this.db, hash);
    const file = content ? ((await fileHolds(this.dirs, content.path, content.size)) ?? (await this.storedHolds(content.path, content.size))) : undefined;
    return file ? { path: file, filename: path.basename(content!.path) } : undefined;
  }

  /**
   * The local path of content that is not on this disk but in the shared
   * store with the expected size (written by another process): the routes
   * stream it from there.
   */
  private async storedHolds(logical: string | null, size: number): Promise<string | undefined> {
    if (!this.content || !logical) return undefined;
    const file = resolveLogical(this.dirs, logical);
    if (!file) return undefined;
    try {
      return (await this.content.head(file))?.size === size ? file : undefined;
    } catch (err) {
      this.log.warn({ err, logical }, 'the shared content store could not be read');
      return undefined;
    }
  }
}

/** A sibling reference of the same content, for dimensions a from-hash reference cannot read from bytes it never saw. */
async function sql1(s: AssetService, hash: string, viewer: Viewer): Promise<AssetRow | undefined> {
  const r = await s.db.selectFrom('assets').selectAll().where('hash', '=', hash).where('owner', 'in', [...viewer.owners]).limit(1).executeTakeFirst();
  return r ? repo.readAsset(s.d, r) : undefined;
}
