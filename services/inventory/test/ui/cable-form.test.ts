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
});
