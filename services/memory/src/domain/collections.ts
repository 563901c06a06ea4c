import type { Kysely } from 'kysely';
import { canonicalUuid } from '@svc/kernel';
import type { Ctx } from './context.ts';
import { conflict, conflictOnUnique, D, notFound } from './errors.ts';
import { listPage, pageOf, type Paging } from './paging.ts';
import { userInApp, userOwnedRows } from './users.ts';
import { formatTimestamp, isForeignKeyViolation, isUniqueViolation, newId, nextSeq, readJson, type Meta } from './values.ts';

/** The deriver's collection of facts about the user; clients may not create or take the name. */
export const RESERVED_COLLECTION = 'honcho';

export function collectionToJson(r: any) {
  const m = readJson(r.metadata);
  return { id: r.id, name: r.name, user_id: r.user_id, h_metadata: m, metadata: m, created_at: formatTimestamp(r.created_at) };
}

/** The collection row when it belongs to the user of the app, else undefined. */
export async function findCollection(db: Kysely<any>, appId: string, userId: string, collectionId: string): Promise<any | undefined> {
  return userOwnedRows(db, 'collections', appId, userId).where('collections.id', '=', collectionId).executeTakeFirst();
}

export async function listCollections(ctx: Ctx, appId: string, userId: string, p: Paging) {
  if (!(await userInApp(ctx, appId, userId))) return pageOf([], 0, p);
  return listPage(ctx.storage.db, ctx.storage.dialect, 'collections', (qb) => qb.where('collections.user_id', '=', userId), p, collectionToJson);
}

/** As in the reference, a missing user is reported like a name clash (406). */
export async function createCollection(ctx: Ctx, appId: string, userId: string, input: { name: string; metadata?: Meta | null }) {
  if (input.name === RESERVED_COLLECTION) throw conflict(D.collectionReserved);
  if (!(await userInApp(ctx, appId, userId))) throw conflict(D.collectionExists);
  const { db, dialect: d } = ctx.storage;
  const row = { id: newId(), user_id: userId, name: input.name, metadata: d.json(input.metadata ?? {}), created_at: d.timestamp(new Date()), seq: nextSeq() };
  try {
    await db.insertInto('collections').values(row).execute();
  } catch (err) {
    if (isUniqueViolation(err) || isForeignKeyViolation(err)) throw conflict(D.collectionExists);
    throw err;
  }
  return collectionToJson(row);
}

/** By name; a UUID-shaped name that is no collection's name also finds the collection with that id. */
export async function getCollectionByName(ctx: Ctx, appId: string, userId: string, name: string) {
  const db = ctx.storage.db;
  let r = await userOwnedRows(db, 'collections', appId, userId).where('collections.name', '=', name).executeTakeFirst();
  const id = r ? undefined : canonicalUuid(name);
  if (id) r = await findCollection(db, appId, userId, id);
  if (!r) throw notFound(D.collection);
  return collectionToJson(r);
}

/** Reference behaviour: a missing collection is a 406 with the name-clash text (its ValueError was caught as such). */
export async function updateCollection(ctx: Ctx, appId: string, userId: string, collectionId: string, input: { name: string; metadata?: Meta | null }) {
  if (input.name === RESERVED_COLLECTION) throw conflict(D.collectionReserved);
  const { db, dialect: d } = ctx.storage;
  const r = await findCollection(db, appId, userId, collectionId);
  if (!r) throw conflict(D.collectionExists);
  const set: Record<string, unknown> = { name: input.name };
  if (input.metadata !== undefined && input.metadata !== null) set.metadata = d.json(input.metadata);
  await conflictOnUnique(D.collectionExists, () => db.updateTable('collections').set(set).where('id', '=', collectionId).execute());
  return collectionToJson({ ...r, ...set, metadata: input.metadata ?? r.metadata });
}

/** Hard delete, cascading to the documents and their index entries. */
export async function deleteCollection(ctx: Ctx, appId: string, userId: string, collectionId: string) {
  await ctx.storage.db.transaction().execute(async (trx) => {
    const r = await findCollection(trx, appId, userId, collectionId);
    if (!r) throw notFound(D.collection);
    const ids = (await trx.selectFrom('documents').select('id').where('collection_id', '=', collectionId).execute()).map((x) => x.id as string);
    if (ids.length) await ctx.search.removeDocuments(trx, ids);
    await trx.deleteFrom('documents').where('collection_id', '=', collectionId).execute();
    await trx.deleteFrom('collections').where('id', '=', collectionId).execute();
  });
  return { message: 'Collection deleted successfully' };
}
