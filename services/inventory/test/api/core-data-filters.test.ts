import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

const INVALID = 'Select a valid choice. That choice is not one of the available choices.';

/** Issue 24: path `connected`, power feeds' available_power, VLAN availability, object type ids, tags' object types and weight. */
forEachStorage('inventory API: connected, available power, VLAN availability, object type ids, tag object types', (storage) => {
  let api: Api;
  // The configured data source root (a temp dir) and a directory outside it.
  let root: string;
  let outside: string;
  const ok = (r: { status: number; body: any }, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body;
  };
  before(async () => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'inv-ds-root-')));
    outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'inv-ds-outside-')));
    api = await startApi(storage, { dataSourceRoot: root });
  });
  after(async () => {
    await api.close();
    fs.rmSync(root, { recursive: true, force: true });
    fs.rmSync(outside, { recursive: true, force: true });
  });

  /** The names a list query answers, sorted. */
  const names = async (path: string, key = 'name') => (ok(await api.http.get(path), 200).results as any[]).map((o) => o[key]).sort();

  it('connected: the cable path is complete and every cable on it connected (direct, through ports, planned, none)', async () => {
    const h = api.http;
    const { site, type, role } = await seedBasics(api, 'c');
    const dev = ok(await h.post('/api/dcim/devices/', { name: 'c1', site: site.id, device_type: type.id, role: role.id }));
    // Created in bulk (one request per kind) to keep the test quick.
    const [i1, i2, i3, i4, , i6, i7, i8] = ok(await h.post('/api/dcim/interfaces/', ['i1', 'i2', 'i3', 'i4', 'i5', 'i6', 'i7', 'i8'].map((name) => ({ device: dev.id, name, type: '1000base-t' }))));
    const [rpA, rpB, rpC] = ok(await h.post('/api/dcim/rear-ports/', ['RA', 'RB', 'RC'].map((name) => ({ device: dev.id, name, type: '8p8c', positions: 1 }))));
    const [fpA, fpB, fpC] = ok(await h.post('/api/dcim/front-ports/', [['FA', rpA], ['FB', rpB], ['FC', rpC]].map(([name, rear]) => ({ device: dev.id, name, type: '8p8c', rear_port: rear.id, rear_port_position: 1 }))));
    const end = (object_type: string, object_id: number) => [{ object_type, object_id }];
    const cableBody = (a: [string, number], b: [string, number], status = 'connected') => ({ a_terminations: end(...a), b_terminations: end(...b), status });
    const cable = async (a: [string, number], b: [string, number], status = 'connected') => ok(await h.post('/api/dcim/cables/', cableBody(a, b, status)));
    ok(
      await h.post('/api/dcim/cables/', [
        cableBody(['dcim.interface', i1.id], ['dcim.interface', i2.id]),
        cableBody(['dcim.interface', i3.id], ['dcim.interface', i4.id], 'planned'),
        // i6 → front port → rear port ═ rear port → front port → i7: traced across the pass-through ports.
        cableBody(['dcim.interface', i6.id], ['dcim.frontport', fpA.id]),
        cableBody(['dcim.rearport', rpA.id], ['dcim.rearport', rpB.id]),
        cableBody(['dcim.frontport', fpB.id], ['dcim.interface', i7.id]),
        // i8 ends at a front port whose rear port has no cable: incomplete, yet active (every cable on it connected), as NetBox's.
        cableBody(['dcim.interface', i8.id], ['dcim.frontport', fpC.id]),
      ]),
    );
    assert.deepEqual(await names(`/api/dcim/interfaces/?device_id=${dev.id}&connected=true`), ['i1', 'i2', 'i6', 'i7', 'i8']);
    assert.deepEqual(await names(`/api/dcim/interfaces/?device_id=${dev.id}&connected=false`), ['i3', 'i4', 'i5']);
    // A path through a cable that is not connected is inactive however far it goes: i6's path loses its middle cable's status.
    const middle = ok(await h.get(`/api/dcim/cables/?rearport_id=${rpA.id}`), 200).results[0];
    ok(await h.patch(`/api/dcim/cables/${middle.id}/`, { status: 'planned' }), 200);
    assert.deepEqual(await names(`/api/dcim/interfaces/?device_id=${dev.id}&connected=true`), ['i1', 'i2', 'i8']);
    ok(await h.patch(`/api/dcim/cables/${middle.id}/`, { status: 'connected' }), 200);
    // A wireless link is a path of its own (connected while the link is).
    const [w1, w2] = ok(await h.post('/api/dcim/interfaces/', ['w1', 'w2'].map((name) => ({ device: dev.id, name, type: 'ieee802.11ac' }))));
    const wl = ok(await h.post('/api/wireless/wireless-links/', { interface_a: w1.id, interface_b: w2.id }));
    assert.deepEqual(await names(`/api/dcim/interfaces/?device_id=${dev.id}&connected=true&name__isw=w`), ['w1', 'w2']);
    ok(await h.patch(`/api/wireless/wireless-links/${wl.id}/`, { status: 'planned' }), 200);
    assert.deepEqual(await names(`/api/dcim/interfaces/?device_id=${dev.id}&connected=false&name__isw=w`), ['w1', 'w2']);
    assert.deepEqual(await names(`/api/dcim/interfaces/?device_id=${dev.id}&connected=&name__isw=i`), ['i1', 'i2', 'i3', 'i4', 'i5', 'i6', 'i7', 'i8']);
    assert.deepEqual((await h.get('/api/dcim/interfaces/?connected=maybe')).body, { connected: [INVALID] });
    // Console and power endpoints.
    const cp = ok(await h.post('/api/dcim/console-ports/', { device: dev.id, name: 'con' }));
    ok(await h.post('/api/dcim/console-ports/', { device: dev.id, name: 'con2' }));
    const csp = ok(await h.post('/api/dcim/console-server-ports/', { device: dev.id, name: 'csp' }));
    await cable(['dcim.consoleport', cp.id], ['dcim.consoleserverport', csp.id]);
    assert.deepEqual(await names('/api/dcim/console-ports/?connected=true'), ['con']);
    assert.deepEqual(await names('/api/dcim/console-ports/?connected=false'), ['con2']);
    assert.deepEqual(await names('/api/dcim/console-server-ports/?connected=true'), ['csp']);
    const panel = ok(await h.post('/api/dcim/power-panels/', { site: site.id, name: 'P' }));
    const feed = ok(await h.post('/api/dcim/power-feeds/', { power_panel: panel.id, name: 'F1', voltage: 230, amperage: 16 }));
    ok(await h.post('/api/dcim/power-feeds/', { power_panel: panel.id, name: 'F2', voltage: 230, amperage: 16 }));
    const psu = ok(await h.post('/api/dcim/power-ports/', { device: dev.id, name: 'psu' }));
    const out = ok(await h.post('/api/dcim/power-outlets/', { device: dev.id, name: 'out' }));
    await cable(['dcim.powerfeed', feed.id], ['dcim.powerport', psu.id], 'decommissioning');
    assert.deepEqual(await names('/api/dcim/power-feeds/?connected=true'), []);
    assert.deepEqual(await names('/api/dcim/power-feeds/?connected=false'), ['F1', 'F2']);
    assert.deepEqual(await names('/api/dcim/power-ports/?connected=false'), ['psu']);
    assert.deepEqual(await names(`/api/dcim/power-outlets/?connected=false&id=${out.id}`), ['out']);
  });

  it('available_power: voltage × amperage × max utilisation (× 1.732 three-phase), rounded as NetBox; filtered with numeric lookups', async () => {
    const h = api.http;
    const { site } = await seedBasics(api, 'p');
    const panel = ok(await h.post('/api/dcim/power-panels/', { site: site.id, name: 'PP' }));
    const f3 = ok(await h.post('/api/dcim/power-feeds/', { power_panel: panel.id, name: 'three', phase: 'three-phase', voltage: 400, amperage: 32 }));
    const f1 = ok(await h.post('/api/dcim/power-feeds/', { power_panel: panel.id, name: 'single', voltage: -230, amperage: 16, max_utilization: 50 }));
    // round(17735.68) and |−230| × 16 × 0.5.
    assert.equal(f3.available_power, 17736);
    assert.equal(f1.available_power, 1840);
    // A tie goes to the even neighbour, as Python's round(): 125 × 1 × 0.5 = 62.5 → 62.
    const tie = ok(await h.post('/api/dcim/power-feeds/', { power_panel: panel.id, name: 'tie', voltage: 125, amperage: 1, max_utilization: 50 }));
    assert.equal(tie.available_power, 62);
    const q = (s: string) => names(`/api/dcim/power-feeds/?power_panel_id=${panel.id}&${s}`);
    assert.deepEqual(await q('available_power=17736'), ['three']);
    assert.deepEqual(await q('available_power=62'), ['tie']);
    assert.deepEqual(await q('available_power=63'), []);
    assert.deepEqual(await q('available_power__gte=1840'), ['single', 'three']);
    assert.deepEqual(await q('available_power__lt=1840'), ['tie']);
    assert.deepEqual(await q('available_power__n=1840'), ['three', 'tie']);
    assert.deepEqual((await h.get('/api/dcim/power-feeds/?available_power=lots')).body, { available_power: ['Enter a number.'] });
  });

  it('VLANs available at a site, on a device and on a virtual machine; VLANs of an interface and a VM interface', async () => {
    const h = api.http;
    const top = ok(await h.post('/api/dcim/regions/', { name: 'Top', slug: 'top' }));
    const region = ok(await h.post('/api/dcim/regions/', { name: 'Sub', slug: 'sub', parent: top.id }));
    const { site, type, role } = await seedBasics(api, 'v');
    ok(await h.patch(`/api/dcim/sites/${site.id}/`, { region: region.id }), 200);
    const other = ok(await h.post('/api/dcim/sites/', { name: 'Other', slug: 'other' }));
    const loc = ok(await h.post('/api/dcim/locations/', { name: 'L', slug: 'l', site: site.id }));
    const rack = ok(await h.post('/api/dcim/racks/', { name: 'K', site: site.id, location: loc.id }));
    const dev = ok(await h.post('/api/dcim/devices/', { name: 'vd', site: site.id, location: loc.id, rack: rack.id, device_type: type.id, role: role.id }));
    const ctype = ok(await h.post('/api/virtualization/cluster-types/', { name: 'CT', slug: 'ct' }));
    const cluster = ok(await h.post('/api/virtualization/clusters/', { name: 'C', type: ctype.id, scope_type: 'dcim.site', scope_id: other.id }));
    const vm = ok(await h.post('/api/virtualization/virtual-machines/', { name: 'vm', cluster: cluster.id }));
    const group = async (slug: string, scope_type?: string, scope_id?: number) => ok(await h.post('/api/ipam/vlan-groups/', { name: slug, slug, ...(scope_type ? { scope_type, scope_id } : {}) })).id;
    const gTop = await group('g-top', 'dcim.region', top.id);
    const gSite = await group('g-site', 'dcim.site', site.id);
    const gOther = await group('g-other', 'dcim.site', other.id);
    const gGlobal = await group('g-global');
    const gRack = await group('g-rack', 'dcim.rack', rack.id);
    const gLoc = await group('g-loc', 'dcim.location', loc.id);
    const gCluster = await group('g-cluster', 'virtualization.cluster', cluster.id);
    const vlan = async (name: string, vid: number, extra: Record<string, unknown>) => ok(await h.post('/api/ipam/vlans/', { name, vid, ...extra }));
    await vlan('top', 1, { group: gTop });
    const v2 = await vlan('site-group', 2, { group: gSite });
    await vlan('other-group', 3, { group: gOther });
    const v4 = await vlan('global-group', 4, { group: gGlobal });
    const v5 = await vlan('global', 5, {});
    await vlan('other-site', 6, { site: other.id });
    await vlan('site', 7, { site: site.id });
    await vlan('rack', 8, { group: gRack });
    await vlan('cluster', 9, { group: gCluster });
    await vlan('loc', 10, { group: gLoc });
    assert.deepEqual(await names(`/api/ipam/vlans/?available_at_site=${site.id}`), ['global', 'global-group', 'site', 'site-group', 'top']);
    assert.deepEqual(await names(`/api/ipam/vlans/?available_on_device=${dev.id}`), ['global', 'global-group', 'loc', 'rack', 'site', 'site-group', 'top']);
    // The VM has no site: its cluster's scope (site Other) stands in.
    assert.deepEqual(await names(`/api/ipam/vlans/?available_on_virtualmachine=${vm.id}`), ['cluster', 'global', 'global-group', 'other-group', 'other-site']);
    assert.deepEqual((await h.get('/api/ipam/vlans/?available_at_site=999999')).body, { available_at_site: [INVALID] });
    assert.deepEqual((await h.get('/api/ipam/vlans/?available_on_device=x')).body, { available_on_device: [INVALID] });
    const ifc = ok(await h.post('/api/dcim/interfaces/', { device: dev.id, name: 'e0', type: '1000base-t', mode: 'tagged', untagged_vlan: v2.id, tagged_vlans: [v4.id] }));
    assert.deepEqual(await names(`/api/ipam/vlans/?interface_id=${ifc.id}`), ['global-group', 'site-group']);
    const vmi = ok(await h.post('/api/virtualization/interfaces/', { virtual_machine: vm.id, name: 'eth0', mode: 'access', untagged_vlan: v5.id }));
    assert.deepEqual(await names(`/api/ipam/vlans/?vminterface_id=${vmi.id}`), ['global']);
    assert.deepEqual((await h.get('/api/ipam/vlans/?vminterface_id=999999')).body, { vminterface_id: [INVALID] });
  });

  it('object types have ids; tags: weight order, object_types restricting assignment, and the object type filters of tags, custom fields, journal entries and contact assignments', async () => {
    const h = api.http;
    const types = ok(await h.get('/api/extras/object-types/?app_label=dcim&model=device'), 200);
    assert.equal(types.count, 1);
    const device = types.results[0];
    assert.deepEqual(Object.keys(device), ['id', 'url', 'display', 'app_label', 'model']);
    assert.equal(device.display, 'DCIM | device');
    assert.match(device.url, new RegExp(`/api/extras/object-types/${device.id}/$`));
    assert.deepEqual(ok(await h.get(`/api/extras/object-types/${device.id}/`), 200), device);
    const siteType = ok(await h.get('/api/extras/object-types/?app_label=dcim&model=site'), 200).results[0];
    assert.ok(ok(await h.get('/api/extras/object-types/?q=vlan'), 200).results.some((t: any) => t.model === 'vlangroup'));
    assert.equal((await h.get('/api/extras/object-types/999999/')).status, 404);

    // Tags: weight and object types.
    const onlyDevices = ok(await h.post('/api/extras/tags/', { name: 'OnlyDevices', slug: 'only-devices', object_types: ['dcim.device'] }));
    assert.deepEqual([onlyDevices.weight, onlyDevices.object_types], [1000, ['dcim.device']]);
    const light = ok(await h.post('/api/extras/tags/', { name: 'Zlight', slug: 'zlight', weight: 10 }));
    ok(await h.post('/api/extras/tags/', { name: 'OnlySites', slug: 'only-sites', object_types: ['dcim.site'] }));
    assert.deepEqual((ok(await h.get('/api/extras/tags/'), 200).results as any[]).map((t) => t.name).slice(0, 1), ['Zlight']);
    assert.deepEqual((await h.post('/api/extras/tags/', { name: 'Bad', slug: 'bad', object_types: ['dcim.nothing'] })).body, { object_types: ['Invalid content type: dcim.nothing'] });
    assert.deepEqual((await h.post('/api/extras/tags/', { name: 'Bad', slug: 'bad', object_types: 'dcim.site' })).body, { object_types: ['Expected a list of items but got type "str".'] });
    assert.deepEqual((await h.post('/api/extras/tags/', { name: 'Bad', slug: 'bad', weight: -1 })).body, { weight: ['Ensure this value is greater than or equal to 0.'] });
    const { site, type, role } = await seedBasics(api, 't');
    // NetBox's validate_assigned_tags: a tag restricted to other types is refused, the object is not created.
    assert.deepEqual((await h.post('/api/dcim/devices/', { name: 'tagged', site: site.id, device_type: type.id, role: role.id, tags: [{ slug: 'only-sites' }] })).body, {
      detail: 'Tag OnlySites cannot be assigned to device objects.',
    });
    assert.equal(ok(await h.get('/api/dcim/devices/?name=tagged'), 200).count, 0);
    const dev = ok(await h.post('/api/dcim/devices/', { name: 'tagged', site: site.id, device_type: type.id, role: role.id, tags: [{ slug: 'only-devices' }, { slug: 'zlight' }] }));
    assert.equal((await h.patch(`/api/dcim/devices/${dev.id}/`, { tags: [{ slug: 'only-sites' }] })).status, 400);
    ok(await h.patch(`/api/dcim/sites/${site.id}/`, { tags: [{ slug: 'only-sites' }] }), 200);
    // A restriction added later does not undo an assignment, and keeping the tag is not an addition.
    ok(await h.patch(`/api/extras/tags/${light.id}/`, { object_types: ['dcim.site'] }), 200);
    ok(await h.patch(`/api/dcim/devices/${dev.id}/`, { tags: [{ slug: 'only-devices' }, { slug: 'zlight' }], description: 'kept' }), 200);
    ok(await h.patch(`/api/extras/tags/${light.id}/`, { object_types: [] }), 200);

    const tags = (q: string) => names(`/api/extras/tags/?${q}`);
    assert.deepEqual(await tags('content_type=dcim.device'), ['OnlyDevices', 'Zlight']);
    assert.deepEqual(await tags('content_type=dcim.site'), ['OnlySites']);
    assert.deepEqual(await tags(`content_type_id=${device.id}`), ['OnlyDevices', 'Zlight']);
    assert.deepEqual(await tags(`content_type_id=${siteType.id}&content_type_id=${device.id}`), ['OnlyDevices', 'OnlySites', 'Zlight']);
    assert.deepEqual(await tags(`for_object_type_id=${device.id}`), ['OnlyDevices', 'Zlight']);
    assert.deepEqual(await tags(`for_object_type_id=${siteType.id}`), ['OnlySites', 'Zlight']);
    assert.deepEqual(await tags(`object_types=${device.id}`), ['OnlyDevices']);
    assert.deepEqual(await tags('weight=10'), ['Zlight']);
    assert.deepEqual(await tags('weight__gt=10'), ['OnlyDevices', 'OnlySites']);
    assert.deepEqual((await h.get('/api/extras/tags/?object_types=999999')).body, { object_types: ['Select a valid choice. 999999 is not one of the available choices.'] });
    assert.deepEqual((await h.get('/api/extras/tags/?content_type_id=x')).body, { content_type_id: ['Enter a number.'] });

    // Custom fields by object type id; object-typed custom fields are not modelled, so no related type matches.
    ok(await h.post('/api/extras/custom-fields/', { name: 'cf_dev', object_types: ['dcim.device'], type: 'text' }));
    ok(await h.post('/api/extras/custom-fields/', { name: 'cf_site', object_types: ['dcim.site', 'dcim.location'], type: 'text' }));
    assert.deepEqual(await names(`/api/extras/custom-fields/?object_type_id=${device.id}`), ['cf_dev']);
    assert.deepEqual(await names(`/api/extras/custom-fields/?object_type_id=${siteType.id}&object_type_id=${device.id}`), ['cf_dev', 'cf_site']);
    assert.deepEqual(await names(`/api/extras/custom-fields/?related_object_type_id=${siteType.id}`), []);
    assert.deepEqual(await names('/api/extras/custom-fields/?related_object_type=dcim.site'), []);
    assert.deepEqual((await h.get('/api/extras/custom-fields/?related_object_type_id=999999')).body, { related_object_type_id: ['Select a valid choice. 999999 is not one of the available choices.'] });

    // Journal entries and contact assignments by their object's type id.
    ok(await h.post('/api/extras/journal-entries/', { assigned_object_type: 'dcim.device', assigned_object_id: dev.id, comments: 'on device' }));
    ok(await h.post('/api/extras/journal-entries/', { assigned_object_type: 'dcim.site', assigned_object_id: site.id, comments: 'on site' }));
    assert.deepEqual(await names(`/api/extras/journal-entries/?assigned_object_type_id=${device.id}`, 'comments'), ['on device']);
    assert.deepEqual((await h.get('/api/extras/journal-entries/?assigned_object_type_id=abc')).body, { assigned_object_type_id: ['Select a valid choice. abc is not one of the available choices.'] });
    const contact = ok(await h.post('/api/tenancy/contacts/', { name: 'Ann' }));
    const crole = ok(await h.post('/api/tenancy/contact-roles/', { name: 'Owner', slug: 'owner' }));
    ok(await h.post('/api/tenancy/contact-assignments/', { object_type: 'dcim.site', object_id: site.id, contact: contact.id, role: crole.id }));
    assert.equal(ok(await h.get(`/api/tenancy/contact-assignments/?object_type_id=${siteType.id}`), 200).count, 1);
    assert.equal(ok(await h.get(`/api/tenancy/contact-assignments/?object_type_id=${device.id}`), 200).count, 0);
  });
  it('data sources: a local directory inside the configured root syncs into data files; config contexts and templates take their data from one', async () => {
    const h = api.http;
    const src = path.join(root, 'src');
    fs.mkdirSync(path.join(src, 'templates'), { recursive: true });
    fs.mkdirSync(path.join(src, '.git'));
    fs.writeFileSync(path.join(src, 'ctx.json'), '{"ntp": "10.0.0.1"}');
    fs.writeFileSync(path.join(src, 'templates', 't.j2'), 'hostname {{ device.name }}');
    fs.writeFileSync(path.join(src, '.hidden'), 'x');
    fs.writeFileSync(path.join(src, 'old.bak'), 'x');
    fs.writeFileSync(path.join(src, '.git', 'config'), 'x');
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret');
    // A link that stays inside the root is followed.
    fs.symlinkSync(path.join(src, 'ctx.json'), path.join(src, 'link.json'));
    const ds = ok(await h.post('/api/core/data-sources/', { name: 'local', type: 'local', source_url: `file://${src}`, ignore_rules: '*.bak', sync_interval: 60 }));
    assert.deepEqual([ds.status, ds.sync_interval, ds.file_count, ds.last_synced], [{ value: 'new', label: 'New' }, { value: 60, label: 'Hourly' }, 0, null]);
    assert.deepEqual(Object.keys(ds), ['id', 'url', 'display_url', 'display', 'name', 'type', 'source_url', 'enabled', 'status', 'description', 'sync_interval', 'parameters', 'ignore_rules', 'comments', 'tags', 'custom_fields', 'created', 'last_updated', 'last_synced', 'file_count']);
    const synced = ok(await h.post(`/api/core/data-sources/${ds.id}/sync/`, {}), 200);
    assert.deepEqual([synced.status.value, synced.file_count, typeof synced.last_synced], ['completed', 3, 'string']);
    const files = ok(await h.get(`/api/core/data-files/?source_id=${ds.id}`), 200).results as any[];
    assert.deepEqual(files.map((f) => f.path), ['ctx.json', 'link.json', 'templates/t.j2']);
    assert.deepEqual(Object.keys(files[0]), ['id', 'url', 'display_url', 'display', 'source', 'path', 'size', 'hash', 'last_updated']);
    assert.equal(files[0].hash, createHash('sha256').update('{"ntp": "10.0.0.1"}').digest('hex'));
    assert.deepEqual([files[0].size, files[0].source.name], [19, 'local']);
    assert.deepEqual(await names('/api/core/data-files/?source=local&path__isw=templates', 'path'), ['templates/t.j2']);
    assert.deepEqual(await names('/api/core/data-sources/?status=completed&type=local'), ['local']);
    assert.deepEqual((await h.get('/api/core/data-sources/?status=done')).body, { status: ['Select a valid choice. done is not one of the available choices.'] });
    // Data files are read-only, as NetBox's.
    assert.equal((await h.post('/api/core/data-files/', { source: ds.id, path: 'x', size: 1, hash: 'a'.repeat(64) })).status, 405);

    // A config context and a template take their content from files.
    const ctxFile = files[0].id;
    const cc = ok(await h.post('/api/extras/config-contexts/', { name: 'synced', data: {}, data_source: ds.id, data_path: 'ctx.json', auto_sync_enabled: true }));
    assert.deepEqual([cc.data, cc.data_file.id, cc.data_source.id, cc.data_path, typeof cc.data_synced], [{ ntp: '10.0.0.1' }, ctxFile, ds.id, 'ctx.json', 'string']);
    ok(await h.post('/api/extras/config-contexts/', { name: 'plain', data: { a: 1 } }));
    const tpl = ok(await h.post('/api/extras/config-templates/', { name: 'tpl', template_code: '-', data_source: ds.id, data_path: 'templates/t.j2' }));
    assert.deepEqual([tpl.template_code, tpl.data_file.path, tpl.auto_sync_enabled], ['hostname {{ device.name }}', 'templates/t.j2', false]);
    assert.deepEqual((await h.post('/api/extras/config-contexts/', { name: 'nofile', data: {}, data_source: ds.id, data_path: 'nope.json' })).body, { data_path: ['No data file at this path in the data source: nope.json'] });
    assert.deepEqual((await h.post('/api/extras/config-contexts/', { name: 'nodata' })).body, { data: ['This field is required.'] });
    assert.deepEqual(await names(`/api/extras/config-contexts/?data_source_id=${ds.id}`), ['synced']);
    assert.deepEqual(await names(`/api/extras/config-contexts/?data_file_id=${ctxFile}`), ['synced']);
    assert.deepEqual(await names('/api/extras/config-contexts/?auto_sync_enabled=true'), ['synced']);
    assert.deepEqual(await names('/api/extras/config-contexts/?auto_sync_enabled=false'), ['plain']);
    assert.deepEqual(await names('/api/extras/config-contexts/?data_synced__gte=2000-01-01'), ['synced']);
    assert.deepEqual(await names('/api/extras/config-contexts/?data_synced__lt=2000-01-01'), []);
    assert.deepEqual(await names(`/api/extras/config-templates/?data_source_id=${ds.id}&auto_sync_enabled=false`), ['tpl']);
    assert.deepEqual(await names(`/api/extras/config-templates/?data_file_id=${ctxFile}`), []);
    assert.deepEqual((await h.get('/api/extras/config-templates/?data_synced=yesterday')).body, { data_synced: ['Enter a valid date/time.'] });
    assert.deepEqual((await h.get('/api/extras/config-templates/?data_source_id=999999')).body, { data_source_id: ['Select a valid choice. 999999 is not one of the available choices.'] });

    // A changed file updates its data file and the context that follows it (change-logged); a vanished one goes.
    fs.writeFileSync(path.join(src, 'ctx.json'), 'ntp: 10.0.0.2\n');
    fs.rmSync(path.join(src, 'link.json'));
    assert.equal(ok(await h.post(`/api/core/data-sources/${ds.id}/sync/`, {}), 200).file_count, 2);
    assert.deepEqual(ok(await h.get(`/api/extras/config-contexts/${cc.id}/`), 200).data, { ntp: '10.0.0.2' });
    const changes = ok(await h.get(`/api/core/object-changes/?changed_object_type=extras.configcontext&changed_object_id=${cc.id}`), 200);
    assert.deepEqual(changes.results.map((c: any) => c.action.value).sort(), ['create', 'update']);
    // A source in use is protected.
    assert.equal((await h.delete(`/api/core/data-sources/${ds.id}/`)).status, 409);

    // Refusals: outside the root (absolute, relative, by a link), non-file URLs of local sources, git/S3, no root configured.
    const fail = async (name: string, source_url: string, detail: RegExp, type = 'local') => {
      const s = ok(await h.post('/api/core/data-sources/', { name, type, source_url }));
      const r = await h.post(`/api/core/data-sources/${s.id}/sync/`, {});
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.deepEqual(Object.keys(r.body), ['detail']);
      assert.match(r.body.detail, detail);
      assert.equal(ok(await h.get(`/api/core/data-sources/${s.id}/`), 200).status.value, 'failed');
      assert.equal(ok(await h.get(`/api/core/data-files/?source_id=${s.id}`), 200).count, 0);
    };
    await fail('abs', outside, /outside the allowed data source root/);
    await fail('rel', `../${path.basename(outside)}`, /outside the allowed data source root/);
    await fail('missing', `${root}/nothing`, /does not exist/);
    fs.mkdirSync(path.join(root, 'evil'));
    fs.writeFileSync(path.join(root, 'evil', 'ok.txt'), 'fine');
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'evil', 'secret'));
    await fail('evil', 'evil', /symbolic link leads outside the allowed data source root: secret/);
    fs.symlinkSync(outside, path.join(root, 'dirlink'));
    await fail('dirlink', `${root}/dirlink`, /outside the allowed data source root/);
    await fail('git', 'https://127.0.0.1:9/repo.git', /git backend cannot sync on this server/, 'git');
    assert.deepEqual((await h.post('/api/core/data-sources/', { name: 'web', type: 'local', source_url: 'http://127.0.0.1:9/' })).body, { source_url: ['URLs for local sources must start with file:// (or specify no scheme)'] });
    assert.deepEqual((await h.post('/api/core/data-sources/', { name: 'x', type: 'svn', source_url: '/x' })).body, { type: ['"svn" is not a valid choice.'] });
    // No root configured: refused (a matter of configuration, not storage: checked on one).
    if (storage !== 'sqlite') return;
    const bare = await startApi(storage);
    try {
      const s = ok(await bare.http.post('/api/core/data-sources/', { name: 'local', type: 'local', source_url: src }));
      assert.deepEqual((await bare.http.post(`/api/core/data-sources/${s.id}/sync/`, {})).body, {
        detail: 'Local data sources are disabled on this server: no data source root is configured (--data-source-root / INVENTORY_DATA_SOURCE_ROOT).',
      });
    } finally {
      await bare.close();
    }
  });

  it("data sources' credentials are censored in the change log with NetBox's tokens (the snapshots that event payloads carry too)", async () => {
    const h = api.http;
    const ds = ok(await h.post('/api/core/data-sources/', { name: 'creds', type: 'git', source_url: 'https://127.0.0.1:9/creds.git', parameters: { username: 'u', password: 'p1' } }));
    // The API itself shows what was stored (NetBox does too: the object's own serializer).
    assert.deepEqual(ds.parameters, { username: 'u', password: 'p1' });
    ok(await h.patch(`/api/core/data-sources/${ds.id}/`, { parameters: { username: 'u', password: 'p2' } }), 200);
    ok(await h.patch(`/api/core/data-sources/${ds.id}/`, { description: 'same password' }), 200);
    assert.equal((await h.delete(`/api/core/data-sources/${ds.id}/`)).status, 204);
    const log = ok(await h.get(`/api/core/object-changes/?changed_object_type=core.datasource&changed_object_id=${ds.id}`), 200).results.sort((a: any, b: any) => a.id - b.id);
    assert.deepEqual(
      log.map((c: any) => [c.action.value, c.prechange_data?.parameters ?? null, c.postchange_data?.parameters ?? null]),
      [
        ['create', null, { username: 'u', password: '***CHANGED***' }],
        ['update', { username: 'u', password: '********' }, { username: 'u', password: '***CHANGED***' }],
        ['update', { username: 'u', password: '********' }, { username: 'u', password: '********' }],
        ['delete', { username: 'u', password: '********' }, null],
      ],
    );
    assert.doesNotMatch(JSON.stringify(log), /p1|p2/);
  });
});
