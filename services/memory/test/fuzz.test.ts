import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { derefOpenApi, forEachStorage } from '@svc/testkit';
import { fixture, ok, useServer } from './helpers.ts';

/**
 * Fuzzes every operation of the service's own /openapi.json: valid-ish and
 * hostile path, query and body values generated from the schemas. The
 * service must never answer 5xx, and every error must have FastAPI's shape.
 */
const RUNS = Number(process.env.MEMORY_FUZZ_RUNS ?? 400);

interface Operation {
  method: string;
  path: string;
  params: Array<{ name: string; in: 'path' | 'query'; required: boolean; schema: any }>;
  body?: any;
}

const hostileStrings = fc.constantFrom(
  '',
  ' ',
  '..',
  '../../etc/passwd',
  '%00',
  '\u0000',
  '\ud800',
  'null',
  'true',
  '[]',
  '{}',
  '{"a":',
  '{{ 7*7 }}',
  "' or 1=1 --",
  '<script>',
  'x'.repeat(600),
  '1e309',
  '-1',
  '0',
  '99999999999999999999999',
  'urn:uuid:00000000-0000-0000-0000-000000000000',
  'honcho',
  'get_or_create',
  'sessions',
);
const anyString = fc.oneof(fc.string(), fc.string({ unit: 'binary', maxLength: 20 }), hostileStrings);
/**
 * JSON text whose keys or string values, once parsed, hold what PostgreSQL's
 * jsonb refuses: escaped NULs and lone surrogates (JSON.stringify escapes them,
 * so the query string itself is plain ASCII), at any depth.
 */
const unstorable = fc.constantFrom('\u0000', 'a\u0000b', '\ud800', '\udc00', 'x\udbff', '\udfff\ud800');
const unstorableJson = fc
  .oneof(
    fc.tuple(unstorable, fc.jsonValue({ maxDepth: 1 })).map(([k, v]) => ({ [k]: v })),
    fc.tuple(fc.string({ maxLength: 5 }), unstorable).map(([k, v]) => ({ [k]: v })),
    fc.tuple(fc.string({ maxLength: 5 }), unstorable).map(([k, v]) => ({ [k]: { n: [1, v] } })),
    fc.tuple(unstorable, fc.string({ maxLength: 5 })).map(([k, v]) => ({ a: { [k]: v } })),
    unstorable.map((v) => [v]),
    unstorable,
  )
  .map((v) => JSON.stringify(v));
const jsonish = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant(undefined));

function valueFor(schema: any, ids: Record<string, string[]>, name: string): fc.Arbitrary<unknown> {
  if (!schema) return jsonish;
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s: any) => valueFor(s, ids, name)), jsonish);
  const known = ids[name];
  switch (schema.type) {
    case 'string':
      if (schema.format === 'uuid') return fc.oneof({ weight: 4, arbitrary: known?.length ? fc.constantFrom(...known) : fc.uuid() }, fc.uuid(), anyString);
      if (name === 'filter') return fc.oneof(fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)), unstorableJson, anyString);
      if (known?.length) return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...known) }, anyString);
      return fc.oneof({ weight: 3, arbitrary: fc.string({ minLength: 1, maxLength: 30 }) }, anyString);
    case 'integer':
    case 'number':
      return fc.oneof(fc.integer({ min: -5, max: 120 }), fc.integer(), fc.double(), anyString);
    case 'boolean':
      return fc.oneof(fc.boolean(), fc.constantFrom('yes', 'off', '1', 0, 1, 2, 'maybe', null));
    case 'object':
      if (schema.properties) return bodyFor(schema, ids);
      return fc.oneof({ weight: 3, arbitrary: fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }) }, jsonish);
    case 'null':
      return fc.constant(null);
    default:
      return jsonish;
  }
}

function bodyFor(schema: any, ids: Record<string, string[]>): fc.Arbitrary<unknown> {
  const props = Object.entries<any>(schema.properties ?? {});
  const record: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [k, s] of props) record[k] = valueFor(s, ids, k);
  const objects = fc.record(record, { requiredKeys: [] }).map((o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)));
  return fc.oneof({ weight: 6, arbitrary: objects }, fc.jsonValue({ maxDepth: 3 }), fc.constant(undefined));
}

/** Percent-encodes a path segment; a lone surrogate becomes its (invalid) CESU-8 bytes, to test the server's decoding. */
function encodeSegment(v: string): string {
  try {
    return encodeURIComponent(v);
  } catch {
    return [...v]
      .map((ch) => {
        const c = ch.charCodeAt(0);
        if (ch.length === 1 && c >= 0xd800 && c <= 0xdfff) return `%${(0xe0 | (c >> 12)).toString(16)}%${(0x80 | ((c >> 6) & 0x3f)).toString(16)}%${(0x80 | (c & 0x3f)).toString(16)}`.toUpperCase();
        return encodeURIComponent(ch);
      })
      .join('');
  }
}

function asQueryValue(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function assertFastApiError(status: number, body: any, text: string, label: string) {
  assert.ok(status < 500, `${label} → ${status}: ${text}`);
  if (status < 400) return;
  assert.ok(body && typeof body === 'object' && 'detail' in body, `${label} → ${status} without detail: ${text}`);
  // The v3 API's own 422s (ValidationException, FilterError) carry a string detail, as the reference's.
  if (status === 422 && label.includes('/v3/') && typeof body.detail === 'string') return;
  if (status === 422) {
    assert.ok(Array.isArray(body.detail) && body.detail.length > 0, `${label}: 422 detail must be a non-empty list: ${text}`);
    for (const e of body.detail) {
      assert.equal(typeof e.type, 'string', text);
      assert.equal(typeof e.msg, 'string', text);
      assert.ok(Array.isArray(e.loc) && ['body', 'query', 'path'].includes(e.loc[0]), `${label}: bad loc ${text}`);
      assert.ok('input' in e, `${label}: entry without input ${text}`);
    }
  } else {
    assert.equal(typeof body.detail, 'string', `${label}: ${text}`);
  }
}

forEachStorage('memory OpenAPI-driven fuzz', (storage) => {
  const s = useServer(storage);
  const ops: Operation[] = [];
  const ids: Record<string, string[]> = {};

  before(async () => {
    // Shared schemas are $ref components: walk the operations with them in place.
    const spec = derefOpenApi(await ok(s.http.get('/openapi.json')));
    for (const [path, item] of Object.entries<any>(spec.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        ops.push({ method: method.toUpperCase(), path, params: op.parameters ?? [], body: op.requestBody?.content?.['application/json']?.schema });
      }
    }
    // Real records, so that generated requests reach the success paths too.
    const f = await fixture(s.http);
    const m = await ok(s.http.post(`${f.S}/${f.session.id}/messages`, { content: 'I like tea', is_user: true }));
    const mm = await ok(s.http.post(`${f.S}/${f.session.id}/metamessages`, { message_id: m.id, metamessage_type: 't', content: 'c' }));
    const c = await ok(s.http.post(f.C, { name: 'coll' }));
    const d = await ok(s.http.post(`${f.C}/${c.id}/documents`, { content: 'tea is nice', metadata: { a: 1 } }));
    Object.assign(ids, {
      app_id: [f.app.id],
      user_id: [f.user.id],
      session_id: [f.session.id],
      message_id: [m.id],
      metamessage_id: [mm.id],
      collection_id: [c.id],
      document_id: [d.id],
      name: [f.app.name, f.user.name, 'coll'],
    });
  });

  let lastFailure = '';
  it('never answers 5xx and always answers errors in FastAPI shape', async () => {
    assert.ok(ops.length >= 34, `expected every operation in /openapi.json, found ${ops.length}`);
    const request = fc.constantFrom(...ops).chain((op) => {
      const pathArbs: Record<string, fc.Arbitrary<unknown>> = {};
      const queryArbs: Record<string, fc.Arbitrary<unknown>> = {};
      for (const p of op.params) {
        const a = valueFor(p.schema, ids, p.name);
        if (p.in === 'path') pathArbs[p.name] = a;
        else if (p.in === 'query') queryArbs[p.name] = fc.option(a, { nil: undefined, freq: 3 });
      }
      return fc.record({
        op: fc.constant(op),
        path: fc.record(pathArbs),
        query: fc.record(queryArbs),
        body: op.body ? bodyFor(op.body, ids) : fc.constant(undefined),
        rawBody: fc.option(fc.constantFrom('{', '[1,', '', 'nul', '{"name": "\\ud800"}'), { freq: 10, nil: undefined }),
      });
    });
    await fc.assert(
      fc.asyncProperty(request, async ({ op, path, query, body, rawBody }) => {
        let url = op.path;
        for (const [k, v] of Object.entries(path)) url = url.replace(`{${k}}`, encodeSegment(asQueryValue(v) ?? ''));
        const qs = new URLSearchParams();
        for (const [k, v] of Object.entries(query)) {
          const sv = asQueryValue(v);
          if (sv !== undefined) qs.append(k, sv);
        }
        if (qs.size) url += `?${qs}`;
        const payload = rawBody !== undefined && op.body ? rawBody : body === undefined ? undefined : JSON.stringify(body);
        const headers: Record<string, string> = payload !== undefined ? { 'content-type': 'application/json' } : {};
        const res = await fetch(s.url + url, { method: op.method, headers, body: payload });
        const text = await res.text();
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        if (res.headers.get('content-type')?.startsWith('text/event-stream')) return;
        try {
          assertFastApiError(res.status, parsed, text, `${op.method} ${url} ${payload ?? ''}`.slice(0, 400));
        } catch (err) {
          lastFailure = (err as Error).message;
          throw err;
        }
      }),
      { numRuns: RUNS, interruptAfterTimeLimit: 45_000 },
    ).catch((err) => {
      throw new Error(`${lastFailure}\n${(err as Error).message}`);
    });
  });
});
