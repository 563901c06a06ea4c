import type { Kysely } from 'kysely';
import { holdRow } from '@svc/storage';
import { newId, randomToken, sha256 } from './secrets.ts';
import { codePointsOver } from './text-length.ts';

export type Role = 'owner' | 'admin' | 'member';
export type WorkspaceType = 'personal' | 'team';

export interface UserRow {
  id: string;
  email: string;
  display_name: string | null;
  avatar_url: string | null;
  password_hash: string | null;
  personal_workspace_id: string;
  created_at: number;
}

export interface WorkspaceRow {
  id: string;
  name: string;
  type: WorkspaceType;
  owner_id: string;
  created_at: number;
  updated_at: number;
}

export interface Membership extends WorkspaceRow {
  role: Role;
  joined_at: number;
}

export const ROLE_RANK: Record<Role, number> = { member: 1, admin: 2, owner: 3 };

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(Number(ms)).toISOString());

/** Unique-constraint violation on either database. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string };
  return e?.code === '23505' || (typeof e?.code === 'string' && e.code.startsWith('SQLITE_CONSTRAINT'));
}

/** Whether a client-supplied key can be a query parameter on both databases (PostgreSQL refuses NUL; nothing we store is longer). */
export function storable(v: unknown, max = 500): v is string {
  return typeof v === 'string' && v.length <= max && !v.includes('\u0000') && !LONE_SURROGATE_RE.test(v);
}

/**
 * Inside a transaction: holds the workspace's row lock until it ends (a
 * no-op update), so writers that check a per-workspace rule before they
 * insert (one pending invite per email, the secrets limit) run one after
 * another on any number of processes. SQLite runs write transactions one at
 * a time anyway.
 */
export async function lockWorkspace(trx: Kysely<any>, workspaceId: string): Promise<void> {
  await holdRow(trx, 'id_workspaces', 'id', workspaceId, 'updated_at');
}

export function normEmail(email: string): string {
  return email.trim().normalize('NFC').toLowerCase();
}

const EMAIL = /^[^\s@\u0000-\u001f\u007f]{1,64}@[^\s@\u0000-\u001f\u007f]+\.[^\s@\u0000-\u001f\u007f]+$/;
const LONE_SURROGATE_RE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function emailProblem(e: unknown): string | null {
  if (typeof e !== 'string' || e.trim() === '') return 'email is required';
  const t = e.trim();
  if (t.length > 254 || !EMAIL.test(t) || LONE_SURROGATE.test(t)) return 'email is not a valid address';
  return null;
}

/** A display text: bounded, no control characters, no lone surrogates. */
export function textProblem(v: unknown, name: string, max: number, opts: { allowEmpty?: boolean } = {}): string | null {
  if (typeof v !== 'string') return `${name} must be a string`;
  // The length first and without copies (trim() of a huge string would copy it).
  if (codePointsOver(v, max)) return `${name} must be at most ${max} characters`;
  if (!opts.allowEmpty && v.trim() === '') return `${name} must not be empty`;
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(v) || LONE_SURROGATE.test(v)) return `${name} contains invalid characters`;
  return null;
}

export function userView(u: UserRow) {
  const out: Record<string, unknown> = { id: u.id, email: u.email, created_at: iso(u.created_at) };
  if (u.display_name !== null) out.display_name = u.display_name;
  if (u.avatar_url !== null) out.avatar_url = u.avatar_url;
  return out;
}

export function workspaceView(w: WorkspaceRow, memberCount: number, role?: Role) {
  return { id: w.id, name: w.name, type: w.type, owner_id: w.owner_id, member_count: memberCount, created_at: iso(w.created_at), updated_at: iso(w.updated_at), ...(role ? { role } : {}) };
}

/** Users, workspaces, members, invites, API keys and feedback rows. */
export class IdentityStore {
  constructor(private readonly db: () => Kysely<any>) {}

  // ---- users

  async userById(id: string): Promise<UserRow | null> {
    if (!storable(id)) return null;
    return ((await this.db().selectFrom('id_users').selectAll().where('id', '=', id).executeTakeFirst()) as UserRow | undefined) ?? null;
  }

  async userByEmail(email: string): Promise<UserRow | null> {
    if (!storable(email)) return null;
    return ((await this.db().selectFrom('id_users').selectAll().where('email_norm', '=', normEmail(email)).executeTakeFirst()) as UserRow | undefined) ?? null;
  }

  /** A user and their personal workspace (owner), in one transaction; null when the email is taken. */
  async createUser(u: { email: string; passwordHash: string | null; displayName?: string }): Promise<{ user: UserRow; workspace: WorkspaceRow } | null> {
    const now = Date.now();
    const user: UserRow = { id: newId(), email: u.email.trim(), display_name: u.displayName ?? null, avatar_url: null, password_hash: u.passwordHash, personal_workspace_id: newId(), created_at: now };
    const workspace: WorkspaceRow = { id: user.personal_workspace_id, name: u.displayName ? `${u.displayName}'s workspace` : 'Personal', type: 'personal', owner_id: user.id, created_at: now, updated_at: now };
    try {
      await this.db()
        .transaction()
        .execute(async (trx) => {
          await trx.insertInto('id_users').values({ ...user, email_norm: normEmail(user.email), updated_at: now }).execute();
          await trx.insertInto('id_workspaces').values({ ...workspace, deleted_at: null }).execute();
          await trx.insertInto('id_members').values({ workspace_id: workspace.id, user_id: user.id, role: 'owner', joined_at: now }).execute();
        });
    } catch (err) {
      if (isUniqueViolation(err)) return null;
      throw err;
    }
    return { user, workspace };
  }

  async updateUser(id: string, patch: { display_name?: string; avatar_url?: string; password_hash?: string }): Promise<void> {
    await this.db().updateTable('id_users').set({ ...patch, updated_at: Date.now() }).where('id', '=', id).execute();
  }

  // ---- workspaces and members

  async membership(userId: string, workspaceId: string): Promise<Membership | null> {
    if (!storable(userId) || !storable(workspaceId)) return null;
    const r = await this.db()
      .selectFrom('id_members as m')
      .innerJoin('id_workspaces as w', 'w.id', 'm.workspace_id')
      .select(['w.id', 'w.name', 'w.type', 'w.owner_id', 'w.created_at', 'w.updated_at', 'm.role', 'm.joined_at'])
      .where('m.user_id', '=', userId)
      .where('m.workspace_id', '=', workspaceId)
      .where('w.deleted_at', 'is', null)
      .executeTakeFirst();
    return (r as Membership | undefined) ?? null;
  }

  async memberships(userId: string): Promise<Membership[]> {
    return (await this.db()
      .selectFrom('id_members as m')
      .innerJoin('id_workspaces as w', 'w.id', 'm.workspace_id')
      .select(['w.id', 'w.name', 'w.type', 'w.owner_id', 'w.created_at', 'w.updated_at', 'm.role', 'm.joined_at'])
      .where('m.user_id', '=', userId)
      .where('w.deleted_at', 'is', null)
      .orderBy('w.created_at')
      .orderBy('w.id')
      .execute()) as Membership[];
  }

  async memberCount(workspaceId: string): Promise<number> {
    const r = await this.db().selectFrom('id_members').select((eb) => eb.fn.countAll().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  async workspaceAlive(id: string): Promise<boolean> {
    if (!storable(id)) return false;
    return !!(await this.db().selectFrom('id_workspaces').select('id').where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst());
  }

  async createWorkspace(ownerId: string, name: string): Promise<WorkspaceRow> {
    const now = Date.now();
    const w: WorkspaceRow = { id: newId(), name, type: 'team', owner_id: ownerId, created_at: now, updated_at: now };
    await this.db()
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('id_workspaces').values({ ...w, deleted_at: null }).execute();
        await trx.insertInto('id_members').values({ workspace_id: w.id, user_id: ownerId, role: 'owner', joined_at: now }).execute();
      });
    return w;
  }

  /** False when the workspace was deleted (meanwhile). */
  async renameWorkspace(id: string, name: string): Promise<boolean> {
    const r = await this.db().updateTable('id_workspaces').set({ name, updated_at: Date.now() }).where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /**
   * Soft delete: the row stays (its data may be restored by an operator), nobody is a member any more in effect.
   * False when it was deleted already (of concurrent deletes, one does it).
   */
  async softDeleteWorkspace(id: string): Promise<boolean> {
    return this.db()
      .transaction()
      .execute(async (trx) => {
        const now = Date.now();
        const r = await trx.updateTable('id_workspaces').set({ deleted_at: now, updated_at: now }).where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
        if (Number(r.numUpdatedRows) === 0) return false;
        await trx.deleteFrom('id_api_keys').where('workspace_id', '=', id).execute();
        await trx.updateTable('id_invites').set({ status: 'revoked' }).where('workspace_id', '=', id).where('status', '=', 'pending').execute();
        return true;
      });
  }

  async members(workspaceId: string) {
    const rows = await this.db()
      .selectFrom('id_members as m')
      .innerJoin('id_users as u', 'u.id', 'm.user_id')
      .select(['m.user_id', 'm.role', 'm.joined_at', 'u.email', 'u.display_name', 'u.avatar_url'])
      .where('m.workspace_id', '=', workspaceId)
      .orderBy('m.joined_at')
      .orderBy('m.user_id')
      .execute();
    return rows.map(memberView);
  }

  async member(workspaceId: string, userId: string) {
    if (!storable(userId)) return null;
    const r = await this.db()
      .selectFrom('id_members as m')
      .innerJoin('id_users as u', 'u.id', 'm.user_id')
      .select(['m.user_id', 'm.role', 'm.joined_at', 'u.email', 'u.display_name', 'u.avatar_url'])
      .where('m.workspace_id', '=', workspaceId)
      .where('m.user_id', '=', userId)
      .executeTakeFirst();
    return r ? memberView(r) : null;
  }

  /** False when the user is no longer a member (removed meanwhile). */
  async setRole(workspaceId: string, userId: string, role: Role): Promise<boolean> {
    const r = await this.db().updateTable('id_members').set({ role }).where('workspace_id', '=', workspaceId).where('user_id', '=', userId).where('role', '!=', 'owner').executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Removes a member and revokes the API keys they created in that workspace; false when they were not a member (any more). */
  async removeMember(workspaceId: string, userId: string): Promise<boolean> {
    return this.db()
      .transaction()
      .execute(async (trx) => {
        const r = await trx.deleteFrom('id_members').where('workspace_id', '=', workspaceId).where('user_id', '=', userId).executeTakeFirst();
        await trx.deleteFrom('id_api_keys').where('workspace_id', '=', workspaceId).where('user_id', '=', userId).execute();
        return Number(r.numDeletedRows) > 0;
      });
  }

  // ---- invites

  /**
   * Creates an invite unless the email is a member's or has a pending invite
   * already. Checked and inserted under the workspace's lock, so concurrent
   * invites of one email (on any process) make exactly one.
   */
  async createInvite(workspaceId: string, email: string, role: Role, invitedBy: string, ttlMs: number): Promise<{ token: string; invite: ReturnType<typeof inviteView> } | 'already_member' | 'invite_exists'> {
    const token = `wfi_${randomToken()}`;
    return this.db()
      .transaction()
      .execute(async (trx) => {
        await lockWorkspace(trx, workspaceId);
        const now = Date.now();
        const emailNorm = normEmail(email);
        const member = await trx
          .selectFrom('id_members as m')
          .innerJoin('id_users as u', 'u.id', 'm.user_id')
          .select('m.user_id')
          .where('m.workspace_id', '=', workspaceId)
          .where('u.email_norm', '=', emailNorm)
          .executeTakeFirst();
        if (member) return 'already_member' as const;
        const pending = await trx.selectFrom('id_invites').select('id').where('workspace_id', '=', workspaceId).where('email_norm', '=', emailNorm).where('status', '=', 'pending').where('expires_at', '>', now).executeTakeFirst();
        if (pending) return 'invite_exists' as const;
        const row = { id: newId(), workspace_id: workspaceId, email: email.trim(), email_norm: emailNorm, role, token_hash: sha256(token), invited_by: invitedBy, status: 'pending', created_at: now, expires_at: now + ttlMs };
        await trx.insertInto('id_invites').values(row).execute();
        return { token, invite: inviteView(row) };
      });
  }

  async invites(workspaceId: string) {
    const rows = await this.db().selectFrom('id_invites').selectAll().where('workspace_id', '=', workspaceId).where('status', '=', 'pending').where('expires_at', '>', Date.now()).orderBy('created_at').orderBy('id').execute();
    return rows.map((r) => inviteView(r as never));
  }

  async revokeInvite(workspaceId: string, id: string): Promise<boolean> {
    if (!storable(id)) return false;
    const r = await this.db().updateTable('id_invites').set({ status: 'revoked' }).where('workspace_id', '=', workspaceId).where('id', '=', id).where('status', '=', 'pending').executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async inviteByToken(token: string) {
    return (await this.db().selectFrom('id_invites').selectAll().where('token_hash', '=', sha256(token)).executeTakeFirst()) ?? null;
  }

  /** Marks the invite accepted (once) and adds the member; false when it was no longer pending. */
  async acceptInvite(inviteId: string, workspaceId: string, userId: string, role: Role): Promise<boolean> {
    return this.db()
      .transaction()
      .execute(async (trx) => {
        const r = await trx.updateTable('id_invites').set({ status: 'accepted' }).where('id', '=', inviteId).where('status', '=', 'pending').executeTakeFirst();
        if (Number(r.numUpdatedRows) === 0) return false;
        const exists = await trx.selectFrom('id_members').select('role').where('workspace_id', '=', workspaceId).where('user_id', '=', userId).executeTakeFirst();
        if (!exists) await trx.insertInto('id_members').values({ workspace_id: workspaceId, user_id: userId, role, joined_at: Date.now() }).execute();
        return true;
      });
  }

  // ---- API keys

  async createApiKey(workspaceId: string, userId: string, name: string, description: string) {
    const key = `wfk_${randomToken()}`;
    const row = { id: newId(), workspace_id: workspaceId, user_id: userId, name, description, prefix: key.slice(0, 12), key_hash: sha256(key), created_at: Date.now(), last_used_at: null };
    await this.db().insertInto('id_api_keys').values(row).execute();
    return { key, row };
  }

  async apiKeys(workspaceId: string, userId?: string) {
    let q = this.db().selectFrom('id_api_keys').selectAll().where('workspace_id', '=', workspaceId);
    if (userId !== undefined) q = q.where('user_id', '=', userId);
    return q.orderBy('created_at').orderBy('id').execute();
  }

  async apiKey(workspaceId: string, id: string) {
    if (!storable(id)) return null;
    return (await this.db().selectFrom('id_api_keys').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()) ?? null;
  }

  async apiKeyByHash(hash: string) {
    return (await this.db().selectFrom('id_api_keys').select(['id', 'workspace_id', 'user_id', 'last_used_at']).where('key_hash', '=', hash).executeTakeFirst()) ?? null;
  }

  /** The deleted key's hash; null when there was no such key (or a concurrent delete took it). */
  async deleteApiKey(workspaceId: string, id: string): Promise<string | null> {
    const row = await this.apiKey(workspaceId, id);
    if (!row) return null;
    const r = await this.db().deleteFrom('id_api_keys').where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
    return Number(r.numDeletedRows) > 0 ? (row.key_hash as string) : null;
  }

  async deleteMemberApiKeys(workspaceId: string, userId: string): Promise<string[]> {
    if (!storable(userId)) return [];
    const rows = await this.db().selectFrom('id_api_keys').select('key_hash').where('workspace_id', '=', workspaceId).where('user_id', '=', userId).execute();
    if (rows.length) await this.db().deleteFrom('id_api_keys').where('workspace_id', '=', workspaceId).where('user_id', '=', userId).execute();
    return rows.map((r) => r.key_hash as string);
  }

  async touchApiKeys(uses: Map<string, number>): Promise<void> {
    for (const [id, at] of uses) {
      await this.db().updateTable('id_api_keys').set({ last_used_at: at }).where('id', '=', id).where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)])).execute();
    }
  }

  // ---- feedback

  async addFeedback(userId: string, workspaceId: string, message: string, rating: number | null, context: unknown): Promise<string> {
    const id = newId();
    await this.db().insertInto('id_feedback').values({ id, user_id: userId, workspace_id: workspaceId, message, rating, context: context === undefined ? null : JSON.stringify(context), created_at: Date.now() }).execute();
    return id;
  }
}

function memberView(r: { user_id: string; role: string; joined_at: number; email: string; display_name: string | null; avatar_url: string | null }) {
  const out: Record<string, unknown> = { user_id: r.user_id, email: r.email, role: r.role, joined_at: iso(r.joined_at) };
  if (r.display_name !== null) out.display_name = r.display_name;
  if (r.avatar_url !== null) out.avatar_url = r.avatar_url;
  return out;
}

function inviteView(r: { id: string; email: string; role: string; invited_by: string; created_at: number; expires_at: number }) {
  return { id: r.id, email: r.email, role: r.role, invited_by: r.invited_by, created_at: iso(r.created_at), expires_at: iso(r.expires_at) };
}

export function apiKeyView(r: { id: string; name: string; description: string; prefix: string; created_at: number; last_used_at: number | null; user_id: string }, lastUsed?: number) {
  const last = Math.max(Number(r.last_used_at ?? 0), lastUsed ?? 0);
  return { id: r.id, name: r.name, description: r.description, prefix: r.prefix, created_at: iso(r.created_at), last_used_at: last ? iso(last) : null, created_by: r.user_id };
}
