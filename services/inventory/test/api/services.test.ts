import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

/**
 * NetBox 4.3's application services (`/api/ipam/services/`), which Ansible's inventory reads by default
 * (services of the hosts it lists, by `parent_object_id`) and its netbox_service module writes.
 */
forEachStorage('inventory API: application services on devices and virtual machines', (storage) => {
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
    const b = await seedBasics(api, 'S');
    const dev = ok(await h.post('/api/dcim/devices/', { name: 'web1', site: b.site.id, device_type: b.type.id, role: b.role.id }));
    const ctype = ok(await h.post('/api/virtualization/cluster-types/', { name: 'KVM', slug: 'kvm' }));
    const cl = ok(await h.post('/api/virtualization/clusters/', { name: 'k1', type: ctype.id }));
    const vm = ok(await h.post('/api/virtualization/virtual-machines/', { name: 'db1', cluster: cl.id }));
    const ip = ok(await h.post('/api/ipam/ip-addresses/', { address: '192.0.2.10/24' }));
    w = { ...b, dev, vm, ip };
  });
  after(() => api.close());

  it('create, represent with its parent, filter by parent, port, address; refuse bad ports and parents', async () => {
    const h = api.http;
    const web = ok(await h.post('/api/ipam/services/', { parent_object_type: 'dcim.device', parent_object_id: w.dev.id, name: 'https', protocol: 'tcp', ports: [443, 8443], ipaddresses: [w.ip.id] }));
    assert.deepEqual(Object.keys(web).slice(0, 12), ['id', 'url', 'display_url', 'display', 'parent_object_type', 'parent_object_id', 'parent', 'name', 'protocol', 'ports', 'ipaddresses', 'description']);
    assert.equal(web.display, 'https (TCP/443, 8443)');
    assert.equal(web.parent.id, w.dev.id);
    assert.equal(web.parent.name, 'web1');
    assert.deepEqual(web.protocol, { value: 'tcp', label: 'TCP' });
    assert.deepEqual(web.ports, [443, 8443]);
    assert.equal(web.ipaddresses[0].id, w.ip.id);
    assert.equal(web.display_url, `${api.server.url}/ipam/services/${web.id}/`);
    const pg = ok(await h.post('/api/ipam/services/', { parent_object_type: 'virtualization.virtualmachine', parent_object_id: w.vm.id, name: 'pg', protocol: 'tcp', ports: [5432] }));
    assert.equal(pg.parent.id, w.vm.id);
    assert.deepEqual(ids(await h.get(`/api/ipam/services/?parent_object_id=${w.dev.id}&parent_object_type=dcim.device`)), [web.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/services/?device_id=${w.dev.id}`)), [web.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/services/?virtual_machine=db1')), [pg.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/services/?port=8443')), [web.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/services/?port=44')), []);
    assert.deepEqual(ids(await h.get(`/api/ipam/services/?ip_address_id=${w.ip.id}`)), [web.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/services/?ip_address=192.0.2.10/24')), [web.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/services/?protocol=tcp&name=pg')), [pg.id]);
    const badPort = await h.post('/api/ipam/services/', { parent_object_type: 'dcim.device', parent_object_id: w.dev.id, name: 'x', protocol: 'udp', ports: [70000] });
    assert.equal(badPort.status, 400);
    assert.deepEqual(badPort.body, { ports: ['Item 1 in the array did not validate: Ensure this value is less than or equal to 65535.'] });
    const noPorts = await h.post('/api/ipam/services/', { parent_object_type: 'dcim.device', parent_object_id: w.dev.id, name: 'x', protocol: 'udp', ports: [] });
    assert.deepEqual(noPorts.body, { ports: ['This list may not be empty.'] });
    const badParent = await h.post('/api/ipam/services/', { parent_object_type: 'dcim.device', parent_object_id: 999999, name: 'x', protocol: 'udp', ports: [53] });
    assert.equal(badParent.status, 400);
    assert.ok(badParent.body.parent_object_id, JSON.stringify(badParent.body));
    const badType = await h.post('/api/ipam/services/', { parent_object_type: 'dcim.site', parent_object_id: 1, name: 'x', protocol: 'udp', ports: [53] });
    assert.equal(badType.status, 400);
    assert.ok(badType.body.parent_object_type);
    // Deleting the device deletes its services (a generic relation), change-logged.
    assert.equal((await h.delete(`/api/dcim/devices/${w.dev.id}/`)).status, 204);
    assert.equal((await h.get(`/api/ipam/services/${web.id}/`)).status, 404);
    const logged = ok(await h.get(`/api/core/object-changes/?changed_object_type=ipam.service&changed_object_id=${web.id}&action=delete`), 200);
    assert.equal(logged.count, 1);
  });
});
