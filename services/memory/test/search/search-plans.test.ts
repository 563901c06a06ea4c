/**
 * The vector stage of large collections (≥ VEC_MIN_DOCS documents: the
 * in-memory SimHash index) against exact answers computed here, unfiltered
 * and under filters that match 1% and 50% of the documents (the two filtered
 * plans), on both storages. A second handle on the same database plays
 * another process: it must see writes made through the server.
 */
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import type { Storage } from '@svc/storage';
import { openMemoryStorage } from '../../src/app.ts';
import { createSearch, type Search } from '../../src/search/index.ts';
import { dot, localEmbedding } from '../../src/search/embedding.ts';
import { VEC_MIN_DOCS } from '../../src/search/sqlite-index.ts';
import { addDocument, newCollection, newUser, q, startMemory, type Http } from './helpers.ts';

const N = VEC_MIN_DOCS + 76;
const WORDS = 'amber basalt cedar dune ember fjord glacier harbor island jungle kelp lagoon meadow nectar orchid pebble quartz river saddle tundra umber valley willow yarrow zephyr'.split(' ');
let seed = 7;
const rand = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
const text = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(rand() * rand() * WORDS.length)]! + (rand() < 0.3 ? String(Math.floor(rand() * 40)) : '')).join(' ');
const DOCS = Array.from({ length: N }, (_, i) => ({ content: text(6 + (i % 9)), metadata: { i, b: i % 100, h: i % 2, tag: { x: i % 3 } } }));
const QUERIES = Array.from({ length: 30 }, () => text(3));
const VECTORS = DOCS.map((d) => localEmbedding(d.content));

forEachStorage('memory vector plans on a large collection', (kind) => {
  let http: Http;
  let close: () => Promise<void>;
  let other: Storage;
  let search: Search;
  let collection: { id: string; path: string };
  const idOf: string[] = [];

  before(async () => {
    const m = await startMemory(kind);
    http = m.http;
    close = () => m.server.close();
    const u = await newUser(http);
    collection = await newCollection(http, u.C, 'big');
    for (let i = 0; i < N; i += 8) {
      const batch = DOCS.slice(i, i + 8);
      const made = await Promise.all(batch.map((d) => addDocument(http, collection.path, d.content, d.metadata)));
      made.forEach((d, j) => (idOf[i + j] = d.id));
    }
    other = await openMemoryStorage(m.server.cfg);
    search = createSearch({ storage: other, config: {} as any });
  });
  after(async () => {
    await other?.close();
    await close?.();
  });

  function exactTop(qv: Float32Array, k: number, keep: (i: number) => boolean): string[] {
    return DOCS.map((_, i) => ({ i, s: keep(i) ? dot(VECTORS[i]!, qv) : -Infinity }))
      .filter((x) => x.s > -Infinity)
      .sort((a, b) => b.s - a.s || a.i - b.i)
      .slice(0, k)
      .map((x) => idOf[x.i]!);
  }

  async function recall(filterOf: (n: number) => Record<string, unknown> | undefined, keepOf: (n: number) => (i: number) => boolean) {
    let hit = 0;
    let total = 0;
    for (let n = 0; n < QUERIES.length; n++) {
      const qv = localEmbedding(QUERIES[n]!);
      const want = exactTop(qv, 10, keepOf(n));
      const hits = await search.backend.vectorRanking(collection.id, qv, 10, filterOf(n));
      const rows = await search.backend.fetch(collection.id, hits.map((h) => h.key));
      const got = new Set(rows.map((r) => r.id));
      for (const r of rows) {
        const meta = typeof r.metadata === 'string' ? JSON.parse(r.metadata) : r.metadata;
        assert.ok(keepOf(n)(meta.i), `a result outside the filter: ${JSON.stringify(meta)}`);
      }
      hit += want.filter((id) => got.has(id)).length;
      total += want.length;
    }
    return hit / total;
  }

  it('finds ≥ 95% of the exact top 10 without a filter', async () => {
    assert.ok((await recall(() => undefined, () => () => true)) >= 0.95);
  });

  it('ranks a selective filter (1%) exactly and a broad one (50%) through the index, both ≥ 95%', async () => {
    const r1 = await recall((n) => ({ b: n % 100 }), (n) => (i) => i % 100 === n % 100);
    const r50 = await recall((n) => ({ h: n % 2 }), (n) => (i) => i % 2 === n % 2);
    assert.ok(r1 >= 0.95, `1%: ${r1}`);
    assert.ok(r50 >= 0.95, `50%: ${r50}`);
    // Entries the metadata index cannot see (nested) are checked exactly.
    const nested = await recall((n) => ({ tag: { x: n % 3 } }), (n) => (i) => i % 3 === n % 3);
    assert.ok(nested >= 0.95, `nested: ${nested}`);
    const both = await recall((n) => ({ h: 1, tag: { x: n % 3 } }), (n) => (i) => i % 2 === 1 && i % 3 === n % 3);
    assert.ok(both >= 0.95, `mixed: ${both}`);
    assert.deepEqual(await search.backend.vectorRanking(collection.id, localEmbedding('amber'), 5, { b: 'no such value' }), []);
    assert.deepEqual(await search.backend.vectorRanking(collection.id, localEmbedding('amber'), 5, ['x']), []);
  });

  it('sees documents written, changed and deleted by the server (another process)', async () => {
    const content = 'zeppelin xylophone quokka marmalade';
    const qv = localEmbedding(content);
    await search.backend.vectorRanking(collection.id, qv, 5, undefined); // the index is built before the write
    const d = await addDocument(http, collection.path, content, { b: 'new' });
    const first = async (filter?: unknown) => {
      const hits = await search.backend.vectorRanking(collection.id, qv, 1, filter);
      return (await search.backend.fetch(collection.id, hits.map((h) => h.key)))[0]?.id;
    };
    assert.equal(await first(), d.id);
    assert.equal(await first({ b: 'new' }), d.id);
    assert.equal((await http.put(`${collection.path}/documents/${d.id}`, { metadata: { b: 'changed' } })).status, 200);
    assert.equal(await first({ b: 'new' }), undefined);
    assert.equal(await first({ b: 'changed' }), d.id);
    assert.equal((await http.delete(`${collection.path}/documents/${d.id}`)).status, 200);
    assert.notEqual(await first(), d.id);
  });

  it('answers /query with only matching documents under both filters', async () => {
    for (const [filter, keep] of [
      [{ b: 7 }, (m: any) => m.b === 7],
      [{ h: 0 }, (m: any) => m.h === 0],
    ] as const) {
      const r = await http.get(`${collection.path}/query?query=${q(QUERIES[0]!)}&top_k=10&filter=${q(JSON.stringify(filter))}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.length, 10);
      for (const doc of r.body) assert.ok(keep(doc.metadata), JSON.stringify(doc.metadata));
    }
  });
});
