import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

/**
 * Fields and objects modelled for NetBox 4.3's filter names (issue 24): written through the API, shown as NetBox's
 * serializers show them, checked as NetBox's clean() checks them, and filtered (with `null` and lookups).
 */
forEachStorage('inventory API: NetBox 4.3 fields behind its filter names', (storage) => {
  let api: Api;
  before(async () => {
    api = await startApi(storage);
  });
  after(() => api.close());

  const ids = (r: { body: any }) => r.body.results.map((o: any) => o.id);

  it('rack roles (a new model: change log, events) and racks\' role and physical fields', async () => {
    const h = api.http;
    const b = await seedBasics(api, 'rr');
    const role = await h.post('/api/dcim/rack-roles/', { name: 'Core racks', slug: 'core-racks', color: 'FF0000' });
    assert.equal(role.status, 201, role.text);
    assert.equal(role.body.color, 'ff0000');
    assert.equal(role.body.rack_count, 0);
    const log = await h.get(`/api/core/object-changes/?changed_object_type=dcim.rackrole&changed_object_id=${role.body.id}`);
    assert.equal(log.body.results[0]?.action?.value, 'create');
    assert.ok(api.events.flat().some((e) => e.objectType === 'dcim.rackrole' && e.objectId === role.body.id));
    const r1 = await h.post('/api/dcim/racks/', { name: 'R1', site: b.site.id, role: role.body.id, weight: 120.5, weight_unit: 'kg', max_weight: 900, outer_width: 600, outer_depth: 1000, outer_unit: 'mm', mounting_depth: 800 });
    assert.equal(r1.status, 201, r1.text);
    assert.equal(r1.body.role.slug, 'core-racks');
    assert.deepEqual([r1.body.weight, r1.body.weight_unit.value, r1.body.max_weight, r1.body.outer_unit.value, r1.body.mounting_depth], [120.5, 'kg', 900, 'mm', 800]);
    const r2 = (await h.post('/api/dcim/racks/', { name: 'R2', site: b.site.id })).body;
    assert.deepEqual((await h.post('/api/dcim/racks/', { name: 'R3', site: b.site.id, weight: 5 })).body, { non_field_errors: ['Must specify a unit when setting a weight'] });
    assert.deepEqual((await h.post('/api/dcim/racks/', { name: 'R3', site: b.site.id, outer_width: 5 })).body, { non_field_errors: ['Must specify a unit when setting an outer dimension'] });
    assert.deepEqual((await h.post('/api/dcim/racks/', { name: 'R3', site: b.site.id, max_weight: 5 })).body, { non_field_errors: ['Must specify a unit when setting a maximum weight'] });
    const racks = (q: string) => h.get(`/api/dcim/racks/?site_id=${b.site.id}&${q}`).then(ids);
    assert.deepEqual(await racks('role=core-racks'), [r1.body.id]);
    assert.deepEqual(await racks(`role_id=${role.body.id}`), [r1.body.id]);
    assert.deepEqual(await racks('role_id=null'), [r2.id]);
    assert.deepEqual(await racks('role__n=core-racks'), [r2.id]);
    assert.deepEqual(await racks('weight__gte=100&max_weight=900&outer_unit=mm&mounting_depth__lt=1000'), [r1.body.id]);
    assert.deepEqual(await racks('weight__n=120.5'), [r2.id]);
    assert.equal((await h.get(`/api/dcim/rack-roles/${role.body.id}/`)).body.rack_count, 1);
    assert.equal((await h.delete(`/api/dcim/rack-roles/${role.body.id}/`)).status, 409);
    assert.deepEqual(ids(await h.get('/api/dcim/rack-roles/?color=ff0000')), [role.body.id]);
  });

  it('device types\' default platform, airflow, depth and weight; nested device roles', async () => {
    const h = api.http;
    const b = await seedBasics(api, 'dt');
    const platform = (await h.post('/api/dcim/platforms/', { name: 'IOS', slug: 'ios' })).body;
    const half = await h.post('/api/dcim/device-types/', { manufacturer: b.mfr.id, model: 'Half', slug: 'half', is_full_depth: false, default_platform: platform.id, airflow: 'front-to-rear', weight: 2, weight_unit: 'lb', exclude_from_utilization: true });
    assert.equal(half.status, 201, half.text);
    assert.deepEqual([half.body.is_full_depth, half.body.default_platform.id, half.body.airflow.value, half.body.weight, half.body.weight_unit.value], [false, platform.id, 'front-to-rear', 2, 'lb']);
    const types = (q: string) => h.get(`/api/dcim/device-types/?manufacturer_id=${b.mfr.id}&${q}`).then(ids);
    assert.deepEqual(await types('is_full_depth=false'), [half.body.id]);
    assert.deepEqual(await types('default_platform=ios'), [half.body.id]);
    assert.deepEqual(await types('default_platform_id=null'), [b.type.id]);
    assert.deepEqual(await types('airflow=front-to-rear&exclude_from_utilization=true&weight_unit=lb'), [half.body.id]);
    // Two half-depth devices share a unit on opposite faces; a full-depth one takes both (Rack.get_available_units()).
    const rack = (await h.post('/api/dcim/racks/', { name: 'RD', site: b.site.id })).body;
    const dev = (name: string, type: number, face: string) => h.post('/api/dcim/devices/', { name, site: b.site.id, device_type: type, role: b.role.id, rack: rack.id, position: 10, face });
    const front = await dev('hf', half.body.id, 'front');
    assert.equal(front.status, 201, front.text);
    assert.equal(front.body.platform.id, platform.id, 'a new device takes its type\'s default platform');
    assert.equal(front.body.airflow.value, 'front-to-rear');
    assert.equal((await dev('hr', half.body.id, 'rear')).status, 201);
    assert.equal((await dev('full', b.type.id, 'front')).status, 400);
    assert.deepEqual(ids(await h.get(`/api/dcim/devices/?site_id=${b.site.id}&is_full_depth=false`)).length, 2);
    assert.deepEqual((await h.post('/api/dcim/device-types/', { manufacturer: b.mfr.id, model: 'W', slug: 'w', weight: 1 })).body, { non_field_errors: ['Must specify a unit when setting a weight'] });
    const child = await h.post('/api/dcim/device-roles/', { name: 'Edge', slug: 'edge', parent: b.role.id });
    assert.equal(child.status, 201, child.text);
    const grandchild = (await h.post('/api/dcim/device-roles/', { name: 'Edge2', slug: 'edge2', parent: child.body.id })).body;
    assert.deepEqual(ids(await h.get(`/api/dcim/device-roles/?parent_id=${b.role.id}`)), [child.body.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/device-roles/?ancestor=${b.role.slug}`)), [child.body.id, grandchild.id]);
    assert.deepEqual((await h.patch(`/api/dcim/device-roles/${b.role.id}/`, { parent: grandchild.id })).body, { parent: ['Cannot assign self or child as parent.'] });
  });

  it('interfaces\' module, bridge, VRF, WWN, PoE and wireless fields; components\' module', async () => {
    const h = api.http;
    const b = await seedBasics(api, 'if');
    const dev = (await h.post('/api/dcim/devices/', { name: 'ap1', site: b.site.id, device_type: b.type.id, role: b.role.id })).body;
    const mt = (await h.post('/api/dcim/module-types/', { manufacturer: b.mfr.id, model: 'LC' })).body;
    const bay = (await h.post('/api/dcim/module-bays/', { device: dev.id, name: 'slot1' })).body;
    const mod = (await h.post('/api/dcim/modules/', { device: dev.id, module_bay: bay.id, module_type: mt.id })).body;
    const vrf = (await h.post('/api/ipam/vrfs/', { name: 'blue', rd: '65000:9' })).body;
    const br = (await h.post('/api/dcim/interfaces/', { device: dev.id, name: 'br0', type: 'bridge' })).body;
    const radio = await h.post('/api/dcim/interfaces/', { device: dev.id, name: 'wlan0', type: 'ieee802.11ax', rf_role: 'ap', rf_channel: '5g-36-5180-20', tx_power: 20, bridge: br.id, vrf: vrf.id, module: mod.id });
    assert.equal(radio.status, 201, radio.text);
    assert.deepEqual([radio.body.rf_role.value, radio.body.rf_channel.label, radio.body.rf_channel_frequency, radio.body.rf_channel_width, radio.body.tx_power, radio.body.bridge.id, radio.body.vrf.id, radio.body.module.id], ['ap', '36 (5180/20 MHz)', 5180, 20, 20, br.id, vrf.id, mod.id]);
    const eth = await h.post('/api/dcim/interfaces/', { device: dev.id, name: 'eth0', type: '1000base-t', poe_mode: 'pse', poe_type: 'type2-ieee802.3at', wwn: '50-00-00-00-00-00-00-0a' });
    assert.equal(eth.status, 201, eth.text);
    assert.equal(eth.body.wwn, '50:00:00:00:00:00:00:0A');
    const bad: Array<[object, object]> = [
      [{ name: 'x', type: '1000base-t', rf_role: 'ap' }, { rf_role: ['Wireless role may be set only on wireless interfaces.'] }],
      [{ name: 'x', type: 'virtual', poe_mode: 'pd' }, { poe_mode: ['Virtual interfaces cannot have a PoE mode.'] }],
      [{ name: 'x', type: '1000base-t', poe_type: 'type1-ieee802.3af' }, { poe_type: ['Must specify PoE mode when designating a PoE type.'] }],
      [{ name: 'x', type: 'ieee802.11ax', rf_channel: '5g-36-5180-20', rf_channel_frequency: 5000 }, { rf_channel_frequency: ['Cannot specify custom frequency with channel selected.'] }],
      [{ name: 'x', type: '1000base-t', wwn: 'nope' }, { wwn: ['Invalid WWN format: nope'] }],
      [{ name: 'x', type: '1000base-t', tx_power: 128 }, { tx_power: ['Ensure this value is less than or equal to 127.'] }],
    ];
    for (const [body, errors] of bad) assert.deepEqual((await h.post('/api/dcim/interfaces/', { device: dev.id, ...body })).body, errors, JSON.stringify(body));
    const list = (q: string) => h.get(`/api/dcim/interfaces/?device_id=${dev.id}&${q}`).then((r) => r.body.results.map((o: any) => o.name));
    assert.deepEqual(await list('rf_role=ap'), ['wlan0']);
    assert.deepEqual(await list('rf_channel=5g-36-5180-20&rf_channel_frequency=5180&rf_channel_width__gte=20&tx_power__lt=21'), ['wlan0']);
    assert.deepEqual(await list('poe_mode=pse&poe_type=type2-ieee802.3at'), ['eth0']);
    assert.deepEqual(await list('wwn=50:00:00:00:00:00:00:0a'), ['eth0']);
    assert.deepEqual(await list(`bridge_id=${br.id}`), ['wlan0']);
    assert.deepEqual(await list('bridge_id=null'), ['br0', 'eth0']);
    assert.deepEqual(await list(`vrf=65000:9`), ['wlan0']);
    assert.deepEqual(await list(`vrf_id=null`), ['br0', 'eth0']);
    assert.deepEqual(await list(`module_id=${mod.id}`), ['wlan0']);
    assert.deepEqual(await list('tx_power__n=20'), ['br0', 'eth0']);
    const cp = (await h.post('/api/dcim/console-ports/', { device: dev.id, name: 'con', module: mod.id })).body;
    assert.deepEqual((await h.get(`/api/dcim/console-ports/?module_id=${mod.id}`)).body.results.map((o: any) => o.id), [cp.id]);
    // Deleting the module deletes its components (CASCADE); the bridge is cleared from the interfaces on it (SET_NULL).
    assert.equal((await h.delete(`/api/dcim/modules/${mod.id}/`)).status, 204);
    assert.deepEqual(await list(''), ['br0', 'eth0']);
    assert.equal((await h.get(`/api/dcim/console-ports/${cp.id}/`)).status, 404);
  });

  it('scopes of prefixes, VLAN groups and clusters (cached region/site group/site/location of clusters)', async () => {
    const h = api.http;
    const region = (await h.post('/api/dcim/regions/', { name: 'Europe', slug: 'europe' })).body;
    const region2 = (await h.post('/api/dcim/regions/', { name: 'Asia', slug: 'asia' })).body;
    const site = (await h.post('/api/dcim/sites/', { name: 'Paris', slug: 'paris', region: region.id })).body;
    const loc = (await h.post('/api/dcim/locations/', { name: 'Hall', slug: 'hall', site: site.id })).body;
    const ctype = (await h.post('/api/virtualization/cluster-types/', { name: 'VMware', slug: 'vmware' })).body;
    const c1 = await h.post('/api/virtualization/clusters/', { name: 'c1', type: ctype.id, scope_type: 'dcim.location', scope_id: loc.id });
    assert.equal(c1.status, 201, c1.text);
    assert.deepEqual([c1.body.scope_type, c1.body.scope_id, c1.body.scope.slug], ['dcim.location', loc.id, 'hall']);
    const c2 = (await h.post('/api/virtualization/clusters/', { name: 'c2', type: ctype.id })).body;
    assert.equal(c2.scope, null);
    const clusters = (q: string) => h.get(`/api/virtualization/clusters/?type_id=${ctype.id}&${q}`).then(ids);
    assert.deepEqual(await clusters('region=europe'), [c1.body.id]);
    assert.deepEqual(await clusters(`site_id=${site.id}`), [c1.body.id]);
    assert.deepEqual(await clusters('location=hall&scope_type=dcim.location'), [c1.body.id]);
    assert.deepEqual(await clusters('site_id=null'), [c2.id]);
    assert.deepEqual(await clusters(`scope_id=${loc.id}`), [c1.body.id]);
    // The cached region follows the site's region.
    assert.equal((await h.patch(`/api/dcim/sites/${site.id}/`, { region: region2.id })).status, 200);
    assert.deepEqual(await clusters('region=asia'), [c1.body.id]);
    assert.deepEqual(await clusters('region=europe'), []);
    assert.deepEqual((await h.post('/api/virtualization/clusters/', { name: 'c3', type: ctype.id, scope_type: 'dcim.site' })).body, { scope: ['Please select a site.'] });
    assert.deepEqual((await h.post('/api/virtualization/clusters/', { name: 'c3', type: ctype.id, scope_type: 'dcim.device', scope_id: 1 })).body, { scope_type: ['Invalid content type: dcim.device'] });
    assert.deepEqual((await h.post('/api/virtualization/clusters/', { name: 'c3', type: ctype.id, scope_type: 'dcim.site', scope_id: 99999 })).body, { scope_id: ['Related object not found using the provided numeric ID: 99999'] });
    assert.equal((await h.delete(`/api/dcim/locations/${loc.id}/`)).status, 409);
    const p = await h.post('/api/ipam/prefixes/', { prefix: '10.99.0.0/24', scope_type: 'dcim.site', scope_id: site.id });
    assert.equal(p.status, 201, p.text);
    assert.equal(p.body.scope.slug, 'paris');
    assert.deepEqual(ids(await h.get(`/api/ipam/prefixes/?scope_id=${site.id}&scope_type=dcim.site`)), [p.body.id]);
    const tenant = (await h.post('/api/tenancy/tenants/', { name: 'T1', slug: 't1' })).body;
    const g = await h.post('/api/ipam/vlan-groups/', { name: 'VG', slug: 'vg', scope_type: 'virtualization.cluster', scope_id: c2.id, tenant: tenant.id });
    assert.equal(g.status, 201, g.text);
    assert.equal(g.body.scope.name, 'c2');
    assert.deepEqual(ids(await h.get(`/api/ipam/vlan-groups/?cluster=${c2.id}`)), [g.body.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/vlan-groups/?site=${c2.id}`)), []);
    assert.deepEqual(ids(await h.get('/api/ipam/vlan-groups/?tenant=t1&scope_type=virtualization.cluster')), [g.body.id]);
    assert.deepEqual((await h.get('/api/ipam/vlan-groups/?rack=x')).body, { rack: ['Enter a number.'] });
    assert.deepEqual((await h.post('/api/ipam/vlan-groups/', { name: 'VG2', slug: 'vg2', scope_id: 1 })).body, { non_field_errors: ['Cannot set scope_id without scope_type.'] });
  });

  it('NAT inside/outside addresses, VRF route targets, site and provider ASNs', async () => {
    const h = api.http;
    const inside = (await h.post('/api/ipam/ip-addresses/', { address: '10.77.0.5/24' })).body;
    const outside = await h.post('/api/ipam/ip-addresses/', { address: '198.51.100.5/24', nat_inside: inside.id });
    assert.equal(outside.status, 201, outside.text);
    assert.equal(outside.body.nat_inside.id, inside.id);
    assert.deepEqual((await h.get(`/api/ipam/ip-addresses/${inside.id}/`)).body.nat_outside.map((a: any) => a.address), ['198.51.100.5/24']);
    assert.deepEqual(ids(await h.get(`/api/ipam/ip-addresses/?nat_inside_id=${inside.id}`)), [outside.body.id]);
    assert.ok(!ids(await h.get('/api/ipam/ip-addresses/?nat_inside_id=null&limit=1000')).includes(outside.body.id));
    assert.equal((await h.delete(`/api/ipam/ip-addresses/${inside.id}/`)).status, 204);
    assert.equal((await h.get(`/api/ipam/ip-addresses/${outside.body.id}/`)).body.nat_inside, null);
    const rt1 = (await h.post('/api/ipam/route-targets/', { name: '65000:100' })).body;
    const rt2 = (await h.post('/api/ipam/route-targets/', { name: '65000:200' })).body;
    const vrf = await h.post('/api/ipam/vrfs/', { name: 'red', rd: '65000:1', import_targets: [rt1.id, rt2.id], export_targets: [rt1.id] });
    assert.equal(vrf.status, 201, vrf.text);
    assert.deepEqual(vrf.body.import_targets.map((t: any) => t.name), ['65000:100', '65000:200']);
    const plain = (await h.post('/api/ipam/vrfs/', { name: 'plain', rd: '65000:2' })).body;
    assert.deepEqual(ids(await h.get('/api/ipam/vrfs/?import_target=65000:200')), [vrf.body.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/vrfs/?export_target_id=${rt1.id}`)), [vrf.body.id]);
    assert.ok(ids(await h.get('/api/ipam/vrfs/?export_target_id=null')).includes(plain.id));
    assert.deepEqual(ids(await h.get('/api/ipam/route-targets/?importing_vrf=65000:1')), [rt1.id, rt2.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/route-targets/?exporting_vrf_id=${vrf.body.id}`)), [rt1.id]);
    assert.deepEqual((await h.get('/api/ipam/route-targets/?exporting_vrf=nope')).body, { exporting_vrf: ['Select a valid choice. nope is not one of the available choices.'] });
    const rir = (await h.post('/api/ipam/rirs/', { name: 'RIPE', slug: 'ripe' })).body;
    const asn = (await h.post('/api/ipam/asns/', { asn: 64512, rir: rir.id })).body;
    const group = (await h.post('/api/dcim/site-groups/', { name: 'Metro', slug: 'metro' })).body;
    const site = await h.post('/api/dcim/sites/', { name: 'ASN site', slug: 'asn-site', group: group.id, asns: [asn.id] });
    assert.equal(site.status, 201, site.text);
    assert.deepEqual(site.body.asns.map((a: any) => a.asn), [64512]);
    const provider = (await h.post('/api/circuits/providers/', { name: 'Transit', slug: 'transit', asns: [asn.id] })).body;
    assert.deepEqual(ids(await h.get('/api/dcim/sites/?asn=64512')), [site.body.id]);
    assert.deepEqual(ids(await h.get(`/api/circuits/providers/?asn_id=${asn.id}`)), [provider.id]);
    assert.deepEqual((await h.get('/api/dcim/sites/?asn=x')).body, { asn: ['Select a valid choice. x is not one of the available choices.'] });
    for (const q of ['site=asn-site', `site_id=${site.body.id}`, 'site_group=metro', `site_group_id=${group.id}`, 'provider=transit', `provider_id=${provider.id}`]) assert.deepEqual(ids(await h.get(`/api/ipam/asns/?${q}`)), [asn.id], q);
    const a = (await h.get(`/api/ipam/asns/${asn.id}/`)).body;
    assert.deepEqual([a.site_count, a.provider_count], [1, 1]);
  });

  it('circuit terminations\' cached region/site group/location and circuits by them', async () => {
    const h = api.http;
    const region = (await h.post('/api/dcim/regions/', { name: 'Americas', slug: 'americas' })).body;
    const sub = (await h.post('/api/dcim/regions/', { name: 'US', slug: 'us', parent: region.id })).body;
    const site = (await h.post('/api/dcim/sites/', { name: 'NYC', slug: 'nyc', region: sub.id })).body;
    const loc = (await h.post('/api/dcim/locations/', { name: 'MMR', slug: 'mmr', site: site.id })).body;
    const provider = (await h.post('/api/circuits/providers/', { name: 'Carrier', slug: 'carrier' })).body;
    const ctype = (await h.post('/api/circuits/circuit-types/', { name: 'Transit', slug: 'transit' })).body;
    const [c1, c2] = (await h.post('/api/circuits/circuits/', [{ cid: 'x1', provider: provider.id, type: ctype.id }, { cid: 'x2', provider: provider.id, type: ctype.id }])).body;
    const t = await h.post('/api/circuits/circuit-terminations/', { circuit: c1.id, term_side: 'A', termination_type: 'dcim.location', termination_id: loc.id });
    assert.equal(t.status, 201, t.text);
    const terms = (q: string) => h.get(`/api/circuits/circuit-terminations/?provider=carrier&${q}`).then(ids);
    assert.deepEqual(await terms('region=americas'), [t.body.id]);
    assert.deepEqual(await terms(`location_id=${loc.id}`), [t.body.id]);
    assert.deepEqual(await terms('site_group_id=null'), [t.body.id]);
    const circuits = (q: string) => h.get(`/api/circuits/circuits/?provider_id=${provider.id}&${q}`).then(ids);
    assert.deepEqual(await circuits(`region_id=${region.id}`), [c1.id]);
    assert.deepEqual(await circuits(`location_id=${loc.id}`), [c1.id]);
    assert.deepEqual(await circuits('region=null'), [c2.id]);
    const other = (await h.post('/api/circuits/providers/', { name: 'Other', slug: 'other-carrier' })).body;
    const providers = (q: string) => h.get(`/api/circuits/providers/?id=${provider.id}&id=${other.id}&${q}`).then(ids);
    assert.deepEqual(await providers('region=americas'), [provider.id]);
    assert.deepEqual(await providers(`site_id=${site.id}`), [provider.id]);
    assert.deepEqual(await providers('site=nyc&site_group_id=null'), [provider.id]);
    assert.deepEqual(await providers('region_id=null'), [provider.id, other.id]);
  });

  it('prefix and VLAN roles, prefixes by VLAN group, Q-in-Q VLANs', async () => {
    const h = api.http;
    const role = (await h.post('/api/ipam/roles/', { name: 'Mgmt', slug: 'mgmt' })).body;
    const group = (await h.post('/api/ipam/vlan-groups/', { name: 'G1', slug: 'g1' })).body;
    const vlan = await h.post('/api/ipam/vlans/', { vid: 100, name: 'v100', group: group.id, role: role.id });
    assert.equal(vlan.status, 201, vlan.text);
    assert.equal(vlan.body.role.slug, 'mgmt');
    const p1 = await h.post('/api/ipam/prefixes/', { prefix: '10.88.0.0/24', role: role.id, vlan: vlan.body.id });
    assert.equal(p1.status, 201, p1.text);
    const p2 = (await h.post('/api/ipam/prefixes/', { prefix: '10.88.1.0/24' })).body;
    const prefixes = (q: string) => h.get(`/api/ipam/prefixes/?within=10.88.0.0/16&${q}`).then(ids);
    assert.deepEqual(await prefixes('role=mgmt'), [p1.body.id]);
    assert.deepEqual(await prefixes(`role_id=${role.id}`), [p1.body.id]);
    assert.deepEqual(await prefixes('role_id=null'), [p2.id]);
    assert.deepEqual(await prefixes('vlan_group=g1'), [p1.body.id]);
    assert.deepEqual(await prefixes(`vlan_group_id=${group.id}`), [p1.body.id]);
    assert.deepEqual(await prefixes('vlan_group_id=null'), [p2.id]);
    assert.deepEqual((await h.get(`/api/ipam/roles/${role.id}/`)).body.prefix_count, 1);
    const svlan = (await h.post('/api/ipam/vlans/', { vid: 200, name: 'svc', qinq_role: 'svlan' })).body;
    const cvlan = await h.post('/api/ipam/vlans/', { vid: 300, name: 'cust', qinq_role: 'cvlan', qinq_svlan: svlan.id });
    assert.equal(cvlan.status, 201, cvlan.text);
    assert.deepEqual((await h.post('/api/ipam/vlans/', { vid: 300, name: 'cust', qinq_role: 'cvlan', qinq_svlan: svlan.id })).body, { non_field_errors: ['The fields qinq_svlan, vid must make a unique set.', 'The fields qinq_svlan, name must make a unique set.'] });
    assert.deepEqual((await h.post('/api/ipam/vlans/', { vid: 301, name: 'c2', qinq_role: 'cvlan' })).body, { qinq_role: ['A Q-in-Q customer VLAN must be assigned to a service VLAN.'] });
    assert.deepEqual((await h.post('/api/ipam/vlans/', { vid: 302, name: 'c3', qinq_svlan: svlan.id })).body, { qinq_svlan: ['Only Q-in-Q customer VLANs maybe assigned to a service VLAN.'] });
    assert.deepEqual(ids(await h.get('/api/ipam/vlans/?qinq_svlan_vid=200')), [cvlan.body.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/vlans/?qinq_svlan_id=${svlan.id}`)), [cvlan.body.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/vlans/?qinq_role=svlan')), [svlan.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/vlans/?role=mgmt')), [vlan.body.id]);
    // Deleting the role leaves the prefix and VLAN without one (SET_NULL).
    assert.equal((await h.delete(`/api/ipam/roles/${role.id}/`)).status, 204);
    assert.equal((await h.get(`/api/ipam/prefixes/${p1.body.id}/`)).body.role, null);
  });
});
