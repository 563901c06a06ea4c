import type { App } from '@svc/kernel';
import type { Ctx } from '../../domain/context.ts';
import { createConclusions, deleteConclusion, getConclusion, listConclusions, queryConclusions } from '../../domain/v3/conclusions.ts';
import { Conclusion, ConclusionBatchCreate, ConclusionList, ConclusionParams, ConclusionQuery, ListBody, ListQuery, PageConclusion, WorkspaceParams } from '../../schemas/v3.ts';
import { optionalBody, v3op, W } from './common.ts';

export function v3ConclusionRoutes(app: App, ctx: Ctx): void {
  app.post(
    `${W}/conclusions`,
    { schema: { ...v3op('conclusions', 'Create Conclusions', ConclusionList, 201, 'Create 1-100 Conclusions (observer, observed, optional session).'), params: WorkspaceParams, body: ConclusionBatchCreate } },
    async (req, reply) => reply.code(201).send(await createConclusions(ctx, req.params.workspace_id, req.body.conclusions)),
  );
  app.post(
    `${W}/conclusions/list`,
    { preValidation: optionalBody, schema: { ...v3op('conclusions', 'List Conclusions', PageConclusion, 200, 'Conclusions of a Workspace, paginated, with optional filters.'), params: WorkspaceParams, querystring: ListQuery, body: ListBody('ConclusionGet') } },
    (req) => listConclusions(ctx, req.params.workspace_id, req.body?.filters, req.query),
  );
  app.post(
    `${W}/conclusions/query`,
    { schema: { ...v3op('conclusions', 'Query Conclusions', ConclusionList, 200, 'Semantic search of the conclusions of an observer about an observed peer (named in filters).'), params: WorkspaceParams, body: ConclusionQuery } },
    (req) => queryConclusions(ctx, req.params.workspace_id, req.body),
  );
  app.get(
    `${W}/conclusions/:conclusion_id`,
    { schema: { ...v3op('conclusions', 'Get Conclusion', Conclusion, 200, 'One Conclusion.'), params: ConclusionParams } },
    (req) => getConclusion(ctx, req.params.workspace_id, req.params.conclusion_id),
  );
  app.delete(
    `${W}/conclusions/:conclusion_id`,
    { schema: { ...v3op('conclusions', 'Delete Conclusion', undefined, 204, 'Delete one Conclusion.'), params: ConclusionParams } },
    async (req, reply) => {
      await deleteConclusion(ctx, req.params.workspace_id, req.params.conclusion_id);
      return reply.code(204).send();
    },
  );
}
