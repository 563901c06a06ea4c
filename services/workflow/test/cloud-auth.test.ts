import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { base64url, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import { client, forEachStorage } from '@svc/testkit';
import { openWorkflowStorage } from '../src/app.ts';
import { loadSecretKeys, SecretBox } from '../src/domain/cloud/secret-box.ts';
import { bearer, isCloudError, signupUser, startCloud, type Http } from './cloud-helpers.ts';
import { startWorkflow } from './helpers.ts';

type Srv = Awaited<ReturnType<typeof startCloud>>;

/** The server's current signing key, read from its database (to mint tokens the server would accept but for one claim). */
async function serverKey(srv: Srv): Promise<{ kid: string; privateJwk: JWK; publicJwk: JWK }> {
  const storage = await openWorkflowStorage(srv.cfg);
  try {
    const row = await storage.db.selectFrom('id_signing_keys').selectAll().orderBy('created_at', 'desc').executeTakeFirstOrThrow();
    // The private half is sealed at rest (AES-GCM under the secrets key): no private parameter is stored in the clear.
    const stored = JSON.parse(row.private_jwk);
    assert.equal(stored.d, undefined);
    assert.equal(typeof stored.sealed, 'string');
    const box = new SecretBox(loadSecretKeys(srv.cfg.flags, srv.cfg.dataDir));
    const plain = box.open(stored.key_id, stored.sealed, `signing-key:${row.kid}`);
    assert.ok(plain, 'the service’s own key opens it');
    return { kid: row.kid, privateJwk: JSON.parse(plain), publicJwk: JSON.parse(row.public_jwk) };
  } finally {
    await storage.close();
  }
}

async function dbRows(srv: Srv, table: string): Promise<any[]> {
  const storage = await openWorkflowStorage(srv.cfg);
  try {
    return await storage.db.selectFrom(table).selectAll().execute();
  } finally {
    await storage.close();
  }
}

function claimsOf(token: string): any {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
}

forEachStorage('hosted runtime: accounts, tokens, sessions', (storage) => {
  let srv: Srv;
  let anon: Http;
  before(async () => {
    srv = await startCloud(storage);
    anon = client(srv.url);
  });
  after(async () => srv.close());

  test('signup creates a user with a personal workspace; errors are CloudError bodies', async () => {
    const email = `Signup-${Date.now()}@Example.test`;
    const r = await anon.post('/api/auth/signup', { email, password: 'password-123', display_name: 'Ada' });
    assert.equal(r.status, 201);
    assert.equal(r.body.user.email, email);
    assert.equal(r.body.user.display_name, 'Ada');
    assert.equal(r.body.workspace.type, 'personal');
    assert.equal(r.body.workspace.owner_id, r.body.user.id);
    assert.equal(r.body.workspace.member_count, 1);
    assert.equal(r.body.token_type, 'Bearer');
    assert.ok(r.body.expires_in > 0 && typeof r.body.refresh_token === 'string');
    // Same email (case-insensitively) again: 409.
    let e = await anon.post('/api/auth/signup', { email: email.toLowerCase(), password: 'password-123' });
    assert.equal(e.status, 409);
    assert.ok(isCloudError(e.body, 'email_taken'));
    for (const bad of [{ email: 'nope', password: 'password-123' }, { email: 'a@b.test', password: 'short' }, { password: 'password-123' }, { email: 'a\u0000@b.test', password: 'password-123' }, [], 'x']) {
      e = await anon.post('/api/auth/signup', bad);
      assert.equal(e.status, 400, JSON.stringify(bad));
      assert.ok(isCloudError(e.body), e.text);
    }
    e = await anon.post('/api/auth/signup', '{"email":');
    assert.equal(e.status, 400);
    assert.equal(typeof e.body.error, 'string');
  });

  test('login: right password → tokens; wrong password or unknown account → the same 401; passwords stored as argon2id', async () => {
    const u = await signupUser(srv.url, 'login');
    const r = await anon.post('/api/auth/login', { email: u.email.toUpperCase(), password: u.password });
    assert.equal(r.status, 200);
    assert.equal(r.body.user.id, u.id);
    assert.equal(r.body.workspace.id, u.workspaceId);
    const c = claimsOf(r.body.access_token);
    assert.equal(c.sub, u.id);
    assert.equal(c.wid, u.workspaceId);
    assert.ok(c.exp - c.iat <= 900);
    const wrong = await anon.post('/api/auth/login', { email: u.email, password: 'not the password' });
    const unknown = await anon.post('/api/auth/login', { email: `nobody-${Date.now()}@example.test`, password: 'not the password' });
    assert.equal(wrong.status, 401);
    assert.equal(unknown.status, 401);
    assert.deepEqual(wrong.body, unknown.body);
    assert.ok(isCloudError(wrong.body, 'invalid_credentials'));
    const rows = await dbRows(srv, 'id_users');
    const mine = rows.find((x) => x.id === u.id);
    assert.match(mine.password_hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    assert.ok(!JSON.stringify(rows).includes(u.password));
  });

  test('every shared route needs credentials: 401 CloudError with WWW-Authenticate; public routes stay open', async () => {
    for (const [m, p] of [
      ['GET', '/api/jobs'],
      ['GET', '/api/queue'],
      ['POST', '/api/prompt'],
      ['GET', '/api/history'],
      ['GET', '/api/object_info'],
      ['GET', '/api/user'],
      ['GET', '/api/workspaces'],
      ['POST', '/api/interrupt'],
      ['GET', '/queue'],
    ] as const) {
      const r = await anon.request(m, p, m === 'POST' ? {} : undefined);
      assert.equal(r.status, 401, `${m} ${p}`);
      assert.ok(isCloudError(r.body, 'unauthorized'), r.text);
      assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer .*resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource"/);
    }
    for (const p of ['/health', '/openapi.json', '/.well-known/jwks.json', '/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource']) {
      assert.equal((await anon.get(p)).status, 200, p);
    }
    const r = await anon.get('/api/jobs', { authorization: 'Bearer garbage' });
    assert.equal(r.status, 401);
    assert.ok(isCloudError(r.body, 'invalid_token'));
    assert.match(r.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
  });

  test('forged tokens are refused: wrong key, alg none, HS256 with the public key, wrong audience, expired', async () => {
    const u = await signupUser(srv.url, 'forge');
    assert.equal((await u.http.get('/api/jobs')).status, 200);
    const real = claimsOf(u.token);
    const key = await serverKey(srv);
    const payload = { ...real, exp: Math.floor(Date.now() / 1000) + 600 };
    const mine = await generateKeyPair('RS256');
    const forged: Record<string, string> = {};
    forged.wrongKey = await new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt' }).sign(mine.privateKey);
    forged.unknownKid = await new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: 'not-a-key', typ: 'at+jwt' }).sign(mine.privateKey);
    const enc = (o: unknown) => base64url.encode(JSON.stringify(o));
    forged.algNone = `${enc({ alg: 'none', kid: key.kid, typ: 'at+jwt' })}.${enc(payload)}.`;
    forged.algNoneSig = `${enc({ alg: 'none', kid: key.kid, typ: 'at+jwt' })}.${enc(payload)}.${u.token.split('.')[2]}`;
    // HS/RS confusion: HMAC keyed with the public key's bytes, as a naive verifier would accept.
    const pubBytes = new TextEncoder().encode(JSON.stringify(key.publicJwk));
    forged.hs256 = await new SignJWT(payload).setProtectedHeader({ alg: 'HS256', kid: key.kid, typ: 'at+jwt' }).sign(pubBytes);
    forged.hs256n = await new SignJWT(payload).setProtectedHeader({ alg: 'HS256', kid: key.kid, typ: 'at+jwt' }).sign(Buffer.from(key.publicJwk.n!, 'base64url'));
    const signer = await importJWK(key.privateJwk, 'RS256');
    forged.expired = await new SignJWT({ ...payload, iat: payload.iat - 7200, exp: Math.floor(Date.now() / 1000) - 60 }).setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt' }).sign(signer);
    forged.wrongAudience = await new SignJWT({ ...payload, aud: 'someone-else' }).setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt' }).sign(signer);
    forged.otherWorkspace = await new SignJWT({ ...payload, wid: 'not-my-workspace' }).setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt' }).sign(signer);
    forged.tampered = u.token.split('.')[0] + '.' + enc({ ...real, wid: 'x' }) + '.' + u.token.split('.')[2];
    // Control: the server's own key with the real claims is accepted (so the refusals above are about the forgery).
    const control = await new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt' }).sign(signer);
    assert.equal((await bearer(srv.url, control).get('/api/jobs')).status, 200);
    for (const [name, t] of Object.entries(forged)) {
      const r = await bearer(srv.url, t).get('/api/jobs');
      assert.equal(r.status, 401, name);
      assert.ok(isCloudError(r.body, 'invalid_token'), name);
    }
  });

  test('refresh tokens rotate; reusing a spent one revokes the family (its access tokens stop working)', async () => {
    const u = await signupUser(srv.url, 'refresh');
    const r1 = await anon.post('/api/auth/token', { grant_type: 'refresh_token', refresh_token: u.refreshToken });
    assert.equal(r1.status, 200);
    assert.equal(r1.headers.get('cache-control'), 'no-store');
    assert.notEqual(r1.body.refresh_token, u.refreshToken);
    assert.equal((await bearer(srv.url, r1.body.access_token).get('/api/jobs')).status, 200);
    const reuse = await anon.post('/api/auth/token', { grant_type: 'refresh_token', refresh_token: u.refreshToken });
    assert.equal(reuse.status, 400);
    assert.ok(isCloudError(reuse.body, 'invalid_grant'));
    // The whole family is gone: the new refresh token and both access tokens.
    const r2 = await anon.post('/api/auth/token', { grant_type: 'refresh_token', refresh_token: r1.body.refresh_token });
    assert.equal(r2.status, 400);
    assert.equal((await bearer(srv.url, r1.body.access_token).get('/api/jobs')).status, 401);
    assert.equal((await u.http.get('/api/jobs')).status, 401);
    for (const bad of [{ grant_type: 'password' }, { grant_type: 'refresh_token' }, { grant_type: 'authorization_code', code: 'x', redirect_uri: 'http://127.0.0.1/cb' }, {}]) {
      const e = await anon.post('/api/auth/token', bad);
      assert.equal(e.status, 400, JSON.stringify(bad));
      assert.ok(isCloudError(e.body));
    }
  });

  test('session cookie: created from a bearer token only, HttpOnly + SameSite; cookie writes need X-CSRF-Token; logout revokes', async () => {
    const u = await signupUser(srv.url, 'cookie');
    let r = await anon.post('/api/auth/session');
    assert.equal(r.status, 401);
    assert.ok(isCloudError(r.body));
    r = await anon.post('/api/auth/session', undefined, { authorization: 'Bearer not-a-token' });
    assert.equal(r.status, 400);
    assert.ok(isCloudError(r.body, 'invalid_token'));
    r = await u.http.post('/api/auth/session');
    assert.equal(r.status, 200);
    assert.equal(r.body.success, true);
    assert.ok(r.body.expiresIn > 0);
    const setCookie = r.headers.getSetCookie();
    const session = setCookie.find((c) => c.startsWith('wf_session='))!;
    assert.match(session, /HttpOnly/);
    assert.match(session, /SameSite=Lax/);
    assert.doesNotMatch(session, /Secure/); // plain http on loopback; Secure when served over TLS
    const cookieHeader = `wf_session=${session.split(';')[0]!.slice('wf_session='.length)}`;
    const csrf = r.body.csrf_token as string;
    const jar = client(srv.url, { cookie: cookieHeader });
    // Cookie auth is refused on the session endpoint itself.
    r = await jar.post('/api/auth/session', undefined, { 'x-csrf-token': csrf });
    assert.equal(r.status, 401);
    assert.equal((await jar.get('/api/jobs')).status, 200);
    const s = await jar.get('/api/auth/session');
    assert.equal(s.status, 200);
    assert.equal(s.body.user.id, u.id);
    assert.equal(s.body.workspace.id, u.workspaceId);
    // Writes: without or with a wrong CSRF header refused; with it accepted.
    for (const h of [{}, { 'x-csrf-token': 'wrong' }] as Record<string, string>[]) {
      r = await jar.post('/api/workspace/api-keys', { name: 'k' }, h);
      assert.equal(r.status, 403);
      assert.ok(isCloudError(r.body, 'csrf_failed'));
      r = await jar.put('/api/user', { display_name: 'x' }, h);
      assert.equal(r.status, 403);
      r = await jar.post('/api/prompt', { prompt: {} }, h);
      assert.equal(r.status, 403);
    }
    r = await jar.post('/api/workspace/api-keys', { name: 'k' }, { 'x-csrf-token': csrf });
    assert.equal(r.status, 201);
    // Logout without CSRF is refused too; with it the session ends on the server.
    assert.equal((await jar.delete('/api/auth/session')).status, 403);
    r = await jar.delete('/api/auth/session', undefined, { 'x-csrf-token': csrf });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { success: true });
    assert.ok(r.headers.getSetCookie().some((c) => /^wf_session=;.*Max-Age=0/.test(c)));
    assert.equal((await jar.get('/api/jobs')).status, 401);
    // Logout with no session at all just clears the cookie.
    assert.equal((await anon.delete('/api/auth/session')).status, 200);
  });

  test('API keys: shown once, stored only as a SHA-256 hash, accepted as Bearer and X-API-Key; last_used_at kept', async () => {
    const u = await signupUser(srv.url, 'apikey');
    let r = await u.http.post('/api/workspace/api-keys', { name: 'ci', description: 'for CI' });
    assert.equal(r.status, 201);
    const { key, id } = r.body;
    assert.match(key, /^wfk_/);
    assert.equal(r.body.prefix, key.slice(0, 12));
    assert.equal(r.body.description, 'for CI');
    r = await u.http.post('/api/workspace/api-keys', { name: 'nodesc' });
    assert.equal(r.body.description, '');
    const rows = await dbRows(srv, 'id_api_keys');
    assert.ok(!JSON.stringify(rows).includes(key));
    const { createHash } = await import('node:crypto');
    assert.equal(rows.find((x) => x.id === id).key_hash, createHash('sha256').update(key).digest('hex'));
    assert.equal((await client(srv.url, { authorization: `Bearer ${key}` }).get('/api/jobs')).status, 200);
    assert.equal((await client(srv.url, { 'x-api-key': key }).get('/api/queue')).status, 200);
    const list = await u.http.get('/api/workspace/api-keys');
    assert.equal(list.status, 200);
    const mine = list.body.find((k: any) => k.id === id);
    assert.ok(!('key' in mine));
    assert.equal(mine.created_by, u.id);
    assert.ok(mine.last_used_at !== null && Date.parse(mine.last_used_at) > 0);
    for (const bad of [{}, { name: '' }, { name: 'x', description: 'd'.repeat(5001) }, { name: 'a\u0000b' }]) {
      const e = await u.http.post('/api/workspace/api-keys', bad);
      assert.equal(e.status, 400, JSON.stringify(bad));
      assert.ok(isCloudError(e.body));
    }
    assert.equal((await u.http.post('/api/workspace/api-keys', { name: 'x', description: 'd'.repeat(5000) })).status, 201);
    assert.equal((await u.http.delete(`/api/workspace/api-keys/${id}`)).status, 204);
    assert.equal((await client(srv.url, { 'x-api-key': key }).get('/api/queue')).status, 401);
    const e = await u.http.delete(`/api/workspace/api-keys/${id}`);
    assert.equal(e.status, 404);
    assert.ok(isCloudError(e.body, 'not_found'));
  });

  test('user profile and feedback', async () => {
    const u = await signupUser(srv.url, 'profile');
    let r = await u.http.get('/api/user');
    assert.equal(r.status, 200);
    assert.equal(r.body.id, u.id);
    assert.equal(r.body.email, u.email);
    r = await u.http.put('/api/user', { display_name: 'New Name', avatar_url: 'https://img.example/a.png' });
    assert.equal(r.status, 200);
    assert.equal(r.body.display_name, 'New Name');
    assert.equal(r.body.avatar_url, 'https://img.example/a.png');
    for (const bad of [{ avatar_url: 'javascript:alert(1)' }, { avatar_url: 'not a url' }, { display_name: 'x'.repeat(201) }, { display_name: 5 }]) {
      const e = await u.http.put('/api/user', bad);
      assert.equal(e.status, 400, JSON.stringify(bad));
      assert.ok(isCloudError(e.body));
    }
    r = await u.http.post('/api/feedback', { message: 'great', rating: 5, context: { page: 'x' } });
    assert.equal(r.status, 201);
    assert.equal(typeof r.body.id, 'string');
    for (const bad of [{}, { message: '' }, { message: 'x', rating: 6 }, { message: 'x', rating: 2.5 }, { message: 'x', context: [] }, { message: 'x', context: { big: 'y'.repeat(20000) } }]) {
      const e = await u.http.post('/api/feedback', bad);
      assert.equal(e.status, 400, JSON.stringify(bad));
      assert.ok(isCloudError(e.body));
    }
  });

  test('a token of a removed member or a deleted workspace stops working', async () => {
    const owner = await signupUser(srv.url, 'own');
    const member = await signupUser(srv.url, 'mem');
    const ws = await owner.http.post('/api/workspaces', { name: 'Team' });
    const wid = ws.body.id;
    const inv = await bearer(srv.url, owner.token).post('/api/workspace/invites', { email: member.email }, { 'x-workspace-id': wid });
    assert.equal(inv.status, 201);
    assert.equal((await member.http.post(`/api/invites/${inv.body.token}/accept`)).status, 200);
    const login = await anon.post('/api/auth/login', { email: member.email, password: member.password, workspace_id: wid });
    assert.equal(login.status, 200);
    const inTeam = bearer(srv.url, login.body.access_token);
    assert.equal((await inTeam.get('/api/jobs')).status, 200);
    assert.equal((await owner.http.delete(`/api/workspace/members/${member.id}`, undefined, { 'x-workspace-id': wid })).status, 204);
    assert.equal((await inTeam.get('/api/jobs')).status, 401);
    // Deleted workspace: the owner's team-bound token stops too.
    const ownerTeam = await anon.post('/api/auth/login', { email: owner.email, password: owner.password, workspace_id: wid });
    assert.equal((await bearer(srv.url, ownerTeam.body.access_token).get('/api/jobs')).status, 200);
    assert.equal((await owner.http.delete(`/api/workspaces/${wid}`)).status, 204);
    assert.equal((await bearer(srv.url, ownerTeam.body.access_token).get('/api/jobs')).status, 401);
    // X-Workspace-Id naming a workspace the caller is not in: 403.
    const r = await owner.http.get('/api/jobs', { 'x-workspace-id': member.workspaceId });
    assert.equal(r.status, 403);
    assert.ok(isCloudError(r.body, 'workspace_forbidden'));
  });

  test('hostile input on every cloud route: NUL, lone surrogates, huge numbers, deep JSON, wrong types → 4xx, never 500', async () => {
    const u = await signupUser(srv.url, 'hostile');
    const doc = (await anon.get('/openapi.json')).body;
    // Already percent-encoded: NUL, invalid UTF-8 (an encoded lone surrogate), a literal %00, a long number, empty.
    const values = ['%00', 'a%00b', '%ED%A0%80', 'x%ED%BF%BFy', '%2500', '9'.repeat(400), ''];
    const bodies: unknown[] = [
      { email: 'a\u0000@b.test', password: 'p\u0000assword1', name: '\ud800', description: '\u0000', message: '\udc00', role: '\u0000', display_name: '\ud800x', avatar_url: 'http://a\u0000', rating: 1e308, context: { a: '\u0000' }, redirect_uris: ['http://127.0.0.1/\u0000'], application_type: 'native', client_name: '\ud800', grant_type: 'refresh_token', refresh_token: '\u0000', oauth_request_id: '\u0000', csrf_token: '\u0000', decision: 'allow', workspace_id: '\u0000' },
      { name: 1e400, description: [], rating: -1, email: 5, password: {}, redirect_uris: 'x', application_type: 5 },
      JSON.parse('['.repeat(500) + ']'.repeat(500)),
      null,
      'plain string',
    ];
    let calls = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const method of Object.keys(item)) {
        if (!item[method]['x-runtime']) continue;
        const M = method.toUpperCase();
        for (const v of values) {
          const url = path.replace(/\{[^}]+\}/g, v);
          const r = await u.http.request(M, url + (path === '/oauth/authorize' ? `?client_id=${v}&oauth_request_id=${v}` : ''), M === 'GET' || M === 'DELETE' ? undefined : bodies[0], { 'x-workspace-id': v === '' ? u.workspaceId : v });
          calls++;
          assert.ok(r.status < 500, `${M} ${url}: ${r.status} ${r.text.slice(0, 200)}`);
        }
        if (M !== 'GET' && M !== 'DELETE') {
          for (const b of bodies) {
            const r = await u.http.request(M, path.replace(/\{[^}]+\}/g, 'x'), b);
            calls++;
            assert.ok(r.status < 500, `${M} ${path} ${JSON.stringify(b)?.slice(0, 80)}: ${r.status} ${r.text.slice(0, 200)}`);
          }
        }
      }
    }
    for (const q of ['client_id=\u0000', 'state=%00&client_id=x', 'response_type=code&client_id=dyn_x&redirect_uri=%00&state=%00']) {
      const r = await u.http.get(`/oauth/authorize?${q}`);
      assert.ok(r.status < 500, q);
    }
    const tok = await anon.post('/oauth/token', 'grant_type=refresh_token&client_id=%00&refresh_token=%00', { 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(tok.status, 400);
    assert.ok(calls > 100);
    // The user and the service are still fine.
    assert.equal((await u.http.get('/api/user')).status, 200);
  });

  test('the JWKS lists the signing key; after rotation the old key stays published and its tokens keep working', async () => {
    const u = await signupUser(srv.url, 'rotate');
    const before = (await anon.get('/.well-known/jwks.json')).body.keys;
    const kid = JSON.parse(Buffer.from(u.token.split('.')[0]!, 'base64url').toString()).kid;
    assert.ok(before.some((k: any) => k.kid === kid && k.kty === 'RSA' && k.use === 'sig' && k.alg === 'RS256' && !('d' in k)));
    await (srv.app as any).identity.keys.rotateNow();
    const u2 = await signupUser(srv.url, 'rotate2');
    const kid2 = JSON.parse(Buffer.from(u2.token.split('.')[0]!, 'base64url').toString()).kid;
    assert.notEqual(kid2, kid);
    const afterKeys = (await anon.get('/.well-known/jwks.json')).body.keys.map((k: any) => k.kid);
    assert.ok(afterKeys.includes(kid) && afterKeys.includes(kid2));
    assert.equal((await u.http.get('/api/jobs')).status, 200);
    assert.equal((await u2.http.get('/api/jobs')).status, 200);
  });
});

test('rate limits: login per address and per account, signup, answered 429 with Retry-After', async () => {
  const srv = await startWorkflow('sqlite', { runtime: 'cloud', authRateLimits: 'login=6,login_account=3,signup=3,token=1000,register=2' });
  try {
    const anon = client(srv.url);
    const u = await signupUser(srv.url, 'rl');
    for (let i = 0; i < 3; i++) assert.equal((await anon.post('/api/auth/login', { email: u.email, password: 'wrong-password' })).status, 401);
    let r = await anon.post('/api/auth/login', { email: u.email, password: u.password });
    assert.equal(r.status, 429);
    assert.ok(isCloudError(r.body, 'rate_limited'));
    assert.ok(Number(r.headers.get('retry-after')) >= 1);
    // Per address: other accounts from the same address run out too.
    r = await anon.post('/api/auth/login', { email: 'other@example.test', password: 'whatever-1' });
    assert.equal(r.status, 401);
    r = await anon.post('/api/auth/login', { email: 'other2@example.test', password: 'whatever-1' });
    assert.equal(r.status, 401);
    r = await anon.post('/api/auth/login', { email: 'other3@example.test', password: 'whatever-1' });
    assert.equal(r.status, 429);
    await signupUser(srv.url, 'rl2');
    await signupUser(srv.url, 'rl3');
    r = await anon.post('/api/auth/signup', { email: 'late@example.test', password: 'password-123' });
    assert.equal(r.status, 429);
    assert.ok(r.headers.get('retry-after'));
    const reg = { redirect_uris: ['http://127.0.0.1:9/cb'], application_type: 'native' };
    assert.equal((await anon.post('/oauth/register', reg)).status, 201);
    assert.equal((await anon.post('/oauth/register', reg)).status, 201);
    r = await anon.post('/oauth/register', reg);
    assert.equal(r.status, 429);
    assert.equal(r.body.error, 'rate_limited');
    assert.ok(r.headers.get('retry-after'));
  } finally {
    await srv.close();
  }
});

test('login with the memory-hard hash: concurrent logins are bounded, a flood beyond the queue is refused with 503', async () => {
  const srv = await startWorkflow('sqlite', { runtime: 'cloud', authRateLimits: 'login=100000,login_account=100000,signup=100000', passwordHashConcurrency: '1', passwordHashQueue: '2' });
  try {
    const u = await signupUser(srv.url, 'flood');
    const anon = client(srv.url);
    const all = await Promise.all(Array.from({ length: 12 }, () => anon.post('/api/auth/login', { email: u.email, password: u.password })));
    const codes = all.map((r) => r.status);
    assert.ok(codes.includes(200), String(codes));
    assert.ok(codes.includes(503), String(codes));
    for (const r of all.filter((x) => x.status === 503)) {
      assert.ok(isCloudError(r.body, 'busy'));
      assert.equal(r.headers.get('retry-after'), '1');
    }
    assert.ok(codes.every((c) => c === 200 || c === 503));
  } finally {
    await srv.close();
  }
});

test('the local runtime answers 404 for every path of the hosted runtime; the hosted OpenAPI marks them', async () => {
  const cloud = await startCloud('sqlite');
  const local = await startWorkflow('sqlite');
  try {
    const doc = (await client(cloud.url).get('/openapi.json')).body;
    const cloudOps: Array<[string, string]> = [];
    for (const [p, item] of Object.entries<any>(doc.paths)) {
      for (const [m, op] of Object.entries<any>(item)) {
        if (!op['x-runtime']) continue;
        assert.deepEqual(op['x-runtime'], ['cloud'], `${m} ${p}`);
        assert.ok(op.description.startsWith('[cloud-only] '), `${m} ${p}`);
        cloudOps.push([m.toUpperCase(), p]);
      }
    }
    for (const must of ['/api/auth/session', '/api/auth/token', '/api/auth/login', '/api/auth/signup', '/.well-known/jwks.json', '/oauth/token', '/oauth/register', '/oauth/authorize', '/api/workspaces/{id}', '/api/workspace/api-keys', '/api/workspace/members/{user_id}/api-keys', '/api/invites/{token}/accept', '/api/user', '/api/feedback', '/api/jobs/{job_id}/cancel', '/api/prompt/{prompt_id}', '/api/history_v2', '/api/viewvideo', '/api/experiment/nodes/{id}', '/api/tasks/{task_id}', '/api/assets/import', '/api/assets/remote-metadata', '/api/assets/exports/{exportName}', '/api/files/mask-layers', '/api/billing/balance', '/api/billing/subscription/resubscribe']) {
      assert.ok(cloudOps.some(([, p]) => p === must), must);
    }
    const localDoc = (await client(local.url).get('/openapi.json')).body;
    const anon = client(local.url);
    for (const [m, p] of cloudOps) {
      assert.equal(localDoc.paths[p]?.[m.toLowerCase()], undefined, `${m} ${p} in the local document`);
      const r = await anon.request(m, p.replace(/\{[^}]+\}/g, 'x'), m === 'GET' || m === 'DELETE' ? undefined : {});
      assert.equal(r.status, 404, `${m} ${p}`);
    }
  } finally {
    await cloud.close();
    await local.close();
  }
});

test('CLI: create-user makes a user with a personal workspace and prints its id; that user can log in', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-cli-'));
  // As the README runs it (npm run workflow -- create-user: scripts/run-service.mjs, the bundle of src/main.ts).
  const runService = path.join(import.meta.dirname, '..', '..', '..', 'scripts', 'run-service.mjs');
  const run = (args: string[]) => spawnSync(process.execPath, [runService, 'workflow', ...args], { encoding: 'utf8', env: { ...process.env, DATABASE_URL: '', LOG_LEVEL: 'silent' } });
  try {
    const r = run(['create-user', '--email', 'cli@example.test', '--password', 'cli-password-1', '--data-dir', dir]);
    assert.equal(r.status, 0, r.stderr);
    const id = r.stdout.trim();
    assert.match(id, /^[0-9a-f-]{36}$/);
    const again = run(['create-user', '--email', 'CLI@example.test', '--password', 'cli-password-1', '--data-dir', dir]);
    assert.equal(again.status, 1);
    assert.match(again.stderr, /already exists/);
    assert.equal(run(['create-user', '--email', 'bad', '--password', 'cli-password-1', '--data-dir', dir]).status, 2);
    const srv = await startWorkflow('sqlite', { runtime: 'cloud' }, { overrides: { dataDir: dir } });
    try {
      const login = await client(srv.url).post('/api/auth/login', { email: 'cli@example.test', password: 'cli-password-1' });
      assert.equal(login.status, 200);
      assert.equal(login.body.user.id, id);
      assert.equal(login.body.workspace.type, 'personal');
    } finally {
      await srv.app.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
