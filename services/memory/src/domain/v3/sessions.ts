import type { Kysely } from 'kysely';
import type { Ctx } from '../context.ts';
import { nextSeq, type Meta } from '../values.ts';
import { compileFilter, SESSION_FILTER } from './filter.ts';
import { pageQuery, pagingOf, type V3Paging } from './paging.ts';
import { ensurePeers } from './peers.ts';
import { checkScopeNames, joinSessionScopes, refuseScopePeers, SCOPE_ROUTES_GUIDANCE } from './scopes.ts';
import { badRequest, checkNewName, meta, nanoid, notFound } from './util.ts';
import { peerToJson, sessionToJson } from './wire.ts';
import { dropNones, DELETE_TASK, ensureWorkspace } from './workspaces.ts';

/** The reference's SESSION_OBSERVERS_LIMIT: peers with `observe_others` per session. */
export const SESSION_OBSERVERS_LIMIT = 10;

export interface PeerConfig {
  observe_me?: boolean | null;
  observe_others?: boolean | null;
}

const configOf = (c: PeerConfig | null | undefined) => ({ observe_me: c?.observe_me ?? null, observe_others: c?.observe_others ?? null });

function observerError(session: string, n: number) {
  return badRequest(
    `Cannot create session ${session} with ${n} observers. Maximum allowed is ${SESSION_OBSERVERS_LIMIT} observers per session. Observers are peers with 'observe_others' set to true.`,
  );
}

const sessionMissing = (workspace: string, name: string) => notFound(`Session ${name} not found in workspace ${workspace}`);

export async function readSession(db: Kysely<any>, workspace: string, name: string) {
  return db.selectFrom('v3_sessions').selectAll().where('workspace', '=', workspace).where('name', '=', name).executeTakeFirst();
}

/** An active session, else the reference's 404 (a deleted session is gone to every route). */
export async function requireSession(db: Kysely<any>, workspace: string, name: string) {
  const r = await readSession(db, workspace, name);
  if (!r || !(r.is_active === true || r.is_active === 1)) throw sessionMissing(workspace, name);
  return r;
}

/**
 * Get-or-create in the caller's transaction: a new session (and its workspace)
 * is inserted with `on conflict do nothing`; an existing one takes the given
 * metadata (replaced) and configuration (keys merged); an inactive (deleted)
 * one is a 404. Peers given are created and joined.
 */
export async function ensureSession(
  trx: Kysely<any>,
  ctx: Ctx,
  workspace: string,
  input: { id: string; metadata?: Meta | null; configuration?: unknown; peers?: Record<string, PeerConfig | null> | null },
): Promise<{ created: boolean; row: any }> {
  const d = ctx.storage.dialect;
  let created = false;
  let row = await d.forUpdate(trx.selectFrom('v3_sessions').selectAll().where('workspace', '=', workspace).where('name', '=', input.id)).executeTakeFirst();
  if (!row) {
    const peers = input.peers ?? {};
    const observers = Object.values(peers).filter((c) => c?.observe_others === true).length;
    if (observers > SESSION_OBSERVERS_LIMIT) throw observerError(input.id, observers);
    checkNewName('Session', [input.id]);
    await ensureWorkspace(trx, ctx, workspace);
    const values = {
      workspace,
      name: input.id,
      is_active: d.bool(true),
      metadata: d.json(input.metadata ?? {}),
      configuration: d.json(dropNones(input.configuration)),
      created_at: d.timestamp(new Date()),
      seq: nextSeq(),
    };
    const r = await trx.insertInto('v3_sessions').values(values).onConflict((oc) => oc.columns(['workspace', 'name']).doNothing()).executeTakeFirst();
    created = Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
    row = await d.forUpdate(trx.selectFrom('v3_sessions').selectAll().where('workspace', '=', workspace).where('name', '=', input.id)).executeTakeFirstOrThrow();
    if (created) row = { ...row };
  }
  if (!(row.is_active === true || row.is_active === 1)) throw sessionMissing(workspace, input.id);
  if (!created) {
    const set: Record<string, unknown> = {};
    if (input.metadata != null) set.metadata = d.json(input.metadata);
    if (input.configuration != null) set.configuration = d.json({ ...meta(row.configuration), ...dropNones(input.configuration) });
    if (Object.keys(set).length) {
      await trx.updateTable('v3_sessions').set(set).where('workspace', '=', workspace).where('name', '=', input.id).execute();
      row = { ...row, ...set };
    }
  }
  if (input.peers && Object.keys(input.peers).length) await joinPeers(trx, ctx, workspace, input.id, input.peers);
  return { created, row };
}

/**
 * Adds peers to a session (creating them): a new or returning member gets
 * the given config, a current member keeps its own; at most
 * SESSION_OBSERVERS_LIMIT active observers.
 */
async function joinPeers(trx: Kysely<any>, ctx: Ctx, workspace: string, session: string, peers: Record<string, PeerConfig | null>) {
  const d = ctx.storage.dialect;
  const names = Object.keys(peers);
  await ensurePeers(
    trx,
    ctx,
    workspace,
    names.map((id) => ({ id })),
  );
  const current = await trx.selectFrom('v3_session_peers').selectAll().where('workspace', '=', workspace).where('session', '=', session).execute();
  const byPeer = new Map(current.map((r: any) => [r.peer, r]));
  const isObserver = (c: unknown) => meta(c).observe_others === true;
  // A scope's membership (scopes.ts) observes but is not counted, as the reference's limit bounds real peers' fan-out.
  let observers = current.filter((r: any) => r.left_at == null && isObserver(r.configuration) && !String(r.peer).startsWith('scope.')).length;
  const newObservers = names.filter((n) => {
    const old = byPeer.get(n);
    return peers[n]?.observe_others === true && !(old && old.left_at == null);
  }).length;
  if (newObservers > 0 && observers + newObservers > SESSION_OBSERVERS_LIMIT) throw observerError(session, observers + newObservers);
  const now = d.timestamp(new Date());
  for (const name of names) {
    const old = byPeer.get(name);
    const config = d.json(configOf(peers[name]));
    if (!old) {
      await trx
        .insertInto('v3_session_peers')
        .values({ workspace, session, peer: name, configuration: config, joined_at: now, left_at: null, seq: nextSeq() })
        .onConflict((oc) => oc.columns(['workspace', 'session', 'peer']).doNothing())
        .execute();
    } else {
      const set: Record<string, unknown> = { joined_at: now, left_at: null };
      if (old.left_at != null) set.configuration = config;
      await trx.updateTable('v3_session_peers').set(set).where('workspace', '=', workspace).where('session', '=', session).where('peer', '=', name).execute();
    }
  }
  void observers;
}

/** Get-or-create; `scopes` (SDK 2.5) are got or created and join the session (a session with messages is backfilled into them). */
export async function getOrCreateSession(ctx: Ctx, workspace: string, input: Parameters<typeof ensureSession>[3] & { scopes?: string[] | null }) {
  refuseScopePeers(Object.keys(input.peers ?? {}), SCOPE_ROUTES_GUIDANCE);
  const scopes = input.scopes ?? [];
  checkScopeNames(scopes, (i) => ['body', 'scopes', i]);
  const { created, row } = await ctx.storage.db.transaction().execute(async (trx) => {
    const r = await ensureSession(trx, ctx, workspace, input);
    if (scopes.length) await joinSessionScopes(trx, ctx, workspace, input.id, scopes);
    return r;
  });
  if (scopes.length) ctx.queue.wake();
  return { created, session: sessionToJson(row) };
}

export async function updateSession(ctx: Ctx, workspace: string, name: string, input: { metadata?: Meta | null; configuration?: unknown }) {
  const { row } = await ctx.storage.db.transaction().execute((trx) => ensureSession(trx, ctx, workspace, { id: name, ...input }));
  return sessionToJson(row);
}

export async function listSessions(ctx: Ctx, workspace: string, filters: unknown, q: V3Paging) {
  const d = ctx.storage.dialect;
  const cond = compileFilter(filters, SESSION_FILTER, d);
  let base = ctx.storage.db
    .selectFrom('v3_sessions')
    .where('v3_sessions.workspace', '=', workspace)
    .where('v3_sessions.is_active', '=', d.bool(true) as any) as any;
  if (cond) base = base.where(cond);
  return pageQuery(base, 'v3_sessions', ['v3_sessions.created_at', 'v3_sessions.seq'], pagingOf(q), sessionToJson);
}

/** 202: the session turns inactive at once; its messages, memberships and conclusions go in a background job. */
export async function deleteSession(ctx: Ctx, workspace: string, name: string) {
  const { db, dialect: d } = ctx.storage;
  await db.transaction().execute(async (trx) => {
    const r = await d.forUpdate(trx.selectFrom('v3_sessions').select(['name', 'is_active']).where('workspace', '=', workspace).where('name', '=', name)).executeTakeFirst();
    if (!r || !(r.is_active === true || r.is_active === 1)) throw notFound('Session not found');
    await trx.updateTable('v3_sessions').set({ is_active: d.bool(false) }).where('workspace', '=', workspace).where('name', '=', name).execute();
    await ctx.queue.add(DELETE_TASK, { kind: 'session', workspace, session: name }, { jobKey: `v3-delete:session:${workspace}:${name}`, maxAttempts: 10 }, trx);
  });
  ctx.queue.wake();
  return { message: 'Session deleted successfully' };
}

/** A copy under a new id: metadata, configuration, memberships and the messages up to `message_id` (inclusive). */
export async function cloneSession(ctx: Ctx, workspace: string, name: string, messageId: string | undefined) {
  const { db, dialect: d } = ctx.storage;
  const row = await db.transaction().execute(async (trx) => {
    const orig = await readSession(trx, workspace, name);
    if (!orig || !(orig.is_active === true || orig.is_active === 1)) throw notFound('Original session not found');
    let cutoff: number | undefined;
    if (messageId !== undefined) {
      const m = await trx.selectFrom('v3_messages').select('seq').where('id', '=', messageId).where('workspace', '=', workspace).where('session', '=', name).executeTakeFirst();
      if (!m) throw notFound('Session not found');
      cutoff = Number(m.seq);
    }
    const fresh: any = { ...orig, name: nanoid(), is_active: d.bool(true), created_at: d.timestamp(new Date()), seq: nextSeq() };
    fresh.metadata = d.json(meta(orig.metadata));
    fresh.configuration = d.json(meta(orig.configuration));
    await trx.insertInto('v3_sessions').values(fresh).execute();
    let q = trx.selectFrom('v3_messages').selectAll().where('workspace', '=', workspace).where('session', '=', name);
    if (cutoff !== undefined) q = q.where('seq', '<=', cutoff as any);
    const msgs = await q.orderBy('seq').execute();
    const now = d.timestamp(new Date());
    for (let i = 0; i < msgs.length; i += 100) {
      const chunk = msgs.slice(i, i + 100).map((m: any) => ({
        ...m,
        id: nanoid(),
        session: fresh.name,
        metadata: d.json(meta(m.metadata)),
        created_at: now,
        seq: nextSeq(),
      }));
      await trx.insertInto('v3_messages').values(chunk).execute();
    }
    const members = await trx.selectFrom('v3_session_peers').selectAll().where('workspace', '=', workspace).where('session', '=', name).execute();
    for (const sp of members) {
      await trx
        .insertInto('v3_session_peers')
        .values({ ...sp, session: fresh.name, configuration: d.json(meta(sp.configuration)), joined_at: now, left_at: null, seq: nextSeq() })
        .execute();
    }
    return fresh;
  });
  return sessionToJson(row);
}

export async function addSessionPeers(ctx: Ctx, workspace: string, session: string, peers: Record<string, PeerConfig>) {
  return getOrCreateSession(ctx, workspace, { id: session, peers }).then((r) => r.session);
}

/** Makes the given peers the session's members: others leave, the given ones join (created if needed). */
export async function setSessionPeers(ctx: Ctx, workspace: string, session: string, peers: Record<string, PeerConfig>) {
  refuseScopePeers(Object.keys(peers), SCOPE_ROUTES_GUIDANCE);
  const { db, dialect: d } = ctx.storage;
  const row = await db.transaction().execute(async (trx) => {
    const observers = Object.values(peers).filter((c) => c?.observe_others === true).length;
    if (observers > SESSION_OBSERVERS_LIMIT) throw observerError(session, observers);
    await requireSession(trx, workspace, session);
    const names = Object.keys(peers);
    // Scope memberships stay: only the scopes routes end them.
    let leave = trx.updateTable('v3_session_peers').set({ left_at: d.timestamp(new Date()) }).where('workspace', '=', workspace).where('session', '=', session).where('left_at', 'is', null).where('peer', 'not like', 'scope.%');
    if (names.length) leave = leave.where('peer', 'not in', names);
    await leave.execute();
    return (await ensureSession(trx, ctx, workspace, { id: session, peers })).row;
  });
  return sessionToJson(row);
}

export async function removeSessionPeers(ctx: Ctx, workspace: string, session: string, peers: string[]) {
  refuseScopePeers(peers, 'Scope membership is managed via the scopes routes.');
  const { db, dialect: d } = ctx.storage;
  const row = await db.transaction().execute(async (trx) => {
    const r = await requireSession(trx, workspace, session);
    if (peers.length) {
      await trx
        .updateTable('v3_session_peers')
        .set({ left_at: d.timestamp(new Date()) })
        .where('workspace', '=', workspace)
        .where('session', '=', session)
        .where('peer', 'in', [...new Set(peers)])
        .where('left_at', 'is', null)
        .execute();
    }
    return r;
  });
  return sessionToJson(row);
}

export async function listSessionPeers(ctx: Ctx, workspace: string, session: string, q: V3Paging) {
  const base = ctx.storage.db
    .selectFrom('v3_peers')
    .innerJoin('v3_session_peers as sp', (j) => j.onRef('sp.workspace', '=', 'v3_peers.workspace').onRef('sp.peer', '=', 'v3_peers.name'))
    .where('sp.workspace', '=', workspace)
    .where('sp.session', '=', session)
    .where('sp.left_at', 'is', null)
    .where('v3_peers.name', 'not like', 'scope.%') as any;
  return pageQuery(base, 'v3_peers', ['v3_peers.created_at', 'v3_peers.seq'], pagingOf({ ...q, reverse: false }), peerToJson);
}

export async function getSessionPeerConfig(ctx: Ctx, workspace: string, session: string, peer: string) {
  refuseScopePeers([peer], SCOPE_ROUTES_GUIDANCE);
  const db = ctx.storage.db;
  const p = await db.selectFrom('v3_peers').select('name').where('workspace', '=', workspace).where('name', '=', peer).executeTakeFirst();
  if (!p) throw notFound(`Peer ${peer} not found in workspace ${workspace}`);
  const sp = await db.selectFrom('v3_session_peers').select('configuration').where('workspace', '=', workspace).where('session', '=', session).where('peer', '=', peer).executeTakeFirst();
  if (!sp) throw notFound(`Session peer ${peer} not found in session ${session} in workspace ${workspace}`);
  return configOf(meta(sp.configuration) as PeerConfig);
}

/** Sets (merges) a member's config; a peer of the workspace that is not a member gets a membership row with this config. */
export async function setSessionPeerConfig(ctx: Ctx, workspace: string, session: string, peer: string, config: PeerConfig) {
  refuseScopePeers([peer], SCOPE_ROUTES_GUIDANCE);
  const { db, dialect: d } = ctx.storage;
  await db.transaction().execute(async (trx) => {
    await requireSession(trx, workspace, session);
    const p = await trx.selectFrom('v3_peers').select('name').where('workspace', '=', workspace).where('name', '=', peer).executeTakeFirst();
    if (!p) throw notFound(`Peer ${peer} not found in workspace ${workspace}`);
    const sp = await d
      .forUpdate(trx.selectFrom('v3_session_peers').selectAll().where('workspace', '=', workspace).where('session', '=', session).where('peer', '=', peer))
      .executeTakeFirst();
    const current = sp ? meta(sp.configuration) : {};
    if (config.observe_others === true && current.observe_others !== true) {
      const others = await trx
        .selectFrom('v3_session_peers')
        .select('configuration')
        .where('workspace', '=', workspace)
        .where('session', '=', session)
        .where('left_at', 'is', null)
        .where('peer', '<>', peer)
        .where('peer', 'not like', 'scope.%')
        .execute();
      const n = others.filter((r: any) => meta(r.configuration).observe_others === true).length + 1;
      if (n > SESSION_OBSERVERS_LIMIT) throw observerError(session, n);
    }
    const next = { ...current, ...dropNones(config) };
    if (sp) await trx.updateTable('v3_session_peers').set({ configuration: d.json(next) }).where('workspace', '=', workspace).where('session', '=', session).where('peer', '=', peer).execute();
    else {
      await trx
        .insertInto('v3_session_peers')
        .values({ workspace, session, peer, configuration: d.json(next), joined_at: d.timestamp(new Date()), left_at: null, seq: nextSeq() })
        .execute();
    }
  });
}

/** Whether a peer is an active member of a session (joined, not left): what a peer key's member reads need. */
export async function isActiveMember(db: Kysely<any>, workspace: string, session: string, peer: string): Promise<boolean> {
  const r = await db
    .selectFrom('v3_session_peers')
    .select('peer')
    .where('workspace', '=', workspace)
    .where('session', '=', session)
    .where('peer', '=', peer)
    .where('left_at', 'is', null)
    .executeTakeFirst();
  return r !== undefined;
}

/** The sessions a peer is an active member of. */
export async function activeSessionsOf(db: Kysely<any>, workspace: string, peer: string): Promise<string[]> {
  const rows = await db.selectFrom('v3_session_peers').select('session').where('workspace', '=', workspace).where('peer', '=', peer).where('left_at', 'is', null).execute();
  return rows.map((r: any) => String(r.session));
}
