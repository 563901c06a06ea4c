/**
 * The OpenAI-compatible API nodes against a loopback server that speaks the
 * wire format (chat completions JSON, images b64_json), including its error
 * answers; and the key handling: never in history, jobs, the queue,
 * object_info, saved files, errors or logs.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { onOneStorage } from '@svc/testkit';
import { readTextChunks } from '../src/files/png.ts';
import { normalizeBaseUrl, openaiConfig } from '../src/nodes/api-nodes.ts';
import { redactArgv } from '../src/routes/system.ts';
import { extractSecretInputs, scrubSecrets } from '../src/runtime/secrets.ts';
import { startWorkflow, waitJob } from './helpers.ts';

const CFG_KEY = 'sk-configured-0123456789abcdefKEY';
const NODE_KEY = 'sk-node-input-9876543210zyxwvuKEY';
const EXTRA_KEY = 'sk-extra-data-55555555555555KEY';
const SECRETS = [CFG_KEY, NODE_KEY, EXTRA_KEY];

interface Seen {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  closed: boolean;
}
type Behaviour = (req: http.IncomingMessage, res: http.ServerResponse, body: any, seen: Seen) => void;

/** A loopback OpenAI-compatible server whose next answers the test sets. */
class FakeOpenAI {
  readonly seen: Seen[] = [];
  behave: Behaviour = ok;
  private waiters: Array<() => void> = [];
  private server!: http.Server;
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        let body: any = null;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = Buffer.concat(chunks).toString('utf8');
        }
        const s: Seen = { method: req.method!, path: req.url!, headers: req.headers, body, closed: false };
        res.on('close', () => {
          s.closed = true;
          this.notify();
        });
        this.seen.push(s);
        this.notify();
        this.behave(req, res, body, s);
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  private notify(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  async until(pred: () => boolean): Promise<void> {
    while (!pred()) await new Promise<void>((r) => this.waiters.push(r));
  }

  reset(b: Behaviour = ok): void {
    this.seen.length = 0;
    this.behave = b;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

const ok: Behaviour = (req, res, body) => {
  if (req.url === '/v1/chat/completions') {
    const user = body.messages.at(-1).content;
    return json(res, 200, { id: 'c1', object: 'chat.completion', model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: `echo: ${typeof user === 'string' ? user : user[0].text}` }, finish_reason: 'stop' }] });
  }
  json(res, 404, { error: { message: 'no such route' } });
};

async function pngB64(w: number, h: number, rgb: [number, number, number]): Promise<string> {
  const png = await sharp({ create: { width: w, height: h, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } }).png().toBuffer();
  return png.toString('base64');
}

function chatPrompt(text: string, inputs: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    '1': { class_type: 'OpenAICompatibleChat', inputs: { prompt: text, ...inputs } },
    '2': { class_type: 'PreviewAny', inputs: { source: ['1', 0] } },
  };
}

function assertNoSecret(text: string, where: string): void {
  for (const s of SECRETS) assert.ok(!text.includes(s), `${where} must not contain a key`);
}

test('base URLs are checked and normalised; flags and env configure the nodes', () => {
  assert.equal(normalizeBaseUrl('http://127.0.0.1:9/v1/'), 'http://127.0.0.1:9/v1');
  assert.throws(() => normalizeBaseUrl('ftp://127.0.0.1/'), /http or https/);
  assert.throws(() => normalizeBaseUrl('http://u:p@127.0.0.1/'), /credentials/);
  assert.throws(() => normalizeBaseUrl('http://127.0.0.1/?key=1'), /query/);
  assert.throws(() => normalizeBaseUrl('not a url'), /not a URL/);
  const c = openaiConfig({ openaiBaseUrl: 'http://127.0.0.1:1/v1/' }, { WORKFLOW_OPENAI_API_KEY: 'k', WORKFLOW_OPENAI_TIMEOUT: '1.5', WORKFLOW_OPENAI_MAX_RESPONSE_MB: '0.5' });
  assert.deepEqual([c.baseUrl, c.apiKey, c.timeoutMs, c.maxResponseBytes, c.maxRetries], ['http://127.0.0.1:1/v1', 'k', 1500, 512 * 1024, 2]);
  assert.equal(c.apiNodeFlag, true);
  const huge = openaiConfig({ openaiTimeout: '1e12', openaiMaxResponseMb: '1e9' }, {});
  assert.deepEqual([huge.timeoutMs, huge.maxResponseBytes], [86_400_000, 1024 * 1024 * 1024], 'bounded, so timers and buffers stay valid');
  assert.equal(openaiConfig({ openaiApiNodeFlag: 'false' }, {}).apiNodeFlag, false);
  assert.equal(openaiConfig({}, { WORKFLOW_OPENAI_API_NODE_FLAG: '0' }).apiNodeFlag, false);
  assert.throws(() => openaiConfig({ openaiApiNodeFlag: 'maybe' }, {}), /--openai-api-node-flag/);
  assert.throws(() => openaiConfig({ openaiTimeout: '-1' }, {}), /--openai-timeout/);
  assert.throws(() => openaiConfig({ openaiMaxRetries: '1.5' }, {}), /--openai-max-retries/);
});

test('scrubSecrets replaces every copy at any depth; short secrets only as whole strings', () => {
  let deep: any = { v: `x ${NODE_KEY} y` };
  for (let i = 0; i < 20_000; i++) deep = [deep];
  const root = { a: NODE_KEY, b: [{ c: `prefix-${NODE_KEY}` }], d: deep, e: 'abc-abc', f: 'abc' };
  scrubSecrets([root], [NODE_KEY, 'abc']);
  assert.equal(root.a, '[redacted]');
  assert.equal(root.b[0]!.c, 'prefix-[redacted]');
  assert.equal(root.e, 'abc-abc');
  assert.equal(root.f, '[redacted]');
  let d: any = root.d;
  while (Array.isArray(d)) d = d[0];
  assert.equal(d.v, 'x [redacted] y');
});

onOneStorage('workflow OpenAI-compatible API nodes', (storage) => {
  let fake: FakeOpenAI;
  let other: FakeOpenAI;
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  let tight: Awaited<ReturnType<typeof startWorkflow>>;
  let bare: Awaited<ReturnType<typeof startWorkflow>>;

  before(async () => {
    fake = await new FakeOpenAI().start();
    other = await new FakeOpenAI().start();
    srv = await startWorkflow(storage, {
      openaiBaseUrl: fake.url,
      openaiApiKey: CFG_KEY,
      openaiAllowedBaseUrls: `${other.url}/`,
      openaiChatModel: 'test-chat',
      openaiImageModel: 'test-image',
    }, { overrides: { logLevel: 'warn' } });
    tight = await startWorkflow(storage, { openaiBaseUrl: fake.url, openaiApiKey: CFG_KEY, openaiTimeout: '3', openaiMaxResponseMb: '0.05', openaiMaxRetries: '0' });
    bare = await startWorkflow(storage, { openaiApiNodeFlag: 'false' });
  });
  after(async () => {
    await srv?.close();
    await tight?.close();
    await bare?.close();
    await fake?.close();
    await other?.close();
  });

  test('object_info: api_node, category, schemas; no configured key anywhere', async () => {
    const r = await srv.http.get('/object_info');
    assertNoSecret(r.text, 'object_info');
    const chat = r.body.OpenAICompatibleChat;
    assert.equal(chat.api_node, true);
    assert.equal(chat.category, 'api node/text/OpenAI-compatible');
    assert.deepEqual(chat.output, ['STRING']);
    assert.deepEqual(chat.input.required.prompt, ['STRING', { default: '', multiline: true, tooltip: 'The user message.' }]);
    assert.equal(chat.input.optional.model[1].default, 'test-chat');
    assert.equal(chat.input.optional.api_key[1].default, '');
    assert.equal(chat.input.optional.api_key[1].secret, true);
    const img = r.body.OpenAICompatibleImage;
    assert.equal(img.api_node, true);
    assert.equal(img.category, 'api node/image/OpenAI-compatible');
    assert.deepEqual(img.output, ['IMAGE']);
    assert.equal(img.input.optional.model[1].default, 'test-image');
    assert.equal((await srv.http.get('/object_info/PrimitiveString')).body.PrimitiveString.api_node, false);
  });

  test('chat: the configured endpoint, model and key; the answer becomes the STRING output', async () => {
    fake.reset();
    const r = await srv.http.post('/prompt', { prompt: chatPrompt('hello', { system_prompt: 'be brief', max_tokens: 7, seed: 42, temperature: 0.5 }) });
    assert.equal(r.status, 200, r.text);
    const j = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(j.status, 'completed', JSON.stringify(j.execution_error));
    assert.deepEqual(j.outputs['2'], { text: ['echo: hello'] });
    assert.equal(fake.seen.length, 1);
    const s = fake.seen[0]!;
    assert.equal(s.method, 'POST');
    assert.equal(s.path, '/v1/chat/completions');
    assert.equal(s.headers.authorization, `Bearer ${CFG_KEY}`);
    assert.equal(s.headers['content-type'], 'application/json');
    assert.deepEqual(s.body, { model: 'test-chat', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello' }], temperature: 0.5, max_tokens: 7, seed: 42 });
  });

  test('chat with images sends PNG data URLs as content parts', async () => {
    fake.reset();
    const r = await srv.http.post('/prompt', {
      prompt: {
        i: { class_type: 'EmptyImage', inputs: { width: 2, height: 2, batch_size: 2, color: 0xff0000 } },
        ...chatPrompt('what colour?', { images: ['i', 0], model: 'vision-model' }),
      },
    });
    const j = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(j.status, 'completed', JSON.stringify(j.execution_error));
    const content = fake.seen[0]!.body.messages[0].content;
    assert.equal(fake.seen[0]!.body.model, 'vision-model');
    assert.equal(content.length, 3);
    assert.deepEqual(content[0], { type: 'text', text: 'what colour?' });
    const url: string = content[1].image_url.url;
    assert.match(url, /^data:image\/png;base64,/);
    const { data, info } = await sharp(Buffer.from(url.split(',')[1]!, 'base64')).raw().toBuffer({ resolveWithObject: true });
    assert.deepEqual([info.width, info.height, data[0], data[1], data[2]], [2, 2, 255, 0, 0]);
  });

  test('image generation: b64_json images become an IMAGE batch (other sizes scaled to the first) that SaveImage writes', async () => {
    const a = await pngB64(4, 2, [10, 200, 30]);
    const b = await pngB64(8, 4, [250, 0, 5]);
    fake.reset((req, res) => json(res, 200, { created: 1, data: [{ b64_json: a }, { b64_json: b, revised_prompt: 'x' }] }));
    const r = await srv.http.post('/prompt', {
      prompt: {
        g: { class_type: 'OpenAICompatibleImage', inputs: { prompt: 'a cat', n: 2, size: '4x2', quality: 'hd' } },
        s: { class_type: 'SaveImage', inputs: { images: ['g', 0], filename_prefix: 'gen' } },
      },
    });
    assert.equal(r.status, 200, r.text);
    const j = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(j.status, 'completed', JSON.stringify(j.execution_error));
    assert.equal(fake.seen[0]!.path, '/v1/images/generations');
    assert.deepEqual(fake.seen[0]!.body, { model: 'test-image', prompt: 'a cat', n: 2, size: '4x2', response_format: 'b64_json', quality: 'hd' });
    const files = j.outputs.s.images.map((i: any) => path.join(srv.cfg.dataDir, 'output', i.subfolder, i.filename));
    assert.equal(files.length, 2);
    const px = await Promise.all(files.map((f: string) => sharp(f).raw().toBuffer({ resolveWithObject: true })));
    assert.deepEqual([px[0]!.info.width, px[0]!.info.height, ...px[0]!.data.subarray(0, 3)], [4, 2, 10, 200, 30]);
    assert.deepEqual([px[1]!.info.width, px[1]!.info.height, ...px[1]!.data.subarray(0, 3)], [4, 2, 250, 0, 5]);
  });

  test('gpt-image models are not sent response_format; size is validated', async () => {
    const a = await pngB64(2, 2, [1, 2, 3]);
    fake.reset((req, res) => json(res, 200, { data: [{ b64_json: a }] }));
    const r = await srv.http.post('/prompt', {
      prompt: {
        g: { class_type: 'OpenAICompatibleImage', inputs: { prompt: 'x', model: 'gpt-image-1', size: 'auto' } },
        s: { class_type: 'PreviewImage', inputs: { images: ['g', 0] } },
      },
    });
    const j = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(j.status, 'completed', JSON.stringify(j.execution_error));
    assert.ok(!('response_format' in fake.seen[0]!.body));
    const bad = await srv.http.post('/prompt', {
      prompt: { g: { class_type: 'OpenAICompatibleImage', inputs: { prompt: 'x', size: '10x10; rm' } }, s: { class_type: 'PreviewImage', inputs: { images: ['g', 0] } } },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.node_errors.g.errors[0].type, 'custom_validation_failed');
  });

  test('a key typed into the node is used, and never stored: queue, history, jobs, saved PNG, errors', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const a = await pngB64(2, 2, [9, 9, 9]);
    fake.reset((req, res) => void held.then(() => json(res, 200, { data: [{ b64_json: a }] })));
    const workflow = { id: 'wf-secret', nodes: [{ id: 1, type: 'OpenAICompatibleImage', widgets_values: ['a dog', 'm', '1x1', 1, '', 0, '', NODE_KEY] }], note: `my key is ${NODE_KEY}` };
    const prompt = {
      g: { class_type: 'OpenAICompatibleImage', inputs: { prompt: 'a dog', api_key: NODE_KEY } },
      s: { class_type: 'SaveImage', inputs: { images: ['g', 0], filename_prefix: 'secret' } },
    };
    const r = await srv.http.post('/prompt', { prompt, client_id: 'secret-client', extra_data: { extra_pnginfo: { workflow } } });
    assert.equal(r.status, 200, r.text);
    assertNoSecret(r.text, 'the POST answer');
    await fake.until(() => fake.seen.length === 1);
    assert.equal(fake.seen[0]!.headers.authorization, `Bearer ${NODE_KEY}`);
    // While it runs: the queue.
    const q = await srv.http.get('/api/queue');
    assertNoSecret(q.text, 'the queue');
    assert.equal(q.body.queue_running[0][2].g.inputs.api_key, '[redacted]');
    release();
    const j = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(j.status, 'completed', JSON.stringify(j.execution_error));
    assertNoSecret(JSON.stringify(j), 'the job');
    assert.equal(j.workflow.prompt.g.inputs.api_key, '[redacted]');
    assert.equal(j.workflow.extra_data.extra_pnginfo.workflow.note, 'my key is [redacted]');
    assertNoSecret((await srv.http.get(`/history/${r.body.prompt_id}`)).text, 'history');
    assertNoSecret((await srv.http.get('/history')).text, 'history');
    assertNoSecret((await srv.http.get('/api/jobs')).text, 'jobs');
    const png = fs.readFileSync(path.join(srv.cfg.dataDir, 'output', j.outputs.s.images[0].filename));
    assertNoSecret(png.toString('latin1'), 'the saved PNG');
    assert.equal(JSON.parse(readTextChunks(png).prompt!).g.inputs.api_key, '[redacted]');

    // The same prompt queued again from history ("[redacted]") falls back to the configured key.
    fake.reset((req, res) => json(res, 200, { data: [{ b64_json: a }] }));
    const again = await srv.http.post('/prompt', { prompt: { ...j.workflow.prompt, s: { class_type: 'PreviewImage', inputs: { images: ['g', 0] } }, g: { class_type: 'OpenAICompatibleImage', inputs: { prompt: 'another dog', api_key: '[redacted]' } } } });
    const j2 = await waitJob(srv.http, again.body.prompt_id);
    assert.equal(j2.status, 'completed', JSON.stringify(j2.execution_error));
    assert.equal(fake.seen[0]!.headers.authorization, `Bearer ${CFG_KEY}`);
  });

  test('a key in extra_data.openai_api_key is used and kept out of history; a linked secret input is refused', async () => {
    fake.reset();
    const r = await srv.http.post('/prompt', { prompt: chatPrompt('via extra'), extra_data: { openai_api_key: EXTRA_KEY, extra_pnginfo: { copy: EXTRA_KEY } } });
    const j = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(j.status, 'completed', JSON.stringify(j.execution_error));
    assert.equal(fake.seen[0]!.headers.authorization, `Bearer ${EXTRA_KEY}`);
    assertNoSecret(JSON.stringify(j), 'the job');
    assertNoSecret((await srv.http.get(`/history/${r.body.prompt_id}`)).text, 'history');

    const linked = await srv.http.post('/prompt', { prompt: { k: { class_type: 'PrimitiveString', inputs: { value: NODE_KEY } }, ...chatPrompt('x', { api_key: ['k', 0] }) } });
    assert.equal(linked.status, 400);
    assert.equal(linked.body.error.type, 'prompt_outputs_failed_validation');
    assert.equal(linked.body.node_errors['1'].errors[0].type, 'secret_input_linked');
    assert.equal(linked.body.node_errors['1'].class_type, 'OpenAICompatibleChat');
  });

  test('upstream errors become node errors without the key; the worker goes on', async () => {
    const cases: Array<[string, Behaviour, RegExp]> = [
      ['401', (req, res) => json(res, 401, { error: { message: `Incorrect API key provided: ${NODE_KEY}`, type: 'invalid_request_error' } }), /refused the API key \(401 Unauthorized\): Incorrect API key provided: \[redacted\]/],
      ['400', (req, res) => json(res, 400, { error: { message: 'Unknown parameter: seed' } }), /refused the request \(400\): Unknown parameter: seed/],
      ['500 text', (req, res) => { res.writeHead(500, { 'retry-after': '0' }); res.end('upstream exploded'); }, /failed \(500\): upstream exploded/],
      ['malformed JSON', (req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"choices": [ oops'); }, /malformed JSON/],
      ['no choices', (req, res) => json(res, 200, { choices: [] }), /without choices\[0\]\.message/],
      ['refusal', (req, res) => json(res, 200, { choices: [{ message: { content: null, refusal: 'no can do' } }] }), /the model refused: no can do/],
      ['redirect', (req, res) => { res.writeHead(302, { location: `${other.url}/chat/completions` }); res.end(); }, /redirect \(302\)/],
      ['hang up', (req, res) => res.socket?.destroy(), /could not reach the endpoint/],
    ];
    for (const [name, behave, expected] of cases) {
      fake.reset(behave);
      other.reset();
      const r = await srv.http.post('/prompt', { prompt: chatPrompt(`case ${name}`, { api_key: NODE_KEY }) });
      const j = await waitJob(srv.http, r.body.prompt_id);
      assert.equal(j.status, 'failed', name);
      assert.equal(j.execution_error.exception_type, 'OpenAIEndpointError', name);
      assert.equal(j.execution_error.node_type, 'OpenAICompatibleChat', name);
      assert.match(j.execution_error.exception_message, expected, name);
      assertNoSecret(JSON.stringify(j), `job of ${name}`);
      const shown = j.execution_error.current_inputs?.api_key;
      if (shown) assert.deepEqual(shown, ['[redacted]']);
      assertNoSecret((await srv.http.get(`/history/${r.body.prompt_id}`)).text, `history of ${name}`);
      assert.equal(other.seen.length, 0, 'a redirect is never followed');
    }
    assert.equal((await srv.http.get('/health')).status, 200);
    fake.reset();
    const okAfter = await waitJob(srv.http, (await srv.http.post('/prompt', { prompt: chatPrompt('still alive') })).body.prompt_id);
    assert.equal(okAfter.status, 'completed');
  });

  test('429 and 5xx are retried (Retry-After honoured); 401 is not', async () => {
    let n = 0;
    fake.reset((req, res, body) => (++n < 3 ? json(res, 429, { error: { message: 'slow down' } }, { 'retry-after': '0' }) : ok(req, res, body, fake.seen[0]!)));
    const j = await waitJob(srv.http, (await srv.http.post('/prompt', { prompt: chatPrompt('retry me') })).body.prompt_id);
    assert.equal(j.status, 'completed', JSON.stringify(j.execution_error));
    assert.equal(fake.seen.length, 3);
    fake.reset((req, res) => json(res, 429, { error: { message: 'quota' } }, { 'retry-after': '0' }));
    const j2 = await waitJob(srv.http, (await srv.http.post('/prompt', { prompt: chatPrompt('always 429') })).body.prompt_id);
    assert.equal(j2.status, 'failed');
    assert.match(j2.execution_error.exception_message, /429 Too Many Requests\): quota/);
    assert.equal(fake.seen.length, 3, 'two retries, then the error');
    fake.reset((req, res) => json(res, 401, { error: { message: 'bad key' } }));
    const j3 = await waitJob(srv.http, (await srv.http.post('/prompt', { prompt: chatPrompt('no retry') })).body.prompt_id);
    assert.equal(j3.status, 'failed');
    assert.equal(fake.seen.length, 1);
  });

  test('image answers that are not b64 images are node errors; URLs are not fetched', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ data: [] }, /answered no images/],
      [{ data: [{ url: `${other.url}/img.png` }] }, /image URL instead of b64_json/],
      [{ data: [{ b64_json: '!!!notbase64!!!' }] }, /not base64/],
      [{ data: [{ b64_json: Buffer.from('not an image').toString('base64') }] }, /cannot be decoded/],
      [{ nope: true }, /answered no images/],
    ];
    for (const [answer, expected] of cases) {
      fake.reset((req, res) => json(res, 200, answer));
      other.reset();
      const r = await srv.http.post('/prompt', { prompt: { g: { class_type: 'OpenAICompatibleImage', inputs: { prompt: 'x' } }, s: { class_type: 'PreviewImage', inputs: { images: ['g', 0] } } } });
      const j = await waitJob(srv.http, r.body.prompt_id);
      assert.equal(j.status, 'failed');
      assert.match(j.execution_error.exception_message, expected);
      assert.equal(other.seen.length, 0);
    }
  });

  test('base_url: only the configured or allowed endpoints; the configured key never goes elsewhere', async () => {
    fake.reset();
    other.reset();
    const denied = await waitJob(srv.http, (await srv.http.post('/prompt', { prompt: chatPrompt('elsewhere', { base_url: 'http://127.0.0.2:9/v1' }) })).body.prompt_id);
    assert.equal(denied.status, 'failed');
    assert.match(denied.execution_error.exception_message, /base_url is not one of the endpoints this server allows/);
    const allowed = await waitJob(srv.http, (await srv.http.post('/prompt', { prompt: chatPrompt('other endpoint', { base_url: other.url }) })).body.prompt_id);
    assert.equal(allowed.status, 'completed', JSON.stringify(allowed.execution_error));
    assert.equal(other.seen.length, 1);
    assert.equal(other.seen[0]!.headers.authorization, undefined, 'the configured key stays with the configured endpoint');
    const withKey = await waitJob(srv.http, (await srv.http.post('/prompt', { prompt: chatPrompt('other endpoint, own key', { base_url: other.url, api_key: NODE_KEY }) })).body.prompt_id);
    assert.equal(withKey.status, 'completed');
    assert.equal(other.seen[1]!.headers.authorization, `Bearer ${NODE_KEY}`);
    assert.equal(fake.seen.length, 0);
  });

  test('interrupt aborts the request in flight; the prompt ends cancelled', async () => {
    fake.reset(() => {});
    const r = await srv.http.post('/prompt', { prompt: chatPrompt('never answered') });
    await fake.until(() => fake.seen.length === 1);
    assert.equal((await srv.http.post('/interrupt', {})).status, 200);
    const j = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(j.status, 'cancelled');
    await fake.until(() => fake.seen[0]!.closed);
  });

  test('no endpoint configured: a clear node error and no request', async () => {
    fake.reset();
    const j = await waitJob(bare.http, (await bare.http.post('/prompt', { prompt: chatPrompt('nowhere', { api_key: NODE_KEY }) })).body.prompt_id);
    assert.equal(j.status, 'failed');
    assert.match(j.execution_error.exception_message, /No OpenAI-compatible endpoint is configured: start the server with --openai-base-url/);
    assert.equal(fake.seen.length, 0);
    // --openai-api-node-flag false: plain nodes for frontends that gate API nodes behind a sign-in.
    const info = (await bare.http.get('/object_info/OpenAICompatibleChat')).body.OpenAICompatibleChat;
    assert.equal(info.api_node, false);
    assert.equal(info.category, 'api node/text/OpenAI-compatible');
  });

  test('time-out and size cap: a slow or oversized answer is a node error', async () => {
    fake.reset(() => {});
    const slow = await waitJob(tight.http, (await tight.http.post('/prompt', { prompt: chatPrompt('slow') })).body.prompt_id);
    assert.equal(slow.status, 'failed');
    assert.match(slow.execution_error.exception_message, /did not answer \/chat\/completions within 3 s/);
    await fake.until(() => fake.seen[0]!.closed);

    const big = 'x'.repeat(200 * 1024);
    fake.reset((req, res) => json(res, 200, { choices: [{ message: { content: big } }] }));
    const sized = await waitJob(tight.http, (await tight.http.post('/prompt', { prompt: chatPrompt('big, declared') })).body.prompt_id);
    assert.equal(sized.status, 'failed');
    assert.match(sized.execution_error.exception_message, /larger than the limit of 52428 bytes/);

    // Streamed without a length, and endless: the read stops at the cap.
    fake.reset((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(16 * 1024, 0x20);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    const streamed = await waitJob(tight.http, (await tight.http.post('/prompt', { prompt: chatPrompt('big, streamed') })).body.prompt_id);
    assert.equal(streamed.status, 'failed');
    assert.match(streamed.execution_error.exception_message, /larger than the limit of 52428 bytes/);
    await fake.until(() => fake.seen[0]!.closed);

    fake.reset((req, res) => json(res, 429, { error: { message: 'no retries here' } }, { 'retry-after': '0' }));
    const once = await waitJob(tight.http, (await tight.http.post('/prompt', { prompt: chatPrompt('429 once') })).body.prompt_id);
    assert.equal(once.status, 'failed');
    assert.equal(fake.seen.length, 1);
  });

  test('the keys never reach the logs', async () => {
    const logs = await srv.http.get('/internal/logs');
    assert.equal(logs.status, 200);
    assertNoSecret(logs.text, 'the logs');
    assertNoSecret((await srv.http.get('/internal/logs/raw')).text, 'the raw logs');
  });
});

test('extractSecretInputs copies only what it changes', () => {
  // A registry stand-in with one secret input.
  const registry = { get: (t: string) => (t === 'S' ? { inputInfo: (n: string) => (n === 'key' ? { options: { secret: true } } : { options: {} }) } : undefined) } as any;
  const prompt = { a: { class_type: 'S', inputs: { key: 'k1', other: 'v' } }, b: { class_type: 'T', inputs: { key: 'k2' } }, c: { class_type: 'S', inputs: { key: ['a', 0] } } };
  const r = extractSecretInputs(registry, prompt);
  assert.deepEqual(r.secrets, { a: { key: 'k1' } });
  assert.equal((r.prompt.a as any).inputs.key, '[redacted]');
  assert.equal(prompt.a.inputs.key, 'k1', 'the request body is not changed');
  assert.equal(r.prompt.b, prompt.b);
  assert.deepEqual(r.linked, [{ nodeId: 'c', input: 'key', classType: 'S' }]);
});

test('system_stats argv hides the values of secret flags', () => {
  assert.deepEqual(
    redactArgv(['main.ts', '--port', '8188', '--openai-api-key', 'sk-1', '--api-key=abc', '--openai-base-url', 'http://127.0.0.1:1/v1', '--auth-token', '--x']),
    ['main.ts', '--port', '8188', '--openai-api-key', '[redacted]', '--api-key=[redacted]', '--openai-base-url', 'http://127.0.0.1:1/v1', '--auth-token', '--x'],
  );
});
