import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import WebSocket from 'ws';
import { startWorkflow, textPrompt, waitJob } from './helpers.ts';

test('--api-key: every route and the WebSocket need the key (Bearer or ?token=); /health does not', async () => {
  const srv = await startWorkflow('sqlite', { apiKey: 's3cret-key' });
  try {
    let r = await srv.http.get('/api/queue');
    assert.equal(r.status, 401);
    assert.equal(r.headers.get('www-authenticate'), 'Bearer');
    r = await srv.http.get('/api/queue', { authorization: 'Bearer wrong' });
    assert.equal(r.status, 401);
    r = await srv.http.get('/api/queue', { authorization: 'Bearer s3cret-key' });
    assert.equal(r.status, 200);
    r = await srv.http.get('/queue?token=s3cret-key');
    assert.equal(r.status, 200);
    r = await srv.http.post('/prompt?token=s3cret-key', { prompt: textPrompt('k') });
    assert.equal(r.status, 200);
    assert.equal((await srv.http.get('/health')).status, 200);
    const refused = await new Promise<number>((resolve) => {
      const ws = new WebSocket(srv.url.replace('http', 'ws') + '/ws');
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
    });
    assert.equal(refused, 401);
    const opened = await new Promise<number>((resolve) => {
      const ws = new WebSocket(srv.url.replace('http', 'ws') + '/ws?token=s3cret-key');
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => {
        ws.terminate();
        resolve(101);
      });
    });
    assert.equal(opened, 101);
  } finally {
    await srv.close();
  }
});

test('origin guard: a loopback Host with a foreign Origin is refused; --enable-cors-header allows it', async () => {
  const srv = await startWorkflow('sqlite');
  try {
    const host = new URL(srv.url).host;
    let r = await srv.http.post('/prompt', { prompt: textPrompt('o') }, { origin: 'http://evil.example' });
    assert.equal(r.status, 403);
    r = await srv.http.get('/queue', { origin: `http://${host}` });
    assert.equal(r.status, 200);
    r = await srv.http.post('/prompt', { prompt: textPrompt('o') }, { origin: `http://${host}` });
    assert.equal(r.status, 200);
    await waitJob(srv.http, r.body.prompt_id);
  } finally {
    await srv.close();
  }
  const cors = await startWorkflow('sqlite', { enableCorsHeader: 'http://app.example' });
  try {
    const r = await cors.http.get('/queue', { origin: 'http://app.example' });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('access-control-allow-origin'), 'http://app.example');
  } finally {
    await cors.close();
  }
});

test('CORS on the hosted runtime: a preflight allows the credential and workspace headers a browser client sends', async () => {
  const srv = await startWorkflow('sqlite', { runtime: 'cloud', enableCorsHeader: 'http://app.example' });
  try {
    const r = await fetch(`${srv.url}/api/jobs`, { method: 'OPTIONS', headers: { origin: 'http://app.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-api-key, x-workspace-id' } });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('access-control-allow-origin'), 'http://app.example');
    const allowed = (r.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/,\s*/);
    for (const h of ['authorization', 'content-type', 'x-api-key', 'x-csrf-token', 'x-workspace-id']) assert.ok(allowed.includes(h), `${h} in ${allowed}`);
    assert.match(r.headers.get('access-control-expose-headers') ?? '', /Retry-After/);
    // The preflight is no way around authentication: the request itself still needs a credential.
    const get = await fetch(`${srv.url}/api/jobs`, { headers: { origin: 'http://app.example' } });
    assert.equal(get.status, 401);
  } finally {
    await srv.close();
  }
});

test('object_info: NodeInfo fields, ETag and 304, per-class lookup and 404; system_stats and features', async () => {
  const srv = await startWorkflow('sqlite');
  try {
    const r = await srv.http.get('/api/object_info');
    assert.equal(r.status, 200);
    const etag = r.headers.get('etag')!;
    assert.ok(etag);
    const save = r.body.SaveImage;
    for (const k of ['input', 'input_order', 'output', 'output_is_list', 'output_name', 'name', 'display_name', 'description', 'python_module', 'category', 'output_node']) assert.ok(k in save, k);
    assert.equal(save.output_node, true);
    assert.equal(save.essentials_category, 'Basics');
    assert.ok('essentials_category' in r.body.PrimitiveInt);
    assert.equal(r.body.PrimitiveInt.essentials_category, null);
    assert.deepEqual(save.input.hidden, { prompt: 'PROMPT', extra_pnginfo: 'EXTRA_PNGINFO' });
    const again = await fetch(`${srv.url}/object_info`, { headers: { 'if-none-match': `W/"x", ${etag}` } });
    assert.equal(again.status, 304);
    const one = await srv.http.get('/object_info/StringConcatenate');
    assert.deepEqual(Object.keys(one.body), ['StringConcatenate']);
    assert.equal((await srv.http.get('/object_info/Nope')).status, 404);
    const stats = await srv.http.get('/api/system_stats');
    assert.equal(stats.body.devices[0].index, null);
    assert.ok('index' in stats.body.devices[0]);
    assert.equal(typeof stats.body.system.ram_total, 'number');
    const f = await srv.http.get('/features');
    assert.equal(f.body.supports_preview_metadata, true);
    assert.equal(f.body.max_upload_size, 100 * 1024 * 1024);
  } finally {
    await srv.close();
  }
});

test('cloud-only paths answer 404 on the local runtime', async () => {
  const srv = await startWorkflow('sqlite');
  try {
    for (const [m, p] of [
      ['GET', '/api/workspaces'],
      ['POST', '/api/workspace/api-keys'],
      ['GET', '/api/secrets'],
      ['GET', '/api/hub/labels'],
      ['GET', '/api/secrets/00000000-0000-0000-0000-000000000000'],
      ['GET', '/api/workflows'],
      ['POST', '/api/workflows/00000000-0000-0000-0000-000000000000/versions'],
      ['GET', '/api/workflows/published/abc'],
      ['GET', '/api/userdata/workflows%2Fa.json/publish'],
      ['POST', '/api/userdata/workflows%2Fa.json/publish'],
      ['GET', '/api/hub/profiles/me'],
      ['GET', '/api/hub/workflows/index'],
      ['POST', '/api/hub/assets/upload-url'],
      ['GET', '/api/billing/balance'],
      ['GET', '/api/tasks'],
      ['GET', '/api/history_v2'],
      ['GET', '/.well-known/jwks.json'],
      ['POST', '/oauth/token'],
      ['GET', '/api/experiment/nodes'],
      ['POST', '/api/jobs/x/cancel'],
      ['GET', '/api/prompt/x'],
      ['GET', '/api/job/x/status'],
      ['GET', '/api/logs'],
      ['GET', '/api/viewvideo?filename=x'],
      ['GET', '/api/tasks/x'],
      ['POST', '/api/assets/import'],
      ['POST', '/api/assets/download'],
      ['POST', '/api/assets/export'],
      ['GET', '/api/assets/exports/x.zip'],
      ['POST', '/api/assets/from-workflow'],
      ['GET', '/api/assets/remote-metadata?url=x'],
      ['GET', '/api/files/mask-layers?filename=x'],
      ['GET', '/api/billing/plans'],
      ['POST', '/api/billing/topup'],
    ]) {
      const r = await srv.http.request(m!, p!);
      assert.equal(r.status, 404, `${m} ${p}`);
    }
  } finally {
    await srv.close();
  }
});
