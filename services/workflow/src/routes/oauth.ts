import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { cloudError, NO_STORE, oauthError } from '../identity/errors.ts';
import { exchangeCode, grantScopes, refresh } from '../identity/flows.ts';
import { parseCookies, SCOPES, type Identity } from '../identity/index.ts';
import { RegistrationError, validateRegistration } from '../identity/oauth-clients.ts';
import { sameString, sha256 } from '../identity/secrets.ts';
import { storable } from '../identity/store.ts';
import { limit } from './auth.ts';
import { cloudRoute, errors, objectBody } from './cloud-common.ts';

const CODE_CHALLENGE = /^[A-Za-z0-9\-._~]{43,128}$/;

function withParams(uri: string, params: Record<string, string>): string {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) u.searchParams.append(k, v);
  return u.toString();
}

// Parameter names are the client's: objects without a prototype, so `constructor` or `__proto__` are plain keys.
function query(req: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of Object.entries((req.query ?? {}) as Record<string, unknown>)) {
    if (Array.isArray(v)) throw cloudError(400, 'invalid_request', `parameter ${k.slice(0, 50)} must not be repeated`);
    if (typeof v === 'string') out[k] = v;
  }
  return out;
}

/** Form body of the token endpoint: every parameter once (RFC 6749 §3.2). */
function parseForm(text: string): Record<string, string> | 'repeated' {
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of new URLSearchParams(text)) {
    if (k in out) return 'repeated';
    out[k] = v;
  }
  return out;
}

/** Consent needs the user: a login token or session, not an API key or another OAuth client's token. */
function firstParty(req: FastifyRequest): boolean {
  const p = req.principal;
  return !!p && p.via !== 'api_key' && !p.clientId;
}

/** The OAuth 2.1 authorization server: metadata, authorize (consent), token, dynamic registration. */
export async function oauthRoutes(app: FastifyInstance, id: Identity): Promise<void> {
  // Built from configured origins only (a forged Host cannot enter them), so shared caches may keep them; when
  // the loopback names each get their own issuer, the answer varies by Host and says so.
  const metaHeaders = (req: FastifyRequest, reply: FastifyReply) => {
    reply.header('Cache-Control', 'public, max-age=300');
    if (id.baseUrlVaries(req)) reply.header('Vary', 'Host');
  };

  cloudRoute(
    app,
    'GET',
    '/.well-known/oauth-authorization-server',
    { operationId: 'getOAuthAuthorizationServer', summary: '[cloud-only] OAuth 2.1 authorization-server metadata (RFC 8414)', tags: ['auth'], description: 'Public metadata document for OAuth 2.1 clients. Cached 5 minutes.', response: { 200: { description: 'Authorization-server metadata', type: 'object', additionalProperties: true }, ...errors(404) } },
    async (req, reply) => {
      const base = id.baseUrl(req);
      metaHeaders(req, reply);
      return {
        issuer: base,
        authorization_endpoint: `${base}/oauth/authorize`,
        token_endpoint: `${base}/oauth/token`,
        jwks_uri: `${base}/.well-known/jwks.json`,
        registration_endpoint: `${base}/oauth/register`,
        response_types_supported: ['code'],
        response_modes_supported: ['query'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none'],
        scopes_supported: [...SCOPES],
        authorization_response_iss_parameter_supported: true,
      };
    },
    'public',
  );

  cloudRoute(
    app,
    'GET',
    '/.well-known/oauth-protected-resource',
    { operationId: 'getOAuthProtectedResource', summary: '[cloud-only] OAuth 2.1 protected-resource metadata (RFC 9728)', tags: ['auth'], description: 'Public metadata describing the currently advertised protected resource. Cached 5 minutes.', response: { 200: { description: 'Protected-resource metadata', type: 'object', additionalProperties: true }, ...errors(404) } },
    async (req, reply) => {
      const base = id.baseUrl(req);
      metaHeaders(req, reply);
      return { resource: base, authorization_servers: [base], scopes_supported: [...SCOPES], bearer_methods_supported: ['header'], resource_name: 'Workflow execution service' };
    },
    'public',
  );

  const challenge = async (req: FastifyRequest, requestId: string, csrf: string, clientId: string, scope: string) => {
    const p = req.principal!;
    const client = await id.clients.get(clientId);
    const ms = await id.store.memberships(p.userId);
    return {
      oauth_request_id: requestId,
      csrf_token: csrf,
      client_display_name: client?.client_name ?? clientId,
      resource_display_name: 'Workflow execution service',
      scopes: scope.split(' ').filter(Boolean),
      workspaces: ms.map((m) => ({ id: m.id, name: m.name, type: m.type, role: m.role === 'owner' ? 'owner' : 'member' })),
    };
  };

  /** One cookie per pending request (several may be open in one browser), named after it. */
  const binderCookie = (requestId: string) => `wf_oauth_${requestId.toLowerCase()}`;

  const toLogin = (reply: FastifyReply, requestId: string) => {
    const sep = id.cfg.loginUrl.includes('?') ? '&' : '?';
    return reply.code(302).header('Location', `${id.cfg.loginUrl}${sep}oauth_request_id=${encodeURIComponent(requestId)}`).header('Cache-Control', 'no-store').send();
  };

  cloudRoute(
    app,
    'GET',
    '/oauth/authorize',
    {
      operationId: 'getOAuthAuthorize',
      summary: '[cloud-only] Begin or resume an OAuth 2.1 authorization request',
      tags: ['auth'],
      description:
        'Two modes. Initial entry (OAuth params present): validates client, exact redirect URI, state, PKCE S256 challenge, scopes and resource, persists a server-side authorization request, and either redirects a caller without a session to the login page carrying only `oauth_request_id`, or returns the JSON consent challenge. Resume (`oauth_request_id`): loads the request, fails closed if expired/consumed/unknown, returns the consent challenge.',
      querystring: { type: 'object', properties: Object.fromEntries(['response_type', 'client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method', 'resource', 'oauth_request_id'].map((k) => [k, { type: 'string' }])) },
      response: { 200: { description: 'Consent challenge', type: 'object', additionalProperties: true }, 302: { description: 'Redirect to login or to the client with an error' }, ...errors(400, 404) },
    },
    async (req, reply) => {
      reply.header('Cache-Control', 'no-store');
      const q = query(req);
      if (q.oauth_request_id !== undefined) {
        const row = await id.clients.request(q.oauth_request_id);
        if (!row) throw cloudError(400, 'invalid_request', 'Unknown authorization request');
        if (row.consumed_at !== null) throw cloudError(400, 'invalid_request', 'The authorization request was already used');
        if (Number(row.expires_at) <= Date.now()) throw cloudError(400, 'invalid_request', 'The authorization request expired');
        if (!firstParty(req)) return toLogin(reply, row.id);
        // Only the browser that started the request (its cookie) or the user who started it may resume it: an id
        // that leaked (a log, a shared link) gives no one else a CSRF token to approve it in their own account.
        const userId = req.principal!.userId;
        const ownBrowser = row.binder_hash !== null && sameString(sha256(parseCookies(req.headers.cookie)[binderCookie(row.id)] ?? ''), row.binder_hash);
        if (row.user_id !== null ? row.user_id !== userId : !ownBrowser) throw cloudError(400, 'invalid_request', 'This authorization request was started in another browser session; start it again from the application');
        if (!(await id.clients.bindUser(row.id, userId))) throw cloudError(400, 'invalid_request', 'The authorization request was already used');
        const csrf = await id.clients.refreshCsrf(row.id);
        return challenge(req, row.id, csrf, row.client_id, row.scope);
      }
      const client = await id.clients.get(q.client_id);
      if (!client) throw cloudError(400, 'invalid_client', 'Unknown client_id');
      if (q.redirect_uri === undefined || !client.redirect_uris.includes(q.redirect_uri)) throw cloudError(400, 'invalid_redirect_uri', 'redirect_uri does not match a registered redirect URI exactly');
      if (!q.state) throw cloudError(400, 'invalid_request', 'state is required');
      if (!storable(q.state, 1000)) throw cloudError(400, 'invalid_request', 'state is too long or contains invalid characters');
      const fail = (error: string, description: string) => reply.code(302).header('Location', withParams(q.redirect_uri!, { error, error_description: description, state: q.state!, iss: id.baseUrl(req) })).send();
      if (q.response_type !== 'code') return fail('unsupported_response_type', 'response_type must be code');
      if (!q.code_challenge) return fail('invalid_request', 'code_challenge is required (PKCE)');
      if (q.code_challenge_method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256');
      if (!CODE_CHALLENGE.test(q.code_challenge)) return fail('invalid_request', 'code_challenge is malformed');
      const scope = grantScopes(q.scope);
      if (scope === null || scope === '') return fail('invalid_scope', `supported scopes: ${SCOPES.join(' ')}`);
      const base = id.baseUrl(req);
      if (q.resource !== undefined && q.resource.replace(/\/+$/, '') !== base) return fail('invalid_target', 'unknown resource');
      const starter = firstParty(req) ? req.principal!.userId : null;
      const { id: requestId, csrf, binder } = await id.clients.createRequest({ client_id: client.client_id, redirect_uri: q.redirect_uri, scope, state: q.state, code_challenge: q.code_challenge, resource: q.resource ?? null, user_id: starter }, id.cfg.requestTtlMs);
      // The request belongs to this browser: the login page's resume must come with this cookie.
      const secure = req.protocol === 'https' ? '; Secure' : '';
      reply.header('Set-Cookie', `${binderCookie(requestId)}=${binder}; Path=/oauth; HttpOnly; SameSite=Lax; Max-Age=${Math.ceil(id.cfg.requestTtlMs / 1000)}${secure}`);
      if (!firstParty(req)) return toLogin(reply, requestId);
      return challenge(req, requestId, csrf, client.client_id, scope);
    },
    'optional',
  );

  cloudRoute(
    app,
    'POST',
    '/oauth/authorize',
    {
      operationId: 'postOAuthAuthorize',
      summary: '[cloud-only] Submit OAuth consent decision',
      tags: ['auth'],
      description:
        'JSON-only consent submission. The handler verifies the per-row CSRF token, atomically marks the authorization request consumed (single-use covers both allow and deny paths), re-checks workspace membership, then returns the redirect URL: `code` + `state` (+ `iss`) for allow, `error=access_denied` + `state` for deny.',
      body: { type: 'object', required: ['oauth_request_id', 'csrf_token', 'decision', 'workspace_id'], properties: { oauth_request_id: { type: 'string', format: 'uuid' }, csrf_token: { type: 'string' }, decision: { type: 'string', enum: ['allow', 'deny'] }, workspace_id: { type: 'string' } } },
      response: { 200: { description: 'Redirect URL', type: 'object', required: ['redirect_url'], properties: { redirect_url: { type: 'string', format: 'uri' } } }, ...errors(400, 403, 404) },
    },
    async (req, reply) => {
      reply.header('Cache-Control', 'no-store');
      const p = req.principal!;
      if (!firstParty(req)) throw cloudError(403, 'forbidden', 'Consent is given by the user (login token or session), not by an API key or another client');
      const b = objectBody(req);
      for (const k of ['oauth_request_id', 'csrf_token', 'workspace_id'] as const) if (typeof b[k] !== 'string' || b[k] === '') throw cloudError(400, 'invalid_request', `${k} is required`);
      if (b.decision !== 'allow' && b.decision !== 'deny') throw cloudError(400, 'invalid_request', 'decision must be allow or deny');
      const row = await id.clients.request(b.oauth_request_id);
      if (!row) throw cloudError(400, 'invalid_request', 'Unknown authorization request');
      if (!sameString(sha256(b.csrf_token as string), row.csrf_hash)) throw cloudError(400, 'csrf_mismatch', 'csrf_token does not match the authorization request');
      if (Number(row.expires_at) <= Date.now()) throw cloudError(400, 'invalid_request', 'The authorization request expired');
      // Consumed only by the user it is bound to (who started it, or resumed it in the browser that did).
      if (!(await id.clients.consume(row.id, p.userId))) {
        if (row.user_id !== null && row.user_id !== p.userId) throw cloudError(400, 'invalid_request', 'This authorization request belongs to another session');
        throw cloudError(400, 'invalid_request', row.user_id === null ? 'Resume the authorization request (GET /oauth/authorize?oauth_request_id=…) in the browser that started it first' : 'The authorization request was already used');
      }
      const iss = id.baseUrl(req);
      if (b.decision === 'deny') return { redirect_url: withParams(row.redirect_uri, { error: 'access_denied', error_description: 'The user denied the request', state: row.state, iss }) };
      const m = await id.membership(p.userId, b.workspace_id as string);
      // Authenticated, but not allowed to grant access to that workspace: 403, as the reference's consent endpoint.
      if (!m) throw cloudError(403, 'workspace_inaccessible', 'You are not a member of that workspace, so you cannot grant access to it');
      const code = await id.grants.createCode({ client_id: row.client_id, user_id: p.userId, workspace_id: m.id, redirect_uri: row.redirect_uri, scope: row.scope, code_challenge: row.code_challenge }, id.cfg.codeTtlMs);
      await id.clients.saveConsent(p.userId, row.client_id, m.id, row.scope);
      return { redirect_url: withParams(row.redirect_uri, { code, state: row.state, iss }) };
    },
    'required',
    // The per-request csrf_token in the body is this endpoint's CSRF protection.
    { csrfExempt: true, firstParty: true },
  );

  await app.register(async (child) => {
    child.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_req, body, done) => done(null, parseForm(body as string)));

    cloudRoute(
      child,
      'POST',
      '/oauth/token',
      {
        operationId: 'postOAuthToken',
        summary: '[cloud-only] Exchange authorization code or refresh token for a resource-bound access token',
        tags: ['auth'],
        description:
          'OAuth 2.1 token endpoint (RFC 6749 §3.2). Public clients only — `client_secret` is rejected. authorization_code needs the PKCE S256 `code_verifier`; codes are single-use (a replay revokes the tokens minted from the code). refresh_token rotates; presenting an already-rotated token revokes the entire family. Every answer carries Cache-Control: no-store and Pragma: no-cache.',
        consumes: ['application/x-www-form-urlencoded'],
        body: { type: 'object', required: ['grant_type', 'client_id'], properties: Object.fromEntries(['grant_type', 'client_id', 'code', 'redirect_uri', 'code_verifier', 'refresh_token', 'scope', 'client_secret'].map((k) => [k, { type: 'string' }])) },
        response: { 200: { description: 'New token pair', type: 'object', additionalProperties: true }, 400: { description: 'RFC 6749 §5.2 error', type: 'object', required: ['error'], properties: { error: { type: 'string' }, error_description: { type: 'string' } } }, ...errors(404) },
      },
      async (req, reply) => {
        await limit(id, `token:ip:${req.ip}`, id.cfg.rateLimits.tokenPerIp, 'oauth');
        const ct = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        if (ct !== 'application/x-www-form-urlencoded') throw oauthError(400, 'invalid_request', 'the body must be application/x-www-form-urlencoded');
        const b = req.body as Record<string, string> | 'repeated' | undefined;
        if (b === 'repeated') throw oauthError(400, 'invalid_request', 'a parameter was repeated');
        if (!b || typeof b !== 'object') throw oauthError(400, 'invalid_request', 'grant_type and client_id are required');
        if ('client_secret' in b) throw oauthError(400, 'invalid_client', 'client_secret is not accepted: public clients only');
        if (req.headers.authorization) throw oauthError(400, 'invalid_client', 'client authentication is not accepted: public clients only');
        if (!b.grant_type) throw oauthError(400, 'invalid_request', 'grant_type is required');
        if (!b.client_id) throw oauthError(400, 'invalid_request', 'client_id is required');
        const client = await id.clients.get(b.client_id);
        if (!client) throw oauthError(400, 'invalid_client', 'unknown client_id');
        if (b.grant_type !== 'authorization_code' && b.grant_type !== 'refresh_token') throw oauthError(400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
        if (!client.grant_types.includes(b.grant_type)) throw oauthError(400, 'unauthorized_client', 'the client may not use this grant type');
        const r =
          b.grant_type === 'authorization_code'
            ? await exchangeCode(id, { code: b.code, redirectUri: b.redirect_uri, verifier: b.code_verifier, clientId: client.client_id })
            : await refresh(id, { token: b.refresh_token, clientId: client.client_id, scope: b.scope });
        if ('description' in r) throw oauthError(400, r.error, r.description);
        reply.headers(NO_STORE);
        return r;
      },
      'public',
    );
  });

  cloudRoute(
    app,
    'POST',
    '/oauth/register',
    {
      operationId: 'postOAuthRegister',
      summary: '[cloud-only] Dynamic Client Registration (RFC 7591)',
      tags: ['auth'],
      description:
        'Public, unauthenticated, insert-only RFC 7591 §3.1 client registration of public clients (token_endpoint_auth_method none). `scope`, `resource_grants` and unsupported metadata are rejected (invalid_client_metadata). native clients redirect to loopback http (127.0.0.1, [::1], localhost) or a reverse-domain private-use scheme; web clients to https hosts in the operator allowlist (--oauth-web-hosts). Reserved client names are refused. Rate limited per client address.',
      body: { type: 'object', required: ['redirect_uris', 'application_type'], properties: { redirect_uris: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 5 }, client_name: { type: 'string', maxLength: 100 }, application_type: { type: 'string', enum: ['native', 'web'] }, token_endpoint_auth_method: { type: 'string', enum: ['none'] }, grant_types: { type: 'array', items: { type: 'string' } }, response_types: { type: 'array', items: { type: 'string' } } } },
      response: { 201: { description: 'Registered', type: 'object', additionalProperties: true }, 400: { description: 'RFC 7591 §3.2.2 error', type: 'object', required: ['error'], properties: { error: { type: 'string', enum: ['invalid_redirect_uri', 'invalid_client_metadata'] }, error_description: { type: ['string', 'null'] } } }, ...errors(404, 503) },
    },
    async (req, reply) => {
      await limit(id, `register:ip:${req.ip}`, id.cfg.rateLimits.registerPerIp, 'oauth');
      let meta;
      try {
        meta = validateRegistration(req.body, id.cfg.oauthWebHosts);
      } catch (err) {
        if (err instanceof RegistrationError) throw oauthError(400, err.error, err.message);
        throw err;
      }
      const c = await id.clients.register(meta);
      reply.code(201).headers(NO_STORE);
      const out: Record<string, unknown> = { client_id: c.client_id, client_id_issued_at: Math.floor(c.created_at / 1000) };
      if (c.client_name !== null) out.client_name = c.client_name;
      return { ...out, redirect_uris: c.redirect_uris, grant_types: c.grant_types, response_types: c.response_types, token_endpoint_auth_method: 'none', application_type: c.application_type };
    },
    'public',
  );
}
