import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

/** Power panels and feeds (cabled to power ports), modules in bays, inventory items, contacts, route targets. */
forEachStorage('inventory API: power, modules, inventory items, contacts, route targets', (storage) => {
  let api: Api;
  let w: Record<string, any>;
  const ok = (r: { status: number; body: any }, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body;
  };
  before(async () => {
    api = await startApi(storage);
    const b = await seedBasics(api, 'M');
    const dev = ok(await api.http.post('/api/dcim/devices/', { name: 'r1', site: b.site.id, device_type: b.type.id, role: b.role.id }));
    w = { ...b, dev };
  });
  after(() => api.close());

  it('a power feed from a panel feeds a device power port over a cable; trace and connected endpoints', async () => {
    const h = api.http;
    const panel = ok(await h.post('/api/dcim/power-panels/', { site: w.site.id, name: 'P1' }));
    const feed = ok(await h.post('/api/dcim/power-feeds/', { power_panel: panel.id, name: 'F1', phase: 'three-phase', voltage: 400, amperage: 32 }));
    assert.equal(feed.available_power, 17736); // round(400 × 32 × 0.8 × 1.732), as NetBox's PowerFeed.save()
    const psu = ok(await h.post('/api/dcim/power-ports/', { device: w.dev.id, name: 'PSU1' }));
    const cable = ok(await h.post('/api/dcim/cables/', { a_terminations: [{ object_type: 'dcim.powerfeed', object_id: feed.id }], b_terminations: [{ object_type: 'dcim.powerport', object_id: psu.id }] }));
    const trace = ok(await h.get(`/api/dcim/power-feeds/${feed.id}/trace/`), 200);
    assert.equal(trace[0][1].id, cable.id);
    assert.equal(trace[0][2][0].name, 'PSU1');
    assert.equal(ok(await h.get(`/api/dcim/power-ports/${psu.id}/`), 200).connected_endpoints[0].id, feed.id);
    assert.equal(ok(await h.get(`/api/dcim/power-panels/${panel.id}/`), 200).powerfeed_count, 1);
    assert.deepEqual(ok(await h.get(`/api/dcim/cables/?powerfeed_id=${feed.id}`), 200).results.map((c: any) => c.id), [cable.id]);
    assert.equal((await h.delete(`/api/dcim/power-panels/${panel.id}/`)).status, 409);
  });

  it('modules sit in module bays of their device; inventory items nest; contacts and route targets', async () => {
    const h = api.http;
    const mt = ok(await h.post('/api/dcim/module-types/', { manufacturer: w.mfr.id, model: 'LC-48' }));
    const bay = ok(await h.post('/api/dcim/module-bays/', { device: w.dev.id, name: 'Slot 1', position: '1' }));
    const mod = ok(await h.post('/api/dcim/modules/', { device: w.dev.id, module_bay: bay.id, module_type: mt.id, serial: 'S1' }));
    assert.equal(mod.display, `Slot 1: LC-48 (${mod.id})`);
    assert.equal(ok(await h.get(`/api/dcim/module-bays/${bay.id}/`), 200).installed_module.id, mod.id);
    assert.equal((await h.post('/api/dcim/modules/', { device: w.dev.id, module_bay: bay.id, module_type: mt.id })).status, 400);
    const dev = ok(await h.get(`/api/dcim/devices/${w.dev.id}/`), 200);
    assert.equal(dev.module_bay_count, 1);
    const role = ok(await h.post('/api/dcim/inventory-item-roles/', { name: 'Optic', slug: 'optic' }));
    const parent = ok(await h.post('/api/dcim/inventory-items/', { device: w.dev.id, name: 'Chassis', role: role.id }));
    const child = ok(await h.post('/api/dcim/inventory-items/', { device: w.dev.id, name: 'SFP1', parent: parent.id, manufacturer: w.mfr.id, asset_tag: 'A-1' }));
    // NetBox's serializer gives the parent as its id; `_depth` is the level in the tree.
    assert.deepEqual([child.parent, child._depth, parent._depth], [parent.id, 1, 0]);
    assert.deepEqual(ok(await h.get(`/api/dcim/inventory-items/?parent_id=${parent.id}`), 200).results.map((i: any) => i.id), [child.id]);
    assert.equal(ok(await h.get(`/api/dcim/inventory-item-roles/${role.id}/`), 200).inventoryitem_count, 1);
    assert.deepEqual((await h.post('/api/dcim/inventory-items/', { device: w.dev.id, name: 'SFP2', asset_tag: 'A-1' })).body, { asset_tag: ['inventory item with this asset tag already exists.'] });
    const c = ok(await h.post('/api/tenancy/contacts/', { name: 'Ada', email: 'ada@example.com' }));
    assert.equal(c.display, 'Ada');
    assert.equal((await h.post('/api/tenancy/contacts/', { name: 'Bob', email: 'not-an-email' })).status, 400);
    ok(await h.post('/api/tenancy/contact-roles/', { name: 'NOC', slug: 'noc' }));
    ok(await h.post('/api/tenancy/contact-groups/', { name: 'Ops', slug: 'ops' }));
    const rt = ok(await h.post('/api/ipam/route-targets/', { name: '65000:100' }));
    assert.equal(rt.display, '65000:100');
    // Deleting the device removes its modules, bays and inventory items (each change-logged).
    assert.equal((await h.delete(`/api/dcim/devices/${w.dev.id}/`)).status, 204);
    assert.equal((await h.get(`/api/dcim/modules/${mod.id}/`)).status, 404);
    assert.equal((await h.get(`/api/dcim/inventory-items/${child.id}/`)).status, 404);
  });
});
