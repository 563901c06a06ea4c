import type { Ctx } from './context.ts';
import { conflictOnUnique, D, notFound } from './errors.ts';
import { formatTimestamp, newId, nextSeq, readJson, type Meta } from './values.ts';

export function appToJson(r: any) {
  const m = readJson(r.metadata);
  return { id: r.id, name: r.name, h_metadata: m, metadata: m, created_at: formatTimestamp(r.created_at) };
}

export async function createApp(ctx: Ctx, input: { name: string; metadata?: Meta | null }) {
  const { db, dialect: d } = ctx.storage;
  const row = { id: newId(), name: input.name, metadata: d.json(input.metadata ?? {}), created_at: d.timestamp(new Date()), seq: nextSeq() };
  await conflictOnUnique(D.appExists, () => db.insertInto('apps').values(row).execute());
  return appToJson(row);
}

export async function getApp(ctx: Ctx, id: string) {
  const r = await ctx.storage.db.selectFrom('apps').selectAll().where('id', '=', id).executeTakeFirst();
  if (!r) throw notFound(D.app);
  return appToJson(r);
}

export async function getAppByName(ctx: Ctx, name: string) {
  const r = await ctx.storage.db.selectFrom('apps').selectAll().where('name', '=', name).executeTakeFirst();
  if (!r) throw notFound(D.app);
  return appToJson(r);
}

export async function getOrCreateApp(ctx: Ctx, name: string) {
  const r = await ctx.storage.db.selectFrom('apps').selectAll().where('name', '=', name).executeTakeFirst();
  if (r) return appToJson(r);
  try {
    return await createApp(ctx, { name });
  } catch (err) {
    // Lost a race with a concurrent creator: the row exists now.
    if ((err as any)?.statusCode === 406) return getAppByName(ctx, name);
    throw err;
  }
}

/** Metadata is replaced when given; the name is applied too (the reference silently dropped it). */
export async function updateApp(ctx: Ctx, id: string, input: { name?: string | null; metadata?: Meta | null }) {
  const { db, dialect: d } = ctx.storage;
  const set: Record<string, unknown> = {};
  if (input.name !== undefined && input.name !== null) set.name = input.name;
  if (input.metadata !== undefined && input.metadata !== null) set.metadata = d.json(input.metadata);
  if (Object.keys(set).length) {
    const r = await conflictOnUnique(D.appExists, () => db.updateTable('apps').set(set).where('id', '=', id).executeTakeFirst());
    if (Number(r.numUpdatedRows) === 0) throw notFound(D.app);
  }
  return getApp(ctx, id);
}
