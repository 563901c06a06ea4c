import type { App } from '@svc/kernel';
import type { Ctx } from '../domain/context.ts';
import { createCollection, deleteCollection, getCollectionByName, listCollections, updateCollection } from '../domain/collections.ts';
import { pagingFrom } from '../domain/paging.ts';
import { DetailMessage, listQuery } from '../schemas/common.ts';
import { Collection, CollectionCreate, CollectionUpdate, PageCollection } from '../schemas/resources.ts';
import { C, CollectionNameParams, CollectionParams, UserParams } from '../schemas/params.ts';
import { op } from './common.ts';

export function collectionRoutes(app: App, ctx: Ctx): void {
  app.get(C, { schema: { ...op('collections', 'Get Collections', PageCollection), params: UserParams, querystring: listQuery() } }, (req) =>
    listCollections(ctx, req.params.app_id, req.params.user_id, pagingFrom(req.query)),
  );
  app.post(C, { schema: { ...op('collections', 'Create Collection', Collection), params: UserParams, body: CollectionCreate } }, (req) =>
    createCollection(ctx, req.params.app_id, req.params.user_id, req.body),
  );
  app.get(`${C}/:name`, { schema: { ...op('collections', 'Get Collection By Name', Collection), params: CollectionNameParams } }, (req) =>
    getCollectionByName(ctx, req.params.app_id, req.params.user_id, req.params.name),
  );
  app.put(`${C}/:collection_id`, { schema: { ...op('collections', 'Update Collection', Collection), params: CollectionParams, body: CollectionUpdate } }, (req) =>
    updateCollection(ctx, req.params.app_id, req.params.user_id, req.params.collection_id, req.body),
  );
  app.delete(`${C}/:collection_id`, { schema: { ...op('collections', 'Delete Collection', DetailMessage), params: CollectionParams } }, (req) =>
    deleteCollection(ctx, req.params.app_id, req.params.user_id, req.params.collection_id),
  );
}
