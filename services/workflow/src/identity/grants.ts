import type { Kysely } from 'kysely';
import { newId, randomToken, sha256 } from './secrets.ts';

export interface Family {
  id: string;
  user_id: string;
  workspace_id: string;
  client_id: string | null;
  scope: string;
  kind: 'login' | 'oauth';
  revoked_at: number | null;
}

export type RotateResult = { ok: true; family: Family; refreshToken: string } | { ok: false; reason: 'invalid' | 'reused' | 'revoked' | 'expired' | 'client' };

export interface CodeRow {
  code_hash: string;
  client_id: string;
  user_id: string;
  workspace_id: string;
  redirect_uri: string;
  scope: string;
  code_challenge: string;
  expires_at: number;
  used_at: number | null;
  family_id: string | null;
}

export interface SessionRow {
  id: string;
  csrf_hash: string;
  user_id: string;
  workspace_id: string;
  family_id: string | null;
  expires_at: number;
  revoked_at: number | null;
}

/**
 * Token families (one per login or OAuth grant) with their rotating refresh
 * tokens, authorization codes, and cookie sessions. Every state change that
 * must happen once (a refresh rotation, a code redemption) is a conditional
 * UPDATE whose row count decides the winner, so two processes presenting
 * the same secret at the same time cannot both succeed.
 */
export class Grants {
  constructor(
    private readonly db: () => Kysely<any>,
    private readonly refreshTtlMs: number,
    /** Told of every revocation, so caches of family state can drop it at once. */
    private readonly onRevoke: (familyId: string) => void = () => {},
  ) {}

  async createFamily(f: { userId: string; workspaceId: string; clientId: string | null; scope: string; kind: 'login' | 'oauth' }): Promise<Family> {
    const fam: Family = { id: newId(), user_id: f.userId, workspace_id: f.workspaceId, client_id: f.clientId, scope: f.scope, kind: f.kind, revoked_at: null };
    await this.db().insertInto('id_families').values({ ...fam, created_at: Date.now(), revoked_reason: null }).execute();
    return fam;
  }

  async family(id: string): Promise<Family | null> {
    return ((await this.db().selectFrom('id_families').select(['id', 'user_id', 'workspace_id', 'client_id', 'scope', 'kind', 'revoked_at']).where('id', '=', id).executeTakeFirst()) as Family | undefined) ?? null;
  }

  async revokeFamily(id: string, reason: string): Promise<void> {
    await this.db().updateTable('id_families').set({ revoked_at: Date.now(), revoked_reason: reason }).where('id', '=', id).where('revoked_at', 'is', null).execute();
    this.onRevoke(id);
  }

  async issueRefresh(familyId: string): Promise<string> {
    const token = `wfr_${randomToken()}`;
    const now = Date.now();
    await this.db().insertInto('id_refresh_tokens').values({ token_hash: sha256(token), family_id: familyId, created_at: now, expires_at: now + this.refreshTtlMs, used_at: null }).execute();
    return token;
  }

  /**
   * Rotates a refresh token: the presented one is spent and a new one of the
   * same family issued. A token already spent is a replay (stolen token or a
   * client bug): the whole family is revoked, so the thief's and the
   * victim's tokens all stop working.
   */
  async rotate(token: string, clientId: string | null | undefined): Promise<RotateResult> {
    const row = await this.db().selectFrom('id_refresh_tokens').selectAll().where('token_hash', '=', sha256(token)).executeTakeFirst();
    if (!row) return { ok: false, reason: 'invalid' };
    const fam = await this.family(row.family_id);
    if (!fam) return { ok: false, reason: 'invalid' };
    if (clientId !== undefined && (fam.client_id ?? null) !== clientId) return { ok: false, reason: 'client' };
    if (fam.revoked_at !== null) return { ok: false, reason: 'revoked' };
    if (row.used_at !== null) {
      await this.revokeFamily(fam.id, 'refresh_token_reuse');
      return { ok: false, reason: 'reused' };
    }
    if (Number(row.expires_at) <= Date.now()) return { ok: false, reason: 'expired' };
    const upd = await this.db().updateTable('id_refresh_tokens').set({ used_at: Date.now() }).where('token_hash', '=', row.token_hash).where('used_at', 'is', null).executeTakeFirst();
    if (Number(upd.numUpdatedRows) === 0) {
      await this.revokeFamily(fam.id, 'refresh_token_reuse');
      return { ok: false, reason: 'reused' };
    }
    return { ok: true, family: fam, refreshToken: await this.issueRefresh(fam.id) };
  }

  // ---- authorization codes

  async createCode(c: Omit<CodeRow, 'code_hash' | 'expires_at' | 'used_at' | 'family_id'>, ttlMs: number): Promise<string> {
    const code = `wfc_${randomToken()}`;
    const now = Date.now();
    await this.db()
      .insertInto('id_oauth_codes')
      .values({ ...c, code_hash: sha256(code), created_at: now, expires_at: now + ttlMs, used_at: null, family_id: null })
      .execute();
    return code;
  }

  /**
   * Spends a code (whatever happens next, it never works again). A code
   * presented a second time revokes the tokens minted from its first use.
   */
  async redeemCode(code: string): Promise<{ ok: true; row: CodeRow } | { ok: false; reason: 'invalid' | 'reused' | 'expired' }> {
    const row = (await this.db().selectFrom('id_oauth_codes').selectAll().where('code_hash', '=', sha256(code)).executeTakeFirst()) as CodeRow | undefined;
    if (!row) return { ok: false, reason: 'invalid' };
    const upd = row.used_at === null ? await this.db().updateTable('id_oauth_codes').set({ used_at: Date.now() }).where('code_hash', '=', row.code_hash).where('used_at', 'is', null).executeTakeFirst() : { numUpdatedRows: 0n };
    if (Number(upd.numUpdatedRows) === 0) {
      const again = (await this.db().selectFrom('id_oauth_codes').select('family_id').where('code_hash', '=', row.code_hash).executeTakeFirst()) as { family_id: string | null } | undefined;
      if (again?.family_id) await this.revokeFamily(again.family_id, 'authorization_code_reuse');
      // Revocation of a family minted after this point: marked so the minting request sees it.
      await this.db().updateTable('id_oauth_codes').set({ family_id: again?.family_id ?? 'reused' }).where('code_hash', '=', row.code_hash).where('family_id', 'is', null).execute();
      return { ok: false, reason: 'reused' };
    }
    if (Number(row.expires_at) <= Date.now()) return { ok: false, reason: 'expired' };
    return { ok: true, row };
  }

  /** Links the family minted from a code; false when a replay was seen meanwhile (the caller revokes). */
  async linkCode(codeHash: string, familyId: string): Promise<boolean> {
    const upd = await this.db().updateTable('id_oauth_codes').set({ family_id: familyId }).where('code_hash', '=', codeHash).where('family_id', 'is', null).executeTakeFirst();
    return Number(upd.numUpdatedRows) > 0;
  }

  // ---- cookie sessions

  async createSession(s: { userId: string; workspaceId: string; familyId: string | null }, ttlMs: number): Promise<{ token: string; csrf: string; expiresAt: number }> {
    const token = `wfs_${randomToken()}`;
    const csrf = randomToken(24);
    const now = Date.now();
    await this.db()
      .insertInto('id_sessions')
      .values({ id: newId(), token_hash: sha256(token), csrf_hash: sha256(csrf), user_id: s.userId, workspace_id: s.workspaceId, family_id: s.familyId, created_at: now, expires_at: now + ttlMs, revoked_at: null })
      .execute();
    return { token, csrf, expiresAt: now + ttlMs };
  }

  async sessionByHash(hash: string): Promise<SessionRow | null> {
    return ((await this.db().selectFrom('id_sessions').select(['id', 'csrf_hash', 'user_id', 'workspace_id', 'family_id', 'expires_at', 'revoked_at']).where('token_hash', '=', hash).executeTakeFirst()) as SessionRow | undefined) ?? null;
  }

  async revokeSession(id: string): Promise<void> {
    await this.db().updateTable('id_sessions').set({ revoked_at: Date.now() }).where('id', '=', id).where('revoked_at', 'is', null).execute();
  }
}
