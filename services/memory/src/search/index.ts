import type { Kysely } from 'kysely';
import type { Storage } from '@svc/storage';
import type { JobQueue } from '@svc/queue';
import type { MemoryConfig } from '../config.ts';
import type { IndexBackend } from './backend.ts';
import { detailError } from '@svc/kernel';
import { createEmbeddingProvider, EmbeddingError, embeddingSettingsFromEnv, type EmbeddingProvider, type EmbeddingSettings } from './embedding.ts';
import { PgIndex } from './pg-index.ts';
import { reciprocalRankFusion } from './rrf.ts';
import { SqliteIndex } from './sqlite-index.ts';
import { indexBody, queryTerms } from './text.ts';
import { DEFAULT_INDEX_MEMORY_MB } from './index-cache.ts';

export { searchMigrations } from './migrations.ts';

export interface MemoryDeps {
  storage: Storage;
  queue: JobQueue;
  config: MemoryConfig;
}

/** Largest number of results one query returns (reference: top_k clamped to 50). */
export const MAX_TOP_K = 50;

export interface Search {
  /** Index/reindex one document; called inside the transaction that wrote the document row. */
  indexDocument(trx: Kysely<any>, doc: { id: string; collection_id: string; content: string; metadata: Record<string, unknown> }): Promise<void>;
  /**
   * Writes a new document row and indexes it atomically: one statement where
   * the backend can (PostgreSQL), else a transaction. Raises what the insert
   * raises (e.g. a foreign-key error for a collection that is gone).
   */
  insertDocument(db: Kysely<any>, row: { id: string; collection_id: string; content: string; metadata: unknown; created_at: unknown; seq: number }): Promise<void>;
  /** Remove documents from the index (document delete, collection delete cascade). */
  removeDocuments(trx: Kysely<any>, ids: string[]): Promise<void>;
  /**
   * Hybrid search of one collection: full-text and vector rankings fused by
   * RRF, after the metadata filter. Returns `documents` rows, best first.
   * The caller has already checked that the collection belongs to the user.
   */
  query(collectionId: string, text: string, topK: number, filter?: unknown): Promise<any[]>;
  readonly embedder: EmbeddingProvider;
  readonly backend: IndexBackend;
}

/** Candidates taken from each ranking before fusion: enough that a document ranked well by either list survives. */
export function candidatesFor(topK: number): number {
  return Math.max(10, topK + 5);
}

/** The embedding settings from the service config, falling back to MEMORY_EMBEDDING_* in the environment. */
export function embeddingSettings(config: Partial<MemoryConfig> | undefined): EmbeddingSettings {
  const c = (config?.embedding ?? {}) as EmbeddingSettings;
  return c.url ? c : embeddingSettingsFromEnv();
}

export function createBackend(storage: Storage, opts: { indexMemoryBytes?: number } = {}): IndexBackend {
  // The one place where the storages differ for search: the whole index layout does.
  return storage.sqlite ? new SqliteIndex(storage.sqlite, storage.db, opts) : new PgIndex(storage.db, { ...opts, pool: storage.pgPool });
}

/** The memory bound of the in-memory search indexes: `--search-index-mb` or MEMORY_SEARCH_INDEX_MB (default 512). */
export function indexMemoryBytes(config: Partial<MemoryConfig> | undefined, env: NodeJS.ProcessEnv = process.env): number {
  const raw = config?.flags?.searchIndexMb ?? env.MEMORY_SEARCH_INDEX_MB;
  const mb = raw === undefined || raw === '' ? DEFAULT_INDEX_MEMORY_MB : Number(raw);
  if (!Number.isFinite(mb) || mb <= 0) throw new Error(`invalid search index memory "${String(raw)}" (megabytes, a positive number)`);
  return Math.floor(mb * 1024 * 1024);
}

const instances = new WeakMap<Storage, Search>();

/**
 * The search of a storage. The core's domain and the query/chat/deriver code
 * share one instance (its prepared statements and provider) per storage.
 */
export function createSearch(deps: Omit<MemoryDeps, 'queue'> & { embedder?: EmbeddingProvider }): Search {
  const existing = instances.get(deps.storage);
  if (existing && !deps.embedder) return existing;
  const search = buildSearch(deps.embedder ?? createEmbeddingProvider(embeddingSettings(deps.config)), createBackend(deps.storage, { indexMemoryBytes: indexMemoryBytes(deps.config) }));
  instances.set(deps.storage, search);
  return search;
}

/** Embedding failures of a remote provider are the upstream's fault (502), never a 500. */
async function embedOne(embedder: EmbeddingProvider, text: string): Promise<Float32Array> {
  try {
    const [v] = await embedder.embed([text]);
    return v!;
  } catch (err) {
    if (err instanceof EmbeddingError) throw detailError(502, 'Embedding provider unavailable');
    throw err;
  }
}

function buildSearch(embedder: EmbeddingProvider, backend: IndexBackend): Search {
  return {
    embedder,
    backend,
    async indexDocument(trx, doc) {
      await backend.index(trx, doc, indexBody(doc.content), await embedOne(embedder, doc.content));
    },
    async insertDocument(db, row) {
      const vector = await embedOne(embedder, row.content);
      if (backend.insertIndexed) return backend.insertIndexed(db, row, indexBody(row.content), vector);
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('documents').values(row).execute();
        await backend.index(trx, { id: row.id, collection_id: row.collection_id, content: row.content }, indexBody(row.content), vector);
      });
    },
    async removeDocuments(trx, ids) {
      await backend.remove(trx, ids);
    },
    async query(collectionId, text, topK, filter) {
      if (!(topK > 0)) return [];
      const k = Math.min(Math.floor(topK), MAX_TOP_K);
      const n = candidatesFor(k);
      const vector = await embedOne(embedder, text);
      const [textHits, vectorHits] = await Promise.all([
        backend.textRanking(collectionId, queryTerms(text), n, filter),
        backend.vectorRanking(collectionId, vector, n, filter),
      ]);
      const fused = reciprocalRankFusion([textHits, vectorHits], k);
      return backend.fetch(
        collectionId,
        fused.map((h) => h.key),
      );
    },
  };
}
