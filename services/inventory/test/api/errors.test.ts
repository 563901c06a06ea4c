import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

forEachStorage('inventory API: DRF error shapes', (storage) => {
  let api: Api;
  let b: Awaited<ReturnType<typeof seedBasics>>;
  before(async () => {
    api = await startApi(storage);
    b = await seedBasics(api);
  });
  after(() => api.close());

  const post = async (path: string, body: unknown) => {
    const r = await api.http.post(path, body);
    assert.equal(r.status, 400, `${path} ${JSON.stringify(body)} → ${r.status} ${r.text}`);
    assert.match(r.headers.get('content-type')!, /^application\/json/);
    return r.body;
  };

  it('reports field errors with DRF wording', async () => {
    assert.deepEqual(await post('/api/dcim/sites/', {}), { name: ['This field is required.'], slug: ['This field is required.'] });
    assert.deepEqual(await post('/api/dcim/sites/', { name: null, slug: '' }), { name: ['This field may not be null.'], slug: ['This field may not be blank.'] });
    assert.deepEqual(await post('/api/dcim/sites/', { name: 'x'.repeat(101), slug: 'ok', status: 'x' }), {
      name: ['Ensure this field has no more than 100 characters.'],
      status: ['"x" is not a valid choice.'],
    });
    assert.deepEqual(await post('/api/dcim/sites/', { name: { a: 1 }, slug: 's', tags: 'x', custom_fields: [] }), {
      name: ['Not a valid string.'],
      tags: ['Expected a list of items but got type "str".'],
      custom_fields: ['Invalid data. Expected a dictionary, but got list.'],
    });
    assert.deepEqual(await post('/api/dcim/sites/', { name: b.site.name, slug: b.site.slug }), {
      name: ['site with this name already exists.'],
      slug: ['site with this slug already exists.'],
    });
    assert.deepEqual(await post('/api/dcim/devices/', { name: 'd', site: b.site.id, device_type: b.type.id, role: b.role.id, status: 7 }), { status: ['"7" is not a valid choice.'] });
    const dev = (await api.http.post('/api/dcim/devices/', { name: 'dup', site: b.site.id, device_type: b.type.id, role: b.role.id })).body;
    assert.deepEqual(await post('/api/dcim/devices/', { name: 'dup', site: b.site.id, device_type: b.type.id, role: b.role.id }), {
      non_field_errors: ['The fields name, site must make a unique set.'],
    });
    assert.deepEqual(await post('/api/dcim/interfaces/', { device: dev.id, name: 'e0', type: 'virtual', mtu: 'abc', enabled: 'maybe' }), {
      mtu: ['A valid integer is required.'],
      enabled: ['Must be a valid boolean.'],
    });
    assert.deepEqual(await post('/api/dcim/interfaces/', { device: { name: 'nope' }, name: 'e0', type: 'virtual', mtu: 70000 }), {
      device: ["Related object not found using the provided attributes: {'name': 'nope'}"],
      mtu: ['Ensure this value is less than or equal to 65536.'],
    });
    assert.deepEqual(await post('/api/dcim/sites/', { name: 'T', slug: 't', tags: [{ slug: 'missing' }, true] }), {
      tags: ["Related object not found using the provided attributes: {'slug': 'missing'}"],
    });
    assert.deepEqual(await post('/api/dcim/sites/', { name: 'big', slug: 'big', comments: 'x'.repeat(100_001) }), { comments: ['Ensure this field has no more than 100000 characters.'] });
    assert.deepEqual(await post('/api/dcim/sites/', { name: 'big', slug: 'big', custom_fields: { blob: 'x'.repeat(40_000) } }), { custom_fields: ['Custom field data may not exceed 32768 bytes.'] });
    assert.deepEqual(await post('/api/ipam/ip-addresses/', { address: '1.2.3.4/24', dns_name: 'bad name' }), {
      dns_name: ['Only alphanumeric characters, asterisks, hyphens, periods, and underscores are allowed in DNS names'],
    });
  });

  it('reports body-level problems', async () => {
    const broken = await post('/api/dcim/sites/', 'not json');
    assert.deepEqual(Object.keys(broken), ['detail']);
    assert.match(broken.detail, /^JSON parse error - /);
    assert.deepEqual(await post('/api/dcim/sites/', '"abc"'), { non_field_errors: ['Invalid data. Expected a dictionary, but got str.'] });
    assert.deepEqual(await post('/api/dcim/sites/', [1, null]), [
      { non_field_errors: ['Invalid data. Expected a dictionary, but got int.'] },
      { non_field_errors: ['Invalid data. Expected a dictionary, but got NoneType.'] },
    ]);
    const r = await api.http.patch(`/api/dcim/sites/${b.site.id}/`, [{ name: 'x' }]);
    assert.deepEqual([r.status, r.body], [400, { non_field_errors: ['Invalid data. Expected a dictionary, but got list.'] }]);
    // An empty body is "no data", as DRF reads it.
    const empty = await api.http.request('POST', '/api/dcim/sites/', '', { 'content-type': 'application/json' });
    assert.deepEqual(empty.body, { name: ['This field is required.'], slug: ['This field is required.'] });
  });

  it('answers unknown routes, bad ids and wrong methods as Django/DRF', async () => {
    let r = await api.http.get('/api/dcim/nothing/');
    assert.deepEqual([r.status, r.body], [404, { detail: 'Not found.' }]);
    r = await api.http.get('/api/dcim/sites/abc/');
    assert.deepEqual([r.status, r.body], [404, { detail: 'Not found.' }]);
    r = await api.http.get('/api/dcim/sites/999999999999999999999/');
    assert.equal(r.status, 404);
    r = await api.http.patch('/api/dcim/sites/424242/', { name: 'x' });
    assert.deepEqual([r.status, r.body], [404, { detail: 'Not found.' }]);
    r = await api.http.patch('/api/status/', {});
    assert.deepEqual([r.status, r.body], [405, { detail: 'Method "PATCH" not allowed.' }]);
  });
});

forEachStorage('inventory API: out-of-range query values', (storage) => {
  let api: Api;
  before(async () => {
    api = await startApi(storage);
  });
  after(() => api.close());

  it('matches nothing rather than failing on huge numbers', async () => {
    for (const q of ['mtu=9999999999999', 'mtu__gte=9999999999999', 'id=9999999999999999', 'device_id=9999999999999']) {
      const r = await api.http.get(`/api/dcim/interfaces/?${q}`);
      assert.ok(r.status === 200 || r.status === 400, `${q} → ${r.status} ${r.text}`);
    }
    const r = await api.http.get('/api/ipam/ip-addresses/?family=99999999999');
    assert.equal(r.status, 200);
    assert.equal(r.body.count, 0);
  });
});
