/**
 * The in-memory search indexes are bounded by memory (MEMORY_SEARCH_INDEX_MB): least recently
 * used collections' indexes are dropped, the one in use always stays, and a dropped index is
 * rebuilt from the database with the same answers. Unit tests of the cache, then the bound on
 * two large collections (≥ VEC_MIN_DOCS documents each) on both storages.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import type { Storage } from '@svc/storage';
import { openMemoryStorage } from '../../src/app.ts';
import { newId, nextSeq } from '../../src/domain/values.ts';
import { localEmbedding } from '../../src/search/embedding.ts';
import { IndexCache } from '../../src/search/index-cache.ts';
import { createBackend, createSearch, indexMemoryBytes, type Search } from '../../src/search/index.ts';
import { VEC_MIN_DOCS } from '../../src/search/sqlite-index.ts';
import { newCollection, newUser, startMemory, type Http } from './helpers.ts';

describe('index cache (LRU by bytes)', () => {
  const item = (bytes: number) => ({ bytes });

  it('drops the least recently used indexes once the bound is passed', () => {
    const c = new IndexCache<{ bytes: number }>(100);
    c.set('a', item(40));
    c.set('b', item(40));
    assert.equal(c.get('a')?.bytes, 40); // a is now the most recently used
    c.set('c', item(40));
    assert.deepEqual([...c.keys()], ['a', 'c']);
    assert.equal(c.evictions, 1);
    assert.ok(c.bytes <= 100);
  });

  it('keeps the index in use even when it alone is over the bound', () => {
    const c = new IndexCache<{ bytes: number }>(10);
    c.set('a', item(5));
    c.set('big', item(50));
    assert.deepEqual([...c.keys()], ['big']);
  });

  it('an index that grew is trimmed against the bound when next used', () => {
    const c = new IndexCache<{ bytes: number }>(100);
    const a = item(30);
    const b = item(30);
    c.set('a', a);
    c.set('b', b);
    b.bytes = 90; // documents added to b's collection
    assert.equal(c.peek('a'), a, 'peek does not trim or reorder');
    assert.equal(c.size, 2);
    c.get('b');
    c.trim('b');
    assert.deepEqual([...c.keys()], ['b']);
  });

  it('peek does not make an index recently used', () => {
    const c = new IndexCache<{ bytes: number }>(100);
    c.set('a', item(40));
    c.set('b', item(40));
    c.peek('a');
    c.set('c', item(40));
    assert.deepEqual([...c.keys()], ['b', 'c']);
  });

  it('the bound comes from --search-index-mb or MEMORY_SEARCH_INDEX_MB (default 512 MB); bad values are refused', () => {
    assert.equal(indexMemoryBytes({}, {}), 512 * 1024 * 1024);
    assert.equal(indexMemoryBytes({}, { MEMORY_SEARCH_INDEX_MB: '64' }), 64 * 1024 * 1024);
    assert.equal(indexMemoryBytes({ flags: { searchIndexMb: '1.5' } } as any, { MEMORY_SEARCH_INDEX_MB: '64' }), 1.5 * 1024 * 1024);
    assert.throws(() => indexMemoryBytes({}, { MEMORY_SEARCH_INDEX_MB: '0' }), /search index memory/);
    assert.throws(() => indexMemoryBytes({}, { MEMORY_SEARCH_INDEX_MB: 'lots' }), /search index memory/);
  });
});

const N = VEC_MIN_DOCS + 8;
const WORDS = 'amber basalt cedar dune ember fjord glacier harbor island jungle kelp lagoon meadow nectar orchid pebble quartz river saddle tundra'.split(' ');
const text = (i: number, salt: number) => `${WORDS[i % WORDS.length]} ${WORDS[(i * 7 + salt) % WORDS.length]} ${WORDS[(i * 13 + salt * 3) % WORDS.length]} ${i}`;

forEachStorage('memory search index bound', (kind) => {
  let http: Http;
  let close: () => Promise<void>;
  let storage: Storage;
  let bounded: Search;
  let unbounded: Search;
  const collections: string[] = [];

  before(async () => {
    const m = await startMemory(kind);
    http = m.http;
    close = () => m.server.close();
    const u = await newUser(http);
    for (const name of ['one', 'two']) collections.push((await newCollection(http, u.C, name)).id);
    storage = await openMemoryStorage(m.server.cfg);
    const d = storage.dialect;
    const writer = createSearch({ storage, config: {} as any });
    for (const [c, collectionId] of collections.entries()) {
      for (let i = 0; i < N; i += 16) {
        await Promise.all(
          Array.from({ length: Math.min(16, N - i) }, (_, k) => {
            const content = text(i + k, c);
            return writer.insertDocument(storage.db, { id: newId(), collection_id: collectionId, content, metadata: d.json({ i: i + k }), created_at: d.timestamp(new Date()), seq: nextSeq() });
          }),
        );
      }
    }
    // A bound of one byte: only the index in use stays.
    bounded = { ...writer, backend: createBackend(storage, { indexMemoryBytes: 1 }) };
    unbounded = { ...writer, backend: createBackend(storage) };
  });
  after(async () => {
    await storage?.close();
    await close?.();
  });

  it('keeps only the index in use under a tiny bound, rebuilding the others with the same answers', async (t) => {
    const cache = (bounded.backend as any).indexCache as IndexCache<{ bytes: number }> | undefined;
    if (!cache) return t.skip('this storage ranks vectors without an in-memory index (pgvector)');
    const qv = localEmbedding(text(3, 1));
    const rank = async (s: Search, c: string) => (await s.backend.vectorRanking(c, qv, 10, undefined)).map((h) => h.key);
    const wantOne = await rank(unbounded, collections[0]!);
    const wantTwo = await rank(unbounded, collections[1]!);
    assert.equal(wantOne.length, 10);
    assert.deepEqual(await rank(bounded, collections[0]!), wantOne);
    assert.deepEqual([...cache.keys()], [collections[0]]);
    assert.ok(cache.bytes > 1, 'an index reports its size');
    assert.deepEqual(await rank(bounded, collections[1]!), wantTwo);
    assert.deepEqual([...cache.keys()], [collections[1]], 'the least recently used index was dropped');
    assert.equal(cache.evictions, 1);
    // The dropped index is rebuilt from the database, with the same answer.
    assert.deepEqual(await rank(bounded, collections[0]!), wantOne);
    assert.equal(cache.evictions, 2);
    // With the default bound both stay.
    const all = (unbounded.backend as any).indexCache as IndexCache<{ bytes: number }>;
    assert.deepEqual(new Set(all.keys()), new Set(collections));
    assert.equal(all.evictions, 0);
  });
});
