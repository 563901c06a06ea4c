import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

/**
 * Cabling, circuits and the IPAM registry models over real HTTP (NetBox 4.3's shapes): ports and cables
 * with their A/B terminations, `trace` through patch panels, `paths`, cable fields on the terminated
 * objects, circuits with terminations, RIRs/aggregates/ASNs — with their change log and events.
 */
forEachStorage('inventory API: cables, ports, circuits, RIRs, aggregates, ASNs', (storage) => {
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
    const b = await seedBasics(api, 'C');
    const dev = async (name: string) => ok(await h.post('/api/dcim/devices/', { name, site: b.site.id, device_type: b.type.id, role: b.role.id }));
    w = { ...b, a: await dev('a1'), b: await dev('b1'), pdu: await dev('pdu1') };
  });
  after(() => api.close());

  it('power and console ports take a cable; both ends read it back with link peers and connected endpoints', async () => {
    const h = api.http;
    const psu = ok(await h.post('/api/dcim/power-ports/', { device: w.a.id, name: 'PSU1', type: 'iec-60320-c14', maximum_draw: 500 }));
    const outlet = ok(await h.post('/api/dcim/power-outlets/', { device: w.pdu.id, name: 'outlet', feed_leg: 'A' }));
    assert.deepEqual(psu.type, { value: 'iec-60320-c14', label: 'C14' });
    assert.equal(psu.cable, null);
    assert.equal(psu._occupied, false);
    assert.deepEqual(outlet.status, { value: 'enabled', label: 'Enabled' });
    const cable = ok(
      await h.post('/api/dcim/cables/', {
        a_terminations: [{ object_type: 'dcim.powerport', object_id: psu.id }],
        b_terminations: [{ object_type: 'dcim.poweroutlet', object_id: outlet.id }],
        label: 'pwr-1',
        length: 2.5,
        length_unit: 'm',
      }),
    );
    assert.equal(cable.display, 'pwr-1');
    assert.deepEqual(cable.status, { value: 'connected', label: 'Connected' });
    assert.equal(cable.a_terminations[0].object_type, 'dcim.powerport');
    assert.equal(cable.a_terminations[0].object.name, 'PSU1');
    assert.equal(cable.b_terminations[0].object.name, 'outlet');
    assert.equal(cable.display_url, `${api.server.url}/dcim/cables/${cable.id}/`);
    const psuNow = ok(await h.get(`/api/dcim/power-ports/${psu.id}/`), 200);
    assert.equal(psuNow.cable.id, cable.id);
    assert.equal(psuNow.cable_end, 'A');
    assert.equal(psuNow._occupied, true);
    assert.equal(psuNow.link_peers_type, 'dcim.poweroutlet');
    assert.equal(psuNow.link_peers[0].id, outlet.id);
    assert.equal(psuNow.connected_endpoints[0].id, outlet.id);
    assert.equal(psuNow.connected_endpoints_reachable, true);
    const brief = ok(await h.get(`/api/dcim/power-outlets/${outlet.id}/?brief=true`), 200);
    assert.deepEqual(Object.keys(brief), ['id', 'url', 'display', 'device', 'name', 'description', 'cable', '_occupied']);
    assert.equal(brief.cable.id, cable.id);
    // Filters of terminated objects and of cables.
    assert.deepEqual(ids(await h.get('/api/dcim/power-ports/?cabled=true')), [psu.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/power-outlets/?cabled=false')), []);
    assert.deepEqual(ids(await h.get(`/api/dcim/cables/?device_id=${w.pdu.id}`)), [cable.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/cables/?device=a1')), [cable.id]);
    assert.deepEqual(ids(await h.get(`/api/dcim/cables/?powerport_id=${psu.id}`)), [cable.id]);
    assert.deepEqual(ids(await h.get('/api/dcim/cables/?termination_a_type=dcim.interface')), []);
    assert.equal((await h.get('/api/dcim/cables/?cabled=maybe')).status, 200); // not a cable filter: NetBox ignores it
    assert.equal((await h.get('/api/dcim/power-ports/?cabled=maybe')).status, 400);
    // The device counts its components.
    const a = ok(await h.get(`/api/dcim/devices/${w.a.id}/`), 200);
    assert.equal(a.power_port_count, 1);
    // A port already cabled, incompatible types, one end missing: 400 in DRF's shape.
    const con = ok(await h.post('/api/dcim/console-ports/', { device: w.a.id, name: 'Console', speed: 9600 }));
    assert.deepEqual(con.speed, { value: 9600, label: '9600 bps' });
    const dup = await h.post('/api/dcim/cables/', { a_terminations: [{ object_type: 'dcim.powerport', object_id: psu.id }], b_terminations: [{ object_type: 'dcim.consoleport', object_id: con.id }] });
    assert.equal(dup.status, 400);
    assert.match(JSON.stringify(dup.body), /Duplicate termination found for dcim.powerport/);
    assert.match(JSON.stringify(dup.body), /Incompatible termination types: dcim.powerport and dcim.consoleport/);
    const oneEnd = await h.post('/api/dcim/cables/', { a_terminations: [{ object_type: 'dcim.consoleport', object_id: con.id }] });
    assert.deepEqual(oneEnd.body, { non_field_errors: ['Must define A and B terminations when creating a new cable.'] });
    const badType = await h.post('/api/dcim/cables/', { a_terminations: [{ object_type: 'dcim.site', object_id: 1 }], b_terminations: 'x' });
    assert.equal(badType.status, 400);
    assert.ok(badType.body.a_terminations && badType.body.b_terminations);
    assert.equal((await h.post('/api/dcim/console-ports/', { device: w.a.id, name: 'c2', speed: 1234 })).status, 400);
    // Deleting the cable frees both ends; the change log has the cable's create and delete.
    assert.equal((await h.delete(`/api/dcim/cables/${cable.id}/`)).status, 204);
    const freed = ok(await h.get(`/api/dcim/power-ports/${psu.id}/`), 200);
    assert.equal(freed.cable, null);
    assert.equal(freed._occupied, false);
    assert.deepEqual(freed.link_peers, []);
    const log = ok(await h.get(`/api/core/object-changes/?changed_object_type=dcim.cable&changed_object_id=${cable.id}`), 200);
    assert.deepEqual(log.results.map((c: any) => c.action.value).sort(), ['create', 'delete']);
    const created = api.events.flat().find((e: any) => e.objectType === 'dcim.cable' && e.objectId === cable.id);
    assert.ok(created, 'the cable create reached the event pipeline');
  });

  it('interfaces through patch panels: trace follows front/rear ports, paths lists the path through a port', async () => {
    const h = api.http;
    const ethA = ok(await h.post('/api/dcim/interfaces/', { device: w.a.id, name: 'eth0', type: '1000base-t' }));
    const ethB = ok(await h.post('/api/dcim/interfaces/', { device: w.b.id, name: 'eth0', type: '1000base-t' }));
    const rpA = ok(await h.post('/api/dcim/rear-ports/', { device: w.a.id, name: 'RP1', type: '8p8c', positions: 1 }));
    const rpB = ok(await h.post('/api/dcim/rear-ports/', { device: w.b.id, name: 'RP1', type: '8p8c' }));
    const fpA = ok(await h.post('/api/dcim/front-ports/', { device: w.a.id, name: 'FP1', type: '8p8c', rear_port: rpA.id, rear_port_position: 1 }));
    const fpB = ok(await h.post('/api/dcim/front-ports/', { device: w.b.id, name: 'FP1', type: '8p8c', rear_port: rpB.id }));
    assert.equal(fpA.rear_port.id, rpA.id);
    const wrongDevice = await h.post('/api/dcim/front-ports/', { device: w.b.id, name: 'FP9', type: '8p8c', rear_port: rpA.id });
    assert.deepEqual(wrongDevice.body, { rear_port: [`Rear port (${rpA.id}) must belong to the same device`] });
    const badPosition = await h.post('/api/dcim/front-ports/', { device: w.a.id, name: 'FP9', type: '8p8c', rear_port: rpA.id, rear_port_position: 2 });
    assert.equal(badPosition.status, 400);
    const cab = (a: [string, number], b: [string, number]) => h.post('/api/dcim/cables/', { a_terminations: [{ object_type: a[0], object_id: a[1] }], b_terminations: [{ object_type: b[0], object_id: b[1] }] });
    const c1 = ok(await cab(['dcim.interface', ethA.id], ['dcim.rearport', rpA.id]));
    const c2 = ok(await cab(['dcim.frontport', fpA.id], ['dcim.frontport', fpB.id]));
    const c3 = ok(await cab(['dcim.rearport', rpB.id], ['dcim.interface', ethB.id]));
    const trace = ok(await h.get(`/api/dcim/interfaces/${ethA.id}/trace/`), 200);
    assert.equal(trace.length, 3);
    assert.deepEqual(
      trace.map((s: any) => [s[0].map((x: any) => x.name), s[1]?.id, s[2].map((x: any) => x.name)]),
      [
        [['eth0'], c1.id, ['RP1']],
        [['FP1'], c2.id, ['FP1']],
        [['RP1'], c3.id, ['eth0']],
      ],
    );
    assert.equal(trace[2][2][0].id, ethB.id);
    const iface = ok(await h.get(`/api/dcim/interfaces/${ethA.id}/`), 200);
    assert.equal(iface.connected_endpoints_type, 'dcim.interface');
    assert.equal(iface.connected_endpoints[0].id, ethB.id);
    assert.equal(iface.link_peers_type, 'dcim.rearport');
    const paths = ok(await h.get(`/api/dcim/front-ports/${fpA.id}/paths/`), 200);
    assert.equal(paths.length, 2); // from each interface
    for (const p of paths) {
      assert.equal(p.is_complete, true);
      assert.equal(p.is_active, true);
      assert.equal(p.path.length, 9);
    }
    assert.equal(ok(await h.get(`/api/dcim/rear-ports/${rpB.id}/paths/`), 200).length, 2);
    // A rear port with front ports mapped to it is protected; deleting a device detaches its cables.
    assert.equal((await h.delete(`/api/dcim/rear-ports/${rpA.id}/`)).status, 409);
    assert.equal((await h.delete(`/api/dcim/devices/${w.b.id}/`)).status, 204);
    const c2now = ok(await h.get(`/api/dcim/cables/${c2.id}/`), 200);
    assert.deepEqual(c2now.b_terminations, []);
    const traceAfter = ok(await h.get(`/api/dcim/interfaces/${ethA.id}/trace/`), 200);
    assert.deepEqual(traceAfter[traceAfter.length - 1][2], []);
    assert.equal((await h.get('/api/dcim/interfaces/999999/trace/')).status, 404);
  });

  it('circuits: providers, types, circuits with A/Z terminations at sites; virtual circuits', async () => {
    const h = api.http;
    const prov = ok(await h.post('/api/circuits/providers/', { name: 'Carrier', slug: 'carrier' }));
    const ctype = ok(await h.post('/api/circuits/circuit-types/', { name: 'Transit', slug: 'transit', color: 'aa1409' }));
    const circuit = ok(await h.post('/api/circuits/circuits/', { cid: 'CID-1', provider: prov.id, type: ctype.id, commit_rate: 10000, install_date: '2024-02-29' }));
    assert.equal(circuit.display, 'CID-1');
    assert.deepEqual(circuit.status, { value: 'active', label: 'Active' });
    assert.equal(circuit.termination_a, null);
    assert.equal((await h.post('/api/circuits/circuits/', { cid: 'CID-2', provider: prov.id, type: ctype.id, install_date: '2023-02-29' })).status, 400);
    assert.deepEqual((await h.post('/api/circuits/circuits/', { cid: 'CID-1', provider: prov.id, type: ctype.id })).body, { non_field_errors: ['The fields provider, cid must make a unique set.'] });
    const termA = ok(await h.post('/api/circuits/circuit-terminations/', { circuit: circuit.id, term_side: 'A', termination_type: 'dcim.site', termination_id: w.site.id, port_speed: 1000 }));
    assert.equal(termA.termination.id, w.site.id);
    assert.equal(termA.display, 'CID-1: Termination A');
    const withTerm = ok(await h.get(`/api/circuits/circuits/${circuit.id}/`), 200);
    assert.equal(withTerm.termination_a.id, termA.id);
    assert.deepEqual(ids(await h.get(`/api/circuits/circuits/?site_id=${w.site.id}`)), [circuit.id]);
    assert.deepEqual(ids(await h.get(`/api/circuits/circuit-terminations/?circuit_id=${circuit.id}`)), [termA.id]);
    assert.deepEqual(ok(await h.get(`/api/circuits/providers/${prov.id}/`), 200).circuit_count, 1);
    assert.deepEqual(ok(await h.get(`/api/circuits/circuit-terminations/${termA.id}/paths/`), 200), []);
    const net = ok(await h.post('/api/circuits/provider-networks/', { provider: prov.id, name: 'MPLS' }));
    const vtype = ok(await h.post('/api/circuits/virtual-circuit-types/', { name: 'VPN', slug: 'vpn' }));
    const vc = ok(await h.post('/api/circuits/virtual-circuits/', { cid: 'VC-1', provider_network: net.id, type: vtype.id }));
    const eth = ok(await h.post('/api/dcim/interfaces/', { device: w.a.id, name: 'vlan100', type: 'virtual' }));
    const vct = ok(await h.post('/api/circuits/virtual-circuit-terminations/', { virtual_circuit: vc.id, role: 'hub', interface: eth.id }));
    assert.equal(vct.display, 'VC-1: vlan100');
    assert.deepEqual(ids(await h.get(`/api/circuits/virtual-circuit-terminations/?virtual_circuit_id=${vc.id}`)), [vct.id]);
    // Deleting the circuit deletes its terminations; the provider is then free to go.
    assert.equal((await h.delete(`/api/circuits/providers/${prov.id}/`)).status, 409);
    assert.equal((await h.delete(`/api/circuits/circuits/${circuit.id}/`)).status, 204);
    assert.equal((await h.get(`/api/circuits/circuit-terminations/${termA.id}/`)).status, 404);
  });

  it('RIRs, aggregates (no overlap), IPAM roles and ASNs', async () => {
    const h = api.http;
    const rir = ok(await h.post('/api/ipam/rirs/', { name: 'RFC 1918', slug: 'rfc-1918', is_private: true }));
    const agg = ok(await h.post('/api/ipam/aggregates/', { prefix: '10.0.0.0/8', rir: rir.id, date_added: '2024-01-01' }));
    assert.deepEqual(agg.family, { value: 4, label: 'IPv4' });
    assert.equal(agg.display, '10.0.0.0/8');
    const overlap = await h.post('/api/ipam/aggregates/', { prefix: '10.1.0.0/16', rir: rir.id });
    assert.equal(overlap.status, 400);
    assert.match(overlap.body.prefix[0], /Aggregates cannot overlap/);
    assert.deepEqual(ids(await h.get('/api/ipam/aggregates/?prefix=10.0.0.0/8')), [agg.id]);
    assert.equal(ok(await h.get(`/api/ipam/rirs/${rir.id}/?brief=1`), 200).aggregate_count, 1);
    const role = ok(await h.post('/api/ipam/roles/', { name: 'Production', slug: 'production' }));
    assert.equal(role.weight, 1000);
    const asn = ok(await h.post('/api/ipam/asns/', { asn: 4200000000, rir: rir.id }));
    assert.equal(asn.display, 'AS4200000000 (64086.59904)');
    assert.equal((await h.post('/api/ipam/asns/', { asn: 4294967296, rir: rir.id })).status, 400);
    assert.deepEqual((await h.post('/api/ipam/asns/', { asn: 4200000000, rir: rir.id })).body, { asn: ['ASN with this asn already exists.'] });
    assert.equal((await h.delete(`/api/ipam/rirs/${rir.id}/`)).status, 409);
  });
});
