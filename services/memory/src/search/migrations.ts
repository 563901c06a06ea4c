import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';
import { INDEX_DIMS } from './embedding.ts';
import { CODE_BITS, simhash } from './simhash.ts';
import { bufferToVector } from './embedding.ts';
import { packVector } from './code-index.ts';

/**
 * SQLite: `search_docs` maps documents to integer keys and keeps the float
 * vector; `search_fts` (FTS5, contentless) holds the stems, prefixed per
 * collection so a MATCH is scoped by the index itself; `search_vec` (sqlite-vec vec0 over 384-bit SimHash codes, partitioned by
 * collection) only holds collections large enough to need it
 * (`search_vec_collections`), since each partition costs a 1024-vector chunk.
 */
async function upSqlite(db: Kysely<any>): Promise<void> {
  const stmts = [
    sql`create table search_docs (
      id integer primary key,
      doc_id text not null unique,
      collection_id text not null,
      embedding blob not null
    )`,
    sql`create index search_docs_collection on search_docs (collection_id)`,
    sql.raw(`create virtual table search_fts using fts5(body, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 0')`),
    // Document frequencies of terms, to keep only the informative ones in a query.
    sql.raw(`create virtual table search_fts_vocab using fts5vocab(search_fts, 'row')`),
    sql.raw(`create virtual table search_vec using vec0(collection_id text partition key, embedding bit[${INDEX_DIMS}])`),
    sql`create table search_vec_collections (collection_id text primary key)`,
    sql`create table search_settings (key text primary key, value text not null)`,
  ];
  for (const s of stmts) await s.execute(db);
}

/**
 * PostgreSQL: one table with a tsvector (GIN) and the vector. With pgvector
 * the vector is `vector(384)` under an HNSW cosine index; without it a
 * `float4[]` (exact dot product; vectors are unit length) plus a SimHash code.
 */
async function upPostgres(db: Kysely<any>): Promise<void> {
  const available = await sql`select 1 from pg_available_extensions where name = 'vector'`.execute(db);
  let pgvector = false;
  if (available.rows.length > 0) {
    // A role without CREATE privilege cannot install it; fall back to exact cosine.
    await sql`savepoint search_vector`.execute(db);
    try {
      await sql`create extension if not exists vector schema public`.execute(db);
      await sql`release savepoint search_vector`.execute(db);
      pgvector = true;
    } catch {
      await sql`rollback to savepoint search_vector`.execute(db);
    }
  }
  const vecType = pgvector ? sql.raw(`vector(${INDEX_DIMS})`) : sql.raw('float4[]');
  // Without pgvector, a SimHash code (bit_count of XOR = Hamming distance) picks
  // candidates cheaply; an exact dot product over float4[] then ranks them.
  const code = pgvector ? sql`` : sql.raw(`, code bit(${CODE_BITS}) not null`);
  await sql`create table search_docs (
    doc_id text primary key,
    collection_id text not null,
    body tsvector not null,
    embedding ${vecType} not null,
    seq bigserial not null
    ${code}
  )`.execute(db);
  await sql`create index search_docs_collection on search_docs (collection_id, seq)`.execute(db);
  await sql`create index search_docs_body on search_docs using gin (body)`.execute(db);
  if (pgvector) await sql`create index search_docs_embedding on search_docs using hnsw (embedding vector_cosine_ops)`.execute(db);
  await sql`create table search_settings (key text primary key, value text not null)`.execute(db);
  await sql`insert into search_settings (key, value) values ('vector_mode', ${pgvector ? 'pgvector' : 'array'})`.execute(db);
}

/**
 * SQLite: the vector stage moves from sqlite-vec's bit KNN to an in-memory
 * SimHash index per large collection (see code-index.ts). Codes are stored
 * with the documents so a process builds that index without re-hashing, and
 * `search_log` tells every process which documents changed since it looked.
 */
async function upSqliteCodes(db: Kysely<any>): Promise<void> {
  await sql`alter table search_docs add column code blob`.execute(db);
  const rows = await sql<{ id: number; embedding: Buffer }>`select id, embedding from search_docs`.execute(db);
  for (const r of rows.rows) await sql`update search_docs set code = ${simhash(bufferToVector(r.embedding))} where id = ${r.id}`.execute(db);
  await sql`create table search_log (seq integer primary key autoincrement, collection_id text not null, key integer not null)`.execute(db);
  await sql.raw('drop table if exists search_vec').execute(db);
}

/**
 * PostgreSQL: a GIN index on document metadata for selective filters; and,
 * without pgvector, the same in-memory SimHash index as SQLite, fed by each
 * document's packed code + int8 vector and by `search_log` (with the writing
 * transaction's id, so readers never skip a change committed out of order).
 */
async function upPostgresCodes(db: Kysely<any>): Promise<void> {
  await sql`create index if not exists documents_metadata on documents using gin (metadata jsonb_path_ops)`.execute(db);
  const mode = await sql<{ value: string }>`select value from search_settings where key = 'vector_mode'`.execute(db);
  if (mode.rows[0]?.value === 'pgvector') return;
  await sql`alter table search_docs add column packed bytea`.execute(db);
  const rows = await sql<{ seq: number; embedding: number[] }>`select seq, embedding from search_docs`.execute(db);
  for (const r of rows.rows) await sql`update search_docs set packed = ${packVector(Float32Array.from(r.embedding))} where seq = ${r.seq}`.execute(db);
  await sql`create unique index search_docs_seq on search_docs (seq)`.execute(db);
  await sql`create table search_log (
    seq bigserial primary key,
    collection_id text not null,
    key bigint not null,
    xid xid8 not null default pg_current_xact_id()
  )`.execute(db);
  await sql`create index search_log_xid on search_log (xid)`.execute(db);
  await sql`create table search_large (collection_id text primary key)`.execute(db);
}

export const searchMigrations: Migration[] = [
  {
    name: '500_search',
    async up(db: Kysely<any>, dialect: SqlDialect) {
      if (dialect.kind === 'sqlite') await upSqlite(db);
      else await upPostgres(db);
    },
  },
  {
    name: '501_search_codes',
    async up(db: Kysely<any>, dialect: SqlDialect) {
      if (dialect.kind === 'sqlite') await upSqliteCodes(db);
    },
  },
  {
    name: '502_search_codes_pg',
    async up(db: Kysely<any>, dialect: SqlDialect) {
      if (dialect.kind === 'postgres') await upPostgresCodes(db);
    },
  },
];
