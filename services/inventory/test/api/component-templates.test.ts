import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

/**
 * NetBox 4.3's device-type component templates: their shapes and rules, a new device's components made from its
 * type's templates, a module's from its module type's (with `{module}` resolved), the device/module type filters
 * over templates; rack types, module type profiles and the filters behind them.
 */
forEachStorage('inventory API: component templates, rack types, module type profiles', (storage) => {
  let api: Api;
  let w: Awaited<ReturnType<typeof seedBasics>>;
  const ok = (r: { status: number; body: any }, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body;
  };
  const ids = (r: { status: number; body: any }) => ok(r, 200).results.map((o: any) => o.id);
  before(async () => {
    api = await startApi(storage);
    w = await seedBasics(api, 'T');
  });
  after(() => api.close());

  it('templates of every kind on a device type: NetBox 4.3 shapes, counts and the device type filters', async () => {
    const h = api.http;
    const dt = ok(await h.post('/api/dcim/device-types/', { manufacturer: w.mfr.id, model: 'Switch48', slug: 'switch48', subdevice_role: 'parent' }));
    const con = ok(await h.post('/api/dcim/console-port-templates/', { device_type: dt.id, name: 'con0', label: 'Console', type: 'rj-45' }));
    assert.deepEqual(Object.keys(con), ['id', 'url', 'display_url', 'display', 'device_type', 'module_type', 'name', 'label', 'type', 'description', 'created', 'last_updated']);
    assert.equal(con.display, 'con0 (Console)');
    assert.deepEqual(con.type, { value: 'rj-45', label: 'RJ-45' });
    assert.equal(con.module_type, null);
    assert.equal(con.device_type.id, dt.id);
    const brief = ok(await h.get(`/api/dcim/console-port-templates/${con.id}/?brief=1`), 200);
    assert.deepEqual(Object.keys(brief), ['id', 'url', 'display', 'name', 'description']);
    const psu = ok(await h.post('/api/dcim/power-port-templates/', { device_type: dt.id, name: 'PSU1', type: 'iec-60320-c14', maximum_draw: 500, allocated_draw: 250 }));
    ok(await h.post('/api/dcim/power-outlet-templates/', { device_type: dt.id, name: 'OUT1', power_port: psu.id, feed_leg: 'A' }));
    const [br, eth] = ok(await h.post('/api/dcim/interface-templates/', [
      { device_type: dt.id, name: 'br0', type: 'bridge' },
      { device_type: dt.id, name: 'eth0', type: '1000base-t', mgmt_only: true, poe_mode: 'pse', poe_type: 'type1-ieee802.3af' },
    ]));
    const iface = ok(await h.patch(`/api/dcim/interface-templates/${eth.id}/`, { bridge: br.id }), 200);
    assert.deepEqual(Object.keys(iface).slice(4), ['device_type', 'module_type', 'name', 'label', 'type', 'enabled', 'mgmt_only', 'description', 'bridge', 'poe_mode', 'poe_type', 'rf_role', 'created', 'last_updated']);
    assert.equal(iface.bridge.id, br.id);
    const rear = ok(await h.post('/api/dcim/rear-port-templates/', { device_type: dt.id, name: 'R1', type: '8p8c', positions: 2 }));
    ok(await h.post('/api/dcim/front-port-templates/', { device_type: dt.id, name: 'F1', type: '8p8c', rear_port: rear.id, rear_port_position: 2 }));
    ok(await h.post('/api/dcim/module-bay-templates/', { device_type: dt.id, name: 'Slot 1', position: '1' }));
    ok(await h.post('/api/dcim/device-bay-templates/', { device_type: dt.id, name: 'Bay 1' }));
    const role = ok(await h.post('/api/dcim/inventory-item-roles/', { name: 'Fan', slug: 'fan' }));
    const tray = ok(await h.post('/api/dcim/inventory-item-templates/', { device_type: dt.id, name: 'Tray', role: role.id }));
    const fan = ok(await h.post('/api/dcim/inventory-item-templates/', { device_type: dt.id, parent: tray.id, name: 'Fan 1', manufacturer: w.mfr.id, component_type: 'dcim.interfacetemplate', component_id: eth.id }));
    assert.equal(fan._depth, 1);
    assert.equal(fan.parent, tray.id);
    assert.equal(fan.component.id, eth.id);
    assert.deepEqual(Object.keys(fan).slice(-6), ['component_type', 'component_id', 'component', 'created', 'last_updated', '_depth']);
    assert.deepEqual(Object.keys(ok(await h.get(`/api/dcim/inventory-item-templates/${fan.id}/?brief=1`), 200)), ['id', 'url', 'display', 'name', 'description', '_depth']);

    const got = ok(await h.get(`/api/dcim/device-types/${dt.id}/`), 200);
    assert.equal(got.front_image, null);
    for (const [k, n] of Object.entries({ console_port_template_count: 1, power_port_template_count: 1, power_outlet_template_count: 1, interface_template_count: 2, rear_port_template_count: 1, front_port_template_count: 1, module_bay_template_count: 1, device_bay_template_count: 1, inventory_item_template_count: 2, console_server_port_template_count: 0 })) {
      assert.equal(got[k], n, k);
    }
    assert.deepEqual(ids(await h.get(`/api/dcim/device-types/?interface_template_count=2`)), [dt.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/device-types/?interface_template_count__gt=2`)), []);
    assert.deepEqual(ids(await h.get(`/api/dcim/device-types/?pass_through_ports=true`)), [dt.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/device-types/?console_server_ports=true`)), []);
    assert.deepEqual(ids(await h.get(`/api/dcim/device-types/?interfaces=false`)), [w.type.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/device-types/?inventory_items=true&module_bays=true`)), [dt.id]);
    assert.equal(ok(await h.get(`/api/dcim/device-types/?has_front_image=true`), 200).count, 0);
    assert.equal(ok(await h.get(`/api/dcim/device-types/?has_rear_image=false`), 200).count, 2);
    assert.deepEqual(ids(await h.get(`/api/dcim/interface-templates/?device_type_id=${dt.id}&mgmt_only=true`)), [eth.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interface-templates/?bridge_id=${br.id}`)), [eth.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/inventory-item-templates/?component_type=dcim.interfacetemplate&component_id=${eth.id}`)), [fan.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/inventory-item-templates/?parent_id=${tray.id}&manufacturer_id=${w.mfr.id}`)), [fan.id]);
    assert.deepEqual(ok(await h.get('/api/dcim/interface-templates/?device_type_id=999999'), 400), { device_type_id: ['Select a valid choice. 999999 is not one of the available choices.'] });

    // A new device gets a component for each template, in NetBox's way (bridge, power port, rear port, parent, component).
    const dev = ok(await h.post('/api/dcim/devices/', { name: 'sw1', device_type: dt.id, role: w.role.id, site: w.site.id }));
    const d = ok(await h.get(`/api/dcim/devices/${dev.id}/`), 200);
    for (const [k, n] of Object.entries({ console_port_count: 1, power_port_count: 1, power_outlet_count: 1, interface_count: 2, rear_port_count: 1, front_port_count: 1, module_bay_count: 1, device_bay_count: 1, inventory_item_count: 2 })) assert.equal(d[k], n, k);
    const ifaces = ok(await h.get(`/api/dcim/interfaces/?device_id=${dev.id}&ordering=name`), 200).results;
    assert.deepEqual(ifaces.map((i: any) => [i.name, i.type.value, i.mgmt_only, i.bridge?.name ?? null, i.poe_mode?.value ?? null]), [['br0', 'bridge', false, null, null], ['eth0', '1000base-t', true, 'br0', 'pse']]);
    const out = ok(await h.get(`/api/dcim/power-outlets/?device_id=${dev.id}`), 200).results[0];
    assert.equal(out.power_port.name, 'PSU1');
    assert.equal(out.feed_leg.value, 'A');
    const pp = ok(await h.get(`/api/dcim/power-ports/?device_id=${dev.id}`), 200).results[0];
    assert.deepEqual([pp.maximum_draw, pp.allocated_draw], [500, 250]);
    const front = ok(await h.get(`/api/dcim/front-ports/?device_id=${dev.id}`), 200).results[0];
    assert.deepEqual([front.rear_port.name, front.rear_port_position], ['R1', 2]);
    assert.equal(ok(await h.get(`/api/dcim/console-ports/?device_id=${dev.id}`), 200).results[0].label, 'Console');
    const items = ok(await h.get(`/api/dcim/inventory-items/?device_id=${dev.id}&ordering=name`), 200).results;
    const fanItem = items.find((i: any) => i.name === 'Fan 1');
    assert.equal(fanItem.parent, items.find((i: any) => i.name === 'Tray').id);
    assert.equal(fanItem._depth, 1);
    assert.equal(fanItem.component_type, 'dcim.interface');
    assert.equal(fanItem.component.name, 'eth0');
    assert.deepEqual(ids(await h.get(`/api/dcim/inventory-items/?component_type=dcim.interface&component_id=${fanItem.component_id}`)), [fanItem.id]);
    assert.equal(ok(await h.get(`/api/dcim/module-bays/?device_id=${dev.id}`), 200).results[0].position, '1');
    // Templates go with their device type (once no device uses it); the instantiated components stay with the device.
    ok(await h.delete(`/api/dcim/devices/${dev.id}/`), 204);
    ok(await h.delete(`/api/dcim/device-types/${dt.id}/`), 204);
    assert.equal(ok(await h.get(`/api/dcim/interface-templates/?device_type_id=${w.type.id}`), 200).count, 0);
    assert.equal(ok(await h.get(`/api/dcim/front-port-templates/`), 200).count, 0);
  });

  it("refuses what NetBox's models refuse, with DRF's error bodies", async () => {
    const h = api.http;
    const mt = ok(await h.post('/api/dcim/module-types/', { manufacturer: w.mfr.id, model: 'LC-8' }));
    const bad = async (url: string, body: unknown, expected: unknown, method: 'post' | 'patch' = 'post') => {
      const r = await h[method](url, body);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.deepEqual(r.body, expected);
    };
    await bad('/api/dcim/console-port-templates/', { name: 'c' }, { non_field_errors: ['A component template must be associated with either a device type or a module type.'] });
    await bad('/api/dcim/console-port-templates/', { name: 'c', device_type: w.type.id, module_type: mt.id }, { non_field_errors: ['A component template cannot be associated with both a device type and a module type.'] });
    await bad('/api/dcim/interface-templates/', { device_type: w.type.id, name: 'e' }, { type: ['This field is required.'] });
    await bad('/api/dcim/interface-templates/', { device_type: w.type.id, name: 'e', type: '1000base-t', rf_role: 'ap' }, { rf_role: ['Wireless role may be set only on wireless interfaces.'] });
    await bad('/api/dcim/power-port-templates/', { device_type: w.type.id, name: 'p', maximum_draw: 100, allocated_draw: 200 }, { allocated_draw: ['Allocated draw cannot exceed the maximum draw (100W).'] });
    await bad('/api/dcim/device-bay-templates/', { device_type: w.type.id, name: 'b' }, { non_field_errors: [`Subdevice role of device type (${w.type.model}) must be set to "parent" to allow device bays.`] });
    await bad('/api/dcim/inventory-item-templates/', { name: 'i' }, { device_type: ['This field is required.'] });
    await bad('/api/dcim/inventory-item-templates/', { device_type: w.type.id, name: 'i', component_type: 'dcim.site', component_id: 1 }, { component_type: ['Invalid content type: dcim.site'] });
    const c = ok(await h.post('/api/dcim/console-port-templates/', { device_type: w.type.id, name: 'c' }));
    await bad('/api/dcim/console-port-templates/', { device_type: w.type.id, name: 'c' }, { non_field_errors: ['The fields device_type, name must make a unique set.'] });
    ok(await h.post('/api/dcim/console-port-templates/', { module_type: mt.id, name: 'c' }));
    const other = ok(await h.post('/api/dcim/device-types/', { manufacturer: w.mfr.id, model: 'Other', slug: 'other' }));
    await bad(`/api/dcim/console-port-templates/${c.id}/`, { device_type: other.id }, { device_type: ['Component templates cannot be moved to a different device type.'] }, 'patch');
    const rear = ok(await h.post('/api/dcim/rear-port-templates/', { device_type: w.type.id, name: 'R', type: 'lc' }));
    await bad('/api/dcim/front-port-templates/', { device_type: w.type.id, name: 'F', type: 'lc', rear_port: rear.id, rear_port_position: 2 }, { non_field_errors: ['Invalid rear port position (2); rear port R has only 1 positions'] });
    await bad('/api/dcim/front-port-templates/', { device_type: other.id, name: 'F', type: 'lc', rear_port: rear.id }, { non_field_errors: ['Rear port (R) must belong to the same device type'] });
    const pp = ok(await h.post('/api/dcim/power-port-templates/', { device_type: w.type.id, name: 'PSU', label: 'A' }));
    await bad('/api/dcim/power-outlet-templates/', { device_type: other.id, name: 'o', power_port: pp.id }, { non_field_errors: ['Parent power port (PSU (A)) must belong to the same device type'] });
    await bad(`/api/dcim/device-types/${other.id}/`, { front_image: 'x.png' }, { front_image: ['The submitted data was not a file. Check the encoding type on the form.'] }, 'patch');
    await bad('/api/dcim/console-port-templates/', { device_type: w.type.id, name: 'x'.repeat(65) }, { name: ['Ensure this field has no more than 64 characters.'] });
    // Hostile filter values are 400s, never 5xx.
    assert.equal((await h.get('/api/dcim/device-types/?interface_template_count=abc')).status, 400);
    assert.equal((await h.get('/api/dcim/inventory-item-templates/?component_id=1e99')).status, 400);
    assert.equal(ok(await h.get('/api/dcim/inventory-item-templates/?component_type=nodot'), 200).count, 0);
    for (const url of ['/api/dcim/console-port-templates/', '/api/dcim/rear-port-templates/', '/api/dcim/power-port-templates/']) {
      for (const id of ids(await h.get(`${url}?limit=100`))) ok(await h.delete(`${url}${id}/`), 204);
    }
  });

  it("installing a module makes its type's components, `{module}` resolved through nested bays", async () => {
    const h = api.http;
    const mt = ok(await h.post('/api/dcim/module-types/', { manufacturer: w.mfr.id, model: 'LC-48' }));
    ok(await h.post('/api/dcim/interface-templates/', { module_type: mt.id, name: 'Gi{module}/1', label: 'port {module}', type: '1000base-t' }));
    ok(await h.post('/api/dcim/module-bay-templates/', { module_type: mt.id, name: 'Sub {module}', position: '5' }));
    const sfp = ok(await h.post('/api/dcim/module-types/', { manufacturer: w.mfr.id, model: 'SFP' }));
    ok(await h.post('/api/dcim/interface-templates/', { module_type: sfp.id, name: 'Te{module}/{module}', type: '10gbase-x-sfpp' }));
    assert.ok(ids(await h.get('/api/dcim/module-types/?interfaces=true')).includes(mt.id));
    assert.ok(!ids(await h.get('/api/dcim/module-types/?interfaces=false')).includes(mt.id));
    assert.deepEqual(ids(await h.get(`/api/dcim/interface-templates/?module_type_id=${mt.id}`)).length, 1);
    const dev = ok(await h.post('/api/dcim/devices/', { name: 'chassis', device_type: w.type.id, role: w.role.id, site: w.site.id }));
    const [bay, bay2] = ok(await h.post('/api/dcim/module-bays/', [{ device: dev.id, name: 'Slot 3', position: '3' }, { device: dev.id, name: 'Slot 3b', position: '3' }]));
    const mod = ok(await h.post('/api/dcim/modules/', { device: dev.id, module_bay: bay.id, module_type: mt.id }));
    const iface = ok(await h.get(`/api/dcim/interfaces/?module_id=${mod.id}`), 200).results;
    assert.deepEqual(iface.map((i: any) => [i.name, i.label, i.module.id]), [['Gi3/1', 'port 3', mod.id]]);
    const sub = ok(await h.get(`/api/dcim/module-bays/?module_id=${mod.id}`), 200).results[0];
    assert.deepEqual([sub.name, sub.position], ['Sub 3', '5']);
    assert.deepEqual(ids(await h.get(`/api/dcim/module-bays/?parent_id=${bay.id}`)), [sub.id]);
    assert.deepEqual(ok(await h.get('/api/dcim/module-bays/?parent_id=999999'), 400), { parent_id: ['Select a valid choice. 999999 is not one of the available choices.'] });
    // A module in the nested bay resolves one token per level, outermost first.
    const inner = ok(await h.post('/api/dcim/modules/', { device: dev.id, module_bay: sub.id, module_type: sfp.id }));
    assert.deepEqual(ok(await h.get(`/api/dcim/interfaces/?module_id=${inner.id}`), 200).results.map((i: any) => i.name), ['Te3/5']);
    // The same names again on the device: refused before anything is written.
    assert.deepEqual((await h.post('/api/dcim/modules/', { device: dev.id, module_bay: bay2.id, module_type: mt.id })).body, { non_field_errors: ['A Interface named Gi3/1 already exists'] });
    // Removing the module removes its components, its bays and the module in them (each change-logged).
    ok(await h.delete(`/api/dcim/modules/${mod.id}/`), 204);
    assert.equal((await h.get(`/api/dcim/modules/${inner.id}/`)).status, 404);
    const gone = ok(await h.get(`/api/core/object-changes/?changed_object_type=dcim.interface&action=delete&limit=100`), 200).results.map((c: any) => c.object_repr);
    assert.ok(gone.includes('Gi3/1') && gone.includes('Te3/5'), gone.join(', '));
    assert.equal(ok(await h.get(`/api/dcim/interfaces/?device_id=${dev.id}`), 200).count, 0);
  });

  it('rack types give racks their physical attributes; module type profiles; platforms for a device type', async () => {
    const h = api.http;
    const rt = ok(await h.post('/api/dcim/rack-types/', { manufacturer: w.mfr.id, model: 'R42', slug: 'r42', form_factor: '4-post-cabinet', u_height: 48, outer_width: 600, outer_unit: 'mm' }));
    assert.deepEqual(Object.keys(ok(await h.get(`/api/dcim/rack-types/${rt.id}/?brief=1`), 200)), ['id', 'url', 'display', 'manufacturer', 'model', 'slug', 'description']);
    assert.deepEqual((await h.post('/api/dcim/rack-types/', { manufacturer: w.mfr.id, model: 'R1', slug: 'r1', form_factor: '2-post-frame', outer_depth: 5 })).body, { non_field_errors: ['Must specify a unit when setting an outer dimension'] });
    const rack = ok(await h.post('/api/dcim/racks/', { name: 'A1', site: w.site.id, rack_type: rt.id }));
    assert.deepEqual([rack.rack_type.id, rack.u_height, rack.form_factor.value, rack.outer_width, rack.outer_unit.value], [rt.id, 48, '4-post-cabinet', 600, 'mm']);
    ok(await h.post('/api/dcim/racks/', { name: 'A2', site: w.site.id }));
    assert.deepEqual(ids(await h.get(`/api/dcim/racks/?rack_type_id=${rt.id}`)), [rack.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/racks/?rack_type=r42`)), [rack.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/racks/?manufacturer=${w.mfr.slug}`)), [rack.id]);
    assert.equal((await h.delete(`/api/dcim/rack-types/${rt.id}/`)).status, 409);

    const profile = ok(await h.post('/api/dcim/module-type-profiles/', { name: 'PSU', schema: { properties: { watts: { type: 'integer' } } } }));
    assert.deepEqual((await h.post('/api/dcim/module-type-profiles/', { name: 'Bad', schema: { type: 'object' } })).body, { schema: ['JSON schema must define properties'] });
    const mt = ok(await h.post('/api/dcim/module-types/', { manufacturer: w.mfr.id, model: 'PSU-650', profile: profile.id }));
    assert.equal(mt.profile.id, profile.id);
    assert.deepEqual(ids(await h.get(`/api/dcim/module-types/?profile=PSU`)), [mt.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/module-types/?profile_id=${profile.id}`)), [mt.id]);
    assert.equal((await h.delete(`/api/dcim/module-type-profiles/${profile.id}/`)).status, 409);

    const other = ok(await h.post('/api/dcim/manufacturers/', { name: 'Other', slug: 'other-m' }));
    const mine = ok(await h.post('/api/dcim/platforms/', { name: 'eos', slug: 'eos', manufacturer: w.mfr.id }));
    const any = ok(await h.post('/api/dcim/platforms/', { name: 'linux', slug: 'linux' }));
    ok(await h.post('/api/dcim/platforms/', { name: 'junos', slug: 'junos', manufacturer: other.id }));
    assert.deepEqual(ids(await h.get(`/api/dcim/platforms/?available_for_device_type=${w.type.id}&ordering=name`)), [mine.id, any.id]);
    assert.deepEqual(ok(await h.get('/api/dcim/platforms/?available_for_device_type=999999'), 400), { available_for_device_type: ['Select a valid choice. That choice is not one of the available choices.'] });
  });

  it('templates are change-logged and fire event rules; so do the components a device gets from them', async () => {
    const h = api.http;
    const hook = ok(await h.post('/api/extras/webhooks/', { name: 'tpl', payload_url: 'http://127.0.0.1:9/tpl' }));
    ok(await h.post('/api/extras/event-rules/', { name: 'tpl-rule', object_types: ['dcim.interfacetemplate', 'dcim.interface'], event_types: ['object_created'], action_type: 'webhook', action_object_type: 'extras.webhook', action_object_id: hook.id }));
    const dt = ok(await h.post('/api/dcim/device-types/', { manufacturer: w.mfr.id, model: 'Hooked', slug: 'hooked' }));
    const tpl = ok(await h.post('/api/dcim/interface-templates/', { device_type: dt.id, name: 'mgmt0', type: '1000base-t' }));
    const dev = ok(await h.post('/api/dcim/devices/', { name: 'hooked1', device_type: dt.id, role: w.role.id, site: w.site.id }));
    const iface = ok(await h.get(`/api/dcim/interfaces/?device_id=${dev.id}`), 200).results[0];
    const log = ok(await h.get(`/api/core/object-changes/?changed_object_type=dcim.interfacetemplate&changed_object_id=${tpl.id}`), 200).results;
    assert.equal(log[0].action.value, 'create');
    assert.equal(log[0].postchange_data.name, 'mgmt0');
    assert.equal(log[0].postchange_data.device_type, dt.id);
    const ilog = ok(await h.get(`/api/core/object-changes/?changed_object_type=dcim.interface&changed_object_id=${iface.id}`), 200).results;
    assert.equal(ilog[0].request_id, ok(await h.get(`/api/core/object-changes/?changed_object_type=dcim.device&changed_object_id=${dev.id}`), 200).results[0].request_id);
    const tasks = ok(await h.get(`/api/core/background-tasks/?webhook=${hook.id}&limit=100`), 200).results;
    const seen = new Map<string, any>(tasks.map((t: any) => [`${t.object_type}:${t.object_id}:${t.event}`, t]));
    assert.ok(seen.has(`dcim.interfacetemplate:${tpl.id}:created`), [...seen.keys()].join(', '));
    assert.ok(seen.has(`dcim.interface:${iface.id}:created`), [...seen.keys()].join(', '));
    const detail = ok(await h.get(`/api/core/background-tasks/${seen.get(`dcim.interfacetemplate:${tpl.id}:created`).id}/`), 200);
    assert.equal(detail.kwargs.data.url, `/api/dcim/interface-templates/${tpl.id}/`);
    assert.equal(detail.kwargs.data.device_type.id, dt.id);
  });
});
