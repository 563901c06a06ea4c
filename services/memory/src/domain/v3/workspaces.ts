import type { Kysely } from 'kysely';
import type { Ctx } from '../context.ts';
import { nextSeq, type Meta } from '../values.ts';
import { compileFilter, WORKSPACE_FILTER } from './filter.ts';
import { pageQuery, pagingOf, type V3Paging } from './paging.ts';
import { checkNewName, conflict, meta, notFound } from './util.ts';
import { workspaceToJson } from './wire.ts';

export const DELETE_TASK = 'memory_v3_delete';

/** pydantic's `model_dump(exclude_none=True)` of a configuration object: unset (null) settings are dropped, nested too. */
export function dropNones(v: unknown): Meta {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return {};
  const out: Meta = {};
  for (const [k, x] of Object.entries(v)) {
    if (x === null || x === undefined) continue;
    out[k] = x && typeof x === 'object' && !Array.isArray(x) ? dropNones(x) : x;
  }
  return out;
}

/** Inserts the workspace unless it exists (`on conflict do nothing`, so concurrent creators agree). True when this call created it. */
export async function ensureWorkspace(db: Kysely<any>, ctx: Ctx, name: string, input: { metadata?: Meta | null; configuration?: unknown } = {}): Promise<boolean> {
  const d = ctx.storage.dialect;
  const existing = await db.selectFrom('v3_workspaces').select('name').where('name', '=', name).executeTakeFirst();
  if (existing) return false;
  checkNewName('Workspace', [name]);
  const r = await db
    .insertInto('v3_workspaces')
    .values({
      name,
      metadata: d.json(input.metadata ?? {}),
      configuration: d.json(dropNones(input.configuration)),
      created_at: d.timestamp(new Date()),
      seq: nextSeq(),
    })
    .onConflict((oc) => oc.column('name').doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function readWorkspace(db: Kysely<any>, name: string) {
  return db.selectFrom('v3_workspaces').selectAll().where('name', '=', name).executeTakeFirst();
}

export async function requireWorkspace(db: Kysely<any>, name: string) {
  const r = await readWorkspace(db, name);
  if (!r) throw notFound(`Workspace ${name} not found`);
  return r;
}

/** Get-or-create: an existing workspace is returned unchanged (metadata in the body is not applied), as the reference. */
export async function getOrCreateWorkspace(ctx: Ctx, input: { id: string; metadata?: Meta | null; configuration?: unknown }) {
  const created = await ensureWorkspace(ctx.storage.db, ctx, input.id, input);
  const r = await requireWorkspace(ctx.storage.db, input.id);
  return { created, workspace: workspaceToJson(r) };
}

/** Creates the workspace if needed; metadata is replaced, configuration keys are merged. */
export async function updateWorkspace(ctx: Ctx, name: string, input: { metadata?: Meta | null; configuration?: unknown }) {
  const { db, dialect: d } = ctx.storage;
  return db.transaction().execute(async (trx) => {
    await ensureWorkspace(trx, ctx, name, { metadata: input.metadata ?? {} });
    const r = await d.forUpdate(trx.selectFrom('v3_workspaces').selectAll().where('name', '=', name)).executeTakeFirstOrThrow();
    const set: Record<string, unknown> = {};
    if (input.metadata !== undefined && input.metadata !== null) set.metadata = d.json(input.metadata);
    if (input.configuration !== undefined && input.configuration !== null) {
      set.configuration = d.json({ ...meta(r.configuration), ...dropNones(input.configuration) });
    }
    if (Object.keys(set).length) await trx.updateTable('v3_workspaces').set(set).where('name', '=', name).execute();
    return workspaceToJson({ ...r, ...set });
  });
}

export async function listWorkspaces(ctx: Ctx, filters: unknown, q: V3Paging) {
  const cond = compileFilter(filters, WORKSPACE_FILTER, ctx.storage.dialect);
  let base = ctx.storage.db.selectFrom('v3_workspaces') as any;
  if (cond) base = base.where(cond);
  return pageQuery(base, 'v3_workspaces', ['v3_workspaces.created_at', 'v3_workspaces.seq'], pagingOf(q), workspaceToJson);
}

/** 202: refused (409) while active sessions remain; otherwise everything of the workspace is removed by a background job. */
export async function deleteWorkspace(ctx: Ctx, name: string) {
  const { db, dialect: d } = ctx.storage;
  await db.transaction().execute(async (trx) => {
    const r = await d.forUpdate(trx.selectFrom('v3_workspaces').select('name').where('name', '=', name)).executeTakeFirst();
    if (!r) throw notFound(`Workspace ${name} not found`);
    const active = await trx
      .selectFrom('v3_sessions')
      .select('name')
      .where('workspace', '=', name)
      .where('is_active', '=', d.bool(true) as any)
      .limit(1)
      .executeTakeFirst();
    if (active) throw conflict(`Cannot delete workspace '${name}': active session(s) remain. Delete all sessions first.`);
    await ctx.queue.add(DELETE_TASK, { kind: 'workspace', workspace: name }, { jobKey: `v3-delete:workspace:${name}`, maxAttempts: 10 }, trx);
  });
  ctx.queue.wake();
  return { message: 'Workspace deletion accepted' };
}
