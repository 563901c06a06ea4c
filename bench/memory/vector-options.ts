/**
 * Ways to find the 10 nearest of N unit vectors (the service's 384-dim local
 * embedding of the benchmark corpus), compared on recall@10 against an exact
 * scan and on per-query latency, all in one process and one run. This is the
 * measurement behind the SQLite vector plan (services/memory/README.md).
 *
 *   npx tsx bench/memory/vector-options.ts [--docs 100000] [--queries 200]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { INDEX_DIMS, localEmbedding } from '../../services/memory/src/search/embedding.ts';
import { simhash } from '../../services/memory/src/search/simhash.ts';
import { makeCorpus, pct } from './corpus.ts';

const { values } = parseArgs({ options: { docs: { type: 'string', default: '100000' }, queries: { type: 'string', default: '200' }, only: { type: 'string' } } });
const N = Number(values.docs);
const Q = Number(values.queries);
const only = values.only?.split(',');

const corpus = makeCorpus();
const vecs: Float32Array[] = [];
for (let i = 0; i < N; i++) vecs.push(localEmbedding(corpus.document()));
const queries = Array.from({ length: Q }, () => localEmbedding(corpus.query()));
const flat = new Float32Array(N * INDEX_DIMS);
vecs.forEach((v, i) => flat.set(v, i * INDEX_DIMS));

function topK(scores: Float32Array | number[], k: number, ids?: ArrayLike<number>): number[] {
  const idx = Array.from({ length: scores.length }, (_, i) => i);
  idx.sort((a, b) => (scores[b] as number) - (scores[a] as number) || a - b);
  return idx.slice(0, k).map((i) => (ids ? ids[i]! : i));
}
function exactScores(q: Float32Array): Float32Array {
  const s = new Float32Array(N);
  for (let i = 0, o = 0; i < N; i++, o += INDEX_DIMS) {
    let d = 0;
    for (let j = 0; j < INDEX_DIMS; j++) d += flat[o + j]! * q[j]!;
    s[i] = d;
  }
  return s;
}
function rerank(cands: number[], q: Float32Array, k: number): number[] {
  const sc = cands.map((i) => {
    let d = 0;
    const o = i * INDEX_DIMS;
    for (let j = 0; j < INDEX_DIMS; j++) d += flat[o + j]! * q[j]!;
    return d;
  });
  return topK(sc, k, cands);
}

const truth = queries.map((q) => topK(exactScores(q), 10));
const results: Array<{ name: string; recall: number; p50: number; p99: number; note?: string }> = [];
function run(name: string, fn: (q: Float32Array) => number[], note?: string) {
  if (only && !only.some((o) => name.includes(o))) return;
  for (const q of queries.slice(0, 5)) fn(q);
  const ms: number[] = [];
  let hit = 0;
  queries.forEach((q, i) => {
    const t = performance.now();
    const got = fn(q);
    ms.push(performance.now() - t);
    const g = new Set(got.slice(0, 10));
    hit += truth[i]!.filter((x) => g.has(x)).length;
  });
  const r = { name, recall: hit / (Q * 10), p50: pct(ms, 50), p99: pct(ms, 99), note };
  results.push(r);
  console.log(`${name.padEnd(52)} recall@10 ${(r.recall * 100).toFixed(1).padStart(5)}%   p50 ${r.p50.toFixed(2).padStart(7)} ms   p99 ${r.p99.toFixed(2).padStart(7)} ms${note ? '   ' + note : ''}`);
}

console.log(`vector options: ${N} documents × ${INDEX_DIMS} dims, ${Q} queries, node ${process.version}, load ${os.loadavg()[0]!.toFixed(1)}`);

run('JS exact scan (Float32Array)', (q) => topK(exactScores(q), 10));

// Binary SimHash codes scanned in JS (popcount), then exact re-rank of the best C.
const CODE_WORDS = INDEX_DIMS / 32;
const codes = new Uint32Array(N * CODE_WORDS);
vecs.forEach((v, i) => codes.set(new Uint32Array(simhash(v).buffer.slice(0)), i * CODE_WORDS));
function popcnt(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}
function hammingCands(q: Float32Array, c: number): number[] {
  const qc = new Uint32Array(simhash(q).buffer.slice(0));
  // Counting sort by distance (0..384): linear, no comparison sort of N items.
  const dist = new Uint16Array(N);
  const hist = new Uint32Array(INDEX_DIMS + 1);
  for (let i = 0, o = 0; i < N; i++, o += CODE_WORDS) {
    let d = 0;
    for (let w = 0; w < CODE_WORDS; w++) d += popcnt(codes[o + w]! ^ qc[w]!);
    dist[i] = d;
    hist[d]!++;
  }
  let cut = 0;
  for (let acc = 0; cut <= INDEX_DIMS && acc + hist[cut]! < c; cut++) acc += hist[cut]!;
  const out: number[] = [];
  for (let i = 0; i < N; i++) if (dist[i]! <= cut) out.push(i);
  return out;
}
for (const c of [100, 300, 1000, 3000]) run(`JS SimHash Hamming scan + re-rank ${c}`, (q) => rerank(hammingCands(q, c), q, 10));

// int8 (scale 127) scanned in JS with Int32 accumulation, then re-rank.
const i8 = new Int8Array(N * INDEX_DIMS);
for (let i = 0; i < flat.length; i++) i8[i] = Math.max(-127, Math.min(127, Math.round(flat[i]! * 127 * 4)));
function int8Cands(q: Float32Array, c: number): number[] {
  const qi = new Int32Array(INDEX_DIMS);
  for (let j = 0; j < INDEX_DIMS; j++) qi[j] = Math.round(q[j]! * 127 * 4);
  const s = new Float32Array(N);
  for (let i = 0, o = 0; i < N; i++, o += INDEX_DIMS) {
    let d = 0;
    for (let j = 0; j < INDEX_DIMS; j++) d += i8[o + j]! * qi[j]!;
    s[i] = d;
  }
  return topK(s, c);
}
run('JS int8 scan + re-rank 40', (q) => rerank(int8Cands(q, 40), q, 10));

// sqlite-vec vec0 tables (brute force KNN in C).
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vec-options-'));
const db = new BetterSqlite3(path.join(dir, 'v.sqlite'));
sqliteVec.load(db);
db.pragma('journal_mode = WAL');
const want = (n: string) => !only || only.some((o) => n.includes(o));
if (want('sqlite-vec float')) {
  db.exec(`create virtual table vf using vec0(embedding float[${INDEX_DIMS}] distance_metric=cosine)`);
  const ins = db.prepare('insert into vf (rowid, embedding) values (?, ?)');
  db.transaction(() => vecs.forEach((v, i) => ins.run(BigInt(i), Buffer.from(v.buffer))))();
  const knn = db.prepare('select rowid as id from vf where embedding match ? and k = ?');
  run('sqlite-vec vec0 float[384] cosine KNN', (q) => (knn.all(Buffer.from(q.buffer), 10) as Array<{ id: number }>).map((r) => r.id));
}
if (want('sqlite-vec int8')) {
  db.exec(`create virtual table vi using vec0(embedding int8[${INDEX_DIMS}])`);
  const ins = db.prepare('insert into vi (rowid, embedding) values (?, vec_int8(?))');
  db.transaction(() => vecs.forEach((_, i) => ins.run(BigInt(i), Buffer.from(i8.buffer, i * INDEX_DIMS, INDEX_DIMS))))();
  const knn = db.prepare('select rowid as id from vi where embedding match vec_int8(?) and k = ?');
  for (const c of [40, 100]) {
    run(`sqlite-vec vec0 int8[384] L2 KNN ${c} + re-rank`, (q) => {
      const qi = new Int8Array(INDEX_DIMS);
      for (let j = 0; j < INDEX_DIMS; j++) qi[j] = Math.max(-127, Math.min(127, Math.round(q[j]! * 127 * 4)));
      const cands = (knn.all(Buffer.from(qi.buffer), c) as Array<{ id: number }>).map((r) => r.id);
      return rerank(cands, q, 10);
    });
  }
}
if (want('sqlite-vec bit')) {
  db.exec(`create virtual table vb using vec0(embedding bit[${INDEX_DIMS}])`);
  const ins = db.prepare('insert into vb (rowid, embedding) values (?, vec_bit(?))');
  db.transaction(() => vecs.forEach((v, i) => ins.run(BigInt(i), simhash(v))))();
  const knn = db.prepare('select rowid as id from vb where embedding match vec_bit(?) and k = ?');
  for (const c of [20, 100, 300, 1000]) {
    run(`sqlite-vec vec0 bit[384] SimHash KNN ${c} + re-rank`, (q) => rerank((knn.all(simhash(q), c) as Array<{ id: number }>).map((r) => r.id), q, 10));
  }
}
db.close();
fs.rmSync(dir, { recursive: true, force: true });

// An HNSW graph (hnswlib-node), when installed: in memory, built here.
if (want('hnsw')) {
  try {
    // Not a dependency of the project: point HNSWLIB_NODE at an installed copy to include it.
    const { createRequire } = await import('node:module');
    const { HierarchicalNSW } = createRequire(import.meta.url)(process.env.HNSWLIB_NODE ?? 'hnswlib-node');
    for (const [M, efc] of [[16, 100]] as const) {
      const t = performance.now();
      const idx = new HierarchicalNSW('ip', INDEX_DIMS);
      idx.initIndex(N, M, efc, 100);
      vecs.forEach((v, i) => idx.addPoint(Array.from(v), i));
      const buildS = (performance.now() - t) / 1000;
      for (const ef of [32, 64, 128]) {
        idx.setEf(ef);
        run(`hnswlib-node M=${M} efC=${efc} ef=${ef}`, (q) => idx.searchKnn(Array.from(q), 10).neighbors, `build ${buildS.toFixed(1)} s`);
      }
    }
  } catch (err) {
    console.log(`hnswlib-node: not available (${(err as Error).message.split('\n')[0]})`);
  }
}
