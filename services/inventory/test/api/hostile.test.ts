import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { rawRequest, seedBasics, startApi, type Api } from './helpers.ts';

const raw = rawRequest;

const deep = (n: number, open: string, close: string, inner = '1') => open.repeat(n) + inner + close.repeat(n);

forEachStorage('inventory API: hostile input is a 400 in DRF shape, never a 5xx', (storage) => {
  let api: Api;
  let b: Awaited<ReturnType<typeof seedBasics>>;
  let device: any;
  before(async () => {
    api = await startApi(storage);
    b = await seedBasics(api);
    device = (await api.http.post('/api/dcim/devices/', { name: 'd1', site: b.site.id, device_type: b.type.id, role: b.role.id })).body;
  });
  after(() => api.close());

  const LISTS = [
    '/api/dcim/sites/', '/api/dcim/devices/', '/api/dcim/interfaces/', '/api/ipam/ip-addresses/', '/api/extras/tags/', '/api/core/object-changes/',
    '/api/extras/webhooks/', '/api/extras/event-rules/', '/api/core/background-tasks/', '/api/users/users/', '/api/users/tokens/',
  ];

  it('refuses NUL in query parameters with the parameter named', async () => {
    for (const path of LISTS) {
      for (const param of ['q', 'name', 'slug', 'description__ic', 'name__n', 'tag', 'site', 'status', 'ordering', 'username']) {
        const r = await raw(api.server.url, 'GET', `${path}?${param}=a%00b`);
        assert.equal(r.status, 400, `${path}?${param}= → ${r.status} ${r.text}`);
        assert.deepEqual(r.body, { [param]: ['Null characters are not allowed.'] });
      }
    }
  });

  it('treats invalid percent-encoded UTF-8 in a query as text, never a 5xx', async () => {
    for (const path of LISTS) {
      for (const q of ['q=%ED%A0%80', 'name=%FF%FE', 'q=%C0%80', 'name=%E2%82']) {
        const r = await raw(api.server.url, 'GET', `${path}?${q}`);
        assert.ok(r.status === 200 || r.status === 400, `${path}?${q} → ${r.status} ${r.text}`);
      }
    }
  });

  it('caps 20-digit offsets, limits and ids instead of failing', async () => {
    const huge = '99999999999999999999';
    for (const path of LISTS) {
      let r = await raw(api.server.url, 'GET', `${path}?offset=${huge}`);
      assert.equal(r.status, 200, `${path} offset → ${r.status} ${r.text}`);
      assert.deepEqual(r.body.results, []);
      r = await raw(api.server.url, 'GET', `${path}?limit=${huge}`);
      assert.equal(r.status, 200, `${path} limit → ${r.status} ${r.text}`);
      r = await raw(api.server.url, 'GET', `${path}?id=${huge}`);
      assert.ok(r.status === 200 || r.status === 400, `${path} id → ${r.status} ${r.text}`);
      r = await raw(api.server.url, 'GET', `${path}${huge}/`);
      assert.equal(r.status, 404, `${path}${huge}/ → ${r.status}`);
    }
    const r = await raw(api.server.url, 'PATCH', '/api/dcim/devices/', JSON.stringify([{ id: Number(huge), name: 'x' }]));
    assert.equal(r.status, 400);
  });

  it('refuses NUL and lone surrogates in names, descriptions, usernames, tags and custom_fields', async () => {
    const cases: Array<[string, string, string, string]> = [
      ['/api/dcim/sites/', '{"name":"a\\u0000b","slug":"n1"}', 'name', 'Null characters are not allowed.'],
      ['/api/dcim/sites/', '{"name":"a\\ud800b","slug":"n2"}', 'name', 'Unpaired surrogate characters are not allowed.'],
      ['/api/dcim/sites/', '{"name":"n3","slug":"n3","description":"\\udc00"}', 'description', 'Unpaired surrogate characters are not allowed.'],
      ['/api/dcim/sites/', '{"name":"n4","slug":"n4","custom_fields":{"a":"\\u0000"}}', 'custom_fields', 'Null characters are not allowed.'],
      ['/api/dcim/sites/', '{"name":"n5","slug":"n5","custom_fields":{"a\\u0000":1}}', 'custom_fields', 'Null characters are not allowed.'],
      ['/api/dcim/sites/', '{"name":"n6","slug":"n6","custom_fields":{"a":["\\ud800"]}}', 'custom_fields', 'Unpaired surrogate characters are not allowed.'],
      ['/api/dcim/sites/', '{"name":"n7","slug":"n7","custom_fields":{"\\udfff":1}}', 'custom_fields', 'Unpaired surrogate characters are not allowed.'],
      ['/api/dcim/sites/', '{"name":"n8","slug":"n8","custom_fields":{"a":1e999}}', 'custom_fields', 'Out of range float values are not JSON compliant.'],
      ['/api/dcim/sites/', '{"name":"n9","slug":"n9","tags":[{"name":"\\u0000"}]}', 'tags', 'Null characters are not allowed.'],
      ['/api/dcim/sites/', '{"name":"n10","slug":"n10","tags":[{"slug":"\\ud800"}]}', 'tags', 'Unpaired surrogate characters are not allowed.'],
      ['/api/extras/tags/', '{"name":"t\\ud800","slug":"t1"}', 'name', 'Unpaired surrogate characters are not allowed.'],
      ['/api/extras/webhooks/', '{"name":"w\\u0000","payload_url":"http://127.0.0.1/"}', 'name', 'Null characters are not allowed.'],
      ['/api/extras/webhooks/', '{"name":"w2","payload_url":"http://127.0.0.1/\\u0000"}', 'payload_url', 'Null characters are not allowed.'],
      ['/api/extras/webhooks/', '{"name":"w3","payload_url":"http://127.0.0.1/","description":"\\ud800"}', 'description', 'Unpaired surrogate characters are not allowed.'],
      ['/api/extras/event-rules/', '{"name":"r\\ud800","object_types":["dcim.device"],"event_types":["object_created"],"action_object_type":"extras.webhook","action_object_id":1}', 'name', 'Unpaired surrogate characters are not allowed.'],
      ['/api/users/users/', '{"username":"u\\u0000"}', 'username', 'Null characters are not allowed.'],
      ['/api/users/users/', '{"username":"\\ud800"}', 'username', 'Unpaired surrogate characters are not allowed.'],
      ['/api/users/tokens/', '{"description":"\\ud800"}', 'description', 'Unpaired surrogate characters are not allowed.'],
      ['/api/users/tokens/provision/', '{"username":"\\u0000","password":"x"}', 'username', 'Null characters are not allowed.'],
      ['/api/users/tokens/provision/', '{"username":"admin","password":"\\ud800"}', 'password', 'Unpaired surrogate characters are not allowed.'],
    ];
    for (const [path, body, field, message] of cases) {
      const r = await raw(api.server.url, 'POST', path, body);
      assert.equal(r.status, 400, `${path} ${body} → ${r.status} ${r.text}`);
      assert.deepEqual(r.body, { [field]: [message] }, `${path} ${body}`);
    }
    let r = await raw(api.server.url, 'PATCH', `/api/dcim/devices/${device.id}/`, '{"custom_fields":{"x":"\\u0000"}}');
    assert.deepEqual([r.status, r.body], [400, { custom_fields: ['Null characters are not allowed.'] }]);
    r = await raw(api.server.url, 'PATCH', '/api/dcim/devices/', `[{"id":${device.id}},{"id":${device.id},"serial":"\\ud800"}]`);
    assert.deepEqual([r.status, r.body], [400, [{}, { serial: ['Unpaired surrogate characters are not allowed.'] }]]);
    // Nothing was stored, not even as U+FFFD.
    const names = (await api.http.get('/api/dcim/sites/?limit=0')).body.results.map((s: any) => s.name);
    assert.ok(!names.some((n: string) => n.includes('\ufffd')), JSON.stringify(names));
    const dev = (await api.http.get(`/api/dcim/devices/${device.id}/`)).body;
    assert.deepEqual(dev.custom_fields, {});
    // Surrogate pairs (astral characters) are fine.
    r = await raw(api.server.url, 'POST', '/api/dcim/sites/', '{"name":"ok \\ud83d\\ude00","slug":"emoji","custom_fields":{"k":"\\ud83d\\ude00"}}');
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.name, 'ok 😀');
  });

  it('refuses JSON nested 10,000 levels deep wherever it appears', async () => {
    const bodies: Array<[string, string, unknown]> = [
      ['/api/dcim/sites/', `{"name":"d1","slug":"d1","custom_fields":{"a":${deep(10_000, '[', ']')}}}`, { custom_fields: ['JSON nested deeper than 64 levels is not allowed.'] }],
      ['/api/dcim/sites/', `{"name":"d2","slug":"d2","custom_fields":${deep(10_000, '{"a":', '}')}}`, { custom_fields: ['JSON nested deeper than 64 levels is not allowed.'] }],
      ['/api/dcim/sites/', `{"name":"d3","slug":"d3","tags":${deep(10_000, '[', ']')}}`, { tags: ['JSON nested deeper than 64 levels is not allowed.'] }],
      ['/api/dcim/sites/', deep(10_000, '[', ']'), [{ non_field_errors: ['JSON nested deeper than 64 levels is not allowed.'] }]],
      ['/api/extras/webhooks/', `{"name":"d4","payload_url":"http://127.0.0.1/","custom_fields":${deep(10_000, '{"a":', '}')}}`, { custom_fields: ['JSON nested deeper than 64 levels is not allowed.'] }],
      ['/api/extras/event-rules/', `{"name":"d5","conditions":${deep(10_000, '{"and":[', ']}', '{}')}}`, { conditions: ['JSON nested deeper than 64 levels is not allowed.'] }],
      ['/api/users/tokens/provision/', `{"username":${deep(10_000, '[', ']')},"password":"x"}`, { username: ['JSON nested deeper than 64 levels is not allowed.'] }],
    ];
    for (const [path, body, expected] of bodies) {
      const r = await raw(api.server.url, 'POST', path, body);
      assert.deepEqual([r.status, r.body], [400, expected], `${path} ${body.slice(0, 60)}`);
    }
    const r = await raw(api.server.url, 'PATCH', `/api/dcim/devices/${device.id}/`, `{"custom_fields":{"x":${deep(10_000, '{"a":', '}')}}}`);
    assert.deepEqual([r.status, r.body], [400, { custom_fields: ['JSON nested deeper than 64 levels is not allowed.'] }]);
  });

  it('stores odd but valid custom_fields values faithfully on both storages', async () => {
    const cf = { big: 1e308, neg: -0.5, int: 9007199254740991, emptyKey: { '': [] }, unicode: 'ü\u2028\u2029\ud83d\ude00', nested: [[[{ a: null }]]], quote: '"\\\'', bool: false };
    const r = await api.http.patch(`/api/dcim/devices/${device.id}/`, { custom_fields: cf });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual((await api.http.get(`/api/dcim/devices/${device.id}/`)).body.custom_fields, cf);
  });

  it('answers bodies that are not UTF-8 with a JSON parse error', async () => {
    for (const bytes of [
      Buffer.from('{"name":"\xff\xfe","slug":"x"}', 'latin1'),
      Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('","slug":"cesu"}')]),
      Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc0, 0x80]), Buffer.from('","slug":"overlong"}')]),
      Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xe2, 0x82])]),
    ]) {
      for (const path of ['/api/dcim/sites/', '/api/extras/webhooks/', '/api/users/tokens/provision/']) {
        const r = await raw(api.server.url, 'POST', path, bytes);
        assert.equal(r.status, 400, `${path} ${bytes.toString('hex')} → ${r.status} ${r.text}`);
        assert.match(r.body.detail, /^JSON parse error - 'utf-8' codec can't decode/);
      }
    }
    const sites = (await api.http.get('/api/dcim/sites/?limit=0')).body.results;
    assert.ok(!sites.some((s: any) => s.name.includes('\ufffd')));
  });

  it('accepts a DELETE with Content-Type: application/json and no body, as DRF does', async () => {
    const tag = (await api.http.post('/api/extras/tags/', { name: 'gone', slug: 'gone' })).body;
    const hook = (await api.http.post('/api/extras/webhooks/', { name: 'gone', payload_url: 'http://127.0.0.1:9/' })).body;
    const dev = (await api.http.post('/api/dcim/devices/', { name: 'gone', site: b.site.id, device_type: b.type.id, role: b.role.id })).body;
    for (const path of [`/api/extras/tags/${tag.id}/`, `/api/extras/webhooks/${hook.id}/`, `/api/dcim/devices/${dev.id}/`]) {
      for (const headers of [{ 'content-type': 'application/json' }, { 'content-type': 'application/json', 'content-length': '0' }] as Array<Record<string, string>>) {
        const r = await raw(api.server.url, 'DELETE', path, undefined, headers);
        assert.ok(r.status === 204 || r.status === 404, `${path} ${JSON.stringify(headers)} → ${r.status} ${r.text}`);
      }
      assert.equal((await api.http.get(path)).status, 404);
    }
  });
});
