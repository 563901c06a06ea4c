import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

/**
 * NetBox's virtualization app as its clients use it: Ansible's inventory reads /api/virtualization/*
 * and the VM filters from /api/schema/; its modules create clusters, VMs, VM interfaces, disks and
 * IP addresses assigned to VM interfaces. Rules of NetBox's clean() and the change log included.
 */
forEachStorage('inventory API: virtualization (clusters, virtual machines, VM interfaces, virtual disks)', (storage) => {
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
    const b = await seedBasics(api, 'V');
    const ctype = ok(await h.post('/api/virtualization/cluster-types/', { name: 'VMware', slug: 'vmware' }));
    const cgroup = ok(await h.post('/api/virtualization/cluster-groups/', { name: 'Prod', slug: 'prod' }));
    const cl = ok(await h.post('/api/virtualization/clusters/', { name: 'c1', type: ctype.id, group: cgroup.id }));
    const host = ok(await h.post('/api/dcim/devices/', { name: 'esx1', site: b.site.id, device_type: b.type.id, role: b.role.id, cluster: cl.id }));
    w = { ...b, ctype, cgroup, cl, host };
  });
  after(() => api.close());

  it('the app root, list and detail, with NetBox 4.3 fields, briefs and counts', async () => {
    const h = api.http;
    const root = ok(await h.get('/api/virtualization/'), 200);
    assert.deepEqual(Object.keys(root).sort(), ['cluster-groups', 'cluster-types', 'clusters', 'interfaces', 'virtual-disks', 'virtual-machines']);
    const api_ = ok(await h.get('/api/'), 200);
    assert.ok(api_.virtualization.endsWith('/api/virtualization/'));
    const c = ok(await h.get(`/api/virtualization/clusters/${w.cl.id}/`), 200);
    assert.deepEqual(Object.keys(c), [
      'id', 'url', 'display_url', 'display', 'name', 'type', 'group', 'status', 'tenant', 'scope_type', 'scope_id', 'scope',
      'description', 'comments', 'tags', 'custom_fields', 'created', 'last_updated',
      'device_count', 'virtualmachine_count', 'allocated_vcpus', 'allocated_memory', 'allocated_disk',
    ]);
    assert.equal(c.display_url, `${api.server.url}/virtualization/clusters/${w.cl.id}/`);
    assert.deepEqual(c.type, { id: w.ctype.id, url: `${api.server.url}/api/virtualization/cluster-types/${w.ctype.id}/`, display: 'VMware', name: 'VMware', slug: 'vmware', description: '', cluster_count: 1 });
    assert.deepEqual(c.status, { value: 'active', label: 'Active' });
    assert.equal(c.device_count, 1);
    assert.equal(c.allocated_vcpus, null);
    const dev = ok(await h.get(`/api/dcim/devices/${w.host.id}/`), 200);
    assert.equal(dev.cluster.id, w.cl.id);
    assert.deepEqual(ids(await h.get(`/api/dcim/devices/?cluster_id=${w.cl.id}`)), [w.host.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/devices/?cluster_group=prod')), [w.host.id]);
  });

  it('virtual machines: create with NetBox rules, interfaces, disks, primary IP on its interface, filters, counts and sums', async () => {
    const h = api.http;
    const none = await h.post('/api/virtualization/virtual-machines/', { name: 'vm0' });
    assert.equal(none.status, 400);
    assert.deepEqual(none.body, { cluster: ['A virtual machine must be assigned to a site and/or cluster.'] });
    const hostWithout = await h.post('/api/virtualization/virtual-machines/', { name: 'vm0', site: w.site.id, device: w.host.id });
    assert.deepEqual(hostWithout.body, { device: ['Must specify a cluster when assigning a host device.'] });
    const vm = ok(await h.post('/api/virtualization/virtual-machines/', { name: 'vm1', cluster: w.cl.id, device: w.host.id, role: w.role.id, vcpus: 2.5, memory: 4096, status: 'staged' }));
    assert.deepEqual(vm.status, { value: 'staged', label: 'Staged' });
    assert.equal(vm.cluster.id, w.cl.id);
    assert.equal(Number(vm.vcpus), 2.5);
    assert.equal(vm.primary_ip, null);
    assert.deepEqual(vm.config_context, {});
    for (const k of ['interface_count', 'virtual_disk_count', 'config_template', 'local_context_data', 'primary_ip4', 'primary_ip6', 'serial']) assert.ok(k in vm, k);
    const vm2 = ok(await h.post('/api/virtualization/virtual-machines/', { name: 'vm2', site: w.site.id, vcpus: 1, memory: 1024, local_context_data: { ntp: ['a'] } }));
    assert.deepEqual(vm2.config_context, { ntp: ['a'] });
    const eth0 = ok(await h.post('/api/virtualization/interfaces/', { virtual_machine: vm.id, name: 'eth0', mtu: 1500 }));
    assert.equal(eth0.virtual_machine.id, vm.id);
    assert.equal(eth0.display_url, `${api.server.url}/virtualization/interfaces/${eth0.id}/`);
    assert.equal(eth0.mac_address, null);
    const dup = await h.post('/api/virtualization/interfaces/', { virtual_machine: vm.id, name: 'eth0' });
    assert.equal(dup.status, 400);
    ok(await h.post('/api/virtualization/virtual-disks/', { virtual_machine: vm.id, name: 'root', size: 20000 }));
    ok(await h.post('/api/virtualization/virtual-disks/', { virtual_machine: vm.id, name: 'data', size: 5000 }));
    const disk = await h.patch(`/api/virtualization/virtual-machines/${vm.id}/`, { disk: 1 });
    assert.deepEqual(disk.body, { disk: ['The specified disk size (1) must match the aggregate size of assigned virtual disks (25000).'] });
    ok(await h.patch(`/api/virtualization/virtual-machines/${vm.id}/`, { disk: 25000 }), 200);
    // An IP address on a VM interface (the Ansible IP module's assigned_object), then the VM's primary IPv4.
    const ip = ok(await h.post('/api/ipam/ip-addresses/', { address: '10.0.0.5/24', assigned_object_type: 'virtualization.vminterface', assigned_object_id: eth0.id }));
    assert.equal(ip.assigned_object.id, eth0.id);
    assert.equal(ip.assigned_object.virtual_machine.id, vm.id);
    const stray = ok(await h.post('/api/ipam/ip-addresses/', { address: '10.0.0.6/24' }));
    const wrong = await h.patch(`/api/virtualization/virtual-machines/${vm.id}/`, { primary_ip4: stray.id });
    assert.deepEqual(wrong.body, { primary_ip4: ['The specified IP address (10.0.0.6/24) is not assigned to this VM.'] });
    const withIp = ok(await h.patch(`/api/virtualization/virtual-machines/${vm.id}/`, { primary_ip4: ip.id }), 200);
    assert.equal(withIp.primary_ip.id, ip.id);
    assert.equal(withIp.interface_count, 1);
    assert.equal(withIp.virtual_disk_count, 2);
    const missingVmIface = await h.post('/api/ipam/ip-addresses/', { address: '10.0.0.7/24', assigned_object_type: 'virtualization.vminterface', assigned_object_id: 999999 });
    assert.equal(missingVmIface.status, 400);
    assert.ok(missingVmIface.body.assigned_object_id, JSON.stringify(missingVmIface.body));
    // Filters Ansible and pynetbox use.
    assert.deepEqual(ids(await h.get(`/api/virtualization/virtual-machines/?cluster_id=${w.cl.id}`)), [vm.id]);
    assert.deepEqual(ids(await h.get('/api/virtualization/virtual-machines/?cluster=c1&status=staged')), [vm.id]);
    assert.deepEqual(ids(await h.get('/api/virtualization/virtual-machines/?cluster_type=vmware')), [vm.id]);
    assert.deepEqual(ids(await h.get('/api/virtualization/virtual-machines/?has_primary_ip=false')), [vm2.id]);
    assert.deepEqual(ids(await h.get('/api/virtualization/virtual-machines/?cluster_id=null')), [vm2.id]);
    assert.deepEqual(ids(await h.get(`/api/virtualization/virtual-machines/?site_id=${w.site.id}`)), [vm2.id]);
    assert.deepEqual(ids(await h.get('/api/virtualization/interfaces/?virtual_machine=vm1')), [eth0.id]);
    assert.deepEqual(ids(await h.get(`/api/virtualization/virtual-disks/?virtual_machine_id=${vm.id}&size__gte=10000`)).length, 1);
    assert.deepEqual(ids(await h.get(`/api/ipam/ip-addresses/?vminterface_id=${eth0.id}`)), [ip.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?virtual_machine=vm1')), [ip.id]);
    assert.deepEqual(ids(await h.get(`/api/ipam/ip-addresses/?virtual_machine_id=${vm.id}`)), [ip.id]);
    assert.deepEqual(ids(await h.get('/api/ipam/ip-addresses/?assigned_to_interface=true')), [ip.id]);
    assert.deepEqual((await h.get('/api/ipam/ip-addresses/?vminterface=nope')).body, { vminterface: ['Select a valid choice. nope is not one of the available choices.'] });
    const c = ok(await h.get(`/api/virtualization/clusters/${w.cl.id}/`), 200);
    assert.equal(c.virtualmachine_count, 1);
    assert.equal(Number(c.allocated_vcpus), 2.5);
    assert.equal(c.allocated_memory, 4096);
    assert.equal(c.allocated_disk, 25000);
    // A VM interface's IPs are counted apart from a device interface with the same id.
    assert.equal(ok(await h.get(`/api/virtualization/interfaces/${eth0.id}/`), 200).count_ipaddresses, 1);
    // Deleting the VM removes its interfaces, disks and their IP addresses, each change-logged.
    const protectedCluster = await h.delete(`/api/virtualization/clusters/${w.cl.id}/`);
    assert.equal(protectedCluster.status, 409);
    const del = await h.delete(`/api/virtualization/virtual-machines/${vm.id}/`);
    assert.equal(del.status, 204);
    assert.equal((await h.get(`/api/virtualization/interfaces/${eth0.id}/`)).status, 404);
    assert.equal((await h.get(`/api/ipam/ip-addresses/${ip.id}/`)).status, 404);
    const changes = ok(await h.get(`/api/core/object-changes/?changed_object_type=virtualization.virtualdisk&action=delete`), 200);
    assert.equal(changes.count, 2);
  });

  it('unknown NetBox virtualization filters are refused, the schema lists the VM filters Ansible reads', async () => {
    const h = api.http;
    // The schema is built from the registry, never read from the storage (and costly to build): SQLite only.
    if (storage === 'sqlite') {
      const doc = ok(await h.get('/api/schema/?format=json'), 200);
      // Ansible's nb_inventory reads `p["name"]` of every parameter of this GET: they must be inline objects, not `$ref`s.
      const params = doc.paths['/api/virtualization/virtual-machines/'].get.parameters as Array<{ name: string }>;
      const names = params.map((p) => p.name);
      for (const n of ['cluster_id', 'site', 'status', 'role', 'tenant', 'platform']) assert.ok(names.includes(n), `${n} not among the inline parameters: ${JSON.stringify(params).slice(0, 300)}`);
      for (const p of ['/api/virtualization/clusters/', '/api/virtualization/interfaces/', '/api/virtualization/virtual-disks/', '/api/virtualization/cluster-types/']) assert.ok(doc.paths[p], p);
    }
    const r = await h.get('/api/virtualization/virtual-machines/?cluster_id=abc');
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { cluster_id: ['Select a valid choice. abc is not one of the available choices.'] });
  });
});
