import type { Ctx } from '../context.ts';
import { compileFilter, CONCLUSION_FILTER } from './filter.ts';
import { pageQuery, pagingOf, type V3Paging } from './paging.ts';
import { rank } from './recall.ts';
import { storeConclusions } from './reasoning.ts';
import { notFound, ts, validation } from './util.ts';

export function conclusionToJson(r: any) {
  return {
    id: r.id,
    content: r.content,
    observer_id: r.observer,
    observed_id: r.observed,
    session_id: r.session ?? null,
    level: r.level,
    created_at: ts(r.created_at),
  };
}

async function requirePeers(ctx: Ctx, workspace: string, names: string[]) {
  const found = new Set(
    (await ctx.storage.db.selectFrom('v3_peers').select('name').where('workspace', '=', workspace).where('name', 'in', [...new Set(names)]).execute()).map((r: any) => r.name),
  );
  for (const n of names) if (!found.has(n)) throw notFound(`Peer ${n} not found in workspace ${workspace}`);
}

/** Conclusions written by the client: both peers (and the session, when named) must exist. */
export async function createConclusions(ctx: Ctx, workspace: string, items: Array<{ content: string; observer_id: string; observed_id: string; session_id?: string | null }>) {
  await requirePeers(ctx, workspace, items.flatMap((c) => [c.observer_id, c.observed_id]));
  for (const s of new Set(items.map((c) => c.session_id).filter((x): x is string => !!x))) {
    const r = await ctx.storage.db.selectFrom('v3_sessions').select('is_active').where('workspace', '=', workspace).where('name', '=', s).executeTakeFirst();
    if (!r || !(r.is_active === true || r.is_active === 1)) throw notFound(`Session ${s} not found in workspace ${workspace}`);
  }
  const out: any[] = [];
  // The client's conclusions are stored as given (the deriver's duplicate check is for its own).
  for (const c of items) {
    out.push(...(await storeConclusions(ctx, { workspace, observer: c.observer_id, observed: c.observed_id, session: c.session_id ?? null }, [c.content], false)));
  }
  return out.map(conclusionToJson);
}

export async function listConclusions(ctx: Ctx, workspace: string, filters: unknown, q: V3Paging) {
  const cond = compileFilter(filters, CONCLUSION_FILTER, ctx.storage.dialect);
  let base = ctx.storage.db.selectFrom('v3_conclusions').where('v3_conclusions.workspace', '=', workspace) as any;
  if (cond) base = base.where(cond);
  // Newest first unless `reverse` (the reference's get_documents_with_filters).
  return pageQuery(base, 'v3_conclusions', ['v3_conclusions.created_at', 'v3_conclusions.seq'], { ...pagingOf(q), reverse: q.reverse !== true }, conclusionToJson);
}

/** Semantic search of one (observer, observed) pair's conclusions, named in `filters`. */
export async function queryConclusions(ctx: Ctx, workspace: string, body: { query: string; top_k?: number; distance?: number | null; filters?: Record<string, unknown> | null }) {
  const f = { ...(body.filters ?? {}) } as Record<string, unknown>;
  const observer = f.observer ?? f.observer_id;
  const observed = f.observed ?? f.observed_id;
  if (!observer || !observed) {
    throw validation(
      'observer and observed must be specified for semantic search. Pass them inside the \'filters\' object, e.g. {"query": "...", "filters": {"observer": "alice", "observed": "bob"}}. Both \'observer\'/\'observer_id\' and \'observed\'/\'observed_id\' are accepted.',
    );
  }
  const rows = await recallConclusions(ctx, workspace, { observer, observed, filters: f }, body.query, body.top_k ?? 10, body.distance ?? undefined);
  return rows.map(conclusionToJson);
}

/** Conclusions of a pair ranked for a query (hybrid, as message search), optionally narrowed by filters and sessions. */
export async function recallConclusions(
  ctx: Ctx,
  workspace: string,
  who: { observer: unknown; observed: unknown; filters?: unknown; sessions?: string[] },
  query: string,
  topK: number,
  maxDistance?: number,
) {
  const cond = compileFilter(who.filters, CONCLUSION_FILTER, ctx.storage.dialect);
  let q = ctx.storage.db
    .selectFrom('v3_conclusions')
    .leftJoin('v3_vectors', 'v3_vectors.id', 'v3_conclusions.id')
    .selectAll('v3_conclusions')
    .select(['v3_vectors.vector', 'v3_vectors.body'])
    .where('v3_conclusions.workspace', '=', workspace) as any;
  if (typeof who.observer === 'string') q = q.where('v3_conclusions.observer', '=', who.observer);
  // Workspace-wide recall: a scope's conclusions are copies or views of the peers' own (scopes.ts).
  else q = q.where('v3_conclusions.observer', 'not like', 'scope.%');
  if (typeof who.observed === 'string') q = q.where('v3_conclusions.observed', '=', who.observed);
  if (who.sessions) q = who.sessions.length ? q.where('v3_conclusions.session', 'in', who.sessions) : q.where('v3_conclusions.id', '=', '');
  if (cond) q = q.where(cond);
  const rows = await q.orderBy('v3_conclusions.seq', 'desc').limit(20_000).execute();
  return rank(ctx, rows, query, topK, { maxDistance });
}

export async function getConclusion(ctx: Ctx, workspace: string, id: string) {
  const r = await ctx.storage.db.selectFrom('v3_conclusions').selectAll().where('workspace', '=', workspace).where('id', '=', id).executeTakeFirst();
  if (!r) throw notFound('Conclusion not found');
  return conclusionToJson(r);
}

export async function deleteConclusion(ctx: Ctx, workspace: string, id: string) {
  await ctx.storage.db.transaction().execute(async (trx) => {
    const r = await trx.deleteFrom('v3_conclusions').where('workspace', '=', workspace).where('id', '=', id).executeTakeFirst();
    if (Number(r.numDeletedRows) === 0) throw notFound('Conclusion not found');
    await trx.deleteFrom('v3_vectors').where('id', '=', id).execute();
  });
}
