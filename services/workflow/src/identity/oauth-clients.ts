import type { Kysely } from 'kysely';
import { newId, randomToken, sha256 } from './secrets.ts';
import { storable } from './store.ts';
import { codePointsOver } from './text-length.ts';

export interface ClientRow {
  client_id: string;
  client_name: string | null;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  application_type: 'native' | 'web';
  created_at: number;
}

export interface AuthRequestRow {
  id: string;
  csrf_hash: string;
  client_id: string;
  redirect_uri: string;
  scope: string;
  state: string;
  code_challenge: string;
  resource: string | null;
  expires_at: number;
  consumed_at: number | null;
  /** SHA-256 of the value in the starting browser's cookie (the request belongs to that browser). */
  binder_hash: string | null;
  /** The user who started or resumed it: only they may approve it. */
  user_id: string | null;
}

export class RegistrationError extends Error {
  constructor(
    readonly error: 'invalid_redirect_uri' | 'invalid_client_metadata',
    message: string,
  ) {
    super(message);
  }
}

/** Names a third party may not register under (compared NFKC-folded, case-insensitively, ignoring spaces and punctuation). */
const RESERVED_NAMES = ['comfy', 'comfyui', 'comfyorg', 'workflow', 'claude', 'claudeai', 'anthropic', 'chatgpt', 'openai', 'cursor', 'vscode', 'visualstudiocode', 'github', 'githubcopilot', 'copilot', 'google', 'gemini', 'microsoft'];

const ALLOWED_FIELDS = new Set(['redirect_uris', 'client_name', 'application_type', 'token_endpoint_auth_method', 'grant_types', 'response_types']);
const REJECTED_FIELDS = ['scope', 'resource_grants', 'client_uri', 'logo_uri', 'tos_uri', 'policy_uri', 'software_id', 'software_version', 'contacts', 'jwks', 'jwks_uri'];

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
/** A private-use URI scheme shaped as a reversed domain name (RFC 8252 §7.1), e.g. `com.example.app`. */
const REVERSE_DNS_SCHEME = /^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+$/;

/**
 * A name as a reader sees it: compatibility forms unified (NFKC: full-width and
 * styled letters), accents taken off (NFKD, then combining marks dropped),
 * invisible characters dropped (format characters such as zero-width spaces
 * and joiners, word joiners, byte-order marks, soft hyphens, variation
 * selectors, Hangul fillers), and case, spaces, punctuation and symbols ignored.
 */
export function fold(s: string): string {
  return s
    .normalize('NFKC')
    .normalize('NFKD')
    .replace(/[\p{M}\p{Cf}\p{Cc}\p{Z}\s\p{P}\p{S}_\u115f\u1160\u3164\uffa0]+/gu, '')
    .normalize('NFKC')
    .toLowerCase();
}

/** Checks one redirect URI against the application type's policy; the reason it is refused, or null. */
export function redirectUriProblem(uri: unknown, appType: 'native' | 'web', webHosts: string[]): string | null {
  if (typeof uri !== 'string' || uri.length === 0 || uri.length > 2000) return 'redirect URI must be a non-empty string of at most 2000 characters';
  if (/[\u0000-\u0020\u007f]/.test(uri)) return 'redirect URI contains whitespace or control characters';
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return 'redirect URI is not an absolute URI';
  }
  if (u.hash || uri.includes('#')) return 'redirect URI must not contain a fragment';
  if (u.username || u.password) return 'redirect URI must not contain credentials';
  const scheme = u.protocol.slice(0, -1);
  if (appType === 'native') {
    if (scheme === 'http') return LOOPBACK_HOSTS.has(u.hostname) ? null : 'native clients may only redirect to loopback (127.0.0.1, [::1], localhost) over http';
    if (scheme === 'https') return 'native clients redirect to loopback http or a private-use scheme';
    if (REVERSE_DNS_SCHEME.test(scheme)) return null;
    return 'private-use redirect schemes must be reverse domain names (e.g. com.example.app:/callback)';
  }
  if (scheme !== 'https') return 'web clients must redirect over https';
  if (!webHosts.includes(u.hostname.toLowerCase())) return `host ${u.hostname} is not allowed for web clients`;
  return null;
}

/** RFC 7591 request → the client to store; throws RegistrationError. */
export function validateRegistration(body: unknown, webHosts: string[]): Omit<ClientRow, 'client_id' | 'created_at'> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new RegistrationError('invalid_client_metadata', 'the body must be a JSON object');
  const b = body as Record<string, unknown>;
  for (const f of REJECTED_FIELDS) if (f in b) throw new RegistrationError('invalid_client_metadata', `${f} is server-owned or unsupported and must not be sent`);
  for (const k of Object.keys(b)) if (!ALLOWED_FIELDS.has(k)) throw new RegistrationError('invalid_client_metadata', `unsupported client metadata: ${k.slice(0, 100)}`);
  const appType = b.application_type;
  if (appType !== 'native' && appType !== 'web') throw new RegistrationError('invalid_client_metadata', 'application_type is required and must be native or web');
  if (b.token_endpoint_auth_method !== undefined && b.token_endpoint_auth_method !== 'none') throw new RegistrationError('invalid_client_metadata', 'token_endpoint_auth_method must be none (public clients only)');
  let name: string | null = null;
  if (b.client_name !== undefined && b.client_name !== null) {
    if (typeof b.client_name !== 'string' || codePointsOver(b.client_name, 100) || /[\u0000-\u001f\u007f]/.test(b.client_name) || /[\ud800-\udfff]/.test(b.client_name.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))) {
      throw new RegistrationError('invalid_client_metadata', 'client_name must be a string of at most 100 characters');
    }
    const folded = fold(b.client_name);
    if (RESERVED_NAMES.some((r) => folded === r || folded.startsWith(r))) throw new RegistrationError('invalid_client_metadata', 'client_name is reserved');
    name = b.client_name.trim() || null;
  }
  const grants = b.grant_types ?? ['authorization_code', 'refresh_token'];
  if (!Array.isArray(grants) || grants.length === 0 || grants.some((g) => g !== 'authorization_code' && g !== 'refresh_token') || !grants.includes('authorization_code')) {
    throw new RegistrationError('invalid_client_metadata', 'grant_types may only contain authorization_code and refresh_token, and must contain authorization_code');
  }
  const responses = b.response_types ?? ['code'];
  if (!Array.isArray(responses) || responses.length === 0 || responses.some((r) => r !== 'code')) throw new RegistrationError('invalid_client_metadata', 'response_types may only contain code');
  const uris = b.redirect_uris;
  if (!Array.isArray(uris) || uris.length < 1 || uris.length > 5) throw new RegistrationError('invalid_redirect_uri', 'redirect_uris must list 1 to 5 URIs');
  for (const u of uris) {
    const problem = redirectUriProblem(u, appType, webHosts);
    if (problem) throw new RegistrationError('invalid_redirect_uri', problem);
  }
  return { client_name: name, redirect_uris: [...new Set(uris as string[])], grant_types: [...new Set(grants as string[])], response_types: ['code'], application_type: appType };
}

/** Registered clients and pending authorization requests. */
export class OAuthClients {
  private readonly cache = new Map<string, ClientRow>();

  constructor(private readonly db: () => Kysely<any>) {}

  async register(c: Omit<ClientRow, 'client_id' | 'created_at'>): Promise<ClientRow> {
    const row: ClientRow = { ...c, client_id: `dyn_${randomToken(16)}`, created_at: Date.now() };
    await this.db()
      .insertInto('id_oauth_clients')
      .values({ ...row, redirect_uris: JSON.stringify(row.redirect_uris), grant_types: JSON.stringify(row.grant_types), response_types: JSON.stringify(row.response_types) })
      .execute();
    return row;
  }

  /** Clients are insert-only, so a found one is cached for good (bounded). */
  async get(clientId: unknown): Promise<ClientRow | null> {
    if (!storable(clientId, 200)) return null;
    const hit = this.cache.get(clientId);
    if (hit) return hit;
    const r = await this.db().selectFrom('id_oauth_clients').selectAll().where('client_id', '=', clientId).executeTakeFirst();
    if (!r) return null;
    const row = { ...r, redirect_uris: JSON.parse(r.redirect_uris), grant_types: JSON.parse(r.grant_types), response_types: JSON.parse(r.response_types), created_at: Number(r.created_at) } as ClientRow;
    if (this.cache.size > 5000) this.cache.clear();
    this.cache.set(clientId, row);
    return row;
  }

  /** `binder`: the value the starting browser keeps in a cookie; `r.user_id` the user when one started it. */
  async createRequest(r: Omit<AuthRequestRow, 'id' | 'csrf_hash' | 'expires_at' | 'consumed_at' | 'binder_hash'>, ttlMs: number): Promise<{ id: string; csrf: string; binder: string }> {
    const id = newId();
    const csrf = randomToken(24);
    const binder = randomToken(24);
    const now = Date.now();
    await this.db()
      .insertInto('id_oauth_requests')
      .values({ ...r, id, csrf_hash: sha256(csrf), binder_hash: sha256(binder), created_at: now, expires_at: now + ttlMs, consumed_at: null })
      .execute();
    return { id, csrf, binder };
  }

  /** Binds an open request to the user resuming it; false when another user holds it (or it was used). */
  async bindUser(id: string, userId: string): Promise<boolean> {
    const upd = await this.db()
      .updateTable('id_oauth_requests')
      .set({ user_id: userId })
      .where('id', '=', id)
      .where('consumed_at', 'is', null)
      .where((eb) => eb.or([eb('user_id', 'is', null), eb('user_id', '=', userId)]))
      .executeTakeFirst();
    return Number(upd.numUpdatedRows) > 0;
  }

  async request(id: unknown): Promise<AuthRequestRow | null> {
    if (typeof id !== 'string' || !/^[0-9a-f-]{36}$/i.test(id)) return null;
    return ((await this.db().selectFrom('id_oauth_requests').selectAll().where('id', '=', id.toLowerCase()).executeTakeFirst()) as AuthRequestRow | undefined) ?? null;
  }

  /** A new per-row CSRF token for a resumed request (the old one is replaced). */
  async refreshCsrf(id: string): Promise<string> {
    const csrf = randomToken(24);
    await this.db().updateTable('id_oauth_requests').set({ csrf_hash: sha256(csrf) }).where('id', '=', id).where('consumed_at', 'is', null).execute();
    return csrf;
  }

  /** Marks the request consumed by the user it is bound to; false when it already was (single use for allow and deny alike) or is not theirs. */
  async consume(id: string, userId: string): Promise<boolean> {
    const upd = await this.db().updateTable('id_oauth_requests').set({ consumed_at: Date.now() }).where('id', '=', id).where('consumed_at', 'is', null).where('user_id', '=', userId).executeTakeFirst();
    return Number(upd.numUpdatedRows) > 0;
  }

  async saveConsent(userId: string, clientId: string, workspaceId: string, scope: string): Promise<void> {
    const now = Date.now();
    await this.db()
      .insertInto('id_oauth_consents')
      .values({ user_id: userId, client_id: clientId, workspace_id: workspaceId, scope, updated_at: now })
      .onConflict((oc) => oc.columns(['user_id', 'client_id', 'workspace_id']).doUpdateSet({ scope, updated_at: now }))
      .execute();
  }
}

export { sha256 };
