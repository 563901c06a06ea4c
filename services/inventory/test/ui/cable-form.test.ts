import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { ADMIN_TOKEN, seedBasics, startApi, type Api } from '../api/helpers.ts';
import { uiClient } from './ui-client.ts';

/**
 * The cable form as NetBox's UI: each end a termination type, its holder (device) and the terminations picked from the
 * holder's list (ids), sent to the API as `a_terminations`/`b_terminations`; the Connect link of a port; over HTTP.
 */
forEachStorage('inventory UI: cable form ends', (storage) => {
  let api: Api;
  let ui: ReturnType<typeof uiClient>;
  const ids: Record<string, number> = {};
  before(async () => {
    api = await startApi(storage);
    ui = uiClient(api.server.url);
    assert.equal((await ui.login(ADMIN_TOKEN)).status, 303);
    const w = await seedBasics(api, 'C');
    for (const d of ['d1', 'd2']) {
      const dev = (await api.http.post('/api/dcim/devices/', { name: d, site: w.site.id, device_type: w.type.id, role: w.role.id })).body;
      ids[d] = dev.id;
      for (const n of ['eth0', 'eth1']) ids[`${d}-${n}`] = (await api.http.post('/api/dcim/interfaces/', { device: dev.id, name: n, type: '1000base-t' })).body.id;
    }
    ids.vlan1 = (await api.http.post('/api/dcim/interfaces/', { device: ids.d1, name: 'vlan1', type: 'virtual' })).body.id;
  });
  after(() => api.close());

  const csrf = async () => ui.csrfOf((await ui.get('/dcim/cables/add/')).text);
  const optionsOf = (page: string, name: string) => {
    const m = new RegExp(`<select id="f-${name}" name="${name}"[^>]*>([\\s\\S]*?)</select>`).exec(page);
    return m ? [...m[1]!.matchAll(/<option value="(\d+)"([^>]*)>([^<]*)</g)].map((o) => ({ id: Number(o[1]), attrs: o[2]!.trim(), label: o[3]! })) : null;
  };

  it('the Connect link prefills side A; choices are updated for the chosen device; the cable is saved with both ends', async () => {
    const port = await ui.get(`/dcim/interfaces/${ids['d1-eth0']}/`);
    const link = /href="([^"]+)" data-testid="connect"/.exec(port.text);
    assert.ok(link, 'an uncabled port offers Connect');
    const href = link[1]!.replace(/&#61;/g, '=').replace(/&amp;/g, '&');
    assert.equal(href, `/dcim/cables/add/?a_terminations_type=dcim.interface&a_terminations=${ids['d1-eth0']}&termination_a_device=${ids.d1}`);
    const form = await ui.get(href);
    assert.equal(form.status, 200);
    assert.match(form.text, /<option value="dcim\.interface" selected>Interface<\/option>/);
    const a = optionsOf(form.text, 'a_terminations')!;
    assert.deepEqual(a.map((o) => o.label), ['eth0', 'eth1'], "the device's physical interfaces (vlan1 is virtual)");
    assert.equal(a[0]!.attrs, 'selected');
    assert.equal(optionsOf(form.text, 'b_terminations'), null, 'side B: no type or device chosen yet');

    // "Update choices" lists the chosen device's ports for side B, keeping what was typed.
    const token = ui.csrfOf(form.text);
    const base = { csrf_token: token, a_terminations_type: 'dcim.interface', termination_a_device: String(ids.d1), a_terminations: String(ids['d1-eth0']), status: 'connected', label: 'c-1' };
    const refreshed = await ui.post('/dcim/cables/add/', { ...base, b_terminations_type: 'dcim.interface', termination_b_device: String(ids.d2), _refresh: '1' });
    assert.equal(refreshed.status, 200);
    assert.deepEqual(optionsOf(refreshed.text, 'b_terminations')!.map((o) => o.label), ['eth0', 'eth1']);
    assert.match(refreshed.text, /id="f-label" name="label" type="text" value="c-1"/);
    assert.equal((await api.http.get('/api/dcim/cables/')).body.count, 0, 'nothing saved');

    const saved = await ui.post('/dcim/cables/add/', { ...base, b_terminations_type: 'dcim.interface', termination_b_device: String(ids.d2), b_terminations: String(ids['d2-eth0']) });
    assert.equal(saved.status, 303, saved.text.slice(0, 800));
    const cable = (await api.http.get('/api/dcim/cables/?label=c-1')).body.results[0];
    assert.deepEqual(cable.a_terminations.map((t: any) => [t.object_type, t.object_id]), [['dcim.interface', ids['d1-eth0']]]);
    assert.deepEqual(cable.b_terminations.map((t: any) => [t.object_type, t.object_id]), [['dcim.interface', ids['d2-eth0']]]);
    assert.equal(saved.location, `/dcim/cables/${cable.id}/`);
    assert.doesNotMatch((await ui.get(`/dcim/interfaces/${ids['d1-eth0']}/`)).text, /data-testid="connect"/, 'a cabled port offers no Connect');

    // The edit form starts from the cable's ends; a second A termination is added.
    const edit = await ui.get(`/dcim/cables/${cable.id}/edit/`);
    assert.equal(edit.status, 200);
    const ea = optionsOf(edit.text, 'a_terminations')!;
    assert.deepEqual(ea.map((o) => [o.label, o.attrs]), [['eth0', 'selected'], ['eth1', '']]);
    assert.deepEqual(optionsOf(edit.text, 'b_terminations')!.map((o) => [o.label, o.attrs]), [['eth0', 'selected'], ['eth1', '']]);
    const changed = await ui.post(`/dcim/cables/${cable.id}/edit/`, { ...base, csrf_token: ui.csrfOf(edit.text), a_terminations: [String(ids['d1-eth0']), String(ids['d1-eth1'])], b_terminations_type: 'dcim.interface', termination_b_device: String(ids.d2), b_terminations: String(ids['d2-eth0']) });
    assert.equal(changed.status, 303, changed.text.slice(0, 800));
    assert.deepEqual((await api.http.get(`/api/dcim/cables/${cable.id}/`)).body.a_terminations.map((t: any) => t.object_id).sort(), [ids['d1-eth0'], ids['d1-eth1']].sort());

    // A new cable's form marks the occupied ports.
    const fresh = await ui.get(`/dcim/cables/add/?a_terminations_type=dcim.interface&termination_a_device=${ids.d2}`);
    assert.deepEqual(optionsOf(fresh.text, 'a_terminations')!.map((o) => [o.label, o.attrs]), [['eth0 (occupied)', 'disabled'], ['eth1', '']]);
  });

  it("shows the form's and the API's errors at the end they concern", async () => {
    const token = await csrf();
    const noType = await ui.post('/dcim/cables/add/', { csrf_token: token, a_terminations: String(ids['d2-eth1']), b_terminations_type: 'dcim.interface', b_terminations: String(ids['d1-eth1']), status: 'connected' });
    assert.equal(noType.status, 400, noType.text.slice(0, 300));
    assert.match(noType.text, /data-field="a_terminations">[\s\S]*?Choose the type of the terminations\./);
    // d1-eth1 already sits on the first test's cable: the API's message, next to side B.
    const dup = await ui.post('/dcim/cables/add/', { csrf_token: token, a_terminations_type: 'dcim.interface', a_terminations: String(ids['d2-eth1']), b_terminations_type: 'dcim.interface', termination_b_device: String(ids.d1), b_terminations: String(ids['d1-eth1']), status: 'connected' });
    assert.equal(dup.status, 400);
    assert.match(dup.text, new RegExp(`data-field="b_terminations">[\\s\\S]*?Duplicate termination found for dcim.interface ${ids['d1-eth1']}`));
    assert.match(dup.text, /<option value="dcim\.interface" selected>/, 'the form keeps the ends');
    const bad = await ui.post('/dcim/cables/add/', { csrf_token: token, a_terminations_type: 'dcim.interface', a_terminations: 'x1', b_terminations_type: 'dcim.interface', b_terminations: String(ids['d2-eth1']) });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /“x1” is not a valid ID\./);
    assert.equal((await api.http.get('/api/dcim/cables/')).body.count, 1);
  });

  it("imports cables by their ends' device, type and name (NetBox's CableImportForm) from CSV, JSON and YAML, with its errors per record", async () => {
    const h = api.http;
    const ok = (r: { status: number; body: any }) => {
      assert.ok(r.status === 201 || r.status === 200, JSON.stringify(r.body));
      return r.body;
    };
    const seed = await h.get('/api/dcim/devices/?name=d1');
    const d1 = seed.body.results[0];
    const siteD = ok(await h.post('/api/dcim/sites/', { name: 'SiteD', slug: 'sited' }));
    const dev = async (name: string, site: number) => ok(await h.post('/api/dcim/devices/', { name, site, device_type: d1.device_type.id, role: d1.role.id })).id;
    const e1 = await dev('e1', d1.site.id);
    const e1d = await dev('e1', siteD.id);
    const e2 = await dev('e2', d1.site.id);
    const iface = async (device: number, name: string) => ok(await h.post('/api/dcim/interfaces/', { device, name, type: '1000base-t' })).id;
    const ge: Record<string, number> = {};
    for (const [d, id] of [['e1', e1], ['e2', e2]] as const) for (const n of ['ge0', 'ge1', 'ge2']) ge[`${d}-${n}`] = await iface(id, n);
    ge['e1d-ge0'] = await iface(e1d, 'ge0');
    const con = ok(await h.post('/api/dcim/console-ports/', { device: e2, name: 'con0' })).id;
    const cs = ok(await h.post('/api/dcim/console-server-ports/', { device: e1, name: 'cs0' })).id;
    const psu = ok(await h.post('/api/dcim/power-ports/', { device: e2, name: 'psu0' })).id;
    const panel = ok(await h.post('/api/dcim/power-panels/', { site: d1.site.id, name: 'pp1' })).id;
    const feed = ok(await h.post('/api/dcim/power-feeds/', { power_panel: panel, name: 'feed1' })).id;
    const before = (await h.get('/api/dcim/cables/')).body.count;
    const token = ui.csrfOf((await ui.get('/dcim/cables/import/')).text);
    const page = await ui.get('/dcim/cables/import/');
    assert.match(page.text, /<code>side_a_device<\/code>/, "the page lists the import form's fields");
    const send = (format: string, data: string) => ui.post('/dcim/cables/import/', { csrf_token: token, format, data });
    const errorsOf = (t: string) => [...t.matchAll(/<li>([^<]*)<\/li>/g)].map((x) => x[1]!.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#39;/g, "'")).filter((x) => x.startsWith('Record'));

    const head = 'side_a_site,side_a_device,side_a_type,side_a_name,side_b_device,side_b_type,side_b_name,color';
    const bad = await send('csv', [head, ',e1,dcim.interface,ge0,e2,dcim.interface,ge0,', ',nope,dcim.interface,ge0,e2,interface,ge0,', 'SiteC,e1,dcim.site,ge0,e2,dcim.interface,ge9,', 'SiteC,d1,dcim.interface,eth0,e2,dcim.interface,,not-a-colour', 'Nowhere,e1,dcim.interface,ge0,e2,,ge0,'].join('\n'));
    assert.equal(bad.status, 400, bad.text.slice(0, 500));
    assert.deepEqual(errorsOf(bad.text), [
      'Record 1 side_a_device: "e1" is not a unique value for this field; multiple objects were found',
      'Record 2 side_a_device: Object not found: nope',
      'Record 2 side_b_type: Object type must be specified as "<app>.<model>"',
      'Record 3 side_a_type: Invalid object type',
      'Record 3 side_b_name: B side termination not found: e2 ge9',
      'Record 4 side_a_name: Side A: d1 eth0 is already connected',
      'Record 4 side_b_name: This field is required.',
      'Record 4 color: not-a-colour did not match any used color name and was longer than six characters: invalid hex.',
      'Record 5 side_a_site: Object not found: Nowhere',
      'Record 5 side_a_device: Object not found: e1',
      'Record 5 side_b_type: This field is required.',
    ]);
    assert.equal((await h.get('/api/dcim/cables/')).body.count, before, 'nothing imported');
    const odd = await send('json', JSON.stringify([{ side_a_device: { name: 'e2' }, side_a_type: 'dcim.interface', side_a_name: 'ge0', side_b_device: 'e2', side_b_type: 'dcim.interface', side_b_name: ['ge1'] }]));
    assert.equal(odd.status, 400);
    assert.deepEqual(errorsOf(odd.text), ['Record 1 side_a_device: Enter a valid value.', 'Record 1 side_b_name: Enter a valid value.']);

    // CSV: interfaces (the site tells the two e1 apart), console ports, a power feed by its panel; color by name.
    const csv = await send('csv', [
      'side_a_site,side_a_device,side_a_power_panel,side_a_type,side_a_name,side_b_site,side_b_device,side_b_type,side_b_name,label,color,length,length_unit,status',
      'SiteC,e1,,dcim.interface,ge0,,e2,dcim.interface,ge0,imp-1,Red,2.5,m,planned',
      ',e2,,dcim.consoleport,con0,SiteC,e1,dcim.consoleserverport,cs0,imp-2,,,,',
      'SiteC,,pp1,dcim.powerfeed,feed1,,e2,dcim.powerport,psu0,imp-3,00ff00,,,',
    ].join('\n'));
    assert.equal(csv.status, 303, csv.text.slice(0, 1500));
    const ends = async (label: string) => {
      const c = (await h.get(`/api/dcim/cables/?label=${label}`)).body.results[0];
      return { c, a: c.a_terminations.map((t: any) => [t.object_type, t.object_id]), b: c.b_terminations.map((t: any) => [t.object_type, t.object_id]) };
    };
    const one = await ends('imp-1');
    assert.deepEqual([one.a, one.b], [[['dcim.interface', ge['e1-ge0']]], [['dcim.interface', ge['e2-ge0']]]]);
    assert.deepEqual([one.c.color, one.c.length, one.c.length_unit.value, one.c.status.value], ['f44336', 2.5, 'm', 'planned']);
    const two = await ends('imp-2');
    assert.deepEqual([two.a, two.b], [[['dcim.consoleport', con]], [['dcim.consoleserverport', cs]]]);
    const three = await ends('imp-3');
    assert.deepEqual([three.a, three.b], [[['dcim.powerfeed', feed]], [['dcim.powerport', psu]]]);

    // JSON: the same fields; an update by id changes only what it names.
    const json = await send('json', JSON.stringify([{ side_a_site: 'SiteD', side_a_device: 'e1', side_a_type: 'dcim.interface', side_a_name: 'ge0', side_b_device: 'e2', side_b_type: 'dcim.interface', side_b_name: 'ge1', label: 'imp-4' }, { id: one.c.id, side_b_device: 'e2', side_b_type: 'dcim.interface', side_b_name: 'ge2', color: 'dark green' }]));
    assert.equal(json.status, 303, json.text.slice(0, 1500));
    const four = await ends('imp-4');
    assert.deepEqual([four.a, four.b], [[['dcim.interface', ge['e1d-ge0']]], [['dcim.interface', ge['e2-ge1']]]]);
    const moved = await ends('imp-1');
    assert.deepEqual([moved.a, moved.b, moved.c.color], [[['dcim.interface', ge['e1-ge0']]], [['dcim.interface', ge['e2-ge2']]], '2f6a31']);

    // YAML: on a virtual chassis' master, a port of a member is found by name; the API's own refusal is reported per record, nothing saved.
    const vc = ok(await h.post('/api/dcim/virtual-chassis/', { name: 'stack-imp', master: e2 }));
    ok(await h.patch(`/api/dcim/devices/${e1}/`, { virtual_chassis: vc.id, vc_position: 2 }));
    const xe9 = await iface(e1, 'xe9');
    const doc1 = 'side_a_device: e2\nside_a_type: dcim.interface\nside_a_name: xe9\nside_b_device: d2\nside_b_type: dcim.interface\nside_b_name: eth1\nlabel: imp-5\n';
    const yaml = await send('yaml', `${doc1}---\nside_a_device: d1\nside_a_type: dcim.interface\nside_a_name: vlan1\nside_b_device: e2\nside_b_type: dcim.interface\nside_b_name: ge0\n`);
    assert.equal(yaml.status, 400, yaml.text.slice(0, 500));
    assert.deepEqual(errorsOf(yaml.text), ['Record 2: Cables cannot be terminated to Virtual interfaces']);
    assert.equal((await h.get('/api/dcim/cables/?label=imp-5')).body.count, 0, 'all or nothing');
    const member = await send('yaml', doc1);
    assert.equal(member.status, 303, member.text.slice(0, 1500));
    const five = await ends('imp-5');
    assert.deepEqual(five.a, [['dcim.interface', xe9]]);

    // Circuit terminations by the circuit's ID and the term side (an extension: NetBox's form cannot import them).
    const prov = ok(await h.post('/api/circuits/providers/', { name: 'Carrier-I', slug: 'carrier-i' }));
    const ctype = ok(await h.post('/api/circuits/circuit-types/', { name: 'Transit-I', slug: 'transit-i' }));
    const circuit = ok(await h.post('/api/circuits/circuits/', { cid: 'CID-IMP', provider: prov.id, type: ctype.id }));
    const termA = ok(await h.post('/api/circuits/circuit-terminations/', { circuit: circuit.id, term_side: 'A', termination_type: 'dcim.site', termination_id: d1.site.id }));
    const noZ = await send('csv', 'side_a_circuit,side_a_type,side_a_name,side_b_site,side_b_device,side_b_type,side_b_name\nCID-IMP,circuits.circuittermination,Z,SiteC,e1,dcim.interface,ge1\nCID-NOPE,circuits.circuittermination,A,SiteC,e1,dcim.interface,ge1');
    assert.deepEqual(errorsOf(noZ.text), ['Record 1 side_a_name: A side termination not found: CID-IMP Z', 'Record 2 side_a_circuit: Object not found: CID-NOPE']);
    const circ = await send('csv', 'side_a_circuit,side_a_type,side_a_name,side_b_site,side_b_device,side_b_type,side_b_name,label\nCID-IMP,circuits.circuittermination,a,SiteC,e1,dcim.interface,ge1,imp-7');
    assert.equal(circ.status, 303, circ.text.slice(0, 1500));
    const seven = await ends('imp-7');
    assert.deepEqual([seven.a, seven.b], [[['circuits.circuittermination', termA.id]], [['dcim.interface', ge['e1-ge1']]]]);
  });
});
