import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { client, forEachStorage } from '@svc/testkit';
import { signupUser, TEST_LIMITS, type TestUser } from './cloud-helpers.ts';
import { pollPause, startWorkflow, waitJob, WsClient } from './helpers.ts';

type Srv = Awaited<ReturnType<typeof startWorkflow>>;

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360f8cfc0f01f0005000201a5e7d0d20000000049454e44ae426082', 'hex');

/** A loopback listener standing in for remote hosts: the only destination any test here uses. */
async function remoteHost(): Promise<{ url: string; close(): Promise<void>; hits: Map<string, number> }> {
  const hits = new Map<string, number>();
  const srv = http.createServer((req, res) => {
    hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
    if (req.url === '/file.png') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length, 'content-disposition': 'attachment; filename="remote.png"' });
      return res.end(PNG);
    }
    if (req.url === '/sniff/picture.bin') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      return res.end(PNG);
    }
    if (req.url === '/redirect') {
      res.writeHead(302, { location: '/file.png' });
      return res.end();
    }
    if (req.url === '/other.bin') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      return res.end(Buffer.concat([PNG, Buffer.from(`other bytes ${Math.random()}`)]));
    }
    // Never answers: the guard's time limit ends the wait.
    if (req.url === '/hang') return;
    if (req.url === '/missing') {
      res.writeHead(404);
      return res.end();
    }
    if (req.url === '/endless.bin') {
      // Never ends: only a client that stops after the first bytes gets an answer.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 7);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      res.on('close', () => res.removeAllListeners('drain'));
      return pump();
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  };
}

/** Entries of a zip archive written with stored (uncompressed) entries. */
function unzip(buf: Buffer): Map<string, Buffer> {
  const eocd = buf.length - 22;
  assert.equal(buf.readUInt32LE(eocd), 0x06054b50, 'end of central directory');
  const count = buf.readUInt16LE(eocd + 10);
  let p = buf.readUInt32LE(eocd + 16);
  const out = new Map<string, Buffer>();
  for (let i = 0; i < count; i++) {
    assert.equal(buf.readUInt32LE(p), 0x02014b50);
    const size = buf.readUInt32LE(p + 24);
    const nameLen = buf.readUInt16LE(p + 28);
    const extra = buf.readUInt16LE(p + 30);
    const comment = buf.readUInt16LE(p + 32);
    const local = buf.readUInt32LE(p + 42);
    const name = buf.subarray(p + 46, p + 46 + nameLen).toString('utf8');
    assert.equal(buf.readUInt32LE(local), 0x04034b50);
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    out.set(name, buf.subarray(start, start + size));
    p += 46 + nameLen + extra + comment;
  }
  return out;
}

async function upload(srv: Srv, user: TestUser, name: string, subfolder = ''): Promise<any> {
  const form = new FormData();
  form.append('image', new Blob([PNG], { type: 'image/png' }), name);
  if (subfolder) form.append('subfolder', subfolder);
  const r = await fetch(`${srv.url}/api/upload/image`, { method: 'POST', body: form, headers: { authorization: `Bearer ${user.token}` } });
  assert.equal(r.status, 200);
  return r.json();
}

/** A shared (public, owner '') asset: a model file the operator placed, registered as seeding registers it. */
async function publicAsset(srv: Srv, name: string): Promise<{ id: string; hash: string; size: number }> {
  const dir = path.join(srv.cfg.dataDir, 'models', 'checkpoints');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, name), Buffer.concat([PNG, Buffer.from(name)]));
  const c = await (srv.app as any).cloudOps.deps.assets.registerFile({ type: 'models', subfolder: 'checkpoints', filename: name, owner: '' });
  return c.row;
}

async function waitTask(user: TestUser, id: string): Promise<any> {
  for (let attempt = 0; ; attempt++) {
    const r = await user.http.get(`/api/tasks/${id}`);
    assert.equal(r.status, 200, r.text);
    if (r.body.status === 'completed' || r.body.status === 'failed') return r.body;
    await pollPause(attempt);
  }
}

forEachStorage('hosted runtime: cloud assets', (storage) => {
  let srv: Srv;
  let strict: Srv;
  let remote: Awaited<ReturnType<typeof remoteHost>>;
  let a: TestUser;
  let b: TestUser;

  before(async () => {
    remote = await remoteHost();
    // The guard allows loopback here (configuration) …
    srv = await startWorkflow(storage, { runtime: 'cloud', authRateLimits: TEST_LIMITS, outboundAllow: 'loopback', outboundTimeoutMs: '2000', maxUploadSize: '1' });
    // … and refuses it by default.
    strict = await startWorkflow(storage, { runtime: 'cloud', authRateLimits: TEST_LIMITS });
    a = await signupUser(srv.url, 'assets-a');
    b = await signupUser(srv.url, 'assets-b');
  });
  after(async () => {
    await srv.close();
    await strict.close();
    await remote.close();
  });

  test('remote-metadata: headers and first bytes only, through the outbound guard', async () => {
    const r = await a.http.get(`/api/assets/remote-metadata?url=${encodeURIComponent(`${remote.url}/file.png`)}`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { content_type: 'image/png', content_length: PNG.length, filename: 'remote.png' });
    const sniffed = await a.http.get(`/api/assets/remote-metadata?url=${encodeURIComponent(`${remote.url}/sniff/picture.bin`)}`);
    assert.deepEqual(sniffed.body, { content_type: 'image/png', filename: 'picture.bin' });
    const endless = await a.http.get(`/api/assets/remote-metadata?url=${encodeURIComponent(`${remote.url}/endless.bin`)}`);
    assert.equal(endless.status, 200);
    assert.deepEqual(endless.body, { content_type: 'application/octet-stream', filename: 'endless.bin' });
    const redirected = await a.http.get(`/api/assets/remote-metadata?url=${encodeURIComponent(`${remote.url}/redirect`)}`);
    assert.equal(redirected.body.filename, 'remote.png');

    const u = await signupUser(strict.url, 'strict');
    const before = remote.hits.get('/file.png');
    for (const url of [`${remote.url}/file.png`, remote.url.replace('127.0.0.1', 'localhost') + '/file.png', 'http://[::1]:9/x', 'http://0.0.0.0:9/x', 'http://127.1:9/x', 'http://[::ffff:127.0.0.1]:9/x']) {
      const refused = await u.http.get(`/api/assets/remote-metadata?url=${encodeURIComponent(url)}`);
      assert.equal(refused.status, 400, url);
      assert.equal(refused.body.code, 'invalid_url');
      assert.match(refused.body.error, /not allowed/, url);
    }
    assert.equal(remote.hits.get('/file.png'), before, 'the refused server was never contacted');
    for (const [q, status] of [['', 400], ['url=', 400], ['url=ftp%3A%2F%2F127.0.0.1%2Fx', 400], ['url=not-a-url', 400], [`url=${encodeURIComponent(`http://user:pw@127.0.0.1:1/x`)}`, 400], [`url=${encodeURIComponent(`${remote.url}/missing`)}`, 400]] as const) {
      const bad = await a.http.get(`/api/assets/remote-metadata?${q}`);
      assert.equal(bad.status, status, q);
      assert.equal(typeof bad.body.error, 'string');
    }
    assert.equal((await client(srv.url).get(`/api/assets/remote-metadata?url=${encodeURIComponent(`${remote.url}/file.png`)}`)).status, 401);
    const hung = await a.http.get(`/api/assets/remote-metadata?url=${encodeURIComponent(`${remote.url}/hang`)}`);
    assert.equal(hung.status, 400);
    assert.match(hung.body.error, /did not answer within 2000 ms/);
  });

  test('POST /api/assets with a JSON url; include_public and asset_hash filters', async () => {
    const r = await a.http.post('/api/assets', { url: `${remote.url}/file.png`, tags: ['remote'] });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.name, 'remote.png');
    assert.equal(r.body.created_new, true);
    assert.equal(r.body.mime_type, 'image/png');
    assert.equal(r.body.size, PNG.length);
    assert.match(r.body.hash, /^blake3:[0-9a-f]{64}$/);
    assert.ok(r.body.tags.includes('remote'));
    const again = await a.http.post('/api/assets', { url: `${remote.url}/file.png`, tags: ['remote'] });
    assert.equal(again.status, 200);
    assert.equal(again.body.id, r.body.id);
    assert.equal(again.body.created_new, false);

    const tooBig = await a.http.post('/api/assets', { url: `${remote.url}/endless.bin` });
    assert.equal(tooBig.status, 413);
    assert.equal(tooBig.body.error.code, 'FILE_TOO_LARGE');
    assert.equal((await a.http.post('/api/assets', { nope: 1 })).status, 415, 'a JSON body without url is not an upload');
    const u = await signupUser(strict.url, 'strict2');
    const refused = await u.http.post('/api/assets', { url: `${remote.url}/file.png` });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, 'INVALID_URL');
    for (const body of [{ url: 5 }, { url: '' }, { url: `${remote.url}/file.png`, tags: 'x' }, { url: `${remote.url}/file.png`, id: 'not-a-uuid' }]) {
      const bad = await a.http.post('/api/assets', body);
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.equal(typeof bad.body.error.code, 'string');
    }

    const shared = await publicAsset(srv, `shared-model-${storage}.bin`);
    const all = await a.http.get('/api/assets?limit=100');
    assert.ok(all.body.assets.some((x: any) => x.id === shared.id), 'shared assets are listed by default');
    const own = await a.http.get('/api/assets?limit=100&include_public=false');
    assert.ok(!own.body.assets.some((x: any) => x.id === shared.id));
    assert.ok(own.body.assets.some((x: any) => x.id === r.body.id));
    assert.equal((await a.http.get('/api/assets?include_public=maybe')).status, 400);
    const byHash = await a.http.get(`/api/assets?asset_hash=${r.body.hash}&include_public=false`);
    assert.deepEqual(byHash.body.assets.map((x: any) => x.id), [r.body.id]);
    assert.equal((await b.http.get(`/api/assets?asset_hash=${r.body.hash}&include_public=false`)).body.assets.length, 0);
  });

  test('import: a published asset becomes the caller’s without copying; unpublished ones are refused', async () => {
    const shared = await publicAsset(srv, `published-model-${storage}.bin`);
    const pub = (await b.http.get(`/api/assets/${shared.id}`)).body;
    assert.equal(pub.id, shared.id, 'the shared asset is visible');
    const r = await b.http.post('/api/assets/import', { published_asset_ids: [pub.id] });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.assets.length, 1);
    const info = r.body.assets[0];
    assert.notEqual(info.id, pub.id);
    assert.equal(info.filename, `published-model-${storage}.bin`);
    assert.equal(info.size_bytes, shared.size);
    assert.equal(typeof info.mime_type, 'string');
    const mine = await b.http.get(`/api/assets/${info.id}`);
    assert.equal(mine.status, 200);
    assert.equal(mine.body.hash, pub.hash);
    assert.ok((await b.http.get('/api/assets?include_public=false&limit=100')).body.assets.some((x: any) => x.id === info.id));
    // Importing again returns the same asset.
    assert.equal((await b.http.post('/api/assets/import', { published_asset_ids: [pub.id] })).body.assets[0].id, info.id);

    const aPrivate = (await a.http.post('/api/assets', { url: `${remote.url}/sniff/picture.bin` })).body;
    const refused = await b.http.post('/api/assets/import', { published_asset_ids: [aPrivate.id] });
    assert.equal(refused.status, 400);
    assert.deepEqual(refused.body, { error: 'Some assets are not published', code: 'asset_not_published', details: { asset_ids: [aPrivate.id] } });
    const noShare = await b.http.post('/api/assets/import', { published_asset_ids: [pub.id], share_id: 'no-such-share' });
    assert.equal(noShare.status, 400);
    assert.equal(noShare.body.code, 'share_not_found');
    // A publishes a workflow to the hub with one of its private assets: B may import that one (with or without the share id), not another.
    const hubName = `pub${process.pid % 1000}${storage}${Math.random().toString(36).slice(2, 6)}`;
    assert.equal((await a.http.post('/api/hub/profiles', { workspace_id: a.workspaceId, username: hubName })).status, 201);
    const wf = await a.http.post('/api/workflows', { name: 'shared wf', content: { nodes: [] } });
    const listed = (await a.http.post('/api/assets', { url: `${remote.url}/other.bin`, name: 'listed.png' })).body;
    const hub = await a.http.post('/api/hub/workflows', { username: hubName, name: 'With assets', workflow_filename: wf.body.id, asset_ids: [listed.id] });
    assert.equal(hub.status, 200, hub.text);
    const viaShare = await b.http.post('/api/assets/import', { published_asset_ids: [listed.id], share_id: hub.body.share_id });
    assert.equal(viaShare.status, 200, viaShare.text);
    assert.equal(viaShare.body.assets[0].filename, 'listed.png');
    assert.equal((await b.http.get(`/api/assets/${viaShare.body.assets[0].id}`)).body.hash, listed.hash);
    assert.equal((await b.http.post('/api/assets/import', { published_asset_ids: [listed.id] })).status, 200);
    const notInShare = await b.http.post('/api/assets/import', { published_asset_ids: [aPrivate.id], share_id: hub.body.share_id });
    assert.deepEqual(notInShare.body, { error: 'Some assets do not belong to this share', code: 'asset_not_published', details: { asset_ids: [aPrivate.id] } });
    for (const body of [{}, { published_asset_ids: [] }, { published_asset_ids: ['x'] }, { published_asset_ids: 'x' }, { published_asset_ids: [pub.id], share_id: 5 }]) {
      const bad = await b.http.post('/api/assets/import', body);
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.equal(bad.body.code, 'invalid_request');
    }
  });

  test('from-workflow: a job’s outputs as assets, with tags; another workspace gets 404', async () => {
    const id = (
      await a.http.post('/api/prompt', {
        prompt: {
          1: { class_type: 'EmptyImage', inputs: { width: 4, height: 4, batch_size: 2, color: 0x102030 } },
          2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'fw' } },
        },
      })
    ).body.prompt_id;
    await waitJob(a.http, id);
    const r = await a.http.post('/api/assets/from-workflow', { prompt_id: id, tags: ['Keep', 'keep'] });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.assets.length, 2);
    for (const asset of r.body.assets) {
      assert.equal(asset.job_id, id);
      assert.ok(asset.tags.includes('keep'));
      assert.ok(asset.tags.includes('output'));
    }
    const foreign = await b.http.post('/api/assets/from-workflow', { prompt_id: id });
    assert.equal(foreign.status, 404);
    assert.deepEqual(foreign.body, { error: 'Job not found', code: 'not_found', details: {} });
    assert.equal((await a.http.post('/api/assets/from-workflow', { prompt_id: 'x' })).status, 400);
    assert.equal((await a.http.post('/api/assets/from-workflow', { prompt_id: id, tags: [1] })).status, 400);
  });

  test('download and export run as tasks with WebSocket progress; the export is a real zip', async () => {
    const ws = new WsClient(srv.url, 'assets-ws', { headers: { authorization: `Bearer ${a.token}` } });
    const wsB = new WsClient(srv.url, 'assets-ws-b', { headers: { authorization: `Bearer ${b.token}` } });
    await Promise.all([ws.opened, wsB.opened]);
    const x = (await a.http.post('/api/assets', { url: `${remote.url}/file.png`, name: 'one.png' })).body;
    const y = (await a.http.post('/api/assets', { url: `${remote.url}/sniff/picture.bin`, name: 'two.png' })).body;

    const dl = await a.http.post('/api/assets/download', { assets: [{ asset_id: x.id, target_path: `dl-${storage}/got.png` }, { asset_id: y.id }] });
    assert.equal(dl.status, 202, dl.text);
    assert.deepEqual(Object.keys(dl.body).sort(), ['message', 'status', 'task_id']);
    assert.equal(dl.body.status, 'created');
    const done = await ws.until((ms) => ms.find((m) => m.type === 'asset_download' && m.data.task_id === dl.body.task_id && m.data.status === 'completed'));
    assert.equal(done.data.progress, 1);
    assert.ok(ws.messages.some((m) => m.type === 'asset_download' && m.data.status === 'running' && m.data.progress > 0 && m.data.progress < 1));
    const task = await waitTask(a, dl.body.task_id);
    assert.equal(task.status, 'completed');
    assert.equal(task.task_name, 'asset_download');
    assert.deepEqual(task.result.files[0], { asset_id: x.id, filename: 'got.png', subfolder: `dl-${storage}`, type: 'input' });
    const view = await fetch(`${srv.url}/api/view?type=input&subfolder=dl-${storage}&filename=got.png`, { headers: { authorization: `Bearer ${a.token}` } });
    assert.equal(view.status, 200);
    assert.deepEqual(Buffer.from(await view.arrayBuffer()), PNG);

    const ex = await a.http.post('/api/assets/export', { asset_ids: [x.id, y.id], export_name: `my export ${storage}` });
    assert.equal(ex.status, 202, ex.text);
    const exTask = await waitTask(a, ex.body.task_id);
    assert.equal(exTask.status, 'completed', exTask.error);
    const name = `my export ${storage}.zip`;
    assert.equal(exTask.result.export_name, name);
    await ws.until((ms) => ms.find((m) => m.type === 'asset_export' && m.data.task_id === ex.body.task_id && m.data.status === 'completed'));
    const zip = await fetch(`${srv.url}/api/assets/exports/${encodeURIComponent(name)}`, { headers: { authorization: `Bearer ${a.token}` } });
    assert.equal(zip.status, 200);
    assert.equal(zip.headers.get('content-type'), 'application/zip');
    const entries = unzip(Buffer.from(await zip.arrayBuffer()));
    assert.deepEqual([...entries.keys()].sort(), ['one.png', 'two.png']);
    assert.deepEqual(entries.get('one.png'), PNG);
    // The same name again gets a counter.
    const ex2 = await a.http.post('/api/assets/export', { asset_ids: [x.id], export_name: `my export ${storage}` });
    assert.equal((await waitTask(a, ex2.body.task_id)).result.export_name, `my export ${storage}-2.zip`);

    // B sees none of it: not the tasks, not the export, not the messages; B cannot export A's assets.
    assert.equal((await b.http.get(`/api/tasks/${ex.body.task_id}`)).status, 404);
    const foreign = await b.http.get(`/api/assets/exports/${encodeURIComponent(name)}`);
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.code, 'not_found');
    assert.ok(!JSON.stringify(wsB.messages).includes(ex.body.task_id));
    assert.equal((await b.http.post('/api/assets/export', { asset_ids: [x.id] })).status, 400);
    assert.equal((await b.http.post('/api/assets/download', { assets: [{ asset_id: x.id }] })).status, 400);
    for (const body of [{}, { assets: [] }, { assets: [{}] }, { assets: [{ asset_id: x.id, target_path: '../../etc/x' }] }, { assets: [{ asset_id: x.id, target_path: 'a\\..\\..\\x.png' }] }, { assets: [{ asset_id: x.id, target_path: 'C:/x.png' }] }, { assets: 'x' }]) {
      const bad = await a.http.post('/api/assets/download', body);
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.equal(bad.body.code, 'invalid_request');
    }
    for (const body of [{}, { asset_ids: [] }, { asset_ids: [x.id], export_name: '../x' }, { asset_ids: [x.id], export_name: 5 }]) {
      assert.equal((await a.http.post('/api/assets/export', body)).status, 400, JSON.stringify(body));
    }
    assert.equal((await a.http.get('/api/assets/exports/nope.zip')).status, 404);
    ws.close();
    wsB.close();
  });

  test('mask layers: any of the four names gives all four', async () => {
    const id = `${storage}${Date.now()}`;
    for (const layer of ['mask', 'paint', 'painted', 'painted-masked']) await upload(srv, a, `clipspace-${layer}-${id}.png`, 'clipspace');
    const expected = { mask: `clipspace/clipspace-mask-${id}.png`, paint: `clipspace/clipspace-paint-${id}.png`, painted: `clipspace/clipspace-painted-${id}.png`, painted_masked: `clipspace/clipspace-painted-masked-${id}.png` };
    for (const name of Object.values(expected)) {
      const r = await a.http.get(`/api/files/mask-layers?filename=${encodeURIComponent(name)}`);
      assert.equal(r.status, 200, name);
      assert.deepEqual(r.body, expected);
    }
    for (const q of [`filename=clipspace%2Fclipspace-mask-nope.png`, 'filename=..%2F..%2Fclipspace-mask-1.png', 'filename=plain.png']) {
      const r = await a.http.get(`/api/files/mask-layers?${q}`);
      assert.equal(r.status, 404, q);
      assert.equal(r.body.code, 'not_found');
    }
    assert.equal((await a.http.get('/api/files/mask-layers')).status, 400);
  });
});

test('local runtime: the cloud asset paths answer 404; a JSON url upload goes through the same guard', async () => {
  const srv = await startWorkflow('sqlite');
  try {
    const refused = await srv.http.post('/api/assets', { url: 'http://127.0.0.1:9/x.png' });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, 'INVALID_URL');
    for (const [m, p] of [['POST', '/api/assets/import'], ['GET', '/api/assets/remote-metadata?url=x'], ['POST', '/api/assets/download'], ['POST', '/api/assets/export'], ['GET', '/api/assets/exports/x.zip'], ['POST', '/api/assets/from-workflow'], ['GET', '/api/files/mask-layers?filename=x'], ['GET', '/api/tasks'], ['GET', '/api/tasks/x']]) {
      const r = await srv.http.request(m!, p!, m === 'POST' ? {} : undefined);
      assert.equal(r.status, 404, `${m} ${p}`);
    }
  } finally {
    await srv.close();
  }
});
