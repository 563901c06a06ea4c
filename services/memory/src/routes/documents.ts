import type { App } from '@svc/kernel';
import type { Ctx } from '../domain/context.ts';
import { createDocument, deleteDocument, getDocument, listDocuments, updateDocument } from '../domain/documents.ts';
import { pagingFrom } from '../domain/paging.ts';
import { DetailMessage, listQuery } from '../schemas/common.ts';
import { Document, DocumentCreate, DocumentUpdate, PageDocument } from '../schemas/resources.ts';
import { C, CollectionParams, DocumentParams } from '../schemas/params.ts';
import { op } from './common.ts';

const D = `${C}/:collection_id/documents`;

export function documentRoutes(app: App, ctx: Ctx): void {
  app.get(D, { schema: { ...op('documents', 'Get Documents', PageDocument), params: CollectionParams, querystring: listQuery() } }, (req) =>
    listDocuments(ctx, req.params.app_id, req.params.user_id, req.params.collection_id, pagingFrom(req.query)),
  );
  app.post(D, { schema: { ...op('documents', 'Create Document', Document), params: CollectionParams, body: DocumentCreate } }, (req) =>
    createDocument(ctx, req.params.app_id, req.params.user_id, req.params.collection_id, req.body),
  );
  // Not registered in v0.0.5 (a missing decorator); every SDK calls it, v0.0.6+ has it.
  app.get(`${D}/:document_id`, { schema: { ...op('documents', 'Get Document', Document), params: DocumentParams } }, (req) =>
    getDocument(ctx, req.params.app_id, req.params.user_id, req.params.collection_id, req.params.document_id),
  );
  app.put(`${D}/:document_id`, { schema: { ...op('documents', 'Update Document', Document), params: DocumentParams, body: DocumentUpdate } }, (req) =>
    updateDocument(ctx, req.params.app_id, req.params.user_id, req.params.collection_id, req.params.document_id, req.body),
  );
  app.delete(`${D}/:document_id`, { schema: { ...op('documents', 'Delete Document', DetailMessage), params: DocumentParams } }, (req) =>
    deleteDocument(ctx, req.params.app_id, req.params.user_id, req.params.collection_id, req.params.document_id),
  );
}
