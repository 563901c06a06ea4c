import type { Ctx } from './context.ts';
import { findCollection } from './collections.ts';
import { badRequest, D, notFound } from './errors.ts';
import { listPage, pageOf, type Paging } from './paging.ts';
import { formatTimestamp, newId, nextSeq, readJson, type Meta } from './values.ts';

/** The Document wire shape; also used by the search routes for /query results. */
export function documentToJson(r: any) {
  const m = readJson(r.metadata);
  return { content: r.content, id: r.id, h_metadata: m, metadata: m, created_at: formatTimestamp(r.created_at), collection_id: r.collection_id };
}

export async function listDocuments(ctx: Ctx, appId: string, userId: string, collectionId: string, p: Paging) {
  const { db, dialect: d } = ctx.storage;
  if (!(await findCollection(db, appId, userId, collectionId))) return pageOf([], 0, p);
  return listPage(db, d, 'documents', (qb) => qb.where('documents.collection_id', '=', collectionId), p, documentToJson);
}

export async function createDocument(ctx: Ctx, appId: string, userId: string, collectionId: string, input: { content: string; metadata?: Meta | null }) {
  const { db, dialect: d } = ctx.storage;
  const meta = input.metadata ?? {};
  const row = { id: newId(), collection_id: collectionId, content: input.content, metadata: d.json(meta), created_at: d.timestamp(new Date()), seq: nextSeq() };
  await db.transaction().execute(async (trx) => {
    if (!(await findCollection(trx, appId, userId, collectionId))) throw notFound(D.collection);
    await trx.insertInto('documents').values(row).execute();
    await ctx.search.indexDocument(trx, { id: row.id, collection_id: collectionId, content: input.content, metadata: meta });
  });
  return documentToJson(row);
}

async function findDocument(db: Ctx['storage']['db'], appId: string, userId: string, collectionId: string, documentId: string) {
  if (!(await findCollection(db, appId, userId, collectionId))) return undefined;
  return db.selectFrom('documents').selectAll().where('id', '=', documentId).where('collection_id', '=', collectionId).executeTakeFirst();
}

export async function getDocument(ctx: Ctx, appId: string, userId: string, collectionId: string, documentId: string) {
  const r = await findDocument(ctx.storage.db, appId, userId, collectionId, documentId);
  if (!r) throw notFound(D.document);
  return documentToJson(r);
}

/** New content is re-indexed and resets created_at (reference behaviour); metadata is replaced. */
export async function updateDocument(
  ctx: Ctx,
  appId: string,
  userId: string,
  collectionId: string,
  documentId: string,
  input: { content?: string | null; metadata?: Meta | null },
) {
  const hasContent = input.content !== undefined && input.content !== null;
  const hasMeta = input.metadata !== undefined && input.metadata !== null;
  if (!hasContent && !hasMeta) throw badRequest(D.documentBothNone);
  const { db, dialect: d } = ctx.storage;
  return db.transaction().execute(async (trx) => {
    const r = await findDocument(trx, appId, userId, collectionId, documentId);
    if (!r) throw notFound(D.document);
    const set: Record<string, unknown> = {};
    if (hasContent) {
      set.content = input.content;
      set.created_at = d.timestamp(new Date());
    }
    if (hasMeta) set.metadata = d.json(input.metadata);
    await trx.updateTable('documents').set(set).where('id', '=', documentId).execute();
    const next = { ...r, ...set };
    await ctx.search.indexDocument(trx, { id: documentId, collection_id: collectionId, content: next.content, metadata: readJson(next.metadata) });
    return documentToJson(next);
  });
}

export async function deleteDocument(ctx: Ctx, appId: string, userId: string, collectionId: string, documentId: string) {
  await ctx.storage.db.transaction().execute(async (trx) => {
    const r = await findDocument(trx, appId, userId, collectionId, documentId);
    if (!r) throw notFound(D.document);
    await ctx.search.removeDocuments(trx, [documentId]);
    await trx.deleteFrom('documents').where('id', '=', documentId).execute();
  });
  return { message: 'Document deleted successfully' };
}
