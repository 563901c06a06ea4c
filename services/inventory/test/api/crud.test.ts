import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

forEachStorage('inventory API: CRUD and representations', (storage) => {
  let api: Api;
  let basics: Awaited<ReturnType<typeof seedBasics>>;
  before(async () => {
    api = await startApi(storage);
    basics = await seedBasics(api);
  });
  after(() => api.close());

  it('creates, reads, updates and deletes a site with NetBox fields', async () => {
    const h = api.http;
    let r = await h.post('/api/dcim/sites/', { name: 'Branch', slug: 'branch', status: 'planned', description: 'd', comments: 'c', custom_fields: { rack_count: 3 } });
    assert.equal(r.status, 201);
    const s = r.body;
    assert.deepEqual(Object.keys(s), [
      'id', 'url', 'display_url', 'display', 'name', 'slug', 'status', 'region', 'group', 'tenant', 'facility', 'time_zone', 'physical_address', 'shipping_address', 'latitude', 'longitude',
      'description', 'comments', 'asns', 'tags', 'custom_fields', 'created', 'last_updated',
      'circuit_count', 'device_count', 'prefix_count', 'rack_count', 'virtualmachine_count', 'vlan_count',
    ]);
    assert.equal(s.url, `${api.server.url}/api/dcim/sites/${s.id}/`);
    assert.equal(s.display, 'Branch');
    assert.deepEqual(s.status, { value: 'planned', label: 'Planned' });
    assert.deepEqual(s.custom_fields, { rack_count: 3 });
    assert.match(s.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    assert.ok(r.headers.get('x-request-id'));

    r = await h.get(`/api/dcim/sites/${s.id}/`);
    assert.deepEqual(r.body, s);

    r = await h.patch(`/api/dcim/sites/${s.id}/`, { status: 'active', custom_fields: { owner: 'ops' }, unknown_field: 1 });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.status, { value: 'active', label: 'Active' });
    assert.deepEqual(r.body.custom_fields, { rack_count: 3, owner: 'ops' }, 'custom fields merge as NetBox does');
    assert.equal(r.body.description, 'd');

    // PUT needs the required fields; optional ones absent keep their values.
    r = await h.put(`/api/dcim/sites/${s.id}/`, { name: 'Branch 2' });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { slug: ['This field is required.'] });
    r = await h.put(`/api/dcim/sites/${s.id}/`, { name: 'Branch 2', slug: 'branch-2' });
    assert.equal(r.status, 200);
    assert.equal(r.body.display, 'Branch 2');
    assert.equal(r.body.comments, 'c');

    r = await h.delete(`/api/dcim/sites/${s.id}/`);
    assert.equal(r.status, 204);
    assert.equal(r.text, '');
    r = await h.get(`/api/dcim/sites/${s.id}/`);
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, { detail: 'Not found.' });
    r = await h.delete(`/api/dcim/sites/${s.id}/`);
    assert.equal(r.status, 404);
  });

  it('nests brief related objects and choice fields in devices', async () => {
    const h = api.http;
    const tag = (await h.post('/api/extras/tags/', { name: 'Core', slug: 'core', color: 'FF0000' })).body;
    assert.equal(tag.color, 'ff0000');
    const r = await h.post('/api/dcim/devices/', {
      name: 'edge1',
      site: { slug: basics.site.slug },
      device_type: basics.type.id,
      role: String(basics.role.id),
      status: 'staged',
      serial: 'SN1',
      tags: [{ name: 'Core' }],
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const d = r.body;
    assert.deepEqual(Object.keys(d), [
      'id', 'url', 'display_url', 'display', 'name', 'device_type', 'role', 'site', 'status', 'serial', 'platform', 'tenant', 'location', 'rack', 'position', 'face',
      'asset_tag', 'airflow', 'latitude', 'longitude', 'primary_ip4', 'primary_ip6', 'primary_ip', 'oob_ip', 'cluster', 'virtual_chassis', 'vc_position', 'vc_priority',
      'config_template', 'config_context', 'local_context_data', 'description', 'comments', 'tags', 'custom_fields', 'created', 'last_updated',
      'console_port_count', 'console_server_port_count', 'power_port_count', 'power_outlet_count', 'interface_count', 'front_port_count', 'rear_port_count',
      'device_bay_count', 'module_bay_count', 'inventory_item_count', 'parent_device',
    ]);
    assert.deepEqual(d.site, { id: basics.site.id, url: basics.site.url, display: 'Site', name: 'Site', slug: 'site', description: '' });
    assert.deepEqual(d.device_type, {
      id: basics.type.id,
      url: basics.type.url,
      display: 'X',
      manufacturer: { id: basics.mfr.id, url: basics.mfr.url, display: 'Acme', name: 'Acme', slug: 'acme', description: '', devicetype_count: 1 },
      model: 'X',
      slug: 'x',
      description: '',
      device_count: 1,
    });
    assert.deepEqual(d.role, {
      id: basics.role.id,
      url: basics.role.url,
      display: 'Router',
      name: 'Router',
      slug: 'router',
      description: '',
      device_count: 1,
      virtualmachine_count: 0,
      _depth: 0,
    });
    assert.deepEqual(d.status, { value: 'staged', label: 'Staged' });
    assert.deepEqual(d.tags, [{ id: tag.id, url: tag.url, display: 'Core', name: 'Core', slug: 'core', color: 'ff0000' }]);

    const unnamed = (await h.post('/api/dcim/devices/', { site: basics.site.id, device_type: basics.type.id, role: basics.role.id })).body;
    assert.equal(unnamed.name, null);
    assert.equal(unnamed.display, `Acme X (${unnamed.id})`);
    assert.deepEqual(unnamed.status, { value: 'active', label: 'Active' });

    const brief = await h.get(`/api/dcim/devices/${d.id}/?brief=true`);
    assert.deepEqual(brief.body, { id: d.id, url: d.url, display: 'edge1', name: 'edge1', description: '' });
    const tagged = await h.get(`/api/extras/tags/${tag.id}/`);
    assert.equal(tagged.body.tagged_items, 1);
  });

  it('handles interfaces and IP addresses with validation and assignment', async () => {
    const h = api.http;
    const dev = (await h.post('/api/dcim/devices/', { name: 'sw1', site: basics.site.id, device_type: basics.type.id, role: basics.role.id })).body;
    let r = await h.post('/api/dcim/interfaces/', { device: dev.id, name: 'ge-0/0/0', type: '10gbase-x-sfpp', mtu: 9000, mac_address: '00:1a:2b:3c:4d:5e', enabled: 'false' });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const ifc = r.body;
    assert.deepEqual(ifc.type, { value: '10gbase-x-sfpp', label: 'SFP+ (10GE)' });
    assert.equal(ifc.mac_address, '00:1A:2B:3C:4D:5E');
    assert.equal(ifc.enabled, false);
    assert.deepEqual(ifc.device, { id: dev.id, url: dev.url, display: 'sw1', name: 'sw1', description: '' });

    r = await h.post('/api/dcim/interfaces/', { device: dev.id, name: 'ge-0/0/0', type: 'virtual' });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { non_field_errors: ['The fields device, name must make a unique set.'] });
    r = await h.post('/api/dcim/interfaces/', { device: dev.id, name: 'x', type: 'virtual', mtu: 0, mac_address: 'zz' });
    assert.deepEqual(r.body, { mtu: ['Ensure this value is greater than or equal to 1.'], mac_address: ['Invalid MAC address format: zz'] });

    r = await h.post('/api/ipam/ip-addresses/', { address: '2001:DB8:0:0::1/64', status: 'dhcp', dns_name: 'sw1.example.com', assigned_object_type: 'dcim.interface', assigned_object_id: ifc.id });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const ip = r.body;
    assert.equal(ip.address, '2001:db8::1/64');
    assert.deepEqual(ip.family, { value: 6, label: 'IPv6' });
    assert.deepEqual(ip.status, { value: 'dhcp', label: 'DHCP' });
    assert.equal(ip.assigned_object.id, ifc.id);
    assert.equal(ip.assigned_object.device.name, 'sw1');

    r = await h.post('/api/ipam/ip-addresses/', { address: '10.0.0.300/24' });
    assert.deepEqual(r.body, { address: ['Invalid IP address format: 10.0.0.300/24'] });
    r = await h.post('/api/ipam/ip-addresses/', { address: '10.0.0.1/33' });
    assert.deepEqual(r.body, { address: ['Invalid IP address format: 10.0.0.1/33'] });
    r = await h.post('/api/ipam/ip-addresses/', { address: '10.0.0.1/0' });
    assert.deepEqual(r.body, { address: ['Cannot create IP address with /0 mask.'] });
    r = await h.post('/api/ipam/ip-addresses/', { address: '10.0.0.1' });
    assert.equal(r.body.address, '10.0.0.1/32');
    r = await h.post('/api/ipam/ip-addresses/', { address: '10.0.0.2/24', assigned_object_type: 'dcim.interface', assigned_object_id: 999999 });
    assert.deepEqual(r.body, { assigned_object_id: ['Related object not found using the provided numeric ID: 999999'] });
    r = await h.post('/api/ipam/ip-addresses/', { address: '10.0.0.2/24', assigned_object_id: ifc.id });
    assert.deepEqual(r.body, { assigned_object_type: ['This field is required when assigned_object_id is set.'] });

    // Deleting the device removes its interfaces and their addresses (NetBox cascades).
    r = await h.delete(`/api/dcim/devices/${dev.id}/`);
    assert.equal(r.status, 204);
    assert.equal((await h.get(`/api/dcim/interfaces/${ifc.id}/`)).status, 404);
    assert.equal((await h.get(`/api/ipam/ip-addresses/${ip.id}/`)).status, 404);
  });

  it('covers manufacturers, device types, roles and tags', async () => {
    const h = api.http;
    const m = (await h.post('/api/dcim/manufacturers/', { name: 'Juniper', slug: 'juniper' })).body;
    let r = await h.post('/api/dcim/device-types/', { manufacturer: { name: 'Juniper' }, model: 'MX204', slug: 'mx204', u_height: '1.5' });
    assert.equal(r.status, 201);
    assert.equal(r.body.u_height, 1.5);
    r = await h.post('/api/dcim/device-types/', { manufacturer: m.id, model: 'MX204', slug: 'mx204b', u_height: 0.3 });
    assert.deepEqual(r.body, { u_height: ['U height must be in increments of 0.5 rack units.'] });
    r = await h.post('/api/dcim/device-types/', { manufacturer: m.id, model: 'MX204', slug: 'mx204b' });
    assert.deepEqual(r.body, { non_field_errors: ['The fields manufacturer, model must make a unique set.'] });
    r = await h.post('/api/dcim/device-roles/', { name: 'Leaf', slug: 'leaf', color: 'red' });
    assert.deepEqual(r.body, { color: ['Enter a valid hexadecimal RGB color code.'] });
    r = await h.post('/api/dcim/device-roles/', { name: 'Leaf', slug: 'leaf' });
    assert.equal(r.body.color, '9e9e9e');
    r = await h.patch(`/api/dcim/device-roles/${r.body.id}/`, { color: '00FF00' });
    assert.equal(r.body.color, '00ff00');
    // A manufacturer with device types is protected.
    r = await h.delete(`/api/dcim/manufacturers/${m.id}/`);
    assert.equal(r.status, 409);
    assert.equal(r.body.detail, 'Unable to delete object. 1 dependent objects were found: MX204');
    r = await h.post('/api/extras/tags/', { name: 'Prod', slug: 'prod' });
    assert.equal(r.status, 201);
    // NetBox 4.3's TagSerializer order (weight and object_types modelled since issue 24).
    assert.deepEqual(Object.keys(r.body), ['id', 'url', 'display_url', 'display', 'name', 'slug', 'color', 'description', 'weight', 'object_types', 'tagged_items', 'created', 'last_updated']);
    assert.deepEqual([r.body.weight, r.body.object_types], [1000, []]);
  });

  it('answers /api/status/ and the API roots', async () => {
    const r = await api.http.get('/api/status/');
    assert.equal(r.status, 200);
    assert.equal(typeof r.body['netbox-version'], 'string');
    const root = await api.http.get('/api/');
    assert.equal(root.body.dcim, `${api.server.url}/api/dcim/`);
    const dcim = await api.http.get('/api/dcim/');
    assert.equal(dcim.body.devices, `${api.server.url}/api/dcim/devices/`);
  });
});
