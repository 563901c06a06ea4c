import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, startApiProcesses, type Api } from './helpers.ts';

/** Virtual chassis, device bays and their templates, VLAN group VID ranges and available-vlans (NetBox 4.3's shapes and messages). */
forEachStorage('inventory API: virtual chassis, device bays, available VLANs', (storage) => {
  let api: Api;
  let w: Record<string, any>;
  const ok = (r: { status: number; body: any }, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body;
  };
  const ids = (r: { body: any }) => r.body.results.map((x: any) => x.id).sort((a: number, b: number) => a - b);
  before(async () => {
    api = await startApi(storage);
    w = await seedBasics(api, 'V');
  });
  after(() => api.close());

  const device = async (name: string, type = w.type.id, extra: Record<string, unknown> = {}) => ok(await api.http.post('/api/dcim/devices/', { name, site: w.site.id, device_type: type, role: w.role.id, ...extra }));

  it('virtual chassis: the master becomes member 1, positions are unique, the master stays a member; filters; delete releases members', async () => {
    const h = api.http;
    const [d1, d2, d3] = [await device('sw1'), await device('sw2'), await device('sw3')];
    const e1 = ok(await h.post('/api/dcim/interfaces/', { device: d1.id, name: 'eth0', type: '1000base-t' }));
    const m1 = ok(await h.post('/api/dcim/interfaces/', { device: d1.id, name: 'mgmt0', type: '1000base-t', mgmt_only: true }));
    const e2 = ok(await h.post('/api/dcim/interfaces/', { device: d2.id, name: 'eth0', type: '1000base-t' }));
    const m2 = ok(await h.post('/api/dcim/interfaces/', { device: d2.id, name: 'mgmt0', type: '1000base-t', mgmt_only: true }));
    const before = api.events.length;
    const vc = ok(await h.post('/api/dcim/virtual-chassis/', { name: 'stack1', domain: 'st1', master: d1.id }));
    assert.equal(vc.master.id, d1.id);
    assert.equal(vc.member_count, 1);
    assert.deepEqual(vc.members.map((m: any) => [m.id, m.name]), [[d1.id, 'sw1']]);
    assert.deepEqual(Object.keys(vc.members[0]).sort(), ['display', 'id', 'name', 'url']);
    // One request: the chassis created and its master updated, both handed to the event pipeline.
    const events = api.events.slice(before).flat().map((e) => `${e.objectType}:${e.event}`);
    assert.deepEqual(events.sort(), ['dcim.device:updated', 'dcim.virtualchassis:created']);
    const got1 = ok(await h.get(`/api/dcim/devices/${d1.id}/`), 200);
    assert.equal(got1.virtual_chassis.id, vc.id);
    assert.deepEqual(Object.keys(got1.virtual_chassis).sort(), ['description', 'display', 'id', 'master', 'member_count', 'name', 'url']);
    assert.equal(got1.vc_position, 1);
    assert.equal(got1.vc_priority, null);
    const brief = ok(await h.get(`/api/dcim/virtual-chassis/${vc.id}/?brief=true`), 200);
    assert.deepEqual(Object.keys(brief).sort(), ['description', 'display', 'id', 'master', 'member_count', 'name', 'url']);

    assert.deepEqual((await h.patch(`/api/dcim/devices/${d2.id}/`, { virtual_chassis: vc.id })).body, { vc_position: ['A device assigned to a virtual chassis must have its position defined.'] });
    assert.deepEqual((await h.patch(`/api/dcim/devices/${d2.id}/`, { virtual_chassis: vc.id, vc_position: 1 })).body, { non_field_errors: ['The fields virtual_chassis, vc_position must make a unique set.'] });
    assert.deepEqual((await h.patch(`/api/dcim/devices/${d2.id}/`, { virtual_chassis: vc.id, vc_position: 2, vc_priority: 256 })).body, { vc_priority: ['Ensure this value is less than or equal to 255.'] });
    const got2 = ok(await h.patch(`/api/dcim/devices/${d2.id}/`, { virtual_chassis: vc.id, vc_position: 2, vc_priority: 10 }), 200);
    assert.equal(got2.vc_priority, 10);
    assert.equal(ok(await h.get(`/api/dcim/virtual-chassis/${vc.id}/`), 200).member_count, 2);
    assert.deepEqual((await h.patch(`/api/dcim/virtual-chassis/${vc.id}/`, { master: d3.id })).body, { master: ['The selected master (sw3) is not assigned to this virtual chassis.'] });
    assert.deepEqual((await h.patch(`/api/dcim/devices/${d1.id}/`, { virtual_chassis: null, vc_position: null })).body, {
      virtual_chassis: ['Device cannot be removed from virtual chassis stack1 because it is currently designated as its master.'],
    });
    assert.deepEqual((await h.post('/api/dcim/virtual-chassis/', { name: 'stack2', master: d1.id })).body, { master: ['virtual chassis with this master already exists.'] });
    assert.equal((await h.delete(`/api/dcim/devices/${d1.id}/`)).status, 409);

    // Filters on devices, interfaces (NetBox's vc_interfaces: management interfaces of other members excluded) and chassis.
    assert.deepEqual(ids(await h.get(`/api/dcim/devices/?virtual_chassis_id=${vc.id}`)), [d1.id, d2.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/devices/?virtual_chassis_member=false&name=sw3`)), [d3.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/devices/?vc_position__gte=2`)), [d2.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?virtual_chassis_member_id=${d2.id}`)), [e1.id, e2.id, m2.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?virtual_chassis_member=sw1`)), [e1.id, m1.id, e2.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?virtual_chassis_member_or_master_id=${d2.id}`)), [e2.id, m2.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?virtual_chassis_member_or_master_id=${d1.id}`)), [e1.id, m1.id, e2.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?virtual_chassis_id=${vc.id}`)), [e1.id, m1.id, e2.id, m2.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?virtual_chassis=stack1&mgmt_only=true`)), [m1.id, m2.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/virtual-chassis/?master_id=${d1.id}&site_id=${w.site.id}&q=st1`)), [vc.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/virtual-chassis/?member_count=2`)), [vc.id]);
    assert.deepEqual((await h.get('/api/dcim/virtual-chassis/?master_id=999999')).body, { master_id: ['Select a valid choice. 999999 is not one of the available choices.'] });

    // IP addresses by device: a master's include the other members' non-management interfaces (vc_interfaces).
    const ipE2 = ok(await h.post('/api/ipam/ip-addresses/', { address: '192.0.2.2/24', assigned_object_type: 'dcim.interface', assigned_object_id: e2.id }));
    const ipM2 = ok(await h.post('/api/ipam/ip-addresses/', { address: '192.0.2.3/24', assigned_object_type: 'dcim.interface', assigned_object_id: m2.id }));
    assert.deepEqual(ids(await h.get(`/api/ipam/ip-addresses/?device_id=${d1.id}`)), [ipE2.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?device=sw1')), [ipE2.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/ip-addresses/?device_id=${d2.id}`)), [ipE2.id, ipM2.id]);

    // A LAG may span members of one chassis, not other devices; such a LAG keeps the chassis from being deleted.
    const lag = ok(await h.post('/api/dcim/interfaces/', { device: d1.id, name: 'ae0', type: 'lag' }));
    ok(await h.patch(`/api/dcim/interfaces/${e2.id}/`, { lag: lag.id }), 200);
    const e3 = ok(await h.post('/api/dcim/interfaces/', { device: d3.id, name: 'eth0', type: '1000base-t' }));
    assert.deepEqual((await h.patch(`/api/dcim/interfaces/${e3.id}/`, { lag: lag.id })).body, { lag: ['The selected LAG interface (ae0) belongs to a different device (sw1).'] });
    const other = ok(await h.post('/api/dcim/virtual-chassis/', { name: 'stack9', master: d3.id }));
    assert.deepEqual((await h.patch(`/api/dcim/interfaces/${e3.id}/`, { lag: lag.id })).body, { lag: ['The selected LAG interface (ae0) belongs to sw1, which is not part of virtual chassis stack9.'] });
    assert.equal((await h.delete(`/api/dcim/virtual-chassis/${other.id}/`)).status, 204);
    const refused = await h.delete(`/api/dcim/virtual-chassis/${vc.id}/`);
    assert.equal(refused.status, 409);
    assert.deepEqual(refused.body, { detail: 'Unable to delete virtual chassis stack1. There are member interfaces which form a cross-chassis LAG interfaces.' });
    ok(await h.patch(`/api/dcim/interfaces/${e2.id}/`, { lag: null }), 200);

    // Deleting the chassis releases its members (each change-logged with the same request id).
    const del = await h.delete(`/api/dcim/virtual-chassis/${vc.id}/`);
    assert.equal(del.status, 204);
    for (const d of [d1, d2]) {
      const g = ok(await h.get(`/api/dcim/devices/${d.id}/`), 200);
      assert.deepEqual([g.virtual_chassis, g.vc_position, g.vc_priority], [null, null, null]);
    }
    const log = ok(await h.get(`/api/core/object-changes/?changed_object_type=dcim.virtualchassis&changed_object_id=${vc.id}&action=delete`), 200).results[0];
    const members = ok(await h.get(`/api/core/object-changes/?request_id=${log.request_id}&changed_object_type=dcim.device`), 200).results;
    assert.deepEqual(members.map((c: any) => c.changed_object_id).sort((a: number, b: number) => a - b), [d1.id, d2.id]);
    assert.equal(members[0].postchange_data.virtual_chassis, null);
  });

  it('device bays: parent types only, templates become bays of new devices, one bay per child, parent_device, moves follow the parent', async () => {
    const h = api.http;
    assert.deepEqual((await h.post('/api/dcim/device-types/', { manufacturer: w.mfr.id, model: 'Blade', slug: 'blade', subdevice_role: 'child' })).body, { u_height: ['Child device types must be 0U.'] });
    const child = ok(await h.post('/api/dcim/device-types/', { manufacturer: w.mfr.id, model: 'Blade', slug: 'blade', subdevice_role: 'child', u_height: 0 }));
    const parent = ok(await h.post('/api/dcim/device-types/', { manufacturer: w.mfr.id, model: 'Chassis', slug: 'chassis', subdevice_role: 'parent', u_height: 4 }));
    assert.deepEqual(parent.subdevice_role, { value: 'parent', label: 'Parent' });
    assert.deepEqual((await h.post('/api/dcim/device-bay-templates/', { device_type: w.type.id, name: 'Bay 1' })).body, { non_field_errors: ['Subdevice role of device type (XV) must be set to "parent" to allow device bays.'] });
    const tpl = ok(await h.post('/api/dcim/device-bay-templates/', { device_type: parent.id, name: 'Bay 1', label: 'B1' }));
    assert.deepEqual(Object.keys(tpl).sort(), ['created', 'description', 'device_type', 'display', 'display_url', 'id', 'label', 'last_updated', 'name', 'url']);
    ok(await h.post('/api/dcim/device-bay-templates/', { device_type: parent.id, name: 'Bay 2' }));
    assert.deepEqual((await h.post('/api/dcim/device-bay-templates/', { device_type: parent.id, name: 'Bay 2' })).body, { non_field_errors: ['The fields device_type, name must make a unique set.'] });
    assert.equal(ok(await h.get(`/api/dcim/device-types/${parent.id}/`), 200).device_bay_template_count, 2);
    assert.deepEqual(ids(await h.get('/api/dcim/device-types/?device_bays=true')), [parent.id]);
    assert.deepEqual((await h.patch(`/api/dcim/device-types/${parent.id}/`, { subdevice_role: null })).body, {
      subdevice_role: ['Must delete all device bay templates associated with this device before declassifying it as a parent device.'],
    });

    const enc = await device('enc1', parent.id);
    assert.equal(enc.device_bay_count, 2);
    const bays = ok(await h.get(`/api/dcim/device-bays/?device_id=${enc.id}`), 200).results;
    assert.deepEqual(bays.map((b: any) => [b.name, b.label, b.installed_device]), [['Bay 1', 'B1', null], ['Bay 2', '', null]]);
    const plain = await device('plain1');
    assert.deepEqual((await h.post('/api/dcim/device-bays/', { device: plain.id, name: 'Bay 1' })).body, { non_field_errors: ['This type of device (XV) does not support device bays.'] });
    assert.deepEqual((await h.patch(`/api/dcim/device-bays/${bays[0].id}/`, { installed_device: enc.id })).body, { non_field_errors: ['Cannot install a device into itself.'] });

    const blade = await device('blade1', child.id);
    const bay = ok(await h.patch(`/api/dcim/device-bays/${bays[0].id}/`, { installed_device: blade.id }), 200);
    assert.equal(bay.installed_device.id, blade.id);
    assert.deepEqual((await h.patch(`/api/dcim/device-bays/${bays[1].id}/`, { installed_device: blade.id })).body, { installed_device: ['device bay with this installed device already exists.'] });
    const got = ok(await h.get(`/api/dcim/devices/${blade.id}/`), 200);
    assert.deepEqual(got.parent_device, {
      id: enc.id,
      url: `${api.server.url}/api/dcim/devices/${enc.id}/`,
      display: 'enc1',
      name: 'enc1',
      device_bay: { id: bays[0].id, url: `${api.server.url}/api/dcim/device-bays/${bays[0].id}/`, display: 'Bay 1', name: 'Bay 1' },
    });
    assert.equal(ok(await h.get(`/api/dcim/devices/${enc.id}/`), 200).parent_device, null);
    assert.deepEqual(ids(await h.get(`/api/dcim/devices/?parent_device_id=${enc.id}`)), [blade.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/devices/?parent_bay_id=${bays[0].id}`)), [blade.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/device-bays/?installed_device=blade1`)), [bays[0].id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/device-bays/?device=enc1&device_status=active&name__ic=bay`)), [bays[0].id, bays[1].id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/devices/?device_bays=true&name__isw=enc`)), [enc.id]);

    // A child device takes no rack face or position of its own; it follows its parent's moves.
    const rack = ok(await h.post('/api/dcim/racks/', { name: 'R1', site: w.site.id }));
    assert.deepEqual((await h.patch(`/api/dcim/devices/${blade.id}/`, { rack: rack.id, face: 'front' })).body, {
      face: ['Child device types cannot be assigned to a rack face. This is an attribute of the parent device.'],
    });
    ok(await h.patch(`/api/dcim/devices/${enc.id}/`, { rack: rack.id, position: 10, face: 'front' }), 200);
    assert.equal(ok(await h.get(`/api/dcim/devices/${blade.id}/`), 200).rack.id, rack.id);

    // Deleting the child empties its bay; deleting the parent removes its bays.
    assert.equal((await h.delete(`/api/dcim/devices/${blade.id}/`)).status, 204);
    assert.equal(ok(await h.get(`/api/dcim/device-bays/${bays[0].id}/`), 200).installed_device, null);
    assert.equal((await h.delete(`/api/dcim/devices/${enc.id}/`)).status, 204);
    assert.equal((await h.get(`/api/dcim/device-bays/${bays[1].id}/`)).status, 404);
    assert.equal((await h.delete(`/api/dcim/device-types/${parent.id}/`)).status, 204);
    assert.equal((await h.get(`/api/dcim/device-bay-templates/${tpl.id}/`)).status, 404);
  });

  it('VLAN groups: vid_ranges validated and sorted, VLAN VIDs inside them, available-vlans listed and allocated', async () => {
    const h = api.http;
    const bad = async (vid_ranges: unknown) => (await h.post('/api/ipam/vlan-groups/', { name: 'bad', slug: 'bad', vid_ranges })).body;
    assert.deepEqual(await bad([[0, 5]]), { vid_ranges: ['Starting VLAN ID in range (0) cannot be less than 1'] });
    assert.deepEqual(await bad([[5, 4095]]), { vid_ranges: ['Ending VLAN ID in range (4095) cannot exceed 4094'] });
    assert.deepEqual(await bad([[9, 5]]), { vid_ranges: ['Ending VLAN ID in range must be greater than or equal to the starting VLAN ID (9-5)'] });
    assert.deepEqual(await bad([[1, 10], [10, 20]]), { vid_ranges: ['Ranges cannot overlap.'] });
    assert.deepEqual(await bad([[1, 'a']]), { vid_ranges: ['Range boundaries must be defined as integers.'] });
    assert.deepEqual(await bad([1, 2]), { vid_ranges: ['Ranges must be specified in the form (lower, upper).'] });
    assert.deepEqual(await bad('1-10'), { vid_ranges: ['Expected a list of items but got type "str".'] });
    const whole = ok(await h.post('/api/ipam/vlan-groups/', { name: 'whole', slug: 'whole' }));
    assert.deepEqual([whole.vid_ranges, whole.utilization], [[[1, 4094]], '0.00']);
    const g = ok(await h.post('/api/ipam/vlan-groups/', { name: 'G1', slug: 'g1', vid_ranges: [[10, 12], [1, 3]] }));
    assert.deepEqual(g.vid_ranges, [[1, 3], [10, 12]]);
    assert.deepEqual((await h.post('/api/ipam/vlans/', { name: 'v5', vid: 5, group: g.id })).body, { vid: ['VID must be in ranges 1-3,10-12 for VLANs in group G1'] });
    ok(await h.post('/api/ipam/vlans/', { name: 'v2', vid: 2, group: g.id }));
    assert.deepEqual(ids(await h.get('/api/ipam/vlan-groups/?contains_vid=11')).includes(g.id), true);
    assert.deepEqual(ids(await h.get('/api/ipam/vlan-groups/?contains_vid=5')), [whole.id]);

    const list = ok(await h.get(`/api/ipam/vlan-groups/${g.id}/available-vlans/`), 200);
    assert.deepEqual(list.map((v: any) => v.vid), [1, 3, 10, 11, 12]);
    assert.deepEqual(list[0].group, { id: g.id, url: `${api.server.url}/api/ipam/vlan-groups/${g.id}/`, display: 'G1', name: 'G1', slug: 'g1', description: '', vlan_count: 1 });
    assert.deepEqual(ok(await h.get(`/api/ipam/vlan-groups/${g.id}/available-vlans/?limit=2`), 200).map((v: any) => v.vid), [1, 3]);

    const one = ok(await h.post(`/api/ipam/vlan-groups/${g.id}/available-vlans/`, { name: 'a', status: 'reserved' }));
    assert.deepEqual([one.vid, one.group.id, one.status.value], [1, g.id, 'reserved']);
    const two = ok(await h.post(`/api/ipam/vlan-groups/${g.id}/available-vlans/`, [{ name: 'b' }, { name: 'c', description: 'x' }]));
    assert.deepEqual(two.map((v: any) => v.vid), [3, 10]);
    // The request is validated as a list first (NetBox's CreateAvailableVLANSerializer, many=True).
    assert.deepEqual((await h.post(`/api/ipam/vlan-groups/${g.id}/available-vlans/`, { description: 'no name' })).body, [{ name: ['This field is required.'] }]);
    assert.deepEqual((await h.post(`/api/ipam/vlan-groups/${g.id}/available-vlans/`, [{ name: 'ok' }, { name: 'x', status: 'bogus' }, 'str'])).body, [
      {},
      { status: ['"bogus" is not a valid choice.'] },
      { non_field_errors: ['Invalid data. Expected a dictionary, but got str.'] },
    ]);
    assert.deepEqual((await h.post(`/api/ipam/vlan-groups/${g.id}/available-vlans/`, { name: 'a' })).body, { non_field_errors: ['The fields group, name must make a unique set.'] });
    const short = await h.post(`/api/ipam/vlan-groups/${g.id}/available-vlans/`, [{ name: 'd' }, { name: 'e' }, { name: 'f' }]);
    assert.equal(short.status, 409);
    assert.deepEqual(short.body, { detail: 'Insufficient resources are available to satisfy the request' });
    assert.deepEqual(ok(await h.get(`/api/ipam/vlan-groups/${g.id}/available-vlans/`), 200).map((v: any) => v.vid), [11, 12]);
    assert.equal(ok(await h.get(`/api/ipam/vlan-groups/${g.id}/`), 200).utilization, '66.67');
    assert.equal((await h.get('/api/ipam/vlan-groups/999999/available-vlans/')).status, 404);
    assert.equal((await h.post('/api/ipam/vlan-groups/999999/available-vlans/', { name: 'z' })).status, 404);
    // Allocations are change-logged and handed to the event pipeline like any VLAN create.
    const log = ok(await h.get(`/api/core/object-changes/?changed_object_type=ipam.vlan&changed_object_id=${one.id}`), 200).results;
    assert.equal(log[0].action.value, 'create');
    assert.equal(log[0].postchange_data.vid, 1);
  });

  it('event rules on the new types queue webhook deliveries with their REST data (chassis, bays, templates, allocated VLANs)', async () => {
    const h = api.http;
    const hook = ok(await h.post('/api/extras/webhooks/', { name: 'cbv', payload_url: 'http://127.0.0.1:9/cbv' }));
    const types = ['dcim.virtualchassis', 'dcim.devicebay', 'dcim.devicebaytemplate', 'ipam.vlan'];
    ok(await h.post('/api/extras/event-rules/', { name: 'cbv-rule', object_types: types, event_types: ['object_created', 'object_deleted'], action_type: 'webhook', action_object_type: 'extras.webhook', action_object_id: hook.id }));
    const dt = ok(await h.post('/api/dcim/device-types/', { manufacturer: w.mfr.id, model: 'Encl', slug: 'encl', subdevice_role: 'parent' }));
    const tpl = ok(await h.post('/api/dcim/device-bay-templates/', { device_type: dt.id, name: 'Slot' }));
    const enc = await device('encl1', dt.id);
    const bay = ok(await h.get(`/api/dcim/device-bays/?device_id=${enc.id}`), 200).results[0];
    const vc = ok(await h.post('/api/dcim/virtual-chassis/', { name: 'evc', master: enc.id }));
    const g = ok(await h.post('/api/ipam/vlan-groups/', { name: 'evg', slug: 'evg', vid_ranges: [[7, 8]] }));
    const vlan = ok(await h.post(`/api/ipam/vlan-groups/${g.id}/available-vlans/`, { name: 'ev' }));
    assert.equal((await h.delete(`/api/dcim/virtual-chassis/${vc.id}/`)).status, 204);
    const tasks = ok(await h.get(`/api/core/background-tasks/?webhook=${hook.id}&limit=100`), 200).results;
    const seen = new Map<string, any>();
    for (const t of tasks) seen.set(`${t.object_type}:${t.object_id}:${t.event}`, t);
    for (const k of [`dcim.devicebaytemplate:${tpl.id}:created`, `dcim.devicebay:${bay.id}:created`, `dcim.virtualchassis:${vc.id}:created`, `ipam.vlan:${vlan.id}:created`, `dcim.virtualchassis:${vc.id}:deleted`]) {
      assert.ok(seen.has(k), `no delivery for ${k}: ${[...seen.keys()].join(', ')}`);
    }
    const detail = ok(await h.get(`/api/core/background-tasks/${seen.get(`dcim.virtualchassis:${vc.id}:created`).id}/`), 200);
    assert.equal(detail.kwargs.model, 'virtualchassis');
    assert.equal(detail.kwargs.data.url, `/api/dcim/virtual-chassis/${vc.id}/`);
    assert.equal(detail.kwargs.data.master.id, enc.id);
    assert.equal(detail.kwargs.data.member_count, 1);
    const vlanTask = ok(await h.get(`/api/core/background-tasks/${seen.get(`ipam.vlan:${vlan.id}:created`).id}/`), 200);
    assert.equal(vlanTask.kwargs.data.vid, 7);
    assert.equal(vlanTask.kwargs.snapshots.postchange.group, g.id);
  });

  it('concurrent available-vlans allocations from two API processes never share a VID', { timeout: 240_000 }, async () => {
    const procs = await startApiProcesses(storage, 2);
    try {
      // Both processes serve one database (one SQLite file or PostgreSQL schema).
      const target = procs.procs.map((p) => p.http);
      const og = ok(await target[0]!.post('/api/ipam/vlan-groups/', { name: 'race', slug: 'race', vid_ranges: [[100, 139]] }));
      const requests = Array.from({ length: 30 }, (_, i) => {
        const body = i % 2 ? [{ name: `r${i}a` }, { name: `r${i}b` }] : { name: `r${i}` };
        return target[i % 2]!.post(`/api/ipam/vlan-groups/${og.id}/available-vlans/`, body);
      });
      const results = await Promise.all(requests);
      const vids: number[] = [];
      for (const r of results) {
        assert.ok(r.status === 201 || r.status === 409, `${r.status} ${JSON.stringify(r.body)}`);
        if (r.status === 409) assert.deepEqual(r.body, { detail: 'Insufficient resources are available to satisfy the request' });
        else vids.push(...(Array.isArray(r.body) ? r.body : [r.body]).map((v: any) => v.vid));
      }
      assert.equal(new Set(vids).size, vids.length, `duplicate VIDs: ${vids.sort((a, b) => a - b).join(',')}`);
      assert.ok(vids.every((v) => v >= 100 && v <= 139));
      // 45 VIDs were asked for and 40 exist: the group ends full (a single request fits whenever one VID is left).
      assert.ok(vids.length >= 39, `only ${vids.length} allocated`);
      const stored = ok(await target[1]!.get(`/api/ipam/vlans/?group_id=${og.id}&limit=100`), 200);
      assert.equal(stored.count, vids.length);
    } finally {
      await procs.close();
    }
  });
});
