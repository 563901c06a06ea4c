import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { getBytes, png } from './files-helpers.ts';
import { startWorkflow, WsClient } from './helpers.ts';

function write(file: string, data: string | Buffer): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, data);
}

function safetensors(meta: Record<string, string>): Buffer {
  const header = Buffer.from(JSON.stringify({ __metadata__: meta }));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(header.length));
  return Buffer.concat([len, header]);
}

forEachStorage('workflow frontend support', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  let frontend: string;
  let templates: string;
  before(async () => {
    frontend = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-fe-'));
    templates = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-tpl-'));
    write(path.join(frontend, 'index.html'), '<!doctype html><title>ComfyUI</title>');
    write(path.join(frontend, 'static', 'index-abc.js'), 'export const x = 1;');
    write(path.join(frontend, 'assets', 'index-Bx1.js'), 'export const bundle = 1;');
    write(path.join(frontend, 'static', 'style.css'), 'body{}');
    write(path.join(frontend, 'static', 'logo.png'), await png(1, 1, [1, 1, 1, 255]));
    write(path.join(frontend, 'extensions', 'core', 'widgets.js'), '// core');
    write(path.join(templates, 'index.json'), '[{"moduleName":"default","templates":[]}]');
    srv = await startWorkflow(storage, { frontEndRoot: frontend, templatesRoot: templates }, { overrides: { logLevel: 'info' } });
    const cn = path.join(srv.cfg.dataDir, 'custom_nodes');
    write(path.join(cn, 'packA', 'web', 'a.js'), '// a');
    write(path.join(cn, 'packA', 'web', 'sub', 'b.js'), '// b');
    write(path.join(cn, 'packA', 'web', 'style.css'), '/* not a script */');
    write(path.join(cn, 'packA', 'locales', 'en', 'main.json'), JSON.stringify({ nodeDefs: { A: { display_name: 'A' } }, list: [1] }));
    write(path.join(cn, 'packA', 'locales', 'en', 'settings.json'), JSON.stringify({ 'A.Setting': { name: 'S' } }));
    write(path.join(cn, 'packB', 'locales', 'en', 'main.json'), JSON.stringify({ nodeDefs: { B: { display_name: 'B' } }, list: [2] }));
    write(path.join(cn, 'packB', 'locales', 'fr', 'main.json'), JSON.stringify({ nodeDefs: { B: { display_name: 'Bé' } } }));
    write(path.join(cn, 'packA', 'example_workflows', 'demo.json'), '{"nodes":[]}');
    write(path.join(cn, 'packB', 'examples', 'other.json'), '{}');
    write(path.join(cn, 'packB', 'subgraphs', 'blur.json'), '{"definitions":{}}');
  });
  after(async () => {
    await srv.close();
    fs.rmSync(frontend, { recursive: true, force: true });
    fs.rmSync(templates, { recursive: true, force: true });
  });

  test('/extensions lists the build\'s extensions and every pack\'s scripts, which are served', async () => {
    const r = await srv.http.get('/api/extensions');
    assert.deepEqual(r.body, ['/extensions/core/widgets.js', '/extensions/packA/a.js', '/extensions/packA/sub/b.js']);
    assert.deepEqual((await srv.http.get('/extensions')).body, r.body);
    for (const [url, body] of [
      ['/extensions/packA/a.js', '// a'],
      ['/extensions/packA/sub/b.js', '// b'],
      ['/extensions/core/widgets.js', '// core'],
    ]) {
      const f = await getBytes(srv.url + url);
      assert.equal(f.status, 200, url);
      assert.equal(f.body.toString(), body);
      assert.equal(f.headers.get('cache-control'), 'no-cache');
    }
    assert.equal((await getBytes(`${srv.url}/extensions/packA/missing.js`)).status, 404);
    assert.equal((await getBytes(`${srv.url}/extensions/nopack/a.js`)).status, 404);
  });

  test('/i18n merges every pack\'s locales (main.json plus nodeDefs/commands/settings files)', async () => {
    const r = await srv.http.get('/i18n');
    assert.deepEqual(r.body, {
      en: { nodeDefs: { A: { display_name: 'A' }, B: { display_name: 'B' } }, list: [1, 2], settings: { 'A.Setting': { name: 'S' } } },
      fr: { nodeDefs: { B: { display_name: 'Bé' } } },
    });
  });

  test('/workflow_templates maps packs to their example workflows, served under /api/workflow_templates/<pack>/', async () => {
    assert.deepEqual((await srv.http.get('/workflow_templates')).body, { packA: ['demo'], packB: ['other'] });
    const f = await getBytes(`${srv.url}/api/workflow_templates/packA/demo.json`);
    assert.equal(f.status, 200);
    assert.equal(f.body.toString(), '{"nodes":[]}');
    assert.equal((await getBytes(`${srv.url}/api/workflow_templates/packB/other.json`)).status, 200);
    assert.equal((await getBytes(`${srv.url}/api/workflow_templates/packA/none.json`)).status, 404);
  });

  test('/global_subgraphs lists blueprints without data; /global_subgraphs/{id} has the data; unknown 404', async () => {
    const list = (await srv.http.get('/api/global_subgraphs')).body;
    const ids = Object.keys(list);
    assert.equal(ids.length, 1);
    assert.match(ids[0]!, /^[0-9a-f]{64}$/);
    assert.deepEqual(list[ids[0]!], { source: 'custom_node', name: 'blur', info: { node_pack: 'custom_nodes.packB' } });
    const one = await srv.http.get(`/global_subgraphs/${ids[0]}`);
    assert.deepEqual(one.body, { source: 'custom_node', name: 'blur', info: { node_pack: 'custom_nodes.packB' }, data: '{"definitions":{}}' });
    const missing = await srv.http.get('/global_subgraphs/nope');
    assert.equal(missing.status, 404);
    assert.ok(missing.body.error);
    assert.deepEqual((await srv.http.get('/node_replacements')).body, {});
    assert.deepEqual((await srv.http.get('/api/node_replacements')).body, {});
  });

  test('--front-end-root serves the build at / with the reference cache headers; the API keeps its routes', async () => {
    let r = await getBytes(`${srv.url}/`);
    assert.equal(r.status, 200);
    assert.match(r.body.toString(), /ComfyUI/);
    assert.match(r.headers.get('content-type')!, /text\/html/);
    assert.equal(r.headers.get('cache-control'), 'no-cache');
    assert.equal(r.headers.get('pragma'), 'no-cache');
    r = await getBytes(`${srv.url}/static/index-abc.js`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type')!, /javascript/);
    assert.equal(r.headers.get('cache-control'), 'no-cache');
    // the build's bundles under /assets/ (the assets API lives under /api/assets)
    r = await getBytes(`${srv.url}/assets/index-Bx1.js`);
    assert.equal(r.status, 200);
    assert.equal(r.body.toString(), 'export const bundle = 1;');
    assert.equal((await srv.http.get('/api/assets')).status === 404, false);
    r = await getBytes(`${srv.url}/static/logo.png`);
    assert.equal(r.headers.get('cache-control'), 'public, max-age=86400');
    r = await getBytes(`${srv.url}/static/style.css`);
    assert.equal(r.headers.get('cache-control'), 'no-cache');
    r = await getBytes(`${srv.url}/static/missing.js`);
    assert.equal(r.status, 404);
    assert.equal(r.body.toString(), '404: Not Found');
    assert.equal((await getBytes(`${srv.url}/api/nothing/here`)).status, 404);
    assert.equal((await srv.http.get('/api/object_info/PrimitiveString')).status, 200);
    assert.equal((await srv.http.get('/system_stats')).status, 200);
    const t = await getBytes(`${srv.url}/templates/index.json`);
    assert.equal(t.status, 200);
    assert.deepEqual(JSON.parse(t.body.toString()), [{ moduleName: 'default', templates: [] }]);
  });

  test('a browser reloading a page of the frontend\'s router (/user-select) is sent to / (the app\'s mount point); other unknown paths stay 404', async () => {
    const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
    const page = async (p: string) => fetch(`${srv.url}${p}`, { headers: html, redirect: 'manual' });
    let r = await page('/user-select');
    assert.equal(r.status, 302);
    assert.equal(r.headers.get('location'), '/');
    assert.equal(r.headers.get('cache-control'), 'no-cache');
    r = await page('/user-select?template=default&x=%20');
    assert.equal(r.status, 302);
    assert.equal(r.headers.get('location'), '/?template=default&x=%20');
    assert.equal((await page('/some/page/')).headers.get('location'), '/');
    const followed = await getBytes(`${srv.url}/user-select`, html);
    assert.equal(followed.status, 200);
    assert.equal(followed.body.toString(), fs.readFileSync(path.join(frontend, 'index.html'), 'utf8'));
    // not a navigation, a file name, a server path, or a name with anything but letters, digits, - and _
    assert.equal((await getBytes(`${srv.url}/user-select`)).status, 404);
    assert.equal((await getBytes(`${srv.url}/user-select`, { accept: 'application/json' })).status, 404);
    for (const p of ['/missing.js', '/static/missing.css', '/api/user-select', '/internal/nothing', '/extensions/nopack', '/templates/none', '/assets/none', '/a%00b', '/a.b', '/..%2Fetc', '/x/..%2F..%2Fetc%2Fpasswd']) {
      const x = await page(p);
      assert.ok(x.status === 404 || x.status === 400, `${p}: ${x.status}`);
      assert.ok(!(await x.text()).includes('<title>ComfyUI</title>'), p);
    }
    // a file of the build is the file, whatever the Accept header says
    const f = await getBytes(`${srv.url}/static/index-abc.js`, html);
    assert.equal(f.body.toString(), 'export const x = 1;');
  });

  test('/templates/*: the root\'s files first; the frontend\'s side files have stand-ins when the root lacks them', async () => {
    // templates root holds index.json only: the logo index and search options fall back to the empty stand-ins
    let r = await getBytes(`${srv.url}/templates/index_logo.json`);
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.body.toString()), {});
    r = await getBytes(`${srv.url}/templates/fuse_options.json`);
    assert.equal(r.status, 200);
    assert.ok(Array.isArray(JSON.parse(r.body.toString()).keys));
    write(path.join(templates, 'fuse_options.json'), '{"keys":["title"],"threshold":0.5}');
    r = await getBytes(`${srv.url}/templates/fuse_options.json`);
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.body.toString()), { keys: ['title'], threshold: 0.5 });
    fs.rmSync(path.join(templates, 'fuse_options.json'));
    assert.equal((await getBytes(`${srv.url}/templates/missing.json`)).status, 404);
  });

  test('/internal/logs (text of the last lines as a JSON string) and /internal/logs/raw ({entries, size})', async () => {
    await srv.http.get('/system_stats');
    const text = await srv.http.get('/internal/logs');
    assert.equal(text.status, 200);
    assert.equal(typeof text.body, 'string');
    assert.match(text.body, /^\d{4}-\d\d-\d\dT[^ ]+ - /);
    const raw = (await srv.http.get('/internal/logs/raw')).body;
    assert.ok(Array.isArray(raw.entries) && raw.entries.length > 0);
    assert.deepEqual(Object.keys(raw.entries[0]).sort(), ['m', 't']);
    assert.ok(Number.isInteger(raw.size.cols) && Number.isInteger(raw.size.rows));
    assert.equal((await srv.http.get('/api/internal/logs')).status, 404, 'internal routes are not under /api');
  });

  test('PATCH /internal/logs/subscribe sends new lines as `logs` messages to that client until unsubscribed', async () => {
    const ws = new WsClient(srv.url, 'log-client');
    await ws.opened;
    let r = await srv.http.patch('/internal/logs/subscribe', { clientId: 'log-client', enabled: true });
    assert.equal(r.status, 200);
    await srv.http.get('/system_stats?marker=xyz');
    const msg = await ws.until((ms) => ms.find((m) => m.type === 'logs' && m.data.entries.some((e: any) => e.m.includes('marker=xyz'))));
    assert.ok('size' in msg.data);
    assert.equal(typeof msg.data.entries[0].t, 'string');
    r = await srv.http.patch('/internal/logs/subscribe', { clientId: 'log-client', enabled: false });
    assert.equal(r.status, 200);
    const count = ws.messages.filter((m) => m.type === 'logs').length;
    await srv.http.get('/system_stats?marker=after');
    await srv.http.get('/health');
    assert.equal(ws.messages.filter((m) => m.type === 'logs' && m.data.entries.some((e: any) => e.m.includes('marker=after'))).length, 0);
    assert.ok(ws.messages.filter((m) => m.type === 'logs').length >= count);
    ws.close();
    for (const bad of [{}, { clientId: 'x' }, { clientId: 5, enabled: true }, { clientId: 'x', enabled: 'yes' }, [1]]) {
      r = await srv.http.patch('/internal/logs/subscribe', bad);
      assert.equal(r.status, 400, JSON.stringify(bad));
      assert.ok(r.body.error);
    }
  });

  test('/internal/folder_paths and /internal/files/{type} (newest first; bad type 400)', async () => {
    const fp = (await srv.http.get('/internal/folder_paths')).body;
    assert.deepEqual(fp.text_encoders, [path.join(srv.cfg.dataDir, 'models', 'text_encoders'), path.join(srv.cfg.dataDir, 'models', 'clip')]);
    assert.deepEqual(fp.custom_nodes, [path.join(srv.cfg.dataDir, 'custom_nodes')]);
    const dir = path.join(srv.cfg.dataDir, 'output');
    write(path.join(dir, 'old.png'), 'o');
    write(path.join(dir, 'new.png'), 'n');
    fs.utimesSync(path.join(dir, 'old.png'), new Date(1_000_000_000_000), new Date(1_000_000_000_000));
    fs.mkdirSync(path.join(dir, 'folder'), { recursive: true });
    const files = (await srv.http.get('/internal/files/output')).body;
    assert.deepEqual(files.slice(-1), ['old.png']);
    assert.ok(files.includes('new.png') && !files.includes('folder'));
    const bad = await srv.http.get('/internal/files/models');
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, { error: 'Invalid directory type' });
  });

  test('model folders: /models, /models/{folder}, /experiment/models, /experiment/models/{folder}, previews, /embeddings', async () => {
    const m = path.join(srv.cfg.dataDir, 'models');
    write(path.join(m, 'checkpoints', 'sd.safetensors'), safetensors({ a: '1' }));
    write(path.join(m, 'checkpoints', 'sub', 'x.ckpt'), 'x');
    write(path.join(m, 'checkpoints', 'notes.txt'), 'not a model');
    write(path.join(m, 'checkpoints', '.hidden.safetensors'), 'h');
    write(path.join(m, 'checkpoints', 'sd.png'), await png(3, 2, [9, 8, 7, 255]));
    write(path.join(m, 'clip', 'c.safetensors'), 'c');
    write(path.join(m, 'text_encoders', 't.safetensors'), 't');
    write(path.join(m, 'loras', 'l.safetensors'), safetensors({ ssmd_cover_images: JSON.stringify([(await png(2, 2, [1, 2, 3, 255])).toString('base64')]) }));
    write(path.join(m, 'loras', 'p.safetensors'), 'p');
    write(path.join(m, 'loras', 'p.preview.png'), await png(1, 1, [0, 0, 0, 255]));
    write(path.join(m, 'embeddings', 'emb1.pt'), 'e');
    write(path.join(m, 'embeddings', 'deep', 'emb2.safetensors'), 'e');
    write(path.join(m, 'my_custom', 'anything.xyz'), 'z');
    const types = (await srv.http.get('/models')).body;
    assert.deepEqual(types.slice(0, 5), ['checkpoints', 'configs', 'loras', 'vae', 'text_encoders']);
    assert.ok(types.includes('custom_nodes') && types.includes('my_custom'));
    assert.deepEqual((await srv.http.get('/api/models/checkpoints')).body, ['.hidden.safetensors', 'sd.safetensors', 'sub/x.ckpt']);
    assert.deepEqual((await srv.http.get('/models/text_encoders')).body, ['c.safetensors', 't.safetensors']);
    assert.deepEqual((await srv.http.get('/models/my_custom')).body, ['anything.xyz']);
    let r = await srv.http.get('/models/unknown');
    assert.equal(r.status, 404);
    assert.equal((await srv.http.get('/models/unet')).status, 404, 'legacy names are not folders of their own');
    const exp = (await srv.http.get('/experiment/models')).body;
    assert.ok(!exp.some((f: any) => f.name === 'configs' || f.name === 'custom_nodes'));
    assert.deepEqual(exp.find((f: any) => f.name === 'diffusion_models').folders, [path.join(m, 'unet'), path.join(m, 'diffusion_models')]);
    const files = (await srv.http.get('/api/experiment/models/text_encoders')).body;
    assert.deepEqual(files.map((f: any) => [f.name, f.pathIndex, f.size]), [
      ['t.safetensors', 0, 1],
      ['c.safetensors', 1, 1],
    ]);
    assert.equal(typeof files[0].modified, 'number');
    const ck = (await srv.http.get('/experiment/models/checkpoints')).body.map((f: any) => f.name).sort();
    assert.deepEqual(ck, ['sd.safetensors', 'sub/x.ckpt'], 'hidden files are left out here, as the reference');
    r = await srv.http.get('/experiment/models/nofolder');
    assert.equal(r.status, 404);
    for (const [url, size] of [
      ['/experiment/models/preview/checkpoints/0/sd.safetensors', [3, 2]],
      ['/api/experiment/models/preview/loras/0/p.safetensors', [1, 1]],
      ['/experiment/models/preview/loras/0/l.safetensors', [2, 2]],
    ] as const) {
      const p = await getBytes(srv.url + url);
      assert.equal(p.status, 200, url);
      assert.equal(p.headers.get('content-type'), 'image/webp');
      const sharp = (await import('sharp')).default;
      const meta = await sharp(p.body).metadata();
      assert.deepEqual([meta.width, meta.height], size);
    }
    for (const url of ['/experiment/models/preview/checkpoints/0/sub/x.ckpt', '/experiment/models/preview/checkpoints/5/sd.safetensors', '/experiment/models/preview/checkpoints/x/sd.safetensors', '/experiment/models/preview/nofolder/0/a']) {
      assert.equal((await getBytes(srv.url + url)).status, 404, url);
    }
    assert.deepEqual((await srv.http.get('/embeddings')).body, ['deep/emb2', 'emb1']);
  });
});

forEachStorage('workflow frontend support: defaults', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  test('without a frontend or packs: empty lists, an empty templates index (with empty logos and search options), 404 at /', async () => {
    assert.deepEqual((await srv.http.get('/extensions')).body, []);
    assert.deepEqual((await srv.http.get('/i18n')).body, {});
    assert.deepEqual((await srv.http.get('/workflow_templates')).body, {});
    assert.deepEqual((await srv.http.get('/global_subgraphs')).body, {});
    assert.deepEqual((await srv.http.get('/templates/index.json')).body, []);
    assert.equal((await srv.http.get('/templates/other.json')).status, 404);
    assert.equal((await srv.http.get('/templates/__proto__')).status, 404);
    // a frontend in another language reads index.<locale>.json first (a 404 there is logged before it falls back)
    assert.deepEqual((await srv.http.get('/templates/index.fr.json')).body, []);
    assert.deepEqual((await srv.http.get('/templates/index.zh-TW.json')).body, []);
    assert.equal((await srv.http.get('/templates/index.x.json')).status, 404);
    // The real frontend reads these two beside the index at start; a 404 of fuse_options.json is logged as an
    // error, and a body it cannot use as search options would break its template search.
    const logos = await getBytes(`${srv.url}/templates/index_logo.json`);
    assert.equal(logos.status, 200);
    assert.match(logos.headers.get('content-type')!, /^application\/json/);
    assert.deepEqual(JSON.parse(logos.body.toString()), {});
    const fuse = await getBytes(`${srv.url}/templates/fuse_options.json`);
    assert.equal(fuse.status, 200);
    assert.match(fuse.headers.get('content-type')!, /^application\/json/);
    assert.equal(fuse.headers.get('cache-control'), 'no-cache');
    const opts = JSON.parse(fuse.body.toString());
    assert.deepEqual(opts.keys.map((k: { name: string }) => k.name), ['name', 'title', 'description', 'tags', 'models']);
    assert.equal(typeof opts.threshold, 'number');
    assert.equal((await srv.http.get('/embeddings')).body.length, 0);
    assert.deepEqual((await srv.http.get('/models/checkpoints')).body, []);
  });
});
