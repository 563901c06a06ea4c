import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { ADMIN_TOKEN, seedBasics, startApi, type Api } from './helpers.ts';
import { uiClient } from '../ui/ui-client.ts';

/** A device's `display` as NetBox's Device.__str__ (name or `<chassis>:<position>`, asset tag, type and id), in the API and the UI. */
forEachStorage('device display as NetBox', (storage) => {
  let api: Api;
  let w: Record<string, any>;
  before(async () => {
    api = await startApi(storage);
    w = await seedBasics(api, 'D');
  });
  after(() => api.close());

  const device = async (body: Record<string, unknown>) => {
    const r = await api.http.post('/api/dcim/devices/', { site: w.site.id, device_type: w.type.id, role: w.role.id, ...body });
    assert.equal(r.status, 201, r.text);
    return r.body;
  };

  it('shows unnamed virtual chassis members as <chassis>:<position> everywhere the device is represented', async () => {
    const master = await device({ name: 'stack-m' });
    const vc = (await api.http.post('/api/dcim/virtual-chassis/', { name: 'stack', master: master.id })).body;
    const member = await device({ name: null, virtual_chassis: vc.id, vc_position: 2 });
    assert.equal(member.display, 'stack:2');
    assert.equal((await api.http.get(`/api/dcim/devices/${member.id}/`)).body.display, 'stack:2');
    assert.equal((await api.http.get(`/api/dcim/devices/?id=${member.id}&brief=1`)).body.results[0].display, 'stack:2');
    const iface = (await api.http.post('/api/dcim/interfaces/', { device: member.id, name: 'xe-2/0/0', type: '10gbase-x-sfpp' })).body;
    assert.equal(iface.device.display, 'stack:2', 'nested device');
    assert.equal(iface.display, 'xe-2/0/0');
    const chassis = (await api.http.get(`/api/dcim/virtual-chassis/${vc.id}/`)).body;
    assert.deepEqual(chassis.members.map((m: any) => m.display).sort(), ['stack-m', 'stack:2']);
    // The chassis' new name follows; the master (named) keeps its name.
    await api.http.patch(`/api/dcim/virtual-chassis/${vc.id}/`, { name: 'stack9' });
    assert.equal((await api.http.get(`/api/dcim/devices/${member.id}/`)).body.display, 'stack9:2');
    assert.equal((await api.http.get(`/api/dcim/devices/${master.id}/`)).body.display, 'stack-m');
    // Change log and UI carry it too.
    const change = (await api.http.get(`/api/core/object-changes/?changed_object_type=dcim.device&changed_object_id=${member.id}`)).body.results[0];
    assert.equal(change.object_repr, 'stack:2');
    const ui = uiClient(api.server.url);
    assert.equal((await ui.login(ADMIN_TOKEN)).status, 303);
    const page = await ui.get(`/dcim/devices/${member.id}/`);
    assert.match(page.text, /<h1>stack9:2<\/h1>/);
    const list = await ui.get(`/dcim/devices/?virtual_chassis_id=${vc.id}`);
    assert.match(list.text, />stack9:2<\/a>/);
    // Leaving the chassis: the type and id again.
    const left = await api.http.patch(`/api/dcim/devices/${member.id}/`, { virtual_chassis: null, vc_position: null });
    assert.equal(left.status, 200, left.text);
    assert.equal(left.body.display, `AcmeD XD (${member.id})`);
  });

  it('adds the asset tag as NetBox: "name (tag)", "<manufacturer> <model> (tag)", else the id', async () => {
    assert.equal((await device({ name: 'tagged', asset_tag: 'AT-1' })).display, 'tagged (AT-1)');
    assert.equal((await device({ name: null, asset_tag: 'AT-2' })).display, 'AcmeD XD (AT-2)');
    const plain = await device({ name: null });
    assert.equal(plain.display, `AcmeD XD (${plain.id})`);
    assert.equal((await device({ name: 'plain' })).display, 'plain');
  });
});
