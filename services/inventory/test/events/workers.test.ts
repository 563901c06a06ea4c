import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { forEachStorage } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import type { InventoryDeps } from '../../src/deps.ts';
import { quiesceWorker } from '../../src/events/registry.ts';
import { deviceEvent, emit, startInventory, startReceiver, until } from './helpers.ts';

forEachStorage('several workers share the queue', (kind) => {
  let inv: Awaited<ReturnType<typeof startInventory>>;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let second: FastifyInstance | undefined;
  before(async () => {
    inv = await startInventory(kind, { webhookBatch: '16' });
    rx = await startReceiver();
    // A second app instance on the same database (same SQLite file / PostgreSQL schema) with its own workers.
    second = await buildApp({ ...inv.server.cfg, flags: { ...inv.server.cfg.flags, webhookBatch: '16' } });
  });
  after(async () => {
    await second?.close();
    await inv.server.close();
    await rx.close();
  });

  it('each delivery is sent exactly once in normal operation', { timeout: 60_000 }, async () => {
    const w = await inv.api.post('/api/extras/webhooks/', { name: 'shared', payload_url: `${rx.url}/shared` });
    await inv.api.post('/api/extras/event-rules/', { name: 'shared', object_types: ['dcim.device'], event_types: ['object_created'], action_object_type: 'extras.webhook', action_object_id: w.body.id });
    const secondDeps = (second as unknown as { inventoryDeps: InventoryDeps }).inventoryDeps;
    const N = 300;
    for (let i = 0; i < N; i += 30) {
      const batch = Array.from({ length: 30 }, () => deviceEvent());
      await emit(i % 60 === 0 ? inv.deps : secondDeps, batch);
    }
    await rx.waitFor(N, 30_000);
    await until(async () => (await inv.api.get(`/api/core/background-tasks/?webhook=${w.body.id}&status=successful&limit=1`)).body.count === N, 20_000, 'all recorded');
    // A duplicate send could still be in flight when the last outcome is recorded: stop both instances'
    // workers (each waits for its sends) before counting, instead of sleeping and hoping.
    await second!.close();
    second = undefined;
    await quiesceWorker(inv.deps);
    const ids = rx.received.filter((r) => r.url === '/shared').map((r) => r.headers['webhook-id']);
    assert.equal(ids.length, N);
    assert.equal(new Set(ids).size, N);
    const workers = await inv.deps.storage.db.selectFrom('events_delivery_attempt').select('worker').distinct().execute();
    assert.ok(workers.length >= 1);
  });
});
