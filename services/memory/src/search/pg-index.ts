import { sql, type Kysely, type RawBuilder } from 'kysely';
import { isNoFilter, type Hit, type IndexBackend, type IndexedDoc } from './backend.ts';
import { CODE_BITS, simhash } from './simhash.ts';

export type VectorMode = 'pgvector' | 'array';

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
 * Without pgvector, the exact dot product in SQL costs ~45 µs per row
 * (measured: 470 ms for 10k documents), so collections are first cut to this
 * many candidates by SimHash Hamming distance (~1 µs per row), then ranked
 * exactly; smaller collections are ranked exactly throughout.
 */
const EXACT_RERANK = 200;

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

  constructor(db: Kysely<any>) {
    this.#db = db;
    this.name = 'pg-tsvector';
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

  async index(trx: Kysely<any>, doc: IndexedDoc, body: string, vector: Float32Array): Promise<void> {
    const mode = await this.vectorMode(trx);
    if (mode === 'pgvector') {
      await sql`insert into search_docs (doc_id, collection_id, body, embedding)
        values (${doc.id}, ${doc.collection_id}, to_tsvector('simple', ${body}), ${vectorParam(mode, vector)})
        on conflict (doc_id) do update set collection_id = excluded.collection_id, body = excluded.body, embedding = excluded.embedding`.execute(trx);
    } else {
      await sql`insert into search_docs (doc_id, collection_id, body, embedding, code)
        values (${doc.id}, ${doc.collection_id}, to_tsvector('simple', ${body}), ${vectorParam(mode, vector)}, ${codeLiteral(vector)}::bit(${sql.raw(String(CODE_BITS))}))
        on conflict (doc_id) do update set collection_id = excluded.collection_id, body = excluded.body, embedding = excluded.embedding, code = excluded.code`.execute(trx);
    }
  }

  async remove(trx: Kysely<any>, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await sql`delete from search_docs where doc_id = any(${ids}::text[])`.execute(trx);
  }

  async textRanking(collectionId: string, terms: string[], limit: number, filter: unknown): Promise<Hit[]> {
    if (terms.length === 0 || limit <= 0) return [];
    const q = tsQuery(terms);
    const r = await sql<{ key: string; ord: number }>`
      select s.doc_id as key, s.seq as ord from search_docs s
      where s.collection_id = ${collectionId} and s.body @@ to_tsquery('simple', ${q}) ${filterClause(filter)}
      order by ts_rank(s.body, to_tsquery('simple', ${q})) desc, s.seq
      limit ${limit}`.execute(this.#db);
    return r.rows.map((x) => ({ key: x.key, order: Number(x.ord) }));
  }

  async vectorRanking(collectionId: string, vector: Float32Array, limit: number, filter: unknown): Promise<Hit[]> {
    if (limit <= 0) return [];
    const mode = await this.vectorMode();
    const v = vectorParam(mode, vector);
    let rows: Array<{ key: string; ord: number }>;
    if (mode === 'array') {
      const code = sql`${codeLiteral(vector)}::bit(${sql.raw(String(CODE_BITS))})`;
      rows = (
        await sql<{ key: string; ord: number }>`
        with c as (
          select s.doc_id, s.seq, s.embedding from search_docs s
          where s.collection_id = ${collectionId} ${filterClause(filter)}
          order by bit_count(s.code # ${code}), s.seq
          limit ${Math.max(EXACT_RERANK, limit + 10)}
        )
        select c.doc_id as key, c.seq as ord from c
        order by (select sum(a * b) from unnest(c.embedding, ${v}) as t(a, b)) desc nulls last, c.seq
        limit ${limit}`.execute(this.#db)
      ).rows;
    } else {
      rows = isNoFilter(filter) ? await this.#hnsw(collectionId, v, limit) : [];
      // HNSW filters by collection after the graph search, so a small collection in a
      // large table can come back short; an exact scan of the collection is then cheap.
      if (rows.length < limit) {
        rows = (
          await sql<{ key: string; ord: number }>`
          with c as materialized (
            select s.doc_id, s.seq, s.embedding from search_docs s where s.collection_id = ${collectionId} ${filterClause(filter)}
          )
          select doc_id as key, seq as ord from c order by embedding <=> ${v}, seq limit ${limit}`.execute(this.#db)
        ).rows;
      }
    }
    return rows.map((x) => ({ key: x.key, order: Number(x.ord) }));
  }

  async #hnsw(collectionId: string, v: RawBuilder<unknown>, limit: number): Promise<Array<{ key: string; ord: number }>> {
    return this.#db.transaction().execute(async (trx) => {
      await sql.raw(`set local hnsw.ef_search = ${Math.min(1000, Math.max(40, limit))}`).execute(trx);
      const r = await sql<{ key: string; ord: number }>`
        select s.doc_id as key, s.seq as ord from search_docs s
        where s.collection_id = ${collectionId}
        order by s.embedding <=> ${v}
        limit ${limit}`.execute(trx);
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
