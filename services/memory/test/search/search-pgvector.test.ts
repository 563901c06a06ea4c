/**
 * The PostgreSQL index's pgvector SQL (vector(384), HNSW, `<=>`) on PGlite
 * with its pgvector extension, since the machine's PostgreSQL has none; and
 * the same queries on PGlite without pgvector (exact float4[] cosine) agree.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { migrate, type Storage } from '@svc/storage';
import type { JobQueue } from '@svc/queue';
import { coreMigrations } from '../../src/db/migrations/001_core.ts';
import { createDocument, deleteDocument } from '../../src/domain/documents.ts';
import { createSearch, searchMigrations, type Search } from '../../src/search/index.ts';
import { PgIndex } from '../../src/search/pg-index.ts';
import { openPgliteStorage } from './pglite-storage.ts';

const APP = '10000000-0000-4000-8000-000000000001';
const USER = '10000000-0000-4000-8000-000000000002';
const BIG = '10000000-0000-4000-8000-000000000003';
const SMALL = '10000000-0000-4000-8000-000000000004';

const noQueue = {} as JobQueue;

async function setup(withVector: boolean) {
  const storage = await openPgliteStorage(withVector);
  await migrate(storage.db, storage.dialect, [...coreMigrations, ...searchMigrations]);
  const now = new Date();
  await storage.db.insertInto('apps').values({ id: APP, name: 'a', metadata: '{}', created_at: now, seq: 1 }).execute();
  await storage.db.insertInto('users').values({ id: USER, app_id: APP, name: 'u', metadata: '{}', created_at: now, seq: 1 }).execute();
  for (const [id, name] of [
    [BIG, 'big'],
    [SMALL, 'small'],
  ]) {
    await storage.db.insertInto('collections').values({ id, user_id: USER, name, metadata: '{}', created_at: now, seq: 1 }).execute();
  }
  const search = createSearch({ storage, config: {} as any });
  const ctx = { storage, search, queue: noQueue };
  const add = (collection: string, content: string, metadata: Record<string, unknown> = {}) => createDocument(ctx, APP, USER, collection, { content, metadata });
  const words = ['amber', 'basalt', 'cedar', 'dune', 'ember', 'fjord', 'glacier', 'harbor', 'island', 'jungle'];
  for (let i = 0; i < 300; i++) await add(BIG, `${words[i % 10]} ${words[(i * 3) % 10]} ${words[(i * 7) % 10]} entry ${i}`, { n: i, even: i % 2 === 0 });
  const needle = await add(BIG, 'The lighthouse keeper painted the spiral staircase', { even: true });
  for (const t of ['Dogs love running in the park', 'Quantum computers use qubits', 'Vegetable soup with carrots']) await add(SMALL, t);
  return { storage, search, ctx, needle };
}

type Env = Awaited<ReturnType<typeof setup>>;

async function contents(search: Search, collection: string, text: string, k: number, filter?: unknown) {
  return (await search.query(collection, text, k, filter)).map((r) => r.content as string);
}

describe('search on PGlite with pgvector', { timeout: 120_000 }, () => {
  let env: Env;
  let exact: Env;
  before(async () => {
    env = await setup(true);
    exact = await setup(false);
  });
  after(async () => {
    await env?.storage.close();
    await exact?.storage.close();
  });

  it('the migration chose vector(384) with an HNSW cosine index when pgvector exists', async () => {
    assert.equal(await (env.search.backend as PgIndex).vectorMode(), 'pgvector');
    assert.equal(await (exact.search.backend as PgIndex).vectorMode(), 'array');
    const idx = await sql<{ indexdef: string }>`select indexdef from pg_indexes where indexname = 'search_docs_embedding'`.execute(env.storage.db);
    assert.match(idx.rows[0]!.indexdef, /USING hnsw \(embedding vector_cosine_ops\)/);
    const type = await sql<{ t: string }>`select format_type(atttypid, atttypmod) as t from pg_attribute where attrelid = 'search_docs'::regclass and attname = 'embedding'`.execute(
      env.storage.db,
    );
    assert.equal(type.rows[0]!.t, 'vector(384)');
  });

  it('the KNN query can use the HNSW index', async () => {
    const v = '[' + Array.from({ length: 384 }, (_, i) => (i === 0 ? 1 : 0)).join(',') + ']';
    const plan = await env.storage.db.transaction().execute(async (trx) => {
      // Force the choice a large collection makes: on 300 rows the planner rightly prefers the collection index.
      for (const opt of ['enable_seqscan', 'enable_bitmapscan', 'enable_sort']) await sql.raw(`set local ${opt} = off`).execute(trx);
      return sql<{ 'QUERY PLAN': string }>`explain select doc_id from search_docs where collection_id = ${BIG} order by embedding <=> ${v}::vector limit 10`.execute(trx);
    });
    assert.match(plan.rows.map((r) => r['QUERY PLAN']).join('\n'), /search_docs_embedding/);
  });

  it('finds documents by meaning and words, with real pgvector results', async () => {
    for (const e of [env, exact]) {
      assert.deepEqual(await contents(e.search, BIG, 'lighthouse keeper staircase', 1), ['The lighthouse keeper painted the spiral staircase']);
      assert.deepEqual(await contents(e.search, BIG, 'painting spiral stairs', 1), ['The lighthouse keeper painted the spiral staircase']);
      assert.deepEqual(await contents(e.search, SMALL, 'qubit', 1), ['Quantum computers use qubits']);
      const r = await contents(e.search, BIG, 'entry 123', 5);
      assert.ok(r.includes('dune jungle basalt entry 123'), r.join(' | '));
    }
  });

  it('pgvector and exact cosine agree on the vector ranking', async () => {
    const [v] = await env.search.embedder.embed(['glacier harbor island']);
    const a = await env.search.backend.vectorRanking(BIG, v!, 10, undefined);
    const b = await exact.search.backend.vectorRanking(BIG, v!, 10, undefined);
    const rowsA = await env.search.backend.fetch(BIG, a.map((h) => h.key));
    const rowsB = await exact.search.backend.fetch(BIG, b.map((h) => h.key));
    // HNSW is approximate; on 300 vectors with ef_search ≥ 40 it finds the true top 5.
    assert.deepEqual(
      rowsA.slice(0, 5).map((r) => r.content),
      rowsB.slice(0, 5).map((r) => r.content),
    );
  });

  it('a small collection in a larger table still gets top_k results (exact fallback)', async () => {
    assert.equal((await env.search.query(SMALL, 'anything at all', 5)).length, 3);
    assert.equal((await env.search.query(SMALL, 'soup', 2)).length, 2);
  });

  it('ranks a filtered query exactly (selective) or through HNSW with an iterative scan (broad), as the exact mode does', async () => {
    const [v] = await env.search.embedder.embed(['amber cedar fjord']);
    const pgv = env.search.backend as PgIndex;
    const top = async (e: Env, filter: unknown) => {
      const hits = await e.search.backend.vectorRanking(BIG, v!, 5, filter);
      return (await e.search.backend.fetch(BIG, hits.map((h) => h.key))).map((r) => r.content as string);
    };
    for (const filter of [{ even: true }, { n: 42 }, { even: false, n: 7 }]) {
      const want = await top(exact, filter);
      pgv.exactFilterMax = 4000; // 151 matches: the exact plan
      assert.deepEqual(await top(env, filter), want, JSON.stringify(filter));
      pgv.exactFilterMax = 0; // the HNSW plan
      assert.deepEqual(await top(env, filter), want, JSON.stringify(filter));
    }
    pgv.exactFilterMax = 4000;
    assert.deepEqual(await top(env, { n: 'none' }), []);
    assert.deepEqual(await top(env, ['x']), []);
  });

  it('applies the metadata filter before ranking and follows deletes', async () => {
    const r = await env.search.query(BIG, 'lighthouse', 50, { even: false });
    assert.equal(r.length, 50);
    assert.ok(r.every((d) => (typeof d.metadata === 'string' ? JSON.parse(d.metadata) : d.metadata).even === false));
    assert.deepEqual(await contents(env.search, BIG, 'lighthouse', 1, { even: true }), ['The lighthouse keeper painted the spiral staircase']);
    assert.deepEqual(await env.search.query(BIG, 'x', 5, { n: -1 }), []);
    await deleteDocument(env.ctx, APP, USER, BIG, env.needle.id);
    assert.ok(!(await contents(env.search, BIG, 'lighthouse keeper staircase', 5)).includes('The lighthouse keeper painted the spiral staircase'));
  });
});
