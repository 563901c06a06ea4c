import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { Honcho } from '@honcho-ai/sdk';
import { client, forEachStorage } from '@svc/testkit';
import { adminKey, signKey } from '../../src/domain/v3/keys.ts';
import { V3_POLICIES } from '../../src/http/v3-auth.ts';
import { uniq, useServer } from '../helpers.ts';

/**
 * Scoped JWT keys (the reference's AUTH_USE_AUTH): POST /v3/keys, the 401
 * bodies, and a generated check over every v3 operation of the service's own
 * /openapi.json: which keys reach it, derived from the path's shape (not from
 * the service's policy table), for admin, API, workspace, peer and session keys.
 */
const SECRET = 'test-secret-of-issue-23';
const API_KEY = 'plain-api-key-1';
const wsName = (p: string) => uniq(p).replace(/[^a-zA-Z0-9_-]/g, '_');
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const bearer = (k: string) => ({ authorization: `Bearer ${k}` });

type Kind = 'admin' | 'self' | 'workspace' | 'peer' | 'session' | 'session-read';

/** What the reference's require_auth gives each route, from its path and method alone. */
function kindOf(method: string, path: string): Kind {
  if (path === '/v3/keys' || path === '/v3/workspaces/list') return 'admin';
  if (method === 'post' && /^\/v3\/workspaces(\/\{workspace_id\}\/(peers|sessions))?$/.test(path)) return 'self';
  // The scopes router: workspace-level keys only, although one of its paths names a session.
  if (path.includes('/scopes')) return 'workspace';
  if (path.includes('/sessions/{session_id}')) {
    return method === 'get' || /\/(messages\/list|search)$/.test(path) ? 'session-read' : 'session';
  }
  if (path.includes('/peers/{peer_id}')) return 'peer';
  return 'workspace';
}

forEachStorage('memory v3 scoped keys', (storage) => {
  const s = useServer(storage, { authUseAuth: true, authJwtSecret: SECRET, apiKeys: [API_KEY] });
  const W = wsName('ws');
  const W2 = wsName('other');
  const admin = adminKey(SECRET);

  it('POST /v3/keys: admin only, the reference checks, and keys that work until they expire', async () => {
    const http = client(s.url, bearer(admin));
    let r = await s.http.post('/v3/keys?workspace_id=x');
    assert.deepEqual([r.status, r.body], [401, { detail: 'No access token provided' }]);
    r = await http.post('/v3/keys');
    assert.deepEqual([r.status, r.body], [422, { detail: 'At least one of workspace_id, peer_id, or session_id must be provided' }]);
    r = await http.post('/v3/keys?peer_id=alice');
    assert.deepEqual([r.status, r.body], [422, { detail: 'workspace_id is required when scoping a key to a peer or session' }]);
    r = await http.post('/v3/keys?workspace_id=x&expires_at=not-a-date');
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail[0].loc, ['query', 'expires_at']);
    r = await http.post(`/v3/keys?workspace_id=${W}`);
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body), ['key']);
    const wsKey = r.body.key as string;
    const [h, p] = wsKey.split('.');
    assert.deepEqual(JSON.parse(Buffer.from(h!, 'base64url').toString()), { alg: 'HS256', typ: 'JWT' });
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
    assert.deepEqual(Object.keys(claims), ['t', 'w']);
    assert.equal(claims.w, W);
    // The admin key is the reference's: {"t":"","ad":true} signed with the secret.
    assert.equal(admin.split('.')[1], b64({ t: '', ad: true }));

    const ws = client(s.url, bearer(wsKey));
    r = await ws.post('/v3/workspaces', { id: W });
    assert.ok(r.status === 201 || r.status === 200, r.text);
    r = await ws.post('/v3/keys?workspace_id=x');
    assert.deepEqual([r.status, r.body], [401, { detail: 'Resource requires admin privileges' }]);
    r = await ws.post('/v3/workspaces/list', {});
    assert.deepEqual([r.status, r.body], [401, { detail: 'Resource requires admin privileges' }]);
    r = await ws.post('/v3/workspaces', { id: W2 });
    assert.deepEqual([r.status, r.body], [401, { detail: 'Unauthorized access to resource' }]);
    r = await ws.put(`/v3/workspaces/${W2}`, { metadata: {} });
    assert.deepEqual([r.status, r.body], [401, { detail: 'JWT not permissioned for this resource' }]);

    // Expiry: a past expires_at is refused, a future one works.
    r = await http.post(`/v3/keys?workspace_id=${W}&expires_at=2000-01-01T00:00:00Z`);
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(Buffer.from(r.body.key.split('.')[1], 'base64url').toString()).exp, '2000-01-01T00:00:00Z');
    let res = await client(s.url, bearer(r.body.key)).post(`/v3/workspaces/${W}/peers/list`, {});
    assert.deepEqual([res.status, res.body], [401, { detail: 'JWT expired' }]);
    r = await http.post(`/v3/keys?workspace_id=${W}&expires_at=${new Date(Date.now() + 3600_000).toISOString()}`);
    res = await client(s.url, bearer(r.body.key)).post(`/v3/workspaces/${W}/peers/list`, {});
    assert.equal(res.status, 200, res.text);

    // Tokens that are not ours.
    const forged = `${h}.${p}.${createHmac('sha256', 'other').update(`${h}.${p}`).digest('base64url')}`;
    const none = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ t: '', ad: true })}.`;
    const hs512 = signKey({ t: '', ad: true }, SECRET).replace(/^[^.]+/, b64({ alg: 'HS512', typ: 'JWT' }));
    for (const bad of [forged, none, hs512, 'garbage', 'a.b.c', `${wsKey}x`, 'x'.repeat(10000)]) {
      res = await client(s.url, bearer(bad)).post(`/v3/workspaces/${W}/peers/list`, {});
      assert.deepEqual([res.status, res.body], [401, { detail: 'Invalid JWT' }], bad.slice(0, 40));
    }
    const noWorkspace = signKey({ t: 'x', p: 'alice' }, SECRET);
    res = await client(s.url, bearer(noWorkspace)).post(`/v3/workspaces/${W}/peers/list`, {});
    assert.deepEqual([res.status, res.body], [401, { detail: 'Invalid JWT scope: peer/session token missing workspace' }]);
    for (const hdr of ['Basic abc', 'Bearer', 'Bearer   ']) {
      res = await s.http.post(`/v3/workspaces/${W}/peers/list`, {}, { authorization: hdr });
      assert.deepEqual([res.status, res.body], [401, { detail: 'No access token provided' }], hdr);
    }
  });

  it('every v3 operation of /openapi.json admits exactly the keys of its scope', async () => {
    const http = client(s.url, bearer(admin));
    // alice is an active member of s1, bob of none; s2 exists.
    assert.ok((await http.post('/v3/workspaces', { id: W })).status < 300);
    assert.ok((await http.post(`/v3/workspaces/${W}/sessions`, { id: 's1', peers: { alice: {} } })).status < 300);
    assert.ok((await http.post(`/v3/workspaces/${W}/sessions`, { id: 's2' })).status < 300);
    assert.ok((await http.post(`/v3/workspaces/${W}/peers`, { id: 'bob' })).status < 300);
    const mint = async (q: string) => (await http.post(`/v3/keys?${q}`)).body.key as string;
    const keys: Record<string, string> = {
      admin,
      api: API_KEY,
      ws: await mint(`workspace_id=${W}`),
      otherWs: await mint(`workspace_id=${W2}`),
      alice: await mint(`workspace_id=${W}&peer_id=alice`),
      bob: await mint(`workspace_id=${W}&peer_id=bob`),
      s1: await mint(`workspace_id=${W}&session_id=s1`),
      s2: await mint(`workspace_id=${W}&session_id=s2`),
      aliceOtherWs: await mint(`workspace_id=${W2}&peer_id=alice`),
    };
    const allowed = (key: string, kind: Kind, method: string, path: string): boolean => {
      if (key === 'admin' || key === 'api') return true;
      if (kind === 'admin') return false;
      if (key === 'otherWs' || key === 'aliceOtherWs') return false;
      if (kind === 'self') {
        // Bodies name W, alice and s1 (below): a peer key may create only its peer, a session key only its session.
        if (path.endsWith('/peers')) return key !== 'bob';
        if (path.endsWith('/sessions')) return key !== 's2';
        return true;
      }
      if (key === 'ws') return true;
      if (key === 's1') return kind === 'session' || kind === 'session-read';
      if (key === 's2') return false;
      if (key === 'alice') return kind === 'peer' || kind === 'session-read';
      return false; // bob: not alice, not a member of s1
    };
    const doc = (await s.http.get('/openapi.json')).body;
    const ops: Array<[string, string]> = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      if (!path.startsWith('/v3/')) continue;
      for (const method of Object.keys(item)) if (['get', 'post', 'put', 'delete'].includes(method)) ops.push([method, path]);
    }
    assert.ok(ops.length >= 45, `v3 operations in /openapi.json: ${ops.length}`);
    // Every operation has a policy in the service (a missing one would refuse every scoped key).
    for (const [method, path] of ops) {
      const pattern = path.replace(/\{(\w+)\}/g, ':$1');
      assert.ok(V3_POLICIES[`${method.toUpperCase()} ${pattern}`], `no policy for ${method} ${path}`);
    }
    // Deletions last, so that the session and workspace used by the others stay.
    ops.sort((a, b) => Number(a[0] === 'delete' && !a[1].includes('/peers')) - Number(b[0] === 'delete' && !b[1].includes('/peers')) || (a[1].length - b[1].length) * (a[0] === 'delete' ? -1 : 0));
    let checked = 0;
    for (const [method, path] of ops) {
      const kind = kindOf(method, path);
      const url = path
        .replace('{workspace_id}', W)
        .replace('{peer_id}', 'alice')
        .replace('{session_id}', 's1')
        .replace(/\{\w+\}/g, 'nonexistent');
      const body = kind === 'self' ? { id: path.endsWith('/peers') ? 'alice' : path.endsWith('/sessions') ? 's1' : W } : undefined;
      // Refused keys first: an admitted DELETE changes what later keys would see.
      const order = Object.keys(keys).sort((a, b) => Number(allowed(a, kind, method, path)) - Number(allowed(b, kind, method, path)));
      const none = await s.http.request(method.toUpperCase(), url, body);
      assert.deepEqual([none.status, none.body], [401, { detail: 'No access token provided' }], `${method} ${path} without a key`);
      for (const k of order) {
        const r = await client(s.url, bearer(keys[k]!)).request(method.toUpperCase(), url, body);
        const want = allowed(k, kind, method, path);
        if (want) assert.ok(r.status !== 401 && r.status < 500, `${method} ${path} with the ${k} key: ${r.status} ${r.text.slice(0, 200)}`);
        else {
          assert.equal(r.status, 401, `${method} ${path} with the ${k} key should be refused: ${r.status} ${r.text.slice(0, 200)}`);
          assert.equal(typeof r.body.detail, 'string');
        }
        checked++;
      }
    }
    assert.ok(checked >= 45 * 9);
  });

  it('checks on ids in bodies and queries: chat sessions, context perspective, peer config', async () => {
    const w = wsName('w');
    const http = client(s.url, bearer(admin));
    await http.post('/v3/workspaces', { id: w });
    await http.post(`/v3/workspaces/${w}/sessions`, { id: 'mine', peers: { alice: {}, bob: {} } });
    await http.post(`/v3/workspaces/${w}/sessions`, { id: 'theirs', peers: { bob: {} } });
    const alice = client(s.url, bearer((await http.post(`/v3/keys?workspace_id=${w}&peer_id=alice`)).body.key));
    let r = await alice.post(`/v3/workspaces/${w}/peers/alice/chat`, { query: 'hi', session_id: 'mine' });
    assert.equal(r.status, 200, r.text);
    r = await alice.post(`/v3/workspaces/${w}/peers/alice/chat`, { query: 'hi', session_id: 'theirs' });
    assert.deepEqual([r.status, r.body], [401, { detail: 'JWT not permissioned for this resource' }]);
    r = await alice.post(`/v3/workspaces/${w}/peers/alice/chat`, { query: 'hi', filters: { session_id: ['mine', 'theirs'] } });
    assert.deepEqual([r.status, r.body], [401, { detail: 'JWT not permissioned for this resource' }]);
    r = await alice.get(`/v3/workspaces/${w}/sessions/mine/context?peer_target=alice`);
    assert.equal(r.status, 200, r.text);
    r = await alice.get(`/v3/workspaces/${w}/sessions/mine/context?peer_target=bob`);
    assert.deepEqual([r.status, r.body], [401, { detail: 'JWT not permissioned for this resource' }]);
    r = await alice.get(`/v3/workspaces/${w}/sessions/mine/context?peer_target=bob&peer_perspective=alice`);
    assert.equal(r.status, 200, r.text);
    r = await alice.get(`/v3/workspaces/${w}/sessions/mine/peers/alice/config`);
    assert.equal(r.status, 200, r.text);
    r = await alice.get(`/v3/workspaces/${w}/sessions/mine/peers/bob/config`);
    assert.deepEqual([r.status, r.body], [401, { detail: 'JWT not permissioned for this resource' }]);
    r = await alice.get(`/v3/workspaces/${w}/sessions/theirs/peers`);
    assert.deepEqual([r.status, r.body], [401, { detail: 'JWT not permissioned for this resource' }]);
    // Scopes reach past a peer's own sessions: workspace and admin keys only.
    await http.post(`/v3/workspaces/${w}/scopes`, { id: 'team' });
    r = await alice.post(`/v3/workspaces/${w}/peers/alice/chat`, { query: 'hi', scope: 'team' });
    assert.deepEqual([r.status, r.body], [401, { detail: '`scope` requires a workspace- or admin-level key' }]);
    r = await alice.post(`/v3/workspaces/${w}/peers/alice/representation`, { scope: ['team'] });
    assert.deepEqual([r.status, r.body], [401, { detail: '`scope` requires a workspace- or admin-level key' }]);
    const mineKey = client(s.url, bearer((await http.post(`/v3/keys?workspace_id=${w}&session_id=mine`)).body.key));
    r = await mineKey.post(`/v3/workspaces/${w}/sessions`, { id: 'mine', scopes: ['team'] });
    assert.deepEqual([r.status, r.body], [401, { detail: 'Scope membership requires a workspace-level key' }]);
    r = await mineKey.get(`/v3/workspaces/${w}/sessions/mine/context?peer_target=alice&scope=team`);
    assert.deepEqual([r.status, r.body], [401, { detail: '`scope` requires a workspace- or admin-level key' }]);
    // Leaving the session ends the member reads.
    await http.delete(`/v3/workspaces/${w}/sessions/mine/peers`, ['alice']);
    r = await alice.post(`/v3/workspaces/${w}/sessions/mine/messages/list`, {});
    assert.deepEqual([r.status, r.body], [401, { detail: 'JWT not permissioned for this resource' }]);
  });

  it("the seed's API takes an admin key or an API key, not a scoped key", async () => {
    let r = await s.http.get('/apps/name/nothing');
    assert.deepEqual([r.status, r.body], [401, { detail: 'Not authenticated' }]);
    r = await s.http.get('/apps/name/nothing', bearer(admin));
    assert.equal(r.status, 404);
    r = await s.http.get('/apps/name/nothing', bearer(API_KEY));
    assert.equal(r.status, 404);
    r = await s.http.get('/apps/name/nothing', bearer(signKey({ t: '', w: 'x' }, SECRET)));
    assert.deepEqual([r.status, r.body], [401, { detail: 'Invalid API key' }]);
    assert.equal((await s.http.get('/health')).status, 200);
  });

  it('the TypeScript SDK works with a scoped key inside its scope and is refused outside it', async () => {
    const w = wsName('sdk');
    const http = client(s.url, bearer(admin));
    await http.post('/v3/workspaces', { id: w });
    const key = (await http.post(`/v3/keys?workspace_id=${w}&peer_id=alice`)).body.key;
    const honcho = new Honcho({ baseURL: s.url, apiKey: key, workspaceId: w });
    const alice = await honcho.peer('alice');
    await alice.setMetadata({ role: 'tester' });
    assert.deepEqual(await alice.getMetadata(), { role: 'tester' });
    const refused = (e: any) => e?.name === 'AuthenticationError';
    await assert.rejects(() => honcho.peer('bob'), refused, 'a peer key creates no other peer');
    await assert.rejects(() => honcho.peers(), refused, 'a peer key lists no peers of the workspace');
    const other = new Honcho({ baseURL: s.url, apiKey: key, workspaceId: wsName('elsewhere') });
    await assert.rejects(() => other.peer('alice'), refused, 'nor reaches another workspace');
  });
});

describe('memory v3 keys with auth off', () => {
  const s = useServer('sqlite');
  it('POST /v3/keys is 405 Feature is disabled, and routes ignore the header', async () => {
    const r = await s.http.post('/v3/keys?workspace_id=x', undefined, bearer('anything'));
    assert.deepEqual([r.status, r.body], [405, { detail: 'Feature is disabled' }]);
    assert.equal((await s.http.post('/v3/workspaces', { id: wsName('open') }, bearer('anything'))).status, 201);
  });
});
