import type { Kysely } from 'kysely';
import type { Ctx } from '../context.ts';
import { bufferToVector, dot, vectorToBuffer } from '../../search/embedding.ts';
import { queryTerms, indexBody } from '../../search/text.ts';
import { reciprocalRankFusion } from '../../search/rrf.ts';
import { compileFilter, MESSAGE_FILTER } from './filter.ts';
import { bySeq, indexedSearch } from './message-index.ts';
import { messageToJson } from './wire.ts';

/**
 * Search over v3 messages and conclusions: the service's hybrid ranking (a
 * full-text ranking over the same stems as the document index, and cosine
 * over the same embeddings, fused by reciprocal rank fusion). Messages are
 * ranked by the workspace's index (message-index.ts), conclusions by `rank`.
 */

/** Embeddings of new texts; a provider failure leaves them unembedded (full-text still finds them). */
export async function embedTexts(ctx: Ctx, texts: string[]): Promise<Array<Float32Array | undefined>> {
  if (!texts.length) return [];
  try {
    return await ctx.search.embedder.embed(texts.map((t) => t.slice(0, 65_536)));
  } catch {
    return texts.map(() => undefined);
  }
}

export async function storeVectors(trx: Kysely<any>, workspace: string, items: Array<{ id: string; vector: Float32Array | undefined; content?: string }>): Promise<void> {
  const rows = items.filter((x) => x.vector).map((x) => ({ id: x.id, workspace, vector: vectorToBuffer(x.vector!), body: x.content === undefined ? null : indexBody(x.content) }));
  for (let i = 0; i < rows.length; i += 100) await trx.insertInto('v3_vectors').values(rows.slice(i, i + 100)).execute();
}

/** Ranks candidate rows `{id, content, vector}` for a query; best first, at most `limit`. */
export async function rank<T extends { id: string; content: string; vector?: unknown; body?: unknown; seq?: unknown }>(
  ctx: Ctx,
  rows: T[],
  query: string,
  limit: number,
  opts: { maxDistance?: number } = {},
): Promise<T[]> {
  if (!rows.length || limit <= 0) return [];
  const terms = queryTerms(query);
  const [qv] = await embedTexts(ctx, [query]);
  // Full-text: bm25-like weight of the query stems each row contains (idf over the candidates).
  const stems = rows.map((r) => new Set((typeof r.body === 'string' ? r.body : indexBody(r.content)).split(' ')));
  const df = new Map<string, number>();
  for (const t of terms) df.set(t, stems.reduce((n, s) => n + (s.has(t) ? 1 : 0), 0));
  const textHits = rows
    .map((r, i) => {
      let score = 0;
      for (const t of terms) if (stems[i]!.has(t)) score += Math.log(1 + (rows.length - df.get(t)! + 0.5) / (df.get(t)! + 0.5));
      return { key: i, order: i, score };
    })
    .filter((h) => h.score > 0)
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, Math.max(10, limit + 5));
  const cosine = new Map<number, number>();
  let vectorHits: Array<{ key: number; order: number; score: number }> = [];
  if (qv) {
    vectorHits = rows
      .map((r, i) => {
        const v = r.vector ? bufferToVector(r.vector as Uint8Array) : undefined;
        const score = v ? dot(qv, v) : -2;
        cosine.set(i, score);
        return { key: i, order: i, score };
      })
      .filter((h) => h.score > -2 && (opts.maxDistance === undefined || 1 - h.score <= opts.maxDistance))
      .sort((a, b) => b.score - a.score || a.order - b.order)
      .slice(0, Math.max(10, limit + 5));
  }
  let fused = reciprocalRankFusion([textHits, vectorHits], limit);
  if (opts.maxDistance !== undefined) fused = fused.filter((h) => (cosine.get(h.key as number) ?? -2) > -2 && 1 - cosine.get(h.key as number)! <= opts.maxDistance!);
  return fused.map((h) => rows[h.key as number]!);
}

/** A filter's matches are read from the database in pages of this many ids (on SQLite each page is a synchronous read, its metadata tests JS functions: short pages). */
const MATCH_PAGE = { sqlite: 1_000, postgres: 5_000 } as const;

/**
 * `POST …/search` at workspace, peer or session level: messages, best first.
 * The workspace's in-memory index ranks every message in scope; with
 * `filters`, the filter (compiled to SQL) first selects the ids of every
 * matching message in scope, and only those are ranked.
 */
export async function searchMessages(ctx: Ctx, workspace: string, scope: { session?: string; peer?: string }, query: string, filters: unknown, limit: number) {
  const cond = compileFilter(filters, MESSAGE_FILTER, ctx.storage.dialect);
  if (limit <= 0) return [];
  const [qv] = await embedTexts(ctx, [query]);
  const only = cond ? () => matchingIds(ctx, workspace, scope, cond) : undefined;
  return (await indexedSearch(ctx, workspace, scope, query, qv, limit, only)).map(messageToJson);
}

async function matchingIds(ctx: Ctx, workspace: string, scope: { session?: string; peer?: string }, cond: unknown): Promise<string[]> {
  const query = (op: string, seq: number) => {
    let q = ctx.storage.db.selectFrom('v3_messages').select(['v3_messages.id', 'v3_messages.seq']).where('v3_messages.workspace', '=', workspace).where('v3_messages.seq', op as any, seq) as any;
    if (scope.session !== undefined) q = q.where('v3_messages.session', '=', scope.session);
    if (scope.peer !== undefined) q = q.where('v3_messages.peer', '=', scope.peer);
    return q.where(cond).orderBy('v3_messages.seq');
  };
  const ids: string[] = [];
  for await (const rows of bySeq<{ id: string; seq: unknown }>(query, -1, MATCH_PAGE[ctx.storage.dialect.kind])) for (const r of rows) ids.push(r.id);
  return ids;
}
