import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from 'typebox';
import { createHttpServer, detailError, fastApiErrorStyle, STORAGE_BUSY, type App } from '@svc/kernel';
import { client } from '@svc/testkit';

describe('kernel http server', () => {
  let app: App;
  let http: ReturnType<typeof client>;
  before(async () => {
    app = await createHttpServer({ name: 'demo', version: '0.1.0', errorStyle: fastApiErrorStyle, logLevel: 'silent', laxCoercion: true, health: async () => ({ queue_depth: 3 }) });
    app.post(
      '/items/:item_id',
      {
        schema: {
          params: Type.Object({ item_id: Type.String({ format: 'uuid' }) }),
          querystring: Type.Object({ page: Type.Integer({ minimum: 1, default: 1 }), flag: Type.Optional(Type.Boolean()) }),
          body: Type.Object({ name: Type.String({ maxLength: 5 }), metadata: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])) }),
        },
      },
      async (req) => ({ id: req.params.item_id, page: req.query.page, flag: req.query.flag ?? null, name: req.body.name }),
    );
    app.get('/missing', async () => {
      throw detailError(404, 'Thing not found');
    });
    app.get('/storage-error/:code', async (req) => {
      throw Object.assign(new Error('database is locked'), { code: (req.params as { code: string }).code });
    });
    app.get('/crash', async () => {
      throw new Error('boom');
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    http = client(`http://127.0.0.1:${(app.server.address() as any).port}`);
  });
  after(() => app.close());

  it('accepts lax booleans and UUID forms', async () => {
    const r = await http.post('/items/urn:uuid:0F3A2B7C1D2E4F5A8B9C0D1E2F3A4B5C?page=2&flag=YES', { name: 'ab' });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { id: '0f3a2b7c-1d2e-4f5a-8b9c-0d1e2f3a4b5c', page: 2, flag: true, name: 'ab' });
  });

  it('collects path, query and body errors in FastAPI shape', async () => {
    const r = await http.post('/items/xyz?page=0&flag=maybe', { name: 'toolong', metadata: 'x' });
    assert.equal(r.status, 422);
    const types = r.body.detail.map((d: any) => `${d.loc.join('.')}:${d.type}`);
    assert.deepEqual(types, ['path.item_id:uuid_parsing', 'query.page:greater_than_equal', 'query.flag:bool_parsing', 'body.name:string_too_long', 'body.metadata:dict_type']);
    const page = r.body.detail[1];
    assert.equal(page.input, '0');
    assert.deepEqual(page.ctx, { ge: 1 });
    assert.equal(r.body.detail[0].msg, 'Input should be a valid UUID, invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `x` at 1');
  });

  it('reports a missing body and missing fields', async () => {
    const id = '0f3a2b7c-1d2e-4f5a-8b9c-0d1e2f3a4b5c';
    let r = await http.request('POST', `/items/${id}`);
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail, [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);
    r = await http.post(`/items/${id}`, {});
    assert.deepEqual(r.body.detail, [{ type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: {} }]);
    r = await http.post(`/items/${id}`, '{bad');
    assert.equal(r.status, 422);
    assert.equal(r.body.detail[0].type, 'json_invalid');
  });

  it('answers 404/405/500 in the service shape', async () => {
    let r = await http.get('/nope');
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, { detail: 'Not Found' });
    r = await http.get('/items/0f3a2b7c-1d2e-4f5a-8b9c-0d1e2f3a4b5c');
    assert.equal(r.status, 405);
    assert.deepEqual(r.body, { detail: 'Method Not Allowed' });
    r = await http.get('/missing');
    assert.equal(r.status, 404);
    assert.match(r.headers.get('content-type')!, /^application\/json/);
    assert.deepEqual(r.body, { detail: 'Thing not found' });
    r = await http.get('/crash');
    assert.equal(r.status, 500);
    assert.equal(r.text, 'Internal Server Error');
  });

  it('answers 503 with Retry-After for transient storage lock errors, 500 for other storage errors', async () => {
    for (const code of ['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_LOCKED', '40001', '40P01', '55P03']) {
      const r = await http.get(`/storage-error/${code}`);
      assert.equal(r.status, 503, code);
      assert.equal(r.headers.get('retry-after'), '1');
      assert.match(r.headers.get('content-type')!, /^application\/json/);
      assert.deepEqual(r.body, { detail: STORAGE_BUSY });
    }
    for (const code of ['SQLITE_CONSTRAINT_UNIQUE', '23505', 'SQLITE_BUSYX']) {
      const r = await http.get(`/storage-error/${code}`);
      assert.equal(r.status, 500, code);
      assert.equal(r.headers.get('retry-after'), null);
      assert.equal(r.text, 'Internal Server Error');
    }
  });

  it('echoes or creates request ids', async () => {
    let r = await http.get('/health', { 'x-request-id': 'abc-123' });
    assert.equal(r.headers.get('x-request-id'), 'abc-123');
    r = await http.get('/health');
    assert.match(r.headers.get('x-request-id')!, /^[0-9a-f-]{36}$/);
    assert.deepEqual(r.body, { status: 'ok', service: 'demo', version: '0.1.0', queue_depth: 3 });
  });

  it('serves OpenAPI 3.1 and docs', async () => {
    const r = await http.get('/openapi.json');
    assert.equal(r.status, 200);
    assert.equal(r.body.openapi, '3.1.0');
    assert.ok(r.body.paths['/items/{item_id}'].post);
    const d = await fetch(`http://127.0.0.1:${(app.server.address() as any).port}/docs/`);
    assert.equal(d.status, 200);
    assert.match(await d.text(), /swagger/i);
  });
});
