import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { derefOpenApi, onStorage, type StorageKind } from '@svc/testkit';
import { rawRequest, seedBasics, startApi, type Api } from './helpers.ts';

/**
 * Every operation of /openapi.json, fed generated queries and bodies that mix
 * plausible values with hostile ones: NUL characters, lone surrogates,
 * invalid UTF-8, JSON nested 10,000 levels deep, non-finite and 20-digit
 * numbers, broken JSON. Writes that would lock the fuzzer out (changing or
 * deleting users and tokens) are left out. FUZZ_RUNS sets runs per operation.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 12);
const LOCKOUT = /^\/api\/users\/(users|tokens)\/(\{id\}\/)?$/;

interface Operation {
  method: string;
  path: string;
  query: string[];
  body: string[];
}

function operations(doc: any): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    if (!path.startsWith('/api/')) continue;
    for (const [method, op] of Object.entries<any>(item)) {
      const m = method.toUpperCase();
      if (LOCKOUT.test(path) && m !== 'GET' && m !== 'POST') continue;
      const query = (op.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name);
      const schema = op.requestBody?.content?.['application/json']?.schema;
      const props = schema?.properties ?? schema?.items?.properties ?? schema?.anyOf?.[0]?.properties ?? {};
      ops.push({ method: m, path, query, body: Object.keys(props) });
    }
  }
  return ops;
}

// Raw JSON that JSON.stringify cannot write: placeholders swapped in after serialising.
const RAW: Record<string, string> = {
  '@@DEEP_ARRAY@@': '['.repeat(10_000) + ']'.repeat(10_000),
  '@@DEEP_OBJECT@@': '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000),
  '@@HUGE_FLOAT@@': '1e999',
  '@@HUGE_INT@@': '99999999999999999999',
};
const HOSTILE_STRINGS = ['\u0000', 'a\u0000b', '\ud800', 'x\udfffy', '\udc00\ud800', '\ud83d\ude00', '99999999999999999999', '-99999999999999999999', '1e999'];

const scalar = fc.oneof(
  fc.integer({ min: -2, max: 6 }),
  fc.constantFrom('active', 'planned', 'virtual', 'dcim.interface', '10.0.0.1/24', 'aa:bb:cc:dd:ee:ff', '', 'null', '1', 'true', '9e9e9e', '%', "'", '../', 'http://127.0.0.1:9/'),
  fc.constantFrom(...HOSTILE_STRINGS),
  fc.constantFrom(...Object.keys(RAW)),
  fc.string({ maxLength: 30, unit: 'binary' }).map((x) => x.replace(/\ufffd/g, '')),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.bigInt({ min: 2n ** 53n, max: 2n ** 70n }).map((n) => Number(n)),
);
const hostileKey = fc.constantFrom('a\u0000', '\ud800', 'ok');
const value = fc.oneof(
  { weight: 4, arbitrary: scalar },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 1, arbitrary: fc.array(scalar, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.oneof(fc.constantFrom('id', 'name', 'slug', 'x'), hostileKey), scalar) },
);

function bodyFor(op: Operation) {
  const obj = fc.dictionary(fc.constantFrom(...(op.body.length ? op.body : ['x']), 'id', 'tags', 'custom_fields', 'name', 'description'), value, { maxKeys: 8 });
  return fc.oneof(
    { weight: 5, arbitrary: obj },
    { weight: 2, arbitrary: fc.array(obj, { maxLength: 3 }) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    { weight: 1, arbitrary: fc.constantFrom('{', '[{"id": 1', '', 'null', '@@DEEP_ARRAY@@', '@@DEEP_OBJECT@@') },
  );
}

/** Query values as they appear on the wire (already percent-encoded where hostile). */
const queryValue = fc.oneof(
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.integer({ min: -5, max: 1e6 }).map(String),
  fc.constantFrom('true', '-name', '2020-01-01', '1,2', '%00', 'a%00b', '%ED%A0%80', '%FF%FE', '%C0%80', '99999999999999999999', '-1', '1e999'),
);

function queryFor(op: Operation) {
  const names = [...op.query, 'limit', 'offset', 'ordering', 'brief', 'fields', 'q', 'name', 'tag', 'id', 'id__gte', 'name__ic', 'zzz'];
  return fc.array(fc.tuple(fc.constantFrom(...names), queryValue), { maxLength: 5 });
}

/** The body's bytes: JSON with raw placeholders swapped in, and now and then a byte that is not UTF-8. */
function encodeBody(body: unknown, corrupt: number): Buffer {
  // Strings are sent as they are (broken JSON, empty bodies); everything else as JSON.
  let text = typeof body === 'string' ? (Object.hasOwn(RAW, body) ? RAW[body]! : body) : JSON.stringify(body);
  for (const [k, v] of Object.entries(RAW)) text = text.split(JSON.stringify(k)).join(v);
  const bytes = Buffer.from(text, 'utf8');
  if (corrupt === 0 || bytes.length === 0) return bytes;
  const at = corrupt % bytes.length;
  return Buffer.concat([bytes.subarray(0, at), Buffer.from([[0xff, 0xc0, 0xed][corrupt % 3]!, 0x80]), bytes.subarray(at)]);
}

const LONE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether a generated body holds something no storage can keep (NUL, a lone surrogate, Infinity, 10,000 levels). */
function unstorable(v: unknown): boolean {
  if (typeof v === 'string') return LONE.test(v) || (v !== '@@HUGE_INT@@' && Object.hasOwn(RAW, v));
  if (typeof v === 'number') return !Number.isFinite(v);
  if (Array.isArray(v)) return v.some(unstorable);
  if (v && typeof v === 'object') return Object.entries(v).some(([k, x]) => LONE.test(k) || unstorable(x));
  return false;
}

/** One file per storage (fuzz.test.ts, fuzz-postgres.test.ts): each has the runner's per-file limit to itself. */
export function fuzzSuite(only: StorageKind): void {
  onStorage(only, 'inventory API: fuzzing every /openapi.json operation with hostile values never yields 5xx', (storage) => {
    let api: Api;
    before(async () => {
      api = await startApi(storage);
      await seedBasics(api);
      await api.http.post('/api/extras/tags/', { name: 'T', slug: 't' });
    });
    after(() => api.close());

    it('answers every generated request with a non-5xx status and JSON or empty body', { timeout: 280_000 }, async () => {
      // Shared schemas are $ref components: walk the operations with them in place.
      const doc = derefOpenApi((await api.http.get('/openapi.json')).body);
      const ops = operations(doc);
      assert.ok(ops.length >= 60, `only ${ops.length} operations found`);
      for (const op of ops) {
        await fc.assert(
          fc.asyncProperty(
            fc.oneof(fc.integer({ min: 1, max: 4 }).map(String), fc.constantFrom('99999999999999999999', '%00', '0'), fc.string({ maxLength: 8 }).map(encodeURIComponent)),
            queryFor(op),
            bodyFor(op),
            fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 1000 }) }),
            async (id, query, body, corrupt) => {
              const qs = query.map(([k, v]) => `${k}=${v}`).join('&');
              const url = op.path.replace('{id}', id) + (qs ? `?${qs}` : '');
              const hasBody = !['GET', 'HEAD'].includes(op.method);
              const bytes = hasBody ? encodeBody(body, corrupt) : undefined;
              const r = await rawRequest(api.server.url, op.method, url, bytes);
              const shown = `${op.method} ${url} ${bytes ? bytes.subarray(0, 200).toString('latin1') : ''}`;
              assert.ok(r.status < 500, `${shown} → ${r.status} ${r.text.slice(0, 300)}`);
              if (r.status >= 400) assert.equal(typeof r.body, 'object', `${shown} → non-JSON error ${r.text.slice(0, 100)}`);
              // What cannot be stored faithfully is refused, never acknowledged (stored as U+FFFD or truncated).
              if (hasBody && typeof body !== 'string' && (unstorable(body) || corrupt > 0)) assert.ok(r.status >= 400, `${shown} → ${r.status} ${r.text.slice(0, 200)}`);
              if (query.some(([, v]) => /%00/.test(v))) assert.ok(r.status >= 400, `${shown} → ${r.status}`);
              if (r.status < 300 && op.method !== 'GET') assert.ok(!r.text.includes('\ufffd'), `${shown} → ${r.status} stored U+FFFD: ${r.text.slice(0, 200)}`);
            },
          ),
          { numRuns: RUNS },
        ).catch((err) => {
          // The failing assertion (with the request) is the cause; show it, not only fast-check's summary.
          throw new Error(`${op.method} ${op.path}: ${err.message}\n${(err.cause as Error | undefined)?.message ?? ''}`);
        });
      }
    });
  });
}
