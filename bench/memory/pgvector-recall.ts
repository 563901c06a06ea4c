/**
 * Recall@10 of the pgvector plan (HNSW, `<=>`, ef_search from hnswEfSearch) against exact cosine,
 * on PGlite (PostgreSQL in WebAssembly) with its pgvector extension, since this machine's
 * PostgreSQL has none. Documents are loaded with the service's own index code, the HNSW index is
 * built after the load (as `create index` on a populated table), then the same queries as
 * bench/memory/query.ts are ranked by the backend and by an exact scan here.
 *
 *   npx tsx bench/memory/pgvector-recall.ts [--docs 100000] [--queries 100]
 *
 * PGlite runs single-threaded in WebAssembly: loading and building take minutes at 100,000
 * documents; query latencies here say nothing about a native server, only recall carries over.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { migrate } from '@svc/storage';
import { coreMigrations } from '../../services/memory/src/db/migrations/001_core.ts';
import { createSearch, searchMigrations } from '../../services/memory/src/search/index.ts';
import { dot, localEmbedding } from '../../services/memory/src/search/embedding.ts';
import { hnswEfSearch } from '../../services/memory/src/search/pg-index.ts';
import { openPgliteStorage } from '../../services/memory/test/search/pglite-storage.ts';
import { makeCorpus, pct } from './corpus.ts';

const { values } = parseArgs({ options: { docs: { type: 'string', default: '100000' }, queries: { type: 'string', default: '100' } } });
const DOCS = Number(values.docs);
const QUERIES = Number(values.queries);
const corpus = makeCorpus();

const storage = await openPgliteStorage(true);
try {
  await migrate(storage.db, storage.dialect, [...coreMigrations, ...searchMigrations]);
  const mode = (await sql<{ value: string }>`select value from search_settings where key = 'vector_mode'`.execute(storage.db)).rows[0]?.value;
  if (mode !== 'pgvector') throw new Error(`vector mode ${mode}: pgvector did not load`);
  const APP = crypto.randomUUID();
  const USER = crypto.randomUUID();
  const C = crypto.randomUUID();
  const now = new Date();
  await storage.db.insertInto('apps').values({ id: APP, name: 'a', metadata: '{}', created_at: now, seq: 1 }).execute();
  await storage.db.insertInto('users').values({ id: USER, app_id: APP, name: 'u', metadata: '{}', created_at: now, seq: 1 }).execute();
  await storage.db.insertInto('collections').values({ id: C, user_id: USER, name: 'big', metadata: '{}', created_at: now, seq: 1 }).execute();
  const search = createSearch({ storage, config: {} as any });

  // Load without the HNSW index (one insert at a time into the graph is far slower than one build).
  await sql`drop index search_docs_embedding`.execute(storage.db);
  const t0 = performance.now();
  const ids: string[] = [];
  const vecs: Float32Array[] = [];
  const BATCH = 1000;
  for (let i = 0; i < DOCS; i += BATCH) {
    await storage.db.transaction().execute(async (trx) => {
      const rows = [];
      for (let j = i; j < Math.min(DOCS, i + BATCH); j++) {
        const id = crypto.randomUUID();
        rows.push({ id, collection_id: C, content: corpus.document(), metadata: JSON.stringify({ n: j }), created_at: now, seq: j + 1 });
        ids.push(id);
      }
      await trx.insertInto('documents').values(rows).execute();
      for (const r of rows) {
        const v = localEmbedding(r.content);
        vecs.push(v);
        await search.backend.index(trx, { id: r.id, collection_id: C, content: r.content }, r.content, v);
      }
    });
  }
  const loadS = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  await sql`create index search_docs_embedding on search_docs using hnsw (embedding vector_cosine_ops)`.execute(storage.db);
  await sql`analyze search_docs`.execute(storage.db);
  const buildS = (performance.now() - t1) / 1000;

  const docIndex = new Map(ids.map((id, i) => [id, i]));
  const queries = Array.from({ length: 2000 }, () => corpus.query()).slice(0, QUERIES);
  let hit = 0;
  const ms: number[] = [];
  for (const q of queries) {
    const qv = localEmbedding(q);
    const exact = vecs
      .map((v, i) => ({ i, s: dot(v, qv) }))
      .sort((a, b) => b.s - a.s || a.i - b.i)
      .slice(0, 10)
      .map((x) => x.i);
    const s = performance.now();
    const hits = await search.backend.vectorRanking(C, qv, 10, undefined);
    ms.push(performance.now() - s);
    const got = new Set(hits.map((h) => docIndex.get(String(h.key))));
    hit += exact.filter((i) => got.has(i)).length;
  }
  console.log(`pgvector recall bench (PGlite ${os.arch()}), ${DOCS} documents, ${QUERIES} queries, ef_search ${hnswEfSearch(10)} (m 16, ef_construction 64), load ${os.loadavg()[0]!.toFixed(1)}`);
  console.log(`load ${loadS.toFixed(1)} s, HNSW build ${buildS.toFixed(1)} s`);
  console.log(`recall@10 ${(hit / (QUERIES * 10)).toFixed(3)}; vectorRanking p50 ${pct(ms, 50).toFixed(1)} ms, p99 ${pct(ms, 99).toFixed(1)} ms (WebAssembly, single thread)`);
} finally {
  await storage.close();
}
