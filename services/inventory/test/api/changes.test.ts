import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

forEachStorage('inventory API: bulk operations, change log and events', (storage) => {
  let api: Api;
  let b: Awaited<ReturnType<typeof seedBasics>>;
  before(async () => {
    api = await startApi(storage);
    b = await seedBasics(api);
    await api.http.post('/api/extras/tags/', [
      { name: 'zeta', slug: 'zeta' },
      { name: 'Alpha', slug: 'alpha' },
    ]);
  });
  after(() => api.close());

  const changes = async (query: string) => (await api.http.get(`/api/core/object-changes/?${query}`)).body;

  it('writes changelog rows with NetBox serialize_object snapshots', async () => {
    const h = api.http;
    const created = await h.post('/api/dcim/devices/', { name: 'cl1', site: b.site.id, device_type: b.type.id, role: b.role.id, tags: [{ slug: 'zeta' }, { slug: 'alpha' }], custom_fields: { a: 1 } });
    const id = created.body.id;
    const reqId = created.headers.get('x-request-id')!;
    assert.match(reqId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    let log = await changes(`request_id=${reqId}`);
    assert.equal(log.count, 1);
    const c = log.results[0];
    assert.deepEqual(c.action, { value: 'create', label: 'Created' });
    assert.equal(c.changed_object_type, 'dcim.device');
    assert.equal(c.changed_object_id, id);
    assert.equal(c.user_name, 'admin');
    assert.equal(c.object_repr, 'cl1');
    assert.equal(c.prechange_data, null);
    assert.deepEqual(c.postchange_data, {
      created: c.postchange_data.created,
      name: 'cl1',
      device_type: b.type.id,
      role: b.role.id,
      site: b.site.id,
      status: 'active',
      serial: '',
      platform: null,
      tenant: null,
      location: null,
      rack: null,
      position: null,
      face: null,
      asset_tag: null,
      airflow: null,
      latitude: null,
      longitude: null,
      primary_ip4: null,
      primary_ip6: null,
      oob_ip: null,
      cluster: null,
      virtual_chassis: null,
      vc_position: null,
      vc_priority: null,
      config_template: null,
      local_context_data: null,
      description: '',
      comments: '',
      custom_fields: { a: 1 },
      tags: ['Alpha', 'zeta'],
    });
    assert.match(c.postchange_data.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/);
    assert.equal(c.changed_object.id, id);

    const upd = await h.patch(`/api/dcim/devices/${id}/`, { status: 'offline', tags: [] });
    log = await changes(`request_id=${upd.headers.get('x-request-id')}`);
    assert.equal(log.results[0].prechange_data.status, 'active');
    assert.equal(log.results[0].postchange_data.status, 'offline');
    assert.deepEqual(log.results[0].postchange_data.tags, []);

    const del = await h.delete(`/api/dcim/devices/${id}/`);
    log = await changes(`request_id=${del.headers.get('x-request-id')}`);
    assert.deepEqual(log.results[0].action, { value: 'delete', label: 'Deleted' });
    assert.equal(log.results[0].postchange_data, null);
    assert.equal(log.results[0].changed_object, null);

    log = await changes(`changed_object_type=dcim.device&changed_object_id=${id}`);
    assert.deepEqual(log.results.map((r: any) => r.action.value), ['delete', 'update', 'create']);
    log = await changes(`changed_object_id=${id}&action=update`);
    assert.equal(log.count, 1);
    const bad = await api.http.get('/api/core/object-changes/?action=nope');
    assert.deepEqual(bad.body, { action: ['Select a valid choice. nope is not one of the available choices.'] });
    // Read-only.
    assert.equal((await h.post('/api/core/object-changes/', {})).status, 405);
  });

  it('hands each request one coalesced event per object, with REST data and snapshots', async () => {
    const h = api.http;
    api.events.length = 0;
    const r = await h.post('/api/dcim/sites/', { name: 'Ev', slug: 'ev' });
    assert.equal(api.events.length, 1);
    const [ev] = api.events[0]!;
    assert.equal(ev!.event, 'created');
    assert.equal(ev!.objectType, 'dcim.site');
    assert.equal(ev!.model, 'site');
    assert.equal(ev!.objectId, r.body.id);
    assert.equal(ev!.username, 'admin');
    assert.equal(ev!.requestId, r.headers.get('x-request-id'));
    assert.match(ev!.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00$/);
    assert.equal((ev!.data as any).url, `/api/dcim/sites/${r.body.id}/`, 'event data is serialised without a request: relative URLs');
    assert.deepEqual((ev!.data as any).status, { value: 'active', label: 'Active' });
    assert.equal(ev!.snapshots.prechange, null);
    assert.equal((ev!.snapshots.postchange as any).slug, 'ev');

    // Two updates of one object in one bulk request: two changelog rows, one "updated" event with the first prechange and last postchange.
    api.events.length = 0;
    const bulk = await h.patch('/api/dcim/sites/', [
      { id: r.body.id, status: 'planned' },
      { id: r.body.id, status: 'retired', description: 'x' },
    ]);
    assert.equal(bulk.status, 200, JSON.stringify(bulk.body));
    assert.equal(bulk.body.length, 1);
    assert.equal(api.events.length, 1);
    assert.equal(api.events[0]!.length, 1);
    const upd = api.events[0]![0]!;
    assert.equal(upd.event, 'updated');
    assert.equal((upd.snapshots.prechange as any).status, 'active');
    assert.equal((upd.snapshots.postchange as any).status, 'retired');
    assert.deepEqual((upd.data as any).status, { value: 'retired', label: 'Retired' });
    assert.equal((await changes(`request_id=${bulk.headers.get('x-request-id')}`)).count, 2);

    // An update that changes nothing leaves no changelog row but still fires "updated" (NetBox's CHANGELOG_SKIP_EMPTY_CHANGES).
    api.events.length = 0;
    const same = await h.patch(`/api/dcim/sites/${r.body.id}/`, { description: 'x' });
    assert.equal(same.status, 200);
    assert.equal((await changes(`request_id=${same.headers.get('x-request-id')}`)).count, 0);
    assert.deepEqual(api.events[0]!.map((e) => e.event), ['updated']);

    // A client-sent UUID becomes the request id.
    const mine = '5f0e1f7a-3c3b-4e55-9d53-0b5c0f3c1a11';
    const r2 = await h.patch(`/api/dcim/sites/${r.body.id}/`, { description: 'y' }, { 'x-request-id': mine });
    assert.equal(r2.headers.get('x-request-id'), mine);
    assert.equal(api.events.at(-1)![0]!.requestId, mine);
    assert.equal((await changes(`request_id=${mine}`)).count, 1);

    // Deleting a device deletes its interfaces first: each gets its own "deleted" event, data frozen before deletion.
    const dev = (await h.post('/api/dcim/devices/', { name: 'evdev', site: b.site.id, device_type: b.type.id, role: b.role.id })).body;
    await h.post('/api/dcim/interfaces/', { device: dev.id, name: 'eth0', type: 'virtual' });
    api.events.length = 0;
    await h.delete('/api/dcim/devices/', [{ id: dev.id }]);
    assert.deepEqual(api.events[0]!.map((e) => `${e.event} ${e.objectType}`), ['deleted dcim.interface', 'deleted dcim.device']);
    assert.equal((api.events[0]![1]!.data as any).name, 'evdev');
    assert.equal(api.events[0]![1]!.snapshots.postchange, null);
  });

  it('bulk creates, updates and deletes in one transaction each', async () => {
    const h = api.http;
    let r = await h.post('/api/dcim/manufacturers/', [
      { name: 'B1', slug: 'b1' },
      { name: 'B2', slug: 'b2' },
      { name: 'B3', slug: 'b3' },
    ]);
    assert.equal(r.status, 201);
    const ids = r.body.map((m: any) => m.id);
    r = await h.put('/api/dcim/manufacturers/', [
      { id: ids[0], name: 'B1x', slug: 'b1x' },
      { id: ids[1], name: 'B2x', slug: 'b2x' },
    ]);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.map((m: any) => m.name), ['B1x', 'B2x']);
    r = await h.patch('/api/dcim/manufacturers/', [{ id: ids[2], description: 'third' }]);
    assert.equal(r.body[0].description, 'third');

    // One bad item rolls the whole request back, with per-item errors in order.
    api.events.length = 0;
    const before = (await changes('limit=1')).count;
    r = await h.post('/api/dcim/manufacturers/', [
      { name: 'B4', slug: 'b4' },
      { name: 'B1x', slug: 'b 5' },
    ]);
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, [{}, { name: ['manufacturer with this name already exists.'], slug: ['Enter a valid “slug” consisting of letters, numbers, underscores or hyphens.'] }]);
    assert.equal((await h.get('/api/dcim/manufacturers/?slug=b4')).body.count, 0);
    assert.equal((await changes('limit=1')).count, before);
    assert.equal(api.events.length, 0);

    r = await h.patch('/api/dcim/manufacturers/', [{ description: 'no id' }]);
    assert.deepEqual(r.body, [{ id: ['This field is required.'] }]);
    r = await h.patch('/api/dcim/manufacturers/', { id: ids[0] });
    assert.deepEqual(r.body, { non_field_errors: ['Expected a list of items but got type "dict".'] });
    r = await h.patch('/api/dcim/manufacturers/', [{ id: 987654 }]);
    assert.equal(r.status, 404);

    r = await h.delete('/api/dcim/manufacturers/', ids.slice(0, 2).map((id: number) => ({ id })));
    assert.equal(r.status, 204);
    r = await h.get(`/api/dcim/manufacturers/?id=${ids[0]}&id=${ids[1]}&id=${ids[2]}`);
    assert.deepEqual(r.body.results.map((m: any) => m.id), [ids[2]]);
    r = await h.delete('/api/dcim/manufacturers/', [{ nope: 1 }]);
    assert.deepEqual(r.body, [{ id: ['This field is required.'] }]);
  });

  it('keeps concurrent writers consistent: one winner for a unique name, never a 5xx', async () => {
    const results = await Promise.all(Array.from({ length: 12 }, () => api.http.post('/api/dcim/manufacturers/', { name: 'Racy', slug: 'racy' })));
    const statuses = results.map((r) => r.status).sort();
    assert.equal(statuses.filter((s) => s === 201).length, 1, JSON.stringify(results.map((r) => [r.status, r.body])));
    assert.ok(statuses.every((s) => s === 201 || s === 400));
    for (const r of results.filter((x) => x.status === 400)) assert.ok(r.body.name || r.body.slug || r.body.non_field_errors, JSON.stringify(r.body));
    const many = await Promise.all(Array.from({ length: 20 }, (_, i) => api.http.post('/api/dcim/sites/', { name: `Par${i}`, slug: `par${i}` })));
    assert.ok(many.every((r) => r.status === 201));
    assert.equal((await api.http.get('/api/dcim/sites/?name__isw=Par&limit=0')).body.count, 20);
    assert.equal((await changes('changed_object_type=dcim.site&action=create&limit=0')).results.filter((c: any) => c.object_repr.startsWith('Par')).length, 20);
  });
});
