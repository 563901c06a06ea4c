import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { cloudError, oauthError } from '../identity/errors.ts';
import { checkPassword, exchangeCode, loginTokens, refresh, signup, type FlowError, type TokenSet } from '../identity/flows.ts';
import { CSRF_COOKIE, CSRF_HEADER, parseCookies, SESSION_COOKIE, type Identity } from '../identity/index.ts';
import { sameString, sha256 } from '../identity/secrets.ts';
import { userView, workspaceView } from '../identity/store.ts';
import { cloudRoute, errors, objectBody, principal, ref } from './cloud-common.ts';

function isFlowError(x: unknown): x is FlowError {
  return !!x && typeof x === 'object' && 'error' in x && 'description' in x;
}

function fail(e: FlowError): never {
  throw cloudError(e.status ?? 400, e.error, e.description, {}, e.retryAfter ? { 'Retry-After': String(e.retryAfter) } : {});
}

/** 429 with Retry-After when `key` is over its limit. */
export async function limit(id: Identity, key: string, max: number, shape: 'cloud' | 'oauth' = 'cloud'): Promise<void> {
  const wait = await id.limiter.hit(key, max, id.cfg.rateLimits.windowMs);
  if (!wait) return;
  const headers = { 'Retry-After': String(wait) };
  if (shape === 'oauth') throw oauthError(429, 'rate_limited', `Too many requests; retry in ${wait} s`, headers);
  throw cloudError(429, 'rate_limited', `Too many requests; retry in ${wait} s`, { retry_after: wait }, headers);
}

function cookie(req: FastifyRequest, name: string, value: string, maxAgeSec: number, httpOnly: boolean): string {
  const secure = req.protocol === 'https' ? '; Secure' : '';
  return `${name}=${value}; Path=/; Max-Age=${maxAgeSec}; SameSite=Lax${httpOnly ? '; HttpOnly' : ''}${secure}`;
}

const tokenResponse = {
  type: 'object',
  required: ['access_token', 'token_type'],
  properties: { access_token: { type: 'string' }, token_type: { type: 'string' }, expires_in: { type: 'integer' }, refresh_token: { type: ['string', 'null'] }, scope: { type: 'string' } },
};

/** Sign-up, login, cookie sessions and the first-party token endpoint. */
export function authRoutes(app: FastifyInstance, id: Identity): void {
  const rl = id.cfg.rateLimits;

  cloudRoute(
    app,
    'POST',
    '/api/auth/signup',
    {
      operationId: 'signup',
      tags: ['auth'],
      description: 'Creates an account (email, password ≥ 8 characters, optional display_name) with its personal workspace, and logs it in. Passwords are hashed with argon2id. Rate limited per client address.',
      body: { type: 'object', required: ['email', 'password'], properties: { email: { type: 'string', format: 'email' }, password: { type: 'string', minLength: 8, maxLength: 256 }, display_name: { type: 'string', maxLength: 200 } } },
      response: { 201: { description: 'Account created', type: 'object', properties: { user: { $ref: 'CloudUser#' }, workspace: { $ref: 'Workspace#' }, ...tokenResponse.properties } }, ...errors(400, 403, 409, 429, 503) },
    },
    async (req, reply) => {
      await limit(id, `signup:ip:${req.ip}`, rl.signupPerIp);
      if (!id.cfg.signup) throw cloudError(403, 'signup_disabled', 'Sign-up is disabled on this server');
      const r = await signup(id, objectBody(req));
      if (isFlowError(r)) fail(r);
      const tokens = await loginTokens(id, r.user);
      if (isFlowError(tokens)) fail(tokens);
      return reply.code(201).send({ user: userView(r.user), workspace: workspaceView(r.workspace, 1, 'owner'), ...tokens });
    },
    'public',
  );

  cloudRoute(
    app,
    'POST',
    '/api/auth/login',
    {
      operationId: 'login',
      tags: ['auth'],
      description: 'Exchanges email and password for an access token (JWT, bound to the personal workspace or to `workspace_id`) and a rotating refresh token. Wrong credentials answer 401 whether or not the account exists. Rate limited per client address and per account.',
      body: { type: 'object', required: ['email', 'password'], properties: { email: { type: 'string' }, password: { type: 'string' }, workspace_id: { type: 'string' } } },
      response: { 200: { description: 'Logged in', type: 'object', properties: { user: { $ref: 'CloudUser#' }, workspace: { $ref: 'Workspace#' }, ...tokenResponse.properties } }, ...errors(400, 401, 403, 429, 503) },
    },
    async (req) => {
      const b = objectBody(req);
      await limit(id, `login:ip:${req.ip}`, rl.loginPerIp);
      const acct = typeof b.email === 'string' ? `login:acct:${b.email.trim().toLowerCase().slice(0, 254)}` : undefined;
      if (acct) {
        const wait = await id.limiter.blocked(acct, rl.loginPerAccount);
        if (wait) throw cloudError(429, 'rate_limited', `Too many failed logins for this account; retry in ${wait} s`, { retry_after: wait }, { 'Retry-After': String(wait) });
      }
      const user = await checkPassword(id, b.email, b.password);
      if (isFlowError(user)) {
        if (acct && user.error === 'invalid_credentials') await id.limiter.hit(acct, rl.loginPerAccount, rl.windowMs);
        fail(user);
      }
      if (acct) await id.limiter.reset(acct);
      const wid = typeof b.workspace_id === 'string' && b.workspace_id ? b.workspace_id : undefined;
      const tokens = await loginTokens(id, user, wid);
      if (isFlowError(tokens)) fail(tokens);
      // Left or deleted since the tokens were made (a concurrent request): as if it had been before.
      const m = await id.membership(user.id, wid ?? user.personal_workspace_id);
      if (!m) fail({ error: 'workspace_forbidden', description: 'You are not a member of that workspace', status: 403 });
      return { user: userView(user), workspace: workspaceView(m, await id.store.memberCount(m.id), m.role), ...tokens };
    },
    'public',
  );

  cloudRoute(
    app,
    'GET',
    '/api/auth/session',
    { operationId: 'getAuthSession', summary: 'Get the current authentication session', tags: ['auth'], description: 'Returns the current session state for the authenticated user, including user identity and active workspace.', response: { 200: { description: 'Session info', type: 'object', required: ['user'], properties: { user: { $ref: 'CloudUser#' }, workspace: { $ref: 'Workspace#' }, expires_at: { type: 'string', format: 'date-time' } } } } },
    async (req) => {
      const p = principal(req);
      const user = await id.store.userById(p.userId);
      const m = await id.membership(p.userId, p.workspaceId);
      if (!user || !m) throw cloudError(401, 'unauthorized', 'Authentication required');
      const out: Record<string, unknown> = { user: userView(user), workspace: workspaceView(m, await id.store.memberCount(m.id), m.role) };
      if (p.expiresAt) out.expires_at = new Date(p.expiresAt).toISOString();
      return out;
    },
  );

  cloudRoute(
    app,
    'POST',
    '/api/auth/session',
    {
      operationId: 'createAuthSession',
      summary: 'Create a session cookie',
      tags: ['auth'],
      description:
        'Creates a session cookie from the bearer token in the Authorization header. Returns a Set-Cookie header with a secure HttpOnly session cookie. Cookie authentication is not allowed for this endpoint. The CSRF token that cookie-authenticated writes must send in X-CSRF-Token is returned as `csrf_token` and in the readable `wf_csrf` cookie.',
      response: { 200: { description: 'Session created', type: 'object', required: ['success'], properties: { success: { type: 'boolean' }, expiresIn: { type: 'integer' }, csrf_token: { type: 'string' } } }, ...errors(400, 401) },
    },
    async (req, reply) => {
      const bearer = id.bearer(req, false);
      if (bearer === undefined) throw cloudError(401, 'unauthorized', 'A bearer token in the Authorization header is required; cookie authentication is not allowed for this endpoint');
      if (bearer.startsWith('wfk_')) throw cloudError(400, 'invalid_token', 'An API key cannot create a session; use an access token');
      const auth = await id.authenticate(req, { allowCookie: false });
      if ('error' in auth) throw cloudError(400, 'invalid_token', 'The bearer token is invalid or expired');
      const p = auth.principal;
      if (p.clientId) throw cloudError(400, 'invalid_token', "A third-party client's token cannot create a session");
      const s = await id.grants.createSession({ userId: p.userId, workspaceId: p.workspaceId, familyId: p.familyId ?? null }, id.cfg.sessionTtlMs);
      const maxAge = Math.floor(id.cfg.sessionTtlMs / 1000);
      reply.header('Set-Cookie', [cookie(req, SESSION_COOKIE, s.token, maxAge, true), cookie(req, CSRF_COOKIE, s.csrf, maxAge, false)]);
      reply.header('Cache-Control', 'no-store');
      return { success: true, expiresIn: maxAge, csrf_token: s.csrf };
    },
    'public',
  );

  cloudRoute(
    app,
    'DELETE',
    '/api/auth/session',
    { operationId: 'deleteAuthSession', summary: 'Delete session cookie (logout)', tags: ['auth'], description: 'Clears the session cookie and revokes the session on the server (a cookie-authenticated call must carry X-CSRF-Token).', response: { 200: { description: 'Session deleted', type: 'object', required: ['success'], properties: { success: { type: 'boolean' } } }, ...errors(403) } },
    async (req, reply) => {
      const token = parseCookies(req.headers.cookie)[SESSION_COOKIE];
      if (token !== undefined && token.length <= 200) {
        const row = await id.grants.sessionByHash(sha256(token));
        if (row && row.revoked_at === null) {
          const got = req.headers[CSRF_HEADER];
          if (typeof got !== 'string' || !sameString(sha256(got), row.csrf_hash)) throw cloudError(403, 'csrf_failed', 'Missing or invalid X-CSRF-Token header');
          await id.grants.revokeSession(row.id);
          id.forgetSession(sha256(token));
        }
      }
      reply.header('Set-Cookie', [cookie(req, SESSION_COOKIE, '', 0, true), cookie(req, CSRF_COOKIE, '', 0, false)]);
      return { success: true };
    },
    'public',
  );

  cloudRoute(
    app,
    'POST',
    '/api/auth/token',
    {
      operationId: 'createAuthToken',
      summary: 'Exchange credentials for an access token',
      tags: ['auth'],
      description:
        'Exchanges authentication credentials (e.g. an authorization code) for an access token. authorization_code needs `code`, `redirect_uri` and the PKCE `code_verifier` (and `client_id` when known); refresh_token rotates the refresh token (a reused one revokes its family).',
      body: { type: 'object', required: ['grant_type'], properties: { grant_type: { type: 'string', enum: ['authorization_code', 'refresh_token'] }, code: { type: 'string' }, refresh_token: { type: 'string' }, redirect_uri: { type: 'string', format: 'uri' }, code_verifier: { type: 'string' }, client_id: { type: 'string' } } },
      response: { 200: { description: 'Token response', ...tokenResponse }, ...errors(400, 429) },
    },
    async (req, reply) => {
      await limit(id, `token:ip:${req.ip}`, rl.tokenPerIp);
      const b = objectBody(req);
      const clientId = typeof b.client_id === 'string' ? b.client_id : undefined;
      let r: TokenSet | FlowError;
      if (b.grant_type === 'authorization_code') r = await exchangeCode(id, { code: b.code, redirectUri: b.redirect_uri, verifier: b.code_verifier, clientId });
      else if (b.grant_type === 'refresh_token') r = await refresh(id, { token: b.refresh_token, clientId });
      else r = { error: 'unsupported_grant_type', description: 'grant_type must be authorization_code or refresh_token' };
      reply.header('Cache-Control', 'no-store').header('Pragma', 'no-cache');
      if (isFlowError(r)) fail(r);
      return r;
    },
    'public',
  );

  cloudRoute(app, 'GET', '/.well-known/jwks.json', { operationId: 'getJwks', summary: 'Get JSON Web Key Set', tags: ['auth'], description: 'Returns the JSON Web Key Set (JWKS) used to verify JWTs issued by the cloud authentication service. Retired keys stay listed until the last token they signed has expired.', response: { 200: { description: 'JWKS', type: 'object', required: ['keys'], properties: { keys: { type: 'array', items: { type: 'object', additionalProperties: true } } } } } }, async (_req, reply) => {
    reply.header('Cache-Control', 'public, max-age=300');
    return id.keys.jwks();
  }, 'public');
}

export { ref };
