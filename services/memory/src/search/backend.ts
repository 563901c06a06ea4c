import type { Kysely } from 'kysely';

/** A ranked hit: `key` identifies the indexed document inside the backend, `order` is its insertion order (tie-breaker). */
export interface Hit {
  key: string | number;
  order: number;
}

export interface IndexedDoc {
  id: string;
  collection_id: string;
  content: string;
}

/**
 * The storage-specific half of search: how a document's terms and vector are
 * stored and ranked. SQLite (FTS5 + sqlite-vec) and PostgreSQL (tsvector +
 * pgvector or exact cosine) implement it; ranking fusion is shared.
 */
export interface IndexBackend {
  readonly name: string;
  index(trx: Kysely<any>, doc: IndexedDoc, body: string, vector: Float32Array): Promise<void>;
  remove(trx: Kysely<any>, ids: string[]): Promise<void>;
  /**
   * Optional: writes a new `documents` row and indexes it in one statement
   * (atomic without a transaction; one round trip on PostgreSQL).
   */
  insertIndexed?(db: Kysely<any>, row: Record<string, unknown>, body: string, vector: Float32Array): Promise<void>;
  /** Full-text ranking of the collection's documents for the stems `terms`, best first. */
  textRanking(collectionId: string, terms: string[], limit: number, filter: unknown): Promise<Hit[]>;
  /** Nearest documents by cosine similarity, best first. */
  vectorRanking(collectionId: string, vector: Float32Array, limit: number, filter: unknown): Promise<Hit[]>;
  /** Document rows (A's `documents` columns) for the keys, in the given order; missing keys are skipped. */
  fetch(collectionId: string, keys: Array<string | number>): Promise<any[]>;
  /**
   * Optional: the union of the `limit` nearest documents of each vector (as vectorRanking ranks
   * them, unfiltered), with their content and stored vectors, in as few round trips as the
   * backend can (the deriver's duplicate check). Undefined when this backend has no such plan.
   */
  nearestContents?(collectionId: string, vectors: Float32Array[], limit: number): Promise<Array<{ content: string; vector: Float32Array }> | undefined>;
}

/** A filter that matches every row needs no filtering; anything else (including non-objects) is applied. */
export function isNoFilter(filter: unknown): boolean {
  return (
    filter === undefined ||
    filter === null ||
    (typeof filter === 'object' && !Array.isArray(filter) && Object.keys(filter as object).length === 0)
  );
}
