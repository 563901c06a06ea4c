import { sql } from 'kysely';
import type { TaskHandler } from '@svc/queue';
import { readJson } from '../domain/values.ts';
import { createSearch, type MemoryDeps } from '../search/index.ts';
import { indexBody } from '../search/text.ts';

export const REINDEX_TASK = 'memory_reindex_documents';
const BATCH = 200;

/**
 * Vectors of different embedding models are not comparable. At startup the
 * provider in use is compared with the one recorded with the index; when it
 * changed, a durable job re-embeds every document (queries keep working
 * meanwhile, with mixed vectors, until it finishes).
 */
export async function checkEmbeddingProvider(deps: MemoryDeps): Promise<boolean> {
  const { db } = deps.storage;
  const current = createSearch(deps).embedder.id;
  return db.transaction().execute(async (trx) => {
    const row = (await sql<{ value: string }>`select value from search_settings where key = 'embedding_provider'`.execute(trx)).rows[0];
    if (row?.value === current) return false;
    await sql`insert into search_settings (key, value) values ('embedding_provider', ${current})
      on conflict (key) do update set value = excluded.value`.execute(trx);
    // The first start records the provider; documents can only exist already if it changed.
    const any = (await sql`select 1 from documents limit 1`.execute(trx)).rows.length > 0;
    if (!row && !any) return false;
    await deps.queue.add(REINDEX_TASK, { provider: current }, { jobKey: 'memory-reindex', maxAttempts: 10 }, trx);
    return true;
  });
}

export function reindexTask(deps: MemoryDeps): TaskHandler {
  return async () => {
    const search = createSearch(deps);
    const { db } = deps.storage;
    let after = -1;
    for (;;) {
      const rows = await db
        .selectFrom('documents')
        .select(['id', 'collection_id', 'content', 'metadata', 'seq'])
        .where('seq', '>', after)
        .orderBy('seq')
        .limit(BATCH)
        .execute();
      if (rows.length === 0) return;
      // One provider call per batch, outside the transaction.
      const vectors = await search.embedder.embed(rows.map((r) => String(r.content)));
      await db.transaction().execute(async (trx) => {
        for (const [i, r] of rows.entries()) {
          const doc = { id: String(r.id), collection_id: String(r.collection_id), content: String(r.content), metadata: readJson(r.metadata) };
          await search.backend.index(trx, doc, indexBody(doc.content), vectors[i]!);
        }
      });
      after = Number(rows.at(-1)!.seq);
    }
  };
}
