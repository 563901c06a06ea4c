import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

/**
 * Issue 24's networking objects over HTTP: MAC addresses, L2VPNs, wireless, VLAN translation, virtual device contexts,
 * FHRP groups and provider accounts — CRUD, NetBox's clean() rules as 400 bodies, the filters they bring to other
 * objects, change log and webhooks.
 */
forEachStorage('inventory API: MAC addresses, L2VPNs, wireless, VLAN translation, VDCs, FHRP groups, provider accounts', (storage) => {
  let api: Api;
  let w: Record<string, any>;
  const ok = (r: { status: number; body: any }, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body;
  };
  const ids = (r: { status: number; body: any }) => ok(r, 200).results.map((x: any) => x.id);
  before(async () => {
    api = await startApi(storage);
    const h = api.http;
    const b = await seedBasics(api, 'N');
    const dev = ok(await h.post('/api/dcim/devices/', { name: 'n1', site: b.site.id, device_type: b.type.id, role: b.role.id }));
    const dev2 = ok(await h.post('/api/dcim/devices/', { name: 'n2', site: b.site.id, device_type: b.type.id, role: b.role.id }));
    const eth0 = ok(await h.post('/api/dcim/interfaces/', { device: dev.id, name: 'eth0', type: '1000base-t' }));
    const eth1 = ok(await h.post('/api/dcim/interfaces/', { device: dev.id, name: 'eth1', type: '1000base-t' }));
    const ct = ok(await h.post('/api/virtualization/cluster-types/', { name: 'CT', slug: 'ct' }));
    const cl = ok(await h.post('/api/virtualization/clusters/', { name: 'C1', type: ct.id, scope_type: 'dcim.site', scope_id: b.site.id }));
    const vm = ok(await h.post('/api/virtualization/virtual-machines/', { name: 'vm1', cluster: cl.id }));
    const veth = ok(await h.post('/api/virtualization/interfaces/', { virtual_machine: vm.id, name: 'veth0' }));
    w = { ...b, dev, dev2, eth0, eth1, vm, veth };
  });
  after(() => api.close());

  it('lists the vpn and wireless apps at the API root', async () => {
    const root = ok(await api.http.get('/api/'), 200);
    assert.ok(root.vpn && root.wireless, JSON.stringify(root));
    const vpn = ok(await api.http.get('/api/vpn/'), 200);
    assert.ok(Object.keys(vpn).includes('l2vpns'), JSON.stringify(vpn));
  });

  it('MAC addresses: assigned objects, the primary MAC of interfaces and VM interfaces, clean() rules, filters', async () => {
    const h = api.http;
    const mac = ok(await h.post('/api/dcim/mac-addresses/', { mac_address: '00-11-22-33-44-55', assigned_object_type: 'dcim.interface', assigned_object_id: w.eth0.id }));
    assert.equal(mac.mac_address, '00:11:22:33:44:55');
    assert.equal(mac.display, '00:11:22:33:44:55');
    assert.equal(mac.assigned_object.id, w.eth0.id);
    assert.deepEqual(Object.keys(mac).slice(0, 8), ['id', 'url', 'display_url', 'display', 'mac_address', 'assigned_object_type', 'assigned_object_id', 'assigned_object']);
    const other = ok(await h.post('/api/dcim/mac-addresses/', { mac_address: '00:11:22:33:44:66', assigned_object_type: 'dcim.interface', assigned_object_id: w.eth1.id }));
    assert.deepEqual((await h.post('/api/dcim/mac-addresses/', { mac_address: 'zz' })).body, { mac_address: ['Invalid MAC address format: zz'] });
    assert.deepEqual((await h.post('/api/dcim/mac-addresses/', { mac_address: '00:11:22:33:44:77', assigned_object_type: 'dcim.interface' })).body, { assigned_object_id: ['This field is required when assigned_object_type is set.'] });
    assert.equal((await h.post('/api/dcim/mac-addresses/', { mac_address: '00:11:22:33:44:77', assigned_object_type: 'dcim.interface', assigned_object_id: 999999 })).status, 400);
    // Interface.clean(): the primary MAC must be one of the interface's own.
    assert.deepEqual((await h.patch(`/api/dcim/interfaces/${w.eth0.id}/`, { primary_mac_address: other.id })).body, { primary_mac_address: ['MAC address 00:11:22:33:44:66 is not assigned to this interface.'] });
    const eth0 = ok(await h.patch(`/api/dcim/interfaces/${w.eth0.id}/`, { primary_mac_address: mac.id }), 200);
    assert.equal(eth0.primary_mac_address.id, mac.id);
    assert.equal(eth0.primary_mac_address.mac_address, '00:11:22:33:44:55');
    assert.equal(eth0.mac_address, '00:11:22:33:44:55');
    assert.deepEqual(eth0.mac_addresses.map((m: any) => m.id), [mac.id]);
    // A mac_address of its own that differs from the primary MAC's is refused, never dropped.
    assert.equal((await h.patch(`/api/dcim/interfaces/${w.eth0.id}/`, { mac_address: '00:00:00:00:00:01' })).status, 400);
    // MACAddress.clean(): the primary MAC stays with its object.
    assert.deepEqual((await h.patch(`/api/dcim/mac-addresses/${mac.id}/`, { assigned_object_type: null, assigned_object_id: null })).body, { non_field_errors: ['Cannot unassign MAC Address while it is designated as the primary MAC for an object'] });
    assert.deepEqual((await h.patch(`/api/dcim/mac-addresses/${mac.id}/`, { assigned_object_id: w.eth1.id })).body, { non_field_errors: ['Cannot reassign MAC Address while it is designated as the primary MAC for an object'] });
    // Changing the primary MAC's address changes the interface's.
    ok(await h.patch(`/api/dcim/mac-addresses/${mac.id}/`, { mac_address: '00:11:22:33:44:56' }), 200);
    assert.equal(ok(await h.get(`/api/dcim/interfaces/${w.eth0.id}/`), 200).mac_address, '00:11:22:33:44:56');
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?mac_address=00-11-22-33-44-56')), [w.eth0.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?primary_mac_address_id=${mac.id}`)), [w.eth0.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/mac-addresses/?interface_id=${w.eth1.id}`)), [other.id]);
    // An interface's mac_address filter (and its lookups) matches every MAC address object it has, not only the primary.
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?mac_address=00:11:22:33:44:66')), [w.eth1.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?device_id=${w.dev.id}&mac_address__ic=33:44&ordering=name`)), [w.eth0.id, w.eth1.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?device_id=${w.dev.id}&mac_address__n=00:11:22:33:44:66&mac_address__empty=false`)), [w.eth0.id]);
    assert.equal((await h.get('/api/dcim/interfaces/?mac_address__regex=(')).status, 400);
    // Config templates reach them through NetBox's related managers.
    const tpl = ok(await h.post('/api/extras/config-templates/', { name: 'macs', template_code: "{% for i in device.interfaces.all() %}{{ i.name }}={{ i.mac_addresses|map(attribute='mac_address')|join(',') }} {% endfor %}{{ device.vdcs.count() }}" }));
    assert.equal(ok(await h.post(`/api/dcim/devices/${w.dev.id}/render-config/`, { config_template_id: tpl.id }), 200).content, 'eth0=00:11:22:33:44:56 eth1=00:11:22:33:44:66 0');
    // Devices match any MAC address object of their interfaces, primary or not.
    assert.deepEqual(ids(await h.get('/api/dcim/devices/?mac_address=00:11:22:33:44:66')), [w.dev.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/mac-addresses/?device=n1&ordering=mac_address`)), [mac.id, other.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/mac-addresses/?device=nope`)), []);
    assert.deepEqual(ids(await h.get(`/api/dcim/mac-addresses/?mac_address=00:11:22:33:44:66`)), [other.id]);
    assert.deepEqual((await h.get('/api/dcim/mac-addresses/?interface_id=999999')).body, { interface_id: ['Select a valid choice. 999999 is not one of the available choices.'] });
    // VM interfaces: the primary MAC gives their read-only mac_address; VMs filter on their interfaces' MACs.
    const vmac = ok(await h.post('/api/dcim/mac-addresses/', { mac_address: 'aa:bb:cc:00:00:01', assigned_object_type: 'virtualization.vminterface', assigned_object_id: w.veth.id }));
    const veth = ok(await h.patch(`/api/virtualization/interfaces/${w.veth.id}/`, { primary_mac_address: vmac.id }), 200);
    assert.equal(veth.mac_address, 'AA:BB:CC:00:00:01');
    assert.deepEqual(veth.mac_addresses.map((m: any) => m.id), [vmac.id]);
    assert.deepEqual(ids(await h.get('/api/virtualization/virtual-machines/?mac_address=aa:bb:cc:00:00:01')), [w.vm.id]);
    assert.deepEqual(ids(await h.get('/api/virtualization/interfaces/?mac_address=aa:bb:cc:00:00:01')), [w.veth.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/mac-addresses/?virtual_machine_id=${w.vm.id}`)), [vmac.id]);
    // An interface's MACs go with it.
    const tmp = ok(await h.post('/api/dcim/interfaces/', { device: w.dev.id, name: 'tmp0', type: 'virtual' }));
    const tmac = ok(await h.post('/api/dcim/mac-addresses/', { mac_address: '02:00:00:00:00:01', assigned_object_type: 'dcim.interface', assigned_object_id: tmp.id }));
    ok(await h.patch(`/api/dcim/interfaces/${tmp.id}/`, { primary_mac_address: tmac.id }), 200);
    assert.equal((await h.delete(`/api/dcim/interfaces/${tmp.id}/`)).status, 204);
    assert.equal((await h.get(`/api/dcim/mac-addresses/${tmac.id}/`)).status, 404);
  });

  it('L2VPNs: terminations on interfaces, VM interfaces and VLANs, point-to-point limits, route targets, filters, change log and webhooks', async () => {
    const h = api.http;
    const hook = ok(await h.post('/api/extras/webhooks/', { name: 'l2', payload_url: 'http://127.0.0.1:9/l2' }));
    ok(await h.post('/api/extras/event-rules/', { name: 'l2-rule', object_types: ['vpn.l2vpn', 'vpn.l2vpntermination'], event_types: ['object_created', 'object_deleted'], action_type: 'webhook', action_object_type: 'extras.webhook', action_object_id: hook.id }));
    const rt = ok(await h.post('/api/ipam/route-targets/', { name: '65000:1' }));
    const vpn = ok(await h.post('/api/vpn/l2vpns/', { name: 'Blue', slug: 'blue', type: 'vxlan', identifier: 5001, import_targets: [rt.id] }));
    assert.equal(vpn.display, 'Blue (5001)');
    assert.equal(vpn.status.value, 'active');
    assert.deepEqual(vpn.import_targets.map((t: any) => t.id), [rt.id]);
    assert.deepEqual((await h.post('/api/vpn/l2vpns/', { name: 'X', slug: 'x', type: 'nope' })).body, { type: ['"nope" is not a valid choice.'] });
    const vlan = ok(await h.post('/api/ipam/vlans/', { vid: 100, name: 'v100' }));
    const t1 = ok(await h.post('/api/vpn/l2vpn-terminations/', { l2vpn: vpn.id, assigned_object_type: 'dcim.interface', assigned_object_id: w.eth1.id }));
    assert.equal(t1.assigned_object.id, w.eth1.id);
    assert.equal(t1.display, 'eth1 <> Blue (5001)');
    const t2 = ok(await h.post('/api/vpn/l2vpn-terminations/', { l2vpn: vpn.id, assigned_object_type: 'ipam.vlan', assigned_object_id: vlan.id }));
    assert.deepEqual((await h.post('/api/vpn/l2vpn-terminations/', { l2vpn: vpn.id, assigned_object_type: 'dcim.interface', assigned_object_id: w.eth1.id })).body, { non_field_errors: ['L2VPN Termination already assigned (eth1)'] });
    assert.equal((await h.post('/api/vpn/l2vpn-terminations/', { l2vpn: vpn.id, assigned_object_type: 'dcim.device', assigned_object_id: w.dev.id })).status, 400);
    // A point-to-point type takes two terminations.
    const p2p = ok(await h.post('/api/vpn/l2vpns/', { name: 'Wire', slug: 'wire', type: 'vpws' }));
    ok(await h.post('/api/vpn/l2vpn-terminations/', { l2vpn: p2p.id, assigned_object_type: 'virtualization.vminterface', assigned_object_id: w.veth.id }));
    const e2 = ok(await h.post('/api/dcim/interfaces/', { device: w.dev2.id, name: 'e2', type: '1000base-t' }));
    const e3 = ok(await h.post('/api/dcim/interfaces/', { device: w.dev2.id, name: 'e3', type: '1000base-t' }));
    ok(await h.post('/api/vpn/l2vpn-terminations/', { l2vpn: p2p.id, assigned_object_type: 'dcim.interface', assigned_object_id: e2.id }));
    assert.deepEqual((await h.post('/api/vpn/l2vpn-terminations/', { l2vpn: p2p.id, assigned_object_type: 'dcim.interface', assigned_object_id: e3.id })).body, { non_field_errors: ['VPWS L2VPNs cannot have more than two terminations; found 2 already defined.'] });
    // Representations and filters of the terminated objects.
    assert.equal(ok(await h.get(`/api/dcim/interfaces/${w.eth1.id}/`), 200).l2vpn_termination.id, t1.id);
    assert.equal(ok(await h.get(`/api/ipam/vlans/${vlan.id}/`), 200).l2vpn_termination.id, t2.id);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?l2vpn_id=${vpn.id}`)), [w.eth1.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?l2vpn=5001')), [w.eth1.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/vlans/?l2vpn_id=${vpn.id}`)), [vlan.id]);
    assert.deepEqual(ids(await h.get(`/api/virtualization/interfaces/?l2vpn_id=${p2p.id}`)), [w.veth.id]);
    assert.deepEqual((await h.get('/api/dcim/interfaces/?l2vpn=abc')).status, 400);
    assert.deepEqual(ids(await h.get(`/api/ipam/route-targets/?importing_l2vpn_id=${vpn.id}`)), [rt.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/route-targets/?importing_l2vpn=5001')), [rt.id]);
    assert.deepEqual(ids(await h.get(`/api/vpn/l2vpn-terminations/?l2vpn_id=${vpn.id}&vlan_vid=100`)), [t2.id]);
    assert.deepEqual(ids(await h.get(`/api/vpn/l2vpn-terminations/?site_id=${w.site.id}&l2vpn=blue`)), [t1.id]);
    assert.deepEqual(ids(await h.get(`/api/vpn/l2vpn-terminations/?device=n1`)), [t1.id]);
    assert.deepEqual(ids(await h.get('/api/vpn/l2vpn-terminations/?q=wir')).length, 2);
    assert.deepEqual(ids(await h.get('/api/vpn/l2vpns/?type=vpws')), [p2p.id]);
    assert.deepEqual(ids(await h.get(`/api/vpn/l2vpns/?import_target_id=${rt.id}`)), [vpn.id]);
    // Deleting the L2VPN takes its terminations along, each in the change log and the webhooks.
    assert.equal((await h.delete(`/api/vpn/l2vpns/${vpn.id}/`)).status, 204);
    assert.equal((await h.get(`/api/vpn/l2vpn-terminations/${t1.id}/`)).status, 404);
    assert.equal(ok(await h.get(`/api/dcim/interfaces/${w.eth1.id}/`), 200).l2vpn_termination, null);
    const log = ok(await h.get(`/api/core/object-changes/?changed_object_type=vpn.l2vpntermination&changed_object_id=${t1.id}`), 200).results;
    assert.deepEqual(log.map((c: any) => c.action.value).sort(), ['create', 'delete']);
    const tasks = ok(await h.get(`/api/core/background-tasks/?webhook=${hook.id}&limit=100`), 200).results;
    const seen = new Set(tasks.map((t: any) => `${t.object_type}:${t.object_id}:${t.event}`));
    for (const k of [`vpn.l2vpn:${vpn.id}:created`, `vpn.l2vpntermination:${t1.id}:created`, `vpn.l2vpn:${vpn.id}:deleted`, `vpn.l2vpntermination:${t2.id}:deleted`]) assert.ok(seen.has(k), `${k}: ${[...seen].join(', ')}`);
    const task = tasks.find((t: any) => t.object_type === 'vpn.l2vpn' && t.object_id === vpn.id && t.event === 'created');
    const detail = ok(await h.get(`/api/core/background-tasks/${task.id}/`), 200);
    assert.equal(detail.kwargs.data.url, `/api/vpn/l2vpns/${vpn.id}/`);
    assert.equal(detail.kwargs.data.identifier, 5001);
  });

  it('wireless: LAN groups, scoped LANs on interfaces, links between wireless interfaces', async () => {
    const h = api.http;
    const g = ok(await h.post('/api/wireless/wireless-lan-groups/', { name: 'Campus', slug: 'campus' }));
    const sub = ok(await h.post('/api/wireless/wireless-lan-groups/', { name: 'Floor 1', slug: 'floor-1', parent: g.id }));
    const lan = ok(await h.post('/api/wireless/wireless-lans/', { ssid: 'corp', group: sub.id, scope_type: 'dcim.site', scope_id: w.site.id, auth_type: 'wpa-personal', auth_psk: 'secret' }));
    assert.equal(lan.scope.id, w.site.id);
    assert.equal(lan.status.value, 'active');
    assert.deepEqual((await h.post('/api/wireless/wireless-lans/', { ssid: 'x'.repeat(33) })).body, { ssid: ['Ensure this field has no more than 32 characters.'] });
    assert.equal(ok(await h.get(`/api/wireless/wireless-lan-groups/${sub.id}/`), 200).wirelesslan_count, 1);
    assert.deepEqual(ids(await h.get(`/api/wireless/wireless-lans/?group_id=${g.id}`)), [lan.id]);
    assert.deepEqual(ids(await h.get(`/api/wireless/wireless-lans/?site_id=${w.site.id}`)), [lan.id]);
    const wa = ok(await h.post('/api/dcim/interfaces/', { device: w.dev.id, name: 'wlan0', type: 'ieee802.11ax', wireless_lans: [lan.id] }));
    assert.deepEqual(wa.wireless_lans.map((l: any) => l.id), [lan.id]);
    const wb = ok(await h.post('/api/dcim/interfaces/', { device: w.dev2.id, name: 'wlan0', type: 'ieee802.11ax' }));
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?wireless_lan_id=${lan.id}`)), [wa.id]);
    assert.deepEqual(ids(await h.get(`/api/wireless/wireless-lans/?interface_id=${wa.id}`)), [lan.id]);
    // WirelessLink.clean(): both ends wireless.
    assert.deepEqual((await h.post('/api/wireless/wireless-links/', { interface_a: wa.id, interface_b: w.eth0.id })).body, { interface_b: ['1000BASE-T (1GE) is not a wireless interface.'] });
    assert.deepEqual((await h.post('/api/wireless/wireless-links/', { interface_a: wa.id, interface_b: wb.id, distance: 2 })).body, { distance_unit: ['Must specify a unit when setting a distance'] });
    const link = ok(await h.post('/api/wireless/wireless-links/', { interface_a: wa.id, interface_b: wb.id, ssid: 'bridge', distance: 1.5, distance_unit: 'km' }));
    assert.equal(link.display, 'bridge');
    assert.equal(link.distance, 1.5);
    const a = ok(await h.get(`/api/dcim/interfaces/${wa.id}/`), 200);
    assert.deepEqual(a.wireless_link, { id: link.id, url: link.url, display: 'bridge', ssid: 'bridge' });
    assert.equal(a._occupied, true);
    assert.equal(ok(await h.get(`/api/dcim/interfaces/${wb.id}/?brief=1`), 200)._occupied, true);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?wireless_link_id=${link.id}`)), [wa.id, wb.id]);
    // Each end is saved with its new wireless_link, as NetBox's signal does: an `updated` event with the link in its data.
    const updated = api.events.flat().filter((e) => e.objectType === 'dcim.interface' && e.objectId === wb.id && e.event === 'updated');
    assert.equal((updated.at(-1)?.data.wireless_link as { id?: number } | null)?.id, link.id);
    assert.equal((await h.delete(`/api/dcim/interfaces/${wb.id}/`)).status, 409);
    assert.equal((await h.delete(`/api/wireless/wireless-links/${link.id}/`)).status, 204);
    assert.equal(ok(await h.get(`/api/dcim/interfaces/${wa.id}/`), 200).wireless_link, null);
  });

  it('VLAN translation policies and rules; interfaces name a policy', async () => {
    const h = api.http;
    const p = ok(await h.post('/api/ipam/vlan-translation-policies/', { name: 'Edge' }));
    const r = ok(await h.post('/api/ipam/vlan-translation-rules/', { policy: p.id, local_vid: 100, remote_vid: 200 }));
    assert.equal(r.policy, p.id);
    assert.equal(r.display, '100 -> 200 (Edge)');
    assert.deepEqual((await h.post('/api/ipam/vlan-translation-rules/', { policy: p.id, local_vid: 100, remote_vid: 300 })).body, { non_field_errors: ['The fields policy, local_vid must make a unique set.'] });
    assert.deepEqual((await h.post('/api/ipam/vlan-translation-rules/', { policy: p.id, local_vid: 5000, remote_vid: 300 })).body, { local_vid: ['Ensure this value is less than or equal to 4094.'] });
    assert.deepEqual(ok(await h.get(`/api/ipam/vlan-translation-policies/${p.id}/`), 200).rules.map((x: any) => [x.local_vid, x.remote_vid]), [[100, 200]]);
    ok(await h.patch(`/api/dcim/interfaces/${w.eth1.id}/`, { vlan_translation_policy: p.id }), 200);
    ok(await h.patch(`/api/virtualization/interfaces/${w.veth.id}/`, { vlan_translation_policy: p.id }), 200);
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?vlan_translation_policy=Edge')), [w.eth1.id]);
    assert.deepEqual(ids(await h.get(`/api/virtualization/interfaces/?vlan_translation_policy_id=${p.id}`)), [w.veth.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/vlan-translation-rules/?policy=Edge&local_vid=100`)), [r.id]);
    assert.equal((await h.delete(`/api/ipam/vlan-translation-policies/${p.id}/`)).status, 409);
  });

  it('virtual device contexts: per-device names and identifiers, primary IPs on the device, interfaces in VDCs', async () => {
    const h = api.http;
    const vdc = ok(await h.post('/api/dcim/virtual-device-contexts/', { device: w.dev.id, name: 'ctx1', identifier: 1, status: 'active' }));
    assert.equal(vdc.interface_count, 0);
    assert.deepEqual((await h.post('/api/dcim/virtual-device-contexts/', { device: w.dev.id, name: 'ctx2' })).body, { status: ['This field is required.'] });
    assert.deepEqual((await h.post('/api/dcim/virtual-device-contexts/', { device: w.dev.id, name: 'ctx1', status: 'active' })).body, { non_field_errors: ['The fields device, name must make a unique set.'] });
    const ip = ok(await h.post('/api/ipam/ip-addresses/', { address: '10.9.9.9/24', assigned_object_type: 'dcim.interface', assigned_object_id: w.eth0.id }));
    const far = ok(await h.post('/api/ipam/ip-addresses/', { address: '10.9.9.10/24' }));
    assert.deepEqual((await h.patch(`/api/dcim/virtual-device-contexts/${vdc.id}/`, { primary_ip4: far.id })).body, { primary_ip4: ['Primary IP address must belong to an interface on the assigned device.'] });
    assert.equal(ok(await h.patch(`/api/dcim/virtual-device-contexts/${vdc.id}/`, { primary_ip4: ip.id }), 200).primary_ip.id, ip.id);
    const e = ok(await h.patch(`/api/dcim/interfaces/${w.eth0.id}/`, { vdcs: [vdc.id] }), 200);
    assert.deepEqual(e.vdcs.map((v: any) => v.id), [vdc.id]);
    assert.equal(ok(await h.get(`/api/dcim/virtual-device-contexts/${vdc.id}/`), 200).interface_count, 1);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?vdc_id=${vdc.id}`)), [w.eth0.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?vdc=ctx1')), [w.eth0.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?vdc_identifier=1')), [w.eth0.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/devices/?has_virtual_device_context=true')), [w.dev.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/virtual-device-contexts/?device=${w.dev.id}&has_primary_ip=true`)), [vdc.id]);
    assert.equal((await h.delete(`/api/dcim/devices/${w.dev.id}/`)).status, 409);
  });

  it('FHRP groups: virtual addresses, interface assignments with priorities, services on a group', async () => {
    const h = api.http;
    const g = ok(await h.post('/api/ipam/fhrp-groups/', { protocol: 'vrrp2', group_id: 10, name: 'gw' }));
    assert.equal(g.display, 'gw VRRPv2: 10');
    assert.deepEqual((await h.post('/api/ipam/fhrp-groups/', { protocol: 'nope', group_id: 1 })).body, { protocol: ['"nope" is not a valid choice.'] });
    const vip = ok(await h.post('/api/ipam/ip-addresses/', { address: '10.8.0.1/24', role: 'vrrp', assigned_object_type: 'ipam.fhrpgroup', assigned_object_id: g.id }));
    assert.equal(vip.assigned_object.id, g.id);
    assert.deepEqual(ok(await h.get(`/api/ipam/fhrp-groups/${g.id}/`), 200).ip_addresses.map((i: any) => i.id), [vip.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/ip-addresses/?fhrpgroup_id=${g.id}`)), [vip.id]);
    const a = ok(await h.post('/api/ipam/fhrp-group-assignments/', { group: g.id, interface_type: 'dcim.interface', interface_id: w.eth1.id, priority: 200 }));
    assert.equal(a.interface.id, w.eth1.id);
    assert.deepEqual((await h.post('/api/ipam/fhrp-group-assignments/', { group: g.id, interface_type: 'dcim.interface', interface_id: w.eth1.id, priority: 100 })).body, { non_field_errors: ['The fields interface_type, interface_id, group must make a unique set.'] });
    assert.deepEqual((await h.post('/api/ipam/fhrp-group-assignments/', { group: g.id, interface_type: 'dcim.interface', interface_id: w.eth0.id, priority: 256 })).body, { priority: ['Ensure this value is less than or equal to 255.'] });
    assert.equal(ok(await h.get(`/api/dcim/interfaces/${w.eth1.id}/`), 200).count_fhrp_groups, 1);
    assert.deepEqual(ids(await h.get('/api/ipam/fhrp-group-assignments/?device=n1')), [a.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/fhrp-groups/?related_ip=${vip.id}`)), [g.id]);
    const svc = ok(await h.post('/api/ipam/services/', { parent_object_type: 'ipam.fhrpgroup', parent_object_id: g.id, name: 'dns', protocol: 'udp', ports: [53] }));
    assert.equal(svc.parent.id, g.id);
    assert.deepEqual(ids(await h.get(`/api/ipam/services/?fhrpgroup_id=${g.id}`)), [svc.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/services/?fhrpgroup=gw')), [svc.id]);
    assert.equal((await h.delete(`/api/ipam/fhrp-groups/${g.id}/`)).status, 204);
    assert.equal((await h.get(`/api/ipam/ip-addresses/${vip.id}/`)).status, 404);
    assert.equal((await h.get(`/api/ipam/fhrp-group-assignments/${a.id}/`)).status, 404);
  });

  it('provider accounts: unique per provider, circuits and virtual circuits name one of their provider', async () => {
    const h = api.http;
    const prov = ok(await h.post('/api/circuits/providers/', { name: 'Telco', slug: 'telco' }));
    const prov2 = ok(await h.post('/api/circuits/providers/', { name: 'Other', slug: 'other' }));
    const acct = ok(await h.post('/api/circuits/provider-accounts/', { provider: prov.id, account: 'A-1', name: 'Main' }));
    assert.equal(acct.display, 'A-1 (Main)');
    assert.deepEqual((await h.post('/api/circuits/provider-accounts/', { provider: prov.id, account: 'A-1' })).body, { non_field_errors: ['The fields provider, account must make a unique set.'] });
    assert.deepEqual((await h.post('/api/circuits/provider-accounts/', { provider: prov.id, account: 'A-2', name: 'Main' })).body, { non_field_errors: ['The fields provider, name must make a unique set.'] });
    ok(await h.post('/api/circuits/provider-accounts/', { provider: prov.id, account: 'A-3' }));
    ok(await h.post('/api/circuits/provider-accounts/', { provider: prov.id, account: 'A-4' }));
    assert.deepEqual(ok(await h.get(`/api/circuits/providers/${prov.id}/`), 200).accounts.map((x: any) => x.account), ['A-1', 'A-3', 'A-4']);
    const ctype = ok(await h.post('/api/circuits/circuit-types/', { name: 'Transit', slug: 'transit' }));
    assert.deepEqual((await h.post('/api/circuits/circuits/', { cid: 'C-0', provider: prov2.id, provider_account: acct.id, type: ctype.id })).body, { provider_account: ['The assigned account must belong to the assigned provider.'] });
    const c = ok(await h.post('/api/circuits/circuits/', { cid: 'C-1', provider: prov.id, provider_account: acct.id, type: ctype.id }));
    assert.equal(c.provider_account.id, acct.id);
    assert.deepEqual(ids(await h.get(`/api/circuits/circuits/?provider_account_id=${acct.id}`)), [c.id]);
    assert.deepEqual(ids(await h.get('/api/circuits/circuits/?provider_account=A-1')), [c.id]);
    const net = ok(await h.post('/api/circuits/provider-networks/', { provider: prov.id, name: 'MPLS' }));
    const vct = ok(await h.post('/api/circuits/virtual-circuit-types/', { name: 'P2P', slug: 'p2p' }));
    const vc = ok(await h.post('/api/circuits/virtual-circuits/', { cid: 'V-1', provider_network: net.id, provider_account: acct.id, type: vct.id }));
    const term = ok(await h.post('/api/circuits/virtual-circuit-terminations/', { virtual_circuit: vc.id, interface: w.eth1.id }));
    assert.deepEqual(ids(await h.get(`/api/circuits/virtual-circuit-terminations/?provider_account_id=${acct.id}`)), [term.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?virtual_circuit_id=${vc.id}`)), [w.eth1.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?virtual_circuit_termination_id=${term.id}`)), [w.eth1.id]);
    assert.equal((await h.delete(`/api/circuits/provider-accounts/${acct.id}/`)).status, 409);
  });

  it('custom fields on the new objects: object types whose model name holds a digit (vpn.l2vpn)', async () => {
    const h = api.http;
    const cf = ok(await h.post('/api/extras/custom-fields/', { name: 'circuit_ref', type: 'text', object_types: ['vpn.l2vpn', 'wireless.wirelesslan'] }));
    assert.deepEqual(cf.object_types, ['vpn.l2vpn', 'wireless.wirelesslan']);
    const l2 = ok(await h.post('/api/vpn/l2vpns/', { name: 'cf-l2', slug: 'cf-l2', type: 'vxlan', custom_fields: { circuit_ref: 'X-1' } }));
    assert.deepEqual(l2.custom_fields, { circuit_ref: 'X-1' });
    assert.deepEqual((await h.get('/api/vpn/l2vpns/?cf_circuit_ref=X-1')).body.results.map((o: any) => o.id), [l2.id]);
  });
});
