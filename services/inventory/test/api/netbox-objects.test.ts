import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

forEachStorage('inventory API: NetBox objects (tenancy, regions, locations, racks, platforms, IPAM)', (storage) => {
  let api: Api;
  let b: Awaited<ReturnType<typeof seedBasics>>;
  const ok = (r: { status: number; body: any }, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body;
  };
  before(async () => {
    api = await startApi(storage);
    b = await seedBasics(api);
  });
  after(() => api.close());

  it('serves every new endpoint with NetBox fields, briefs and app roots', async () => {
    const h = api.http;
    const tg = ok(await h.post('/api/tenancy/tenant-groups/', { name: 'Customers', slug: 'customers' }));
    const t = ok(await h.post('/api/tenancy/tenants/', { name: 'Acme Corp', slug: 'acme-corp', group: tg.id }));
    assert.equal(t.group.id, tg.id);
    for (const k of ['device_count', 'site_count', 'vrf_count', 'circuit_count']) assert.equal(t[k], 0, k);
    const reg = ok(await h.post('/api/dcim/regions/', { name: 'Europe', slug: 'europe' }));
    const sub = ok(await h.post('/api/dcim/regions/', { name: 'France', slug: 'france', parent: reg.id }));
    assert.equal(sub.parent.id, reg.id);
    assert.deepEqual(ok(await h.patch(`/api/dcim/regions/${reg.id}/`, { parent: sub.id }), 400), { parent: ['Cannot assign self or child as parent.'] });
    const sg = ok(await h.post('/api/dcim/site-groups/', { name: 'Edge', slug: 'edge' }));
    const site = ok(await h.patch(`/api/dcim/sites/${b.site.id}/`, { region: sub.id, group: sg.id, tenant: t.id, latitude: 48.8566, longitude: 2.3522, facility: 'PAR1' }), 200);
    assert.equal(site.region.id, sub.id);
    assert.equal(site.latitude, 48.8566);
    assert.deepEqual(site.asns, []);
    assert.equal(site.time_zone, null);
    assert.equal(ok(await h.get(`/api/dcim/regions/${sub.id}/`), 200).site_count, 1);
    const plat = ok(await h.post('/api/dcim/platforms/', { name: 'Junos', slug: 'junos', manufacturer: b.mfr.id }));
    assert.equal(plat.manufacturer.id, b.mfr.id);
    const loc = ok(await h.post('/api/dcim/locations/', { name: 'Hall A', slug: 'hall-a', site: b.site.id, tenant: t.id }));
    const rack = ok(await h.post('/api/dcim/racks/', { name: 'R01', site: b.site.id, location: loc.id, u_height: 10, asset_tag: 'RK-1' }));
    assert.equal(rack.u_height, 10);
    assert.deepEqual(rack.width, { value: '19', label: '19 inches' });
    const vrf = ok(await h.post('/api/ipam/vrfs/', { name: 'Blue', rd: '65000:1', tenant: t.id }));
    assert.equal(vrf.display, 'Blue (65000:1)');
    assert.equal(vrf.enforce_unique, true);
    const vg = ok(await h.post('/api/ipam/vlan-groups/', { name: 'Campus', slug: 'campus' }));
    const vlan = ok(await h.post('/api/ipam/vlans/', { vid: 100, name: 'users', group: vg.id, site: b.site.id }));
    assert.equal(vlan.display, 'users (100)');
    ok(await h.post('/api/ipam/vlans/', { vid: 100, name: 'dup', group: vg.id }), 400);
    const pfx = ok(await h.post('/api/ipam/prefixes/', { prefix: '10.20.0.7/16', vrf: vrf.id, vlan: vlan.id, status: 'container' }));
    assert.equal(pfx.prefix, '10.20.0.0/16');
    assert.deepEqual(pfx.family, { value: 4, label: 'IPv4' });
    for (const [path, key] of [
      ['/api/tenancy/', 'tenants'],
      ['/api/tenancy/', 'tenant-groups'],
      ['/api/dcim/', 'regions'],
      ['/api/dcim/', 'site-groups'],
      ['/api/dcim/', 'locations'],
      ['/api/dcim/', 'racks'],
      ['/api/dcim/', 'platforms'],
      ['/api/ipam/', 'vrfs'],
      ['/api/ipam/', 'prefixes'],
      ['/api/ipam/', 'vlan-groups'],
      ['/api/ipam/', 'vlans'],
    ]) {
      const root = ok(await h.get(path!), 200);
      assert.equal(root[key!], `${api.server.url}${path}${key}/`, key);
      const brief = ok(await h.get(`${path}${key}/?brief=1`), 200);
      assert.ok(brief.count >= 1, key);
      assert.ok(!('created' in brief.results[0]), key);
      ok(await h.request('OPTIONS', `${path}${key}/`), 200);
    }
    // Filters.
    assert.equal(ok(await h.get(`/api/dcim/sites/?region_id=${sub.id}&tenant=acme-corp`), 200).count, 1);
    assert.equal(ok(await h.get(`/api/dcim/racks/?location_id=${loc.id}&asset_tag=RK-1`), 200).count, 1);
    assert.equal(ok(await h.get(`/api/ipam/prefixes/?within=10.0.0.0/8`), 200).count, 1);
    assert.equal(ok(await h.get(`/api/ipam/prefixes/?contains=10.20.3.4`), 200).count, 1);
    assert.equal(ok(await h.get(`/api/ipam/prefixes/?vrf_id=${vrf.id}&mask_length=16`), 200).count, 1);
    assert.equal(ok(await h.get(`/api/ipam/vlans/?vid__gte=50&group=campus`), 200).count, 1);
    assert.equal(ok(await h.get(`/api/ipam/vlans/?qinq_role=svlan`), 200).count, 0);
    assert.ok(ok(await h.get(`/api/ipam/vlans/?l2vpn=x`), 400).l2vpn);
    assert.equal(ok(await h.get(`/api/tenancy/tenants/?group=nope`), 400).group[0], 'Select a valid choice. nope is not one of the available choices.');
    // l2vpn_termination is read-only (an L2VPN termination names the VLAN): a value sent with a write is ignored, as DRF's.
    assert.equal(ok(await h.patch(`/api/ipam/vlans/${vlan.id}/`, { l2vpn_termination: 1 }), 200).l2vpn_termination, null);
    // Tenants in use are protected.
    assert.equal((await h.delete(`/api/tenancy/tenants/${t.id}/`)).status, 409);
  });

  it('validates device placement, primary and OOB IPs, and interface relations', async () => {
    const h = api.http;
    const site2 = ok(await h.post('/api/dcim/sites/', { name: 'Other', slug: 'other' }));
    const rack = ok(await h.post('/api/dcim/racks/', { name: 'R02', site: b.site.id, u_height: 4 }));
    const base = { device_type: b.type.id, role: b.role.id, site: b.site.id };
    const d1 = ok(await h.post('/api/dcim/devices/', { ...base, name: 'sw1', rack: rack.id, position: 2, face: 'front', asset_tag: 'A-1', airflow: 'front-to-rear', local_context_data: { ntp: ['10.0.0.1'] } }));
    assert.equal(d1.position, 2);
    assert.deepEqual(d1.config_context, { ntp: ['10.0.0.1'] });
    assert.deepEqual(d1.local_context_data, { ntp: ['10.0.0.1'] });
    for (const k of ['primary_ip', 'primary_ip4', 'primary_ip6', 'oob_ip', 'cluster', 'virtual_chassis', 'parent_device']) assert.equal(d1[k], null, k);
    assert.equal(d1.interface_count, 0);
    assert.equal(d1.console_port_count, 0);
    assert.deepEqual(ok(await h.post('/api/dcim/devices/', { ...base, name: 'sw2', rack: rack.id, position: 2, face: 'rear' }), 400), {
      position: ['U2.0 is already occupied or does not have sufficient space to accommodate this device type: X (1.0U)'],
    });
    assert.deepEqual(ok(await h.post('/api/dcim/devices/', { ...base, name: 'sw2', rack: rack.id, position: 3 }), 400), { face: ['Must specify rack face when defining rack position.'] });
    assert.deepEqual(ok(await h.post('/api/dcim/devices/', { ...base, name: 'sw2', position: 3, face: 'front' }), 400), { face: ['Cannot select a rack face without assigning a rack.'] });
    assert.deepEqual(ok(await h.post('/api/dcim/devices/', { ...base, site: site2.id, name: 'sw2', rack: rack.id }), 400), { rack: ['Rack R02 does not belong to site Other.'] });
    assert.ok(ok(await h.post('/api/dcim/devices/', { ...base, name: 'sw2', asset_tag: 'A-1' }), 400).asset_tag);
    assert.ok(ok(await h.post('/api/dcim/devices/', { ...base, name: 'sw2', rack: rack.id, position: 9, face: 'front' }), 400).position);
    assert.ok(ok(await h.patch(`/api/dcim/racks/${rack.id}/`, { u_height: 1 }), 400).u_height);
    const d2 = ok(await h.post('/api/dcim/devices/', { ...base, name: 'sw2' }));
    const eth0 = ok(await h.post('/api/dcim/interfaces/', { device: d1.id, name: 'eth0', type: '1000base-t', mgmt_only: true, label: 'MGMT', speed: 1000000, duplex: 'full' }));
    assert.equal(eth0.mgmt_only, true);
    assert.deepEqual(eth0.duplex, { value: 'full', label: 'Full' });
    const lag = ok(await h.post('/api/dcim/interfaces/', { device: d1.id, name: 'ae0', type: 'lag' }));
    const other = ok(await h.post('/api/dcim/interfaces/', { device: d2.id, name: 'eth0', type: '1000base-t' }));
    const eth1 = ok(await h.post('/api/dcim/interfaces/', { device: d1.id, name: 'eth1', type: '1000base-t', lag: lag.id, parent: eth0.id, mark_connected: true }));
    assert.equal(eth1.lag.id, lag.id);
    assert.ok(ok(await h.post('/api/dcim/interfaces/', { device: d1.id, name: 'eth2', type: '1000base-t', lag: eth0.id }), 400).lag);
    assert.ok(ok(await h.post('/api/dcim/interfaces/', { device: d1.id, name: 'eth2', type: '1000base-t', parent: other.id }), 400).parent);
    const v10 = ok(await h.post('/api/ipam/vlans/', { vid: 10, name: 'v10' }));
    const v20 = ok(await h.post('/api/ipam/vlans/', { vid: 20, name: 'v20' }));
    assert.ok(ok(await h.patch(`/api/dcim/interfaces/${eth1.id}/`, { untagged_vlan: v10.id }), 400).untagged_vlan);
    const trunk = ok(await h.patch(`/api/dcim/interfaces/${eth1.id}/`, { mode: 'tagged', untagged_vlan: v10.id, tagged_vlans: [v20.id, v10.id] }), 200);
    assert.deepEqual(trunk.mode, { value: 'tagged', label: 'Tagged' });
    assert.deepEqual(trunk.tagged_vlans.map((v: any) => v.vid).sort(), [10, 20]);
    assert.ok(ok(await h.patch(`/api/dcim/interfaces/${eth1.id}/`, { mode: 'access', tagged_vlans: [v20.id] }), 400).tagged_vlans);
    // Primary and OOB addresses must sit on the device's own interfaces.
    const ip4 = ok(await h.post('/api/ipam/ip-addresses/', { address: '192.0.2.10/24', assigned_object_type: 'dcim.interface', assigned_object_id: eth0.id }));
    const ip6 = ok(await h.post('/api/ipam/ip-addresses/', { address: '2001:db8::10/64', assigned_object_type: 'dcim.interface', assigned_object_id: eth0.id }));
    const foreign = ok(await h.post('/api/ipam/ip-addresses/', { address: '192.0.2.20/24', assigned_object_type: 'dcim.interface', assigned_object_id: other.id }));
    assert.deepEqual(ok(await h.patch(`/api/dcim/devices/${d1.id}/`, { primary_ip4: ip6.id }), 400), { primary_ip4: ['2001:db8::10/64 is not an IPv4 address.'] });
    assert.deepEqual(ok(await h.patch(`/api/dcim/devices/${d1.id}/`, { primary_ip4: foreign.id }), 400), { primary_ip4: ['The specified IP address (192.0.2.20/24) is not assigned to this device.'] });
    assert.deepEqual(ok(await h.patch(`/api/dcim/devices/${d1.id}/`, { oob_ip: foreign.id }), 400), { oob_ip: ['The specified IP address (192.0.2.20/24) is not assigned to this device.'] });
    const dev = ok(await h.patch(`/api/dcim/devices/${d1.id}/`, { primary_ip4: ip4.id, primary_ip6: ip6.id, oob_ip: ip4.id }), 200);
    assert.equal(dev.primary_ip4.id, ip4.id);
    assert.equal(dev.primary_ip.id, ip6.id, 'primary_ip prefers IPv6 as NetBox without PREFER_IPV4');
    assert.equal(dev.oob_ip.address, '192.0.2.10/24');
    assert.equal(dev.interface_count, 3);
    assert.equal(ok(await h.get(`/api/dcim/devices/?has_primary_ip=true&name=sw1`), 200).count, 1);
    assert.equal(ok(await h.get(`/api/dcim/devices/?primary_ip4_id=${ip4.id}`), 200).count, 1);
    // Deleting the address clears the device's reference (SET_NULL).
    ok(await h.delete(`/api/ipam/ip-addresses/${ip6.id}/`), 204);
    const after = ok(await h.get(`/api/dcim/devices/${d1.id}/`), 200);
    assert.equal(after.primary_ip6, null);
    assert.equal(after.primary_ip.id, ip4.id);
  });

  it('enforces unique IP space globally and per VRF with NetBox text', async () => {
    const h = api.http;
    ok(await h.post('/api/ipam/ip-addresses/', { address: '198.51.100.1/24' }));
    assert.deepEqual(ok(await h.post('/api/ipam/ip-addresses/', { address: '198.51.100.1/32' }), 400), { address: ['Duplicate IP address found in global table: 198.51.100.1/24'] });
    ok(await h.post('/api/ipam/ip-addresses/', { address: '198.51.100.2/24', role: 'vip' }));
    ok(await h.post('/api/ipam/ip-addresses/', { address: '198.51.100.2/24', role: 'vrrp' }));
    const red = ok(await h.post('/api/ipam/vrfs/', { name: 'Red' }));
    ok(await h.post('/api/ipam/ip-addresses/', { address: '198.51.100.1/24', vrf: red.id }));
    assert.deepEqual(ok(await h.post('/api/ipam/ip-addresses/', { address: '198.51.100.1/24', vrf: red.id }), 400), { address: ['Duplicate IP address found in VRF Red: 198.51.100.1/24'] });
    const loose = ok(await h.post('/api/ipam/vrfs/', { name: 'Loose', enforce_unique: false }));
    ok(await h.post('/api/ipam/ip-addresses/', { address: '198.51.100.1/24', vrf: loose.id }));
    ok(await h.post('/api/ipam/ip-addresses/', { address: '198.51.100.1/24', vrf: loose.id }));
  });

  it('lists and allocates available IPs and prefixes', async () => {
    const h = api.http;
    const p = ok(await h.post('/api/ipam/prefixes/', { prefix: '203.0.113.0/29' }));
    ok(await h.post('/api/ipam/ip-addresses/', { address: '203.0.113.2/29' }));
    const free = ok(await h.get(`/api/ipam/prefixes/${p.id}/available-ips/`), 200);
    assert.deepEqual(free.map((a: any) => a.address), ['203.0.113.1/29', '203.0.113.3/29', '203.0.113.4/29', '203.0.113.5/29', '203.0.113.6/29']);
    assert.deepEqual(free[0], { family: 4, address: '203.0.113.1/29', vrf: null });
    const one = ok(await h.post(`/api/ipam/prefixes/${p.id}/available-ips/`, { description: 'first', status: 'reserved' }));
    assert.equal(one.address, '203.0.113.1/29');
    assert.equal(one.description, 'first');
    const many = ok(await h.post(`/api/ipam/prefixes/${p.id}/available-ips/`, [{}, {}]));
    assert.deepEqual(many.map((a: any) => a.address), ['203.0.113.3/29', '203.0.113.4/29']);
    const tooMany = await h.post(`/api/ipam/prefixes/${p.id}/available-ips/`, [{}, {}, {}]);
    assert.equal(tooMany.status, 409);
    assert.match(tooMany.body.detail, /insufficient number of IP addresses are available within prefix 203\.0\.113\.0\/29 \(3 requested, 2 available\)/);
    assert.equal(ok(await h.get(`/api/ipam/prefixes/${p.id}/available-ips/?limit=1`), 200).length, 1);
    assert.equal((await h.get('/api/ipam/prefixes/999999/available-ips/')).status, 404);
    const v6 = ok(await h.post('/api/ipam/prefixes/', { prefix: '2001:db8:1::/64' }));
    assert.equal(ok(await h.post(`/api/ipam/prefixes/${v6.id}/available-ips/`, {})).address, '2001:db8:1::1/64');
    const parent = ok(await h.post('/api/ipam/prefixes/', { prefix: '172.16.0.0/22', status: 'container' }));
    const child = ok(await h.post(`/api/ipam/prefixes/${parent.id}/available-prefixes/`, { prefix_length: 24, description: 'lan' }));
    assert.equal(child.prefix, '172.16.0.0/24');
    assert.deepEqual(ok(await h.get(`/api/ipam/prefixes/${parent.id}/available-prefixes/`), 200).map((x: any) => x.prefix), ['172.16.1.0/24', '172.16.2.0/23']);
    assert.ok(ok(await h.post(`/api/ipam/prefixes/${parent.id}/available-prefixes/`, { prefix_length: 20 }), 400).prefix_length);
  });

  it('makes every object type selectable in event rules, with change logging', async () => {
    const h = api.http;
    const hook = ok(await h.post('/api/extras/webhooks/', { name: 'objs', payload_url: 'http://127.0.0.1:9/x' }));
    const types = ['tenancy.tenant', 'tenancy.tenantgroup', 'dcim.region', 'dcim.sitegroup', 'dcim.location', 'dcim.rack', 'dcim.platform', 'ipam.vrf', 'ipam.prefix', 'ipam.vlangroup', 'ipam.vlan'];
    ok(await h.post('/api/extras/event-rules/', { name: 'all-new', object_types: types, event_types: ['object_created'], action_type: 'webhook', action_object_type: 'extras.webhook', action_object_id: hook.id }));
    const before = api.events.length;
    const t = ok(await h.post('/api/tenancy/tenants/', { name: 'Evented', slug: 'evented' }));
    const ev = api.events.slice(before).flat().find((e) => e.objectType === 'tenancy.tenant')!;
    assert.equal(ev.event, 'created');
    assert.equal(ev.data.url, `/api/tenancy/tenants/${t.id}/`);
    const changes = ok(await h.get(`/api/core/object-changes/?changed_object_type=tenancy.tenant&changed_object_id=${t.id}`), 200);
    assert.equal(changes.count, 1);
    assert.equal(changes.results[0].changed_object.name, 'Evented');
  });
});

forEachStorage('inventory API: rack elevation and OPTIONS of event endpoints', (storage) => {
  let api: Api;
  before(async () => {
    api = await startApi(storage);
  });
  after(() => api.close());

  it('lists a rack\'s units with the devices in them', async () => {
    const b = await seedBasics(api, 'el');
    const rack = (await api.http.post('/api/dcim/racks/', { name: 'E1', site: b.site.id, u_height: 4 })).body;
    const d = (await api.http.post('/api/dcim/devices/', { name: 'e-dev', site: b.site.id, device_type: b.type.id, role: b.role.id, rack: rack.id, position: 2, face: 'front' })).body;
    const r = await api.http.get(`/api/dcim/racks/${rack.id}/elevation/`);
    assert.equal(r.status, 200);
    assert.equal(r.body.count, 4);
    assert.deepEqual(r.body.results.map((u: any) => u.name), ['U4', 'U3', 'U2', 'U1']);
    const u2 = r.body.results.find((u: any) => u.id === 2);
    assert.equal(u2.device.id, d.id);
    assert.equal(u2.occupied, true);
    assert.deepEqual(u2.face, { value: 'front', label: 'Front' });
    assert.equal(r.body.results.find((u: any) => u.id === 1).device, null);
    assert.equal((await api.http.get(`/api/dcim/racks/${rack.id}/elevation/?face=side`)).status, 400);
    assert.equal((await api.http.get('/api/dcim/racks/999999/elevation/')).status, 404);
  });

  it('describes webhook and event rule fields with choices in OPTIONS', async () => {
    let r = await api.http.request('OPTIONS', '/api/extras/webhooks/');
    assert.deepEqual(r.body.actions.POST.http_method.choices.map((c: any) => c.value), ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
    assert.equal(r.body.actions.POST.payload_url.required, true);
    r = await api.http.request('OPTIONS', '/api/extras/event-rules/');
    const types = r.body.actions.POST.object_types.child.choices.map((c: any) => c.value);
    for (const t of ['dcim.device', 'ipam.prefix', 'tenancy.tenant', 'ipam.vlan']) assert.ok(types.includes(t), t);
    r = await api.http.request('OPTIONS', '/api/extras/event-rules/1/');
    assert.equal(r.body.name, 'Event Rule');
    assert.ok(r.body.actions.PUT.event_types);
  });
});
