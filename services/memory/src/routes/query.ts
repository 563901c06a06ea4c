import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { App } from '@svc/kernel';
import { findCollection } from '../domain/collections.ts';
import { documentToJson } from '../domain/documents.ts';
import { parseFilter } from '../domain/paging.ts';
import { CONTENT_MAX, FILTER_MAX } from '../schemas/common.ts';
import { Document } from '../schemas/resources.ts';
import { C, CollectionParams } from '../schemas/params.ts';
import { createSearch, MAX_TOP_K, type MemoryDeps } from '../search/index.ts';
import { checkEmbeddingProvider } from '../deriver/reindex.ts';
import { op } from './common.ts';

const QueryParams = Type.Object({
  query: Type.String({ maxLength: CONTENT_MAX }),
  top_k: Type.Optional(Type.Integer({ default: 5 })),
  filter: Type.Optional(Type.Union([Type.String({ maxLength: FILTER_MAX }), Type.Null()])),
});

/**
 * GET C/{collection_id}/query: hybrid (full-text + vector, RRF) search of one
 * collection of the user. top_k defaults to 5, is clamped to 50, and ≤ 0 or an
 * unknown collection gives `[]`, as the reference.
 */
export async function queryRoutes(fastify: FastifyInstance, deps: MemoryDeps): Promise<void> {
  const app = fastify as unknown as App;
  const search = createSearch(deps);
  await checkEmbeddingProvider(deps);
  app.get(
    `${C}/:collection_id/query`,
    {
      schema: {
        ...op('collections', 'Query Documents', Type.Array(Document), {
          description: `Hybrid full-text and vector search; top_k is clamped to ${MAX_TOP_K}; \`filter\` is JSON containment on metadata, applied first.`,
        }),
        params: CollectionParams,
        querystring: QueryParams,
      },
    },
    async (req) => {
      const { app_id, user_id, collection_id } = req.params;
      const filter = parseFilter(req.query.filter);
      const topK = req.query.top_k ?? 5;
      if (topK <= 0) return [];
      if (!(await findCollection(deps.storage.db, app_id, user_id, collection_id))) return [];
      const rows = await search.query(collection_id, req.query.query, topK, filter);
      return rows.map(documentToJson);
    },
  );
}
