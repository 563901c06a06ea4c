import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { startApi, startApiProcesses, type Api } from './helpers.ts';

/**
 * available-ips remembers where the free space of a prefix starts; an address freed below it (deleted,
 * moved to another address or VRF) — by this process or another one — is still the next one handed out.
 */
forEachStorage('inventory API: available-ips reuses freed addresses', (storage) => {
  let api: Api;
  before(async () => {
    api = await startApi(storage);
  });
  after(() => api.close());

  const alloc = async (h: Api['http'], prefixId: number) => {
    const r = await h.post(`/api/ipam/prefixes/${prefixId}/available-ips/`, {});
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body as { id: number; address: string };
  };

  it('hands out the lowest free address after deletes, address changes and VRF moves', async () => {
    const h = api.http;
    const p = (await h.post('/api/ipam/prefixes/', { prefix: '10.66.0.0/29' })).body;
    const got = [];
    for (let i = 0; i < 4; i++) got.push(await alloc(h, p.id));
    assert.deepEqual(got.map((a) => a.address), ['10.66.0.1/29', '10.66.0.2/29', '10.66.0.3/29', '10.66.0.4/29']);
    assert.equal((await h.delete(`/api/ipam/ip-addresses/${got[1]!.id}/`)).status, 204);
    assert.equal((await alloc(h, p.id)).address, '10.66.0.2/29');
    assert.equal((await alloc(h, p.id)).address, '10.66.0.5/29');
    // An address edited elsewhere frees its old place.
    assert.equal((await h.patch(`/api/ipam/ip-addresses/${got[0]!.id}/`, { address: '10.99.0.1/24' })).status, 200);
    assert.equal((await alloc(h, p.id)).address, '10.66.0.1/29');
    // So does a move into a VRF (the prefix is global: a VRF's addresses are not in its scope).
    const vrf = (await h.post('/api/ipam/vrfs/', { name: 'blue' })).body;
    assert.equal((await h.patch(`/api/ipam/ip-addresses/${got[2]!.id}/`, { vrf: vrf.id })).status, 200);
    assert.equal((await alloc(h, p.id)).address, '10.66.0.3/29');
    assert.equal((await alloc(h, p.id)).address, '10.66.0.6/29');
    // Full: NetBox's 409 with the counts.
    const full = await h.post(`/api/ipam/prefixes/${p.id}/available-ips/`, {});
    assert.equal(full.status, 409, JSON.stringify(full.body));
    // A list of what is free agrees with what allocation sees.
    await h.delete(`/api/ipam/ip-addresses/${got[3]!.id}/`);
    assert.deepEqual((await h.get(`/api/ipam/prefixes/${p.id}/available-ips/`)).body.map((a: any) => a.address), ['10.66.0.4/29']);
    assert.equal((await alloc(h, p.id)).address, '10.66.0.4/29');
  });

  it('a bulk delete frees every listed address', async () => {
    const h = api.http;
    const p = (await h.post('/api/ipam/prefixes/', { prefix: '10.67.0.0/28' })).body;
    const many = (await h.post(`/api/ipam/prefixes/${p.id}/available-ips/`, Array.from({ length: 6 }, () => ({})))).body;
    assert.equal(many.length, 6);
    assert.equal((await h.delete('/api/ipam/ip-addresses/', [{ id: many[0].id }, { id: many[3].id }])).status, 204);
    const again = (await h.post(`/api/ipam/prefixes/${p.id}/available-ips/`, [{}, {}, {}])).body.map((a: any) => a.address);
    assert.deepEqual(again, ['10.67.0.1/28', '10.67.0.4/28', '10.67.0.7/28']);
  });
});

forEachStorage('inventory API: available-ips sees addresses freed by another process', (storage) => {
  it('an address deleted through one API process is the next one the other allocates', async () => {
    const run = await startApiProcesses(storage, 2);
    try {
      const [a, b] = run.procs;
      const p = (await a!.http.post('/api/ipam/prefixes/', { prefix: '10.68.0.0/24' })).body;
      const first = [];
      for (let i = 0; i < 3; i++) first.push((await a!.http.post(`/api/ipam/prefixes/${p.id}/available-ips/`, {})).body);
      assert.deepEqual(first.map((x) => x.address), ['10.68.0.1/24', '10.68.0.2/24', '10.68.0.3/24']);
      assert.equal((await b!.http.delete(`/api/ipam/ip-addresses/${first[0].id}/`)).status, 204);
      assert.equal((await a!.http.post(`/api/ipam/prefixes/${p.id}/available-ips/`, {})).body.address, '10.68.0.1/24');
      assert.equal((await a!.http.post(`/api/ipam/prefixes/${p.id}/available-ips/`, {})).body.address, '10.68.0.4/24');
    } finally {
      await run.close();
    }
  });
});
