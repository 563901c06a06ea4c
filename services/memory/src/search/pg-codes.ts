import { sql, type Kysely } from 'kysely';
import { CodeIndex, metadataPairs } from './code-index.ts';
import { DEFAULT_INDEX_MEMORY_MB, IndexCache } from './index-cache.ts';

interface LogEntry {
  seq: number;
  collection_id: string;
  key: number;
}

/**
 * The in-memory SimHash indexes of large collections on PostgreSQL (without
 * pgvector), kept current with the writes of every process through
 * `search_log`. PostgreSQL commits out of sequence order, so an entry with a
 * lower seq can appear after a higher one was read: each read therefore also
 * takes again every entry written by a transaction that was still running at
 * the previous read (xid ≥ that snapshot's xmin). Replaying is idempotent.
 */
export class PgCodeCache {
  #db: Kysely<any>;
  #codes: IndexCache<CodeIndex>;
  #lastSeq = 0;
  #lastXmin = '0';
  #queue: Promise<void> = Promise.resolve();

  constructor(db: Kysely<any>, opts: { indexMemoryBytes?: number } = {}) {
    this.#db = db;
    this.#codes = new IndexCache(opts.indexMemoryBytes ?? DEFAULT_INDEX_MEMORY_MB * 1024 * 1024);
  }

  /** The in-memory indexes held (bounded by memory, least recently used out). */
  get indexCache(): IndexCache<CodeIndex> {
    return this.#codes;
  }

  /**
   * The collection's index, current as of now. Catching up and loading run
   * one at a time: a load racing a catch-up could otherwise miss a change
   * that the catch-up marked as seen before the collection was loaded.
   */
  get(collectionId: string): Promise<CodeIndex> {
    const run = this.#queue.then(async () => {
      await this.#apply();
      const idx = this.#codes.get(collectionId);
      if (!idx) return this.#load(collectionId);
      this.#codes.trim(collectionId);
      return idx;
    });
    this.#queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  async #apply(): Promise<void> {
    // One round trip when nothing changed: the snapshot bounds and any new entries together.
    const b = (
      await sql<{ xmin: string; hi: number | null; entries: LogEntry[] | null }>`
      select pg_snapshot_xmin(pg_current_snapshot())::text as xmin, (select max(seq) from search_log) as hi,
        case when ${this.#codes.size > 0} then (
          select json_agg(e order by e.seq) from (
            select seq, collection_id, key from search_log where seq > ${this.#lastSeq} or xid >= ${this.#lastXmin}::xid8
            order by seq limit 20001) e)
        end as entries`.execute(this.#db)
    ).rows[0]!;
    const entries = b.entries ?? [];
    if (entries.length > 20_000) this.#codes.clear();
    else if (entries.length > 0) {
      const keys = [...new Set(entries.filter((e) => this.#codes.has(e.collection_id)).map((e) => Number(e.key)))];
      if (keys.length > 0) {
        const rows = (
          await sql<{ key: number; collection_id: string; packed: Buffer; metadata: unknown }>`
          select s.seq as key, s.collection_id, s.packed, d.metadata from search_docs s join documents d on d.id = s.doc_id
          where s.seq = any(${keys}::bigint[])`.execute(this.#db)
        ).rows;
        const found = new Map(rows.map((r) => [Number(r.key), r]));
        for (const e of entries) {
          const idx = this.#codes.peek(e.collection_id);
          if (!idx) continue;
          const r = found.get(Number(e.key));
          if (!r || r.collection_id !== e.collection_id) idx.remove(Number(e.key));
          else idx.upsertPacked(Number(e.key), r.packed, metadataPairs(r.metadata));
        }
      }
    }
    this.#lastSeq = Math.max(this.#lastSeq, Number(b.hi ?? 0));
    this.#lastXmin = b.xmin;
  }

  async #load(collectionId: string): Promise<CodeIndex> {
    const idx = new CodeIndex();
    const rows = await sql<{ key: number; packed: Buffer; metadata: unknown }>`
      select s.seq as key, s.packed, d.metadata from search_docs s join documents d on d.id = s.doc_id
      where s.collection_id = ${collectionId}`.execute(this.#db);
    for (const r of rows.rows) idx.upsertPacked(Number(r.key), r.packed, metadataPairs(r.metadata));
    this.#codes.set(collectionId, idx);
    return idx;
  }
}
