import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { getBytes } from './files-helpers.ts';
import { startWorkflow, textPrompt, waitJob } from './helpers.ts';

async function raw(url: string, method: string, body?: Buffer | string, headers: Record<string, string> = {}) {
  const r = await fetch(url, { method, body: typeof body === 'string' || body === undefined ? body : new Uint8Array(body), headers });
  const text = await r.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    /* text */
  }
  return { status: r.status, text, body: json, headers: r.headers };
}

forEachStorage('workflow userdata', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  let userRoot: string;
  before(async () => {
    srv = await startWorkflow(storage);
    userRoot = path.join(srv.cfg.dataDir, 'user', 'default');
  });
  after(async () => {
    await srv.close();
  });

  test('POST /userdata/{file} stores raw bytes (any content type, %2F subfolders) and answers the path or full info', async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 254, 0x7b]);
    let r = await raw(`${srv.url}/userdata/workflows%2Fbin.dat`, 'POST', bytes, { 'content-type': 'application/octet-stream' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body, 'workflows/bin.dat');
    assert.deepEqual(fs.readFileSync(path.join(userRoot, 'workflows', 'bin.dat')), bytes);
    r = await raw(`${srv.url}/api/userdata/workflows%2Fa.json?full_info=true`, 'POST', '{"nodes":[]}', { 'content-type': 'application/json' });
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body).sort(), ['created', 'modified', 'path', 'size']);
    assert.equal(r.body.path, 'workflows/a.json');
    assert.equal(r.body.size, 12);
    assert.ok(Number.isInteger(r.body.modified) && r.body.modified > 1.6e12, 'modified is whole milliseconds');
    r = await raw(`${srv.url}/userdata/workflows%2Fa.json?overwrite=false`, 'POST', 'x', { 'content-type': 'text/plain' });
    assert.equal(r.status, 409);
    assert.equal(r.text, 'File already exists');
    assert.equal(fs.readFileSync(path.join(userRoot, 'workflows', 'a.json'), 'utf8'), '{"nodes":[]}');
    r = await raw(`${srv.url}/userdata/workflows%2Fa.json`, 'POST', 'replaced');
    assert.equal(r.status, 200);
    assert.equal(fs.readFileSync(path.join(userRoot, 'workflows', 'a.json'), 'utf8'), 'replaced');
    r = await raw(`${srv.url}/userdata/empty.txt`, 'POST');
    assert.equal(r.status, 200);
    assert.equal(fs.readFileSync(path.join(userRoot, 'empty.txt'), 'utf8'), '');
    // a multipart body is stored as it came, not parsed
    r = await raw(`${srv.url}/userdata/form.txt`, 'POST', '--b\r\n\r\nx\r\n--b--', { 'content-type': 'multipart/form-data; boundary=b' });
    assert.equal(r.status, 200);
    assert.equal(fs.readFileSync(path.join(userRoot, 'form.txt'), 'utf8'), '--b\r\n\r\nx\r\n--b--');
    // a folder of that name cannot be written over
    r = await raw(`${srv.url}/userdata/workflows`, 'POST', 'x');
    assert.equal(r.status, 400);
  });

  test('GET /userdata?dir= in its three shapes, recurse, hidden files skipped; 400/403/404 texts', async () => {
    fs.mkdirSync(path.join(userRoot, 'lst', 'sub', 'deep'), { recursive: true });
    fs.writeFileSync(path.join(userRoot, 'lst', 'one.json'), '1');
    fs.writeFileSync(path.join(userRoot, 'lst', 'sub', 'two.json'), '22');
    fs.writeFileSync(path.join(userRoot, 'lst', 'sub', 'deep', 'three.json'), '333');
    fs.writeFileSync(path.join(userRoot, 'lst', '.hidden'), 'h');
    let r = await srv.http.get('/userdata?dir=lst');
    assert.deepEqual(r.body, ['one.json']);
    r = await srv.http.get('/api/userdata?dir=lst&recurse=true');
    assert.deepEqual(r.body, ['one.json', 'sub/deep/three.json', 'sub/two.json']);
    r = await srv.http.get('/userdata?dir=lst&recurse=true&split=true');
    assert.deepEqual(r.body, [['one.json', 'one.json'], ['sub/deep/three.json', 'sub', 'deep', 'three.json'], ['sub/two.json', 'sub', 'two.json']]);
    r = await srv.http.get('/userdata?dir=lst&recurse=true&split=false&full_info=true');
    assert.deepEqual(
      r.body.map((e: any) => [e.path, e.size]),
      [
        ['one.json', 1],
        ['sub/deep/three.json', 3],
        ['sub/two.json', 2],
      ],
    );
    for (const e of r.body) assert.ok(Number.isInteger(e.modified) && Number.isInteger(e.created));
    r = await srv.http.get('/userdata?dir=lst%2Fsub');
    assert.deepEqual(r.body, ['two.json']);
    r = await srv.http.get('/userdata');
    assert.equal(r.status, 400);
    assert.equal(r.text, 'Directory not provided');
    r = await srv.http.get('/userdata?dir=nothere');
    assert.equal(r.status, 404);
    assert.equal(r.text, 'Directory not found');
    r = await srv.http.get('/userdata?dir=..');
    assert.equal(r.status, 403);
    assert.equal(r.text, 'Invalid directory');
    r = await srv.http.get('/userdata?dir=%252e%252e');
    assert.equal(r.status, 403);
  });

  test('GET /v2/userdata lists folders first, then files, with sizes and float seconds', async () => {
    fs.mkdirSync(path.join(userRoot, 'v2', 'B'), { recursive: true });
    fs.writeFileSync(path.join(userRoot, 'v2', 'a.json'), 'aa');
    fs.writeFileSync(path.join(userRoot, 'v2', 'B', 'c.json'), 'c');
    let r = await srv.http.get('/v2/userdata?path=v2');
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.map((e: any) => [e.type, e.path, e.size]),
      [
        ['directory', 'v2/B', undefined],
        ['file', 'v2/a.json', 2],
        ['file', 'v2/B/c.json', 1],
      ],
    );
    assert.equal(typeof r.body[1].modified, 'number');
    r = await srv.http.get('/api/v2/userdata');
    assert.ok(r.body.some((e: any) => e.path === 'v2' && e.type === 'directory'));
    r = await srv.http.get('/v2/userdata?path=nothere');
    assert.equal(r.status, 404);
    assert.equal(r.text, 'Requested path not found');
    r = await srv.http.get('/v2/userdata?path=v2%2Fa.json');
    assert.equal(r.status, 400);
    assert.equal(r.text, 'Requested path is not a directory');
    r = await srv.http.get('/v2/userdata?path=..%2F..');
    assert.equal(r.status, 400);
    assert.equal(r.text, 'Invalid path requested');
  });

  test('GET /userdata/{file} serves the file (active types as downloads); DELETE 204 then 404', async () => {
    await raw(`${srv.url}/userdata/get%2Fw.json`, 'POST', '{"a":1}');
    let r = await raw(`${srv.url}/userdata/get%2Fw.json`, 'GET');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { a: 1 });
    assert.match(r.headers.get('content-type')!, /application\/json/);
    await raw(`${srv.url}/userdata/get%2Fp.html`, 'POST', '<script>alert(1)</script>');
    r = await raw(`${srv.url}/api/userdata/get%2Fp.html`, 'GET');
    assert.equal(r.headers.get('content-type'), 'application/octet-stream');
    const part = await getBytes(`${srv.url}/userdata/get%2Fw.json`, { range: 'bytes=1-3' });
    assert.equal(part.status, 206);
    assert.equal(part.body.toString(), '"a"');
    r = await raw(`${srv.url}/userdata/get%2Fmissing.json`, 'GET');
    assert.equal(r.status, 404);
    r = await raw(`${srv.url}/userdata/get`, 'GET');
    assert.equal(r.status, 404, 'a folder is not a file');
    r = await raw(`${srv.url}/userdata/get%2Fw.json`, 'DELETE');
    assert.equal(r.status, 204);
    assert.equal(fs.existsSync(path.join(userRoot, 'get', 'w.json')), false);
    r = await raw(`${srv.url}/api/userdata/get%2Fw.json`, 'DELETE');
    assert.equal(r.status, 404);
    r = await raw(`${srv.url}/userdata/get`, 'DELETE');
    assert.equal(r.status, 400);
    assert.ok(fs.existsSync(path.join(userRoot, 'get')));
  });

  test('POST /userdata/{file}/move/{dest}: moves (folders created), 404, 409 with overwrite=false, full_info, traversal 403', async () => {
    await raw(`${srv.url}/userdata/mv%2Fsrc.json`, 'POST', 'S');
    await raw(`${srv.url}/userdata/mv%2Fother.json`, 'POST', 'O');
    let r = await raw(`${srv.url}/userdata/mv%2Fsrc.json/move/mv%2Fnew%2Fdst.json`, 'POST');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body, 'mv/new/dst.json');
    assert.equal(fs.readFileSync(path.join(userRoot, 'mv', 'new', 'dst.json'), 'utf8'), 'S');
    assert.equal(fs.existsSync(path.join(userRoot, 'mv', 'src.json')), false);
    r = await raw(`${srv.url}/userdata/mv%2Fsrc.json/move/mv%2Fx.json`, 'POST');
    assert.equal(r.status, 404);
    r = await raw(`${srv.url}/userdata/mv%2Fnew%2Fdst.json/move/mv%2Fother.json?overwrite=false`, 'POST');
    assert.equal(r.status, 409);
    assert.equal(r.text, 'File already exists');
    assert.equal(fs.readFileSync(path.join(userRoot, 'mv', 'other.json'), 'utf8'), 'O');
    r = await raw(`${srv.url}/api/userdata/mv%2Fnew%2Fdst.json/move/mv%2Fother.json?full_info=true`, 'POST');
    assert.equal(r.status, 200);
    assert.equal(r.body.path, 'mv/other.json');
    assert.equal(r.body.size, 1);
    assert.equal(fs.readFileSync(path.join(userRoot, 'mv', 'other.json'), 'utf8'), 'S');
    r = await raw(`${srv.url}/userdata/mv%2Fother.json/move/..%2F..%2Fescaped.json`, 'POST');
    assert.equal(r.status, 403);
    assert.ok(fs.existsSync(path.join(userRoot, 'mv', 'other.json')));
    assert.equal(fs.existsSync(path.join(srv.cfg.dataDir, 'escaped.json')), false);
  });

  test('settings: GET {} then POST merges, POST /settings/{id} sets one JSON value, GET /settings/{id} or null; stored in user/default/comfy.settings.json', async () => {
    assert.deepEqual((await srv.http.get('/settings')).body, {});
    let r = await srv.http.post('/settings', { 'Comfy.A': 1, 'Comfy.B': { x: [1, 2] } });
    assert.equal(r.status, 200);
    assert.equal(r.text, '');
    r = await srv.http.post('/api/settings', { 'Comfy.C': 'c', 'Comfy.A': 2 });
    assert.deepEqual((await srv.http.get('/api/settings')).body, { 'Comfy.A': 2, 'Comfy.B': { x: [1, 2] }, 'Comfy.C': 'c' });
    r = await srv.http.post('/settings/Comfy.D', [1, 'two']);
    assert.equal(r.status, 200);
    r = await srv.http.post('/settings/Comfy.E', 'null');
    assert.deepEqual((await srv.http.get('/settings/Comfy.D')).body, [1, 'two']);
    assert.equal((await srv.http.get('/settings/Comfy.E')).text, 'null');
    assert.equal((await srv.http.get('/api/settings/nothing')).text, 'null');
    const onDisk = JSON.parse(fs.readFileSync(path.join(userRoot, 'comfy.settings.json'), 'utf8'));
    assert.deepEqual(onDisk['Comfy.D'], [1, 'two']);
    assert.match(fs.readFileSync(path.join(userRoot, 'comfy.settings.json'), 'utf8'), /\n {4}"Comfy\.A": 2/);
    // prototype names are plain keys
    await srv.http.post('/settings/__proto__', { polluted: true });
    assert.deepEqual((await srv.http.get('/settings/__proto__')).body, { polluted: true });
    assert.equal((await srv.http.get('/settings/polluted')).text, 'null');
    r = await srv.http.post('/settings', [1, 2]);
    assert.equal(r.status, 400);
    assert.ok(r.body.error);
    r = await srv.http.post('/settings', '{"broken');
    assert.equal(r.status, 400);
    r = await srv.http.request('POST', '/settings/Comfy.F');
    assert.equal(r.status, 400);
  });

  test('concurrent POSTs to settings never lose each other\'s keys', async () => {
    await Promise.all(Array.from({ length: 30 }, (_, i) => srv.http.post(`/settings/k${i}`, i)));
    const s = (await srv.http.get('/settings')).body;
    for (let i = 0; i < 30; i++) assert.equal(s[`k${i}`], i);
  });

  test('users in single-user mode: {storage, migrated}; POST /users creates; duplicate 400; no username 400', async () => {
    let r = await srv.http.get('/users');
    assert.deepEqual(r.body, { storage: 'server', migrated: true });
    r = await srv.http.post('/users', { username: 'carol' });
    assert.equal(r.status, 200);
    assert.match(r.body, /^carol_[0-9a-f-]{36}$/);
    r = await srv.http.post('/api/users', { username: 'carol' });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { error: 'Duplicate username.' });
    r = await srv.http.post('/users', {});
    assert.equal(r.status, 400);
    assert.ok(r.body.error);
    r = await srv.http.post('/users', { username: '   ' });
    assert.equal(r.status, 400);
  });
});

forEachStorage('workflow multi-user', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  let alice: string;
  let bob: string;
  before(async () => {
    srv = await startWorkflow(storage, { multiUser: true });
  });
  after(async () => {
    await srv.close();
  });

  test('GET /users lists {storage, users}; ids are the name made safe plus a UUID; duplicate names 400', async () => {
    assert.deepEqual((await srv.http.get('/users')).body, { storage: 'server', users: {} });
    alice = (await srv.http.post('/users', { username: 'Alice Smith' })).body;
    bob = (await srv.http.post('/users', { username: 'bob' })).body;
    assert.match(alice, /^Alice-Smith_[0-9a-f-]{36}$/);
    assert.deepEqual((await srv.http.get('/users')).body, { storage: 'server', users: { [alice]: 'Alice Smith', [bob]: 'bob' } });
    const dup = await srv.http.post('/users', { username: 'bob' });
    assert.equal(dup.status, 400);
    assert.deepEqual(dup.body, { error: 'Duplicate username.' });
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(srv.cfg.dataDir, 'user', 'users.json'), 'utf8')), { [alice]: 'Alice Smith', [bob]: 'bob' });
  });

  test('settings and user data are separated by Comfy-User; an unknown user is 401 on settings and user data', async () => {
    await srv.http.post('/settings', { theme: 'dark' }, { 'comfy-user': alice });
    await srv.http.post('/settings', { theme: 'light' }, { 'comfy-user': bob });
    assert.deepEqual((await srv.http.get('/settings', { 'comfy-user': alice })).body, { theme: 'dark' });
    assert.deepEqual((await srv.http.get('/settings/theme', { 'comfy-user': bob })).body, 'light');
    assert.ok(fs.existsSync(path.join(srv.cfg.dataDir, 'user', alice, 'comfy.settings.json')));
    for (const h of [{}, { 'comfy-user': 'mallory' }, { 'comfy-user': '../default' }] as Array<Record<string, string>>) {
      let r = await srv.http.get('/settings', h);
      assert.equal(r.status, 401, JSON.stringify(h));
      r = await srv.http.post('/settings/x', 1, h);
      assert.equal(r.status, 401);
      r = await srv.http.get('/userdata?dir=workflows', h);
      assert.equal(r.status, 401);
      r = await srv.http.get('/v2/userdata', h);
      assert.equal(r.status, 403);
      assert.equal(r.text, 'Invalid user specified in request');
    }
    await raw(`${srv.url}/userdata/workflows%2Fmine.json`, 'POST', 'A', { 'comfy-user': alice });
    assert.deepEqual((await srv.http.get('/userdata?dir=workflows', { 'comfy-user': alice })).body, ['mine.json']);
    assert.equal((await srv.http.get('/userdata?dir=workflows', { 'comfy-user': bob })).status, 404);
    assert.equal((await raw(`${srv.url}/userdata/workflows%2Fmine.json`, 'GET', undefined, { 'comfy-user': bob })).status, 404);
    assert.equal((await raw(`${srv.url}/userdata/..%2F${alice}%2Fworkflows%2Fmine.json`, 'GET', undefined, { 'comfy-user': bob })).status, 403);
    assert.equal((await raw(`${srv.url}/userdata/workflows%2Fmine.json`, 'GET', undefined, { 'comfy-user': alice })).text, 'A');
  });

  test('history, jobs and queue are per user', async () => {
    const a = await srv.http.post('/prompt', { prompt: textPrompt('alice only') }, { 'comfy-user': alice });
    assert.equal(a.status, 200, a.text);
    await waitJob({ get: (p: string) => srv.http.get(p, { 'comfy-user': alice }) } as any, a.body.prompt_id);
    const mine = (await srv.http.get('/history', { 'comfy-user': alice })).body;
    assert.ok(mine[a.body.prompt_id]);
    assert.deepEqual((await srv.http.get('/history', { 'comfy-user': bob })).body, {});
    assert.equal((await srv.http.get('/api/jobs', { 'comfy-user': bob })).body.jobs.length, 0);
    assert.equal((await srv.http.get('/api/jobs', { 'comfy-user': alice })).body.jobs.length, 1);
  });
});
