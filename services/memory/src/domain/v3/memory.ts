import type { Ctx } from '../context.ts';
import { recallConclusions } from './conclusions.ts';
import { setPeerCard } from './reasoning.ts';
import { requireSession } from './sessions.ts';
import { checkScopeNames, checkScopeOption, refuseScopePeers, requireScope, resolveScopeOption, scopePeer } from './scopes.ts';
import { estimateTokens, meta, notFound, ts, validation } from './util.ts';
import { messageToJson } from './wire.ts';

/** The reference's WORKING_REPRESENTATION_MAX_OBSERVATIONS and GET_CONTEXT_MAX_TOKENS. */
export const MAX_OBSERVATIONS = 100;
export const GET_CONTEXT_MAX_TOKENS = 100_000;

const SECTIONS: Array<[string, string]> = [
  ['explicit', '## Explicit Observations\n'],
  ['deductive', '## Deductive Observations\n'],
  ['inductive', '## Inductive Observations\n'],
  ['contradiction', '## Contradictions\n'],
];

/** `[2026-01-02 10:11:12]`: the reference strips sub-seconds and the zone. */
const stamp = (v: unknown) => ts(v).replace('T', ' ').replace(/(\.\d+)?Z$/, '');

/** The reference's `Representation.format_as_markdown()` of a set of conclusions (oldest first). */
export function formatRepresentation(rows: any[]): string {
  const parts: string[] = [];
  for (const [level, title] of SECTIONS) {
    const of = rows.filter((r) => r.level === level);
    if (!of.length) continue;
    parts.push(title);
    for (const r of of) parts.push(`[${stamp(r.created_at)}] ${r.content}`);
    parts.push('');
  }
  return parts.join('\n');
}

export interface RepresentationOptions {
  session_id?: string | null;
  target?: string | null;
  search_query?: string | null;
  search_top_k?: number | null;
  search_max_distance?: number | null;
  include_most_frequent?: boolean | null;
  max_conclusions?: number | null;
  filters?: Record<string, unknown> | null;
}

/** The recall filter's session allowlist (`filters` may name only `session_id`: an id, a list, or `{"in": [...]}`). */
export function sessionAllowlist(filters: Record<string, unknown> | null | undefined, mustInclude?: string | null): string[] | undefined {
  if (filters == null) return undefined;
  const extra = Object.keys(filters).filter((k) => k !== 'session_id');
  if (extra.length) throw validation(`Unsupported filter key(s) for this endpoint: [${extra.sort().map((k) => `'${k}'`).join(', ')}]. Only 'session_id' is supported.`);
  if (!('session_id' in filters)) throw validation("filters must contain 'session_id'");
  const v = filters.session_id;
  const entries =
    typeof v === 'string' ? [v] : Array.isArray(v) ? v : v && typeof v === 'object' && Object.keys(v).length === 1 && Array.isArray((v as any).in) ? (v as any).in : undefined;
  if (!entries) throw validation('filters.session_id must be a session id, a list of session ids, or {"in": [...]}');
  if (entries.length > 1000) throw validation('filters.session_id supports at most 1000 sessions per request');
  for (const e of entries) {
    if (typeof e !== 'string' || !/^[a-zA-Z0-9_-]+$/.test(e)) throw validation(`Invalid session id in filters.session_id: ${JSON.stringify(e)}. Session ids match ^[a-zA-Z0-9_-]+$`);
  }
  const list = [...new Set(entries as string[])];
  if (mustInclude && !list.includes(mustInclude)) throw validation('session_id must be included in filters.session_id');
  return list;
}

/** Conclusions of observer about observed: the most recent ones, plus those relevant to `search_query`. */
export async function workingRepresentation(ctx: Ctx, workspace: string, observer: string, observed: string, o: RepresentationOptions, sessions?: string[]): Promise<any[]> {
  const max = o.max_conclusions ?? MAX_OBSERVATIONS;
  let q = ctx.storage.db.selectFrom('v3_conclusions').selectAll().where('workspace', '=', workspace).where('observer', '=', observer).where('observed', '=', observed) as any;
  if (sessions) q = sessions.length ? q.where('session', 'in', sessions) : q.where('id', '=', '');
  const recent: any[] = await q.orderBy('seq', 'desc').limit(max).execute();
  let chosen = recent;
  if (o.search_query) {
    const found = await recallConclusions(ctx, workspace, { observer, observed, sessions }, o.search_query, o.search_top_k ?? 10, o.search_max_distance ?? undefined);
    const ids = new Set(found.map((r: any) => r.id));
    chosen = [...found, ...(o.include_most_frequent === false ? [] : recent.filter((r) => !ids.has(r.id)))].slice(0, max);
  }
  return chosen.sort((a, b) => Number(a.seq) - Number(b.seq));
}

export async function getRepresentation(ctx: Ctx, workspace: string, peer: string, o: RepresentationOptions & { scope?: unknown }) {
  const scope = checkScopeOption(o.scope, ['body', 'scope']);
  refuseScopePeers([peer, o.target], 'No representation is formed of a scope, so a scope cannot be a representation observer or target.');
  if (scope !== undefined) {
    if (o.filters != null) throw validation('`scope` and `filters` are mutually exclusive');
    if (o.session_id) throw validation('`scope` and `session_id` are mutually exclusive');
  }
  const sessions = sessionAllowlist(o.filters, o.session_id);
  let scoped = sessions ?? (o.session_id ? [o.session_id] : undefined);
  let observer = peer;
  if (scope !== undefined) {
    // One scope: the scope's own representation of the target; a list: the reader's, from the union of their sessions.
    const r = await resolveScopeOption(ctx, workspace, scope);
    observer = r.observer ?? peer;
    scoped = r.observer ? undefined : r.sessions;
  }
  const rows = await workingRepresentation(ctx, workspace, observer, o.target ?? peer, o, scoped);
  return { representation: formatRepresentation(rows) };
}

export async function getPeerCard(ctx: Ctx, workspace: string, peer: string, target?: string | null): Promise<string[] | null> {
  const r = await ctx.storage.db
    .selectFrom('v3_peer_cards')
    .select('card')
    .where('workspace', '=', workspace)
    .where('observer', '=', peer)
    .where('observed', '=', target ?? peer)
    .executeTakeFirst();
  if (!r) return null;
  const card = typeof r.card === 'string' ? JSON.parse(r.card) : r.card;
  return Array.isArray(card) ? card : null;
}

/** Sets a card (the observer and target must be peers of the workspace); NULs are stripped, as the reference does. */
export async function putPeerCard(ctx: Ctx, workspace: string, peer: string, target: string | null | undefined, card: string[]) {
  const db = ctx.storage.db;
  for (const name of new Set([peer, target ?? peer])) {
    const p = await db.selectFrom('v3_peers').select('name').where('workspace', '=', workspace).where('name', '=', name).executeTakeFirst();
    if (!p) throw notFound(`Peer ${name} not found in workspace ${workspace}`);
  }
  refuseScopePeers([peer, target], 'Use the scopes routes to manage scopes.');
  const clean = card.map((s) => s.replace(/\u0000/g, ''));
  await db.transaction().execute((trx) => setPeerCard(trx, ctx.storage.dialect, workspace, peer, target ?? peer, clean));
  return { peer_card: clean };
}

export async function getPeerContext(ctx: Ctx, workspace: string, peer: string, o: RepresentationOptions) {
  refuseScopePeers([peer, o.target], 'Use the `scope` option on the read routes instead.');
  const target = o.target ?? peer;
  const rows = await workingRepresentation(ctx, workspace, peer, target, o);
  return { peer_id: peer, target_id: target, representation: formatRepresentation(rows), peer_card: await getPeerCard(ctx, workspace, peer, target) };
}

export function summaryToJson(r: any) {
  return { content: r.content, message_id: r.message_id, summary_type: r.summary_type, created_at: ts(r.created_at), token_count: Number(r.token_count) };
}

async function summaries(ctx: Ctx, workspace: string, session: string) {
  const rows = await ctx.storage.db.selectFrom('v3_summaries').selectAll().where('workspace', '=', workspace).where('session', '=', session).execute();
  return { short: rows.find((r: any) => r.summary_type === 'short'), long: rows.find((r: any) => r.summary_type === 'long') };
}

export async function getSummaries(ctx: Ctx, workspace: string, session: string) {
  await requireSession(ctx.storage.db, workspace, session);
  const s = await summaries(ctx, workspace, session);
  return { id: session, short_summary: s.short ? summaryToJson(s.short) : null, long_summary: s.long ? summaryToJson(s.long) : null };
}

export interface ContextOptions extends RepresentationOptions {
  tokens?: number | null;
  summary?: boolean | null;
  peer_target?: string | null;
  peer_perspective?: string | null;
  limit_to_session?: boolean | null;
  scope?: string | null;
}

/**
 * A session's context within `tokens`: the best summary that fits 40% of the
 * budget (the long one when it fits and is longer), then the newest messages
 * after what the summary covers, as many as fit the rest; with `peer_target`,
 * the representation and card of that peer (from `peer_perspective`'s view).
 */
export async function getSessionContext(ctx: Ctx, workspace: string, session: string, o: ContextOptions) {
  if (o.peer_perspective && !o.peer_target) throw validation('peer_target must be provided if peer_perspective is provided');
  if (o.scope != null) checkScopeNames([o.scope], () => ['query', 'scope']);
  await requireSession(ctx.storage.db, workspace, session);
  refuseScopePeers([o.peer_target], 'No representation is formed of a scope, so a scope cannot be a context target.');
  refuseScopePeers([o.peer_perspective], 'Use the `scope` parameter instead.');
  if (o.scope != null) {
    if (o.peer_perspective) throw validation('`scope` and `peer_perspective` are mutually exclusive');
    if (!o.peer_target) throw validation('peer_target must be provided if scope is provided');
    await requireScope(ctx.storage.db, workspace, o.scope);
  }
  const limit = o.tokens ?? GET_CONTEXT_MAX_TOKENS;
  let chosen: any;
  let startSeq = 0;
  let budget = limit;
  if (o.summary !== false && limit > 0) {
    const s = await summaries(ctx, workspace, session);
    const room = Math.floor(limit * 0.4);
    const longLen = s.long ? Number(s.long.token_count) : 0;
    const shortLen = s.short ? Number(s.short.token_count) : 0;
    if (s.long && longLen <= room && longLen > shortLen) chosen = s.long;
    else if (s.short && shortLen <= room && shortLen > 0) chosen = s.short;
    if (chosen) {
      startSeq = Number(chosen.message_seq);
      budget = limit - Number(chosen.token_count);
    }
  }
  let representation: string | null = null;
  let card: string[] | null = null;
  if (o.peer_target) {
    // A scope reads as its peer: what the scope observed of the target (scopes.ts).
    const observer = o.scope != null ? scopePeer(o.scope) : (o.peer_perspective ?? o.peer_target);
    const rows = await workingRepresentation(ctx, workspace, observer, o.peer_target, o, o.limit_to_session ? [session] : undefined);
    representation = formatRepresentation(rows);
    card = o.limit_to_session ? null : await getPeerCard(ctx, workspace, observer, o.peer_target);
  }
  const messages: any[] = [];
  if (budget > 0) {
    // Newest first until the budget is spent, then back in order.
    let used = 0;
    let before: number | undefined;
    outer: for (;;) {
      let q = ctx.storage.db
        .selectFrom('v3_messages')
        .selectAll()
        .where('workspace', '=', workspace)
        .where('session', '=', session)
        .where('seq_in_session', '>', startSeq as any) as any;
      if (before !== undefined) q = q.where('seq_in_session', '<', before);
      const rows: any[] = await q.orderBy('seq_in_session', 'desc').limit(500).execute();
      if (!rows.length) break;
      for (const r of rows) {
        if (used + Number(r.token_count) > budget) break outer;
        used += Number(r.token_count);
        messages.push(r);
      }
      before = Number(rows[rows.length - 1].seq_in_session);
    }
    messages.reverse();
  }
  return {
    id: session,
    messages: messages.map(messageToJson),
    summary: chosen ? summaryToJson(chosen) : null,
    peer_representation: representation,
    peer_card: card,
  };
}

/** `GET …/queue/status`: work units by state, optionally for one observer, sender and/or session. */
export async function queueStatus(ctx: Ctx, workspace: string, f: { observer_id?: string | null; sender_id?: string | null; session_id?: string | null }) {
  let q = ctx.storage.db
    .selectFrom('v3_work')
    .select(['session', 'status', (eb) => eb.fn.sum<number>('units').as('n')])
    .where('workspace', '=', workspace)
    .groupBy(['session', 'status']) as any;
  if (f.observer_id) q = q.where('observer', '=', f.observer_id);
  if (f.sender_id) q = q.where('sender', '=', f.sender_id);
  if (f.session_id) q = q.where('session', '=', f.session_id);
  const rows: any[] = await q.execute();
  const zero = () => ({ completed: 0, in_progress: 0, pending: 0 });
  const all = zero();
  const per = new Map<string, ReturnType<typeof zero>>();
  for (const r of rows) {
    // A message batch's units wait as one `queued` row per kind until its ingest job writes them one by one.
    const k = (r.status === 'queued' ? 'pending' : r.status) as keyof ReturnType<typeof zero>;
    if (!(k in all)) continue;
    all[k] += Number(r.n);
    if (r.session) {
      const s = per.get(r.session) ?? zero();
      s[k] += Number(r.n);
      per.set(r.session, s);
    }
  }
  const counts = (c: ReturnType<typeof zero>) => ({
    total_work_units: c.completed + c.in_progress + c.pending,
    completed_work_units: c.completed,
    in_progress_work_units: c.in_progress,
    pending_work_units: c.pending,
  });
  if (f.session_id) return { ...counts(all), sessions: null };
  const sessions: Record<string, unknown> = {};
  for (const [id, c] of per) sessions[id] = { session_id: id, ...counts(c) };
  return { ...counts(all), sessions: per.size ? sessions : null };
}

