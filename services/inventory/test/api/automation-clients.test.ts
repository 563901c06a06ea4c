import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { rawRequest, seedBasics, startApi, type Api } from './helpers.ts';

/**
 * The requests NetBox's automation clients make that used to stop them (issue 24): Ansible's
 * `netbox.netbox` collection asks for `/api/status` and `/api/ipam/prefixes` without the trailing slash
 * (NetBox's APPEND_SLASH redirects), looks interfaces up by `virtual_chassis_member_id` and IP
 * addresses by `assigned_object_id` / `interface_id`, and reads the device filters from /api/schema/.
 */
forEachStorage('inventory API: what NetBox automation clients request', (storage) => {
  let api: Api;
  let w: Record<string, any>;
  const ok = (r: { status: number; body: any }, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body;
  };
  const ids = (r: { status: number; body: any }) => {
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.results.map((o: any) => o.id).sort((a: number, b: number) => a - b);
  };

  before(async () => {
    api = await startApi(storage);
    const h = api.http;
    const b = await seedBasics(api, 'A');
    const vrf = ok(await h.post('/api/ipam/vrfs/', { name: 'blue', rd: '65000:1' }));
    const rack = ok(await h.post('/api/dcim/racks/', { name: 'R1', site: b.site.id }));
    const mfr2 = ok(await h.post('/api/dcim/manufacturers/', { name: 'Other', slug: 'other' }));
    const type2 = ok(await h.post('/api/dcim/device-types/', { manufacturer: mfr2.id, model: 'Y', slug: 'y' }));
    const sw = ok(await h.post('/api/dcim/devices/', { name: 'sw1', site: b.site.id, device_type: b.type.id, role: b.role.id, rack: rack.id }));
    const rt = ok(await h.post('/api/dcim/devices/', { name: 'rt1', site: b.site.id, device_type: type2.id, role: b.role.id, status: 'planned' }));
    const v10 = ok(await h.post('/api/ipam/vlans/', { vid: 10, name: 'v10' }));
    const v20 = ok(await h.post('/api/ipam/vlans/', { vid: 20, name: 'v20' }));
    const swEth0 = ok(await h.post('/api/dcim/interfaces/', { device: sw.id, name: 'eth0', type: '1000base-t', mode: 'access', untagged_vlan: v10.id }));
    const swLag = ok(await h.post('/api/dcim/interfaces/', { device: sw.id, name: 'bond0', type: 'lag', mode: 'tagged', tagged_vlans: [v20.id] }));
    const rtEth0 = ok(await h.post('/api/dcim/interfaces/', { device: rt.id, name: 'eth0', type: '10gbase-x-sfpp' }));
    const rtWifi = ok(await h.post('/api/dcim/interfaces/', { device: rt.id, name: 'wlan0', type: 'ieee802.11ax' }));
    const ipSw = ok(await h.post('/api/ipam/ip-addresses/', { address: '192.0.2.1/24', assigned_object_type: 'dcim.interface', assigned_object_id: swEth0.id }));
    const ipRt = ok(await h.post('/api/ipam/ip-addresses/', { address: '198.51.100.1/30', assigned_object_type: 'dcim.interface', assigned_object_id: rtEth0.id, vrf: vrf.id }));
    const ipFree = ok(await h.post('/api/ipam/ip-addresses/', { address: '2001:db8::1/64' }));
    w = { ...b, vrf, rack, type2, sw, rt, v10, v20, swEth0, swLag, rtEth0, rtWifi, ipSw, ipRt, ipFree };
  });
  after(() => api.close());

  it('a GET or HEAD without the trailing slash answers 301 to the slashed path, query kept, before authentication', async () => {
    const r = await rawRequest(api.server.url, 'GET', '/api/status', undefined, { authorization: '' });
    assert.equal(r.status, 301);
    assert.equal(r.headers.location, '/api/status/');
    const q = await rawRequest(api.server.url, 'GET', '/api/ipam/prefixes?limit=0&q=a%20b');
    assert.equal(q.status, 301);
    assert.equal(q.headers.location, '/api/ipam/prefixes/?limit=0&q=a%20b');
    const head = await rawRequest(api.server.url, 'HEAD', `/api/dcim/devices/${w.sw.id}`);
    assert.equal(head.status, 301);
    assert.equal(head.headers.location, `/api/dcim/devices/${w.sw.id}/`);
    // fetch follows it: the status document, as from the slashed URL.
    const followed = await api.http.get('/api/status');
    assert.equal(followed.status, 200);
    assert.equal(typeof followed.body['netbox-version'], 'string');
  });

  it('no redirect where the slashed path does not exist, for other methods, or for paths served without a slash', async () => {
    const missing = await rawRequest(api.server.url, 'GET', '/api/nosuchapp');
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, { detail: 'Not found.' });
    const post = await rawRequest(api.server.url, 'POST', '/api/dcim/sites', JSON.stringify({ name: 'x', slug: 'x' }));
    assert.notEqual(post.status, 301);
    assert.equal((await rawRequest(api.server.url, 'GET', '/health')).status, 200);
    // The OpenAPI document (built from the registry, never read from the storage; costly to build): SQLite only.
    if (storage === 'sqlite') assert.equal((await rawRequest(api.server.url, 'GET', '/openapi.json')).status, 200);
    // A protocol-relative target is never produced.
    const dbl = await rawRequest(api.server.url, 'GET', '//api/status');
    assert.notEqual(dbl.status, 301);
  });

  it('interfaces by virtual_chassis_member_id / virtual_chassis_member (the Ansible interface module), device type, role, rack, status, kind, VLAN', async () => {
    const h = api.http;
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?virtual_chassis_member_id=${w.sw.id}&name=eth0`)), [w.swEth0.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?virtual_chassis_member_id=${w.sw.id}`)), [w.swEth0.id, w.swLag.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?virtual_chassis_member_or_master_id=${w.rt.id}`)), [w.rtEth0.id, w.rtWifi.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?virtual_chassis_member=rt1&name=eth0')), [w.rtEth0.id]);
    // A device id that does not exist matches nothing (a number filter, not a choice).
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?virtual_chassis_member_id=999999')), []);
    const bad = await h.get('/api/dcim/interfaces/?virtual_chassis_member_id=abc');
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, { virtual_chassis_member_id: ['Enter a number.'] });
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?device_type_id=${w.type2.id}`)), [w.rtEth0.id, w.rtWifi.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?device_type=Y')), [w.rtEth0.id, w.rtWifi.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?device_role=${w.role.slug}&device_status=planned`)), [w.rtEth0.id, w.rtWifi.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?rack_id=${w.rack.id}`)), [w.swEth0.id, w.swLag.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?rack=R1&kind=virtual')), [w.swLag.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?kind=wireless')), [w.rtWifi.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?kind=physical&device_id=${w.rt.id}`)), [w.rtEth0.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?vlan_id=${w.v10.id}`)), [w.swEth0.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?vlan=20')), [w.swLag.id]);
    const status = await h.get('/api/dcim/interfaces/?device_status=nope');
    assert.equal(status.status, 400);
    assert.deepEqual(status.body, { device_status: ['Select a valid choice. nope is not one of the available choices.'] });
    const role = await h.get('/api/dcim/interfaces/?device_role=nope');
    assert.deepEqual(role.body, { device_role: ['Select a valid choice. nope is not one of the available choices.'] });
  });

  it('IP addresses by assigned_object_id / type, interface, device, mask_length, present_in_vrf, assigned (the Ansible IP module)', async () => {
    const h = api.http;
    assert.deepEqual(ids(await h.get(`/api/ipam/ip-addresses/?assigned_object_id=${w.swEth0.id}&address=192.0.2.1/24`)), [w.ipSw.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/ip-addresses/?assigned_object_id__n=${w.swEth0.id}&assigned_object_type=dcim.interface`)), [w.ipRt.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/ip-addresses/?interface_id=${w.rtEth0.id}`)), [w.ipRt.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?interface=eth0')), [w.ipSw.id, w.ipRt.id].sort((a, b) => a - b));
    const iface = await h.get('/api/ipam/ip-addresses/?interface=nope');
    assert.equal(iface.status, 400);
    assert.deepEqual(iface.body, { interface: ['Select a valid choice. nope is not one of the available choices.'] });
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?device=rt1')), [w.ipRt.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?device=nosuchdevice')), []);
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?mask_length=24&mask_length=64')), [w.ipSw.id, w.ipFree.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?mask_length__gte=30')), [w.ipRt.id, w.ipFree.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?mask_length__lte=24')), [w.ipSw.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/ip-addresses/?present_in_vrf_id=${w.vrf.id}`)), [w.ipRt.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?present_in_vrf=65000:1')), [w.ipRt.id]);
    const vrf = await h.get('/api/ipam/ip-addresses/?present_in_vrf_id=99999');
    assert.equal(vrf.status, 400);
    assert.deepEqual(vrf.body, { present_in_vrf_id: ['Select a valid choice. That choice is not one of the available choices.'] });
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?assigned=false')), [w.ipFree.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?assigned=true')), [w.ipSw.id, w.ipRt.id].sort((a, b) => a - b));
    const mask = await h.get('/api/ipam/ip-addresses/?mask_length=x');
    assert.deepEqual(mask.body, { mask_length: ['Enter a number.'] });
  });

  it('`null` as a related-object filter value means "has none", also beside ids, negated, and through a relation', async () => {
    const h = api.http;
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?vrf_id=null')), [w.ipSw.id, w.ipFree.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get(`/api/ipam/ip-addresses/?vrf_id=null&vrf_id=${w.vrf.id}`)), [w.ipSw.id, w.ipRt.id, w.ipFree.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?vrf_id__n=null')), [w.ipRt.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?vrf=null')), [w.ipSw.id, w.ipFree.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get('/api/dcim/devices/?rack_id=null')), [w.rt.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/devices/?tenant=null')), [w.sw.id, w.rt.id].sort((a, b) => a - b));
    // Through the device: interfaces whose device has no rack.
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?rack_id=null')), [w.rtEth0.id, w.rtWifi.id].sort((a, b) => a - b));
    // Through the site: devices whose site has no region.
    assert.deepEqual(ids(await h.get('/api/dcim/devices/?region_id=null')), [w.sw.id, w.rt.id].sort((a, b) => a - b));
  });

  it('?exclude=config_context leaves the rendered context out of devices (the Ansible inventory default)', async () => {
    const h = api.http;
    const with_ = await h.get(`/api/dcim/devices/${w.sw.id}/`);
    assert.ok('config_context' in with_.body);
    const list = await h.get('/api/dcim/devices/?exclude=config_context&limit=0');
    assert.equal(list.status, 200);
    assert.ok(list.body.results.length >= 2 && list.body.results.every((d: any) => !('config_context' in d) && 'local_context_data' in d));
    const one = await h.get(`/api/dcim/devices/${w.sw.id}/?exclude=config_context&omit=serial`);
    assert.ok(!('config_context' in one.body) && !('serial' in one.body) && 'name' in one.body);
  });

  it('the OpenAPI document lists the device and interface filters clients read from it', { skip: storage !== 'sqlite' && 'built from the registry, never read from the storage: checked on SQLite' }, async () => {
    const doc = (await api.http.get('/api/schema/?format=json')).body;
    // Ansible's nb_inventory reads `p["name"]` of each parameter of the devices and VMs GET: parameters stay inline (no `$ref`).
    const names = (p: string) => (doc.paths[p].get.parameters as Array<{ name: string }>).map((x) => x.name);
    for (const n of ['site_id', 'role', 'tenant', 'has_primary_ip']) assert.ok(names('/api/dcim/devices/').includes(n), n);
    for (const n of ['virtual_chassis_member_id', 'kind', 'vlan_id']) assert.ok(names('/api/dcim/interfaces/').includes(n), n);
    for (const n of ['assigned_object_id', 'mask_length__gte', 'present_in_vrf_id']) assert.ok(names('/api/ipam/ip-addresses/').includes(n), n);
  });

  it("LOGIN_REQUIRED: the API roots and /api/status/ answer a caller without credentials only with --login-required false (pynetbox < 7.3.4's version check sends no token)", async () => {
    for (const p of ['/api/', '/api/dcim/', '/api/status/']) {
      const r = await rawRequest(api.server.url, 'GET', p, undefined, { authorization: '' });
      assert.equal(r.status, 403, p);
      assert.deepEqual(r.body, { detail: 'Authentication credentials were not provided.' });
    }
    const open = await startApi(storage, { loginRequired: 'false' });
    try {
      for (const p of ['/api/', '/api/dcim/', '/api/plugins/', '/api/status/']) {
        const r = await rawRequest(open.server.url, 'GET', p, undefined, { authorization: '' });
        assert.equal(r.status, 200, `${p}: ${r.text}`);
        assert.equal(r.headers['api-version'], '4.3');
      }
      // Objects still need a caller; a bad token is refused everywhere.
      assert.equal((await rawRequest(open.server.url, 'GET', '/api/dcim/sites/', undefined, { authorization: '' })).status, 403);
      assert.equal((await rawRequest(open.server.url, 'POST', '/api/dcim/sites/', JSON.stringify({ name: 'x', slug: 'x' }), { authorization: '' })).status, 403);
      const bad = await rawRequest(open.server.url, 'GET', '/api/', undefined, { authorization: 'Token 0000000000000000000000000000000000000000' });
      assert.equal(bad.status, 403);
      assert.deepEqual(bad.body, { detail: 'Invalid token' });
    } finally {
      await open.close();
    }
  });
});
