import type { Kysely } from 'kysely';
import { canonicalUuid } from '@svc/kernel';
import type { Ctx } from './context.ts';
import { conflictOnUnique, D, notFound } from './errors.ts';
import { listPage, type Paging } from './paging.ts';
import { formatTimestamp, newId, nextSeq, readJson, type Meta } from './values.ts';

/** The reference's User has no `name` (added in v0.0.8); we send it as a harmless extra. */
export function userToJson(r: any) {
  const m = readJson(r.metadata);
  return { id: r.id, app_id: r.app_id, created_at: formatTimestamp(r.created_at), h_metadata: m, metadata: m, name: r.name };
}

async function appExists(ctx: Ctx, appId: string): Promise<boolean> {
  return !!(await ctx.storage.db.selectFrom('apps').select('id').where('id', '=', appId).executeTakeFirst());
}

export async function createUser(ctx: Ctx, appId: string, input: { name: string; metadata?: Meta | null }) {
  const { db, dialect: d } = ctx.storage;
  if (!(await appExists(ctx, appId))) throw notFound(D.app);
  const row = { id: newId(), app_id: appId, name: input.name, metadata: d.json(input.metadata ?? {}), created_at: d.timestamp(new Date()), seq: nextSeq() };
  await conflictOnUnique(D.userExists, () => db.insertInto('users').values(row).execute());
  return userToJson(row);
}

export function listUsers(ctx: Ctx, appId: string, p: Paging) {
  return listPage(ctx.storage.db, ctx.storage.dialect, 'users', (qb) => qb.where('users.app_id', '=', appId), p, userToJson);
}

/** By name; a UUID-shaped name that is no user's name also finds the user with that id (later Honcho's GET by id). */
export async function getUserByName(ctx: Ctx, appId: string, name: string) {
  const db = ctx.storage.db;
  let r = await db.selectFrom('users').selectAll().where('app_id', '=', appId).where('name', '=', name).executeTakeFirst();
  const id = r ? undefined : canonicalUuid(name);
  if (id) r = await db.selectFrom('users').selectAll().where('app_id', '=', appId).where('id', '=', id).executeTakeFirst();
  if (!r) throw notFound(D.user);
  return userToJson(r);
}

export async function getUser(ctx: Ctx, appId: string, userId: string) {
  const r = await ctx.storage.db.selectFrom('users').selectAll().where('app_id', '=', appId).where('id', '=', userId).executeTakeFirst();
  if (!r) throw notFound(D.user);
  return userToJson(r);
}

export async function getOrCreateUser(ctx: Ctx, appId: string, name: string) {
  const r = await ctx.storage.db.selectFrom('users').selectAll().where('app_id', '=', appId).where('name', '=', name).executeTakeFirst();
  if (r) return userToJson(r);
  try {
    return await createUser(ctx, appId, { name });
  } catch (err) {
    // Lost a race with a concurrent creator: the row exists now.
    if ((err as any)?.statusCode === 406) return getUserByName(ctx, appId, name);
    throw err;
  }
}

export async function updateUser(ctx: Ctx, appId: string, userId: string, input: { name?: string | null; metadata?: Meta | null }) {
  const { db, dialect: d } = ctx.storage;
  const set: Record<string, unknown> = {};
  if (input.name !== undefined && input.name !== null) set.name = input.name;
  if (input.metadata !== undefined && input.metadata !== null) set.metadata = d.json(input.metadata);
  if (Object.keys(set).length) {
    const r = await conflictOnUnique(D.userExists, () =>
      db.updateTable('users').set(set).where('id', '=', userId).where('app_id', '=', appId).executeTakeFirst(),
    );
    if (Number(r.numUpdatedRows) === 0) throw notFound(D.user);
  }
  return getUser(ctx, appId, userId);
}

/** Whether `userId` is a user of `appId` (every lookup below a user is scoped through this). */
export async function userInApp(ctx: Ctx, appId: string, userId: string): Promise<boolean> {
  return !!(await ctx.storage.db.selectFrom('users').select('id').where('id', '=', userId).where('app_id', '=', appId).executeTakeFirst());
}

/** The rows of `table` (which has a user_id) that belong to the user of the app; callers narrow it to one row. */
export function userOwnedRows(db: Kysely<any>, table: 'sessions' | 'collections', appId: string, userId: string) {
  return db
    .selectFrom(table)
    .innerJoin('users', 'users.id', `${table}.user_id`)
    .selectAll(table)
    .where(`${table}.user_id`, '=', userId)
    .where('users.app_id', '=', appId);
}
