import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { isNoFilter, type Hit, type IndexBackend, type IndexedDoc } from './backend.ts';
import { bufferToVector, dot, INDEX_DIMS, vectorToBuffer } from './embedding.ts';
import { simhash } from './simhash.ts';
import { DEFAULT_INDEX_MEMORY_MB, IndexCache } from './index-cache.ts';
import { CodeIndex, metadataPairs, pairTerm } from './code-index.ts';

/**
 * Collections with at least this many documents are ranked through the
 * in-memory SimHash index (then re-ranked exactly); smaller ones by an exact
 * scan of their stored vectors, which is fast at that size.
 */
export const VEC_MIN_DOCS = 1024;

/**
 * SimHash (Hamming) candidates re-ranked exactly per query. Measured on the
 * 100,000-document benchmark corpus (bench/memory/vector-options.ts):
 * recall@10 82.7% at 100 candidates, 93.5% at 300, 97.7% at 1,000.
 */
export function codeCandidates(limit: number): number {
  return Math.max(1000, limit * 20);
}
/** Of those, the best by their in-memory int8 vectors that are re-ranked with the stored floats. */
export function rerankCount(limit: number): number {
  return Math.max(40, limit * 4);
}
/** A filter whose rarest indexed entry matches at most this many documents is ranked by an exact scan of those. */
export const EXACT_FILTER_MAX = 4000;
/** Log entries kept for other processes' in-memory indexes to catch up from. */
const LOG_KEEP = 100_000;
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
  /** In-memory SimHash indexes of the large collections this process has queried. */
  #codes: IndexCache<CodeIndex>;
  /** Last search_log entry applied to #codes. */
  #logSeq = 0;

  constructor(raw: BetterSqlite3.Database, db: Kysely<any>, opts: { indexMemoryBytes?: number } = {}) {
    this.#raw = raw;
    this.#db = db;
    this.#codes = new IndexCache(opts.indexMemoryBytes ?? DEFAULT_INDEX_MEMORY_MB * 1024 * 1024);
  }

  /** The in-memory indexes held (bounded by memory, least recently used out). */
  get indexCache(): IndexCache<CodeIndex> {
    return this.#codes;
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
      setCode: p('update search_docs set code = ? where id = ?'),
      log: p('insert into search_log (collection_id, key) values (?, ?)'),
      pruneLog: p('delete from search_log where seq <= (select max(seq) from search_log) - ?'),
      logSince: p('select seq, collection_id, key from search_log where seq > ? order by seq limit ?'),
      // Separate subqueries: SQLite answers a lone min() or max() from the index, but scans for both at once.
      logBounds: p('select (select min(seq) from search_log) as lo, (select max(seq) from search_log) as hi'),
      cacheRow: p('select s.collection_id, s.code, s.embedding, d.metadata from search_docs s cross join documents d on d.id = s.doc_id where s.id = ?'),
      cacheRows: p('select s.id, s.code, s.embedding, d.metadata from search_docs s cross join documents d on d.id = s.doc_id where s.collection_id = ?'),
      vectorsMatching: p(
        'select s.id, s.embedding from json_each(?) j cross join search_docs s on s.id = j.value cross join documents d on d.id = s.doc_id where json_contains(d.metadata, ?)',
      ),
      keysMatching: p(
        'select s.id from json_each(?) j cross join search_docs s on s.id = j.value cross join documents d on d.id = s.doc_id where json_contains(d.metadata, ?)',
      ),
      isLarge: p('select 1 from search_vec_collections where collection_id = ?'),
      countDocs: p('select count(*) as n from search_docs where collection_id = ?'),
      markLarge: p('insert or ignore into search_vec_collections (collection_id) values (?)'),
      collectionVectors: p('select id, embedding from search_docs where collection_id = ?'),
      fts: p('select rowid as id from search_fts where search_fts match ? order by bm25(search_fts) limit ?'),
      ftsIds: p('select rowid from search_fts where search_fts match ? order by bm25(search_fts) limit ?').pluck(),
      // CROSS JOIN: one primary-key lookup per key (an IN list of ~1,000 made the planner scan the table).
      vectorsByKey: p('select s.id, s.embedding from json_each(?) j cross join search_docs s on s.id = j.value'),
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
    const code = simhash(vector);
    const existing = s.findKey!.get(doc.id) as { id: number; collection_id: string } | undefined;
    let key: number;
    if (existing) {
      key = existing.id;
      s.updateDoc!.run(doc.collection_id, blob, key);
      s.setCode!.run(code, key);
      s.deleteFts!.run(key);
      if (existing.collection_id !== doc.collection_id) this.#logChange(existing.collection_id, key);
    } else {
      key = Number(s.insertDoc!.run(doc.id, doc.collection_id, blob).lastInsertRowid);
      s.setCode!.run(code, key);
    }
    s.insertFts!.run(key, scopedBody(doc.collection_id, body));
    if (s.isLarge!.get(doc.collection_id)) {
      this.#logChange(doc.collection_id, key);
    } else if ((s.countDocs!.get(doc.collection_id) as { n: number }).n >= VEC_MIN_DOCS) {
      s.markLarge!.run(doc.collection_id);
    }
  }

  /** Tells every process's in-memory index (through the log, in the writer's transaction) that a document changed. */
  #logChange(collectionId: string, key: number): void {
    const s = this.#stmts;
    const seq = Number(s.log!.run(collectionId, key).lastInsertRowid);
    if (seq % 4096 === 0) s.pruneLog!.run(LOG_KEEP);
  }

  async remove(_trx: Kysely<any>, ids: string[]): Promise<void> {
    const s = this.#stmts;
    for (const id of ids) {
      const existing = s.findKey!.get(id) as { id: number; collection_id: string } | undefined;
      if (!existing) continue;
      s.deleteFts!.run(existing.id);
      s.deleteDoc!.run(existing.id);
      if (s.isLarge!.get(existing.collection_id)) this.#logChange(existing.collection_id, existing.id);
    }
  }

  /**
   * The collection's in-memory SimHash index, brought up to date with every
   * committed write (of any process) through search_log; built from the
   * stored codes on first use.
   */
  #codeIndex(collectionId: string): CodeIndex {
    const s = this.#stmts;
    const bounds = s.logBounds!.get() as { lo: number | null; hi: number | null };
    const hi = Number(bounds.hi ?? 0);
    if (this.#codes.size > 0 && hi > this.#logSeq) {
      const behind = hi - this.#logSeq;
      // Too far behind (or the entries needed were pruned): rebuilding is cheaper than replaying.
      if (behind > 20_000 || Number(bounds.lo ?? 0) > this.#logSeq + 1) this.#codes.clear();
      else {
        for (const e of s.logSince!.all(this.#logSeq, behind) as Array<{ seq: number; collection_id: string; key: number }>) {
          const idx = this.#codes.peek(e.collection_id);
          if (!idx) continue;
          const r = s.cacheRow!.get(e.key) as { collection_id: string; code: Buffer; embedding: Buffer; metadata: string } | undefined;
          if (!r || r.collection_id !== e.collection_id) idx.remove(e.key);
          else idx.upsert(e.key, r.code, bufferToVector(r.embedding), metadataPairs(JSON.parse(r.metadata)));
        }
      }
    }
    this.#logSeq = Math.max(this.#logSeq, hi);
    let idx = this.#codes.get(collectionId);
    if (!idx) {
      idx = new CodeIndex();
      for (const r of s.cacheRows!.iterate(collectionId) as Iterable<{ id: number; code: Buffer; embedding: Buffer; metadata: string }>) {
        idx.upsert(r.id, r.code, bufferToVector(r.embedding), metadataPairs(JSON.parse(r.metadata)));
      }
      this.#codes.set(collectionId, idx);
    } else this.#codes.trim(collectionId);
    return idx;
  }

  /**
   * The terms worth matching, rarest in the collection first: terms in no
   * document are dropped, and terms beyond POSTINGS_BUDGET (common terms
   * carry little IDF and would only cost time).
   */
  selectTerms(collectionId: string, terms: string[], idx?: CodeIndex): string[] {
    const s = this.#stmts;
    const p = collectionPrefix(collectionId);
    const read = (t: string) => Number((s.docFreq!.get(p + t) as { doc: number } | undefined)?.doc ?? 0);
    // A large collection's index remembers the frequencies until the collection changes.
    const df = idx ? (t: string) => idx.termFrequency(t, read) : read;
    const withDf = terms
      .map((t) => ({ t, df: df(t) }))
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
    const s = this.#stmts;
    const large = !!s.isLarge!.get(collectionId);
    const idx = large ? this.#codeIndex(collectionId) : undefined;
    const terms = this.selectTerms(collectionId, allTerms, idx);
    if (terms.length === 0) return [];
    const match = ftsQuery(collectionId, terms);
    if (isNoFilter(filter)) {
      return (s.fts!.all(match, limit) as Array<{ id: number }>).map((r) => ({ key: r.id, order: r.id }));
    }
    if (!isObject(filter)) return [];
    if (!idx) {
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
    // Large collection: the metadata index rejects most non-matching rows in
    // memory; the exact containment check runs on growing batches of the rest.
    const allow = this.#allowFn(idx, filter);
    if (allow === false) return [];
    const hits: Hit[] = [];
    let batch: number[] = [];
    let want = limit * 2;
    const flush = () => {
      const ok = new Set((s.keysMatching!.all(JSON.stringify(batch), JSON.stringify(filter)) as Array<{ id: number }>).map((r) => r.id));
      for (const k of batch) if (ok.has(k) && hits.length < limit) hits.push({ key: k, order: k });
      batch = [];
      want *= 4;
    };
    // Read the ranked ids first: better-sqlite3 runs no other statement while an iterator is open.
    for (const id of s.ftsIds!.all(match, FILTERED_FTS_SCAN) as number[]) {
      if (allow && !allow(id)) continue;
      batch.push(id);
      if (batch.length >= want) {
        flush();
        if (hits.length >= limit) break;
      }
    }
    if (batch.length && hits.length < limit) flush();
    return hits;
  }

  /**
   * A membership test from the metadata index for the filter's top-level
   * scalar entries (a necessary condition of containment), undefined when the
   * filter has none, false when some entry matches no document.
   */
  #allowFn(idx: CodeIndex, filter: Record<string, unknown>): ((key: number) => boolean) | undefined | false {
    const sets = filterTerms(filter).map((t) => idx.posting(t));
    if (sets.length === 0) return undefined;
    sets.sort((a, b) => a.size - b.size);
    if (sets[0]!.size === 0) return false;
    if (sets.length === 1) {
      const only = sets[0]!;
      return (k) => only.has(k);
    }
    return (k) => sets.every((set) => set.has(k));
  }

  async vectorRanking(collectionId: string, vector: Float32Array, limit: number, filter: unknown): Promise<Hit[]> {
    if (limit <= 0) return [];
    return this.#read(() => this.#vectorRanking(collectionId, vector, limit, filter));
  }

  #vectorRanking(collectionId: string, vector: Float32Array, limit: number, filter: unknown): Hit[] {
    const s = this.#stmts;
    const filtered = !isNoFilter(filter);
    if (filtered && !isObject(filter)) return [];
    if (!s.isLarge!.get(collectionId)) {
      const rows = (filtered ? this.#filtered(collectionId, filter, true) : s.collectionVectors!.all(collectionId)) as VecRow[];
      return topByCosine(rows, vector, limit);
    }
    const idx = this.#codeIndex(collectionId);
    const code = simhash(vector);
    if (!filtered) {
      const keys = idx.search(code, vector, codeCandidates(limit), rerankCount(limit));
      return topByCosine(s.vectorsByKey!.all(JSON.stringify(keys)) as VecRow[], vector, limit);
    }
    const f = filter as Record<string, unknown>;
    const fj = JSON.stringify(f);
    const sets = filterTerms(f).map((t) => idx.posting(t));
    sets.sort((a, b) => a.size - b.size);
    const rarest = sets[0];
    // Every entry of the filter is a top-level scalar: the metadata index answers it exactly.
    const exactlyIndexed = rarest !== undefined && sets.length === Object.keys(f).length;
    if (rarest && rarest.size <= EXACT_FILTER_MAX) {
      // Selective filter: rank every matching document (int8 pre-rank, then exact).
      if (rarest.size === 0) return [];
      let keys = [...rarest].filter((k) => sets.every((set) => set.has(k)));
      if (!exactlyIndexed) keys = (s.keysMatching!.all(JSON.stringify(keys), fj) as Array<{ id: number }>).map((r) => r.id);
      const best = idx.rank(idx.rowsOf(keys), vector, rerankCount(limit));
      return topByCosine(s.vectorsMatching!.all(JSON.stringify(best), fj) as VecRow[], vector, limit);
    }
    // Broad filter: the SimHash scan skips rows the metadata index rules out,
    // then the exact check and re-rank; over-fetch when the index cannot see
    // the whole filter (nested values). Falls back to the exact plan if that
    // leaves too few.
    const allow = rarest ? idx.maskFor(filterTerms(f)) : undefined;
    const over = exactlyIndexed ? 1 : 4;
    const keys = idx.search(code, vector, codeCandidates(limit) * over, rerankCount(limit) * over, allow);
    const rows = s.vectorsMatching!.all(JSON.stringify(keys), fj) as VecRow[];
    if (rows.length < limit && keys.length < idx.count) {
      return topByCosine(this.#filtered(collectionId, filter, true) as VecRow[], vector, limit);
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

type VecRow = { id: number; embedding: Uint8Array };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Index terms of the filter's top-level scalar entries (each a necessary condition of containment). */
function filterTerms(filter: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(filter)) {
    const t = pairTerm(k, v);
    if (t !== undefined) out.push(t);
  }
  return out;
}

/** Exact cosine (dot product of unit vectors), best first, insertion order on ties. */
function topByCosine(rows: Array<{ id: number; embedding: Uint8Array }>, q: Float32Array, limit: number): Hit[] {
  const scored = rows.map((r) => ({ key: r.id, order: r.id, score: dot(storedVector(r.embedding), q) }));
  scored.sort((a, b) => b.score - a.score || a.order - b.order);
  return scored.slice(0, limit).map(({ key, order }) => ({ key, order }));
}

const vectorScratch = new Float32Array(INDEX_DIMS);

/**
 * A stored vector blob as floats for one immediate use: a view of the
 * driver's buffer when it is aligned (no copy), else a copy into a scratch
 * array that the next call overwrites. The re-rank reads 40+ blobs per query;
 * copying each into a fresh ArrayBuffer was garbage the GC paid for.
 */
export function storedVector(b: Uint8Array): Float32Array {
  const n = b.byteLength >> 2;
  if ((b.byteOffset & 3) === 0) return new Float32Array(b.buffer, b.byteOffset, n);
  const out = n === INDEX_DIMS ? vectorScratch : new Float32Array(n);
  new Uint8Array(out.buffer, 0, n * 4).set(b.subarray(0, n * 4));
  return out;
}
