import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { startReceiver, until } from '../events/helpers.ts';
import { startApiProcesses, type ApiProcess } from './helpers.ts';

/**
 * Concurrent writers in two API processes on one database (one PostgreSQL
 * schema, or one SQLite file): unique clashes answer as sequential ones,
 * no update is lost, and the change log of an object is a chain.
 */
forEachStorage('inventory API: races between two API processes', (storage) => {
  let procs: Awaited<ReturnType<typeof startApiProcesses>>;
  let a: ApiProcess;
  let b: ApiProcess;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let ids: { site: number; type: number; role: number };
  before(async () => {
    rx = await startReceiver();
    // Workers only in the first process: it delivers what both commit.
    procs = await startApiProcesses(storage, 2, { workers: true });
    [a, b] = procs.procs as [ApiProcess, ApiProcess];
    const h = a.http;
    const site = (await h.post('/api/dcim/sites/', { name: 'S', slug: 's' })).body;
    const mfr = (await h.post('/api/dcim/manufacturers/', { name: 'M', slug: 'm' })).body;
    const type = (await h.post('/api/dcim/device-types/', { manufacturer: mfr.id, model: 'T', slug: 't' })).body;
    const role = (await h.post('/api/dcim/device-roles/', { name: 'R', slug: 'r' })).body;
    ids = { site: site.id, type: type.id, role: role.id };
  });
  after(async () => {
    await procs?.close();
    await rx?.close();
  });
  const device = async (name: string) => {
    const r = await a.http.post('/api/dcim/devices/', { name, site: ids.site, device_type: ids.type, role: ids.role });
    assert.equal(r.status, 201, r.text);
    return r.body;
  };

  it('concurrent creates of one name answer 201 once and the sequential 400 otherwise', async () => {
    const hook = (await a.http.post('/api/extras/webhooks/', { name: 'base', payload_url: `${rx.url}/x` })).body;
    const cases: Array<[string, (i: number) => unknown, unknown]> = [
      ['/api/extras/webhooks/', (i) => ({ name: `hook-${i}`, payload_url: `${rx.url}/x` }), { name: ['webhook with this name already exists.'] }],
      [
        '/api/extras/event-rules/',
        (i) => ({ name: `rule-${i}`, object_types: ['dcim.site'], event_types: ['object_created'], action_object_type: 'extras.webhook', action_object_id: hook.id }),
        { name: ['event rule with this name already exists.'] },
      ],
      ['/api/dcim/sites/', (i) => ({ name: `site-${i}`, slug: `site-${i}` }), { name: ['site with this name already exists.'], slug: ['site with this slug already exists.'] }],
      ['/api/extras/tags/', (i) => ({ name: `tag-${i}`, slug: `tag-${i}` }), { name: ['tag with this name already exists.'], slug: ['tag with this slug already exists.'] }],
    ];
    for (const [path, body, clash] of cases) {
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => [a, b, a, b].map((p) => p.http.post(path, body(i)))).flat());
      for (let i = 0; i < 20; i++) {
        const four = results.slice(i * 4, i * 4 + 4);
        assert.deepEqual(four.map((r) => r.status).sort(), [201, 400, 400, 400], `${path} #${i}: ${four.map((r) => `${r.status} ${r.text}`).join(' | ')}`);
        for (const r of four.filter((x) => x.status === 400)) assert.deepEqual(r.body, clash, path);
      }
    }
  });

  it('a PATCH racing a DELETE of the same device is 200 or 404, never 5xx', async () => {
    const devs = await Promise.all(Array.from({ length: 30 }, (_, i) => device(`race-${i}`)));
    const results = await Promise.all(
      devs.flatMap((d, i) => [
        (i % 2 ? a : b).http.patch(`/api/dcim/devices/${d.id}/`, { serial: 'x', custom_fields: { k: i } }),
        (i % 2 ? b : a).http.delete(`/api/dcim/devices/${d.id}/`),
        (i % 2 ? a : b).http.patch(`/api/dcim/devices/${d.id}/`, { description: 'y' }),
        (i % 2 ? b : a).http.delete(`/api/dcim/devices/${d.id}/`),
      ]),
    );
    for (let i = 0; i < devs.length; i++) {
      const [p1, d1, p2, d2] = results.slice(i * 4, i * 4 + 4) as [any, any, any, any];
      for (const p of [p1, p2]) assert.ok(p.status === 200 || p.status === 404, `PATCH → ${p.status} ${p.text}`);
      for (const p of [p1, p2]) if (p.status === 404) assert.deepEqual(p.body, { detail: 'Not found.' });
      assert.deepEqual([d1.status, d2.status].sort(), [204, 404], `DELETEs → ${d1.status} ${d2.status} ${d1.text} ${d2.text}`);
    }
  });

  it('200 concurrent PATCHes of one device leave a change log that is a chain, and webhooks carry its snapshots', { timeout: 120_000 }, async () => {
    const hook = (await a.http.post('/api/extras/webhooks/', { name: 'chain', payload_url: `${rx.url}/chain` })).body;
    await a.http.post('/api/extras/event-rules/', { name: 'chain', object_types: ['dcim.device'], event_types: ['object_updated'], action_object_type: 'extras.webhook', action_object_id: hook.id });
    const d = await device('chain');
    const N = 200;
    const results = await Promise.all(Array.from({ length: N }, (_, i) => (i % 2 ? a : b).http.patch(`/api/dcim/devices/${d.id}/`, { serial: `s${i}`, custom_fields: { [`k${i}`]: i } })));
    for (const r of results) assert.equal(r.status, 200, r.text);
    const log = (await a.http.get(`/api/core/object-changes/?changed_object_type=dcim.device&changed_object_id=${d.id}&limit=1000`)).body.results.reverse();
    assert.equal(log.length, N + 1);
    assert.equal(log[0].action.value, 'create');
    for (let i = 1; i < log.length; i++) {
      assert.deepEqual(log[i].prechange_data, log[i - 1].postchange_data, `record ${i} (${log[i].request_id}) does not follow record ${i - 1}`);
      assert.ok(log[i].time >= log[i - 1].time, 'times follow the chain');
    }
    // Every PATCH added its own key: none lost.
    assert.equal(Object.keys(log[N].postchange_data.custom_fields).length, N);
    await rx.waitFor(rx.received.filter((r) => r.url !== '/chain').length + N, 60_000);
    await until(async () => new Set(rx.received.filter((r) => r.url === '/chain').map((r) => r.headers['webhook-id'])).size >= N, 60_000, 'every change delivered');
    const byRequest = new Map(log.map((c: any) => [c.request_id, c]));
    // Delivery is at-least-once: a repeat (same webhook-id) is the same message.
    const byId = new Map(rx.received.filter((r) => r.url === '/chain').map((r) => [String(r.headers['webhook-id']), JSON.parse(r.body.toString())]));
    const sent = [...byId.values()];
    assert.equal(sent.length, N);
    for (const s of sent) {
      const c: any = byRequest.get(s.request_id);
      assert.ok(c, `no change for ${s.request_id}`);
      assert.deepEqual(s.snapshots, { prechange: c.prechange_data, postchange: c.postchange_data });
    }
  });

  it('100 parallel PATCHes that each add their own custom_fields key lose none', async () => {
    const d = await device('keys');
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).http.patch(`/api/dcim/devices/${d.id}/`, { custom_fields: { [`key${i}`]: `v${i}` } })));
    for (const r of results) assert.equal(r.status, 200, r.text);
    const cf = (await b.http.get(`/api/dcim/devices/${d.id}/`)).body.custom_fields;
    assert.deepEqual(Object.keys(cf).sort(), Array.from({ length: 100 }, (_, i) => `key${i}`).sort());
    for (let i = 0; i < 100; i++) assert.equal(cf[`key${i}`], `v${i}`);
  });
});
