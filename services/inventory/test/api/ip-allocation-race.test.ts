import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { startApi, startApiProcesses, type Api } from './helpers.ts';

forEachStorage('inventory API: concurrent available-ips allocation', (storage) => {
  let api: Api;
  before(async () => {
    api = await startApi(storage);
  });
  after(() => api.close());

  it('50 concurrent allocations from one prefix: 50 distinct addresses, no 5xx', async () => {
    const p = (await api.http.post('/api/ipam/prefixes/', { prefix: '10.77.0.0/24' })).body;
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => api.http.post(`/api/ipam/prefixes/${p.id}/available-ips/`, { description: `c${i}` })));
    for (const r of results) assert.equal(r.status, 201, JSON.stringify(r.body));
    const addresses = results.map((r) => r.body.address);
    assert.equal(new Set(addresses).size, 50);
    const listed = (await api.http.get(`/api/ipam/ip-addresses/?parent=10.77.0.0/24&limit=0`)).body;
    assert.equal(listed.count, 50);
    assert.deepEqual(listed.results.map((a: any) => a.address).sort(), [...addresses].sort());
    // Many-at-once requests interleaved with single ones.
    const mixed = await Promise.all(Array.from({ length: 10 }, (_, i) => api.http.post(`/api/ipam/prefixes/${p.id}/available-ips/`, i % 2 ? [{}, {}, {}] : {})));
    const got = mixed.flatMap((r) => (assert.equal(r.status, 201, JSON.stringify(r.body)), Array.isArray(r.body) ? r.body : [r.body])).map((a: any) => a.address);
    assert.equal(new Set([...got, ...addresses]).size, 50 + 20);
  });
});

forEachStorage('inventory API: available-ips allocation from two processes', (storage) => {
  it('never hands the same address to clients of different processes', async () => {
    const run = await startApiProcesses(storage, 2);
    try {
      const [a, b] = run.procs;
      const p = (await a!.http.post('/api/ipam/prefixes/', { prefix: '10.88.0.0/24' })).body;
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? a! : b!).http.post(`/api/ipam/prefixes/${p.id}/available-ips/`, {})));
      for (const r of results) assert.equal(r.status, 201, JSON.stringify(r.body));
      const ok = results.filter((r) => r.status === 201).map((r) => r.body.address);
      assert.ok(ok.length >= 45, `only ${ok.length} allocations succeeded`);
      assert.equal(new Set(ok).size, ok.length);
    } finally {
      await run.close();
    }
  });
});
