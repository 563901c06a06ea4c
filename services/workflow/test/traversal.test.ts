import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { pyUnquote } from '../src/files/paths.ts';
import { addTextChunks } from '../src/files/png.ts';
import { png, uploadRawName } from './files-helpers.ts';
import { startWorkflow, waitJob } from './helpers.ts';

/**
 * Path traversal: every route that turns a request into a path on disk gets
 * the same hostile names (encoded, double-encoded, absolute, Windows,
 * NUL, lone surrogates, symlinks pointing out of the data dir, dangling
 * links). Never a 5xx, never a byte of the files outside, never a file
 * written outside; the plain traversal cases answer the reference's
 * 400/403.
 */
const MARK = 'SECRET-OUTSIDE-THE-DATA-DIR-7d1f';

/** Percent-encodes any JS string (lone surrogates as their WTF-8 bytes), keeping `/` when asked. */
function enc(s: string, keepSlash = false): string {
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (c >= 0xd800 && c <= 0xdfff) out += `%${(0xe0 | (c >> 12)).toString(16)}%${(0x80 | ((c >> 6) & 0x3f)).toString(16)}%${(0x80 | (c & 0x3f)).toString(16)}`.toUpperCase();
    else if (keepSlash && ch === '/') out += '/';
    else out += encodeURIComponent(ch);
  }
  return out;
}

/** A request whose path is sent exactly as given (fetch would resolve `..` and `%2e%2e` segments first). */
function rawRequest(base: string, method: string, rawPath: string, body?: Buffer | string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path: rawPath, headers: { ...headers, ...(body !== undefined ? { 'content-length': Buffer.byteLength(body) } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** Whether a name, as the service finally reads it (after `decodes` more percent-decodings), tries to leave its folder. */
function isTraversal(name: string, decodes: number): boolean {
  let n = name;
  for (let i = 0; i < decodes; i++) n = pyUnquote(n);
  return n.includes('\\') || n.startsWith('/') || /^[A-Za-z]:/.test(n) || n.split('/').includes('..') || n.includes('\u0000');
}

function listTree(dir: string): string[] {
  const out: string[] = [];
  const go = (d: string, rel: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      out.push(r);
      if (e.isDirectory()) go(path.join(d, e.name), r);
    }
  };
  go(dir, '');
  return out.sort();
}

forEachStorage('workflow path traversal', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  let outside: string;
  let frontend: string;
  let templates: string;
  let names: string[];
  let before_: string[];
  const outsideContents = new Map<string, Buffer>();

  before(async () => {
    outside = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-outside-'));
    frontend = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-frontend-'));
    templates = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-templates-'));
    const secretPng = addTextChunks(await png(4, 4, [1, 2, 3, 4]), [['secret', MARK]]);
    const header = Buffer.from(JSON.stringify({ __metadata__: { secret: MARK, ssmd_cover_images: JSON.stringify([secretPng.toString('base64')]) } }));
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(header.length));
    const files: Record<string, Buffer> = {
      'secret.txt': Buffer.from(MARK),
      'secret.json': Buffer.from(JSON.stringify({ secret: MARK })),
      'secret.png': secretPng,
      'secret.safetensors': Buffer.concat([len, header]),
      'secret.js': Buffer.from(`// ${MARK}`),
      'index.json': Buffer.from(JSON.stringify([MARK])),
    };
    for (const [n, b] of Object.entries(files)) {
      fs.writeFileSync(path.join(outside, n), b);
      outsideContents.set(n, b);
    }
    fs.writeFileSync(path.join(frontend, 'index.html'), '<html>frontend</html>');
    fs.mkdirSync(path.join(frontend, 'static'));
    fs.writeFileSync(path.join(frontend, 'static', 'app.js'), 'console.log(1)');
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(frontend, 'static', 'link.js'));
    fs.writeFileSync(path.join(templates, 'index.json'), '[]');
    fs.symlinkSync(outside, path.join(templates, 'linkdir'));

    srv = await startWorkflow(storage, { frontEndRoot: frontend, templatesRoot: templates });
    const d = srv.cfg.dataDir;
    // Links inside the data dir that point out of it, and dangling links a write would follow.
    const links: Array<[string, string]> = [
      ['input/link.png', 'secret.png'],
      ['input/linkdir', ''],
      ['input/dangle.png', 'created-by-upload.png'],
      ['output/link.png', 'secret.png'],
      ['output/linkdir', ''],
      ['user/default/link.json', 'secret.json'],
      ['user/default/linkdir', ''],
      ['user/default/dangle.json', 'created-by-userdata.json'],
      ['models/checkpoints/link.safetensors', 'secret.safetensors'],
      ['models/checkpoints/linkdir', ''],
      ['custom_nodes/pack/web/link.js', 'secret.js'],
      ['custom_nodes/pack/web/linkdir', ''],
      ['custom_nodes/pack/example_workflows/link.json', 'secret.json'],
      ['custom_nodes/pack/subgraphs/link.json', 'secret.json'],
      ['custom_nodes/pack/locales/en/main.json', 'secret.json'],
    ];
    for (const [at, to] of links) {
      fs.mkdirSync(path.dirname(path.join(d, at)), { recursive: true });
      fs.symlinkSync(to ? path.join(outside, to) : outside, path.join(d, at));
    }
    fs.writeFileSync(path.join(d, 'user', 'default', 'ok.json'), '{}');
    fs.writeFileSync(path.join(d, 'input', 'ok.png'), await png(2, 2, [9, 9, 9, 255]));
    fs.writeFileSync(path.join(d, 'output', 'ok.png'), await png(2, 2, [9, 9, 9, 255]));

    const relFromInput = path.relative(path.join(d, 'input'), outside);
    const relFromUser = path.relative(path.join(d, 'user', 'default'), outside);
    names = [
      '..',
      '../',
      '../..',
      '../../..',
      '../../../../../../../../etc/passwd',
      `${relFromInput}/secret.txt`,
      `${relFromInput}/secret.png`,
      `${relFromUser}/secret.json`,
      `${relFromUser}/x.json`,
      `${outside}/secret.txt`,
      `${outside}/secret.png`,
      `${outside}/secret.json`,
      '/etc/passwd',
      '/etc',
      '//etc/passwd',
      '/',
      '..\\..\\secret.txt',
      '..\\',
      `${relFromInput.replaceAll('/', '\\')}\\secret.txt`,
      'C:\\Windows\\win.ini',
      'C:/Windows/win.ini',
      '\\\\server\\share\\x',
      '\\',
      '%2e%2e%2fsecret.txt',
      '%2e%2e/%2e%2e/etc/passwd',
      `%2e%2e%2f%2e%2e%2f${enc(path.basename(outside))}%2fsecret.txt`,
      '%252e%252e%252f%252e%252e%252fetc%252fpasswd',
      '..%2f..%2fetc%2fpasswd',
      '..%5c..%5cetc',
      '.%2e/.%2e/x',
      '%2F',
      '%2Fetc%2Fpasswd',
      'a/../../secret.txt',
      'a/b/../../../x.json',
      './../x',
      '....//....//etc/passwd',
      '..;/x',
      '..%00/x',
      '%00',
      'x\u0000.png',
      '\u0000',
      'x\u0000/../../etc/passwd',
      '\ud800.png',
      'x\udfff',
      'link.png',
      'link.json',
      'linkdir/secret.txt',
      'linkdir/secret.png',
      'linkdir/secret.json',
      'linkdir',
      'dangle.png',
      'dangle.json',
      'link.safetensors',
      'linkdir/secret.safetensors',
      'linkdir/../linkdir/secret.txt',
      'a'.repeat(300) + '.png',
      'a/'.repeat(1100) + 'x',
      '..\u2215..\u2215etc',
      '\uff0e\uff0e/\uff0e\uff0e/etc',
      '~/.ssh/id_rsa',
      '.',
      './',
      ' ..',
      '.. ',
      '..\t/x',
      '..\n/x',
      'file:///etc/passwd',
      `${outside}/../${path.basename(outside)}/secret.txt`,
    ];
    before_ = listTree(outside);
  });

  after(async () => {
    await srv.close();
    for (const d of [outside, frontend, templates]) fs.rmSync(d, { recursive: true, force: true });
  });

  const failures: string[] = [];
  /** Routes that decode a name once more after the router (the reference's unquote of user data names). */
  const decodedAgain = new Set(['userdata get', 'userdata post', 'userdata delete', 'userdata move from', 'userdata move to', 'userdata list', 'userdata v2']);
  function check(label: string, name: string, r: { status: number; body: Buffer | string }, strict?: number[]) {
    const text = Buffer.isBuffer(r.body) ? r.body.toString('latin1') : r.body;
    if (r.status >= 500) failures.push(`${label} ${JSON.stringify(name).slice(0, 80)} -> ${r.status} ${text.slice(0, 120)}`);
    if (text.includes(MARK) || text.includes(Buffer.from(MARK).toString('base64').slice(0, 20))) failures.push(`${label} ${JSON.stringify(name).slice(0, 80)} leaked the secret (${r.status})`);
    if (strict && isTraversal(name, decodedAgain.has(label) ? 1 : 0) && !strict.includes(r.status)) failures.push(`${label} ${JSON.stringify(name).slice(0, 80)} -> ${r.status}, expected ${strict.join('/')}`);
  }

  test('at least 50 hostile names against every file-touching route: no 5xx, no leak, the reference statuses', async () => {
    assert.ok(names.length >= 50, String(names.length));
    const img = await png(2, 2, [5, 5, 5, 255]);
    const mask = await png(2, 2, [0, 0, 0, 0]);
    const u = srv.url;
    for (const name of names) {
      const e = enc(name);
      const eSlash = enc(name, true);
      // uploads: the file name, the subfolder (input and output), and the mask's original
      check('upload filename', name, await uploadRawName(u, '/upload/image', img, name).then((r) => ({ status: r.status, body: r.text })), [400]);
      check('upload subfolder', name, await uploadRawName(u, '/upload/image', img, 't.png', { subfolder: name }).then((r) => ({ status: r.status, body: r.text })), [400]);
      check('upload output subfolder', name, await uploadRawName(u, '/api/upload/image', img, 't.png', { subfolder: name, type: 'output' }).then((r) => ({ status: r.status, body: r.text })), [400]);
      check('mask original', name, await uploadRawName(u, '/upload/mask', mask, 'm.png', { original_ref: JSON.stringify({ filename: name, type: 'input' }) }).then((r) => ({ status: r.status, body: r.text })), [400, 403, 404]);
      check('mask original subfolder', name, await uploadRawName(u, '/upload/mask', mask, 'm.png', { original_ref: JSON.stringify({ filename: 'ok.png', subfolder: name }) }).then((r) => ({ status: r.status, body: r.text })), [400, 403, 404]);
      // /view
      for (const t of ['input', 'output']) {
        check('view filename', name, await rawRequest(u, 'GET', `/view?type=${t}&filename=${e}`), [400, 403, 404]);
        check('view subfolder', name, await rawRequest(u, 'GET', `/api/view?type=${t}&filename=ok.png&subfolder=${e}`), [400, 403, 404]);
        check('view preview', name, await rawRequest(u, 'GET', `/view?type=${t}&filename=${e}&preview=webp;50`), [400, 403, 404]);
        check('view channel', name, await rawRequest(u, 'GET', `/view?type=${t}&filename=${e}&channel=a`), [400, 403, 404]);
      }
      check('view annotated', name, await rawRequest(u, 'GET', `/view?filename=${enc(name + ' [input]')}`), [400, 403, 404]);
      // models
      const st = name.endsWith('.safetensors') ? name : `${name}.safetensors`;
      check('view_metadata filename', name, await rawRequest(u, 'GET', `/view_metadata/checkpoints?filename=${enc(st)}`), [404]);
      check('view_metadata folder', name, await rawRequest(u, 'GET', `/view_metadata/${e}?filename=link.safetensors`), [404]);
      check('model preview', name, await rawRequest(u, 'GET', `/experiment/models/preview/checkpoints/0/${eSlash}`), [400, 404]);
      check('model preview encoded', name, await rawRequest(u, 'GET', `/api/experiment/models/preview/checkpoints/0/${e}`), [400, 404]);
      check('models folder', name, await rawRequest(u, 'GET', `/models/${e}`), [400, 404]);
      check('experiment models folder', name, await rawRequest(u, 'GET', `/experiment/models/${e}`), [400, 404]);
      // user data
      check('userdata get', name, await rawRequest(u, 'GET', `/userdata/${e}`), [400, 403, 404]);
      check('userdata get double', name, await rawRequest(u, 'GET', `/userdata/${enc(e)}`), [400, 403, 404]);
      check('userdata post', name, await rawRequest(u, 'POST', `/userdata/${e}`, 'PWNED'), [400, 403, 404]);
      check('userdata post double', name, await rawRequest(u, 'POST', `/api/userdata/${enc(e)}?overwrite=true`, 'PWNED'), [400, 403, 404]);
      check('userdata delete', name, await rawRequest(u, 'DELETE', `/userdata/${e}`), [400, 403, 404]);
      check('userdata move from', name, await rawRequest(u, 'POST', `/userdata/${e}/move/moved.json`), [400, 403, 404]);
      check('userdata move to', name, await rawRequest(u, 'POST', `/userdata/ok.json/move/${e}`), [400, 403, 404]);
      if (!fs.existsSync(path.join(srv.cfg.dataDir, 'user', 'default', 'ok.json'))) fs.writeFileSync(path.join(srv.cfg.dataDir, 'user', 'default', 'ok.json'), '{}');
      check('userdata list', name, await rawRequest(u, 'GET', `/userdata?dir=${e}&recurse=true&full_info=true`), [400, 403, 404]);
      check('userdata v2', name, await rawRequest(u, 'GET', `/v2/userdata?path=${e}`), [400, 403, 404]);
      // frontend support
      check('extension script', name, await rawRequest(u, 'GET', `/extensions/pack/${eSlash}`), [400, 403, 404]);
      check('template file', name, await rawRequest(u, 'GET', `/api/workflow_templates/pack/${eSlash}`), [400, 403, 404]);
      check('templates', name, await rawRequest(u, 'GET', `/templates/${eSlash}`), [400, 403, 404]);
      check('frontend root', name, await rawRequest(u, 'GET', `/${eSlash}`), [400, 403, 404]);
      check('frontend root encoded', name, await rawRequest(u, 'GET', `/static/${e}`), [400, 403, 404]);
      check('internal files', name, await rawRequest(u, 'GET', `/internal/files/${e}`), [400, 404]);
      check('global subgraph', name, await rawRequest(u, 'GET', `/global_subgraphs/${e}`), [400, 404]);
      // nodes that open files: a loader's image name that leaves its folder is refused at validation, before any read
      for (const [cls, extra] of [['LoadImage', {}], ['LoadImageMask', { channel: 'alpha' }]] as const) {
        for (const image of [name, `${name} [output]`]) {
          const r = await srv.http.post('/prompt', { prompt: { 1: { class_type: cls, inputs: { image, ...extra } }, 2: { class_type: 'PreviewAny', inputs: { source: ['1', 0] } } } });
          // (names that are merely odd, such as a literal `%2e%2e%2f…`, are files the uploads above created inside input)
          check(`${cls} image`, image, { status: r.status, body: r.text }, [400]);
        }
      }
    }
    assert.deepEqual(failures, []);
  });

  test('SaveImage: every hostile filename_prefix fails the node or saves inside the output folder', async () => {
    const out = fs.realpathSync(path.join(srv.cfg.dataDir, 'output'));
    const bad: string[] = [];
    for (const name of names) {
      const r = await srv.http.post('/prompt', {
        prompt: {
          1: { class_type: 'EmptyImage', inputs: { width: 1, height: 1, batch_size: 1, color: 0 } },
          2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: name } },
        },
      });
      if (r.status >= 500 || (r.status !== 200 && r.status !== 400)) {
        bad.push(`${JSON.stringify(name).slice(0, 80)} -> ${r.status}`);
        continue;
      }
      if (r.status !== 200) continue;
      const j = await waitJob(srv.http, r.body.prompt_id);
      if (j.status !== 'completed') continue;
      for (const img of j.outputs['2'].images as Array<{ filename: string; subfolder: string; type: string }>) {
        const p = fs.realpathSync(path.join(out, img.subfolder, img.filename));
        if (img.type !== 'output' || !p.startsWith(out + path.sep)) bad.push(`${JSON.stringify(name).slice(0, 80)} saved at ${p}`);
      }
    }
    assert.deepEqual(bad, []);
  });

  test('the plain cases answer exactly the reference statuses', async () => {
    const img = await png(2, 2, [5, 5, 5, 255]);
    assert.equal((await uploadRawName(srv.url, '/upload/image', img, '../x.png')).status, 400);
    assert.equal((await uploadRawName(srv.url, '/upload/image', img, 'x.png', { subfolder: '../../x' })).status, 400);
    assert.equal((await rawRequest(srv.url, 'GET', '/view?filename=..%2Fworkflow.sqlite&type=input')).status, 400);
    assert.equal((await rawRequest(srv.url, 'GET', '/view?filename=%2Fetc%2Fpasswd')).status, 400);
    assert.equal((await rawRequest(srv.url, 'GET', '/view?filename=passwd&subfolder=..%2F..%2F..%2F..%2Fetc')).status, 403);
    assert.equal((await rawRequest(srv.url, 'GET', '/userdata/..%2F..%2Fworkflow.sqlite')).status, 403);
    assert.equal((await rawRequest(srv.url, 'GET', '/userdata/%252e%252e%252f%252e%252e%252fworkflow.sqlite')).status, 403);
    assert.equal((await rawRequest(srv.url, 'GET', '/userdata?dir=..')).status, 403);
    assert.equal((await rawRequest(srv.url, 'GET', '/v2/userdata?path=..')).status, 400);
    // symlinks out of the data dir are refused, not followed
    assert.equal((await rawRequest(srv.url, 'GET', '/view?filename=link.png&type=input')).status, 403);
    assert.equal((await rawRequest(srv.url, 'GET', '/userdata/link.json')).status, 403);
    assert.equal((await rawRequest(srv.url, 'POST', '/userdata/dangle.json', 'x')).status, 403);
    assert.equal((await rawRequest(srv.url, 'GET', '/view_metadata/checkpoints?filename=link.safetensors')).status, 404);
    // what stays inside still works
    assert.equal((await rawRequest(srv.url, 'GET', '/view?filename=ok.png&type=input')).status, 200);
    assert.equal((await rawRequest(srv.url, 'GET', '/')).status, 200);
    assert.equal((await rawRequest(srv.url, 'GET', '/static/app.js')).status, 200);
    assert.equal((await rawRequest(srv.url, 'GET', '/userdata/ok.json')).status, 200);
  });

  test('listings never show or follow links that leave the data dir', async () => {
    // (the hostile runs above left files with odd but harmless names inside; links out must not show)
    const list: string[] = JSON.parse((await rawRequest(srv.url, 'GET', '/userdata?dir=.&recurse=true')).body.toString());
    assert.ok(list.includes('ok.json'));
    assert.deepEqual(list.filter((p) => p === 'link.json' || p === 'dangle.json' || p.startsWith('linkdir')), []);
    const v2: Array<{ path: string }> = JSON.parse((await rawRequest(srv.url, 'GET', '/v2/userdata')).body.toString());
    assert.deepEqual(v2.filter((e) => e.path === 'link.json' || e.path === 'dangle.json' || e.path.startsWith('linkdir')), []);
    const models = (await rawRequest(srv.url, 'GET', '/experiment/models/checkpoints')).body.toString();
    assert.ok(!models.includes('secret') && !models.includes('link'), models);
    const ext = (await rawRequest(srv.url, 'GET', '/extensions')).body.toString();
    assert.ok(!ext.includes('link') && !ext.includes('secret'), ext);
    const subgraphs = JSON.parse((await rawRequest(srv.url, 'GET', '/global_subgraphs')).body.toString());
    assert.deepEqual(subgraphs, {});
    const i18n = (await rawRequest(srv.url, 'GET', '/i18n')).body.toString();
    assert.ok(!i18n.includes(MARK));
    const files = (await rawRequest(srv.url, 'GET', '/internal/files/input')).body.toString();
    assert.ok(!files.includes('link.png'), files);
    const oi = (await rawRequest(srv.url, 'GET', '/object_info/LoadImage')).body.toString();
    assert.ok(!oi.includes('linkdir/secret'), 'LoadImage lists no file behind a link out');
  });

  test('nothing outside the data dir was written, moved or changed', () => {
    assert.deepEqual(listTree(outside), before_);
    for (const [n, b] of outsideContents) assert.deepEqual(fs.readFileSync(path.join(outside, n)), b, n);
    assert.equal(fs.existsSync(path.join(outside, 'created-by-upload.png')), false);
    assert.equal(fs.existsSync(path.join(outside, 'created-by-userdata.json')), false);
    for (const n of ['passwd', 'x.json', 'x.png', 'moved.json', 't.png']) {
      assert.equal(fs.existsSync(path.join(path.dirname(srv.cfg.dataDir), n)), false, n);
    }
  });
});
