import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { client, forEachStorage, TEST_DATABASE_URL, type StorageKind } from '@svc/testkit';
import { dropPgSchema } from '@svc/storage';
import { png, upload } from './files-helpers.ts';
import { textPrompt, WsClient } from './helpers.ts';

/**
 * `npm run workflow` runs the service from an esbuild bundle that also holds
 * its pure-JavaScript dependencies (scripts/run-service.mjs). The other tests
 * load the sources through tsx, so this one starts the bundle the way users do
 * and walks through what depends on files found at run time: swagger-ui's
 * static assets, the lazily loaded image library, node packs, WebSocket.
 */

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');

forEachStorage('workflow run from its bundle', (storage: StorageKind) => {
  let proc: ChildProcess;
  let url = '';
  let dataDir = '';
  const schema = `t_wf_bundle_${randomBytes(4).toString('hex')}`;
  let exited: Promise<number | null>;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-bundle-'));
    writeApiPacks(path.join(dataDir, 'custom_nodes'));
    // A pack folder importing the fixture by its path: compiled with esbuild as a user's pack that imports TypeScript.
    fs.mkdirSync(path.join(dataDir, 'custom_nodes', 'native_pack'), { recursive: true });
    fs.writeFileSync(path.join(dataDir, 'custom_nodes', 'native_pack', 'index.mjs'), `export * from ${JSON.stringify(path.join(ROOT, 'services', 'workflow', 'test', 'fixtures', 'native-pack.mjs'))};\n`);
    const db = storage === 'postgres' ? ['--database-url', TEST_DATABASE_URL, '--pg-schema', schema] : [];
    proc = spawn(process.execPath, [path.join(ROOT, 'scripts', 'run-service.mjs'), 'workflow', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--log-level', 'warn', ...db], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, DATABASE_URL: '' },
    });
    exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
    let out = '';
    url = await new Promise<string>((resolve, reject) => {
      const onData = (c: Buffer) => {
        out += String(c);
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1]!);
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', onData);
      proc.once('exit', (code) => reject(new Error(`service exited (${code}) before listening:\n${out}`)));
    });
  });

  after(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    await exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
    if (storage === 'postgres') await dropPgSchema(TEST_DATABASE_URL, schema);
  });

  test('documents itself: /openapi.json, /docs and its static files', async () => {
    const http = client(url);
    const spec = await http.get('/openapi.json');
    assert.equal(spec.status, 200);
    assert.ok(spec.body.paths['/api/prompt']);
    const docs = await fetch(`${url}/docs`, { redirect: 'follow' });
    assert.equal(docs.status, 200);
    const html = await docs.text();
    assert.match(html, /swagger/i);
    const css = await fetch(`${url}/docs/static/swagger-ui.css`);
    assert.equal(css.status, 200);
    assert.ok((await css.arrayBuffer()).byteLength > 1000);
  });

  test('runs a prompt and reports it on the WebSocket', async () => {
    const ws = new WsClient(url, 'bundle-client');
    await ws.opened;
    const r = await client(url).post('/prompt', { prompt: textPrompt('from the bundle'), client_id: 'bundle-client' });
    assert.equal(r.status, 200);
    const msgs = await ws.promptDone(r.body.prompt_id);
    assert.ok(msgs.some((m) => m.type === 'execution_success'));
    const executed = msgs.find((m) => m.type === 'executed');
    assert.deepEqual(executed?.data.output.text, ['from the bundle']);
    ws.close();
  });

  test('loads the image library on first use: upload, then a webp preview through /view', async () => {
    const up = await upload(url, '/upload/image', await png(8, 6, [10, 20, 30, 255]), 'b.png');
    assert.equal(up.status, 200);
    assert.equal(up.body.name, 'b.png');
    const view = await fetch(`${url}/view?filename=b.png&type=input&preview=webp;80`);
    assert.equal(view.status, 200);
    assert.equal(view.headers.get('content-type'), 'image/webp');
    const head = Buffer.from(await view.arrayBuffer());
    assert.equal(head.subarray(8, 12).toString('latin1'), 'WEBP');
  });

  test('loads packs that import the node API (api.ts) from a .mjs and a .ts module, and runs their expansions and blockers', async () => {
    const info = await client(url).get('/object_info');
    for (const name of ['MjsExpand', 'MjsBlock', 'TsExpand']) assert.ok(info.body[name], `${name} is in /object_info`);
    const ws = new WsClient(url, 'bundle-packs');
    await ws.opened;
    const prompt = {
      '1': { class_type: 'MjsExpand', inputs: { text: 'a' } },
      '2': { class_type: 'PreviewAny', inputs: { source: ['1', 0] } },
      '3': { class_type: 'TsExpand', inputs: { text: 'b' } },
      '4': { class_type: 'PreviewAny', inputs: { source: ['3', 0] } },
      '5': { class_type: 'MjsBlock', inputs: { text: 'c' } },
      '6': { class_type: 'PreviewAny', inputs: { source: ['5', 0] } },
    };
    const r = await client(url).post('/prompt', { prompt, client_id: 'bundle-packs' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const msgs = await ws.promptDone(r.body.prompt_id);
    assert.ok(msgs.some((m) => m.type === 'execution_success'), JSON.stringify(msgs.filter((m) => m.type === 'execution_error')));
    const texts = Object.fromEntries(msgs.filter((m) => m.type === 'executed').map((m) => [m.data.node, m.data.output.text]));
    // The expansions ran under the engine's id prefix (a pack's own GraphBuilder copy would reuse ids across nodes).
    assert.deepEqual(texts['2'], ['a+1']);
    assert.deepEqual(texts['4'], ['b+3']);
    // The blocker was recognised as the engine's: its output node was skipped, the prompt still succeeded.
    assert.equal(texts['6'], undefined);
    ws.close();
  });

  test('stops cleanly on SIGTERM, also while a node is inside a long ONNX Runtime call (a model step)', async () => {
    // Its execution thread is terminated only once the call has returned: terminated inside, the process would abort.
    const inside = path.join(dataDir, 'inside-native');
    const r = await client(url).post('/prompt', { prompt: { n: { class_type: 'TestNativeSpin', inputs: { size: 800, count: 40, name: inside } } } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    while (!fs.existsSync(inside)) await new Promise((res) => setTimeout(res, 10));
    proc.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});

/** Two packs written as the README shows: importing the node API by its path in the repository. */
function writeApiPacks(dir: string): void {
  const api = path.join(ROOT, 'services', 'workflow', 'src', 'nodes', 'api.ts');
  const expand = (name: string) => `{
    name: '${name}',
    category: 'testing',
    inputs: { required: { text: ['STRING', { default: '' }] }, hidden: { unique_id: 'UNIQUE_ID' } },
    outputs: ['STRING'],
    execute: ({ text, unique_id }) => {
      const g = new GraphBuilder();
      const n = g.node('StringConcatenate', 'join', { string_a: text, string_b: String(unique_id), delimiter: '+' });
      return { result: [n.out(0)], expand: g.finalize() };
    },
  }`;
  fs.mkdirSync(path.join(dir, 'mjs_pack'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'mjs_pack', 'index.mjs'),
    `import { ExecutionBlocker, GraphBuilder } from ${JSON.stringify(api)};
export const nodes = [${expand('MjsExpand')}, { name: 'MjsBlock', category: 'testing', inputs: { required: { text: ['STRING', { default: '' }] } }, outputs: ['STRING'], execute: () => [new ExecutionBlocker(null)] }];
`,
  );
  fs.mkdirSync(path.join(dir, 'ts_pack'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'ts_pack', 'index.ts'), `import { GraphBuilder, type NodeDefinition } from ${JSON.stringify(api)};\nexport const nodes: NodeDefinition[] = [${expand('TsExpand')}];\n`);
}
