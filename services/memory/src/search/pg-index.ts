import { CompiledQuery, sql, type Kysely, type RawBuilder } from 'kysely';
import type pg from 'pg';
import { isNoFilter, type Hit, type IndexBackend, type IndexedDoc } from './backend.ts';
import { CODE_BITS, simhash } from './simhash.ts';
import { packedDot, packVector, pairTerm } from './code-index.ts';
import { PgCodeCache } from './pg-codes.ts';
import { codeCandidates, EXACT_FILTER_MAX, rerankCount, VEC_MIN_DOCS } from './sqlite-index.ts';

export type VectorMode = 'pgvector' | 'array';

/** Largest summed document fraction of the terms one full-text query keeps (≈ 5,000 postings per 100,000 documents, as on SQLite). */
const TERM_FREQUENCY_BUDGET = 0.05;

/** `'a' | 'b'` for to_tsquery: stems are letters/digits only, so quoting each is safe. */
export function tsQuery(terms: string[]): string {
  return terms.map((t) => `'${t.replace(/'/g, '')}'`).join(' | ');
}

function vectorParam(mode: VectorMode, v: Float32Array): RawBuilder<unknown> {
  if (mode === 'pgvector') return sql`${'[' + Array.from(v).join(',') + ']'}::vector`;
  return sql`${Array.from(v)}::float4[]`;
}

/** A SimHash code as a PostgreSQL bit-string literal (bit i of the code is character i). */
export function codeLiteral(v: Float32Array): string {
  const code = simhash(v);
  let out = '';
  for (let b = 0; b < CODE_BITS; b++) out += (code[b >> 3]! >> (b & 7)) & 1 ? '1' : '0';
  return out;
}


/**
 * A float4[] in PostgreSQL's binary array form (array_send): ndim, null flag,
 * element type, then length and lower bound per dimension, then each element
 * as a length and a big-endian float. Read this way rather than as text,
 * which node-postgres parses character by character (a fifth of the
 * deriver's CPU time on PostgreSQL), and exactly the stored float32 values.
 */
export function float4ArrayFromSend(bytes: Uint8Array): Float32Array {
  // node-postgres gives a Buffer, PGlite a Uint8Array.
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ndim = v.getInt32(0);
  if (ndim === 0) return new Float32Array(0);
  let n = 1;
  for (let d = 0; d < ndim; d++) n *= v.getInt32(12 + d * 8);
  const out = new Float32Array(n);
  let at = 12 + ndim * 8;
  for (let i = 0; i < n; i++) {
    const len = v.getInt32(at);
    at += 4;
    out[i] = len < 0 ? 0 : v.getFloat32(at);
    if (len > 0) at += len;
  }
  return out;
}

/** Search.insertDocument without pgvector, as one statement (see PgIndex.insertIndexed). */
const INSERT_INDEXED = `with doc as (
    insert into documents (id, collection_id, content, metadata, created_at, seq)
    values ($1, $2, $3, $4::jsonb, $5, $6)
    returning id
  ), up as (
    insert into search_docs (doc_id, collection_id, body, embedding, code, packed)
    select doc.id, $2, to_tsvector('simple', $7), $8::float4[], $9::bit(${CODE_BITS}), $10
    from doc
    returning seq
  ), mark as (
    insert into search_large (collection_id)
    select $2 where not exists (select 1 from search_large where collection_id = $2)
      and (select count(*) from (select 1 from search_docs where collection_id = $2 limit ${VEC_MIN_DOCS - 1}) x) >= ${VEC_MIN_DOCS - 1}
    on conflict do nothing
  )
  insert into search_log (collection_id, key) select $2, seq from up where exists (select 1 from search_large where collection_id = $2)`;

/** A small collection's packed vectors; with every row's stored vector and content when it has at most $2 rows. */
const NEAREST_SMALL = `select s.seq as key, s.packed, case when c.n <= $2 then array_send(s.embedding) end as embedding, d.content
  from (select count(*)::int as n from search_docs where collection_id = $1) c
  cross join search_docs s
  left join lateral (select content from documents where id = s.doc_id and c.n <= $2) d on true
  where s.collection_id = $1`;

/** Stored vectors and contents of the duplicate check's candidates. */
const NEAREST_ROWS = `select s.seq, array_send(s.embedding) as embedding, d.content from search_docs s join documents d on d.id = s.doc_id
  where s.seq = any($1::bigint[]) and s.collection_id = $2`;

/**
 * HNSW candidate list size. On the local embedding, pgvector 0.8.7's HNSW
 * (m 16, ef_construction 64) over 10,000 documents reached recall@10 83% at
 * ef_search 40, 90% at 100, 95% at 200, 97% at 400 and 99% at 800.
 */
export function hnswEfSearch(limit: number): number {
  return Math.min(1000, Math.max(400, limit * 8));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function filterClause(filter: unknown): RawBuilder<unknown> {
  if (isNoFilter(filter)) return sql``;
  return sql`and exists (select 1 from documents d where d.id = s.doc_id and d.metadata @> ${JSON.stringify(filter)}::jsonb)`;
}

/**
 * tsvector + GIN for text; pgvector's HNSW (`<=>`) when the extension was
 * available at migration time, else SimHash candidates ranked by an exact dot
 * product over a float4[] column (vectors are unit length: cosine).
 */
export class PgIndex implements IndexBackend {
  readonly name: string;
  #db: Kysely<any>;
  #mode: Promise<VectorMode> | undefined;
  #codes: PgCodeCache;
  /** Collections known to be large (they never become small again). */
  #large = new Set<string>();
  /** When collections were last seen small. */
  #small = new Map<string, number>();
  /** Whether pgvector has hnsw.iterative_scan (≥ 0.8); unknown until first tried. */
  #iterative: boolean | undefined;
  /** Term frequencies from pg_stats, re-read at most once a minute. */
  #freq: { at: number; map: Promise<Map<string, number>> } | undefined;
  /** Filters matching at most this many documents are ranked exactly (tests lower it to reach the other plan). */
  exactFilterMax = EXACT_FILTER_MAX;

  /** The storage's pool, for named (prepared) statements on the deriver's path; absent on PGlite. */
  #pool: pg.Pool | undefined;

  constructor(db: Kysely<any>, opts: { indexMemoryBytes?: number; pool?: pg.Pool } = {}) {
    this.#db = db;
    this.#pool = opts.pool;
    this.#codes = new PgCodeCache(db, opts);
    this.name = 'pg-tsvector';
  }

  /** The in-memory indexes of large collections (without pgvector). */
  get indexCache() {
    return this.#codes.indexCache;
  }

  /** Which vector layout the migration chose (read once; through the caller's transaction when in one). */
  vectorMode(executor: Kysely<any> = this.#db): Promise<VectorMode> {
    this.#mode ??= sql<{ value: string }>`select value from search_settings where key = 'vector_mode'`
      .execute(executor)
      .then((r) => (r.rows[0]?.value === 'pgvector' ? 'pgvector' : 'array'))
      .catch((err) => {
        this.#mode = undefined;
        throw err;
      });
    return this.#mode;
  }

  /**
   * A statement of constant text run as a named (prepared) query on the pool,
   * so PostgreSQL parses and plans it once per connection: a fact derivation
   * runs four such statements, and at hundreds of jobs a second the parsing
   * was a third of the server's time for them. Through Kysely when there is
   * no pool or the caller is in a transaction.
   */
  async #named<R>(name: string, text: string, values: unknown[], executor: Kysely<any> = this.#db): Promise<R[]> {
    if (this.#pool && !executor.isTransaction) return (await this.#pool.query({ name, text, values })).rows as R[];
    return (await executor.executeQuery<R>(CompiledQuery.raw(text, values))).rows;
  }

  async index(trx: Kysely<any>, doc: IndexedDoc, body: string, vector: Float32Array): Promise<void> {
    const mode = await this.vectorMode(trx);
    if (mode === 'pgvector') {
      await sql`insert into search_docs (doc_id, collection_id, body, embedding)
        values (${doc.id}, ${doc.collection_id}, to_tsvector('simple', ${body}), ${vectorParam(mode, vector)})
        on conflict (doc_id) do update set collection_id = excluded.collection_id, body = excluded.body, embedding = excluded.embedding`.execute(trx);
    } else {
      // One round trip: the row, the large-collection mark, and the change log entry
      // that keeps other processes' in-memory indexes current (see pg-codes.ts).
      const c = doc.collection_id;
      await sql`with up as (
          insert into search_docs (doc_id, collection_id, body, embedding, code, packed)
          values (${doc.id}, ${c}, to_tsvector('simple', ${body}), ${vectorParam(mode, vector)}, ${codeLiteral(vector)}::bit(${sql.raw(String(CODE_BITS))}), ${packVector(vector)})
          on conflict (doc_id) do update set collection_id = excluded.collection_id, body = excluded.body, embedding = excluded.embedding,
            code = excluded.code, packed = excluded.packed
          returning seq
        ), mark as (
          insert into search_large (collection_id)
          select ${c} where not exists (select 1 from search_large where collection_id = ${c})
            and (select count(*) from (select 1 from search_docs where collection_id = ${c} limit ${VEC_MIN_DOCS - 1}) x) >= ${VEC_MIN_DOCS - 1}
          on conflict do nothing
        )
        insert into search_log (collection_id, key) select ${c}, seq from up where exists (select 1 from search_large where collection_id = ${c})`.execute(trx);
    }
  }

  async insertIndexed(db: Kysely<any>, row: Record<string, unknown>, body: string, vector: Float32Array): Promise<void> {
    const mode = await this.vectorMode(db);
    if (mode === 'pgvector') {
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('documents').values(row).execute();
        await this.index(trx, { id: String(row.id), collection_id: String(row.collection_id), content: String(row.content) }, body, vector);
      });
      return;
    }
    // The document row, its index row, the large-collection mark and the log entry: one statement.
    await this.#named('memory_insert_indexed', INSERT_INDEXED, [
      row.id,
      String(row.collection_id),
      row.content,
      row.metadata,
      row.created_at,
      row.seq,
      body,
      Array.from(vector),
      codeLiteral(vector),
      packVector(vector),
    ], db);
  }

  async remove(trx: Kysely<any>, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    if ((await this.vectorMode(trx)) === 'pgvector') {
      await sql`delete from search_docs where doc_id = any(${ids}::text[])`.execute(trx);
      return;
    }
    await sql`with d as (delete from search_docs where doc_id = any(${ids}::text[]) returning seq, collection_id)
      insert into search_log (collection_id, key)
      select d.collection_id, d.seq from d where exists (select 1 from search_large l where l.collection_id = d.collection_id)`.execute(trx);
  }

  async textRanking(collectionId: string, allTerms: string[], limit: number, filter: unknown): Promise<Hit[]> {
    if (allTerms.length === 0 || limit <= 0) return [];
    const terms = await this.#selectTerms(allTerms);
    if (terms.length === 0) return [];
    const q = tsQuery(terms);
    const r = await sql<{ key: string; ord: number }>`
      select s.doc_id as key, s.seq as ord from search_docs s
      where s.collection_id = ${collectionId} and s.body @@ to_tsquery('simple', ${q}) ${filterClause(filter)}
      order by ts_rank(s.body, to_tsquery('simple', ${q})) desc, s.seq
      limit ${limit}`.execute(this.#db);
    return r.rows.map((x) => ({ key: x.key, order: Number(x.ord) }));
  }

  /**
   * As on SQLite: ts_rank is computed for every matching row before LIMIT, so
   * a query's cost is the document frequency of its terms. Keep the rarer
   * terms, up to TERM_FREQUENCY_BUDGET of the documents in total, using the
   * planner's statistics of the tsvector column (most common elements and
   * their frequencies, refreshed by ANALYZE); a term not among them is rarer
   * than all that are. Common terms carry little IDF, and the vector stage
   * still sees them.
   */
  async #selectTerms(terms: string[]): Promise<string[]> {
    const freq = await this.#termFrequencies();
    const withF = terms.map((t) => ({ t, f: freq.get(t) ?? 0 })).sort((a, b) => a.f - b.f);
    const kept: string[] = [];
    let total = 0;
    for (const x of withF) {
      if (kept.length > 0 && total + x.f > TERM_FREQUENCY_BUDGET) break;
      kept.push(x.t);
      total += x.f;
    }
    return kept;
  }

  #termFrequencies(): Promise<Map<string, number>> {
    const now = Date.now();
    if (this.#freq && now - this.#freq.at < 60_000) return this.#freq.map;
    const map = sql<{ elems: string[] | string | null; freqs: number[] | null }>`
      select most_common_elems::text::text[] as elems, most_common_elem_freqs as freqs from pg_stats
      where schemaname = current_schema() and tablename = 'search_docs' and attname = 'body'`
      .execute(this.#db)
      .then((r) => {
        const m = new Map<string, number>();
        const row = r.rows[0];
        if (row?.elems && row.freqs && Array.isArray(row.elems)) row.elems.forEach((e, i) => m.set(e, Number(row.freqs![i])));
        return m;
      })
      .catch(() => new Map<string, number>());
    this.#freq = { at: now, map };
    return map;
  }

  async vectorRanking(collectionId: string, vector: Float32Array, limit: number, filter: unknown): Promise<Hit[]> {
    if (limit <= 0) return [];
    const mode = await this.vectorMode();
    const v = vectorParam(mode, vector);
    let rows: Array<{ key: string; ord: number }>;
    if (mode === 'array') {
      return this.#codeRanking(collectionId, vector, limit, filter);
    } else if (isNoFilter(filter)) {
      rows = await this.#hnsw(collectionId, v, limit);
    } else if (!isObject(filter)) {
      return [];
    } else {
      // Selective filter: the GIN index on document metadata finds the few
      // matches, ranked exactly. Broad filter: HNSW with iterative scan, the
      // filter checked on each candidate.
      const fj = JSON.stringify(filter);
      const n = await sql<{ n: number }>`select count(*)::int as n from (
          select 1 from documents d where d.collection_id = ${collectionId} and d.metadata @> ${fj}::jsonb limit ${this.exactFilterMax + 1}) x`.execute(this.#db);
      const matches = Number(n.rows[0]?.n ?? 0);
      if (matches === 0) return [];
      rows =
        matches <= this.exactFilterMax
          ? (
              await sql<{ key: string; ord: number }>`select s.doc_id as key, s.seq as ord
                from documents d join search_docs s on s.doc_id = d.id
                where d.collection_id = ${collectionId} and d.metadata @> ${fj}::jsonb
                order by s.embedding <=> ${v}, s.seq limit ${limit}`.execute(this.#db)
            ).rows
          : await this.#hnsw(collectionId, v, limit, fj);
    }
    // HNSW filters after the graph search, so a small collection in a large
    // table can come back short; an exact scan of the collection is then cheap.
    if (rows.length < limit) {
      rows = (
        await sql<{ key: string; ord: number }>`
        with c as materialized (
          select s.doc_id, s.seq, s.embedding from search_docs s where s.collection_id = ${collectionId} ${filterClause(filter)}
        )
        select doc_id as key, seq as ord from c order by embedding <=> ${v}, seq limit ${limit}`.execute(this.#db)
      ).rows;
    }
    return rows.map((x) => ({ key: x.key, order: Number(x.ord) }));
  }

  /**
   * Whether the collection has reached VEC_MIN_DOCS. Either answer gives
   * correct results (the small plan ranks every row), so "small" may be a
   * few seconds stale; "large" never changes back.
   */
  async #isLarge(collectionId: string): Promise<boolean> {
    if (this.#large.has(collectionId)) return true;
    const now = Date.now();
    const small = this.#small.get(collectionId);
    if (small !== undefined && now - small < 5000) return false;
    const r = await sql`select 1 from search_large where collection_id = ${collectionId}`.execute(this.#db);
    if (r.rows.length > 0) {
      this.#large.add(collectionId);
      this.#small.delete(collectionId);
    } else {
      if (this.#small.size > 10_000) this.#small.clear();
      this.#small.set(collectionId, now);
    }
    return r.rows.length > 0;
  }

  /**
   * Without pgvector: the same plans as SQLite. Large collections through the
   * in-memory SimHash index (and its metadata postings); small ones by the
   * packed int8 vectors of all their (filtered) rows. Both end with an exact
   * re-rank of the best few by their stored float vectors.
   */
  async #codeRanking(collectionId: string, vector: Float32Array, limit: number, filter: unknown): Promise<Hit[]> {
    const filtered = !isNoFilter(filter);
    if (filtered && !isObject(filter)) return [];
    const fj = filtered ? JSON.stringify(filter) : undefined;
    if (!(await this.#isLarge(collectionId))) {
      const rows = (
        await sql<{ key: number; packed: Buffer }>`select s.seq as key, s.packed from search_docs s
          where s.collection_id = ${collectionId} ${filterClause(filter)}`.execute(this.#db)
      ).rows;
      const best = rows
        .map((r) => ({ key: Number(r.key), score: packedDot(r.packed, vector) }))
        .sort((a, b) => b.score - a.score || a.key - b.key)
        .slice(0, rerankCount(limit))
        .map((r) => r.key);
      return this.#exact(best, vector, limit);
    }
    const idx = await this.#codes.get(collectionId);
    const code = simhash(vector);
    if (!filtered) return this.#exact(idx.search(code, vector, codeCandidates(limit), rerankCount(limit)), vector, limit);
    const f = filter as Record<string, unknown>;
    const terms = Object.entries(f)
      .map(([k, v]) => pairTerm(k, v))
      .filter((t): t is string => t !== undefined);
    const sets = terms.map((t) => idx.posting(t));
    sets.sort((a, b) => a.size - b.size);
    const rarest = sets[0];
    const exactlyIndexed = rarest !== undefined && sets.length === Object.keys(f).length;
    if (rarest && rarest.size <= EXACT_FILTER_MAX) {
      if (rarest.size === 0) return [];
      let keys = [...rarest].filter((k) => sets.every((set) => set.has(k)));
      if (!exactlyIndexed) keys = await this.#matching(keys, fj!);
      return this.#exact(idx.rank(idx.rowsOf(keys), vector, rerankCount(limit)), vector, limit, fj);
    }
    const allow = rarest ? idx.maskFor(terms) : undefined;
    const over = exactlyIndexed ? 1 : 4;
    const keys = idx.search(code, vector, codeCandidates(limit) * over, rerankCount(limit) * over, allow);
    const hits = await this.#exact(keys, vector, limit, fj);
    if (hits.length < limit && keys.length < idx.count) {
      // The index could not see the filter and too few candidates passed it: rank every match.
      const rows = (
        await sql<{ key: number; packed: Buffer }>`select s.seq as key, s.packed from search_docs s
          where s.collection_id = ${collectionId} ${filterClause(filter)}`.execute(this.#db)
      ).rows;
      const best = rows
        .map((r) => ({ key: Number(r.key), score: packedDot(r.packed, vector) }))
        .sort((a, b) => b.score - a.score || a.key - b.key)
        .slice(0, rerankCount(limit))
        .map((r) => r.key);
      return this.#exact(best, vector, limit);
    }
    return hits;
  }

  /**
   * Without pgvector: the candidates of every vector from one read of the packed vectors (small
   * collection) or the in-memory index (large), then one read of the candidates' stored vectors
   * and contents; each vector keeps its exact best `limit`. Two round trips for any number of
   * vectors, where vectorRanking + fetch take two per vector and one more.
   */
  async nearestContents(collectionId: string, vectors: Float32Array[], limit: number): Promise<Array<{ content: string; vector: Float32Array }> | undefined> {
    if ((await this.vectorMode()) !== 'array') return undefined;
    if (vectors.length === 0 || limit <= 0) return [];
    const candidates = new Set<number>();
    let read: Array<{ seq: number; embedding: Buffer; content: string }> | undefined;
    if (!(await this.#isLarge(collectionId))) {
      // A collection of no more rows than one vector re-ranks exactly comes with its vectors and contents: every row is a candidate.
      const rows = await this.#named<{ key: number; packed: Buffer; embedding: Buffer | null; content: string | null }>(
        'memory_nearest_small',
        NEAREST_SMALL,
        [collectionId, rerankCount(limit)],
      );
      if (rows.every((r) => r.embedding !== null)) read = rows.filter((r) => r.content !== null).map((r) => ({ seq: r.key, embedding: r.embedding!, content: r.content! }));
      else for (const v of vectors) {
        rows
          .map((r) => ({ key: Number(r.key), score: packedDot(r.packed, v) }))
          .sort((a, b) => b.score - a.score || a.key - b.key)
          .slice(0, rerankCount(limit))
          .forEach((r) => candidates.add(r.key));
      }
    } else {
      const idx = await this.#codes.get(collectionId);
      for (const v of vectors) for (const k of idx.search(simhash(v), v, codeCandidates(limit), rerankCount(limit))) candidates.add(k);
    }
    read ??=
      candidates.size === 0
        ? []
        : await this.#named<{ seq: number; embedding: Buffer; content: string }>('memory_nearest_rows', NEAREST_ROWS, [[...candidates], collectionId]);
    if (read.length === 0) return [];
    const rows = read.map((r) => ({ seq: Number(r.seq), vector: float4ArrayFromSend(r.embedding), content: String(r.content) }));
    const keep = new Set<number>();
    for (const v of vectors) {
      rows
        .map((r, i) => {
          let d = 0;
          for (let j = 0; j < r.vector.length; j++) d += r.vector[j]! * v[j]!;
          return { i, seq: r.seq, score: d };
        })
        .sort((a, b) => b.score - a.score || a.seq - b.seq)
        .slice(0, limit)
        .forEach((x) => keep.add(x.i));
    }
    return [...keep].sort((a, b) => rows[a]!.seq - rows[b]!.seq).map((i) => ({ content: rows[i]!.content, vector: rows[i]!.vector }));
  }

  async #matching(keys: number[], fj: string): Promise<number[]> {
    const r = await sql<{ key: number }>`select s.seq as key from search_docs s join documents d on d.id = s.doc_id
      where s.seq = any(${keys}::bigint[]) and d.metadata @> ${fj}::jsonb`.execute(this.#db);
    return r.rows.map((x) => Number(x.key));
  }

  /** Exact cosine of the given documents (seq keys), optionally only those matching the filter; best `limit`. */
  async #exact(keys: number[], vector: Float32Array, limit: number, fj?: string): Promise<Hit[]> {
    if (keys.length === 0) return [];
    const match = fj === undefined ? sql`` : sql`and exists (select 1 from documents d where d.id = s.doc_id and d.metadata @> ${fj}::jsonb)`;
    const rows = (
      await sql<{ doc_id: string; seq: number; embedding: Buffer }>`select s.doc_id, s.seq, array_send(s.embedding) as embedding from search_docs s
        where s.seq = any(${keys}::bigint[]) ${match}`.execute(this.#db)
    ).rows;
    return rows
      .map((r) => {
        let d = 0;
        const e = float4ArrayFromSend(r.embedding);
        for (let j = 0; j < e.length; j++) d += e[j]! * vector[j]!;
        return { key: r.doc_id, order: Number(r.seq), score: d };
      })
      .sort((a, b) => b.score - a.score || a.order - b.order)
      .slice(0, limit)
      .map(({ key, order }) => ({ key, order }));
  }

  async #hnsw(collectionId: string, v: RawBuilder<unknown>, limit: number, filterJson?: string): Promise<Array<{ key: string; ord: number }>> {
    const match = filterJson === undefined ? sql`` : sql`and exists (select 1 from documents d where d.id = s.doc_id and d.metadata @> ${filterJson}::jsonb)`;
    return this.#db.transaction().execute(async (trx) => {
      await sql.raw(`set local hnsw.ef_search = ${hnswEfSearch(limit)}`).execute(trx);
      // pgvector ≥ 0.8: keep walking the graph until enough rows pass the filters (collection, metadata).
      if (this.#iterative !== false) {
        await sql`savepoint iterative`.execute(trx);
        try {
          await sql.raw(`set local hnsw.iterative_scan = relaxed_order`).execute(trx);
          await sql`release savepoint iterative`.execute(trx);
          this.#iterative = true;
        } catch {
          await sql`rollback to savepoint iterative`.execute(trx);
          this.#iterative = false;
        }
      }
      const r = await sql<{ key: string; ord: number }>`
        select key, ord from (
          select s.doc_id as key, s.seq as ord, s.embedding <=> ${v} as dist from search_docs s
          where s.collection_id = ${collectionId} ${match}
          order by s.embedding <=> ${v}
          limit ${limit}) t
        order by dist, ord`.execute(trx);
      return r.rows;
    });
  }

  async fetch(collectionId: string, keys: Array<string | number>): Promise<any[]> {
    if (keys.length === 0) return [];
    const ids = keys.map(String);
    const r = await sql<any>`select d.* from documents d where d.id = any(${ids}::text[]) and d.collection_id = ${collectionId}`.execute(this.#db);
    const byId = new Map(r.rows.map((row) => [row.id as string, row]));
    return ids.map((id) => byId.get(id)).filter((x) => x !== undefined);
  }
}
