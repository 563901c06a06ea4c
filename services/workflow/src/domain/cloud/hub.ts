/**
 * The hub: one public profile per workspace (its username is unique,
 * case-insensitively, and never changes), a fixed list of labels, and
 * published workflows (a snapshot of a workflow's graph with metadata,
 * keyed by the workflow's share id, with a moderation status), plus files
 * uploaded for them (thumbnails, samples) through single-use upload URLs.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { isUniqueViolation, lockWorkspace } from '../../identity/store.ts';
import { liveWorkspace, likeEscaped, normName } from './workflows.ts';

export type HubStatus = 'pending' | 'approved' | 'rejected' | 'deprecated';
export const HUB_STATUSES: HubStatus[] = ['pending', 'approved', 'rejected', 'deprecated'];

export interface HubLabel {
  id: string;
  name: string;
  description: string;
  color: string;
}

export const HUB_LABELS: HubLabel[] = [
  { id: 'image-generation', name: 'Image generation', description: 'Text or image to image', color: '#4f8cff' },
  { id: 'image-editing', name: 'Image editing', description: 'Inpainting, outpainting, masks and filters', color: '#8c6cff' },
  { id: 'upscaling', name: 'Upscaling', description: 'Resolution and detail enhancement', color: '#2fb67c' },
  { id: 'video', name: 'Video', description: 'Video generation and editing', color: '#ff7a45' },
  { id: 'audio', name: 'Audio', description: 'Speech, music and sound', color: '#e6a700' },
  { id: '3d', name: '3D', description: 'Meshes, depth and novel views', color: '#13a8a8' },
  { id: 'text', name: 'Text', description: 'Language models and prompt tools', color: '#9254de' },
  { id: 'api-nodes', name: 'API nodes', description: 'Workflows that call hosted model APIs', color: '#f5222d' },
  { id: 'utility', name: 'Utility', description: 'Batch processing and helpers', color: '#8c8c8c' },
];
const LABEL_BY_ID = new Map(HUB_LABELS.map((l) => [l.id, l]));

/** 3-39 letters, digits, "-" or "_", starting with a letter or digit. */
export const USERNAME = /^[A-Za-z0-9][A-Za-z0-9_-]{2,38}$/;
/** Names that are routes or would impersonate the service. */
const RESERVED = new Set(['me', 'check', 'admin', 'administrator', 'api', 'hub', 'root', 'system', 'support', 'comfy', 'comfyui', 'official', 'moderator', 'staff', 'null', 'undefined', 'anonymous']);

export function usernameProblem(u: unknown): string | null {
  if (typeof u !== 'string' || !USERNAME.test(u)) return 'username must be 3-39 letters, digits, "-" or "_", starting with a letter or digit';
  if (RESERVED.has(u.toLowerCase())) return 'This username is reserved';
  return null;
}

export interface ProfileRow {
  workspace_id: string;
  username: string;
  username_norm: string;
  display_name: string | null;
  bio: string | null;
  avatar_url: string | null;
  links: string;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface HubRow {
  share_id: string;
  workspace_id: string;
  workflow_id: string;
  name: string;
  name_norm: string;
  description: string;
  status: HubStatus;
  labels: string;
  detail: string;
  workflow_json: string;
  likes: number;
  views: number;
  forks: number;
  publish_time: number;
  created_at: number;
  updated_at: number;
}

/** What the publish request adds besides name and description (kept as JSON). */
export interface HubDetail {
  tags: string[];
  models: string[];
  custom_nodes: string[];
  tutorial_url?: string;
  metadata?: Record<string, unknown>;
  thumbnail_type?: string;
  thumbnail_url?: string;
  thumbnail_comparison_url?: string;
  sample_image_urls: string[];
  assets: Array<{ id: string; filename: string; mime_type?: string; size_bytes?: number }>;
}

export interface UploadRow {
  id: string;
  workspace_id: string;
  token_hash: string;
  filename: string;
  content_type: string;
  size: number | null;
  stored_size: number | null;
  created_at: number;
  expires_at: number;
  uploaded_at: number | null;
}

export class UsernameTaken extends Error {}
export class ProfileExists extends Error {}

const iso = (ms: unknown) => new Date(Number(ms)).toISOString();
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export function profileView(p: ProfileRow, workflowCount?: number): Record<string, unknown> {
  const out: Record<string, unknown> = { username: p.username };
  if (p.display_name !== null) out.display_name = p.display_name;
  if (p.bio !== null) out.bio = p.bio;
  if (p.avatar_url !== null) out.avatar_url = p.avatar_url;
  out.links = JSON.parse(p.links);
  if (workflowCount !== undefined) out.workflow_count = workflowCount;
  out.created_at = iso(p.created_at);
  return out;
}

export function labelsOf(ids: string[]): HubLabel[] {
  return ids.map((id) => LABEL_BY_ID.get(id)).filter((l): l is HubLabel => l !== undefined);
}

export function isLabel(id: string): boolean {
  return LABEL_BY_ID.has(id);
}

export class HubStore {
  constructor(private readonly db: () => Kysely<any>) {}

  // ---- profiles

  async profileOf(workspaceId: string): Promise<ProfileRow | null> {
    return ((await this.db().selectFrom('hub_profiles').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst()) as ProfileRow | undefined) ?? null;
  }

  /** By username, any case; `live` leaves out profiles of deleted workspaces (their usernames stay taken). */
  async profileByUsername(username: string, live = false): Promise<ProfileRow | null> {
    if (!USERNAME.test(username)) return null;
    let q = this.db().selectFrom('hub_profiles').selectAll().where('username_norm', '=', username.toLowerCase());
    if (live) q = q.where(liveWorkspace);
    return ((await q.executeTakeFirst()) as ProfileRow | undefined) ?? null;
  }

  async usernameAvailable(username: string): Promise<boolean> {
    return usernameProblem(username) === null && (await this.profileByUsername(username)) === null;
  }

  async createProfile(workspaceId: string, userId: string, f: { username: string; display_name?: string; bio?: string; avatar_url?: string; links: string[] }): Promise<ProfileRow> {
    const now = Date.now();
    const row: ProfileRow = { workspace_id: workspaceId, username: f.username, username_norm: f.username.toLowerCase(), display_name: f.display_name ?? null, bio: f.bio ?? null, avatar_url: f.avatar_url ?? null, links: JSON.stringify(f.links), created_by: userId, created_at: now, updated_at: now };
    try {
      await this.db().insertInto('hub_profiles').values(row).execute();
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      // Which unique key: the workspace's profile, or the username.
      if (await this.profileOf(workspaceId)) throw new ProfileExists();
      throw new UsernameTaken();
    }
    return row;
  }

  async updateProfile(p: ProfileRow, patch: { display_name?: string; bio?: string; avatar_url?: string; links?: string[] }): Promise<ProfileRow> {
    const set: Record<string, unknown> = { updated_at: Date.now() };
    if (patch.display_name !== undefined) set.display_name = patch.display_name;
    if (patch.bio !== undefined) set.bio = patch.bio;
    if (patch.avatar_url !== undefined) set.avatar_url = patch.avatar_url;
    if (patch.links !== undefined) set.links = JSON.stringify(patch.links);
    await this.db().updateTable('hub_profiles').set(set).where('workspace_id', '=', p.workspace_id).execute();
    return { ...p, ...set } as ProfileRow;
  }

  async listProfiles(q: { search?: string; limit: number; offset: number }): Promise<{ rows: ProfileRow[]; total: number }> {
    let base = this.db().selectFrom('hub_profiles').where(liveWorkspace);
    if (q.search) {
      const pattern = `%${q.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      base = base.where((eb: any) => eb.or([likeEscaped('username_norm', pattern), likeEscaped('display_name', pattern, true)]));
    }
    const total = Number(((await base.select((eb: any) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()) as { n: unknown }).n);
    const rows = (await base.selectAll().orderBy('username_norm').limit(q.limit).offset(q.offset).execute()) as ProfileRow[];
    return { rows, total };
  }

  async workflowCounts(workspaceIds: string[]): Promise<Map<string, number>> {
    if (workspaceIds.length === 0) return new Map();
    const rows = await this.db().selectFrom('hub_workflows').select(['workspace_id', (eb: any) => eb.fn.countAll().as('n')]).where('workspace_id', 'in', workspaceIds).where('status', '=', 'approved').where(liveWorkflow).groupBy('workspace_id').execute();
    return new Map(rows.map((r: any) => [r.workspace_id as string, Number(r.n)]));
  }

  // ---- published workflows

  async byShareId(shareId: string): Promise<HubRow | null> {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(shareId)) return null;
    return ((await this.db().selectFrom('hub_workflows').selectAll().where('share_id', '=', shareId).where(liveWorkspace).where(liveWorkflow).executeTakeFirst()) as HubRow | undefined) ?? null;
  }

  async byWorkflow(workflowId: string): Promise<HubRow | null> {
    return ((await this.db().selectFrom('hub_workflows').selectAll().where('workflow_id', '=', workflowId).executeTakeFirst()) as HubRow | undefined) ?? null;
  }

  /** Inserts or replaces the hub entry of a workflow (same share id; counters kept). */
  async upsert(e: Omit<HubRow, 'likes' | 'views' | 'forks' | 'created_at' | 'updated_at' | 'name_norm'>): Promise<HubRow> {
    const now = Date.now();
    const existing = await this.byWorkflow(e.workflow_id);
    if (existing) {
      const set = { name: e.name, name_norm: normName(e.name), description: e.description, status: e.status, labels: e.labels, detail: e.detail, workflow_json: e.workflow_json, publish_time: e.publish_time, updated_at: now };
      await this.db().updateTable('hub_workflows').set(set).where('share_id', '=', existing.share_id).execute();
      return { ...existing, ...set };
    }
    const row: HubRow = { ...e, name_norm: normName(e.name), likes: 0, views: 0, forks: 0, created_at: now, updated_at: now };
    try {
      await this.db().insertInto('hub_workflows').values(row).execute();
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      return this.upsert(e);
    }
    return row;
  }

  /** False when it was removed already (of concurrent unpublishes, one removes it). */
  async remove(shareId: string): Promise<boolean> {
    const r = await this.db().deleteFrom('hub_workflows').where('share_id', '=', shareId).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  async setStatus(shareId: string, status: HubStatus): Promise<boolean> {
    const r = await this.db().updateTable('hub_workflows').set({ status, updated_at: Date.now() }).where('share_id', '=', shareId).executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async countView(shareId: string): Promise<void> {
    await this.db().updateTable('hub_workflows').set((eb: any) => ({ views: eb('views', '+', 1) })).where('share_id', '=', shareId).execute();
  }

  async countFork(workflowId: string): Promise<void> {
    await this.db().updateTable('hub_workflows').set((eb: any) => ({ forks: eb('forks', '+', 1) })).where('workflow_id', '=', workflowId).execute();
  }

  async assetsOf(workflowId: string): Promise<HubDetail['assets']> {
    const r = await this.byWorkflow(workflowId);
    return r ? (JSON.parse(r.detail) as HubDetail).assets : [];
  }

  /** Approved entries; `labels` match any of the given ids. */
  async list(q: { search?: string; labels?: string[]; sort: 'created_at' | 'updated_at' | 'likes' | 'views' | 'forks' | 'name'; order: 'asc' | 'desc'; limit: number; offset: number }): Promise<{ rows: HubRow[]; total: number }> {
    let base = this.db().selectFrom('hub_workflows').where('status', '=', 'approved').where(liveWorkspace).where(liveWorkflow);
    if (q.search) {
      const pattern = `%${normName(q.search).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      base = base.where((eb: any) => eb.or([likeEscaped('name_norm', pattern), likeEscaped('description', pattern, true)]));
    }
    if (q.labels && q.labels.length) {
      const ids = q.labels;
      // Label ids are slugs, so their quoted form is an exact token of the JSON array text.
      base = base.where((eb: any) => eb.or(ids.map((id) => likeEscaped('labels', `%"${id.replace(/[\\%_]/g, (c) => `\\${c}`)}"%`))));
    }
    const total = Number(((await base.select((eb: any) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()) as { n: unknown }).n);
    const col = q.sort === 'name' ? 'name_norm' : q.sort;
    const rows = (await base.selectAll().orderBy(col, q.order).orderBy('share_id', q.order).limit(q.limit).offset(q.offset).execute()) as HubRow[];
    return { rows, total };
  }

  async index(max: number): Promise<Array<Pick<HubRow, 'share_id' | 'name' | 'labels' | 'likes' | 'updated_at' | 'workspace_id'>>> {
    return (await this.db().selectFrom('hub_workflows').select(['share_id', 'name', 'labels', 'likes', 'updated_at', 'workspace_id']).where('status', '=', 'approved').where(liveWorkspace).where(liveWorkflow).orderBy('updated_at', 'desc').orderBy('share_id').limit(max).execute()) as any;
  }

  async profilesOf(workspaceIds: string[]): Promise<Map<string, ProfileRow>> {
    const ids = [...new Set(workspaceIds)];
    if (ids.length === 0) return new Map();
    const rows = (await this.db().selectFrom('hub_profiles').selectAll().where('workspace_id', 'in', ids).execute()) as ProfileRow[];
    return new Map(rows.map((r) => [r.workspace_id, r]));
  }

  // ---- uploads

  /** A single-use upload slot; the token is returned once and only its hash is kept. */
  /** Open (unused, unexpired) upload slots of a workspace; expired unused ones are dropped first. */
  /**
   * A new upload URL, unless the workspace has `maxOpen` unused ones (null).
   * Expired unused ones are dropped first; counted and inserted under the
   * workspace's lock, so concurrent requests cannot each see room for one more.
   */
  async createUpload(workspaceId: string, f: { filename: string; content_type: string; size?: number }, ttlMs: number, maxOpen: number): Promise<{ row: UploadRow; token: string } | null> {
    const token = randomBytes(32).toString('base64url');
    return this.db()
      .transaction()
      .execute(async (trx) => {
        await lockWorkspace(trx, workspaceId);
        const now = Date.now();
        await trx.deleteFrom('hub_uploads').where('workspace_id', '=', workspaceId).where('uploaded_at', 'is', null).where('expires_at', '<=', now).execute();
        const r = await trx.selectFrom('hub_uploads').select((eb: any) => eb.fn.countAll().as('n')).where('workspace_id', '=', workspaceId).where('uploaded_at', 'is', null).executeTakeFirstOrThrow();
        if (Number((r as { n: unknown }).n) >= maxOpen) return null;
        const row: UploadRow = { id: randomUUID(), workspace_id: workspaceId, token_hash: sha256(token), filename: f.filename, content_type: f.content_type, size: f.size ?? null, stored_size: null, created_at: now, expires_at: now + ttlMs, uploaded_at: null };
        await trx.insertInto('hub_uploads').values(row).execute();
        return { row, token };
      });
  }

  async upload(id: string): Promise<UploadRow | null> {
    if (!/^[0-9a-f-]{36}$/.test(id)) return null;
    return ((await this.db().selectFrom('hub_uploads').selectAll().where('id', '=', id).executeTakeFirst()) as UploadRow | undefined) ?? null;
  }

  tokenMatches(row: UploadRow, token: string): boolean {
    return sha256(token) === row.token_hash;
  }

  /** Marks the slot used; false when another request used it first. */
  async completeUpload(id: string, size: number): Promise<boolean> {
    const r = await this.db().updateTable('hub_uploads').set({ uploaded_at: Date.now(), stored_size: size }).where('id', '=', id).where('uploaded_at', 'is', null).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }
}

/** Hub entries whose workflow still exists (an entry written while its workflow was being deleted is never shown). */
function liveWorkflow(eb: any): any {
  return eb.exists(eb.selectFrom('cloud_workflows').select('cloud_workflows.id').whereRef('cloud_workflows.id', '=', 'hub_workflows.workflow_id'));
}
