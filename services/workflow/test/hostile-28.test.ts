import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow, waitJob } from './helpers.ts';
import { bearer, isCloudError, signupUser, startCloud } from './cloud-helpers.ts';
import { passwordProblem } from '../src/identity/passwords.ts';
import { textProblem } from '../src/identity/store.ts';
import { validateRegistration } from '../src/identity/oauth-clients.ts';
import { openWorkflowStorage } from '../src/app.ts';
import { TEST_LIMITS } from './cloud-helpers.ts';
import { isFloatLiteral, markFloatLiterals, pyTypeOf } from '../src/nodes/json-floats.ts';

/**
 * What hostile and careless clients found (issue 28), local runtime: node ids
 * that are names of Object.prototype members, empty status filters, the bare
 * twin of every /api route, and the reference's cache headers on image paths.
 */

/** Node ids a plain object would answer with an inherited member. */
const IDS = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

/** A prompt as JSON text (an object literal with a `__proto__` key would set a prototype, not a key). */
const promptText = (nodes: string) => `{"prompt":{${nodes}}}`;
const post = (url: string, path: string, body: string) => fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

forEachStorage('issue 28: hostile clients, local runtime', (storage) => {
  describe('local', () => {
    let srv: Awaited<ReturnType<typeof startWorkflow>>;
    before(async () => {
      srv = await startWorkflow(storage, { enableTestNodes: true });
    });
    after(async () => {
      await srv.close();
    });

    test('node ids named after Object.prototype members validate, fail validation and run like any other id', async () => {
      for (const id of IDS) {
        const bad = await post(srv.url, '/api/prompt', promptText(`"${id}":{"class_type":"PrimitiveInt","inputs":{"value":"x"}},"o":{"class_type":"PreviewAny","inputs":{"source":["${id}",0]}}`));
        assert.equal(bad.status, 400, id);
        const body = JSON.parse(await bad.text());
        assert.equal(body.error.type, 'prompt_outputs_failed_validation', id);
        assert.ok(Object.hasOwn(body.node_errors, id), `${id}: ${JSON.stringify(body.node_errors)}`);
        assert.deepEqual(body.node_errors[id].dependent_outputs, ['o']);
        assert.equal(body.node_errors[id].errors[0].type, 'invalid_input_type');

        // A link to a node that is not in the prompt, named like an inherited member.
        const dangling = await post(srv.url, '/api/prompt', promptText(`"o":{"class_type":"PreviewAny","inputs":{"source":["${id}",0]}}`));
        assert.equal(dangling.status, 400, id);
        const d = JSON.parse(await dangling.text());
        assert.equal(d.node_errors.o.errors[0].type, 'exception_during_validation', `${id}: ${JSON.stringify(d)}`);

        const ok = await post(srv.url, '/api/prompt', promptText(`"${id}":{"class_type":"PrimitiveString","inputs":{"value":"v-${id}"}},"out":{"class_type":"PreviewAny","inputs":{"source":["${id}",0]}}`));
        assert.equal(ok.status, 200, id);
        const job = await waitJob(srv.http, ((await ok.json()) as { prompt_id: string }).prompt_id);
        assert.ok(Object.hasOwn(job.workflow.prompt, id), id);
        // An output node whose id is such a name keeps its outputs too.
        const own = await post(srv.url, '/api/prompt', promptText(`"${id}":{"class_type":"PreviewAny","inputs":{"source":"own-${id}"}}`));
        assert.equal(own.status, 200, id);
        const ownJob = await waitJob(srv.http, ((await own.json()) as { prompt_id: string }).prompt_id);
        assert.equal(ownJob.status, 'completed', `${id}: ${JSON.stringify(ownJob.execution_error)}`);
        assert.deepEqual(ownJob.outputs[id], { text: [`own-${id}`] }, id);
        assert.equal(ownJob.outputs_count, 1, id);
      }
    });

    test('JSON numbers: the literal 5 is an int and 5.0 a float, through parsing and validation (the reference\'s test_validation_error_literal)', async () => {
      const cases: Array<[string, boolean]> = [['5', false], ['5.0', true], ['5e0', true], ['-2.00', true], ['1E2', true], ['0.5', true], ['"dog"', false], ['{"a": 5.0}', false]];
      for (const [literal, ok] of cases) {
        const body = promptText(`"v":{"class_type":"TestCustomValidation1","inputs":{"input1":${literal},"input2":3.0}},"o":{"class_type":"PreviewImage","inputs":{"images":["v",0]}}`);
        const r = await post(srv.url, '/api/prompt', body);
        const b = JSON.parse(await r.text());
        if (ok) {
          assert.equal(r.status, 200, `${literal}: ${JSON.stringify(b)}`);
          continue;
        }
        assert.equal(r.status, 400, literal);
        const e = b.node_errors.v.errors[0];
        assert.equal(e.type, 'custom_validation_failed', literal);
        if (literal === '5') assert.equal(e.details, "input1 - Invalid type of input1: <class 'int'>");
      }
      // TestCustomValidation2 checks the same; a FLOAT input converts an int (Python's float(5)), an INT input a float.
      const v2 = await post(srv.url, '/api/prompt', promptText(`"v":{"class_type":"TestCustomValidation2","inputs":{"input1":5,"input2":3.0}},"o":{"class_type":"PreviewImage","inputs":{"images":["v",0]}}`));
      assert.equal(v2.status, 400);
      const v4 = await post(srv.url, '/api/prompt', promptText(`"v":{"class_type":"TestCustomValidation4","inputs":{"input1":5,"input2":3}},"o":{"class_type":"PreviewImage","inputs":{"images":["v",0]}}`));
      assert.equal(v4.status, 200, await v4.clone().text());
    });

    test('a secret input on a node named __proto__ is redacted in the stored prompt and pollutes no object', async () => {
      const r = await post(
        srv.url,
        '/api/prompt',
        promptText(`"__proto__":{"class_type":"OpenAICompatibleChat","inputs":{"prompt":"hi","api_key":"sk-test-key-0123456789","model":"m","system_prompt":"","temperature":1,"max_tokens":0,"seed":0,"base_url":""}},"out":{"class_type":"PreviewAny","inputs":{"source":["__proto__",0]}}`),
      );
      assert.equal(r.status, 200, await r.clone().text());
      const job = await waitJob(srv.http, ((await r.json()) as { prompt_id: string }).prompt_id);
      assert.equal(({} as Record<string, unknown>).api_key, undefined);
      assert.ok(Object.hasOwn(job.workflow.prompt, '__proto__'));
      assert.equal(job.workflow.prompt.__proto__.inputs.api_key, '[redacted]');
      assert.ok(!JSON.stringify(job).includes('sk-test-key-0123456789'));
    });

    test('status filters naming no status (?status=, and ,,,) match nothing, on both storages', async () => {
      await post(srv.url, '/api/prompt', promptText(`"o":{"class_type":"PreviewAny","inputs":{"source":"s"}}`));
      for (const q of [',', ',,,', ' , ']) {
        for (const p of ['/api/jobs', '/jobs']) {
          const r = await srv.http.get(`${p}?status=${encodeURIComponent(q)}`);
          assert.equal(r.status, 200, `${p} ${q}: ${r.text}`);
          assert.deepEqual(r.body.jobs, []);
          assert.equal(r.body.pagination.total, 0);
        }
      }
    });

    test('every /api route answers at its bare path too: /assets as /api/assets', async () => {
      for (const p of ['/assets', '/assets/tags/refine', '/tags']) {
        const api = await srv.http.get(`/api${p}`);
        const bare = await srv.http.get(p);
        assert.equal(api.status, 200, p);
        assert.equal(bare.status, 200, `${p}: ${bare.text}`);
        assert.deepEqual(Object.keys(bare.body).sort(), Object.keys(api.body).sort());
      }
      const id = '00000000-0000-4000-8000-000000000000';
      assert.equal((await srv.http.get(`/assets/${id}`)).status, (await srv.http.get(`/api/assets/${id}`)).status);
      assert.equal((await fetch(`${srv.url}/assets/hash/blake3:${'0'.repeat(64)}`, { method: 'HEAD' })).status, 404);
    });

    test('a 404 for an image path is cached an hour (public without credentials), as the reference', async () => {
      for (const p of ['/extensions/nopack/missing.png', '/templates/missing.webp', '/api/view?filename=missing.png&type=output', '/view?filename=missing.jpg']) {
        const r = await fetch(srv.url + p);
        assert.equal(r.status, 404, p);
        assert.equal(r.headers.get('cache-control'), 'public, max-age=3600', p);
        await r.arrayBuffer();
      }
      const withKey = await fetch(srv.url + '/extensions/nopack/missing.png', { headers: { authorization: 'Bearer x' } });
      assert.equal(withKey.headers.get('cache-control'), 'private, max-age=3600');
      // Not an image path: nothing is added.
      const other = await fetch(srv.url + '/api/view?filename=missing.txt');
      assert.equal(other.status, 404);
      assert.equal(other.headers.get('cache-control'), null);
    });
  });
});

/** Every route of the app with its methods, read from Fastify's route tree (bare twins and hidden routes included). */
export function allRoutes(app: { printRoutes(o: { commonPrefix: boolean }): string }): Array<{ path: string; methods: string[] }> {
  const out: Array<{ path: string; methods: string[] }> = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    const full = (stack[depth - 1] ?? '') + m[2]!;
    stack[depth] = full;
    if (m[3]) out.push({ path: full, methods: m[3].split(', ') });
  }
  return out;
}

const MiB = 1024 * 1024;

/**
 * Streams up to `total` bytes as one chunked request body over a plain socket
 * (nothing held in memory beyond one 64 KiB chunk; the answer is read while
 * the body goes out, so a server that answers and closes early is still
 * heard) and stops as soon as the answer has come: its status and body
 * start, and how much of the body went out.
 */
export function streamHugeBody(base: string, method: string, path: string, total = 100 * MiB, headers: Record<string, string> = {}): Promise<{ status: number | string; sent: number; body: string }> {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  chunk.write('{"x":"', 0);
  // With a declared Content-Length the bytes go out as they are; else as chunks of a chunked body.
  const declared = Object.keys(headers).some((k) => k.toLowerCase() === 'content-length');
  const frame = declared ? chunk : Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
  const u = new URL(base);
  return new Promise((resolve) => {
    let sent = 0;
    let received = Buffer.alloc(0);
    let status: number | undefined;
    let done = false;
    const sock = net.connect(Number(u.port), u.hostname);
    const finish = (why?: string) => {
      if (done) return;
      done = true;
      sock.destroy();
      const text = received.toString('utf8');
      const at = text.indexOf('\r\n\r\n');
      resolve({ status: status ?? why ?? 'closed', sent, body: at < 0 ? '' : dechunk(text.slice(at + 4), /transfer-encoding: chunked/i.test(text.slice(0, at))).slice(0, 500) });
    };
    sock.on('data', (d: Buffer) => {
      if (received.length < 64 * 1024) received = Buffer.concat([received, d]);
      const m = /^HTTP\/1\.1 (\d{3})/.exec(received.toString('latin1', 0, 16));
      if (m) status = Number(m[1]);
    });
    sock.on('end', () => finish());
    sock.on('close', () => finish());
    sock.on('error', (err: NodeJS.ErrnoException) => {
      // A write into a socket the server has closed: what it answered before is already read.
      if (status === undefined) setTimeout(() => finish(err.code), 50);
    });
    const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    sock.write(`${method} ${path} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\n${declared ? '' : 'Transfer-Encoding: chunked\r\n'}Connection: close\r\n${extra}\r\n`);
    void (async () => {
      while (!done && status === undefined && sent < total && !sock.destroyed) {
        sent += chunk.length;
        if (!sock.write(frame)) await new Promise<void>((r) => { const go = () => r(); sock.once('drain', go); sock.once('data', go); sock.once('close', go); });
      }
      if (!done && status === undefined && !sock.destroyed && !declared) sock.write('0\r\n\r\n');
    })();
  });
}

function dechunk(body: string, chunked: boolean): string {
  if (!chunked) return body;
  let out = '';
  let rest = body;
  for (;;) {
    const nl = rest.indexOf('\r\n');
    if (nl < 0) break;
    const n = parseInt(rest.slice(0, nl), 16);
    if (!(n > 0)) break;
    out += rest.slice(nl + 2, nl + 2 + n);
    rest = rest.slice(nl + 2 + n + 2);
  }
  return out;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const SOME_ID = '00000000-0000-4000-8000-000000000000';

/** Every (method, path) of the app that takes a body, parameters filled with a well-formed id. */
function bodyRoutes(app: unknown): Array<[string, string]> {
  return allRoutes(app as never).flatMap((r) =>
    r.methods.filter((m) => BODY_METHODS.has(m)).map((m): [string, string] => [m, r.path.replace(/:[^/]+/g, SOME_ID).replace(/\*/g, 'x')]),
  );
}

/** Sends 100 MB to every body route without credentials: each is answered (never 5xx), none reads more than its small limit, the server lives. */
async function hugeBodiesEverywhere(url: string, app: unknown, maxRead: number): Promise<Map<string, number | string>> {
  const seen = new Map<string, number | string>();
  const rss = process.memoryUsage().rss;
  const routes = bodyRoutes(app);
  assert.ok(routes.length > 40, `only ${routes.length} routes`);
  for (const [m, p] of routes) {
    const r = await streamHugeBody(url, m, p);
    seen.set(`${m} ${p}`, typeof r.status === 'number' ? r.status : 'reset');
    // The server answers, or, when its answer raced the body still coming in (client and server share this
    // process's event loop), the connection it closed after the answer is reset: refused either way, never read whole.
    assert.ok(typeof r.status === 'number' || ['closed', 'ECONNRESET', 'EPIPE'].includes(r.status), `${m} ${p}: ${r.status}`);
    if (typeof r.status === 'number') assert.ok(r.status < 500, `${m} ${p}: ${r.status} ${r.body}`);
    assert.ok(r.sent < maxRead, `${m} ${p}: ${r.sent} bytes went out before the answer (${r.status})`);
  }
  assert.equal((await fetch(url + '/health')).status, 200);
  // Nothing like 100 MB per route (or in all) was kept.
  assert.ok(process.memoryUsage().rss - rss < 400 * MiB, `RSS grew by ${Math.round((process.memoryUsage().rss - rss) / MiB)} MiB`);
  return seen;
}

forEachStorage('issue 28: 100 MB bodies without credentials', (storage) => {
  test('local runtime: every route answers a 100 MB body with 413 (or its own refusal), reading only up to its limit', async () => {
    const srv = await startWorkflow(storage, { maxUploadSize: '2' });
    try {
      const seen = await hugeBodiesEverywhere(srv.url, srv.app, 24 * MiB);
      for (const k of ['POST /api/prompt', 'POST /prompt', 'POST /api/settings', 'POST /api/queue', 'POST /api/upload/image', 'POST /api/assets', 'POST /assets', 'POST /api/userdata/' + SOME_ID]) assert.ok([413, 'reset'].includes(seen.get(k)!), `${k}: ${seen.get(k)}`);
    } finally {
      await srv.close();
    }
  });

  test('hosted runtime (default --max-upload-size): public forms are read up to 64 KiB, everything else refused before its body', async () => {
    const srv = await startCloud(storage);
    try {
      const seen = await hugeBodiesEverywhere(srv.url, srv.app, 24 * MiB);
      for (const k of ['POST /api/auth/signup', 'POST /auth/signup', 'POST /api/auth/login', 'POST /api/auth/token', 'POST /oauth/register', 'POST /oauth/token']) assert.ok([413, 'reset'].includes(seen.get(k)!), `${k}: ${seen.get(k)}`);
      for (const k of ['POST /api/prompt', 'POST /api/workflows', 'POST /api/userdata/' + SOME_ID, 'POST /api/secrets']) assert.equal(seen.get(k), 401, k);
      assert.equal(seen.get(`PUT /api/hub/assets/upload/${SOME_ID}`), 404);
      // The requests of the finding as a client like curl sends them (length declared): 413 before a byte is read,
      // in the service's error shapes.
      for (const path of ['/oauth/register', '/api/auth/signup', '/api/auth/login', '/oauth/token']) {
        const r = await streamHugeBody(srv.url, 'POST', path, 100 * MiB, { 'content-length': String(100 * MiB) });
        assert.equal(r.status, 413, `${path}: ${r.status}`);
        assert.ok(r.sent < 24 * MiB);
        const body = JSON.parse(r.body);
        assert.ok(isCloudError(body, 'payload_too_large') || body.error === 'invalid_request', `${path}: ${r.body}`);
      }
      // The service still signs people up.
      await signupUser(srv.url, 'after-huge');
    } finally {
      await srv.close();
    }
  });
});

test('length checks of huge strings allocate nothing (no spread of a 100-million-character string)', () => {
  // A flat string (repeat() would build a rope that the first scan flattens, allocating 100 MB then).
  const huge = Buffer.alloc(100 * MiB, 0x61).toString('latin1');
  const before = process.memoryUsage();
  const t0 = performance.now();
  assert.match(passwordProblem(huge)!, /at most/);
  assert.match(textProblem(huge, 'display_name', 100)!, /at most 100 characters/);
  assert.throws(() => validateRegistration({ application_type: 'native', redirect_uris: ['http://127.0.0.1/cb'], client_name: huge }, []), /at most 100 characters/);
  const after = process.memoryUsage();
  assert.ok(after.heapUsed - before.heapUsed < 64 * MiB, `heap grew by ${Math.round((after.heapUsed - before.heapUsed) / MiB)} MiB`);
  assert.ok(performance.now() - t0 < 2000);
  // Code points, not UTF-16 units, as the reference's len(): 100 emoji are 100 characters.
  assert.equal(textProblem('\u{1F600}'.repeat(100), 'n', 100), null);
  assert.match(textProblem('\u{1F600}'.repeat(101), 'n', 100)!, /at most 100/);
  assert.match(passwordProblem('\u{1F600}'.repeat(7))!, /at least/);
});

forEachStorage('issue 28: hostile clients, hosted runtime', (storage) => {
  describe('cloud', () => {
    let srv: Awaited<ReturnType<typeof startCloud>>;
    before(async () => {
      srv = await startCloud(storage);
    });
    after(async () => {
      await srv.close();
    });

    test('?status=, and ,,, on /api/jobs, /api/history_v2 and /api/tasks match nothing (PostgreSQL answered 500)', async () => {
      const u = await signupUser(srv.url, 'status');
      for (const q of [',', ',,,']) {
        for (const p of ['/api/jobs', '/api/history_v2', '/api/tasks', '/jobs', '/history_v2', '/tasks']) {
          const r = await u.http.get(`${p}?status=${encodeURIComponent(q)}`);
          assert.equal(r.status, 200, `${p} ${q}: ${r.text}`);
          const list = r.body.jobs ?? r.body.items ?? r.body.tasks;
          assert.deepEqual(list, [], `${p} ${q}`);
        }
      }
    });

    test('an OAuth authorization request is bound to the browser that started it: a leaked id cannot be resumed or approved elsewhere', async () => {
      const victim = await signupUser(srv.url, 'victim');
      const attacker = await signupUser(srv.url, 'attacker');
      const anon = bearer(srv.url, '');
      const reg = await fetch(srv.url + '/oauth/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:7/cb'], application_type: 'native', client_name: 'Victim CLI' }) });
      const clientId = ((await reg.json()) as { client_id: string }).client_id;
      const q = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: 'http://127.0.0.1:7/cb', state: 's', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' });
      // The victim's browser, not signed in: to the login page, with a cookie naming this request.
      const start = await fetch(`${srv.url}/oauth/authorize?${q}`, { redirect: 'manual' });
      assert.equal(start.status, 302);
      const rid = new URL(start.headers.get('location')!, srv.url).searchParams.get('oauth_request_id')!;
      const cookie = start.headers.get('set-cookie')!;
      assert.match(cookie, /HttpOnly/);
      assert.match(cookie, /SameSite=Lax/);
      const browser = cookie.split(';')[0]!;
      // The attacker holds the id: no resume (no CSRF token), no approval.
      let r = await attacker.http.get(`/oauth/authorize?oauth_request_id=${rid}`);
      assert.equal(r.status, 400);
      assert.ok(isCloudError(r.body, 'invalid_request'));
      r = await attacker.http.get(`/oauth/authorize?oauth_request_id=${rid}`, { cookie: 'wf_oauth_' + rid + '=guess' });
      assert.equal(r.status, 400);
      // The victim resumes in their browser and gets the challenge.
      const ch = await victim.http.get(`/oauth/authorize?oauth_request_id=${rid}`, { cookie: browser });
      assert.equal(ch.status, 200, ch.text);
      // Even with the victim's CSRF token (leaked too), the attacker cannot approve it into their workspace.
      r = await attacker.http.post('/oauth/authorize', { oauth_request_id: rid, csrf_token: ch.body.csrf_token, decision: 'allow', workspace_id: attacker.workspaceId });
      assert.equal(r.status, 400);
      assert.ok(isCloudError(r.body, 'invalid_request'));
      // Nor resume it once the victim holds it, even with the browser cookie.
      r = await attacker.http.get(`/oauth/authorize?oauth_request_id=${rid}`, { cookie: browser });
      assert.equal(r.status, 400);
      // The victim's approval still works: the request was not used up.
      r = await victim.http.post('/oauth/authorize', { oauth_request_id: rid, csrf_token: ch.body.csrf_token, decision: 'allow', workspace_id: victim.workspaceId });
      assert.equal(r.status, 200, r.text);
      assert.ok(new URL(r.body.redirect_url).searchParams.get('code'));
      void anon;
    });

    test('OAuth metadata is built from configured or listening origins, never from the Host header', async () => {
      const port = new URL(srv.url).port;
      for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource']) {
        for (const host of ['evil.example', `evil.example:${port}`, 'localhost.evil.example']) {
          const r = await rawGet(srv.url, path, { host });
          assert.equal(r.status, 200);
          const doc = JSON.parse(r.body);
          const iss = doc.issuer ?? doc.resource;
          assert.equal(iss, `http://127.0.0.1:${port}`, `${path} Host: ${host}`);
          assert.ok(!r.body.includes('evil'), r.body);
          assert.match(String(r.headers.vary), /Host/);
        }
        // The loopback names the server listens under are its own.
        const local = JSON.parse((await rawGet(srv.url, path, { host: `localhost:${port}` })).body);
        assert.equal(local.issuer ?? local.resource, `http://localhost:${port}`);
      }
      // The 401's resource_metadata does not echo a forged Host either.
      const r = await rawGet(srv.url, '/api/jobs', { host: 'evil.example' });
      assert.equal(r.status, 401);
      assert.ok(!String(r.headers['www-authenticate']).includes('evil'));
    });

    test('with --public-url the documents name only the configured origins', async () => {
      const pub = await startCloud(storage, { publicUrl: 'https://flows.example.com,https://alt.example.com' });
      try {
        for (const [host, want] of [['evil.example', 'https://flows.example.com'], ['alt.example.com', 'https://alt.example.com'], ['flows.example.com', 'https://flows.example.com']]) {
          const doc = JSON.parse((await rawGet(pub.url, '/.well-known/oauth-authorization-server', { host: host! })).body);
          assert.equal(doc.issuer, want, host);
          assert.equal(doc.token_endpoint, `${want}/oauth/token`);
        }
      } finally {
        await pub.close();
      }
    });

    test('a reserved client name with invisible characters, accents or look-alike forms is refused', async () => {
      for (const name of ['Cl\u200baude', 'Chat\u200dGPT', 'C\u00adursor', '\ufeffComfy', 'Cl\u00e1ude', 'Ｃｌａｕｄｅ', 'Git\u2060Hub Copilot', 'Claude\ufe0f']) {
        const r = await fetch(srv.url + '/oauth/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:7/cb'], application_type: 'native', client_name: name }) });
        assert.equal(r.status, 400, JSON.stringify(name));
        const b = (await r.json()) as { error: string; error_description: string };
        assert.equal(b.error, 'invalid_client_metadata');
        assert.match(b.error_description, /reserved/);
      }
      const ok = await fetch(srv.url + '/oauth/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:7/cb'], application_type: 'native', client_name: 'My\u00e9 Tool' }) });
      assert.equal(ok.status, 201);
    });

    test('output file numbers are per workspace: a save tells nothing of another workspace\'s files, and each sees its own', async () => {
      const a = await signupUser(srv.url, 'out-a');
      const b = await signupUser(srv.url, 'out-b');
      const save = async (u: typeof a, color: number) => {
        const r = await u.http.post('/api/prompt', { prompt: { i: { class_type: 'EmptyImage', inputs: { width: 8, height: 8, batch_size: 1, color } }, s: { class_type: 'SaveImage', inputs: { images: ['i', 0], filename_prefix: 'secret' } } } });
        assert.equal(r.status, 200, r.text);
        const job = await waitJob(u.http, r.body.prompt_id);
        assert.equal(job.status, 'completed', JSON.stringify(job.execution_error));
        return job.outputs.s.images[0] as { filename: string; subfolder: string; type: string };
      };
      const fa = await save(a, 0xff0000);
      const fb = await save(b, 0x0000ff);
      // B's first 'secret' image is number 1 whatever A saved under that prefix.
      assert.equal(fa.filename, 'secret_00001_.png');
      assert.equal(fb.filename, 'secret_00001_.png');
      const view = async (u: typeof a, f: typeof fa) => {
        const r = await fetch(`${srv.url}/api/view?filename=${f.filename}&type=output&subfolder=`, { headers: { authorization: `Bearer ${u.token}` } });
        assert.equal(r.status, 200);
        return Buffer.from(await r.arrayBuffer());
      };
      const [va, vb] = [await view(a, fa), await view(b, fb)];
      assert.ok(!va.equals(vb), 'each workspace sees its own file under the shared name');
      assert.equal((await save(a, 0x00ff00)).filename, 'secret_00002_.png');
      // An output saved before workspaces had their own folders (in the shared one) is still served to its workspace only.
      const legacy = await save(a, 0x123456);
      fs.renameSync(path.join(srv.cfg.dataDir, 'workspaces', a.workspaceId, 'output', legacy.filename), path.join(srv.cfg.dataDir, 'output', legacy.filename));
      assert.equal((await view(a, legacy)).length > 0, true);
      const other = await fetch(`${srv.url}/api/view?filename=${legacy.filename}&type=output`, { headers: { authorization: `Bearer ${b.token}` } });
      assert.equal(other.status, 404);
    });

    test('an API key cannot mint API keys (whatever its creator\'s role); a signed-in member can', async () => {
      const u = await signupUser(srv.url, 'keys');
      const made = await u.http.post('/api/workspace/api-keys', { name: 'first' });
      assert.equal(made.status, 201);
      const viaKey = bearer(srv.url, made.body.key);
      const r = await viaKey.post('/api/workspace/api-keys', { name: 'second' });
      assert.equal(r.status, 403);
      assert.ok(isCloudError(r.body, 'forbidden'));
      assert.equal((await client2(srv.url, made.body.key).post('/api/workspace/api-keys', { name: 'third' })).status, 403);
      // The key still works for the API, and can list (its creator's keys).
      assert.equal((await viaKey.get('/api/jobs')).status, 200);
      assert.equal((await u.http.get('/api/workspace/api-keys')).body.length, 1);
    });
  });
});

/** A GET with headers fetch() will not send (Host). */
function rawGet(base: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path, method: 'GET', headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(parts).toString('utf8'), headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A client sending an API key as X-API-Key. */
function client2(base: string, key: string) {
  return { post: (p: string, b: unknown) => fetch(base + p, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(b) }) };
}

test('float literals are found wherever they are: nested, in arrays, under escaped or prototype-named keys, last duplicate wins', () => {
  const text = '{"a":5.0,"b":5,"c":[1,2.0,3e0],"d\\u0022q":{"__proto__":7.0,"constructor":8},"e":5.0,"e":5,"f":5,"f":6.0,"g":"5.0","h":0.25,"i":-0.0}';
  const v = JSON.parse(text);
  markFloatLiterals(v, text);
  assert.equal(pyTypeOf(v, 'a'), 'float');
  assert.equal(pyTypeOf(v, 'b'), 'int');
  assert.deepEqual([0, 1, 2].map((i) => isFloatLiteral(v.c, i)), [false, true, true]);
  const d = v['d"q'];
  assert.equal(pyTypeOf(d, '__proto__'), 'float');
  assert.equal(pyTypeOf(d, 'constructor'), 'int');
  assert.equal(pyTypeOf(v, 'e'), 'int');
  assert.equal(pyTypeOf(v, 'f'), 'float');
  assert.equal(pyTypeOf(v, 'g'), 'str');
  assert.equal(pyTypeOf(v, 'h'), 'float');
  assert.equal(pyTypeOf(v, 'i'), 'float');
  assert.equal(pyTypeOf(v, 'missing'), 'NoneType');
  assert.equal(({} as Record<string, unknown>).constructor, Object);
});

test('float literals that round to an integer are floats; text with only non-integral floats needs no scan and loses nothing', () => {
  const text = '{"a":2.9999999999999999,"b":4503599627370496.5,"c":1.000000000000001,"d":12345678901234567,"e":1.5e1,"f":0.5}';
  const v = JSON.parse(text);
  markFloatLiterals(v, text);
  assert.deepEqual(['a', 'b', 'c', 'd', 'e', 'f'].map((k) => pyTypeOf(v, k)), ['float', 'float', 'float', 'int', 'float', 'float']);
  const plain = '{"scale_by":1.5,"width":1024,"denoise":0.25,"seed":156680208700286,"label":"v1.5"}';
  const w = JSON.parse(plain);
  markFloatLiterals(w, plain);
  assert.deepEqual(['scale_by', 'width', 'denoise', 'seed', 'label'].map((k) => pyTypeOf(w, k)), ['float', 'int', 'float', 'int', 'str']);
});

forEachStorage('issue 28: a job a crash ended is charged', (storage) => {
  test('a prompt left running by a server that stopped is charged at the next start, for what it ran until the last sign of the old process', async () => {
    // The process-local queue (on PostgreSQL the shared queue settles a dead worker's prompts: test/scale-out.test.ts).
    const flags = { runtime: 'cloud', authRateLimits: TEST_LIMITS, sharedQueue: 'false' };
    const first = await startWorkflow(storage, flags);
    let second: Awaited<ReturnType<typeof startWorkflow>> | undefined;
    try {
      const u = await signupUser(first.url, 'crash');
      const q = await u.http.post('/api/prompt', { prompt: { o: { class_type: 'PreviewAny', inputs: { source: 'x' } } } });
      assert.equal(q.status, 200, q.text);
      const id = q.body.prompt_id as string;
      await waitJob(u.http, id);
      await first.app.close();
      // As a crash leaves it: running, never charged; it started 67 s ago, and the old process was last seen 60 s ago.
      const st = await openWorkflowStorage(first.cfg);
      const now = Date.now();
      await st.db.updateTable('prompts').set({ status: 'in_progress', start_time: now - 67_000, create_time: now - 68_000, end_time: null }).where('id', '=', id).execute();
      await st.db.insertInto('prompts').values(await otherPrompt(st.db, id, now - 60_000)).execute();
      await st.db.deleteFrom('billing_events').where('job_id', '=', id).execute();
      await st.close();
      second = await startWorkflow(storage, flags, { overrides: { dataDir: first.cfg.dataDir, pgSchema: first.cfg.pgSchema } });
      const http = bearer(second.url, u.token);
      const job = await waitJob(http, id);
      assert.equal(job.status, 'failed');
      assert.equal(job.execution_error.exception_type, 'ServerRestart');
      // The charge is written in the background after the start: polled, up to a bound.
      let charges: any[] = [];
      for (let i = 0; i < 400 && charges.length === 0; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 5));
        charges = (await http.get('/api/billing/events?type=charge&limit=100')).body.events.filter((e: any) => e.job_id === id);
      }
      assert.equal(charges.length, 1);
      // 7 s at 1 credit per second, not the 67 s until the restart.
      assert.equal(Math.abs(charges[0].amount), 7, JSON.stringify(charges[0]));
    } finally {
      if (second) await second.close();
      else await first.close();
    }
  });
});

/** A finished prompt of another owner, stored at `at`: the old process's last sign of life. */
async function otherPrompt(db: any, likeId: string, at: number): Promise<Record<string, unknown>> {
  const row = await db.selectFrom('prompts').selectAll().where('id', '=', likeId).executeTakeFirstOrThrow();
  return { ...row, id: '11111111-1111-4111-8111-111111111111', owner: 'someone-else', status: 'completed', number: Number(row.number) + 1000, create_time: at - 1, start_time: at - 1, end_time: at };
}
