/**
 * The in-memory SimHash index's search reuses scratch buffers (candidate rows
 * in the kernel's memory, scores, the sorted copy, the histogram) instead of
 * allocating them per query. These checks pin that the reuse changes no
 * answer: search() equals the plain composition rank(nearest()) and the
 * exact (score desc, row asc) selection, on every call, across growth of the
 * index and after removals; and stored vectors read as views equal copies.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { CodeIndex, topIndexes } from '../../src/search/code-index.ts';
import { INDEX_DIMS, localEmbedding } from '../../src/search/embedding.ts';
import { simhash } from '../../src/search/simhash.ts';
import { storedVector } from '../../src/search/sqlite-index.ts';

let seed = 11;
const rand = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
const WORDS = 'amber basalt cedar dune ember fjord glacier harbor island jungle kelp lagoon meadow nectar orchid pebble quartz river'.split(' ');
const text = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]! + Math.floor(rand() * 30)).join(' ');

/** The selection topIndexes makes, by a full sort: score desc, then index asc. */
function sortedTop(scored: Float64Array, keep: number): number[] {
  return Array.from(scored, (s, i) => ({ s, i }))
    .sort((a, b) => b.s - a.s || a.i - b.i)
    .slice(0, keep)
    .map((x) => x.i);
}

describe('memory code index scratch reuse', () => {
  it('topIndexes with a scratch buffer selects what a full sort selects, ties included', () => {
    const scratch = new Float64Array(4096);
    for (const m of [1, 7, 100, 3000]) {
      // Few distinct values: many ties at the cut-off.
      const scored = Float64Array.from({ length: m }, () => Math.floor(rand() * 20));
      for (const keep of [1, 5, 40, m + 3]) {
        const expected = sortedTop(scored, keep);
        assert.deepEqual(topIndexes(scored, keep, scratch), expected);
        assert.deepEqual(topIndexes(scored, keep), expected);
      }
    }
    // A scratch too small is not used (no overflow, same answer).
    const big = Float64Array.from({ length: 500 }, () => rand());
    assert.deepEqual(topIndexes(big, 10, new Float64Array(10)), sortedTop(big, 10));
  });

  it('search() gives the same keys as rank(nearest()) on every call, as the index grows and shrinks', () => {
    const idx = new CodeIndex();
    const vectors: Float32Array[] = [];
    const add = (count: number) => {
      for (let i = 0; i < count; i++) {
        const v = localEmbedding(text(8));
        vectors.push(v);
        idx.upsert(vectors.length, simhash(v), v, [JSON.stringify(['h', vectors.length % 2])]);
      }
    };
    const queries = Array.from({ length: 12 }, () => localEmbedding(text(3)));
    const check = (want: number, keep: number) => {
      for (const q of queries) {
        const code = simhash(q);
        const expected = idx.rank(idx.nearest(code, want), q, keep);
        const first = idx.search(code, q, want, keep);
        assert.deepEqual(first, expected);
        // Again after another query has used the same scratch space.
        idx.search(simhash(queries[0]!), queries[0]!, want, keep);
        assert.deepEqual(idx.search(code, q, want, keep), first);
        const mask = idx.maskFor([JSON.stringify(['h', 1])]);
        const allowed = idx.search(code, q, want, keep, mask);
        assert.deepEqual(allowed, idx.rank(idx.nearest(code, want, mask), q, keep));
        assert.deepEqual(allowed.filter((k) => k % 2 === 0), [], 'the mask keeps only allowed rows');
      }
    };
    add(900);
    check(200, 20);
    add(1500); // past the initial capacity of 1,024 rows: the kernel's memory grows
    check(1000, 40);
    for (let k = 1; k <= 2400; k += 3) idx.remove(k);
    check(1000, 40);
    check(5000, 40); // more wanted than there are rows: every row is a candidate
  });

  it('rank() of explicit rows matches a plain int8 scoring', () => {
    const idx = new CodeIndex();
    const vs = Array.from({ length: 300 }, () => localEmbedding(text(6)));
    vs.forEach((v, i) => idx.upsert(i + 1, simhash(v), v, []));
    const q = localEmbedding(text(3));
    const rows = idx.rowsOf(Array.from({ length: 150 }, (_, i) => 2 * i + 1));
    const keys = idx.rank(rows, q, 10);
    assert.equal(keys.length, 10);
    assert.ok(keys.every((k) => k % 2 === 1 && k <= 300), 'only the rows given are ranked');
    assert.deepEqual(idx.rank(rows, q, 10), keys, 'stable across calls');
  });

  it('storedVector reads aligned blobs as views and unaligned ones as copies, with the same values', () => {
    const v = localEmbedding('the quick brown fox');
    const aligned = Buffer.from(v.buffer.slice(0));
    const raw = Buffer.alloc(v.byteLength + 1);
    Buffer.from(v.buffer, v.byteOffset, v.byteLength).copy(raw, 1);
    const unaligned = raw.subarray(1);
    assert.equal(unaligned.byteOffset % 4 === 0, false);
    assert.deepEqual(Array.from(storedVector(aligned)), Array.from(v));
    assert.deepEqual(Array.from(storedVector(unaligned)), Array.from(v));
    assert.equal(storedVector(aligned).length, INDEX_DIMS);
  });
});
