import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { derefOpenApi, forEachStorage } from '@svc/testkit';
import { startWorkflow, textPrompt, waitJob } from './helpers.ts';

/**
 * Fuzzes every operation of the service's own /openapi.json with hostile
 * path, query and body values, and POST /prompt with generated graphs over
 * the real node classes. Never a 5xx; every error in the reference's shapes;
 * the service keeps working afterwards.
 */
const RUNS = Number(process.env.WORKFLOW_FUZZ_RUNS ?? 300);

const hostile = [
  '',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '../../etc/passwd',
  '%2e%2e%2f',
  '..\\..\\windows',
  '/etc/passwd',
  '99999999999999999999999',
  '-1',
  '1e309',
  'NaN',
  'null',
  '{}',
  '[]',
  'x'.repeat(5000),
  '<script>',
  "' or 1=1 --",
  'completed,failed',
  'in_progress',
];
const str = fc.oneof(fc.string(), fc.string({ unit: 'binary', maxLength: 30 }), fc.constantFrom(...hostile));
const num = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(1e308, -1e308, 2 ** 64, Number.MAX_SAFE_INTEGER + 2, 0));
const leaf = fc.oneof(str, num, fc.boolean(), fc.constant(null));
const json = fc.oneof(fc.jsonValue({ maxDepth: 4 }), fc.dictionary(str, leaf, { maxKeys: 6 }), fc.array(leaf, { maxLength: 6 }));

/** Percent-encodes any JS string, lone surrogates included (as the WTF-8 bytes a raw client can send). */
function encodeAny(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (c >= 0xd800 && c <= 0xdfff) out += `%${(0xe0 | (c >> 12)).toString(16)}%${(0x80 | ((c >> 6) & 0x3f)).toString(16)}%${(0x80 | (c & 0x3f)).toString(16)}`.toUpperCase();
    else out += encodeURIComponent(ch);
  }
  return out;
}

function deep(n: number, open: string, close: string): string {
  return open.repeat(n) + close.repeat(n);
}

const rawBodies: Array<[string, Buffer | string]> = [
  ['deep arrays', deep(10_000, '[', ']')],
  ['deep objects', '{"prompt":' + '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_001)],
  ['invalid utf-8', Buffer.from([0x7b, 0x22, 0x70, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
  ['truncated', '{"prompt": {"1": '],
  ['huge number', '{"prompt": {}, "number": 1' + '0'.repeat(400) + '}'],
  ['nul escape', '{"prompt": {"\\u0000": {"class_type": "\\u0000", "inputs": {}}}}'],
  ['lone surrogate', '{"prompt": {"1": {"class_type": "PreviewAny", "inputs": {"source": "\\ud800"}}}, "client_id": "\\udc00"}'],
  ['array body', '[1,2,3]'],
  ['string body', '"prompt"'],
];

interface Op {
  method: string;
  path: string;
  query: string[];
  hasBody: boolean;
}

/** Routes whose 4xx answers are the reference's plain texts ("Directory not found", "File already exists", "401: Unauthorized"). */
const TEXT_ERRORS = /^\/(api\/)?(v2\/)?(userdata|settings)(\/|$|\?)/;

function isOkError(status: number, text: string, path = ''): boolean {
  if (status < 400 || status >= 500) return true;
  if (status === 404 || status === 405) return true;
  if (TEXT_ERRORS.test(path) && text.length > 0 && !text.startsWith('<')) return true;
  try {
    const b = JSON.parse(text);
    return b !== null && typeof b === 'object' && 'error' in b;
  } catch {
    return false;
  }
}

forEachStorage('workflow fuzz', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  let ops: Op[] = [];
  let objectInfo: Record<string, any> = {};
  before(async () => {
    srv = await startWorkflow(storage);
    // Shared schemas are $ref components: walk the operations with them in place.
    const spec = derefOpenApi((await srv.http.get('/openapi.json')).body);
    for (const [p, item] of Object.entries<any>(spec.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        ops.push({
          method: method.toUpperCase(),
          path: p,
          query: (op.parameters ?? []).filter((x: any) => x.in === 'query').map((x: any) => x.name),
          hasBody: !!op.requestBody,
        });
      }
    }
    objectInfo = (await srv.http.get('/object_info')).body;
  });
  after(async () => {
    await srv.close();
  });

  test('every operation of /openapi.json survives hostile values', async () => {
    assert.ok(ops.length >= 12, `expected the documented operations, got ${ops.length}`);
    const failures: string[] = [];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ops), fc.array(str, { minLength: 3, maxLength: 3 }), fc.dictionary(fc.constantFrom('status', 'limit', 'offset', 'max_items', 'sort_by', 'sort_order', 'workflow_id', 'clientId', 'x', 'filename', 'subfolder', 'type', 'preview', 'channel', 'dir', 'path', 'recurse', 'full_info', 'split', 'overwrite'), str), json, async (op, pathVals, query, body) => {
        let i = 0;
        const path = op.path.replace(/\{[^}]+\}/g, () => encodeAny(pathVals[i++] ?? 'x'));
        const qs = Object.entries(query).map(([k, v]) => `${encodeAny(k)}=${encodeAny(v)}`).join('&');
        const r = await fetch(`${srv.url}${path}${qs ? `?${qs}` : ''}`, {
          method: op.method,
          body: op.method === 'GET' || op.method === 'HEAD' ? undefined : JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
        });
        const text = await r.text();
        // A HEAD answer has no body to hold the error shape: only its status can be judged.
        const ok = op.method === 'HEAD' ? r.status < 500 : r.status < 500 && isOkError(r.status, text, path);
        if (!ok) failures.push(`${op.method} ${path}?${qs} ${JSON.stringify(body)?.slice(0, 200)} -> ${r.status} ${text.slice(0, 200)}`);
      }),
      { numRuns: RUNS },
    );
    assert.deepEqual(failures, []);
  });

  test('routes outside /openapi.json (static files, job aliases, blake3 names) survive hostile path values', async () => {
    const templates = [
      '/api/job/{a}',
      '/api/job/{a}/outputs',
      '/api/workflow_templates/{a}/{b}',
      '/extensions/{a}/{b}',
      '/templates/{a}',
      '/api/experiment/models/preview/{a}/0/{b}',
      '/api/view?filename=blake3%3A{a}',
      '/api/assets/hash/blake3%3A{a}',
    ];
    const failures: string[] = [];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...templates), fc.constantFrom('GET', 'HEAD'), str, str, async (template, method, a, b) => {
        const url = template.replace('{a}', encodeAny(a)).replace('{b}', encodeAny(b));
        const r = await fetch(`${srv.url}${url}`, { method });
        await r.arrayBuffer();
        if (r.status >= 500) failures.push(`${method} ${url} -> ${r.status}`);
      }),
      { numRuns: Math.max(50, Math.floor(RUNS / 2)) },
    );
    assert.deepEqual(failures, []);
  });

  test('raw hostile bodies on every body-taking operation: 400 with the reference shape', async () => {
    const failures: string[] = [];
    for (const op of ops.filter((o) => o.hasBody)) {
      for (const [name, raw] of rawBodies) {
        const r = await fetch(`${srv.url}${op.path.replace(/\{[^}]+\}/g, 'x')}`, { method: op.method, body: typeof raw === 'string' ? raw : new Uint8Array(raw), headers: { 'content-type': 'application/json' } });
        const text = await r.text();
        if (r.status >= 500 || !isOkError(r.status, text, op.path)) failures.push(`${op.method} ${op.path} ${name} -> ${r.status} ${text.slice(0, 200)}`);
      }
    }
    assert.deepEqual(failures, []);
    const big = await fetch(`${srv.url}/prompt`, { method: 'POST', body: Buffer.alloc(120 * 1024 * 1024, 0x20), headers: { 'content-type': 'application/json' } }).catch((e) => e);
    if (!(big instanceof Error)) assert.ok(big.status === 413 || big.status === 400, String(big.status));
  });

  test('generated graphs over the real node classes: validated or run, never a 5xx; the worker survives', async () => {
    const classes = Object.keys(objectInfo).filter((c) => !['LoadImage', 'SaveImage', 'PreviewImage', 'EmptyImage'].includes(c));
    const nodeArb = fc.record({
      class_type: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...classes) }, str),
      inputs: fc.dictionary(
        fc.oneof(fc.constantFrom('value', 'string', 'string_a', 'string_b', 'delimiter', 'source', 'expression', 'a', 'b', 'mode', 'find', 'replace', 'start', 'end'), str),
        fc.oneof(leaf, fc.tuple(fc.constantFrom('1', '2', '3', '4', 'x'), fc.oneof(fc.integer({ min: -2, max: 3 }), fc.double())), json),
        { maxKeys: 5 },
      ),
    });
    const graphArb = fc.dictionary(fc.constantFrom('1', '2', '3', '4', '5'), nodeArb, { minKeys: 1, maxKeys: 5 });
    const accepted: string[] = [];
    const failures: string[] = [];
    await fc.assert(
      fc.asyncProperty(graphArb, fc.boolean(), async (prompt, addOutput) => {
        if (addOutput) (prompt as any).out = { class_type: 'PreviewAny', inputs: { source: ['1', 0] } };
        const r = await srv.http.post('/prompt', { prompt });
        if (r.status >= 500 || (r.status === 400 && !r.body?.error?.type)) failures.push(`${JSON.stringify(prompt).slice(0, 300)} -> ${r.status} ${r.text.slice(0, 200)}`);
        if (r.status === 200) accepted.push(r.body.prompt_id);
      }),
      { numRuns: RUNS },
    );
    assert.deepEqual(failures, []);
    for (const id of accepted) {
      const job = await waitJob(srv.http, id);
      assert.ok(['completed', 'failed'].includes(job.status), JSON.stringify(job));
    }
    const r = await srv.http.post('/prompt', { prompt: textPrompt('still alive') });
    assert.equal((await waitJob(srv.http, r.body.prompt_id)).status, 'completed');
  });

  test('a 10,000-node chain validates and runs', async () => {
    const p: Record<string, any> = { '0': { class_type: 'PrimitiveString', inputs: { value: 'x' } } };
    for (let i = 1; i < 10_000; i++) p[String(i)] = { class_type: 'StringTrim', inputs: { string: [String(i - 1), 0], mode: 'Both' } };
    p.out = { class_type: 'PreviewAny', inputs: { source: ['9999', 0] } };
    const r = await srv.http.post('/prompt', { prompt: p });
    assert.equal(r.status, 200, r.text.slice(0, 300));
    const job = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(job.status, 'completed');
    assert.deepEqual(job.outputs.out, { text: ['x'] });
  });
});
