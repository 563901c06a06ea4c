import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { startApi, type Api } from './helpers.ts';

/** Custom field definitions, validation of objects' custom_fields against them, defaults, read-back and cf_ filters. */
forEachStorage('inventory API: custom fields', (storage) => {
  let api: Api;
  const ok = (r: { status: number; body: any }, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body;
  };
  before(async () => {
    api = await startApi(storage);
  });
  after(() => api.close());

  it('defines fields, validates site data against them, fills defaults, reads every field back, filters with cf_', async () => {
    const h = api.http;
    const rack = ok(await h.post('/api/extras/custom-fields/', { name: 'rack_count', type: 'integer', object_types: ['dcim.site'], validation_minimum: 0, validation_maximum: 100, default: 1 }));
    assert.deepEqual(rack.type, { value: 'integer', label: 'Integer' });
    assert.equal(rack.data_type, 'integer');
    assert.deepEqual(rack.object_types, ['dcim.site']);
    ok(await h.post('/api/extras/custom-fields/', { name: 'owner', type: 'text', object_types: ['dcim.site', 'dcim.device'], validation_regex: '^[a-z]+$' }));
    ok(await h.post('/api/extras/custom-fields/', { name: 'audited', type: 'boolean', object_types: ['dcim.site'] }));
    // Definitions are refused in DRF's shape when wrong.
    assert.deepEqual((await h.post('/api/extras/custom-fields/', { name: 'Bad Name', object_types: ['dcim.site'] })).body, { name: ['Only alphanumeric characters and underscores are allowed.'] });
    assert.equal((await h.post('/api/extras/custom-fields/', { name: 'x', object_types: ['dcim.nothing'] })).status, 400);
    assert.equal((await h.post('/api/extras/custom-fields/', { name: 'y', type: 'integer', object_types: ['dcim.site'], default: 'abc' })).status, 400);
    assert.equal((await h.post('/api/extras/custom-fields/', { name: 'z', object_types: ['dcim.site'], validation_regex: '(a)\\1' })).status, 400);
    assert.equal((await h.post('/api/extras/custom-fields/', { name: 'rack_count', object_types: ['dcim.site'] })).status, 400);
    assert.deepEqual(ok(await h.get('/api/extras/custom-fields/?object_type=dcim.device'), 200).results.map((c: any) => c.name), ['owner']);

    const site = ok(await h.post('/api/dcim/sites/', { name: 'A', slug: 'a', custom_fields: { owner: 'ops' } }));
    assert.deepEqual(site.custom_fields, { audited: null, owner: 'ops', rack_count: 1 });
    const b = ok(await h.post('/api/dcim/sites/', { name: 'B', slug: 'b', custom_fields: { rack_count: 7, audited: true } }));
    assert.deepEqual(b.custom_fields, { audited: true, owner: null, rack_count: 7 });
    for (const [data, message] of [
      [{ nope: 1 }, "Unknown field name 'nope' in custom field data."],
      [{ rack_count: 'x' }, "Invalid value for custom field 'rack_count': Value must be an integer."],
      [{ rack_count: 101 }, "Invalid value for custom field 'rack_count': Value must not exceed 100"],
      [{ owner: 'Ops!' }, "Invalid value for custom field 'owner': Values must match this regex: '^[a-z]+$'"],
      [{ audited: 'yes' }, "Invalid value for custom field 'audited': Value must be true or false."],
    ] as const) {
      const r = await h.post('/api/dcim/sites/', { name: 'C', slug: 'c', custom_fields: data });
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, { custom_fields: [message] });
    }
    // A partial update merges; the other values stay.
    const patched = ok(await h.patch(`/api/dcim/sites/${site.id}/`, { custom_fields: { audited: false } }), 200);
    assert.deepEqual(patched.custom_fields, { audited: false, owner: 'ops', rack_count: 1 });
    const names = async (q: string) => {
      const r = await h.get(`/api/dcim/sites/?${q}&ordering=name`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.results.map((s: any) => s.name);
    };
    assert.deepEqual(await names('cf_owner=ops'), ['A']);
    assert.deepEqual(await names('cf_owner__ic=OP'), ['A']);
    assert.deepEqual(await names('cf_owner=null'), ['B']);
    assert.deepEqual(await names('cf_rack_count__gte=5'), ['B']);
    assert.deepEqual(await names('cf_rack_count=1'), ['A']);
    assert.deepEqual(await names('cf_audited=true'), ['B']);
    assert.deepEqual(await names('cf_audited=false'), ['A']);
    const unknown = await h.get('/api/dcim/sites/?cf_nothing=1');
    assert.equal(unknown.status, 400);
    assert.ok(unknown.body.cf_nothing);
    assert.equal((await h.get('/api/dcim/sites/?cf_rack_count=abc')).status, 400);
    // Devices have only `owner`; a required field without a default must then be given.
    ok(await h.post('/api/extras/custom-fields/', { name: 'asset_owner', type: 'text', object_types: ['dcim.region'], required: true }));
    assert.deepEqual((await h.post('/api/dcim/regions/', { name: 'EU', slug: 'eu' })).body, { custom_fields: ['Required field "asset_owner" cannot be empty.'] });
    ok(await h.post('/api/dcim/regions/', { name: 'EU', slug: 'eu', custom_fields: { asset_owner: 'x' } }));
  });
});
