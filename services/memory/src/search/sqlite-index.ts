import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { isNoFilter, type Hit, type IndexBackend, type IndexedDoc } from './backend.ts';
import { bufferToVector, dot, vectorToBuffer } from './embedding.ts';
import { simhash } from './simhash.ts';

/**
 * Collections with at least this many documents are ranked through the
 * binary-quantised sqlite-vec index (then re-ranked exactly); smaller ones by
 * an exact scan, which is faster than vec0 there and costs no 1024-slot chunk.
 */
export const VEC_MIN_DOCS = 1024;

/**
 * SimHash (Hamming) candidates fetched beyond the wanted vector hits before
 * exact re-ranking. vec0's KNN costs ~0.1 ms per unit of k on 100k vectors,
 * so this is a latency/recall trade-off (bench: recall@10 vs exact).
 */
const EXTRA_CANDIDATES = 10;
const MIN_CANDIDATES = 20;
/** vec0 rejects k above 4096. */
const MAX_CANDIDATES = 4096;
/** Cap on full-text rows examined when a metadata filter is applied after the MATCH. */
const FILTERED_FTS_SCAN = 20_000;
/**
 * Most postings one full-text query may touch. bm25 is computed for every
 * matching row before ORDER BY … LIMIT, so a query's cost is the document
 * frequency of its terms; rarer terms are kept first (they carry the IDF).
 * A term in more documents than this is left to the vector ranking, whose
 * word features still see it (measured: ~0.4 µs per posting).
 */
const POSTINGS_BUDGET = 5_000;

/**
 * Terms are indexed per collection: each stem is prefixed with 16 hex digits
 * of the collection id, so a MATCH touches only the collection's postings and
 * document frequencies are per collection. (A separate collection column
 * ANDed into every MATCH cost ~5x more on a 100k-document collection.)
 */
export function collectionPrefix(collectionId: string): string {
  return 'k' + collectionId.replace(/[^0-9a-zA-Z]/g, '').toLowerCase().slice(0, 16);
}

export function scopedBody(collectionId: string, body: string): string {
  const p = collectionPrefix(collectionId);
  return body
    .split(' ')
    .filter(Boolean)
    .map((t) => p + t)
    .join(' ');
}

/** An FTS5 query for stems (letters/digits only, so quoting is enough to neutralise syntax). */
export function ftsQuery(collectionId: string, terms: string[]): string {
  const p = collectionPrefix(collectionId);
  return terms.map((t) => `"${p}${t.replace(/"/g, '')}"`).join(' OR ');
}

type Stmt = BetterSqlite3.Statement;

/** FTS5 + sqlite-vec on the raw better-sqlite3 handle (prepared once; this is the /query hot path). */
export class SqliteIndex implements IndexBackend {
  readonly name = 'sqlite-fts5-vec0';
  #raw: BetterSqlite3.Database;
  #db: Kysely<any>;
  #s: Record<string, Stmt> | undefined;

  constructor(raw: BetterSqlite3.Database, db: Kysely<any>) {
    this.#raw = raw;
    this.#db = db;
  }

  /**
   * Runs a read on the raw handle. Kysely shares that handle, so while one of
   * its transactions is open a raw read would see its uncommitted rows; wait
   * for the connection (held until the transaction ends) instead. Reads are
   * never called from inside a transaction; writes (index/remove) are, and
   * deliberately join it.
   */
  #read<T>(fn: () => T): Promise<T> {
    if (!this.#raw.inTransaction) return Promise.resolve(fn());
    return this.#db.connection().execute(async () => fn());
  }

  get #stmts(): Record<string, Stmt> {
    if (this.#s) return this.#s;
    const p = (q: string) => this.#raw.prepare(q);
    this.#s = {
      findKey: p('select id, collection_id from search_docs where doc_id = ?'),
      insertDoc: p('insert into search_docs (doc_id, collection_id, embedding) values (?, ?, ?)'),
      updateDoc: p('update search_docs set collection_id = ?, embedding = ? where id = ?'),
      deleteDoc: p('delete from search_docs where id = ?'),
      insertFts: p('insert into search_fts (rowid, body) values (?, ?)'),
      deleteFts: p('delete from search_fts where rowid = ?'),
      insertVec: p('insert into search_vec (rowid, collection_id, embedding) values (?, ?, vec_bit(?))'),
      deleteVec: p('delete from search_vec where rowid = ?'),
      isLarge: p('select 1 from search_vec_collections where collection_id = ?'),
      countDocs: p('select count(*) as n from search_docs where collection_id = ?'),
      markLarge: p('insert or ignore into search_vec_collections (collection_id) values (?)'),
      collectionVectors: p('select id, embedding from search_docs where collection_id = ?'),
      fts: p('select rowid as id from search_fts where search_fts match ? order by bm25(search_fts) limit ?'),
      knn: p('select rowid as id from search_vec where embedding match vec_bit(?) and k = ? and collection_id = ?'),
      vectorsByKey: p('select id, embedding from search_docs where id in (select value from json_each(?))'),
      // CROSS JOIN pins the loop order: look the few keys up, never scan the collection's documents.
      fetch: p(
        'select d.*, s.id as _key from search_docs s cross join documents d on d.id = s.doc_id where s.id in (select value from json_each(?)) and d.collection_id = ?',
      ),
      docFreq: p('select doc from search_fts_vocab where term = ?'),
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
    s.insertFts!.run(key, scopedBody(doc.collection_id, body));
    if (s.isLarge!.get(doc.collection_id)) {
      s.insertVec!.run(BigInt(key), doc.collection_id, simhash(vector));
    } else if ((s.countDocs!.get(doc.collection_id) as { n: number }).n >= VEC_MIN_DOCS) {
      // The collection just became large: move all of it into vec0 at once.
      for (const r of s.collectionVectors!.all(doc.collection_id) as Array<{ id: number; embedding: Buffer }>) {
        s.insertVec!.run(BigInt(r.id), doc.collection_id, simhash(bufferToVector(r.embedding)));
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

  /**
   * The terms worth matching, rarest in the collection first: terms in no
   * document are dropped, and terms beyond POSTINGS_BUDGET (common terms
   * carry little IDF and would only cost time).
   */
  selectTerms(collectionId: string, terms: string[]): string[] {
    const s = this.#stmts;
    const p = collectionPrefix(collectionId);
    const withDf = terms
      .map((t) => ({ t, df: Number((s.docFreq!.get(p + t) as { doc: number } | undefined)?.doc ?? 0) }))
      .filter((x) => x.df > 0)
      .sort((a, b) => a.df - b.df);
    const kept: string[] = [];
    let postings = 0;
    for (const x of withDf) {
      if (postings + x.df > POSTINGS_BUDGET) break;
      kept.push(x.t);
      postings += x.df;
    }
    return kept;
  }

  async textRanking(collectionId: string, allTerms: string[], limit: number, filter: unknown): Promise<Hit[]> {
    if (allTerms.length === 0 || limit <= 0) return [];
    return this.#read(() => this.#textRanking(collectionId, allTerms, limit, filter));
  }

  #textRanking(collectionId: string, allTerms: string[], limit: number, filter: unknown): Hit[] {
    const terms = this.selectTerms(collectionId, allTerms);
    if (terms.length === 0) return [];
    const s = this.#stmts;
    const match = ftsQuery(collectionId, terms);
    if (isNoFilter(filter)) {
      return (s.fts!.all(match, limit) as Array<{ id: number }>).map((r) => ({ key: r.id, order: r.id }));
    }
    const allowed = new Set(this.#filtered(collectionId, filter, false).map((r) => r.id));
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
    return this.#read(() => this.#vectorRanking(collectionId, vector, limit, filter));
  }

  #vectorRanking(collectionId: string, vector: Float32Array, limit: number, filter: unknown): Hit[] {
    const s = this.#stmts;
    let rows: Array<{ id: number; embedding: Buffer }>;
    if (!isNoFilter(filter)) {
      // Filter first, then rank exactly: the filtered set may be anywhere in the KNN order.
      rows = this.#filtered(collectionId, filter, true) as typeof rows;
    } else if (s.isLarge!.get(collectionId)) {
      const k = Math.min(MAX_CANDIDATES, Math.max(MIN_CANDIDATES, limit + EXTRA_CANDIDATES));
      const keys = (s.knn!.all(simhash(vector), k, collectionId) as Array<{ id: number }>).map((r) => r.id);
      rows = s.vectorsByKey!.all(JSON.stringify(keys)) as typeof rows;
    } else {
      rows = s.collectionVectors!.all(collectionId) as typeof rows;
    }
    return topByCosine(rows, vector, limit);
  }

  /**
   * Keys (and vectors) of the collection's documents whose metadata contains
   * `filter`. json_contains (a JS function) decides; native JSON conditions
   * for the filter's top-level scalars run first, so it only sees candidates.
   */
  #filtered(collectionId: string, filter: unknown, withVectors: boolean): Array<{ id: number; embedding?: Buffer }> {
    const pre = nativePrefilter(filter);
    const stmt = this.#raw.prepare(
      `select s.id${withVectors ? ', s.embedding' : ''} from documents d cross join search_docs s on s.doc_id = d.id
       where d.collection_id = ?${pre.sql} and json_contains(d.metadata, ?)`,
    );
    return stmt.all(collectionId, ...pre.params, JSON.stringify(filter)) as Array<{ id: number; embedding?: Buffer }>;
  }

  async fetch(collectionId: string, keys: Array<string | number>): Promise<any[]> {
    if (keys.length === 0) return [];
    const rows = await this.#read(() => this.#stmts.fetch!.all(JSON.stringify(keys), collectionId) as any[]);
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

/**
 * Necessary conditions of PostgreSQL containment for the top-level scalar
 * entries of an object filter, in SQLite's native JSON functions (types
 * checked too: SQLite's json_extract reads `true` as 1).
 */
export function nativePrefilter(filter: unknown): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  if (!filter || typeof filter !== 'object' || Array.isArray(filter)) return { sql: '', params };
  for (const [key, v] of Object.entries(filter as Record<string, unknown>).slice(0, 8)) {
    if (!/^[\p{L}\p{N}_ -]{1,64}$/u.test(key)) continue;
    const path = `$."${key}"`;
    if (typeof v === 'string') {
      parts.push(`json_type(d.metadata, ?) = 'text' and json_extract(d.metadata, ?) = ?`);
      params.push(path, path, v);
    } else if (typeof v === 'number' && Math.abs(v) < 2 ** 53) {
      parts.push(`json_type(d.metadata, ?) in ('integer', 'real') and json_extract(d.metadata, ?) = ?`);
      params.push(path, path, v);
    } else if (typeof v === 'boolean') {
      parts.push(`json_type(d.metadata, ?) = ?`);
      params.push(path, v ? 'true' : 'false');
    } else if (v === null) {
      parts.push(`json_type(d.metadata, ?) = 'null'`);
      params.push(path);
    }
  }
  return { sql: parts.map((p) => ` and ${p}`).join(''), params };
}

/** Exact cosine (dot product of unit vectors), best first, insertion order on ties. */
function topByCosine(rows: Array<{ id: number; embedding: Uint8Array }>, q: Float32Array, limit: number): Hit[] {
  const scored = rows.map((r) => ({ key: r.id, order: r.id, score: dot(bufferToVector(r.embedding), q) }));
  scored.sort((a, b) => b.score - a.score || a.order - b.order);
  return scored.slice(0, limit).map(({ key, order }) => ({ key, order }));
}
