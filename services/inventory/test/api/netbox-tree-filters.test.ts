import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

/**
 * NetBox's tree filters (TreeNodeMultipleChoiceFilter): a region, site group, location or tenant group
 * named in a filter stands for its whole subtree, also when the object reaches it through its site,
 * device or tenant; `ancestor` matches everything below a group; `__n` excludes the subtree.
 */
forEachStorage('inventory API: NetBox tree filters over descendants', (storage) => {
  let api: Api;
  const ids = (r: { status: number; body: any }) => {
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.results.map((o: any) => o.id).sort((a: number, b: number) => a - b);
  };
  const ok = (r: { status: number; body: any }, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body;
  };
  let w: Record<string, any>;

  before(async () => {
    api = await startApi(storage);
    const h = api.http;
    const b = await seedBasics(api, 'T');
    // Europe > France > Paris; Asia (a sibling tree).
    const europe = ok(await h.post('/api/dcim/regions/', { name: 'Europe', slug: 'europe' }));
    const france = ok(await h.post('/api/dcim/regions/', { name: 'France', slug: 'france', parent: europe.id }));
    const paris = ok(await h.post('/api/dcim/regions/', { name: 'Paris', slug: 'paris', parent: france.id }));
    const asia = ok(await h.post('/api/dcim/regions/', { name: 'Asia', slug: 'asia' }));
    const edge = ok(await h.post('/api/dcim/site-groups/', { name: 'Edge', slug: 'edge' }));
    const pop = ok(await h.post('/api/dcim/site-groups/', { name: 'PoP', slug: 'pop', parent: edge.id }));
    const customers = ok(await h.post('/api/tenancy/tenant-groups/', { name: 'Customers', slug: 'customers' }));
    const retail = ok(await h.post('/api/tenancy/tenant-groups/', { name: 'Retail', slug: 'retail', parent: customers.id }));
    const shop = ok(await h.post('/api/tenancy/tenants/', { name: 'Shop', slug: 'shop', group: retail.id }));
    const other = ok(await h.post('/api/tenancy/tenants/', { name: 'Other', slug: 'other' }));
    const par1 = ok(await h.post('/api/dcim/sites/', { name: 'PAR1', slug: 'par1', region: paris.id, group: pop.id, tenant: shop.id }));
    const fr1 = ok(await h.post('/api/dcim/sites/', { name: 'FR1', slug: 'fr1', region: france.id }));
    const tyo1 = ok(await h.post('/api/dcim/sites/', { name: 'TYO1', slug: 'tyo1', region: asia.id, group: edge.id, tenant: other.id }));
    const bare = ok(await h.post('/api/dcim/sites/', { name: 'Nowhere', slug: 'nowhere' }));
    const hall = ok(await h.post('/api/dcim/locations/', { name: 'Hall', slug: 'hall', site: par1.id }));
    const room = ok(await h.post('/api/dcim/locations/', { name: 'Room', slug: 'room', site: par1.id, parent: hall.id }));
    const cage = ok(await h.post('/api/dcim/locations/', { name: 'Cage', slug: 'cage', site: par1.id, parent: room.id }));
    const rackRoom = ok(await h.post('/api/dcim/racks/', { name: 'R1', site: par1.id, location: room.id }));
    const rackTyo = ok(await h.post('/api/dcim/racks/', { name: 'R2', site: tyo1.id }));
    const dev = (name: string, site: number, extra: Record<string, unknown> = {}) => h.post('/api/dcim/devices/', { name, site, device_type: b.type.id, role: b.role.id, ...extra });
    const dPar = ok(await dev('d-par', par1.id, { location: cage.id, tenant: shop.id }));
    const dFr = ok(await dev('d-fr', fr1.id));
    const dTyo = ok(await dev('d-tyo', tyo1.id, { tenant: other.id }));
    const dHall = ok(await dev('d-hall', par1.id, { location: hall.id }));
    const ifPar = ok(await h.post('/api/dcim/interfaces/', { device: dPar.id, name: 'eth0', type: '1000base-t' }));
    const ifTyo = ok(await h.post('/api/dcim/interfaces/', { device: dTyo.id, name: 'eth0', type: '1000base-t' }));
    const vlanPar = ok(await h.post('/api/ipam/vlans/', { vid: 10, name: 'v10', site: par1.id }));
    const vlanTyo = ok(await h.post('/api/ipam/vlans/', { vid: 20, name: 'v20', site: tyo1.id }));
    const ipShop = ok(await h.post('/api/ipam/ip-addresses/', { address: '192.0.2.1/24', tenant: shop.id }));
    ok(await h.post('/api/ipam/ip-addresses/', { address: '192.0.2.2/24', tenant: other.id }));
    w = { europe, france, paris, asia, edge, pop, customers, retail, shop, par1, fr1, tyo1, bare, hall, room, cage, rackRoom, rackTyo, dPar, dFr, dTyo, dHall, ifPar, ifTyo, vlanPar, vlanTyo, ipShop };
  });
  after(() => api.close());

  it('sites: region and site group match their whole subtree, by id and by slug', async () => {
    const h = api.http;
    assert.deepEqual(ids(await h.get(`/api/dcim/sites/?region_id=${w.europe.id}`)), [w.par1.id, w.fr1.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get('/api/dcim/sites/?region=europe')), [w.par1.id, w.fr1.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get(`/api/dcim/sites/?region_id=${w.paris.id}`)), [w.par1.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/sites/?region_id=${w.paris.id}&region_id=${w.asia.id}`)), [w.par1.id, w.tyo1.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/sites/?group=edge')), [w.par1.id, w.tyo1.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/sites/?group_id=${w.pop.id}`)), [w.par1.id]);
    // __n excludes the subtree and keeps the sites without a region, as Django's exclude() does.
    const siteIds = (await h.get('/api/dcim/sites/?region__n=europe')).body.results.map((s: any) => s.slug).sort();
    assert.ok(siteIds.includes('tyo1') && siteIds.includes('nowhere') && !siteIds.includes('par1') && !siteIds.includes('fr1'), JSON.stringify(siteIds));
    // Unknown nodes are refused as django-filter refuses them, never ignored.
    assert.deepEqual((await h.get('/api/dcim/sites/?region=atlantis')).body, { region: ['Select a valid choice. atlantis is not one of the available choices.'] });
    assert.equal((await h.get('/api/dcim/sites/?region_id=999999')).status, 400);
  });

  it('devices, racks, locations, interfaces and VLANs: region and site group through their site', async () => {
    const h = api.http;
    assert.deepEqual(ids(await h.get('/api/dcim/devices/?region=europe')), [w.dPar.id, w.dFr.id, w.dHall.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get(`/api/dcim/devices/?region_id=${w.france.id}&site_group=pop`)), [w.dPar.id, w.dHall.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/devices/?site_group=edge&region=asia')), [w.dTyo.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/racks/?region=europe')), [w.rackRoom.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/racks/?site_group_id=${w.edge.id}`)), [w.rackRoom.id, w.rackTyo.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/locations/?region=france')), [w.hall.id, w.room.id, w.cage.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get('/api/dcim/locations/?region=asia')), []);
    assert.deepEqual(ids(await h.get('/api/dcim/interfaces/?region=europe')), [w.ifPar.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?site_group_id=${w.edge.id}`)), [w.ifPar.id, w.ifTyo.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/vlans/?region=asia')), [w.vlanTyo.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/vlans/?region__n=asia')), [w.vlanPar.id]);
  });

  it('location filters cover nested locations; ancestor matches everything below a group', async () => {
    const h = api.http;
    assert.deepEqual(ids(await h.get(`/api/dcim/devices/?location_id=${w.hall.id}`)), [w.dPar.id, w.dHall.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/devices/?location=room')), [w.dPar.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/devices/?location_id__n=${w.room.id}`)), [w.dFr.id, w.dTyo.id, w.dHall.id].sort((a, b) => a - b));
    assert.deepEqual(ids(await h.get('/api/dcim/racks/?location=hall')), [w.rackRoom.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/interfaces/?location_id=${w.hall.id}`)), [w.ifPar.id]);
    // parent is the direct parent only; ancestor is any level above (the node itself excluded).
    assert.deepEqual(ids(await h.get(`/api/dcim/locations/?parent_id=${w.hall.id}`)), [w.room.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/locations/?ancestor_id=${w.hall.id}`)), [w.room.id, w.cage.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/regions/?ancestor=europe')), [w.france.id, w.paris.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/regions/?parent_id=${w.europe.id}`)), [w.france.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/site-groups/?ancestor=edge')), [w.pop.id]);
    assert.deepEqual(ids(await h.get('/api/tenancy/tenant-groups/?ancestor=customers')), [w.retail.id]);
  });

  it('tenant groups: tenants by group subtree, tenant-scoped objects by tenant_group', async () => {
    const h = api.http;
    assert.deepEqual(ids(await h.get('/api/tenancy/tenants/?group=customers')), [w.shop.id]);
    assert.deepEqual(ids(await h.get(`/api/tenancy/tenants/?group_id=${w.retail.id}`)), [w.shop.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/sites/?tenant_group=customers')), [w.par1.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/devices/?tenant_group_id=${w.customers.id}`)), [w.dPar.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?tenant_group=retail')), [w.ipShop.id]);
    const rest = ids(await h.get('/api/dcim/devices/?tenant_group__n=customers'));
    assert.ok(!rest.includes(w.dPar.id) && rest.includes(w.dFr.id) && rest.includes(w.dTyo.id), JSON.stringify(rest));
    assert.equal((await h.get('/api/dcim/devices/?tenant_group=nope')).status, 400);
  });

  it('a whole subtree moves with its root: re-parenting a region changes what the filter matches', async () => {
    const h = api.http;
    ok(await h.patch(`/api/dcim/regions/${w.france.id}/`, { parent: w.asia.id }), 200);
    try {
      assert.deepEqual(ids(await h.get('/api/dcim/devices/?region=europe')), []);
      assert.deepEqual(ids(await h.get('/api/dcim/devices/?region=asia')), [w.dPar.id, w.dFr.id, w.dTyo.id, w.dHall.id].sort((a, b) => a - b));
    } finally {
      ok(await h.patch(`/api/dcim/regions/${w.france.id}/`, { parent: w.europe.id }), 200);
    }
  });
});
