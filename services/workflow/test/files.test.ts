import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { readTextChunks } from '../src/files/png.ts';
import { getBytes, pixels, png, upload, uploadRawName } from './files-helpers.ts';
import { startWorkflow, waitJob } from './helpers.ts';

/** The reference's upload answer fields (with assets on, the answer also carries `asset`). */
function placed(body: any): { name: string; subfolder: string; type: string } {
  return { name: body?.name, subfolder: body?.subfolder, type: body?.type };
}

forEachStorage('workflow files', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  let dataDir: string;
  let red: Buffer;
  let blue: Buffer;
  before(async () => {
    srv = await startWorkflow(storage);
    dataDir = srv.cfg.dataDir;
    red = await png(4, 3, [255, 0, 0, 255]);
    blue = await png(4, 3, [0, 0, 255, 255]);
  });
  after(async () => {
    await srv.close();
  });

  test('POST /upload/image stores the file in input and answers {name, subfolder, type} on both paths', async () => {
    for (const route of ['/upload/image', '/api/upload/image']) {
      const r = await upload(srv.url, route, red, 'first.png');
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(placed(r.body), { name: 'first.png', subfolder: '', type: 'input' });
    }
    assert.deepEqual(fs.readFileSync(path.join(dataDir, 'input', 'first.png')), red);
    assert.deepEqual(fs.readdirSync(path.join(dataDir, 'input')).filter((f) => f.startsWith('.')), [], 'no temporary file is left behind');
  });

  test('same name: same bytes reuse the file, other bytes get "name (1).ext", "name (2).ext"; overwrite replaces', async () => {
    assert.deepEqual((await upload(srv.url, '/upload/image', red, 'dup.png')).body.name, 'dup.png');
    assert.deepEqual((await upload(srv.url, '/upload/image', red, 'dup.png')).body.name, 'dup.png');
    assert.deepEqual((await upload(srv.url, '/upload/image', blue, 'dup.png')).body.name, 'dup (1).png');
    assert.deepEqual((await upload(srv.url, '/upload/image', blue, 'dup.png')).body.name, 'dup (1).png');
    const green = await png(4, 3, [0, 255, 0, 255]);
    assert.deepEqual((await upload(srv.url, '/upload/image', green, 'dup.png')).body.name, 'dup (2).png');
    assert.deepEqual((await upload(srv.url, '/upload/image', blue, 'dup.png', { overwrite: 'true' })).body.name, 'dup.png');
    assert.deepEqual(fs.readFileSync(path.join(dataDir, 'input', 'dup.png')), blue);
    assert.deepEqual((await upload(srv.url, '/upload/image', red, 'dup.png', { overwrite: '1' })).body.name, 'dup.png');
    assert.deepEqual(fs.readFileSync(path.join(dataDir, 'input', 'dup.png')), red);
    assert.deepEqual((await upload(srv.url, '/upload/image', red, '.hidden', {})).body.name, '.hidden');
    assert.deepEqual((await upload(srv.url, '/upload/image', blue, '.hidden', {})).body.name, '.hidden (1)');
  });

  test('concurrent uploads of one name with different bytes never overwrite each other', async () => {
    const imgs = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => png(2, 2, [i * 10, 0, 0, 255])));
    const rs = await Promise.all(imgs.map((b) => upload(srv.url, '/upload/image', b, 'race.png')));
    const names = rs.map((r) => r.body.name).sort();
    assert.equal(new Set(names).size, 6, JSON.stringify(names));
    for (let i = 0; i < 6; i++) assert.deepEqual(fs.readFileSync(path.join(dataDir, 'input', rs[i]!.body.name)), imgs[i]);
  });

  test('subfolders are created; temp and output types; bad type, missing image and unsafe names are 400', async () => {
    let r = await upload(srv.url, '/upload/image', red, 'sub.png', { subfolder: 'a/b', type: 'temp' });
    assert.deepEqual(placed(r.body), { name: 'sub.png', subfolder: 'a/b', type: 'temp' });
    assert.ok(fs.existsSync(path.join(dataDir, 'temp', 'a', 'b', 'sub.png')));
    r = await upload(srv.url, '/upload/image', red, 'o.png', { type: 'output' });
    assert.deepEqual(placed(r.body), { name: 'o.png', subfolder: '', type: 'output' });
    r = await upload(srv.url, '/upload/image', red, 'x.png', { type: 'models' });
    assert.equal(r.status, 400);
    assert.match(r.body.error, /Invalid type/);
    r = await upload(srv.url, '/upload/image', undefined, '', { type: 'input' });
    assert.equal(r.status, 400);
    assert.match(r.body.error, /No image/);
    r = await upload(srv.url, '/upload/image', red, 'x.png', {}, {}, 'file');
    assert.equal(r.status, 400);
    r = await uploadRawName(srv.url, '/upload/image', red, '../escape.png');
    assert.equal(r.status, 400);
    assert.match(r.body.error, /Invalid filename/);
    r = await upload(srv.url, '/upload/image', red, 'x.png', { subfolder: '../../x' });
    assert.equal(r.status, 400);
    r = await upload(srv.url, '/upload/image', red, 'x.png', { subfolder: '/etc' });
    assert.equal(r.status, 400);
    const res = await fetch(`${srv.url}/upload/image`, { method: 'POST', body: JSON.stringify({ image: 'x' }), headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 400);
    assert.match((await res.json()).error, /multipart/);
    const broken = await fetch(`${srv.url}/upload/image`, { method: 'POST', body: '--x\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n\r\nabc', headers: { 'content-type': 'multipart/form-data; boundary=x' } });
    assert.equal(broken.status, 400);
    assert.ok((await broken.json()).error);
  });

  test('a large upload is spooled to a temporary file and stored byte for byte; the spool is removed', async () => {
    const spools = () => new Set(fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith('wf-upload-')));
    const before = spools();
    const big = Buffer.alloc(9 * 1024 * 1024 + 123);
    for (let i = 0; i < big.length; i += 4096) big[i] = i % 251;
    let r = await upload(srv.url, '/upload/image', big, 'large.bin');
    assert.equal(r.status, 200, r.text);
    assert.ok(fs.readFileSync(path.join(dataDir, 'input', 'large.bin')).equals(big));
    r = await upload(srv.url, '/upload/image', big, 'large.bin');
    assert.equal(r.body.name, 'large.bin', 'the same large bytes are recognised');
    big[5] = 1;
    r = await upload(srv.url, '/upload/image', big, 'large.bin');
    assert.equal(r.body.name, 'large (1).bin');
    assert.deepEqual([...spools()].filter((n) => !before.has(n)), []);
  });

  test('an upload to input shows in LoadImage choices of /object_info at once', async () => {
    await upload(srv.url, '/upload/image', red, 'listed-now.png');
    const info = (await srv.http.get('/object_info/LoadImage')).body;
    assert.ok(info.LoadImage.input.required.image[0].includes('listed-now.png'));
  });

  test('LoadImage offers the files directly in input, as the reference; one in a subfolder is loaded by name but not offered', async () => {
    const up = await upload(srv.url, '/upload/image', blue, 'pasted-one.png', { subfolder: 'pasted' });
    assert.equal(up.status, 200, up.text);
    const choices: string[] = (await srv.http.get('/object_info/LoadImage')).body.LoadImage.input.required.image[0];
    assert.ok(choices.includes('listed-now.png'));
    assert.deepEqual(choices.filter((c) => c.includes('/')), [], 'no subfolder entries');
    assert.deepEqual(choices, [...choices].sort());
    const r = await srv.http.post('/prompt', {
      prompt: { 1: { class_type: 'LoadImage', inputs: { image: 'pasted/pasted-one.png' } }, 2: { class_type: 'PreviewImage', inputs: { images: ['1', 0] } } },
    });
    assert.equal(r.status, 200, r.text);
    const j = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(j.status, 'completed', JSON.stringify(j.execution_error));
    const shown = j.outputs['2'].images[0];
    const { data } = await pixels((await getBytes(`${srv.url}/view?filename=${encodeURIComponent(shown.filename)}&type=temp`)).body);
    assert.deepEqual([...data.subarray(0, 3)], [0, 0, 255]);
  });

  test('POST /upload/mask puts the mask alpha on the original and keeps its PNG text chunks', async () => {
    const original = await png(4, 3, [10, 20, 30, 255], { text: [['prompt', '{"1":{}}'], ['workflow', '{"nodes":[]}']] });
    fs.writeFileSync(path.join(dataDir, 'output', 'orig.png'), original);
    const mask = await png(4, 3, [0, 0, 0, 77]);
    const r = await upload(srv.url, '/upload/mask', mask, 'clipspace-mask.png', { original_ref: JSON.stringify({ filename: 'orig.png', type: 'output' }), subfolder: 'clipspace' });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(placed(r.body), { name: 'clipspace-mask.png', subfolder: 'clipspace', type: 'input' });
    const saved = fs.readFileSync(path.join(dataDir, 'input', 'clipspace', 'clipspace-mask.png'));
    const px = await pixels(saved);
    assert.equal(px.channels, 4);
    assert.deepEqual([...px.data.subarray(0, 8)], [10, 20, 30, 77, 10, 20, 30, 77]);
    assert.deepEqual(readTextChunks(saved), { prompt: '{"1":{}}', workflow: '{"nodes":[]}' });
    // annotated original and the default type output
    const r2 = await upload(srv.url, '/api/upload/mask', mask, 'm2.png', { original_ref: JSON.stringify({ filename: 'orig.png [output]' }) });
    assert.equal(r2.status, 200, r2.text);
  });

  test('/upload/mask errors: bad original_ref 400, missing original 404, traversal 400/403, size mismatch 400', async () => {
    const mask = await png(4, 3, [0, 0, 0, 0]);
    let r = await upload(srv.url, '/upload/mask', mask, 'm.png', { original_ref: 'not json' });
    assert.equal(r.status, 400);
    assert.match(r.body.error, /original_ref/);
    r = await upload(srv.url, '/upload/mask', mask, 'm.png', {});
    assert.equal(r.status, 400);
    r = await upload(srv.url, '/upload/mask', mask, 'm.png', { original_ref: JSON.stringify({ filename: 'nope.png' }) });
    assert.equal(r.status, 404);
    assert.ok(r.body.error);
    r = await upload(srv.url, '/upload/mask', mask, 'm.png', { original_ref: JSON.stringify({ filename: '../workflow.sqlite' }) });
    assert.equal(r.status, 400);
    r = await upload(srv.url, '/upload/mask', mask, 'm.png', { original_ref: JSON.stringify({ filename: 'x.png', subfolder: '../../' }) });
    assert.equal(r.status, 403);
    fs.writeFileSync(path.join(dataDir, 'output', 'big.png'), await png(8, 8, [1, 2, 3, 255]));
    r = await upload(srv.url, '/upload/mask', mask, 'm.png', { original_ref: JSON.stringify({ filename: 'big.png' }) });
    assert.equal(r.status, 400);
    assert.match(r.body.error, /sizes must match/);
  });

  test('GET /view serves the bytes with content type, disposition and cache headers; annotated names; 404', async () => {
    await upload(srv.url, '/upload/image', red, 'v.png', { subfolder: 's1' });
    let r = await getBytes(`${srv.url}/view?filename=v.png&type=input&subfolder=s1`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, red);
    assert.equal(r.headers.get('content-type'), 'image/png');
    assert.equal(r.headers.get('content-disposition'), 'filename="v.png"');
    assert.equal(r.headers.get('cache-control'), 'no-cache');
    assert.equal(r.headers.get('accept-ranges'), 'bytes');
    r = await getBytes(`${srv.url}/api/view?filename=${encodeURIComponent('v.png [input]')}&subfolder=s1`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, red);
    r = await getBytes(`${srv.url}/view?filename=v.png&type=output&subfolder=s1`);
    assert.equal(r.status, 404);
    assert.ok(JSON.parse(r.body.toString()).error);
    r = await getBytes(`${srv.url}/view?type=input`);
    assert.equal(r.status, 404);
    r = await getBytes(`${srv.url}/view?filename=v.png&type=models`);
    assert.equal(r.status, 400);
    // a name with a folder part is served by its base name, as the reference
    r = await getBytes(`${srv.url}/view?filename=zzz/v.png&type=input&subfolder=s1`);
    assert.equal(r.status, 200);
    // non-ASCII names get an RFC 5987 disposition
    await upload(srv.url, '/upload/image', red, 'bild ä.png');
    r = await getBytes(`${srv.url}/view?filename=${encodeURIComponent('bild ä.png')}&type=input`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-disposition')!, /filename\*=UTF-8''bild%20%C3%A4\.png/);
  });

  test('GET /view: html, js and css are served as application/octet-stream (never rendered)', async () => {
    for (const [name, body] of [
      ['x.html', '<script>alert(1)</script>'],
      ['x.js', 'alert(1)'],
      ['x.css', 'body{}'],
      ['x.svg', '<svg onload="alert(1)"/>'],
    ]) {
      fs.writeFileSync(path.join(dataDir, 'output', name!), body!);
      const r = await getBytes(`${srv.url}/view?filename=${name}`);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), 'application/octet-stream', name);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(r.body.toString(), body);
    }
    fs.writeFileSync(path.join(dataDir, 'output', 'x.txt'), 'hello');
    assert.match((await getBytes(`${srv.url}/view?filename=x.txt`)).headers.get('content-type')!, /^text\/plain/);
  });

  test('GET /view range requests (206, 416) and conditional requests (304)', async () => {
    const data = Buffer.from('0123456789abcdef');
    fs.writeFileSync(path.join(dataDir, 'output', 'r.bin'), data);
    let r = await getBytes(`${srv.url}/view?filename=r.bin`, { range: 'bytes=2-5' });
    assert.equal(r.status, 206);
    assert.equal(r.body.toString(), '2345');
    assert.equal(r.headers.get('content-range'), 'bytes 2-5/16');
    r = await getBytes(`${srv.url}/view?filename=r.bin`, { range: 'bytes=-3' });
    assert.equal(r.body.toString(), 'def');
    r = await getBytes(`${srv.url}/view?filename=r.bin`, { range: 'bytes=100-200' });
    assert.equal(r.status, 416);
    r = await getBytes(`${srv.url}/view?filename=r.bin`);
    const etag = r.headers.get('etag')!;
    assert.ok(etag);
    // fetch adds Cache-Control: no-cache to conditional requests unless one is given (browsers revalidate with max-age=0)
    r = await getBytes(`${srv.url}/view?filename=r.bin`, { 'if-none-match': etag, 'cache-control': 'max-age=0' });
    assert.equal(r.status, 304);
  });

  test('GET /view preview: webp or jpeg with quality; channel rgb and a as PNG', async () => {
    const half = await png(4, 4, [200, 100, 50, 128]);
    fs.writeFileSync(path.join(dataDir, 'output', 'half.png'), half);
    let r = await getBytes(`${srv.url}/view?filename=half.png&preview=webp;90`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'image/webp');
    assert.equal(r.headers.get('content-disposition'), 'filename="half.png"');
    assert.equal((await pixels(r.body)).channels, 4, 'webp keeps alpha');
    r = await getBytes(`${srv.url}/view?filename=half.png&preview=jpeg;50`);
    assert.equal(r.headers.get('content-type'), 'image/jpeg');
    assert.equal(r.body.subarray(0, 2).toString('hex'), 'ffd8');
    const q10 = (await getBytes(`${srv.url}/view?filename=half.png&preview=jpeg;10`)).body.length;
    const q100 = (await getBytes(`${srv.url}/view?filename=half.png&preview=jpeg;100`)).body.length;
    assert.ok(q10 < q100, `${q10} < ${q100}`);
    // jpeg with an alpha channel asked for becomes webp, as the reference
    r = await getBytes(`${srv.url}/view?filename=half.png&preview=jpeg;50&channel=rgba`);
    assert.equal(r.headers.get('content-type'), 'image/webp');
    r = await getBytes(`${srv.url}/view?filename=half.png&preview=bmp`);
    assert.equal(r.headers.get('content-type'), 'image/webp');
    r = await getBytes(`${srv.url}/view?filename=half.png&channel=rgb`);
    assert.equal(r.headers.get('content-type'), 'image/png');
    let px = await pixels(r.body);
    assert.equal(px.channels, 3);
    assert.deepEqual([...px.data.subarray(0, 3)], [200, 100, 50]);
    r = await getBytes(`${srv.url}/view?filename=half.png&channel=a`);
    px = await pixels(r.body);
    assert.equal(px.channels, 4);
    assert.deepEqual([...px.data.subarray(0, 4)], [0, 0, 0, 128]);
    fs.writeFileSync(path.join(dataDir, 'output', 'opaque.png'), await png(2, 2, [1, 2, 3, 255]).then((b) => b));
    px = await pixels((await getBytes(`${srv.url}/view?filename=opaque.png&channel=a`)).body);
    assert.deepEqual([...px.data.subarray(0, 4)], [0, 0, 0, 255]);
    r = await getBytes(`${srv.url}/view?filename=x.txt&preview=webp`);
    assert.equal(r.status, 400);
    assert.ok(JSON.parse(r.body.toString()).error);
  });

  test('GET /view_metadata/{folder}: the __metadata__ of a safetensors header; 404 otherwise', async () => {
    const dir = path.join(dataDir, 'models', 'loras');
    fs.mkdirSync(dir, { recursive: true });
    const header = Buffer.from(JSON.stringify({ __metadata__: { ss_network_dim: '16' }, w: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }));
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(header.length));
    fs.writeFileSync(path.join(dir, 'l.safetensors'), Buffer.concat([len, header, Buffer.alloc(4)]));
    const len2 = Buffer.alloc(8);
    len2.writeBigUInt64LE(2n);
    fs.writeFileSync(path.join(dir, 'nometa.safetensors'), Buffer.concat([len2, Buffer.from('{}')]));
    fs.writeFileSync(path.join(dir, 'garbage.safetensors'), 'not a safetensors file at all');
    let r = await srv.http.get('/view_metadata/loras?filename=l.safetensors');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { ss_network_dim: '16' });
    r = await srv.http.get('/api/view_metadata/loras?filename=l.safetensors');
    assert.equal(r.status, 200);
    for (const q of ['loras?filename=nometa.safetensors', 'loras?filename=garbage.safetensors', 'loras?filename=missing.safetensors', 'loras?filename=l.ckpt', 'loras', 'nofolder?filename=l.safetensors', 'loras?filename=..%2F..%2Finput%2Fx.safetensors']) {
      r = await srv.http.get(`/view_metadata/${q}`);
      assert.equal(r.status, 404, q);
      assert.ok(r.body.error, q);
    }
  });

  test('multipart parts with prototype names and too many files are refused with an error body', async () => {
    const form = new FormData();
    form.append('__proto__', 'x');
    form.append('image', new Blob([new Uint8Array(red)]), 'p.png');
    const r = await fetch(`${srv.url}/upload/image`, { method: 'POST', body: form });
    assert.equal(r.status, 400);
    assert.ok((await r.json()).error);
  });
});

forEachStorage('workflow files: limits', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  before(async () => {
    srv = await startWorkflow(storage, { maxUploadSize: '1' });
  });
  after(async () => {
    await srv.close();
  });

  test('max_upload_size is reported by /features and an upload above it is a 413 with a clear error', async () => {
    const f = (await srv.http.get('/features')).body;
    assert.equal(f.max_upload_size, 1024 * 1024);
    const big = Buffer.alloc(1024 * 1024 + 10, 7);
    const r = await upload(srv.url, '/upload/image', big, 'big.png');
    assert.equal(r.status, 413);
    assert.match(r.body.error, /max_upload_size/);
    assert.equal(fs.readdirSync(path.join(srv.cfg.dataDir, 'input')).length, 0, 'nothing is stored');
    const huge = Buffer.alloc(4 * 1024 * 1024, 7);
    const r2 = await upload(srv.url, '/upload/image', huge, 'huge.png');
    assert.equal(r2.status, 413);
    const ok = await upload(srv.url, '/upload/image', Buffer.alloc(1024 * 1024, 1), 'exact.png');
    assert.equal(ok.status, 200, ok.text);
  });
});

forEachStorage('workflow files: multi-user outputs', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  let alice: string;
  let bob: string;
  before(async () => {
    srv = await startWorkflow(storage, { multiUser: true });
    alice = (await srv.http.post('/users', { username: 'alice' })).body;
    bob = (await srv.http.post('/users', { username: 'bob' })).body;
  });
  after(async () => {
    await srv.close();
  });

  test("a user's job outputs are hidden from other users in /view and /internal/files", async () => {
    const prompt = {
      1: { class_type: 'EmptyImage', inputs: { width: 8, height: 8, batch_size: 1, color: 255 } },
      2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'private' } },
    };
    const r = await srv.http.post('/prompt', { prompt }, { 'comfy-user': alice });
    assert.equal(r.status, 200, r.text);
    const job = await waitJob({ get: (p: string) => srv.http.get(p, { 'comfy-user': alice }) } as any, r.body.prompt_id);
    assert.equal(job.status, 'completed', JSON.stringify(job));
    const img = job.outputs['2'].images[0];
    const url = `${srv.url}/view?filename=${encodeURIComponent(img.filename)}&type=output&subfolder=${encodeURIComponent(img.subfolder)}`;
    assert.equal((await getBytes(url, { 'comfy-user': alice })).status, 200);
    assert.equal((await getBytes(url, { 'comfy-user': bob })).status, 404);
    assert.equal((await getBytes(url, {})).status, 404);
    assert.ok((await srv.http.get('/internal/files/output', { 'comfy-user': alice })).body.includes(img.filename));
    assert.ok(!(await srv.http.get('/internal/files/output', { 'comfy-user': bob })).body.includes(img.filename));
    // bob cannot replace alice's output by uploading over it
    const over = await upload(srv.url, '/upload/image', await png(8, 8, [0, 0, 0, 255]), img.filename, { type: 'output', subfolder: img.subfolder, overwrite: 'true' }, { 'comfy-user': bob });
    assert.equal(over.status, 403);
    assert.ok(over.body.error);
    assert.equal((await getBytes(url, { 'comfy-user': alice })).status, 200);
    // files no job produced stay shared
    fs.writeFileSync(path.join(srv.cfg.dataDir, 'output', 'shared.txt'), 'x');
    assert.equal((await getBytes(`${srv.url}/view?filename=shared.txt`, { 'comfy-user': bob })).status, 200);
    // bob's history and jobs do not show alice's prompt
    assert.deepEqual((await srv.http.get(`/history/${r.body.prompt_id}`, { 'comfy-user': bob })).body, {});
    assert.equal((await srv.http.get(`/api/jobs/${r.body.prompt_id}`, { 'comfy-user': bob })).status, 404);
  });
});
