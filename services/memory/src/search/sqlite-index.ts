import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { isNoFilter, type Hit, type IndexBackend, type IndexedDoc } from './backend.ts';
import { bufferToVector, dot, vectorToBuffer } from './embedding.ts';

/**
 * Collections with at least this many documents are ranked through the
 * binary-quantised sqlite-vec index (then re-ranked exactly); smaller ones by
 * an exact scan, which is faster than vec0 there and costs no 1024-slot chunk.
 */
export const VEC_MIN_DOCS = 1024;

/** Hamming candidates fetched per wanted vector hit before exact re-ranking. */
const OVERSAMPLE = 2;
const MIN_CANDIDATES = 40;
/** vec0 rejects k above 4096. */
const MAX_CANDIDATES = 4096;
/** Cap on full-text rows examined when a metadata filter is applied after the MATCH. */
const FILTERED_FTS_SCAN = 20_000;

/** The FTS token naming a collection (hyphens would split a UUID into five tokens). */
export function collectionToken(collectionId: string): string {
  return 'c' + collectionId.replace(/[^0-9a-zA-Z]/g, '').toLowerCase();
}

/** An FTS5 query for stems (letters/digits only, so quoting is enough to neutralise syntax). */
export function ftsQuery(collectionId: string, terms: string[]): string {
  return `coll : "${collectionToken(collectionId)}" AND body : (${terms.map((t) => `"${t.replace(/"/g, '')}"`).join(' OR ')})`;
}

type Stmt = BetterSqlite3.Statement;

/** FTS5 + sqlite-vec on the raw better-sqlite3 handle (prepared once; this is the /query hot path). */
export class SqliteIndex implements IndexBackend {
  readonly name = 'sqlite-fts5-vec0';
  #raw: BetterSqlite3.Database;
  #s: Record<string, Stmt> | undefined;

  constructor(raw: BetterSqlite3.Database) {
    this.#raw = raw;
  }

  get #stmts(): Record<string, Stmt> {
    if (this.#s) return this.#s;
    const p = (q: string) => this.#raw.prepare(q);
    this.#s = {
      findKey: p('select id, collection_id from search_docs where doc_id = ?'),
      insertDoc: p('insert into search_docs (doc_id, collection_id, embedding) values (?, ?, ?)'),
      updateDoc: p('update search_docs set collection_id = ?, embedding = ? where id = ?'),
      deleteDoc: p('delete from search_docs where id = ?'),
      insertFts: p('insert into search_fts (rowid, body, coll) values (?, ?, ?)'),
      deleteFts: p('delete from search_fts where rowid = ?'),
      insertVec: p('insert into search_vec (rowid, collection_id, embedding) values (?, ?, vec_quantize_binary(?))'),
      deleteVec: p('delete from search_vec where rowid = ?'),
      isLarge: p('select 1 from search_vec_collections where collection_id = ?'),
      countDocs: p('select count(*) as n from search_docs where collection_id = ?'),
      markLarge: p('insert or ignore into search_vec_collections (collection_id) values (?)'),
      collectionVectors: p('select id, embedding from search_docs where collection_id = ?'),
      filteredVectors: p(
        'select s.id, s.embedding from search_docs s join documents d on d.id = s.doc_id where s.collection_id = ? and json_contains(d.metadata, ?)',
      ),
      filteredKeys: p('select s.id from search_docs s join documents d on d.id = s.doc_id where s.collection_id = ? and json_contains(d.metadata, ?)'),
      fts: p('select rowid as id from search_fts where search_fts match ? order by bm25(search_fts, 1.0, 0.0) limit ?'),
      knn: p('select rowid as id from search_vec where embedding match vec_quantize_binary(?) and k = ? and collection_id = ?'),
      vectorsByKey: p('select id, embedding from search_docs where id in (select value from json_each(?))'),
      fetch: p(
        'select d.*, s.id as _key from search_docs s join documents d on d.id = s.doc_id where s.id in (select value from json_each(?)) and d.collection_id = ?',
      ),
    };
    return this.#s;
  }

  async index(_trx: Kysely<any>, doc: IndexedDoc, body: string, vector: Float32Array): Promise<void> {
    // Same connection as the caller's Kysely transaction, so these writes commit or roll back with it.
    const s = this.#stmts;
    const blob = vectorToBuffer(vector);
    const existing = s.findKey!.get(doc.id) as { id: number; collection_id: string } | undefined;
    let key: number;
    if (existing) {
      key = existing.id;
      s.updateDoc!.run(doc.collection_id, blob, key);
      s.deleteFts!.run(key);
      s.deleteVec!.run(BigInt(key));
    } else {
      key = Number(s.insertDoc!.run(doc.id, doc.collection_id, blob).lastInsertRowid);
    }
    s.insertFts!.run(key, body, collectionToken(doc.collection_id));
    if (s.isLarge!.get(doc.collection_id)) {
      s.insertVec!.run(BigInt(key), doc.collection_id, blob);
    } else if ((s.countDocs!.get(doc.collection_id) as { n: number }).n >= VEC_MIN_DOCS) {
      // The collection just became large: move all of it into vec0 at once.
      for (const r of s.collectionVectors!.all(doc.collection_id) as Array<{ id: number; embedding: Buffer }>) {
        s.insertVec!.run(BigInt(r.id), doc.collection_id, r.embedding);
      }
      s.markLarge!.run(doc.collection_id);
    }
  }

  async remove(_trx: Kysely<any>, ids: string[]): Promise<void> {
    const s = this.#stmts;
    for (const id of ids) {
      const existing = s.findKey!.get(id) as { id: number } | undefined;
      if (!existing) continue;
      s.deleteFts!.run(existing.id);
      s.deleteVec!.run(BigInt(existing.id));
      s.deleteDoc!.run(existing.id);
    }
  }

  async textRanking(collectionId: string, terms: string[], limit: number, filter: unknown): Promise<Hit[]> {
    if (terms.length === 0 || limit <= 0) return [];
    const s = this.#stmts;
    const match = ftsQuery(collectionId, terms);
    if (isNoFilter(filter)) {
      return (s.fts!.all(match, limit) as Array<{ id: number }>).map((r) => ({ key: r.id, order: r.id }));
    }
    const allowed = new Set((s.filteredKeys!.all(collectionId, JSON.stringify(filter)) as Array<{ id: number }>).map((r) => r.id));
    const hits: Hit[] = [];
    if (allowed.size === 0) return hits;
    for (const r of s.fts!.iterate(match, FILTERED_FTS_SCAN) as Iterable<{ id: number }>) {
      if (!allowed.has(r.id)) continue;
      hits.push({ key: r.id, order: r.id });
      if (hits.length >= limit) break;
    }
    return hits;
  }

  async vectorRanking(collectionId: string, vector: Float32Array, limit: number, filter: unknown): Promise<Hit[]> {
    if (limit <= 0) return [];
    const s = this.#stmts;
    let rows: Array<{ id: number; embedding: Buffer }>;
    if (!isNoFilter(filter)) {
      // Filter first, then rank exactly: the filtered set may be anywhere in the KNN order.
      rows = s.filteredVectors!.all(collectionId, JSON.stringify(filter)) as typeof rows;
    } else if (s.isLarge!.get(collectionId)) {
      const k = Math.min(MAX_CANDIDATES, Math.max(MIN_CANDIDATES, limit * OVERSAMPLE));
      const keys = (s.knn!.all(vectorToBuffer(vector), k, collectionId) as Array<{ id: number }>).map((r) => r.id);
      rows = s.vectorsByKey!.all(JSON.stringify(keys)) as typeof rows;
    } else {
      rows = s.collectionVectors!.all(collectionId) as typeof rows;
    }
    return topByCosine(rows, vector, limit);
  }

  async fetch(collectionId: string, keys: Array<string | number>): Promise<any[]> {
    if (keys.length === 0) return [];
    const rows = this.#stmts.fetch!.all(JSON.stringify(keys), collectionId) as any[];
    const byKey = new Map(rows.map((r) => [r._key as number, r]));
    const out: any[] = [];
    for (const k of keys) {
      const r = byKey.get(k as number);
      if (!r) continue;
      delete r._key;
      out.push(r);
    }
    return out;
  }
}

/** Exact cosine (dot product of unit vectors), best first, insertion order on ties. */
function topByCosine(rows: Array<{ id: number; embedding: Uint8Array }>, q: Float32Array, limit: number): Hit[] {
  const scored = rows.map((r) => ({ key: r.id, order: r.id, score: dot(bufferToVector(r.embedding), q) }));
  scored.sort((a, b) => b.score - a.score || a.order - b.order);
  return scored.slice(0, limit).map(({ key, order }) => ({ key, order }));
}
