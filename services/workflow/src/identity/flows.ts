import { FULL_SCOPE, SCOPES, type Identity } from './index.ts';
import { HasherBusyError, passwordProblem } from './passwords.ts';
import { pkceS256, sameString } from './secrets.ts';
import { emailProblem, textProblem, type UserRow, type WorkspaceRow } from './store.ts';

export type FlowError = { error: string; description: string; status?: number; retryAfter?: number };

export interface TokenSet {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** Scopes asked for → the granted subset (space separated), or null when one is unknown. */
export function grantScopes(requested: unknown): string | null {
  if (requested === undefined || requested === null || requested === '') return FULL_SCOPE;
  if (typeof requested !== 'string' || requested.length > 1000) return null;
  const want = [...new Set(requested.split(' ').filter(Boolean))];
  if (want.some((s) => !(SCOPES as readonly string[]).includes(s))) return null;
  return SCOPES.filter((s) => want.includes(s)).join(' ');
}

async function issue(id: Identity, fam: { id: string; user_id: string; workspace_id: string; client_id: string | null; scope: string }, refreshToken?: string): Promise<TokenSet> {
  const at = await id.tokens.mint({ sub: fam.user_id, wid: fam.workspace_id, fid: fam.id, scope: fam.scope, cid: fam.client_id ?? undefined });
  return { access_token: at.token, token_type: 'Bearer', expires_in: at.expiresIn, refresh_token: refreshToken ?? (await id.grants.issueRefresh(fam.id)), scope: fam.scope };
}

/** A first-party login: a new token family in the chosen (default: personal) workspace. */
export async function loginTokens(id: Identity, user: UserRow, workspaceId?: string): Promise<TokenSet | FlowError> {
  const wid = workspaceId ?? user.personal_workspace_id;
  const m = await id.membership(user.id, wid);
  if (!m) return { error: 'workspace_forbidden', description: 'You are not a member of that workspace', status: 403 };
  const fam = await id.grants.createFamily({ userId: user.id, workspaceId: wid, clientId: null, scope: FULL_SCOPE, kind: 'login' });
  return issue(id, fam);
}

export async function signup(id: Identity, body: Record<string, unknown>): Promise<{ user: UserRow; workspace: WorkspaceRow } | FlowError> {
  const e = emailProblem(body.email) ?? passwordProblem(body.password) ?? (body.display_name !== undefined ? textProblem(body.display_name, 'display_name', 200) : null);
  if (e) return { error: 'invalid_request', description: e };
  if (await id.store.userByEmail(body.email as string)) return { error: 'email_taken', description: 'An account with this email already exists', status: 409 };
  let hash: string;
  try {
    hash = await id.hasher.hash(body.password as string);
  } catch (err) {
    if (err instanceof HasherBusyError) return { error: 'busy', description: 'Too many sign-ups in progress; retry shortly', status: 503, retryAfter: err.retryAfter };
    throw err;
  }
  const created = await id.store.createUser({ email: body.email as string, passwordHash: hash, displayName: body.display_name as string | undefined });
  if (!created) return { error: 'email_taken', description: 'An account with this email already exists', status: 409 };
  return created;
}

/** Email + password → the user, or a uniform 401 (no hint whether the account exists). */
export async function checkPassword(id: Identity, email: unknown, password: unknown): Promise<UserRow | FlowError> {
  if (typeof email !== 'string' || typeof password !== 'string' || email.length > 254 || Buffer.byteLength(password) > 256) return { error: 'invalid_request', description: 'email and password are required' };
  const user = await id.store.userByEmail(email);
  let ok: boolean;
  try {
    ok = await id.hasher.verify(user?.password_hash, password);
  } catch (err) {
    if (err instanceof HasherBusyError) return { error: 'busy', description: 'Too many logins in progress; retry shortly', status: 503, retryAfter: err.retryAfter };
    throw err;
  }
  if (!ok || !user) return { error: 'invalid_credentials', description: 'Invalid email or password', status: 401 };
  if (user.password_hash && id.hasher.needsRehash(user.password_hash)) await id.store.updateUser(user.id, { password_hash: await id.hasher.hash(password) }).catch(() => {});
  return user;
}

/**
 * authorization_code grant: the code is spent first (single use whatever
 * follows); then client, exact redirect URI, PKCE S256 verifier, and the
 * user's current membership of the workspace are checked.
 */
export async function exchangeCode(id: Identity, p: { code: unknown; redirectUri: unknown; verifier: unknown; clientId?: string }): Promise<TokenSet | FlowError> {
  if (typeof p.code !== 'string' || p.code === '' || p.code.length > 200) return { error: 'invalid_request', description: 'code is required' };
  if (typeof p.verifier !== 'string' || p.verifier === '') return { error: 'invalid_request', description: 'code_verifier is required (PKCE)' };
  if (!/^[A-Za-z0-9\-._~]{43,128}$/.test(p.verifier)) return { error: 'invalid_grant', description: 'code_verifier is malformed' };
  if (typeof p.redirectUri !== 'string' || p.redirectUri === '') return { error: 'invalid_request', description: 'redirect_uri is required' };
  const r = await id.grants.redeemCode(p.code);
  if (!r.ok) return { error: 'invalid_grant', description: r.reason === 'reused' ? 'authorization code was already used; tokens issued from it are revoked' : r.reason === 'expired' ? 'authorization code expired' : 'authorization code is invalid' };
  const row = r.row;
  if (p.clientId !== undefined && row.client_id !== p.clientId) return { error: 'invalid_grant', description: 'authorization code was issued to another client' };
  if (row.redirect_uri !== p.redirectUri) return { error: 'invalid_grant', description: 'redirect_uri does not match the authorization request' };
  if (!sameString(pkceS256(p.verifier), row.code_challenge)) return { error: 'invalid_grant', description: 'code_verifier does not match the code challenge' };
  if (!(await id.membership(row.user_id, row.workspace_id))) return { error: 'invalid_grant', description: 'the user is no longer a member of the workspace' };
  const fam = await id.grants.createFamily({ userId: row.user_id, workspaceId: row.workspace_id, clientId: row.client_id, scope: row.scope, kind: 'oauth' });
  if (!(await id.grants.linkCode(row.code_hash, fam.id))) {
    await id.revokeFamily(fam.id, 'authorization_code_reuse');
    return { error: 'invalid_grant', description: 'authorization code was already used; tokens issued from it are revoked' };
  }
  return issue(id, fam);
}

/** refresh_token grant: rotation with reuse detection; an optional narrower scope. */
export async function refresh(id: Identity, p: { token: unknown; clientId?: string | null; scope?: unknown }): Promise<TokenSet | FlowError> {
  if (typeof p.token !== 'string' || p.token === '' || p.token.length > 200) return { error: 'invalid_request', description: 'refresh_token is required' };
  const r = await id.grants.rotate(p.token, p.clientId);
  if (!r.ok) {
    const d = { reused: 'refresh token was already used; the token family is revoked', revoked: 'refresh token was revoked', expired: 'refresh token expired', client: 'refresh token was issued to another client', invalid: 'refresh token is invalid' }[r.reason];
    return { error: 'invalid_grant', description: d };
  }
  const fam = { ...r.family };
  if (p.scope !== undefined && p.scope !== '') {
    const granted = grantScopes(p.scope);
    const had = fam.scope.split(' ');
    if (granted === null || granted.split(' ').some((s) => !had.includes(s))) return { error: 'invalid_scope', description: 'scope exceeds the original grant' };
    fam.scope = granted;
  }
  if (!(await id.membership(fam.user_id, fam.workspace_id))) {
    await id.revokeFamily(fam.id, 'membership_ended');
    return { error: 'invalid_grant', description: 'the user is no longer a member of the workspace' };
  }
  return issue(id, fam, r.refreshToken);
}
