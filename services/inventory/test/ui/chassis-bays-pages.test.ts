import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { ADMIN_TOKEN, seedBasics, startApi, type Api } from '../api/helpers.ts';
import { uiClient } from './ui-client.ts';

/** The UI pages of virtual chassis, device bays and their templates, and VLAN groups' VID ranges (HTTP, no browser). */
forEachStorage('inventory UI: virtual chassis, device bays, VLAN group ranges', (storage) => {
  let api: Api;
  let ui: ReturnType<typeof uiClient>;
  let w: Record<string, any>;
  before(async () => {
    api = await startApi(storage);
    ui = uiClient(api.server.url);
    assert.equal((await ui.login(ADMIN_TOKEN)).status, 303);
    w = await seedBasics(api, 'U');
  });
  after(() => api.close());

  it('adds a virtual chassis from the form; its page lists the master and members; the menu links the new lists', async () => {
    const dev = (await api.http.post('/api/dcim/devices/', { name: 'uisw1', site: w.site.id, device_type: w.type.id, role: w.role.id })).body;
    const form = await ui.get('/dcim/virtual-chassis/add/');
    assert.equal(form.status, 200);
    assert.match(form.text, /href="\/dcim\/device-bays\/"/);
    assert.match(form.text, /href="\/dcim\/device-bay-templates\/"/);
    const csrf = ui.csrfOf(form.text);
    const made = await ui.post('/dcim/virtual-chassis/add/', { csrf_token: csrf, name: 'ui-stack', domain: 'd1', master: String(dev.id) });
    assert.equal(made.status, 303, made.text.slice(0, 500));
    const page = await ui.get(made.location!);
    assert.equal(page.status, 200);
    assert.match(page.text, /<h1>ui-stack<\/h1>/);
    assert.match(page.text, /uisw1/);
    const list = await ui.get('/dcim/virtual-chassis/?q=ui-stack');
    assert.equal(list.status, 200);
    assert.match(list.text, /ui-stack/);
    const devPage = await ui.get(`/dcim/devices/${dev.id}/`);
    assert.match(devPage.text, /ui-stack/);
  });

  it("shows the API's errors on the bay and template forms; VLAN group ranges are edited as JSON", async () => {
    const form = await ui.get('/dcim/device-bay-templates/add/');
    const csrf = ui.csrfOf(form.text);
    const bad = await ui.post('/dcim/device-bay-templates/add/', { csrf_token: csrf, device_type: String(w.type.id), name: 'Bay 1' });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /Subdevice role of device type \(XU\) must be set to &quot;parent&quot; to allow device bays\./);
    const group = await ui.post('/ipam/vlan-groups/add/', { csrf_token: csrf, name: 'ui-g', slug: 'ui-g', vid_ranges: '[[5, 1]]' });
    assert.equal(group.status, 400);
    assert.match(group.text, /Ending VLAN ID in range must be greater than or equal to the starting VLAN ID \(5-1\)/);
    const okGroup = await ui.post('/ipam/vlan-groups/add/', { csrf_token: csrf, name: 'ui-g', slug: 'ui-g', vid_ranges: '[[10, 20]]' });
    assert.equal(okGroup.status, 303, okGroup.text.slice(0, 500));
    const g = (await api.http.get('/api/ipam/vlan-groups/?slug=ui-g')).body.results[0];
    assert.deepEqual(g.vid_ranges, [[10, 20]]);
    const del = await ui.get(`/ipam/vlan-groups/${g.id}/delete/`);
    assert.match(del.text, /Are you sure you want to delete VLAN group <strong>ui-g<\/strong>/);
  });
});
