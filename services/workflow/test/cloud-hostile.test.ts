import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { client, forEachStorage } from '@svc/testkit';
import { buildApp } from '../src/app.ts';
import { addressAllowed, mappedIPv4, outboundConfig } from '../src/domain/cloud/outbound.ts';
import { MAX_SECRETS } from '../src/domain/cloud/secrets.ts';
import { MAX_OPEN_UPLOADS } from '../src/routes/hub.ts';
import { isCloudError, signupUser, startCloud, type TestUser } from './cloud-helpers.ts';
import { pollPause } from './helpers.ts';

/**
 * What a hostile client or a real one under load sends that the other tests
 * do not: concurrent writers of one per-workspace rule (on PostgreSQL from
 * two API processes on one database), bodies the framework refuses before a
 * route runs, and outbound destinations spelled to slip past the guard.
 */

test('outbound guard: public IPv4 and IPv6 destinations pass; every spelling of a special address is refused', () => {
  const cfg = outboundConfig('', {});
  // Classification only: nothing here opens a connection.
  for (const a of ['1.1.1.1', '8.8.8.8', '93.184.216.34', '151.101.1.1', '2606:4700::1111', '2a00:1450:4001::200e', '::ffff:8.8.8.8', '::ffff:808:808']) assert.equal(addressAllowed(cfg, a), true, a);
  for (const a of [
    '127.0.0.1', '127.255.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '255.255.255.255', '224.0.0.1',
    '::1', '::', '::ffff:127.0.0.1', '::ffff:7f00:1', '::FFFF:7F00:1', '0:0:0:0:0:ffff:7f00:1', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '::ffff:0.0.0.0',
    // IPv4-compatible and IPv4-translated forms, NAT64, 6to4, Teredo, documentation, ULA, link-local, site-local, multicast, not global unicast.
    '::127.0.0.1', '::7f00:1', '::a00:1', '::ffff:0:7f00:1', '64:ff9b::7f00:1', '64:ff9b:1::1', '2002:7f00:1::1', '2001::1', '2001:db8::1', '3fff::1',
    'fc00::1', 'fd12:3456::1', 'fe80::1', 'fec0::1', 'ff02::1', '100::1', '5f00::1', '4000::1', '1::1',
  ]) assert.equal(addressAllowed(cfg, a), false, a);
  assert.equal(mappedIPv4('::ffff:7f00:2'), '127.0.0.2');
  assert.equal(mappedIPv4('0:0:0:0:0:ffff:127.0.0.2'), '127.0.0.2');
  assert.equal(mappedIPv4('::7f00:2'), undefined);
  assert.equal(mappedIPv4('127.0.0.2'), undefined);
  // Allowed ranges open exactly what they name, mapped spellings included.
  const loop = outboundConfig('loopback', {});
  for (const a of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1']) assert.equal(addressAllowed(loop, a), true, a);
  for (const a of ['::7f00:1', '10.0.0.1', 'fd00::1']) assert.equal(addressAllowed(loop, a), false, a);
  const one = outboundConfig('127.0.0.1,10.0.0.0/8', {});
  for (const a of ['127.0.0.1', '::ffff:127.0.0.1', '10.9.9.9', '8.8.8.8']) assert.equal(addressAllowed(one, a), true, a);
  for (const a of ['127.0.0.2', '::1', '192.168.0.1']) assert.equal(addressAllowed(one, a), false, a);
});

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

/** The routes of one storage: `a` and `b` are two API processes on PostgreSQL (two apps on one schema), the same one on SQLite. */
forEachStorage('hosted runtime under hostile and concurrent clients', (storage) => {
  let srv: Awaited<ReturnType<typeof startCloud>>;
  let second: FastifyInstance | undefined;
  let urls: [string, string];
  before(async () => {
    srv = await startCloud(storage, { maxUploadSize: '1', outboundAllow: '127.0.0.1', outboundTimeoutMs: '2000' });
    if (storage === 'postgres') {
      second = await buildApp({ ...srv.cfg });
      urls = [srv.url, await second.listen({ port: 0, host: '127.0.0.1' })];
    } else urls = [srv.url, srv.url];
  });
  after(async () => {
    await second?.close();
    await srv.close();
  });

  /** The i-th of n concurrent requests goes to process i % 2. */
  const on = (u: TestUser, i: number, headers: Record<string, string> = {}) => client(urls[i % 2]!, { authorization: `Bearer ${u.token}`, ...headers });
  const concurrently = <T>(n: number, f: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => f(i)));
  const statuses = (rs: Array<{ status: number }>) => rs.map((r) => r.status).sort();

  test('a body over the limit is 413 and a Content-Type the server cannot read 415, in the service error shape; nothing is stored', async () => {
    const u = await signupUser(srv.url, 'big');
    // Over every limit of these routes (saved workflows take graphs of 8 MiB).
    const huge = Buffer.alloc(9 * 1024 * 1024, 0x20);
    huge.write('{"name":"huge","value":"', 0);
    huge.write('"}', huge.length - 2);
    for (const path of ['/api/secrets', '/api/workflows', '/api/hub/profiles', '/api/billing/topup']) {
      const r = await fetch(srv.url + path, { method: 'POST', headers: { authorization: `Bearer ${u.token}`, 'content-type': 'application/json' }, body: huge });
      assert.equal(r.status, 413, path);
      const body = await r.json();
      assert.ok(isCloudError(body, 'payload_too_large'), `${path}: ${JSON.stringify(body)}`);
    }
    const p = await fetch(srv.url + '/api/prompt', { method: 'POST', headers: { authorization: `Bearer ${u.token}`, 'content-type': 'application/json' }, body: huge });
    assert.equal(p.status, 413);
    const pb = await p.json();
    assert.equal(pb.error.type, 'invalid_prompt');
    assert.deepEqual(pb.node_errors, {});
    for (const ct of ['application/json, text/plain', 'text/html, application/json']) {
      const r = await fetch(srv.url + '/api/secrets', { method: 'POST', headers: { authorization: `Bearer ${u.token}`, 'content-type': ct }, body: '{"name":"ct","value":"v"}' });
      assert.equal(r.status, 415, ct);
      assert.ok(isCloudError(await r.json(), 'unsupported_media_type'), ct);
    }
    assert.deepEqual((await u.http.get('/api/secrets')).body, []);
    assert.equal((await u.http.post('/api/secrets', { name: 'after', value: 'v' })).status, 201);
  });

  test('a method a route does not answer is 405 with the Allow header (as the reference); HEAD of a GET route answers like GET without a body', async () => {
    const u = await signupUser(srv.url, 'methods');
    for (const [m, p, allow] of [['OPTIONS', '/api/secrets', 'GET, HEAD, POST'], ['DELETE', '/api/workflows', 'GET, HEAD, POST'], ['PUT', '/api/secrets/abc', 'DELETE, GET, HEAD, PATCH'], ['PATCH', '/api/prompt', 'GET, HEAD, POST']] as const) {
      const r = await fetch(srv.url + p, { method: m, headers: { authorization: `Bearer ${u.token}` } });
      assert.equal(r.status, 405, `${m} ${p}`);
      assert.equal(r.headers.get('allow'), allow, `${m} ${p}`);
    }
    const head = await fetch(`${srv.url}/api/billing/balance`, { method: 'HEAD', headers: { authorization: `Bearer ${u.token}` } });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), '');
    assert.equal((await fetch(`${srv.url}/api/billing/balance`, { method: 'HEAD' })).status, 401);
  });

  test('outbound guard: a redirect from an allowed host to any spelling of a refused address is refused, and that address is never contacted', async () => {
    const hits: string[] = [];
    // The allowed host (127.0.0.1) redirects to /to/<target>; the refused one (127.0.0.2, same port + 1 where free) records every request.
    const allowed = http.createServer((req, res) => {
      if (req.url!.startsWith('/to/')) {
        res.writeHead(302, { location: decodeURIComponent(req.url!.slice(4)) });
        return res.end();
      }
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end('png');
    });
    await new Promise<void>((r) => allowed.listen(0, '127.0.0.1', r));
    const port = (allowed.address() as AddressInfo).port;
    const refused = http.createServer((req, res) => {
      hits.push(req.url!);
      res.end('secret');
    });
    const refusedPort = await new Promise<number>((resolve, reject) => {
      refused.once('error', reject);
      refused.listen(0, '127.0.0.2', () => resolve((refused.address() as AddressInfo).port));
    });
    try {
      const u = await signupUser(srv.url, 'guard');
      const ok = await u.http.get(`/api/assets/remote-metadata?url=${encodeURIComponent(`http://127.0.0.1:${port}/file.png`)}`);
      assert.equal(ok.status, 200, ok.text);
      const p = refusedPort;
      const targets = [
        `http://127.0.0.2:${p}/a`, `http://2130706434:${p}/b`, `http://0x7f.0.0.2:${p}/c`, `http://0177.0.0.2:${p}/d`, `http://127.2:${p}/e`, `http://127.0.0.2.:${p}/f`,
        `http://[::ffff:127.0.0.2]:${p}/g`, `http://[::ffff:7f00:2]:${p}/h`, `http://[0:0:0:0:0:ffff:7f00:2]:${p}/i`, `//127.0.0.2:${p}/j`, `HTTP://%31%32%37.0.0.2:${p}/k`,
        `http://[::1]:${port}/l`,
      ];
      for (const t of targets) {
        for (const url of t.startsWith('//') ? [`http://127.0.0.1:${port}/to/${encodeURIComponent(t)}`] : [t, `http://127.0.0.1:${port}/to/${encodeURIComponent(t)}`]) {
          const r = await u.http.get(`/api/assets/remote-metadata?url=${encodeURIComponent(url)}`);
          assert.equal(r.status, 400, url);
          assert.ok(isCloudError(r.body, 'invalid_url'), url);
          assert.match(r.body.error, /not allowed/, url);
          const up = await u.http.post('/api/assets', { url });
          assert.equal(up.status, 400, url);
          assert.equal(up.body.error.code, 'INVALID_URL', url);
        }
      }
      assert.deepEqual(hits, [], 'the refused address was never contacted');
    } finally {
      allowed.close();
      refused.close();
    }
  });

  /** A team workspace of `owner`, with `member` joined. */
  async function team(owner: TestUser, member?: TestUser): Promise<string> {
    const w = await owner.http.post('/api/workspaces', { name: 'Team' });
    assert.equal(w.status, 201);
    if (member) {
      const inv = await on(owner, 0, { 'x-workspace-id': w.body.id }).post('/api/workspace/invites', { email: member.email, role: 'member' });
      assert.equal(inv.status, 201);
      assert.equal((await member.http.post(`/api/invites/${inv.body.token}/accept`)).status, 200);
    }
    return w.body.id;
  }

  test('concurrent invites of one email: exactly one 201, the others 409 invite_exists; one pending invite', async () => {
    const owner = await signupUser(srv.url, 'inv-owner');
    const guest = await signupUser(srv.url, 'inv-guest');
    const wid = await team(owner);
    const ws = { 'x-workspace-id': wid };
    const rs = await concurrently(8, (i) => on(owner, i, ws).post('/api/workspace/invites', { email: i % 2 ? guest.email : guest.email.toUpperCase(), role: 'member' }));
    assert.deepEqual(statuses(rs), [201, 409, 409, 409, 409, 409, 409, 409], rs.map((r) => r.text).join('\n'));
    for (const r of rs.filter((x) => x.status === 409)) assert.ok(isCloudError(r.body, 'invite_exists'));
    const pending = await on(owner, 0, ws).get('/api/workspace/invites');
    assert.equal(pending.body.length, 1);
    // Accepted: inviting the member again is already_member, cancelling and re-inviting works.
    const token = rs.find((r) => r.status === 201)!.body.token;
    assert.equal((await guest.http.post(`/api/invites/${token}/accept`)).status, 200);
    const again = await on(owner, 1, ws).post('/api/workspace/invites', { email: guest.email });
    assert.equal(again.status, 409);
    assert.ok(isCloudError(again.body, 'already_member'));
    const other = `other-${Date.now()}@example.test`;
    const first = await on(owner, 0, ws).post('/api/workspace/invites', { email: other });
    assert.equal(first.status, 201);
    assert.equal((await on(owner, 1, ws).delete(`/api/workspace/invites/${first.body.id}`)).status, 204);
    assert.equal((await on(owner, 0, ws).post('/api/workspace/invites', { email: other })).status, 201);
  });

  test(`concurrent secret creates at the limit: the workspace never holds more than ${MAX_SECRETS}`, async () => {
    const u = await signupUser(srv.url, 'sec-limit');
    for (let i = 0; i < MAX_SECRETS - 4; i += 28) {
      const batch = await concurrently(Math.min(28, MAX_SECRETS - 4 - i), (k) => on(u, k).post('/api/secrets', { name: `s${i + k}`, value: 'v' }));
      assert.ok(batch.every((r) => r.status === 201));
    }
    const rs = await concurrently(12, (i) => on(u, i).post('/api/secrets', { name: `extra${i}`, value: 'v' }));
    assert.equal(rs.filter((r) => r.status === 201).length, 4, rs.map((r) => r.status).join(' '));
    for (const r of rs.filter((x) => x.status !== 201)) {
      assert.equal(r.status, 409);
      assert.ok(isCloudError(r.body, 'too_many_secrets'));
    }
    assert.equal((await u.http.get('/api/secrets')).body.length, MAX_SECRETS);
    // Replacing an existing secret's value is not a new one: still allowed at the limit.
    assert.equal((await on(u, 1).post('/api/secrets', { name: 's0', value: 'w' })).status, 201);
  });

  test('concurrent deletes of one API key, and of one member: exactly one 204, the others 404', async () => {
    const owner = await signupUser(srv.url, 'del-owner');
    const member = await signupUser(srv.url, 'del-member');
    const key = await owner.http.post('/api/workspace/api-keys', { name: 'k' });
    assert.equal(key.status, 201);
    const dk = await concurrently(6, (i) => on(owner, i).delete(`/api/workspace/api-keys/${key.body.id}`));
    assert.deepEqual(statuses(dk), [204, 404, 404, 404, 404, 404]);
    for (const r of dk.filter((x) => x.status === 404)) assert.ok(isCloudError(r.body, 'not_found'));
    assert.equal((await client(srv.url, { authorization: `Bearer ${key.body.key}` }).get('/api/jobs')).status, 401);

    const wid = await team(owner, member);
    const ws = { 'x-workspace-id': wid };
    const dm = await concurrently(6, (i) => on(owner, i, ws).delete(`/api/workspace/members/${member.id}`));
    assert.deepEqual(statuses(dm), [204, 404, 404, 404, 404, 404]);
    // A role change of a member removed meanwhile does not report success.
    const patch = await on(owner, 1, ws).patch(`/api/workspace/members/${member.id}`, { role: 'admin' });
    assert.equal(patch.status, 404);
    assert.deepEqual((await on(owner, 0, ws).get('/api/workspace/members')).body.map((m: { user_id: string }) => m.user_id), [owner.id]);
  });

  /** A PNG upload of `u` (distinct content per name), answering the asset. */
  async function upload(u: TestUser, name: string): Promise<{ id: string }> {
    const fd = new FormData();
    fd.append('file', new Blob([Buffer.concat([PNG, Buffer.from(name)])], { type: 'image/png' }), name);
    const r = await fetch(`${srv.url}/api/assets`, { method: 'POST', headers: { authorization: `Bearer ${u.token}` }, body: fd });
    assert.equal(r.status, 201);
    return (await r.json()) as { id: string };
  }

  test('concurrent exports under one name: every one accepted with its own archive, never a 500', async () => {
    const u = await signupUser(srv.url, 'export');
    const asset = await upload(u, 'e.png');
    const rs = await concurrently(6, (i) => on(u, i).post('/api/assets/export', { asset_ids: [asset.id], export_name: 'same.zip' }));
    assert.deepEqual(statuses(rs), [202, 202, 202, 202, 202, 202], rs.map((r) => r.text).join('\n'));
    const names: string[] = [];
    for (const r of rs) {
      for (let attempt = 0; ; attempt++) {
        const t = await u.http.get(`/api/tasks/${r.body.task_id}`);
        if (t.body.status === 'completed' || t.body.status === 'failed') {
          assert.equal(t.body.status, 'completed', t.text);
          names.push(t.body.result.export_name);
          break;
        }
        await pollPause(attempt);
      }
    }
    assert.deepEqual(names.sort(), ['same-2.zip', 'same-3.zip', 'same-4.zip', 'same-5.zip', 'same-6.zip', 'same.zip']);
    for (const n of names) assert.equal((await fetch(`${srv.url}/api/assets/exports/${n}`, { headers: { authorization: `Bearer ${u.token}` } })).status, 200, n);
    // The same Idempotency-Key again is the first task; its reserved name is not left taken.
    const first = await u.http.post('/api/assets/export', { asset_ids: [asset.id], export_name: 'keyed.zip' }, { 'idempotency-key': 'k1' });
    const again = await u.http.post('/api/assets/export', { asset_ids: [asset.id], export_name: 'keyed.zip' }, { 'idempotency-key': 'k1' });
    assert.equal(again.body.task_id, first.body.task_id);
    const next = await u.http.post('/api/assets/export', { asset_ids: [asset.id], export_name: 'keyed.zip' });
    assert.equal(next.status, 202);
    for (let attempt = 0; ; attempt++) {
      const t = await u.http.get(`/api/tasks/${next.body.task_id}`);
      if (t.body.status === 'completed') {
        assert.equal(t.body.result.export_name, 'keyed-2.zip');
        break;
      }
      assert.notEqual(t.body.status, 'failed', t.text);
      await pollPause(attempt);
    }
  });

  test('an asset changed, tagged and deleted at once: no 5xx, 404 for whoever comes after the delete, and no tag outlives it', async () => {
    const u = await signupUser(srv.url, 'asset-race');
    for (let round = 0; round < 4; round++) {
      const asset = await upload(u, `r${round}.png`);
      const tag = `race-${storage}-${round}`;
      const rs = await concurrently(12, (i) => {
        const c = on(u, i);
        if (i === 5) return c.delete(`/api/assets/${asset.id}`);
        if (i % 3 === 0) return c.put(`/api/assets/${asset.id}`, { name: `n${i}.png`, user_metadata: { i } });
        if (i % 3 === 1) return c.post(`/api/assets/${asset.id}/tags`, { tags: [tag, `${tag}-${i}`] });
        return c.request('DELETE', `/api/assets/${asset.id}/tags`, { tags: [tag] });
      });
      for (const [i, r] of rs.entries()) {
        assert.ok(r.status === 200 || r.status === 204 || r.status === 404, `${i}: ${r.status} ${r.text}`);
        if (r.status === 404) assert.equal(r.body.error.code, 'ASSET_NOT_FOUND');
      }
      assert.equal(rs[5]!.status, 204);
      assert.equal((await u.http.get(`/api/assets/${asset.id}`)).status, 404);
      const tags = (await u.http.get('/api/tags?limit=500')).body.tags.map((t: { name: string }) => t.name);
      assert.ok(!tags.some((t: string) => t.startsWith(tag)), `tags of a deleted asset: ${tags.join(',')}`);
    }
  });

  test(`hub upload URLs: concurrent requests never open more than ${MAX_OPEN_UPLOADS}; concurrent PUTs to one URL store it once`, async () => {
    const u = await signupUser(srv.url, 'hub-up');
    const ask = (i: number) => on(u, i).post('/api/hub/assets/upload-url', { filename: `t${i}.png`, content_type: 'image/png' });
    for (let i = 0; i < MAX_OPEN_UPLOADS - 4; i += 24) assert.ok((await concurrently(Math.min(24, MAX_OPEN_UPLOADS - 4 - i), ask)).every((r) => r.status === 200));
    const rs = await concurrently(12, ask);
    assert.equal(rs.filter((r) => r.status === 200).length, 4, rs.map((r) => r.status).join(' '));
    for (const r of rs.filter((x) => x.status !== 200)) {
      assert.equal(r.status, 429);
      assert.ok(isCloudError(r.body, 'too_many_uploads'));
    }
    const url = new URL(rs.find((r) => r.status === 200)!.body.upload_url);
    const puts = await concurrently(6, (i) => fetch(`${urls[i % 2]}${url.pathname}${url.search}`, { method: 'PUT', headers: { 'content-type': 'image/png' }, body: PNG }));
    assert.deepEqual(puts.map((r) => r.status).sort(), [200, 409, 409, 409, 409, 409]);
    // That one is used now: room for exactly one more.
    assert.equal((await ask(0)).status, 200);
    assert.equal((await ask(1)).status, 429);
  });

  test('concurrent downloads of different assets to one input path: each lands in a file of its own, with its own bytes', async () => {
    const u = await signupUser(srv.url, 'dl-race');
    const assets = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((n) => upload(u, `${n}.png`)));
    const rs = await concurrently(assets.length, (i) => on(u, i).post('/api/assets/download', { assets: [{ asset_id: assets[i]!.id, target_path: 'same.png' }] }));
    assert.ok(rs.every((r) => r.status === 202), rs.map((r) => r.text).join('\n'));
    const names = new Set<string>();
    for (const [i, r] of rs.entries()) {
      let t;
      for (let attempt = 0; ; attempt++) {
        t = await u.http.get(`/api/tasks/${r.body.task_id}`);
        if (t.body.status === 'completed' || t.body.status === 'failed') break;
        await pollPause(attempt);
      }
      assert.equal(t.body.status, 'completed', t.text);
      const f = t.body.result.files[0];
      names.add(f.filename);
      const view = await fetch(`${srv.url}/api/view?type=input&filename=${encodeURIComponent(f.filename)}`, { headers: { authorization: `Bearer ${u.token}` } });
      assert.equal(view.status, 200);
      assert.deepEqual(Buffer.from(await view.arrayBuffer()), Buffer.concat([PNG, Buffer.from(`${'abcde'[i]}.png`)]), f.filename);
    }
    assert.deepEqual([...names].sort(), ['same (1).png', 'same (2).png', 'same (3).png', 'same (4).png', 'same.png']);
    // The same asset again to that path is the file already there, not a sixth copy.
    const again = await u.http.post('/api/assets/download', { assets: [{ asset_id: assets[0]!.id, target_path: 'same.png' }] });
    for (let attempt = 0; ; attempt++) {
      const t = await u.http.get(`/api/tasks/${again.body.task_id}`);
      if (t.body.status === 'completed') {
        assert.ok(names.has(t.body.result.files[0].filename));
        break;
      }
      assert.notEqual(t.body.status, 'failed', t.text);
      await pollPause(attempt);
    }
  });

  test('a workspace renamed and deleted at once, and deletes of one workspace or workflow: no 5xx, one 204, 404 for the rest', async () => {
    const owner = await signupUser(srv.url, 'ws-race');
    for (let round = 0; round < 3; round++) {
      const wid = await team(owner);
      const rs = await concurrently(8, (i) => (i === 3 ? on(owner, i).delete(`/api/workspaces/${wid}`) : on(owner, i).patch(`/api/workspaces/${wid}`, { name: `n${i}` })));
      for (const [i, r] of rs.entries()) {
        if (i === 3) assert.equal(r.status, 204, r.text);
        else {
          assert.ok(r.status === 200 || r.status === 404, `${r.status} ${r.text}`);
          if (r.status === 404) assert.ok(isCloudError(r.body, 'not_found'));
        }
      }
      // Asked of the process that deleted it (another one may serve its cached membership for --auth-cache-ttl-ms).
      assert.equal((await on(owner, 3).get(`/api/workspaces/${wid}`)).status, 404);
    }
    const wid = await team(owner);
    assert.deepEqual(statuses(await concurrently(4, (i) => on(owner, i).delete(`/api/workspaces/${wid}`))), [204, 404, 404, 404]);
    const w = await owner.http.post('/api/workflows', { name: 'w', content: { nodes: [] } });
    const ws = await concurrently(6, (i) => (i < 3 ? on(owner, i).delete(`/api/workflows/${w.body.id}`) : on(owner, i).patch(`/api/workflows/${w.body.id}`, { name: `p${i}` })));
    assert.equal(ws.slice(0, 3).filter((r) => r.status === 204).length, 1, ws.map((r) => r.status).join(' '));
    for (const r of ws) assert.ok([200, 204, 404].includes(r.status), r.text);
    assert.equal((await owner.http.patch(`/api/workflows/${w.body.id}`, { name: 'late' })).status, 404);
  });

  test('the same PUT /api/hub/profiles/me sent at once creates one profile and answers every request with it', async () => {
    const u = await signupUser(srv.url, 'hub-me');
    const username = `me${storage}${Date.now() % 1_000_000}`;
    const rs = await concurrently(8, (i) => on(u, i).put('/api/hub/profiles/me', { username, display_name: `D${i % 2}` }));
    assert.deepEqual(rs.map((r) => r.status), [200, 200, 200, 200, 200, 200, 200, 200], rs.map((r) => r.text).join('\n'));
    for (const r of rs) assert.equal(r.body.username, username);
    const me = await u.http.get('/api/hub/profiles/me');
    assert.equal(me.body.username, username);
    assert.ok(['D0', 'D1'].includes(me.body.display_name));
    // Concurrent unpublishes of one entry: one 204, the others 404.
    const w = await u.http.post('/api/workflows', { name: 'pub', content: { nodes: [] } });
    const pub = await u.http.post('/api/hub/workflows', { username, name: 'pub', workflow_filename: w.body.id, asset_ids: [] });
    assert.equal(pub.status, 200, pub.text);
    const un = await concurrently(4, (i) => on(u, i).delete(`/api/hub/workflows/${pub.body.share_id}`));
    assert.deepEqual(statuses(un), [204, 404, 404, 404]);
  });

  test('an asset deleted with its content while the same bytes are uploaded again: the new asset keeps its bytes', async () => {
    const u = await signupUser(srv.url, 'content-race');
    const post = async (url: string, name: string, data: Buffer) => {
      const fd = new FormData();
      fd.append('file', new Blob([new Uint8Array(data)], { type: 'image/png' }), name);
      const r = await fetch(`${url}/api/assets`, { method: 'POST', headers: { authorization: `Bearer ${u.token}` }, body: fd });
      return { status: r.status, body: (await r.json()) as { id: string; hash: string } };
    };
    for (let round = 0; round < 15; round++) {
      const data = Buffer.concat([PNG, Buffer.from(`round ${round}`)]);
      const first = await post(urls[0], `a${round}.png`, data);
      assert.equal(first.status, 201);
      const [del, second] = await Promise.all([
        fetch(`${urls[0]}/api/assets/${first.body.id}?delete_content=true`, { method: 'DELETE', headers: { authorization: `Bearer ${u.token}` } }),
        post(urls[1], `b${round}.png`, data),
      ]);
      assert.equal(del.status, 204);
      assert.equal(second.status, 201);
      const content = await fetch(`${srv.url}/api/assets/${second.body.id}/content`, { headers: { authorization: `Bearer ${u.token}` } });
      assert.equal(content.status, 200, `round ${round}`);
      assert.deepEqual(Buffer.from(await content.arrayBuffer()), data);
      // Linking the same bytes by hash works while a reference holds them.
      assert.equal((await u.http.post('/api/assets/from-hash', { hash: second.body.hash, name: `c${round}.png`, tags: ['input'] })).status, 201);
    }
  });

  test('previews: two assets previewing each other deleted at once, and a preview set while it is deleted, leave no 5xx and no dangling preview', async () => {
    const u = await signupUser(srv.url, 'preview-race');
    for (let round = 0; round < 4; round++) {
      const x = await upload(u, `x${round}.png`);
      const y = await upload(u, `y${round}.png`);
      assert.equal((await u.http.put(`/api/assets/${x.id}`, { preview_id: y.id })).status, 200);
      assert.equal((await u.http.put(`/api/assets/${y.id}`, { preview_id: x.id })).status, 200);
      const dels = await Promise.all([on(u, 0).delete(`/api/assets/${x.id}`), on(u, 1).delete(`/api/assets/${y.id}`)]);
      assert.deepEqual(dels.map((r) => r.status), [204, 204], dels.map((r) => r.text).join(' '));

      const z = await upload(u, `z${round}.png`);
      const w = await upload(u, `w${round}.png`);
      const rs = await concurrently(5, (i) => (i === 2 ? on(u, i).delete(`/api/assets/${w.id}`) : on(u, i).put(`/api/assets/${z.id}`, { preview_id: w.id })));
      for (const [i, r] of rs.entries()) {
        assert.ok(i === 2 ? r.status === 204 : r.status === 200 || r.status === 404, `${i}: ${r.status} ${r.text}`);
        if (r.status === 404) assert.equal(r.body.error.code, 'ASSET_NOT_FOUND');
      }
      const after = await u.http.get(`/api/assets/${z.id}`);
      assert.equal(after.status, 200);
      assert.equal(after.body.preview_id, undefined, 'no preview pointing at a deleted asset');
    }
  });
});
