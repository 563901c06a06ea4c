import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

/**
 * Part A's API surface by default; FUZZ_ALL=1 takes every /api/ path but users (whose deletes would lock the fuzzer out).
 */
const MINE = process.env.FUZZ_ALL === '1' ? /^\/api\/(?!users\/)/ : /^\/api\/(dcim|ipam|extras\/tags|core\/object-changes|status)\//;
const RUNS = Number(process.env.FUZZ_RUNS ?? 12);

interface Operation {
  method: string;
  path: string;
  query: string[];
  body: string[];
}

function operations(doc: any): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    if (!MINE.test(path)) continue;
    for (const [method, op] of Object.entries<any>(item)) {
      const query = (op.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name);
      const schema = op.requestBody?.content?.['application/json']?.schema;
      const props = schema?.properties ?? schema?.items?.properties ?? schema?.anyOf?.[0]?.properties ?? {};
      ops.push({ method: method.toUpperCase(), path, query, body: Object.keys(props) });
    }
  }
  return ops;
}

const scalar = fc.oneof(
  fc.integer({ min: -2, max: 6 }),
  fc.constantFrom('active', 'planned', 'virtual', 'dcim.interface', '10.0.0.1/24', 'aa:bb:cc:dd:ee:ff', '', 'null', '1', 'true', '9e9e9e', '\u0000', '%', "'", '../'),
  fc.string({ maxLength: 30 }),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.bigInt({ min: 2n ** 53n, max: 2n ** 70n }).map((n) => Number(n)),
);
const value = fc.oneof({ weight: 4, arbitrary: scalar }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) }, { weight: 1, arbitrary: fc.array(scalar, { maxLength: 3 }) }, { weight: 1, arbitrary: fc.dictionary(fc.constantFrom('id', 'name', 'slug', 'x'), scalar) });

function bodyFor(op: Operation) {
  const obj = fc.dictionary(fc.constantFrom(...(op.body.length ? op.body : ['x']), 'id', 'tags', 'custom_fields'), value, { maxKeys: 8 });
  return fc.oneof({ weight: 5, arbitrary: obj }, { weight: 2, arbitrary: fc.array(obj, { maxLength: 3 }) }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) }, { weight: 1, arbitrary: fc.constantFrom('{', '[{"id": 1', '', 'null') });
}

function queryFor(op: Operation) {
  const names = [...op.query, 'limit', 'offset', 'ordering', 'brief', 'fields', 'q', 'tag', 'id__gte', 'name__ic', 'zzz'];
  return fc.array(fc.tuple(fc.constantFrom(...names), fc.oneof(fc.string({ maxLength: 12 }), fc.integer({ min: -5, max: 1e6 }).map(String), fc.constantFrom('true', '-name', '2020-01-01', '1,2', '%00'))), {
    maxLength: 5,
  });
}

forEachStorage('inventory API: fuzzing from /openapi.json never yields 5xx', (storage) => {
  let api: Api;
  before(async () => {
    api = await startApi(storage);
    await seedBasics(api);
    await api.http.post('/api/extras/tags/', { name: 'T', slug: 't' });
  });
  after(() => api.close());

  it('answers every generated request with a non-5xx status and JSON or empty body', async () => {
    const doc = (await api.http.get('/openapi.json')).body;
    const ops = operations(doc);
    assert.ok(ops.length >= 40, `only ${ops.length} operations found`);
    for (const op of ops) {
      await fc.assert(
        fc.asyncProperty(fc.oneof(fc.integer({ min: 1, max: 4 }).map(String), fc.string({ maxLength: 8 }).map(encodeURIComponent)), queryFor(op), bodyFor(op), async (id, query, body) => {
          const qs = new URLSearchParams(query).toString();
          const url = op.path.replace('{id}', id) + (qs ? `?${qs}` : '');
          const hasBody = !['GET', 'HEAD'].includes(op.method);
          const r = await api.http.request(op.method, url, hasBody ? (typeof body === 'string' ? body : JSON.stringify(body)) : undefined, hasBody ? { 'content-type': 'application/json' } : {});
          assert.ok(r.status < 500, `${op.method} ${url} ${JSON.stringify(body)} → ${r.status} ${r.text.slice(0, 300)}`);
          if (r.status >= 400) assert.equal(typeof r.body, 'object', `${op.method} ${url} → non-JSON error ${r.text.slice(0, 100)}`);
        }),
        { numRuns: RUNS },
      );
    }
  });
});
