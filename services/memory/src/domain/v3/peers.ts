import type { Kysely } from 'kysely';
import type { Ctx } from '../context.ts';
import { nextSeq, type Meta } from '../values.ts';
import { compileFilter, PEER_FILTER, SESSION_FILTER } from './filter.ts';
import { pageQuery, pagingOf, type V3Paging } from './paging.ts';
import { checkNewName, notFound, validation } from './util.ts';
import { peerToJson, sessionToJson } from './wire.ts';
import { ensureWorkspace } from './workspaces.ts';

export interface PeerSpec {
  id: string;
  metadata?: Meta | null;
  configuration?: Meta | null;
}

/**
 * Get-or-create of several peers (and their workspace) in the caller's
 * transaction. Existing peers take metadata/configuration given here (the
 * reference's `get_or_create_peers`); new ones are inserted with
 * `on conflict do nothing`, so concurrent creators never collide. True when
 * any peer was created.
 */
export async function ensurePeers(db: Kysely<any>, ctx: Ctx, workspace: string, peers: PeerSpec[]): Promise<boolean> {
  if (peers.some((p) => p.id.includes('\u0000'))) throw validation('Peer name(s) must not contain NUL (0x00) bytes');
  await ensureWorkspace(db, ctx, workspace);
  const d = ctx.storage.dialect;
  const names = [...new Set(peers.map((p) => p.id))];
  const existing = new Map<string, any>();
  for (let i = 0; i < names.length; i += 500) {
    const rows = await db.selectFrom('v3_peers').selectAll().where('workspace', '=', workspace).where('name', 'in', names.slice(i, i + 500)).execute();
    for (const r of rows) existing.set(r.name, r);
  }
  const fresh = names.filter((n) => !existing.has(n));
  if (fresh.length) checkNewName('Peer', fresh);
  let created = false;
  const byName = new Map(peers.map((p) => [p.id, p]));
  for (const name of names) {
    const spec = byName.get(name)!;
    const old = existing.get(name);
    if (old) {
      const set: Record<string, unknown> = {};
      if (spec.metadata != null) set.metadata = d.json(spec.metadata);
      if (spec.configuration != null) set.configuration = d.json(spec.configuration);
      if (Object.keys(set).length) await db.updateTable('v3_peers').set(set).where('workspace', '=', workspace).where('name', '=', name).execute();
      continue;
    }
    const r = await db
      .insertInto('v3_peers')
      .values({
        workspace,
        name,
        metadata: d.json(spec.metadata ?? {}),
        configuration: d.json(spec.configuration ?? {}),
        created_at: d.timestamp(new Date()),
        seq: nextSeq(),
      })
      .onConflict((oc) => oc.columns(['workspace', 'name']).doNothing())
      .executeTakeFirst();
    if (Number(r.numInsertedOrUpdatedRows ?? 0) > 0) created = true;
    else if (spec.metadata != null || spec.configuration != null) {
      // Created by a concurrent request a moment ago: apply this call's values as for an existing peer.
      const set: Record<string, unknown> = {};
      if (spec.metadata != null) set.metadata = d.json(spec.metadata);
      if (spec.configuration != null) set.configuration = d.json(spec.configuration);
      await db.updateTable('v3_peers').set(set).where('workspace', '=', workspace).where('name', '=', name).execute();
    }
  }
  return created;
}

export async function readPeer(db: Kysely<any>, workspace: string, name: string) {
  return db.selectFrom('v3_peers').selectAll().where('workspace', '=', workspace).where('name', '=', name).executeTakeFirst();
}

export async function requirePeer(db: Kysely<any>, workspace: string, name: string) {
  const r = await readPeer(db, workspace, name);
  if (!r) throw notFound(`Peer ${name} not found in workspace ${workspace}`);
  return r;
}

export async function getOrCreatePeer(ctx: Ctx, workspace: string, spec: PeerSpec) {
  const created = await ctx.storage.db.transaction().execute((trx) => ensurePeers(trx, ctx, workspace, [spec]));
  return { created, peer: peerToJson(await requirePeer(ctx.storage.db, workspace, spec.id)) };
}

/** Creates the peer if needed, then replaces metadata and/or configuration when given; a scope's peer is not this route's. */
export async function updatePeer(ctx: Ctx, workspace: string, name: string, input: { metadata?: Meta | null; configuration?: Meta | null }) {
  if (name.startsWith('scope.')) throw validation(`Peer '${name}' is a scope. Use the scopes routes to manage scopes.`);
  return ctx.storage.db.transaction().execute(async (trx) => {
    await ensurePeers(trx, ctx, workspace, [{ id: name, metadata: input.metadata, configuration: input.configuration }]);
    return peerToJson(await requirePeer(trx, workspace, name));
  });
}

export async function listPeers(ctx: Ctx, workspace: string, filters: unknown, q: V3Paging, kind?: string | null) {
  const cond = compileFilter(filters, PEER_FILTER, ctx.storage.dialect);
  let base = ctx.storage.db.selectFrom('v3_peers').where('v3_peers.workspace', '=', workspace) as any;
  // Scope peers (`scope.<name>`, scopes.ts) are left out unless asked for.
  if (kind == null) base = base.where('v3_peers.name', 'not like', 'scope.%');
  else if (kind === 'scope') base = base.where('v3_peers.name', 'like', 'scope.%');
  if (cond) base = base.where(cond);
  return pageQuery(base, 'v3_peers', ['v3_peers.created_at', 'v3_peers.seq'], pagingOf(q), peerToJson);
}

/** Sessions the peer has ever joined (the reference joins session_peers without regard to left_at). */
export async function listPeerSessions(ctx: Ctx, workspace: string, peer: string, filters: unknown, q: V3Paging) {
  const cond = compileFilter(filters, SESSION_FILTER, ctx.storage.dialect);
  let base = ctx.storage.db
    .selectFrom('v3_sessions')
    .innerJoin('v3_session_peers as sp', (j) => j.onRef('sp.workspace', '=', 'v3_sessions.workspace').onRef('sp.session', '=', 'v3_sessions.name'))
    .where('sp.peer', '=', peer)
    .where('v3_sessions.workspace', '=', workspace) as any;
  if (cond) base = base.where(cond);
  return pageQuery(base, 'v3_sessions', ['v3_sessions.created_at', 'v3_sessions.seq'], pagingOf(q), sessionToJson);
}
