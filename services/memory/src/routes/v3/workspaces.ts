import type { App } from '@svc/kernel';
import type { Ctx } from '../../domain/context.ts';
import { deleteWorkspace, getOrCreateWorkspace, listWorkspaces, updateWorkspace } from '../../domain/v3/workspaces.ts';
import { Accepted, ListBody, ListQuery, PageWorkspace, Workspace, WorkspaceCreate, WorkspaceParams, WorkspaceUpdate } from '../../schemas/v3.ts';
import { checkWorkspaceCreate } from '../../http/v3-auth.ts';
import { optionalBody, V3, v3op, W } from './common.ts';

export function v3WorkspaceRoutes(app: App, ctx: Ctx): void {
  app.post(
    `${V3}/workspaces`,
    { schema: { ...v3op('workspaces', 'Get Or Create Workspace', Workspace, 200, 'Get a Workspace by ID, creating it if it does not exist (201 when created).'), body: WorkspaceCreate } },
    async (req, reply) => {
      checkWorkspaceCreate(req, req.body.id);
      const r = await getOrCreateWorkspace(ctx, req.body);
      return reply.code(r.created ? 201 : 200).send(r.workspace);
    },
  );
  app.post(
    `${V3}/workspaces/list`,
    { preValidation: optionalBody, schema: { ...v3op('workspaces', 'Get All Workspaces', PageWorkspace, 200, 'All Workspaces, paginated, with optional filters.'), querystring: ListQuery, body: ListBody('WorkspaceGet') } },
    (req) => listWorkspaces(ctx, req.body?.filters, req.query),
  );
  app.put(
    W,
    { schema: { ...v3op('workspaces', 'Update Workspace', Workspace, 200, 'Update Workspace metadata (replaced) and/or configuration (merged); created if missing.'), params: WorkspaceParams, body: WorkspaceUpdate } },
    (req) => updateWorkspace(ctx, req.params.workspace_id, req.body),
  );
  app.delete(
    W,
    { schema: { ...v3op('workspaces', 'Delete Workspace', Accepted, 202, 'Delete a Workspace in the background; 409 while it has active sessions.'), params: WorkspaceParams } },
    async (req, reply) => reply.code(202).send(await deleteWorkspace(ctx, req.params.workspace_id)),
  );
}
