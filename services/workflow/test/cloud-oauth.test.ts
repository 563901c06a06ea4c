import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import * as oauth from 'oauth4webapi';
import { client, forEachStorage } from '@svc/testkit';
import { bearer, isCloudError, signupUser, startCloud, type Http, type TestUser } from './cloud-helpers.ts';
import { textPrompt } from './helpers.ts';

type Srv = Awaited<ReturnType<typeof startCloud>>;

const REDIRECT = 'http://127.0.0.1:7/callback';

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

function form(fields: Record<string, string | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) p.append(k, v);
  return p.toString();
}

async function tokenRequest(anon: Http, fields: Record<string, string | undefined>) {
  return anon.post('/oauth/token', form(fields), { 'content-type': 'application/x-www-form-urlencoded' });
}

async function register(anon: Http, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await anon.post('/oauth/register', { redirect_uris: [REDIRECT], application_type: 'native', client_name: 'Test CLI', ...extra });
  assert.equal(r.status, 201, r.text);
  return r.body.client_id;
}

/** GET /oauth/authorize as `user` → the consent challenge. */
async function challenge(u: TestUser, clientId: string, challengeValue: string, extra: Record<string, string> = {}) {
  const q = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, state: 'st-1', code_challenge: challengeValue, code_challenge_method: 'S256', ...extra });
  const r = await u.http.get(`/oauth/authorize?${q}`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** Consent (allow) in `workspaceId` → the code. */
async function code(u: TestUser, clientId: string, challengeValue: string, workspaceId = u.workspaceId, scope?: string): Promise<string> {
  const c = await challenge(u, clientId, challengeValue, scope ? { scope } : {});
  const r = await u.http.post('/oauth/authorize', { oauth_request_id: c.oauth_request_id, csrf_token: c.csrf_token, decision: 'allow', workspace_id: workspaceId });
  assert.equal(r.status, 200, r.text);
  const url = new URL(r.body.redirect_url);
  assert.equal(url.searchParams.get('state'), 'st-1');
  return url.searchParams.get('code')!;
}

forEachStorage('hosted runtime: OAuth 2.1 authorization server', (storage) => {
  let srv: Srv;
  let anon: Http;
  before(async () => {
    srv = await startCloud(storage, { oauthWebHosts: 'app.example.test' });
    anon = client(srv.url);
  });
  after(async () => srv.close());

  test('metadata documents (RFC 8414, RFC 9728)', async () => {
    const as = await anon.get('/.well-known/oauth-authorization-server');
    assert.equal(as.status, 200);
    assert.equal(as.body.issuer, srv.url);
    assert.equal(as.body.token_endpoint, `${srv.url}/oauth/token`);
    assert.equal(as.body.authorization_endpoint, `${srv.url}/oauth/authorize`);
    assert.equal(as.body.registration_endpoint, `${srv.url}/oauth/register`);
    assert.equal(as.body.jwks_uri, `${srv.url}/.well-known/jwks.json`);
    assert.deepEqual(as.body.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(as.body.token_endpoint_auth_methods_supported, ['none']);
    assert.deepEqual(as.body.response_types_supported, ['code']);
    assert.match(as.headers.get('cache-control')!, /max-age=300/);
    const pr = await anon.get('/.well-known/oauth-protected-resource');
    assert.equal(pr.body.resource, srv.url);
    assert.deepEqual(pr.body.authorization_servers, [srv.url]);
    assert.ok(Array.isArray(pr.body.scopes_supported));
  });

  test('dynamic registration: public clients only, redirect URI policy per application type, RFC 7591 errors', async () => {
    const r = await anon.post('/oauth/register', { redirect_uris: [REDIRECT, 'com.example.app:/cb', 'http://[::1]:8080/x', 'http://localhost/cb'], application_type: 'native', client_name: 'My Tool', token_endpoint_auth_method: 'none' });
    assert.equal(r.status, 201);
    assert.equal(r.headers.get('cache-control'), 'no-store');
    assert.equal(r.headers.get('pragma'), 'no-cache');
    assert.match(r.body.client_id, /^dyn_/);
    assert.equal(typeof r.body.client_id_issued_at, 'number');
    assert.ok(Math.abs(r.body.client_id_issued_at - Date.now() / 1000) < 600);
    assert.deepEqual(r.body.grant_types, ['authorization_code', 'refresh_token']);
    assert.deepEqual(r.body.response_types, ['code']);
    assert.equal(r.body.token_endpoint_auth_method, 'none');
    assert.equal(r.body.application_type, 'native');
    assert.equal(r.body.client_name, 'My Tool');
    assert.equal((await anon.post('/oauth/register', { redirect_uris: ['https://app.example.test/cb'], application_type: 'web' })).status, 201);
    const cases: Array<[unknown, string]> = [
      [{ redirect_uris: [REDIRECT] }, 'invalid_client_metadata'],
      [{ redirect_uris: [REDIRECT], application_type: '' }, 'invalid_client_metadata'],
      [{ redirect_uris: [REDIRECT], application_type: 'native', scope: 'workflow:read' }, 'invalid_client_metadata'],
      [{ redirect_uris: [REDIRECT], application_type: 'native', resource_grants: {} }, 'invalid_client_metadata'],
      [{ redirect_uris: [REDIRECT], application_type: 'native', jwks_uri: 'https://x.example/jwks' }, 'invalid_client_metadata'],
      [{ redirect_uris: [REDIRECT], application_type: 'native', token_endpoint_auth_method: 'client_secret_basic' }, 'invalid_client_metadata'],
      [{ redirect_uris: [REDIRECT], application_type: 'native', client_name: 'Claude' }, 'invalid_client_metadata'],
      [{ redirect_uris: [REDIRECT], application_type: 'native', client_name: 'ＣＬＡＵＤＥ Desktop' }, 'invalid_client_metadata'],
      [{ redirect_uris: [REDIRECT], application_type: 'native', client_name: 'x'.repeat(101) }, 'invalid_client_metadata'],
      [{ redirect_uris: [REDIRECT], application_type: 'native', grant_types: ['client_credentials'] }, 'invalid_client_metadata'],
      [{ redirect_uris: [REDIRECT], application_type: 'native', response_types: ['token'] }, 'invalid_client_metadata'],
      [{ redirect_uris: [REDIRECT], application_type: 'native', unknown_field: 1 }, 'invalid_client_metadata'],
      [{ redirect_uris: [], application_type: 'native' }, 'invalid_redirect_uri'],
      [{ redirect_uris: Array.from({ length: 6 }, (_, i) => `http://127.0.0.1:${i + 1}/cb`), application_type: 'native' }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['http://evil.example/cb'], application_type: 'native' }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['https://127.0.0.1/cb'], application_type: 'native' }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['http://127.0.0.1/cb#frag'], application_type: 'native' }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['javascript:alert(1)'], application_type: 'native' }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['relative/cb'], application_type: 'native' }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['https://other.example/cb'], application_type: 'web' }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['http://app.example.test/cb'], application_type: 'web' }, 'invalid_redirect_uri'],
      [{ redirect_uris: [5], application_type: 'native' }, 'invalid_redirect_uri'],
      [[], 'invalid_client_metadata'],
    ];
    for (const [body, error] of cases) {
      const e = await anon.post('/oauth/register', body);
      assert.equal(e.status, 400, JSON.stringify(body));
      assert.equal(e.body.error, error, JSON.stringify(body));
      assert.equal(typeof e.body.error_description, 'string');
      assert.equal(e.headers.get('cache-control'), 'no-store');
      assert.equal(e.headers.get('pragma'), 'no-cache');
    }
  });

  test('authorize: unknown client, inexact redirect URI and missing state are 400s; other errors go back to the client; no session → login', async () => {
    const u = await signupUser(srv.url, 'authz');
    const cid = await register(anon);
    const { challenge: ch } = pkce();
    const base = { response_type: 'code', client_id: cid, redirect_uri: REDIRECT, state: 's', code_challenge: ch, code_challenge_method: 'S256' };
    // Redirects are looked at, not followed.
    const get = async (p: Record<string, string>, h: Http | null = u.http) => {
      const res = await fetch(`${srv.url}/oauth/authorize?${new URLSearchParams(p)}`, { redirect: 'manual', headers: h ? { authorization: `Bearer ${u.token}` } : {} });
      const text = await res.text();
      return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
    };
    let r: any = await get({ ...base, client_id: 'dyn_unknown' });
    assert.equal(r.status, 400);
    assert.ok(isCloudError(r.body, 'invalid_client'));
    for (const uri of ['http://127.0.0.1:7/callback/', 'http://127.0.0.1:8/callback', 'http://localhost:7/callback', 'http://127.0.0.1:7/callback?x=1', 'http://127.0.0.1:7/CALLBACK']) {
      r = await get({ ...base, redirect_uri: uri });
      assert.equal(r.status, 400, uri);
      assert.ok(isCloudError(r.body, 'invalid_redirect_uri'));
    }
    r = await get({ ...base, state: '' });
    assert.equal(r.status, 400);
    assert.ok(isCloudError(r.body, 'invalid_request'));
    const back = async (p: Record<string, string>, error: string) => {
      const res = await get(p);
      assert.equal(res.status, 302, JSON.stringify(p));
      const loc = new URL(res.headers.get('location')!);
      assert.equal(`${loc.origin}${loc.pathname}`, REDIRECT);
      assert.equal(loc.searchParams.get('error'), error);
      assert.equal(loc.searchParams.get('state'), 's');
    };
    const { code_challenge: _c, ...noChallenge } = base;
    await back(noChallenge, 'invalid_request');
    await back({ ...base, code_challenge_method: 'plain' }, 'invalid_request');
    const { code_challenge_method: _m, ...noMethod } = base;
    await back(noMethod, 'invalid_request');
    await back({ ...base, response_type: 'token' }, 'unsupported_response_type');
    await back({ ...base, scope: 'admin' }, 'invalid_scope');
    await back({ ...base, resource: 'https://elsewhere.example/' }, 'invalid_target');
    // No session: to the login page with only the opaque request id; resuming with a session gives the challenge.
    r = await get(base, null);
    assert.equal(r.status, 302);
    const login = new URL(r.headers.get('location')!, srv.url);
    assert.equal(login.pathname, '/login');
    const rid = login.searchParams.get('oauth_request_id')!;
    assert.deepEqual([...login.searchParams.keys()], ['oauth_request_id']);
    // The browser that started it resumes it (with the cookie the 302 set).
    const browser = r.headers.get('set-cookie')!.split(';')[0]!;
    r = await u.http.get(`/oauth/authorize?oauth_request_id=${rid}`, { cookie: browser });
    assert.equal(r.status, 200);
    assert.equal(r.body.oauth_request_id, rid);
    assert.equal(r.body.client_display_name, 'Test CLI');
    assert.deepEqual(r.body.scopes, ['workflow:read', 'workflow:write']);
    assert.deepEqual(r.body.workspaces, [{ id: u.workspaceId, name: "authz's workspace", type: 'personal', role: 'owner' }]);
    assert.equal(typeof r.body.csrf_token, 'string');
    r = await u.http.get(`/oauth/authorize?oauth_request_id=${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}`);
    assert.equal(r.status, 400);
    assert.ok(isCloudError(r.body));
  });

  test('consent: CSRF checked, single use for allow and deny, membership re-checked; deny returns access_denied', async () => {
    const u = await signupUser(srv.url, 'consent');
    const other = await signupUser(srv.url, 'other');
    const cid = await register(anon);
    const { challenge: ch } = pkce();
    let c = await challenge(u, cid, ch);
    let r = await u.http.post('/oauth/authorize', { oauth_request_id: c.oauth_request_id, csrf_token: 'wrong', decision: 'allow', workspace_id: u.workspaceId });
    assert.equal(r.status, 400);
    assert.ok(isCloudError(r.body, 'csrf_mismatch'));
    r = await u.http.post('/oauth/authorize', { oauth_request_id: c.oauth_request_id, csrf_token: c.csrf_token, decision: 'deny', workspace_id: u.workspaceId });
    assert.equal(r.status, 200);
    const denied = new URL(r.body.redirect_url);
    assert.equal(denied.searchParams.get('error'), 'access_denied');
    assert.equal(denied.searchParams.get('state'), 'st-1');
    assert.equal(denied.searchParams.get('code'), null);
    r = await u.http.post('/oauth/authorize', { oauth_request_id: c.oauth_request_id, csrf_token: c.csrf_token, decision: 'allow', workspace_id: u.workspaceId });
    assert.equal(r.status, 400);
    assert.ok(isCloudError(r.body));
    c = await challenge(u, cid, ch);
    r = await u.http.post('/oauth/authorize', { oauth_request_id: c.oauth_request_id, csrf_token: c.csrf_token, decision: 'allow', workspace_id: other.workspaceId });
    assert.equal(r.status, 403);
    assert.ok(isCloudError(r.body, 'workspace_inaccessible'));
    for (const bad of [{}, { oauth_request_id: c.oauth_request_id, csrf_token: c.csrf_token, decision: 'maybe', workspace_id: u.workspaceId }]) {
      r = await u.http.post('/oauth/authorize', bad);
      assert.equal(r.status, 400);
      assert.ok(isCloudError(r.body));
    }
    r = await anon.post('/oauth/authorize', { oauth_request_id: c.oauth_request_id, csrf_token: c.csrf_token, decision: 'allow', workspace_id: u.workspaceId });
    assert.equal(r.status, 401);
  });

  test('token endpoint: PKCE required and checked, codes single-use (a replay revokes its tokens), exact redirect URI, public clients only, no-store', async () => {
    const u = await signupUser(srv.url, 'token');
    const cid = await register(anon);
    const p = pkce();
    // PKCE missing, then wrong: refused (and the code is spent either way).
    let k = await code(u, cid, p.challenge);
    let r = await tokenRequest(anon, { grant_type: 'authorization_code', client_id: cid, code: k, redirect_uri: REDIRECT });
    assert.equal(r.status, 400);
    assert.equal(r.body.error, 'invalid_request');
    assert.equal(r.headers.get('cache-control'), 'no-store');
    assert.equal(r.headers.get('pragma'), 'no-cache');
    k = await code(u, cid, p.challenge);
    r = await tokenRequest(anon, { grant_type: 'authorization_code', client_id: cid, code: k, redirect_uri: REDIRECT, code_verifier: pkce().verifier });
    assert.equal(r.status, 400);
    assert.equal(r.body.error, 'invalid_grant');
    r = await tokenRequest(anon, { grant_type: 'authorization_code', client_id: cid, code: k, redirect_uri: REDIRECT, code_verifier: p.verifier });
    assert.equal(r.status, 400, 'a code that failed PKCE is spent');
    // Redirect URI must be the one of the request.
    k = await code(u, cid, p.challenge);
    r = await tokenRequest(anon, { grant_type: 'authorization_code', client_id: cid, code: k, redirect_uri: 'http://127.0.0.1:7/other', code_verifier: p.verifier });
    assert.equal(r.body.error, 'invalid_grant');
    // Another client cannot redeem it.
    const cid2 = await register(anon);
    k = await code(u, cid, p.challenge);
    r = await tokenRequest(anon, { grant_type: 'authorization_code', client_id: cid2, code: k, redirect_uri: REDIRECT, code_verifier: p.verifier });
    assert.equal(r.body.error, 'invalid_grant');
    // Success, then a replay: refused and the first tokens revoked.
    k = await code(u, cid, p.challenge);
    r = await tokenRequest(anon, { grant_type: 'authorization_code', client_id: cid, code: k, redirect_uri: REDIRECT, code_verifier: p.verifier });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('cache-control'), 'no-store');
    assert.equal(r.headers.get('pragma'), 'no-cache');
    assert.equal(r.body.token_type, 'Bearer');
    assert.equal(r.body.scope, 'workflow:read workflow:write');
    assert.ok(r.body.expires_in > 0 && r.body.refresh_token);
    const first = r.body;
    assert.equal((await bearer(srv.url, first.access_token).get('/api/jobs')).status, 200);
    r = await tokenRequest(anon, { grant_type: 'authorization_code', client_id: cid, code: k, redirect_uri: REDIRECT, code_verifier: p.verifier });
    assert.equal(r.status, 400);
    assert.equal(r.body.error, 'invalid_grant');
    assert.equal((await bearer(srv.url, first.access_token).get('/api/jobs')).status, 401);
    r = await tokenRequest(anon, { grant_type: 'refresh_token', client_id: cid, refresh_token: first.refresh_token });
    assert.equal(r.body.error, 'invalid_grant');
    // Client errors.
    const cases: Array<[Record<string, string>, string]> = [
      [{ grant_type: 'authorization_code', client_id: cid, code: 'x', redirect_uri: REDIRECT, code_verifier: p.verifier, client_secret: 's' }, 'invalid_client'],
      [{ grant_type: 'authorization_code', client_id: 'dyn_nope', code: 'x', redirect_uri: REDIRECT, code_verifier: p.verifier }, 'invalid_client'],
      [{ grant_type: 'authorization_code', code: 'x' }, 'invalid_request'],
      [{ client_id: cid }, 'invalid_request'],
      [{ grant_type: 'password', client_id: cid }, 'unsupported_grant_type'],
      [{ grant_type: 'client_credentials', client_id: cid }, 'unsupported_grant_type'],
      [{ grant_type: 'authorization_code', client_id: cid, code: 'wfc_bogus', redirect_uri: REDIRECT, code_verifier: p.verifier }, 'invalid_grant'],
    ];
    for (const [f, error] of cases) {
      r = await tokenRequest(anon, f);
      assert.equal(r.status, 400, JSON.stringify(f));
      assert.equal(r.body.error, error, JSON.stringify(f));
      assert.equal(r.headers.get('cache-control'), 'no-store');
    }
    r = await anon.post('/oauth/token', 'grant_type=refresh_token&grant_type=authorization_code&client_id=' + cid, { 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(r.body.error, 'invalid_request');
    r = await anon.post('/oauth/token', { grant_type: 'refresh_token', client_id: cid });
    assert.equal(r.status, 400);
    assert.equal(r.body.error, 'invalid_request');
  });

  test('refresh tokens rotate; reuse revokes the family; tokens are bound to the chosen workspace and scopes', async () => {
    const u = await signupUser(srv.url, 'rot');
    const team = await u.http.post('/api/workspaces', { name: 'OAuth team' });
    const cid = await register(anon);
    const p = pkce();
    const k = await code(u, cid, p.challenge, team.body.id, 'workflow:read');
    let r = await tokenRequest(anon, { grant_type: 'authorization_code', client_id: cid, code: k, redirect_uri: REDIRECT, code_verifier: p.verifier });
    assert.equal(r.status, 200);
    assert.equal(r.body.scope, 'workflow:read');
    const t1 = r.body;
    const api = bearer(srv.url, t1.access_token);
    const s = await api.get('/api/auth/session');
    assert.equal(s.body.workspace.id, team.body.id);
    // Read-only: writes are refused; the header cannot move the token to another workspace.
    const w = await api.post('/api/prompt', { prompt: textPrompt('x') });
    assert.equal(w.status, 403);
    assert.ok(isCloudError(w.body, 'insufficient_scope'));
    assert.equal((await api.get('/api/jobs', { 'x-workspace-id': u.workspaceId })).status, 403);
    r = await tokenRequest(anon, { grant_type: 'refresh_token', client_id: cid, refresh_token: t1.refresh_token });
    assert.equal(r.status, 200);
    assert.notEqual(r.body.refresh_token, t1.refresh_token);
    const t2 = r.body;
    r = await tokenRequest(anon, { grant_type: 'refresh_token', client_id: cid, refresh_token: t2.refresh_token, scope: 'workflow:write' });
    assert.equal(r.body.error, 'invalid_scope');
    r = await tokenRequest(anon, { grant_type: 'refresh_token', client_id: cid, refresh_token: t1.refresh_token });
    assert.equal(r.status, 400);
    assert.equal(r.body.error, 'invalid_grant');
    for (const t of [t1.access_token, t2.access_token]) assert.equal((await bearer(srv.url, t).get('/api/jobs')).status, 401);
    r = await tokenRequest(anon, { grant_type: 'refresh_token', client_id: cid, refresh_token: t2.refresh_token });
    assert.equal(r.body.error, 'invalid_grant');
  });

  test('a third-party token cannot manage identity: no sessions, consent, API keys, invites, roles or profile; an API key cannot consent', async () => {
    const u = await signupUser(srv.url, 'thirdparty');
    const cid = await register(anon);
    const p = pkce();
    const k = await code(u, cid, p.challenge);
    const t = (await tokenRequest(anon, { grant_type: 'authorization_code', client_id: cid, code: k, redirect_uri: REDIRECT, code_verifier: p.verifier })).body;
    const api = bearer(srv.url, t.access_token);
    assert.equal((await api.get('/api/jobs')).status, 200);
    let r = await api.post('/api/auth/session');
    assert.equal(r.status, 400);
    assert.ok(isCloudError(r.body, 'invalid_token'));
    for (const [m, path, body] of [
      ['POST', '/api/workspace/api-keys', { name: 'x' }],
      ['POST', '/api/workspaces', { name: 'x' }],
      ['PATCH', `/api/workspaces/${u.workspaceId}`, { name: 'x' }],
      ['POST', '/api/workspace/invites', { email: 'x@example.test' }],
      ['PATCH', `/api/workspace/members/${u.id}`, { role: 'member' }],
      ['PUT', '/api/user', { display_name: 'x' }],
      ['POST', '/oauth/authorize', { oauth_request_id: 'x', csrf_token: 'x', decision: 'allow', workspace_id: u.workspaceId }],
    ] as const) {
      r = await api.request(m, path, body);
      assert.equal(r.status, 403, `${m} ${path}`);
      assert.ok(isCloudError(r.body, 'forbidden'), `${m} ${path}`);
    }
    // GET /oauth/authorize with a third-party token or an API key: treated as not logged in.
    const q = new URLSearchParams({ response_type: 'code', client_id: cid, redirect_uri: REDIRECT, state: 's', code_challenge: p.challenge, code_challenge_method: 'S256' });
    const key = (await u.http.post('/api/workspace/api-keys', { name: 'k' })).body.key;
    for (const h of [{ authorization: `Bearer ${t.access_token}` }, { 'x-api-key': key }] as Record<string, string>[]) {
      const res = await fetch(`${srv.url}/oauth/authorize?${q}`, { redirect: 'manual', headers: h });
      assert.equal(res.status, 302);
      assert.match(res.headers.get('location')!, /^\/login\?oauth_request_id=/);
    }
    const c = await challenge(u, cid, p.challenge);
    r = await client(srv.url, { 'x-api-key': key }).post('/oauth/authorize', { oauth_request_id: c.oauth_request_id, csrf_token: c.csrf_token, decision: 'allow', workspace_id: u.workspaceId });
    assert.equal(r.status, 403);
  });

  test('end to end with oauth4webapi (as an MCP client or CLI): discover, register, authorize with PKCE, consent, exchange, call, refresh, reuse detection', async () => {
    const u = await signupUser(srv.url, 'e2e');
    const issuer = new URL(srv.url);
    const opts = { [oauth.allowInsecureRequests]: true };
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...opts, algorithm: 'oauth2' }));
    assert.equal(as.issuer, srv.url);
    const redirectUri = 'http://127.0.0.1:53682/callback';
    const registered = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [redirectUri], application_type: 'native', client_name: 'E2E CLI', token_endpoint_auth_method: 'none' } as any, opts),
    );
    const c: oauth.Client = { client_id: registered.client_id, token_endpoint_auth_method: 'none' };
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.searchParams.set('client_id', c.client_id);
    url.searchParams.set('redirect_uri', redirectUri);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('scope', 'workflow:read workflow:write');
    url.searchParams.set('state', state);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    url.searchParams.set('code_challenge_method', 'S256');
    // The browser: not logged in → login page; after login, resume and consent.
    const first = await fetch(url, { redirect: 'manual' });
    assert.equal(first.status, 302);
    const rid = new URL(first.headers.get('location')!, srv.url).searchParams.get('oauth_request_id')!;
    const ch = await u.http.get(`/oauth/authorize?oauth_request_id=${rid}`, { cookie: first.headers.get('set-cookie')!.split(';')[0]! });
    assert.equal(ch.status, 200);
    const consent = await u.http.post('/oauth/authorize', { oauth_request_id: rid, csrf_token: ch.body.csrf_token, decision: 'allow', workspace_id: ch.body.workspaces[0].id });
    assert.equal(consent.status, 200);
    const callback = new URL(consent.body.redirect_url);
    assert.equal(`${callback.origin}${callback.pathname}`, redirectUri);
    const params = oauth.validateAuthResponse(as, c, callback, state);
    const tokens = await oauth.processAuthorizationCodeResponse(as, c, await oauth.authorizationCodeGrantRequest(as, c, oauth.None(), params, redirectUri, verifier, opts));
    assert.equal(tokens.token_type, 'bearer');
    assert.ok(tokens.refresh_token);
    const call = await oauth.protectedResourceRequest(tokens.access_token, 'POST', new URL(`${srv.url}/api/prompt`), new Headers({ 'content-type': 'application/json' }), JSON.stringify({ prompt: textPrompt('from oauth') }), opts);
    assert.equal(call.status, 200);
    const { prompt_id } = (await call.json()) as { prompt_id: string };
    const job = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(`${srv.url}/api/jobs/${prompt_id}`), new Headers(), null, opts);
    assert.equal(job.status, 200);
    // The job belongs to the user's workspace: visible with the user's own token too.
    assert.equal((await u.http.get(`/api/jobs/${prompt_id}`)).status, 200);
    const refreshed = await oauth.processRefreshTokenResponse(as, c, await oauth.refreshTokenGrantRequest(as, c, oauth.None(), tokens.refresh_token!, opts));
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token);
    assert.equal((await oauth.protectedResourceRequest(refreshed.access_token, 'GET', new URL(`${srv.url}/api/jobs`), new Headers(), null, opts)).status, 200);
    // Reuse of the first refresh token: an OAuth error, and the family (including the fresh tokens) is revoked.
    await assert.rejects(
      async () => oauth.processRefreshTokenResponse(as, c, await oauth.refreshTokenGrantRequest(as, c, oauth.None(), tokens.refresh_token!, opts)),
      (err: any) => err instanceof oauth.ResponseBodyError && err.error === 'invalid_grant',
    );
    await assert.rejects(
      async () => oauth.protectedResourceRequest(refreshed.access_token, 'GET', new URL(`${srv.url}/api/jobs`), new Headers(), null, opts),
      (err: any) => err instanceof oauth.WWWAuthenticateChallengeError && err.response.status === 401 && err.cause[0].parameters.error === 'invalid_token',
    );
    await assert.rejects(async () => oauth.processRefreshTokenResponse(as, c, await oauth.refreshTokenGrantRequest(as, c, oauth.None(), refreshed.refresh_token!, opts)));
  });
});
