import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { IdentityConfig } from './config.ts';
import { Grants, type Family, type SessionRow } from './grants.ts';
import { SigningKeys, type KeyBox } from './keys.ts';
import { OAuthClients } from './oauth-clients.ts';
import { PasswordHasher } from './passwords.ts';
import { MemoryRateLimiter, SharedRateLimiter, type RateLimiter } from './rate-limit.ts';
import { sameString, sha256 } from './secrets.ts';
import { IdentityStore, type Membership, type Role } from './store.ts';
import { AccessTokens } from './tokens.ts';
import { originVariesByHost, publicOrigin } from './origins.ts';

export const SCOPES = ['workflow:read', 'workflow:write'] as const;
export const FULL_SCOPE = SCOPES.join(' ');
export const SESSION_COOKIE = 'wf_session';
export const CSRF_COOKIE = 'wf_csrf';
export const CSRF_HEADER = 'x-csrf-token';
export const WORKSPACE_HEADER = 'x-workspace-id';

/** Who is calling and in which workspace: set on every authenticated request of the hosted runtime. */
export interface Principal {
  userId: string;
  workspaceId: string;
  role: Role;
  workspaceType: 'personal' | 'team';
  via: 'jwt' | 'api_key' | 'session';
  scopes: string[];
  familyId?: string;
  sessionId?: string;
  apiKeyId?: string;
  clientId?: string;
  /** Whether the caller may pick another of its workspaces with X-Workspace-Id (first-party logins and sessions). */
  switchable: boolean;
  /** Epoch ms when the credential ends. */
  expiresAt?: number;
}

export type AuthOutcome = { principal: Principal } | { error: 'missing' | 'invalid' | 'csrf' | 'workspace' | 'scope' };

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

interface Cached<T> {
  v: T;
  at: number;
}

export function parseCookies(header: string | undefined): Record<string, string> {
  // Cookie names are the client's: no prototype, so `constructor` or `__proto__` are plain names.
  const out: Record<string, string> = Object.create(null);
  if (!header || header.length > 16_384) return out;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const k = part.slice(0, i).trim();
    if (k && !(k in out)) out[k] = part.slice(i + 1).trim();
  }
  return out;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The hosted runtime's identity provider: users, workspaces, credentials and
 * the checks run on every request. Facts that authentication needs on every
 * call (membership, family revocation, API keys, sessions) are served from
 * memory for at most `cacheTtlMs` and dropped at once when this process
 * changes them, so a request costs no database round trip beyond its own.
 */
export class Identity {
  readonly store: IdentityStore;
  readonly grants: Grants;
  readonly clients: OAuthClients;
  readonly keys: SigningKeys;
  readonly tokens: AccessTokens;
  readonly hasher: PasswordHasher;
  readonly limiter: RateLimiter;
  private readonly members = new Map<string, Cached<Membership | null>>();
  private readonly families = new Map<string, Cached<Family | null>>();
  private readonly keysByHash = new Map<string, Cached<{ id: string; workspace_id: string; user_id: string } | null>>();
  private readonly sessions = new Map<string, Cached<SessionRow | null>>();
  /** API key id → last use (ms), written to the database in batches, not on every request. */
  readonly keyUses = new Map<string, number>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    db: () => Kysely<any>,
    readonly cfg: IdentityConfig,
    /** Seals the signing keys' private halves at rest (the workspace secrets' key). */
    keyBox?: KeyBox,
  ) {
    this.store = new IdentityStore(db);
    this.limiter = cfg.sharedRateLimits ? new SharedRateLimiter(db) : new MemoryRateLimiter();
    this.grants = new Grants(db, cfg.refreshTtlMs, (fid) => this.families.delete(fid));
    this.clients = new OAuthClients(db);
    this.keys = new SigningKeys(db, { rotateMs: cfg.keyRotateMs, maxTokenMs: cfg.accessTtlSec * 1000, box: keyBox });
    this.tokens = new AccessTokens(this.keys, cfg.publicUrl ?? 'urn:workflow', cfg.accessTtlSec);
    this.hasher = new PasswordHasher(cfg.hashConcurrency, cfg.hashQueue);
  }

  start(): void {
    this.flushTimer = setInterval(() => void this.flushKeyUses().catch(() => {}), 30_000);
    this.flushTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.flushTimer) clearInterval(this.flushTimer);
    await this.flushKeyUses().catch(() => {});
  }

  async flushKeyUses(): Promise<void> {
    if (this.keyUses.size === 0) return;
    const batch = new Map(this.keyUses);
    this.keyUses.clear();
    await this.store.touchApiKeys(batch);
  }

  /** The issuer / base URL as clients see it: a configured origin (or the one the connection came in on), never the Host header's text. */
  baseUrl(req: FastifyRequest): string {
    return publicOrigin(req, this.cfg.publicUrls ?? []);
  }

  /** Whether documents built on baseUrl differ by Host (then they carry `Vary: Host`). */
  baseUrlVaries(req: FastifyRequest): boolean {
    return originVariesByHost(req, this.cfg.publicUrls ?? []);
  }

  // ---- cached lookups

  private fresh<T>(c: Cached<T> | undefined): c is Cached<T> {
    return c !== undefined && Date.now() - c.at < this.cfg.cacheTtlMs;
  }

  async membership(userId: string, workspaceId: string): Promise<Membership | null> {
    const k = `${userId}\n${workspaceId}`;
    const c = this.members.get(k);
    if (this.fresh(c)) return c.v;
    const v = await this.store.membership(userId, workspaceId);
    if (this.members.size > 50_000) this.members.clear();
    this.members.set(k, { v, at: Date.now() });
    return v;
  }

  /** Drops cached memberships of a workspace (role change, removal, deletion). */
  forgetWorkspace(workspaceId: string): void {
    for (const k of this.members.keys()) if (k.endsWith(`\n${workspaceId}`)) this.members.delete(k);
  }

  async family(id: string): Promise<Family | null> {
    const c = this.families.get(id);
    if (this.fresh(c)) return c.v;
    const v = await this.grants.family(id);
    if (this.families.size > 50_000) this.families.clear();
    this.families.set(id, { v, at: Date.now() });
    return v;
  }

  async revokeFamily(id: string, reason: string): Promise<void> {
    await this.grants.revokeFamily(id, reason);
    this.families.delete(id);
  }

  forgetApiKeys(hashes: string[]): void {
    for (const h of hashes) this.keysByHash.delete(h);
  }

  forgetSession(hash: string): void {
    this.sessions.delete(hash);
  }

  // ---- credentials

  private async fromJwt(token: string): Promise<Principal | null> {
    const c = await this.tokens.verify(token);
    if (!c) return null;
    const fam = await this.family(c.fid);
    if (!fam || fam.revoked_at !== null || fam.user_id !== c.sub) return null;
    const m = await this.membership(c.sub, c.wid);
    if (!m) return null;
    return { userId: c.sub, workspaceId: c.wid, role: m.role, workspaceType: m.type, via: 'jwt', scopes: c.scope.split(' ').filter(Boolean), familyId: c.fid, clientId: c.cid, switchable: !c.cid, expiresAt: c.exp * 1000 };
  }

  private async fromApiKey(key: string): Promise<Principal | null> {
    if (key.length > 200) return null;
    const h = sha256(key);
    let c = this.keysByHash.get(h);
    if (!this.fresh(c)) {
      const row = await this.store.apiKeyByHash(h);
      c = { v: row ? { id: row.id, workspace_id: row.workspace_id, user_id: row.user_id } : null, at: Date.now() };
      if (this.keysByHash.size > 50_000) this.keysByHash.clear();
      this.keysByHash.set(h, c);
    }
    const row = c.v;
    if (!row) return null;
    const m = await this.membership(row.user_id, row.workspace_id);
    if (!m) return null;
    this.keyUses.set(row.id, Date.now());
    return { userId: row.user_id, workspaceId: row.workspace_id, role: m.role, workspaceType: m.type, via: 'api_key', scopes: [...SCOPES], apiKeyId: row.id, switchable: false };
  }

  private async fromSession(token: string): Promise<(Principal & { csrfHash: string }) | null> {
    if (token.length > 200) return null;
    const h = sha256(token);
    let c = this.sessions.get(h);
    if (!this.fresh(c)) {
      c = { v: await this.grants.sessionByHash(h), at: Date.now() };
      if (this.sessions.size > 50_000) this.sessions.clear();
      this.sessions.set(h, c);
    }
    const s = c.v;
    if (!s || s.revoked_at !== null || Number(s.expires_at) <= Date.now()) return null;
    if (s.family_id) {
      const fam = await this.family(s.family_id);
      if (!fam || fam.revoked_at !== null) return null;
    }
    const m = await this.membership(s.user_id, s.workspace_id);
    if (!m) return null;
    return { userId: s.user_id, workspaceId: s.workspace_id, role: m.role, workspaceType: m.type, via: 'session', scopes: [...SCOPES], sessionId: s.id, familyId: s.family_id ?? undefined, switchable: true, expiresAt: Number(s.expires_at), csrfHash: s.csrf_hash };
  }

  /** The bearer credential of a request (header or, where allowed, `?token=`), without the cookie. */
  bearer(req: FastifyRequest, allowQuery: boolean): string | undefined {
    const h = req.headers.authorization;
    if (typeof h === 'string' && /^Bearer\s+/i.test(h)) return h.replace(/^Bearer\s+/i, '').trim();
    const x = req.headers['x-api-key'];
    if (typeof x === 'string' && x) return x.trim();
    if (allowQuery) {
      const q = req.query as Record<string, unknown> | undefined;
      if (typeof q?.token === 'string' && q.token) return q.token;
    }
    return undefined;
  }

  async fromBearer(token: string): Promise<Principal | null> {
    return token.startsWith('wfk_') ? this.fromApiKey(token) : this.fromJwt(token);
  }

  /**
   * Authenticates a request: Bearer JWT or API key (Authorization or
   * X-API-Key), else the session cookie (writes then need the CSRF header,
   * WebSocket upgrades a same-origin Origin). Then applies X-Workspace-Id
   * (on a WebSocket also `?workspace_id=`) and the token's scopes.
   */
  async authenticate(req: FastifyRequest, opts: { allowQueryToken?: boolean; allowCookie?: boolean; csrfExempt?: boolean; websocket?: boolean } = {}): Promise<AuthOutcome> {
    let principal: Principal | null = null;
    const bearer = this.bearer(req, opts.allowQueryToken === true);
    if (bearer !== undefined) {
      principal = await this.fromBearer(bearer);
      if (!principal) return { error: 'invalid' };
    } else if (opts.allowCookie !== false) {
      const cookie = parseCookies(req.headers.cookie)[SESSION_COOKIE];
      if (cookie === undefined) return { error: 'missing' };
      const s = await this.fromSession(cookie);
      if (!s) return { error: 'invalid' };
      if (opts.websocket) {
        if (!sameOrigin(req)) return { error: 'csrf' };
      } else if (!SAFE_METHODS.has(req.method) && !opts.csrfExempt) {
        const got = req.headers[CSRF_HEADER];
        if (typeof got !== 'string' || !sameString(sha256(got), s.csrfHash)) return { error: 'csrf' };
      }
      const { csrfHash: _, ...p } = s;
      principal = p;
    } else return { error: 'missing' };

    // A browser's WebSocket cannot send headers: on /ws the workspace may come as ?workspace_id= (same check).
    const query = req.query as Record<string, unknown> | undefined;
    const want = req.headers[WORKSPACE_HEADER] ?? (opts.websocket && typeof query?.workspace_id === 'string' ? query.workspace_id : undefined);
    if (typeof want === 'string' && want !== '' && want !== principal.workspaceId) {
      if (!principal.switchable) return { error: 'workspace' };
      const m = await this.membership(principal.userId, want);
      if (!m) return { error: 'workspace' };
      principal = { ...principal, workspaceId: want, role: m.role, workspaceType: m.type };
    }
    if (!SAFE_METHODS.has(req.method) && !opts.websocket && !principal.scopes.includes('workflow:write')) return { error: 'scope' };
    return { principal };
  }
}

/** A cookie-authenticated WebSocket must come from a page of this origin (no cross-site socket hijacking). */
function sameOrigin(req: FastifyRequest): boolean {
  const origin = req.headers.origin;
  if (typeof origin !== 'string') return true;
  try {
    return new URL(origin).host.toLowerCase() === String(req.headers.host ?? '').toLowerCase();
  } catch {
    return false;
  }
}

export type { Role, Membership };
