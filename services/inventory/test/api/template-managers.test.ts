import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

/**
 * Config templates reach the object's related objects through Django's related managers, as NetBox's render_config
 * (`device.interfaces.all()`, `.count()`, `.filter(type='virtual')`, `.order_by('-name')`), in the sandboxed render pool.
 */
forEachStorage('inventory API: related managers in config templates', (storage) => {
  let api: Api;
  let dev: any;
  let vm: any;
  before(async () => {
    api = await startApi(storage);
    const w = await seedBasics(api, 'M');
    const h = api.http;
    dev = (await h.post('/api/dcim/devices/', { name: 'rtr1', site: w.site.id, device_type: w.type.id, role: w.role.id })).body;
    for (const [name, type, enabled] of [['eth10', '1000base-t', true], ['eth2', '1000base-t', false], ['lo0', 'virtual', true]] as const) {
      assert.equal((await h.post('/api/dcim/interfaces/', { device: dev.id, name, type, enabled })).status, 201);
    }
    assert.equal((await h.post('/api/ipam/services/', { parent_object_type: 'dcim.device', parent_object_id: dev.id, name: 'ssh', protocol: 'tcp', ports: [22] })).status, 201);
    const ct = (await h.post('/api/virtualization/cluster-types/', { name: 'KVM', slug: 'kvm' })).body;
    const cl = (await h.post('/api/virtualization/clusters/', { name: 'c1', type: ct.id })).body;
    vm = (await h.post('/api/virtualization/virtual-machines/', { name: 'vm1', cluster: cl.id })).body;
    for (const [name, size] of [['root', 20], ['data', 100]] as const) assert.equal((await h.post('/api/virtualization/virtual-disks/', { virtual_machine: vm.id, name, size })).status, 201);
  });
  after(() => api.close());

  const render = async (path: string, code: string) => {
    const tpl = await api.http.post('/api/extras/config-templates/', { name: `t${Math.random()}`, template_code: code });
    assert.equal(tpl.status, 201, tpl.text);
    return api.http.post(`${path}render-config/`, { config_template_id: tpl.body.id });
  };
  const content = async (path: string, code: string) => {
    const r = await render(path, code);
    assert.equal(r.status, 200, r.text);
    return r.body.content as string;
  };

  it('device managers: all() in natural order, count, filter, exclude, order_by, first, exists; bool of an empty set', async () => {
    const d = `/api/dcim/devices/${dev.id}/`;
    assert.equal(await content(d, '{% for i in device.interfaces.all() %}{{ i.name }} {% endfor %}'), 'eth2 eth10 lo0 ');
    assert.equal(await content(d, '{{ device.interfaces.count() }}/{{ device.interfaces.all()|length }}'), '3/3');
    assert.equal(await content(d, "{{ device.interfaces.filter(type='virtual').first().name }}"), 'lo0');
    assert.equal(await content(d, '{{ device.interfaces.exclude(enabled=False).order_by("-name")|map(attribute="name")|join(",") }}'), 'lo0,eth10');
    assert.equal(await content(d, "{{ device.interfaces.get(name='eth2').enabled }}"), 'False');
    assert.equal(await content(d, "{{ device.interfaces.filter(name__in=['eth2', 'lo0']).count() }} {{ device.interfaces.filter(name__icontains='ETH').count() }}"), '2 2');
    assert.equal(await content(d, '{{ device.services.all()|map(attribute="name")|join(",") }} {{ device.services.first().ports }}'), 'ssh [22]');
    assert.equal(await content(d, '{% if device.consoleports.all() %}yes{% else %}none{% endif %} {{ device.consoleports.exists() }} {{ device.consoleports.first() }}'), 'none False None');
    assert.equal(await content(d, '{{ (device.interfaces.all()|first).name }}'), 'eth2');
    // The REST representation is unchanged: the managers are attributes, not keys.
    assert.equal(await content(d, "{{ 'interfaces' in device.keys()|list }} {{ (device|tojson).find('\"interfaces\"') }}"), 'False -1');
    assert.equal(await content(d, '{{ device.name }} {{ device.interface_count }}'), 'rtr1 3');
  });

  it('VM managers; a manager is not iterable, and the sandbox still refuses internals', async () => {
    assert.equal(await content(`/api/virtualization/virtual-machines/${vm.id}/`, "{{ virtualmachine.virtualdisks.all()|sum(attribute='size') }} {{ virtualmachine.interfaces.count() }}"), '120 0');
    const d = `/api/dcim/devices/${dev.id}/`;
    const notIterable = await render(d, '{% for i in device.interfaces %}{{ i }}{% endfor %}');
    assert.equal(notIterable.status, 400);
    assert.match(notIterable.body.detail, /'RelatedManager' object is not iterable/);
    const unsafe = await render(d, '{{ device.interfaces.all().__class__.__mro__ }}');
    assert.equal(unsafe.status, 400);
    assert.match(unsafe.body.detail, /SecurityError|unsafe/i);
    assert.equal(await content(d, '{{ device.interfaces.items }}|{{ device.interfaces.constructor }}'), '|');
    const lookup = await render(d, "{{ device.interfaces.filter(name__regex='x').count() }}");
    assert.equal(lookup.status, 400);
    assert.match(lookup.body.detail, /Unsupported lookup 'regex' for field 'name'/);
    // A client's own `__related__` in the request data does not reach the template as managers.
    const tpl = await api.http.post('/api/extras/config-templates/', { name: 'own', template_code: '{{ device.interfaces.count() }}' });
    const r = await api.http.post(`${d}render-config/`, { config_template_id: tpl.body.id, __related__: { device: { interfaces: { items: [1, 2, 3, 4, 5] } } } });
    assert.equal(r.body.content, '3');
  });

  it("managers beyond the object's own children: the objects it points at, their children, and the children's relations", async () => {
    const h = api.http;
    const ok = (r: { status: number; body: any }) => {
      assert.ok(r.status === 201 || r.status === 200, JSON.stringify(r.body));
      return r.body;
    };
    const tenant = ok(await h.post('/api/tenancy/tenants/', { name: 'T-M', slug: 't-m' }));
    ok(await h.patch(`/api/dcim/devices/${dev.id}/`, { tenant: tenant.id }));
    ok(await h.post('/api/dcim/racks/', { name: 'r1', site: dev.site.id }));
    const rtr2 = ok(await h.post('/api/dcim/devices/', { name: 'rtr2', site: dev.site.id, device_type: dev.device_type.id, role: dev.role.id, tenant: tenant.id, status: 'planned' }));
    ok(await h.post('/api/dcim/interfaces/', { device: rtr2.id, name: 'ge0', type: '1000base-t' }));
    const eth10 = (await h.get(`/api/dcim/interfaces/?device_id=${dev.id}&name=eth10`)).body.results[0];
    ok(await h.post('/api/ipam/ip-addresses/', { address: '10.0.0.1/24', assigned_object_type: 'dcim.interface', assigned_object_id: eth10.id }));
    ok(await h.post('/api/ipam/ip-addresses/', { address: '10.0.0.9/24', tenant: tenant.id }));
    const d = `/api/dcim/devices/${dev.id}/`;
    assert.equal(await content(d, "{{ device.site.devices.count() }}: {% for x in device.site.devices.all() %}{{ x.name }} {% endfor %}{{ device.site.racks.all()|map(attribute='name')|join(',') }}"), '2: rtr1 rtr2 r1');
    assert.equal(await content(d, "{% for i in device.interfaces.all() %}{{ i.name }}={{ i.ip_addresses.all()|map(attribute='address')|join(',') }};{% endfor %}"), 'eth2=;eth10=10.0.0.1/24;lo0=;');
    assert.equal(await content(d, "{{ device.tenant.devices.filter(status='active')|map(attribute='name')|join(',') }}|{{ device.tenant.devices.count() }}|{{ device.tenant.ip_addresses.first().address }}"), 'rtr1|2|10.0.0.9/24');
    assert.equal(await content(d, '{% for x in device.site.devices.all() %}{{ x.name }}:{{ x.interfaces.count() }} {% endfor %}'), 'rtr1:3 rtr2:1 ');
    assert.equal(await content(d, '{{ device.role.devices.count() }} {{ device.device_type.instances.count() }} {{ device.site.devices.get(name="rtr2").tenant.name }}'), '2 2 T-M');
    // Representations are unchanged: the managers are attributes, not keys.
    assert.equal(await content(d, "{{ (device.site|tojson).find('devices') }} {{ 'racks' in device.site.keys()|list }} {{ device.site.racks is defined }}"), '-1 False True');
  });
});
