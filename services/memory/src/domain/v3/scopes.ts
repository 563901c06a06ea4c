import type { Kysely } from 'kysely';
import type { TaskHandler } from '@svc/queue';
import type { Ctx } from '../context.ts';
import { invalid } from '../errors.ts';
import { nextSeq, type Meta } from '../values.ts';
import { pageQuery, pagingOf, type V3Paging } from './paging.ts';
import { enqueueDream } from './reasoning.ts';
import { searchMessages } from './recall.ts';
import { meta, nanoid, notFound, pyList, ts, validation } from './util.ts';
import { sessionToJson } from './wire.ts';
import { ensureWorkspace } from './workspaces.ts';

/**
 * Scopes (SDK 2.5's `honcho.scope()`, the reference's `src/routers/scopes.py`):
 * a named set of sessions that bounds what recall sees. As in the reference, a
 * scope named `therapy` is a peer named `scope.therapy` with `observe_me:
 * false` that is a member (observe_others, never observe_me) of each of its
 * sessions: the deriver's usual fan-out then writes the scope's own
 * conclusions of every sender, and reading "through the scope" is reading as
 * that observer. The peer never shows on the generic peer surfaces: peer
 * lists leave it out (unless `kind` asks), session peer lists leave it out,
 * and the generic routes refuse it (422).
 *
 * The reference needs both the name prefix and an internal `kind` flag,
 * because peers from before its name rule could carry a `.`; here every peer
 * was created under `^[a-zA-Z0-9_-]+$`, so the prefix alone is authoritative.
 *
 * Adding a session that already has messages queues a backfill job copying
 * the session's explicit self-conclusions (observer = observed) into the
 * scope (idempotent: copies name their source in `metadata.copied_from`);
 * removing one queues a job deleting the scope's conclusions of that session
 * and rebuilding its cards. `GET …/status` reports the backfills.
 */
export const SCOPE_PREFIX = 'scope.';
export const SCOPE_NAME_MAX = 512 - SCOPE_PREFIX.length;
export const SCOPE_BACKFILL_TASK = 'memory_v3_scope_backfill';
export const SCOPE_REMOVAL_TASK = 'memory_v3_scope_removal';
/** The reference's MAX_SESSION_ALLOWLIST_ENTRIES. */
const MAX_ALLOWLIST = 1000;

const NAME_RE = /^[a-zA-Z0-9_-]+$/;
export const scopePeer = (name: string) => SCOPE_PREFIX + name;
export const isScopePeer = (peer: string) => peer.startsWith(SCOPE_PREFIX);
const scopeName = (peer: string) => peer.slice(SCOPE_PREFIX.length);

/** The reference's `_validate_scope_name`: why a name cannot be a scope's, if it cannot. */
export function scopeNameProblem(name: string): string | undefined {
  if (name.length < 1 || name.length > SCOPE_NAME_MAX) return `Scope name must be between 1 and ${SCOPE_NAME_MAX} characters`;
  if (name.startsWith(SCOPE_PREFIX)) return `Scope name must not start with the reserved prefix '${SCOPE_PREFIX}' (scope names are unprefixed)`;
  if (!NAME_RE.test(name)) return 'Scope name must match pattern ^[a-zA-Z0-9_-]+$';
  return undefined;
}

/** Pydantic's `value_error` 422 for scope names of a body or query (`loc` of each). */
export function checkScopeNames(names: string[], loc: (i: number) => Array<string | number>): void {
  for (let i = 0; i < names.length; i++) {
    const reason = scopeNameProblem(names[i]!);
    if (reason) throw invalid(loc(i), 'value_error', `Value error, ${reason}`, names[i], { error: {} });
  }
}

/** The scope option of the read routes (chat, representation): one name or a list of 1–100 names. */
export function checkScopeOption(v: unknown, loc: Array<string | number>): string | string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') {
    checkScopeNames([v], () => loc);
    return v;
  }
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) {
    if (v.length < 1 || v.length > 100) {
      const short = v.length < 1;
      throw invalid(loc, short ? 'too_short' : 'too_long', `List should have at ${short ? 'least 1 item' : 'most 100 items'} after validation, not ${v.length}`, v, short ? { field_type: 'List', min_length: 1, actual_length: v.length } : { field_type: 'List', max_length: 100, actual_length: v.length });
    }
    checkScopeNames(v, (i) => [...loc, i]);
    return v;
  }
  throw invalid(loc, 'string_type', 'Input should be a valid string', v);
}

export function scopeToJson(r: any) {
  return { id: scopeName(r.name), metadata: meta(r.metadata), created_at: ts(r.created_at) };
}

const scopeMissing = (workspace: string, name: string) => notFound(`Scope ${name} not found in workspace ${workspace}`);

async function readScope(db: Kysely<any>, workspace: string, name: string) {
  return db.selectFrom('v3_peers').selectAll().where('workspace', '=', workspace).where('name', '=', scopePeer(name)).executeTakeFirst();
}

export async function requireScope(db: Kysely<any>, workspace: string, name: string) {
  const r = await readScope(db, workspace, name);
  if (!r) throw scopeMissing(workspace, name);
  return r;
}

/** Get-or-create of scopes in the caller's transaction (metadata given replaces an existing scope's). */
async function ensureScopes(trx: Kysely<any>, ctx: Ctx, workspace: string, scopes: Array<{ id: string; metadata?: Meta | null }>): Promise<boolean> {
  const d = ctx.storage.dialect;
  let created = false;
  await ensureWorkspace(trx, ctx, workspace);
  for (const s of scopes) {
    const r = await trx
      .insertInto('v3_peers')
      .values({ workspace, name: scopePeer(s.id), metadata: d.json(s.metadata ?? {}), configuration: d.json({ observe_me: false }), created_at: d.timestamp(new Date()), seq: nextSeq() })
      .onConflict((oc) => oc.columns(['workspace', 'name']).doNothing())
      .executeTakeFirst();
    if (Number(r.numInsertedOrUpdatedRows ?? 0) > 0) created = true;
    else if (s.metadata != null) await trx.updateTable('v3_peers').set({ metadata: d.json(s.metadata) }).where('workspace', '=', workspace).where('name', '=', scopePeer(s.id)).execute();
  }
  return created;
}

export async function getOrCreateScope(ctx: Ctx, workspace: string, input: { id: string; metadata?: Meta | null }) {
  checkScopeNames([input.id], () => ['body', 'id']);
  const created = await ctx.storage.db.transaction().execute((trx) => ensureScopes(trx, ctx, workspace, [input]));
  return { created, scope: scopeToJson(await requireScope(ctx.storage.db, workspace, input.id)) };
}

export async function getScope(ctx: Ctx, workspace: string, name: string) {
  return scopeToJson(await requireScope(ctx.storage.db, workspace, name));
}

export async function listScopes(ctx: Ctx, workspace: string, q: V3Paging) {
  const base = ctx.storage.db.selectFrom('v3_peers').where('v3_peers.workspace', '=', workspace).where('v3_peers.name', 'like', `${SCOPE_PREFIX}%`) as any;
  return pageQuery(base, 'v3_peers', ['v3_peers.created_at', 'v3_peers.seq'], pagingOf(q), scopeToJson);
}

/** The active sessions of a scope, longest-standing member first (most recent first with `reverse`). */
export async function listScopeSessions(ctx: Ctx, workspace: string, name: string, q: V3Paging) {
  await requireScope(ctx.storage.db, workspace, name);
  const base = ctx.storage.db
    .selectFrom('v3_sessions')
    .innerJoin('v3_session_peers as sp', (j) => j.onRef('sp.workspace', '=', 'v3_sessions.workspace').onRef('sp.session', '=', 'v3_sessions.name'))
    .where('sp.workspace', '=', workspace)
    .where('sp.peer', '=', scopePeer(name))
    .where('sp.left_at', 'is', null)
    .where('v3_sessions.is_active', '=', ctx.storage.dialect.bool(true)) as any;
  return pageQuery(base, 'v3_sessions', ['sp.joined_at', 'sp.seq'], pagingOf(q), sessionToJson);
}

/** The member sessions of a scope peer (active memberships of active sessions). */
export async function scopeSessions(db: Kysely<any>, ctx: Ctx, workspace: string, peer: string): Promise<string[]> {
  const rows = await db
    .selectFrom('v3_session_peers as sp')
    .innerJoin('v3_sessions as s', (j) => j.onRef('s.workspace', '=', 'sp.workspace').onRef('s.name', '=', 'sp.session'))
    .select('sp.session')
    .where('sp.workspace', '=', workspace)
    .where('sp.peer', '=', peer)
    .where('sp.left_at', 'is', null)
    .where('s.is_active', '=', ctx.storage.dialect.bool(true))
    .orderBy('sp.joined_at')
    .orderBy('sp.seq')
    .execute();
  return rows.map((r: any) => String(r.session));
}

/**
 * Joins the scopes to the sessions (observe_others, never observe_me; a
 * scope that had left comes back) and queues a backfill for each session that
 * already has messages, all in the caller's transaction.
 */
async function joinScopes(trx: Kysely<any>, ctx: Ctx, workspace: string, scopes: string[], sessions: string[]): Promise<void> {
  const d = ctx.storage.dialect;
  const now = d.timestamp(new Date());
  const config = d.json({ observe_me: false, observe_others: true });
  const withMessages = new Set<string>();
  for (const s of sessions) {
    const m = await trx.selectFrom('v3_messages').select('id').where('workspace', '=', workspace).where('session', '=', s).limit(1).executeTakeFirst();
    if (m) withMessages.add(s);
  }
  for (const scope of scopes) {
    const peer = scopePeer(scope);
    for (const session of [...sessions].sort()) {
      const old = await trx.selectFrom('v3_session_peers').select('left_at').where('workspace', '=', workspace).where('session', '=', session).where('peer', '=', peer).executeTakeFirst();
      if (old && old.left_at == null) continue; // already a member: nothing to do
      if (old) {
        await trx.updateTable('v3_session_peers').set({ joined_at: now, left_at: null, configuration: config }).where('workspace', '=', workspace).where('session', '=', session).where('peer', '=', peer).execute();
      } else {
        await trx
          .insertInto('v3_session_peers')
          .values({ workspace, session, peer, configuration: config, joined_at: now, left_at: null, seq: nextSeq() })
          .onConflict((oc) => oc.columns(['workspace', 'session', 'peer']).doNothing())
          .execute();
      }
      if (!withMessages.has(session)) continue;
      await setBackfill(trx, ctx, workspace, peer, session, 'pending');
      await ctx.queue.add(SCOPE_BACKFILL_TASK, { workspace, scope: peer, session }, { maxAttempts: 5, queueName: `v3-scope:${workspace}:${peer}` }, trx);
    }
  }
}

async function setBackfill(db: Kysely<any>, ctx: Ctx, workspace: string, scope: string, session: string, state: 'pending' | 'completed' | 'failed', docsCopied?: number) {
  const d = ctx.storage.dialect;
  const values = { workspace, scope, session, state, docs_copied: docsCopied ?? null, updated_at: d.timestamp(new Date()) };
  await db
    .insertInto('v3_scope_backfill')
    .values(values)
    .onConflict((oc) => oc.columns(['workspace', 'scope', 'session']).doUpdateSet({ state, docs_copied: values.docs_copied, updated_at: values.updated_at }))
    .execute();
}

/** `POST …/scopes/{scope}/sessions`: every session must exist (404 naming those that do not). */
export async function addScopeSessions(ctx: Ctx, workspace: string, name: string, sessions: string[]): Promise<void> {
  const db = ctx.storage.db;
  await db.transaction().execute(async (trx) => {
    await requireScope(trx, workspace, name);
    const wanted = [...new Set(sessions)];
    const found = new Set<string>();
    for (let i = 0; i < wanted.length; i += 500) {
      const rows = await trx
        .selectFrom('v3_sessions')
        .select('name')
        .where('workspace', '=', workspace)
        .where('name', 'in', wanted.slice(i, i + 500))
        .where('is_active', '=', ctx.storage.dialect.bool(true))
        .execute();
      for (const r of rows) found.add(String(r.name));
    }
    const missing = wanted.filter((s) => !found.has(s)).sort();
    if (missing.length) throw notFound(`Session(s) ${pyList(missing)} not found in workspace ${workspace}`);
    await joinScopes(trx, ctx, workspace, [name], wanted);
  });
  ctx.queue.wake();
}

/** `SessionCreate.scopes`: the scopes (created when missing) join the session just got or created. */
export async function joinSessionScopes(trx: Kysely<any>, ctx: Ctx, workspace: string, session: string, scopes: string[]): Promise<void> {
  const names = [...new Set(scopes)];
  await ensureScopes(trx, ctx, workspace, names.map((id) => ({ id })));
  await joinScopes(trx, ctx, workspace, names, [session]);
}

/** `DELETE …/scopes/{scope}/sessions/{session}`: ends the membership; a job removes what the scope concluded from it. */
export async function removeScopeSession(ctx: Ctx, workspace: string, name: string, session: string): Promise<void> {
  const { db, dialect: d } = ctx.storage;
  await db.transaction().execute(async (trx) => {
    await requireScope(trx, workspace, name);
    const s = await trx.selectFrom('v3_sessions').select('is_active').where('workspace', '=', workspace).where('name', '=', session).executeTakeFirst();
    if (!s || !(s.is_active === true || s.is_active === 1)) throw notFound(`Session ${session} not found in workspace ${workspace}`);
    const peer = scopePeer(name);
    await trx.updateTable('v3_session_peers').set({ left_at: d.timestamp(new Date()) }).where('workspace', '=', workspace).where('session', '=', session).where('peer', '=', peer).where('left_at', 'is', null).execute();
    await ctx.queue.add(SCOPE_REMOVAL_TASK, { workspace, scope: peer, session }, { maxAttempts: 5, queueName: `v3-scope:${workspace}:${peer}` }, trx);
  });
  ctx.queue.wake();
}

export async function scopeStatus(ctx: Ctx, workspace: string, name: string) {
  const db = ctx.storage.db;
  await requireScope(db, workspace, name);
  const rows = await db.selectFrom('v3_scope_backfill').selectAll().where('workspace', '=', workspace).where('scope', '=', scopePeer(name)).orderBy('session').execute();
  const backfill_status: Record<string, { state: string; updated_at: string; docs_copied?: number }> = {};
  for (const r of rows as any[]) {
    backfill_status[r.session] = { state: r.state, updated_at: ts(r.updated_at), ...(r.docs_copied == null ? {} : { docs_copied: Number(r.docs_copied) }) };
  }
  return { backfill_status };
}

/**
 * The `scope` option of a read: a single scope reads as the scope's peer
 * (observer) over its member sessions; a list keeps the reader and confines
 * recall to the union of the scopes' sessions (fail-closed: none recalls
 * nothing). 404 for a scope that does not exist.
 */
export async function resolveScopeOption(ctx: Ctx, workspace: string, scope: string | string[]): Promise<{ observer?: string; sessions: string[] }> {
  const db = ctx.storage.db;
  const names = typeof scope === 'string' ? [scope] : [...new Set(scope)];
  for (const n of names) await requireScope(db, workspace, n);
  const union: string[] = [];
  const seen = new Set<string>();
  for (const n of names) {
    for (const s of await scopeSessions(db, ctx, workspace, scopePeer(n))) {
      if (!seen.has(s)) union.push(s), seen.add(s);
    }
  }
  if (typeof scope === 'string') return { observer: scopePeer(scope), sessions: union };
  if (union.length > MAX_ALLOWLIST) throw validation(`The scopes' combined membership exceeds the maximum of ${MAX_ALLOWLIST} sessions per request`);
  return { sessions: union };
}

/** Generic peer routes refuse scope peers (the reference's `reject_scope_peers`). */
export function refuseScopePeers(names: Array<string | null | undefined>, action: string): void {
  const bad = [...new Set(names.filter((n): n is string => typeof n === 'string' && isScopePeer(n)))].sort();
  if (bad.length) throw validation(`Peer name(s) ${pyList(bad)} are scopes. ${action}`);
}

export const SCOPE_ROUTES_GUIDANCE = 'Scope membership is managed via the scopes routes (/v3/workspaces/{workspace_id}/scopes/{scope_id}/sessions) or the `scopes` field on session creation.';

/** Backfill: the session's explicit self-conclusions copied into the scope (once each), then the scope's cards rebuilt. */
async function backfill(ctx: Ctx, p: { workspace: string; scope: string; session: string }): Promise<void> {
  const { db, dialect: d } = ctx.storage;
  const touched = await db.transaction().execute(async (trx) => {
    const member = await trx.selectFrom('v3_session_peers').select('left_at').where('workspace', '=', p.workspace).where('session', '=', p.session).where('peer', '=', p.scope).executeTakeFirst();
    if (!member || member.left_at != null) return undefined; // removed since: nothing to copy
    const sources = (await trx
      .selectFrom('v3_conclusions')
      .leftJoin('v3_vectors', 'v3_vectors.id', 'v3_conclusions.id')
      .selectAll('v3_conclusions')
      .select(['v3_vectors.vector', 'v3_vectors.body', 'v3_vectors.q8'])
      .where('v3_conclusions.workspace', '=', p.workspace)
      .where('v3_conclusions.session', '=', p.session)
      .where('v3_conclusions.level', '=', 'explicit')
      .whereRef('v3_conclusions.observer', '=', 'v3_conclusions.observed')
      .orderBy('v3_conclusions.seq')
      .execute()) as any[];
    const copies = await trx.selectFrom('v3_conclusions').select('metadata').where('workspace', '=', p.workspace).where('observer', '=', p.scope).where('session', '=', p.session).execute();
    const done = new Set(copies.map((c: any) => meta(c.metadata).copied_from).filter(Boolean));
    const rows: any[] = [];
    const vectors: any[] = [];
    for (const s of sources) {
      if (isScopePeer(s.observer) || done.has(s.id)) continue;
      const id = nanoid();
      rows.push({ id, workspace: p.workspace, observer: p.scope, observed: s.observed, session: p.session, content: s.content, level: 'explicit', metadata: d.json({ copied_from: s.id }), created_at: s.created_at, seq: nextSeq() });
      if (s.vector) vectors.push({ id, workspace: p.workspace, vector: s.vector, body: s.body ?? null, q8: s.q8 ?? null });
    }
    for (let i = 0; i < rows.length; i += 100) await trx.insertInto('v3_conclusions').values(rows.slice(i, i + 100)).execute();
    for (let i = 0; i < vectors.length; i += 100) await trx.insertInto('v3_vectors').values(vectors.slice(i, i + 100)).execute();
    await setBackfill(trx, ctx, p.workspace, p.scope, p.session, 'completed', rows.length);
    return [...new Set(rows.map((r) => String(r.observed)))];
  });
  // The scope's higher-level view of each peer it now knows more of: a dream per pair (the reference's manual omni dream).
  for (const observed of (touched ?? []).sort()) await enqueueDream(ctx, p.workspace, p.scope, observed, 'omni', null);
}

/** Removal: what the scope concluded from the session goes, its backfill status too, and its cards are rebuilt from what remains. */
async function removal(ctx: Ctx, p: { workspace: string; scope: string; session: string }): Promise<void> {
  const db = ctx.storage.db;
  const touched = await db.transaction().execute(async (trx) => {
    const member = await trx.selectFrom('v3_session_peers').select('left_at').where('workspace', '=', p.workspace).where('session', '=', p.session).where('peer', '=', p.scope).executeTakeFirst();
    if (member && member.left_at == null) return []; // added back since: keep what it has
    const gone = (await trx.selectFrom('v3_conclusions').select(['id', 'observed']).where('workspace', '=', p.workspace).where('observer', '=', p.scope).where('session', '=', p.session).execute()) as any[];
    const ids = gone.map((g) => String(g.id));
    for (let i = 0; i < ids.length; i += 500) {
      await trx.deleteFrom('v3_vectors').where('id', 'in', ids.slice(i, i + 500)).execute();
      await trx.deleteFrom('v3_conclusions').where('id', 'in', ids.slice(i, i + 500)).execute();
    }
    await trx.deleteFrom('v3_scope_backfill').where('workspace', '=', p.workspace).where('scope', '=', p.scope).where('session', '=', p.session).execute();
    return [...new Set(gone.map((g) => String(g.observed)))];
  });
  for (const observed of touched.sort()) {
    // Rebuilt from the remaining conclusions only (the reference's card_refresh with rebuild), or dropped when none remain.
    const left = await db.selectFrom('v3_conclusions').select('id').where('workspace', '=', p.workspace).where('observer', '=', p.scope).where('observed', '=', observed).limit(1).executeTakeFirst();
    if (left) await enqueueDream(ctx, p.workspace, p.scope, observed, 'card_refresh', null);
    else await db.deleteFrom('v3_peer_cards').where('workspace', '=', p.workspace).where('observer', '=', p.scope).where('observed', '=', observed).execute();
  }
}

export function scopeTasks(ctx: () => Ctx): Record<string, TaskHandler> {
  return {
    [SCOPE_BACKFILL_TASK]: async (p: any, job) => {
      try {
        await backfill(ctx(), p);
      } catch (err) {
        if (job.attempt >= job.maxAttempts) await setBackfill(ctx().storage.db, ctx(), p.workspace, p.scope, p.session, 'failed').catch(() => {});
        throw err;
      }
    },
    [SCOPE_REMOVAL_TASK]: (p: any) => removal(ctx(), p),
  };
}

/** `POST …/search` with `scope`: only the scope's member sessions (none: no results). */
export async function searchWorkspace(ctx: Ctx, workspace: string, body: { query: string; filters?: Record<string, unknown> | null; limit?: number; scope?: string | null }) {
  let filters = body.filters ?? undefined;
  if (body.scope != null) {
    checkScopeNames([body.scope], () => ['body', 'scope']);
    if (filters && 'session_id' in filters) throw validation("`scope` and a 'session_id' filter are mutually exclusive");
    await requireScope(ctx.storage.db, workspace, body.scope);
    const sessions = await scopeSessions(ctx.storage.db, ctx, workspace, scopePeer(body.scope));
    if (!sessions.length) return [];
    filters = { ...(filters ?? {}), session_id: { in: sessions } };
  }
  return searchMessages(ctx, workspace, {}, body.query, filters, body.limit ?? 10);
}
