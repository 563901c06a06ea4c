import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { startInventory, startReceiver } from './helpers.ts';

forEachStorage('webhooks for the NetBox objects, with a User-Agent', (storage) => {
  let inv: Awaited<ReturnType<typeof startInventory>>;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  before(async () => {
    rx = await startReceiver();
    inv = await startInventory(storage);
  });
  after(async () => {
    await inv.server.close();
    await rx.close();
  });

  it('sends prefix and VLAN events through the same rules, naming the sender', async () => {
    const w = await inv.api.post('/api/extras/webhooks/', { name: 'ipam', payload_url: `${rx.url}/ipam` });
    assert.equal(w.status, 201, JSON.stringify(w.body));
    const rule = await inv.api.post('/api/extras/event-rules/', {
      name: 'ipam-created',
      object_types: ['ipam.prefix', 'ipam.vlan', 'tenancy.tenant'],
      event_types: ['object_created'],
      action_type: 'webhook',
      action_object_type: 'extras.webhook',
      action_object_id: w.body.id,
      conditions: { attr: 'status.value', value: 'active' },
    });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    const p = await inv.api.post('/api/ipam/prefixes/', { prefix: '10.5.0.0/24' });
    await inv.api.post('/api/ipam/prefixes/', { prefix: '10.6.0.0/24', status: 'reserved' });
    const v = await inv.api.post('/api/ipam/vlans/', { vid: 7, name: 'seven' });
    await rx.waitFor(2);
    const bodies = rx.received.map((r) => JSON.parse(r.body.toString()));
    const models = bodies.map((b) => b.model).sort();
    assert.deepEqual(models, ['prefix', 'vlan']);
    const pb = bodies.find((b) => b.model === 'prefix');
    assert.equal(pb.event, 'created');
    assert.equal(pb.data.id, p.body.id);
    assert.equal(pb.data.url, `/api/ipam/prefixes/${p.body.id}/`, 'event data keeps relative URLs');
    assert.equal(pb.data.prefix, '10.5.0.0/24');
    assert.equal(pb.snapshots.postchange.prefix, '10.5.0.0/24');
    assert.equal(bodies.find((b) => b.model === 'vlan').data.id, v.body.id);
    for (const r of rx.received) assert.match(String(r.headers['user-agent']), /^NetBox\/4\.3\.\d+ inventory\/\d+\.\d+\.\d+$/);
  });
});
