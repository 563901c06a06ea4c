import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { client, forEachStorage } from '@svc/testkit';
import { signupUser, TEST_LIMITS, type TestUser } from './cloud-helpers.ts';
import { startWorkflow } from './helpers.ts';

type Srv = Awaited<ReturnType<typeof startWorkflow>>;

// A 1x1 PNG.
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360f8cfc0f01f0005000201a5e7d0d20000000049454e44ae426082', 'hex');

forEachStorage('hosted runtime: /api/experiment/nodes', (storage) => {
  let srv: Srv;
  let a: TestUser;
  let b: TestUser;

  before(async () => {
    srv = await startWorkflow(storage, { runtime: 'cloud', authRateLimits: TEST_LIMITS }, { packs: ['gate-pack.mjs', 'progress-pack.mjs'] });
    a = await signupUser(srv.url, 'exp-a');
    b = await signupUser(srv.url, 'exp-b');
  });
  after(async () => srv.close());

  test('the static schema: the same bytes for everyone, ETag and Cache-Control, no workspace file names', async () => {
    const form = new FormData();
    form.append('image', new Blob([PNG], { type: 'image/png' }), 'a-private-upload.png');
    const up = await fetch(`${srv.url}/api/upload/image`, { method: 'POST', body: form, headers: { authorization: `Bearer ${a.token}` } });
    assert.equal(up.status, 200);
    const anon = await client(srv.url).get('/api/experiment/nodes');
    const mine = await a.http.get('/api/experiment/nodes');
    assert.equal(anon.status, 200);
    assert.equal(anon.text, mine.text);
    assert.match(anon.headers.get('content-type')!, /^application\/json/);
    assert.match(anon.headers.get('etag')!, /^"[^"]+"$/);
    assert.equal(anon.headers.get('etag')!, mine.headers.get('etag')!);
    assert.match(anon.headers.get('cache-control')!, /max-age=\d+/);
    assert.ok(anon.body.TestGate && anon.body.LoadImage && anon.body.SaveImage);
    assert.deepEqual(anon.body.LoadImage.input.required.image[0], []);
    assert.ok(!anon.text.includes('a-private-upload'));
    // object_info (the per-workspace view) does list the upload; the static schema never does.
    assert.ok((await a.http.get('/api/object_info/LoadImage')).text.includes('a-private-upload'));
  });

  test('If-None-Match: list, weak comparison, "*", commas inside tags; malformed lists get the full answer', async () => {
    const first = await client(srv.url).get('/api/experiment/nodes');
    const etag: string = first.headers.get('etag')!;
    const hits = [etag, `W/${etag}`, `"nope", ${etag}`, `"x,y" , W/${etag}`, '*', ` ${etag} `, `,,${etag},`];
    for (const inm of hits) {
      const r = await client(srv.url, { 'if-none-match': inm }).get('/api/experiment/nodes');
      assert.equal(r.status, 304, inm);
      assert.equal(r.text, '');
      assert.equal(r.headers.get('etag')!, etag);
      assert.ok(r.headers.get('cache-control')!);
    }
    const misses = ['"nope"', etag.slice(1, -1), `W/"${etag.slice(1, -1)}x"`, `${etag} junk`, '"unterminated', 'W/'];
    for (const inm of misses) {
      const r = await client(srv.url, { 'if-none-match': inm }).get('/api/experiment/nodes');
      assert.equal(r.status, 200, inm);
      assert.equal(r.text, first.text);
    }
  });

  test('one node: NodeInfo with its own ETag, 304, and a CloudError 404', async () => {
    const r = await client(srv.url).get('/api/experiment/nodes/TestGate');
    assert.equal(r.status, 200);
    assert.equal(r.body.name, 'TestGate');
    assert.equal(r.body.python_module, 'custom_nodes.gate-pack');
    assert.ok('essentials_category' in r.body);
    const all = await client(srv.url).get('/api/experiment/nodes');
    assert.deepEqual(r.body, all.body.TestGate);
    assert.notEqual(r.headers.get('etag')!, all.headers.get('etag')!);
    const again = await client(srv.url, { 'if-none-match': `W/${r.headers.get('etag')!}` }).get('/api/experiment/nodes/TestGate');
    assert.equal(again.status, 304);
    assert.equal((await client(srv.url, { 'if-none-match': all.headers.get('etag')! }).get('/api/experiment/nodes/TestGate')).status, 200);
    const missing = await client(srv.url).get('/api/experiment/nodes/NoSuchNode');
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, { error: 'Node not found', code: 'not_found', details: {} });
  });

  test('node packs per workspace: install by id or repository URL, reinstall, uninstall', async () => {
    const r = await a.http.post('/api/experiment/nodes', { id: 'gate-pack', version: '1.2.0' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.id, 'gate-pack');
    assert.equal(r.body.name, 'gate-pack');
    assert.equal(r.body.version, '1.2.0');
    assert.equal(r.body.enabled, true);
    assert.ok(r.body.description.includes('TestGate'));
    assert.ok(Date.parse(r.body.installed_at) > 0);
    const byUrl = await a.http.post('/api/experiment/nodes', { id: 'http://127.0.0.1/packs/progress-pack.git' });
    assert.equal(byUrl.status, 200, byUrl.text);
    assert.equal(byUrl.body.id, 'progress-pack');
    assert.equal(byUrl.body.version, 'latest');
    const re = await a.http.post('/api/experiment/nodes', { id: 'gate-pack', version: '2.0.0' });
    assert.equal(re.body.version, '2.0.0');

    const unknown = await a.http.post('/api/experiment/nodes', { id: 'no-such-pack' });
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { error: 'Node package not found', code: 'not_found', details: {} });
    for (const body of [{}, { id: 5 }, { id: '' }, { id: 'gate-pack', version: 7 }, { id: 'a\u0000' }, [1]]) {
      const bad = await a.http.post('/api/experiment/nodes', body);
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.equal(bad.body.code, 'invalid_request');
    }
    // B has installed nothing: A's packs are A's.
    const foreign = await b.http.delete('/api/experiment/nodes/gate-pack');
    assert.equal(foreign.status, 404);
    assert.deepEqual(foreign.body, { error: 'Node package not installed', code: 'not_found', details: {} });
    assert.equal((await a.http.delete('/api/experiment/nodes/gate-pack')).status, 204);
    assert.equal((await a.http.delete('/api/experiment/nodes/gate-pack')).status, 404);
    assert.equal((await a.http.delete('/api/experiment/nodes/progress-pack')).status, 204);
    assert.equal((await client(srv.url).post('/api/experiment/nodes', { id: 'gate-pack' })).status, 401);
    assert.equal((await client(srv.url).delete('/api/experiment/nodes/gate-pack')).status, 401);
  });
});

test('local runtime: /api/experiment/nodes answers 404', async () => {
  const srv = await startWorkflow('sqlite');
  try {
    for (const [m, p] of [['GET', '/api/experiment/nodes'], ['GET', '/api/experiment/nodes/SaveImage'], ['POST', '/api/experiment/nodes'], ['DELETE', '/api/experiment/nodes/x']]) {
      assert.equal((await srv.http.request(m!, p!)).status, 404, `${m} ${p}`);
    }
  } finally {
    await srv.close();
  }
});
