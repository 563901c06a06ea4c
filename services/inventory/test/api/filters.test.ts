import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

forEachStorage('inventory API: filters, ordering and pagination', (storage) => {
  let api: Api;
  let b: Awaited<ReturnType<typeof seedBasics>>;
  let b2: Awaited<ReturnType<typeof seedBasics>>;
  const ids: Record<string, number> = {};
  before(async () => {
    api = await startApi(storage);
    b = await seedBasics(api, 'a');
    b2 = await seedBasics(api, 'b');
    const h = api.http;
    await h.post('/api/extras/tags/', [
      { name: 'Red', slug: 'red' },
      { name: 'Blue', slug: 'blue' },
    ]);
    const devices = [];
    for (let i = 0; i < 12; i++) {
      devices.push({
        name: `dev${String(i).padStart(2, '0')}`,
        site: i % 3 === 0 ? b2.site.id : b.site.id,
        device_type: i % 2 ? b2.type.id : b.type.id,
        role: b.role.id,
        status: i < 4 ? 'planned' : 'active',
        serial: `SER-${i}`,
        description: i === 5 ? 'The Special One' : '',
        tags: i % 4 === 0 ? [{ slug: 'red' }, { slug: 'blue' }] : i % 2 === 0 ? [{ slug: 'red' }] : [],
      });
    }
    const r = await h.post('/api/dcim/devices/', devices);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    for (const d of r.body) ids[d.name] = d.id;
  });
  after(() => api.close());

  const names = async (query: string) => {
    const r = await api.http.get(`/api/dcim/devices/?${query}`);
    assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
    return r.body.results.map((d: any) => d.name);
  };

  it('paginates with absolute next/previous links', async () => {
    let r = await api.http.get('/api/dcim/devices/?limit=5');
    assert.equal(r.body.count, 12);
    assert.equal(r.body.results.length, 5);
    assert.equal(r.body.next, `${api.server.url}/api/dcim/devices/?limit=5&offset=5`);
    assert.equal(r.body.previous, null);
    r = await api.http.get('/api/dcim/devices/?limit=5&offset=5&status=active');
    assert.equal(r.body.count, 8);
    assert.equal(r.body.next, null);
    assert.equal(r.body.previous, `${api.server.url}/api/dcim/devices/?limit=5&status=active`);
    r = await api.http.get('/api/dcim/devices/?limit=2&offset=6');
    assert.equal(r.body.previous, `${api.server.url}/api/dcim/devices/?limit=2&offset=4`);
    assert.deepEqual(r.body.results.map((d: any) => d.name), ['dev06', 'dev07']);
    r = await api.http.get('/api/dcim/devices/?limit=0');
    assert.equal(r.body.results.length, 12);
    r = await api.http.get('/api/dcim/devices/?limit=abc&offset=-3');
    assert.equal(r.body.results.length, 12);
  });

  it('filters by id, name, q, status, relations, tags and time', async () => {
    assert.deepEqual(await names(`id=${ids.dev01}&id=${ids.dev03}`), ['dev01', 'dev03']);
    assert.deepEqual(await names(`id__gte=${ids.dev10}`), ['dev10', 'dev11']);
    assert.deepEqual(await names('name=dev02&name=dev04'), ['dev02', 'dev04']);
    assert.deepEqual(await names('name__ic=V1'), ['dev10', 'dev11']);
    assert.deepEqual(await names('name__n=dev00&status=planned'), ['dev01', 'dev02', 'dev03']);
    assert.deepEqual(await names('q=special'), ['dev05']);
    assert.deepEqual(await names('q=ser-1'), ['dev01', 'dev10', 'dev11']);
    assert.deepEqual(await names('status=planned'), ['dev00', 'dev01', 'dev02', 'dev03']);
    assert.deepEqual(await names(`site_id=${b2.site.id}`), ['dev00', 'dev03', 'dev06', 'dev09']);
    assert.deepEqual(await names(`site=${b2.site.slug}&status=active`), ['dev06', 'dev09']);
    assert.deepEqual(await names(`device_type_id=${b2.type.id}&site_id=${b2.site.id}`), ['dev03', 'dev09']);
    assert.deepEqual(await names(`role_id=${b2.role.id}`), []);
    assert.deepEqual(await names(`manufacturer_id=${b2.mfr.id}&status=planned`), ['dev01', 'dev03']);
    assert.deepEqual(await names('tag=red&tag=blue'), ['dev00', 'dev04', 'dev08']);
    assert.deepEqual(await names('tag=red&status=planned'), ['dev00', 'dev02']);
    assert.deepEqual(await names('tag__n=red&status=planned'), ['dev01', 'dev03']);
    assert.equal((await names('created__gte=2000-01-01T00:00:00Z')).length, 12);
    assert.deepEqual(await names('created__lte=2000-01-01'), []);
    assert.equal((await names('last_updated__gte=2000-01-01')).length, 12);
    // Unknown parameters are ignored, as NetBox does.
    assert.equal((await names('nonsense=1')).length, 12);
  });

  it('orders as NetBox (name) and by ?ordering', async () => {
    assert.deepEqual((await names('status=planned&ordering=-name')), ['dev03', 'dev02', 'dev01', 'dev00']);
    assert.deepEqual((await names('status=planned&ordering=serial')), ['dev00', 'dev01', 'dev02', 'dev03']);
    assert.deepEqual((await names('status=planned&ordering=-id')), ['dev03', 'dev02', 'dev01', 'dev00']);
  });

  it('orders names naturally, as NetBox', async () => {
    const h = api.http;
    const dev = ids.dev05;
    for (const n of ['eth10', 'eth2', 'eth1', 'eth3/1', 'eth3/10', 'eth3/9']) assert.equal((await h.post('/api/dcim/interfaces/', { device: dev, name: n, type: 'virtual' })).status, 201);
    const r = await h.get(`/api/dcim/interfaces/?device_id=${dev}`);
    assert.deepEqual(r.body.results.map((i: any) => i.name), ['eth1', 'eth2', 'eth3/1', 'eth3/9', 'eth3/10', 'eth10']);
    const d = await h.get(`/api/dcim/interfaces/?device_id=${dev}&ordering=-name`);
    assert.equal(d.body.results[0].name, 'eth10');
    await h.delete('/api/dcim/interfaces/', r.body.results.map((i: any) => ({ id: i.id })));
  });

  it('reports invalid filter values as django-filter does', async () => {
    let r = await api.http.get('/api/dcim/devices/?site_id=99999');
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { site_id: ['Select a valid choice. 99999 is not one of the available choices.'] });
    r = await api.http.get('/api/dcim/devices/?status=bogus&tag=nope');
    assert.deepEqual(r.body, { status: ['Select a valid choice. bogus is not one of the available choices.'], tag: ['Select a valid choice. nope is not one of the available choices.'] });
    r = await api.http.get('/api/dcim/devices/?id=abc');
    assert.deepEqual(r.body, { id: ['Enter a number.'] });
    r = await api.http.get('/api/dcim/devices/?created__gte=yesterday');
    assert.deepEqual(r.body, { created__gte: ['Enter a valid date/time.'] });
  });

  it('filters interfaces and IP addresses by device', async () => {
    const h = api.http;
    const i1 = (await h.post('/api/dcim/interfaces/', { device: ids.dev01, name: 'eth0', type: 'virtual', enabled: false })).body;
    const i2 = (await h.post('/api/dcim/interfaces/', { device: ids.dev02, name: 'eth0', type: '1000base-t' })).body;
    await h.post('/api/ipam/ip-addresses/', [
      { address: '192.0.2.1/24', assigned_object_type: 'dcim.interface', assigned_object_id: i1.id },
      { address: '192.0.2.2/24', assigned_object_type: 'dcim.interface', assigned_object_id: i2.id, status: 'reserved' },
      { address: '198.51.100.1/24' },
    ]);
    let r = await h.get(`/api/dcim/interfaces/?device_id=${ids.dev01}`);
    assert.deepEqual(r.body.results.map((i: any) => i.id), [i1.id]);
    r = await h.get('/api/dcim/interfaces/?enabled=true');
    assert.deepEqual(r.body.results.map((i: any) => i.id), [i2.id]);
    r = await h.get('/api/dcim/interfaces/?device=dev02');
    assert.deepEqual(r.body.results.map((i: any) => i.id), [i2.id]);
    r = await h.get(`/api/ipam/ip-addresses/?device_id=${ids.dev02}`);
    assert.deepEqual(r.body.results.map((i: any) => i.address), ['192.0.2.2/24']);
    r = await h.get(`/api/ipam/ip-addresses/?interface_id=${i1.id}`);
    assert.deepEqual(r.body.results.map((i: any) => i.address), ['192.0.2.1/24']);
    r = await h.get('/api/ipam/ip-addresses/?address=192.0.2.2');
    assert.deepEqual(r.body.results.map((i: any) => i.address), ['192.0.2.2/24']);
    r = await h.get('/api/ipam/ip-addresses/?status=reserved&brief=1');
    assert.deepEqual(r.body.results, [{ id: r.body.results[0].id, url: r.body.results[0].url, display: '192.0.2.2/24', family: { value: 4, label: 'IPv4' }, address: '192.0.2.2/24', description: '' }]);
    r = await h.get('/api/ipam/ip-addresses/?assigned_to_interface=false');
    assert.deepEqual(r.body.results.map((i: any) => i.address), ['198.51.100.1/24']);
  });

  it("filters devices and their parts by NetBox's names mapped onto what is stored: counts, has-children, manufacturer, model, primary IPs, local context", async () => {
    const h = api.http;
    // dev03 has device type b2 (odd), dev04 type b; dev03 gets a console port, two interfaces and a primary IPv4, dev04 local context data.
    assert.equal((await h.post('/api/dcim/console-ports/', { device: ids.dev03, name: 'con0' })).status, 201);
    const ifs = await h.post('/api/dcim/interfaces/', [
      { device: ids.dev03, name: 'x1', type: 'virtual' },
      { device: ids.dev03, name: 'x2', type: 'virtual' },
    ]);
    assert.equal(ifs.status, 201, ifs.text);
    const ip = await h.post('/api/ipam/ip-addresses/', { address: '203.0.113.9/24', assigned_object_type: 'dcim.interface', assigned_object_id: ifs.body[0].id });
    assert.equal(ip.status, 201, ip.text);
    assert.equal((await h.patch(`/api/dcim/devices/${ids.dev03}/`, { primary_ip4: ip.body.id })).status, 200);
    assert.equal((await h.patch(`/api/dcim/devices/${ids.dev04}/`, { local_context_data: { ntp: ['192.0.2.123'] } })).status, 200);
    const sel = 'name=dev03&name=dev04';
    assert.deepEqual(await names(`${sel}&interface_count=2`), ['dev03']);
    assert.deepEqual(await names(`${sel}&interface_count__lt=1&console_port_count=0`), ['dev04']);
    assert.deepEqual(await names(`${sel}&interface_count__n=2`), ['dev04']);
    assert.deepEqual(await names(`${sel}&console_ports=true&interfaces=1`), ['dev03']);
    assert.deepEqual(await names(`${sel}&console_ports=false&interfaces=False`), ['dev04']);
    assert.deepEqual(await names(`${sel}&power_ports=false&pass_through_ports=false`), ['dev03', 'dev04']);
    assert.deepEqual(await names(`${sel}&module_bays=true`), []);
    assert.deepEqual(await names(`${sel}&manufacturer=${b2.mfr.slug}`), ['dev03']);
    assert.deepEqual(await names(`${sel}&manufacturer__n=${b2.mfr.slug}`), ['dev04']);
    assert.deepEqual(await names(`${sel}&model=${b.type.slug}`), ['dev04']);
    assert.deepEqual(await names(`${sel}&primary_ip4=203.0.113.9/24`), ['dev03']);
    assert.deepEqual(await names(`${sel}&primary_ip4=null`), ['dev04']);
    assert.deepEqual(await names(`${sel}&local_context_data=true`), ['dev04']);
    assert.deepEqual(await names(`${sel}&local_context_data=false`), ['dev03']);
    assert.deepEqual(await names(`${sel}&local_context_data=null`), ['dev03', 'dev04']);
    const ifaces = await h.get(`/api/dcim/interfaces/?site=${b2.site.slug}&name=x1&name=x2`);
    assert.deepEqual(ifaces.body.results.map((i: any) => i.name), ['x1', 'x2']);
    assert.equal((await h.get(`/api/dcim/interfaces/?site=${b.site.slug}&name=x1`)).body.count, 0);
    assert.deepEqual((await h.get(`/api/dcim/device-types/?u_height__gte=1&id=${b.type.id}`)).body.results.map((t: any) => t.id), [b.type.id]);
    assert.equal((await h.get(`/api/dcim/device-types/?u_height__gt=1&id=${b.type.id}`)).body.count, 0);
    assert.equal((await h.patch(`/api/dcim/interfaces/${ifs.body[1].id}/`, { mac_address: '00:11:22:aa:bb:cc' })).status, 200);
    assert.deepEqual(await names(`${sel}&mac_address=00-11-22-AA-BB-CC`), ['dev03']);
    const svc = await h.post('/api/ipam/services/', { parent_object_type: 'dcim.device', parent_object_id: ids.dev03, name: 'ssh', protocol: 'tcp', ports: [22], ipaddresses: [ip.body.id] });
    assert.equal(svc.status, 201, svc.text);
    assert.deepEqual((await h.get(`/api/ipam/ip-addresses/?service_id=${svc.body.id}`)).body.results.map((a: any) => a.address), ['203.0.113.9/24']);
    assert.ok(!(await h.get('/api/ipam/ip-addresses/?service_id=null&limit=100')).body.results.some((a: any) => a.address === '203.0.113.9/24'));
    assert.deepEqual((await h.get('/api/ipam/ip-addresses/?service_id=99999')).body, { service_id: ['Select a valid choice. 99999 is not one of the available choices.'] });
    for (const q of [`site=${b.site.slug}`, 'rack=nothing', 'location=nothing', 'rack_id=1', 'location_id=1', 'unterminated=true', 'unterminated=false']) assert.equal((await h.get(`/api/dcim/cables/?${q}`)).status, 200, q);
    const provider = (await h.post('/api/circuits/providers/', { name: 'P77', slug: 'p77' })).body;
    const ctype = (await h.post('/api/circuits/circuit-types/', { name: 'T77', slug: 't77' })).body;
    const circuits = (await h.post('/api/circuits/circuits/', [{ cid: 'c77a', provider: provider.id, type: ctype.id }, { cid: 'c77b', provider: provider.id, type: ctype.id }])).body;
    const term = await h.post('/api/circuits/circuit-terminations/', { circuit: circuits[0].id, term_side: 'Z' });
    assert.equal(term.status, 201, term.text);
    const cids = async (q: string) => (await h.get(`/api/circuits/circuits/?provider_id=${provider.id}&${q}`)).body.results.map((c: any) => c.cid);
    assert.deepEqual(await cids(`termination_z_id=${term.body.id}`), ['c77a']);
    assert.deepEqual(await cids(`termination_a_id=${term.body.id}`), []);
    assert.deepEqual(await cids('termination_z_id=null'), ['c77b']);
    assert.deepEqual((await h.get('/api/circuits/circuits/?termination_a_id=abc')).body, { termination_a_id: ['Select a valid choice. abc is not one of the available choices.'] });
    assert.deepEqual((await h.get(`/api/circuits/circuit-terminations/?provider=p77`)).body.results.map((t: any) => t.id), [term.body.id]);
    // Values the filters refuse are 400s naming them, never 5xx.
    const bad: Array<[string, unknown]> = [
      ['interface_count=x', { interface_count: ['Enter a number.'] }],
      ['interface_count=null', { interface_count: ['Enter a number.'] }],
      ['console_ports=maybe', { console_ports: ['Select a valid choice. That choice is not one of the available choices.'] }],
      ['manufacturer=nope', { manufacturer: ['Select a valid choice. nope is not one of the available choices.'] }],
      ['primary_ip4=%27%3B--', { primary_ip4: ["Select a valid choice. ';-- is not one of the available choices."] }],
      ['modified_by_request=1%20or%201', { modified_by_request: ['Enter a valid UUID.'] }],
    ];
    for (const [query, body] of bad) assert.deepEqual([(await h.get(`/api/dcim/devices/?${query}`)).status, (await h.get(`/api/dcim/devices/?${query}`)).body], [400, body], query);
  });

  it('filters and shows prefixes by depth and children, counted in the same VRF as NetBox', async () => {
    const h = api.http;
    const vrf = (await h.post('/api/ipam/vrfs/', { name: 'depth-vrf', rd: '65000:77' })).body;
    const made = await h.post('/api/ipam/prefixes/', [
      { prefix: '10.77.0.0/16' },
      { prefix: '10.77.1.0/24' },
      { prefix: '10.77.1.0/26' },
      { prefix: '10.77.1.0/26' },
      { prefix: '10.77.2.0/24' },
      { prefix: '10.77.1.0/25', vrf: vrf.id },
      { prefix: '2001:db8:77::/48' },
      { prefix: '2001:db8:77:1::/64' },
    ]);
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const list = async (query: string) => {
      const r = await h.get(`/api/ipam/prefixes/?q=${encodeURIComponent(query.startsWith('6:') ? '2001:db8:77' : '10.77.')}&${query.replace(/^6:/, '')}&ordering=prefix&limit=100`);
      assert.equal(r.status, 200, `${query}: ${r.text}`);
      return r.body.results.map((p: any) => `${p.prefix}${p.vrf ? '@vrf' : ''}:${p._depth}/${p.children}`);
    };
    // depth: prefixes of the same VRF that strictly contain it (an equal prefix does not); children: those it strictly contains.
    const all = ['10.77.0.0/16:0/4', '10.77.1.0/24:1/2', '10.77.1.0/26:2/0', '10.77.1.0/26:2/0', '10.77.1.0/25@vrf:0/0', '10.77.2.0/24:1/0'];
    assert.deepEqual((await list('')).sort(), [...all].sort());
    assert.deepEqual((await list('depth=0')).sort(), ['10.77.0.0/16:0/4', '10.77.1.0/25@vrf:0/0'].sort());
    assert.deepEqual((await list('depth=2')).sort(), ['10.77.1.0/26:2/0', '10.77.1.0/26:2/0']);
    assert.deepEqual((await list('depth__gte=1&children__gt=0')).sort(), ['10.77.1.0/24:1/2']);
    assert.deepEqual((await list('depth__n=0&depth__n=2')).sort(), ['10.77.1.0/24:1/2', '10.77.2.0/24:1/0']);
    assert.deepEqual((await list('children=4')).sort(), ['10.77.0.0/16:0/4']);
    assert.deepEqual((await list('children__lte=0&depth__lt=2')).sort(), ['10.77.1.0/25@vrf:0/0', '10.77.2.0/24:1/0']);
    assert.deepEqual((await list(`vrf_id=${vrf.id}&depth=0&children=0`)), ['10.77.1.0/25@vrf:0/0']);
    assert.deepEqual(await list('6:depth=1'), ['2001:db8:77:1::/64:1/0']);
    assert.deepEqual(await list('6:children=1'), ['2001:db8:77::/48:0/1']);
    assert.deepEqual(await list(`present_in_vrf_id=${vrf.id}`), ['10.77.1.0/25@vrf:0/0']);
    assert.deepEqual(await list(`present_in_vrf=65000:77`), ['10.77.1.0/25@vrf:0/0']);
    const vlan = (await h.post('/api/ipam/vlans/', { vid: 377, name: 'v377' })).body;
    assert.equal((await h.patch(`/api/ipam/prefixes/${made.body[1].id}/`, { vlan: vlan.id })).status, 200);
    assert.deepEqual(await list('vlan_vid=377'), ['10.77.1.0/24:1/2']);
    assert.deepEqual(await list('vlan_vid__lt=377'), []);
    // Values django-filter refuses are 400s naming the filter; `null` too (a number filter), never a 5xx.
    for (const bad of ['null', 'x', '1.5', '99999999999999999999', "1' or '1'='1"]) {
      for (const name of ['depth', 'children__gt', 'depth__n']) {
        const r = await h.get(`/api/ipam/prefixes/?${name}=${encodeURIComponent(bad)}`);
        assert.deepEqual([r.status, r.body], [400, { [name]: ['Enter a number.'] }], `${name}=${bad}`);
      }
    }
    // Created and updated by a request (NetBox's ChangeLoggedModelFilterSet), from the change log.
    const requestId = '0d6a3c1e-77aa-4bbb-8ccc-0123456789ab';
    const upd = await h.patch(`/api/ipam/prefixes/${made.body[4].id}/`, { description: 'touched' }, { 'x-request-id': requestId });
    assert.equal(upd.status, 200, upd.text);
    assert.deepEqual((await h.get(`/api/ipam/prefixes/?updated_by_request=${requestId}`)).body.results.map((p: any) => p.id), [made.body[4].id]);
    assert.deepEqual((await h.get(`/api/ipam/prefixes/?modified_by_request=${requestId.toUpperCase()}`)).body.results.map((p: any) => p.id), [made.body[4].id]);
    assert.equal((await h.get(`/api/ipam/prefixes/?created_by_request=${requestId}`)).body.count, 0);
    assert.deepEqual((await h.get('/api/ipam/prefixes/?created_by_request=nope')).body, { created_by_request: ['Enter a valid UUID.'] });
  });
});
