import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { startInventory, startReceiver, until } from './helpers.ts';

forEachStorage('device changes fire webhooks end to end', (kind) => {
  let inv: Awaited<ReturnType<typeof startInventory>>;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let basics: { site: any; type: any; role: any };
  before(async () => {
    inv = await startInventory(kind);
    rx = await startReceiver();
    const h = inv.api;
    const site = (await h.post('/api/dcim/sites/', { name: 'Site', slug: 'site' })).body;
    const mfr = (await h.post('/api/dcim/manufacturers/', { name: 'Acme', slug: 'acme' })).body;
    const type = (await h.post('/api/dcim/device-types/', { manufacturer: mfr.id, model: 'X', slug: 'x' })).body;
    const role = (await h.post('/api/dcim/device-roles/', { name: 'Router', slug: 'router' })).body;
    basics = { site, type, role };
    const w = await h.post('/api/extras/webhooks/', { name: 'devices', payload_url: `${rx.url}/dev`, secret: 'k' });
    assert.equal(w.status, 201);
    const r = await h.post('/api/extras/event-rules/', {
      name: 'devices',
      object_types: ['dcim.device'],
      event_types: ['object_created', 'object_updated', 'object_deleted'],
      action_object_type: 'extras.webhook',
      action_object_id: w.body.id,
      action_data: { source: 'inventory' },
    });
    assert.equal(r.status, 201);
  });
  after(async () => {
    await inv.server.close();
    await rx.close();
  });

  it('create, update and delete send the reference context with the request id', async () => {
    const n = rx.received.length;
    const created = await inv.api.post('/api/dcim/devices/', { name: 'edge1', site: basics.site.id, device_type: basics.type.id, role: basics.role.id, status: 'active' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await rx.waitFor(n + 1);
    const body = JSON.parse(rx.received[n]!.body.toString());
    assert.deepEqual(Object.keys(body), ['event', 'timestamp', 'model', 'username', 'request_id', 'data', 'snapshots']);
    assert.equal(body.event, 'created');
    assert.equal(body.model, 'device');
    assert.equal(body.username, 'admin');
    assert.equal(body.request_id, created.headers.get('x-request-id'));
    assert.match(body.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00$/);
    assert.equal(body.data.name, 'edge1');
    assert.deepEqual(body.data.status, { value: 'active', label: 'Active' });
    assert.equal(body.data.source, 'inventory', 'action_data merged into data');
    assert.equal(body.snapshots.prechange, null);
    assert.equal(body.snapshots.postchange.name, 'edge1');
    assert.ok(rx.received[n]!.body.toString().startsWith('{"event": "created", "timestamp": "'), 'Python json.dumps separators');

    const upd = await inv.api.patch(`/api/dcim/devices/${created.body.id}/`, { status: 'offline' });
    assert.equal(upd.status, 200);
    await rx.waitFor(n + 2);
    const ub = JSON.parse(rx.received[n + 1]!.body.toString());
    assert.equal(ub.event, 'updated');
    assert.equal(ub.snapshots.prechange.status, 'active');
    assert.equal(ub.snapshots.postchange.status, 'offline');

    const del = await inv.api.delete(`/api/dcim/devices/${created.body.id}/`);
    assert.equal(del.status, 204);
    await rx.waitFor(n + 3);
    const db = JSON.parse(rx.received[n + 2]!.body.toString());
    assert.equal(db.event, 'deleted');
    assert.equal(db.snapshots.postchange, null);
    assert.equal(db.data.name, 'edge1');
  });

  it('a request that fails after writing sends nothing', async () => {
    const n = rx.received.length;
    const tasksBefore = (await inv.api.get('/api/core/background-tasks/?limit=1')).body.count as number;
    const r = await inv.api.post('/api/dcim/devices/', [
      { name: 'ok-one', site: basics.site.id, device_type: basics.type.id, role: basics.role.id },
      { name: 'bad-one', site: 999999, device_type: basics.type.id, role: basics.role.id },
    ]);
    assert.equal(r.status, 400);
    const ok = await inv.api.post('/api/dcim/devices/', { name: 'later', site: basics.site.id, device_type: basics.type.id, role: basics.role.id });
    assert.equal(ok.status, 201);
    // The outbox is written in each request's transaction: the failed one left no delivery, the later one left one.
    const tasks = (await inv.api.get('/api/core/background-tasks/?limit=1000')).body;
    assert.equal(tasks.count, tasksBefore + 1);
    const mine = tasks.results.filter((t: { object_id: number; event: string }) => t.event === 'created' && t.object_id === ok.body.id);
    assert.equal(mine.length, 1);
    await until(async () => (await inv.api.get(`/api/core/background-tasks/${mine[0].id}/`)).body.status === 'successful', 10_000, 'the later delivery');
    await rx.waitFor(n + 1);
    const names = rx.received.slice(n).map((x) => JSON.parse(x.body.toString()).data.name);
    assert.deepEqual(names, ['later']);
  });
});
