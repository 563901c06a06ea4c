import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { fixture, MISSING, ok, useServer } from './helpers.ts';

const UUID_MSG = 'Input should be a valid UUID, ';

forEachStorage('memory validation errors (FastAPI shape)', (storage) => {
  const s = useServer(storage);

  it('reports bad UUIDs in the path with pydantic messages', async () => {
    let r = await s.http.get('/apps/xyz');
    assert.equal(r.status, 422);
    const err = 'invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `x` at 1';
    assert.deepEqual(r.body, { detail: [{ type: 'uuid_parsing', loc: ['path', 'app_id'], msg: UUID_MSG + err, input: 'xyz', ctx: { error: err } }] });
    r = await s.http.get('/apps/abc');
    assert.equal(r.body.detail[0].msg, UUID_MSG + 'invalid length: expected length 32 for simple format, found 3');
    r = await s.http.get(`/apps/${MISSING.replace(/-/g, '')}`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'App not found' }], 'simple 32-hex form accepted');
  });

  it('collects path, query and body errors together', async () => {
    const r = await s.http.post('/apps/nope/users/also-bad/sessions', { location_id: 7, metadata: [] });
    assert.equal(r.status, 422);
    assert.deepEqual(
      r.body.detail.map((d: any) => [d.loc.join('.'), d.type]),
      [
        ['path.app_id', 'uuid_parsing'],
        ['path.user_id', 'uuid_parsing'],
        ['body.location_id', 'string_type'],
        ['body.metadata', 'dict_type'],
      ],
    );
    for (const d of r.body.detail) assert.deepEqual(Object.keys(d).slice(0, 4), ['type', 'loc', 'msg', 'input']);
  });

  it('reports missing, empty, non-object and malformed bodies', async () => {
    let r = await s.http.request('POST', '/apps');
    assert.deepEqual([r.status, r.body], [422, { detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] }]);
    r = await s.http.request('POST', '/apps', undefined, { 'content-type': 'application/json' });
    assert.deepEqual(r.body, { detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] });
    r = await s.http.post('/apps', 'null');
    assert.deepEqual(r.body, { detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] });
    r = await s.http.post('/apps', {});
    assert.deepEqual(r.body, { detail: [{ type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: {} }] });
    r = await s.http.post('/apps', [1]);
    assert.deepEqual(r.body.detail, [
      { type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: [1] },
    ]);
    r = await s.http.post('/apps', '{"name": ');
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail, [{ type: 'json_invalid', loc: ['body', 9], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } }]);
    r = await s.http.post('/apps', '{bad');
    assert.deepEqual(r.body.detail, [
      { type: 'json_invalid', loc: ['body', 1], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting property name enclosed in double quotes' } },
    ]);
    r = await s.http.post('/apps', '{"name": "a"} x');
    assert.equal(r.body.detail[0].ctx.error, 'Extra data');
    r = await s.http.post('/apps', { name: 5 });
    assert.deepEqual(r.body.detail, [{ type: 'string_type', loc: ['body', 'name'], msg: 'Input should be a valid string', input: 5 }]);
    r = await s.http.post('/apps', { name: 'ok', metadata: 'x' });
    assert.deepEqual(r.body.detail, [{ type: 'dict_type', loc: ['body', 'metadata'], msg: 'Input should be a valid dictionary', input: 'x' }]);
    r = await s.http.post('/apps', { name: 'deep', metadata: JSON.parse('{"a":'.repeat(100) + '1' + '}'.repeat(100)) });
    assert.equal(r.status, 422);
    assert.equal(r.body.detail[0].type, 'value_error');
  });

  it('accepts pydantic lax booleans and UUID spellings', async () => {
    const { S, session } = await fixture(s.http);
    const M = `${S}/${session.id}/messages`;
    for (const [v, want] of [['yes', true], ['On', true], ['t', true], [1, true], ['0', false], ['off', false], ['N', false], [false, false]] as const) {
      const m = await ok(s.http.post(M, { content: 'x', is_user: v }));
      assert.equal(m.is_user, want, String(v));
    }
    let r = await s.http.post(M, { content: 'x', is_user: 2 });
    assert.equal(r.body.detail[0].type, 'bool_parsing');
    r = await s.http.post(M, { content: 'x', is_user: null });
    assert.deepEqual(r.body.detail, [{ type: 'bool_type', loc: ['body', 'is_user'], msg: 'Input should be a valid boolean', input: null }]);
    assert.equal((await ok(s.http.get(`${S.toUpperCase().replace('/APPS/', '/apps/').replace('/USERS/', '/users/').replace('/SESSIONS', '/sessions')}/${session.id}/messages?reverse=YES`))).total, 8);
    r = await s.http.get(`${M}?reverse=`);
    assert.deepEqual(r.body.detail, [{ type: 'bool_parsing', loc: ['query', 'reverse'], msg: 'Input should be a valid boolean, unable to interpret input', input: '' }]);
    r = await s.http.get(`${S}/${session.id}/metamessages?message_id=`);
    assert.deepEqual(r.body.detail.map((d: any) => [d.type, d.input]), [['uuid_parsing', '']]);
    r = await s.http.get(`${M}?reverse=2`);
    assert.deepEqual(r.body.detail, [{ type: 'bool_parsing', loc: ['query', 'reverse'], msg: 'Input should be a valid boolean, unable to interpret input', input: '2' }]);
  });

  it('answers unknown routes, wrong methods and the service endpoints', async () => {
    let r = await s.http.get('/nope');
    assert.deepEqual([r.status, r.body], [404, { detail: 'Not Found' }]);
    r = await s.http.delete(`/apps/${MISSING}`);
    assert.deepEqual([r.status, r.body], [405, { detail: 'Method Not Allowed' }]);
    const redirect = await fetch(`${s.url}/apps/${MISSING}/?x=1`, { redirect: 'manual' });
    assert.deepEqual([redirect.status, redirect.headers.get('location')], [307, `/apps/${MISSING}?x=1`], 'trailing slash: 307 as Starlette');
    r = await s.http.get('/nope/');
    assert.equal(r.status, 404);
    r = await s.http.get('/health', { 'x-request-id': 'req-42' });
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'ok');
    assert.equal(typeof r.body.queue_depth, 'number');
    assert.equal(r.headers.get('x-request-id'), 'req-42');
    r = await s.http.get('/openapi.json');
    assert.equal(r.body.openapi, '3.1.0');
    const paths = Object.keys(r.body.paths);
    for (const p of [
      '/apps/{app_id}/users/{user_id}sessions/{session_id}/messages/{message_id}',
      '/apps/{app_id}/users/{user_id}sessions/{session_id}/metamessages/{metamessage_id}',
      '/apps/{app_id}/users/{user_id}/sessions/{session_id}/messages/{message_id}',
      '/apps/{app_id}/users/{user_id}/collections/{collection_id}/documents/{document_id}',
      '/apps/get_or_create/{name}',
    ]) assert.ok(paths.includes(p), p);
    r = await s.http.get('/apps/name/x', { authorization: 'Bearer default' });
    assert.equal(r.status, 404, 'the Authorization header is ignored by default');
  });
});

forEachStorage('memory optional API-key auth', (storage) => {
  describe('with --api-keys', () => {
    const s = useServer(storage, { flags: { apiKeys: 'k1, k2' } });
    it('needs a configured Bearer key except on health and docs', async () => {
      let r = await s.http.post('/apps', { name: 'a' });
      assert.deepEqual([r.status, r.body], [401, { detail: 'Not authenticated' }]);
      assert.equal(r.headers.get('www-authenticate'), 'Bearer');
      r = await s.http.post('/apps', { name: 'a' }, { authorization: 'Bearer nope' });
      assert.deepEqual([r.status, r.body], [401, { detail: 'Invalid API key' }]);
      r = await s.http.post('/apps', { name: 'a' }, { authorization: 'Bearer k2' });
      assert.equal(r.status, 200);
      assert.equal((await s.http.get('/health')).status, 200);
      assert.equal((await s.http.get('/openapi.json')).status, 200);
      assert.equal((await fetch(`${s.url}/docs/`)).status, 200);
    });
  });
});
