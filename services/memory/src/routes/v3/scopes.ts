import type { App } from '@svc/kernel';
import type { Ctx } from '../../domain/context.ts';
import { addScopeSessions, getOrCreateScope, getScope, listScopes, listScopeSessions, removeScopeSession, scopeStatus } from '../../domain/v3/scopes.ts';
import { ListQuery, PageScope, PageSession, Scope, ScopeCreate, ScopeParams, ScopeSessionParams, ScopeSessionsAdd, ScopeStatus, WorkspaceParams } from '../../schemas/v3.ts';
import { v3op, W } from './common.ts';

const SC = `${W}/scopes/:scope_id`;

/** Scopes (SDK 2.5's `honcho.scope()`; the reference's `src/routers/scopes.py`): named sets of sessions that bound recall. */
export function v3ScopeRoutes(app: App, ctx: Ctx): void {
  app.post(
    `${W}/scopes`,
    { schema: { ...v3op('scopes', 'Get Or Create Scope', Scope, 200, 'Get a Scope by ID or create it (201 when created); metadata given replaces that of an existing scope.'), params: WorkspaceParams, body: ScopeCreate } },
    async (req, reply) => {
      const r = await getOrCreateScope(ctx, req.params.workspace_id, req.body);
      return reply.code(r.created ? 201 : 200).send(r.scope);
    },
  );
  app.post(
    `${W}/scopes/list`,
    { schema: { ...v3op('scopes', 'Get Scopes', PageScope, 200, 'All Scopes of a Workspace, paginated, oldest first.'), params: WorkspaceParams, querystring: ListQuery } },
    (req) => listScopes(ctx, req.params.workspace_id, req.query),
  );
  app.get(SC, { schema: { ...v3op('scopes', 'Get Scope', Scope, 200, 'A single Scope.'), params: ScopeParams } }, (req) => getScope(ctx, req.params.workspace_id, req.params.scope_id));
  app.post(
    `${SC}/sessions`,
    {
      schema: {
        ...v3op('scopes', 'Add Sessions To Scope', undefined, 204, 'Add existing Sessions to a Scope (404 naming those that do not exist); a session with messages is backfilled into the scope in the background (see status).'),
        params: ScopeParams,
        body: ScopeSessionsAdd,
      },
    },
    async (req, reply) => {
      await addScopeSessions(ctx, req.params.workspace_id, req.params.scope_id, req.body.session_ids);
      return reply.code(204).send();
    },
  );
  app.delete(
    `${SC}/sessions/:session_id`,
    { schema: { ...v3op('scopes', 'Remove Session From Scope', undefined, 204, "Remove a Session from a Scope; what the scope concluded from it is removed in the background and its cards rebuilt."), params: ScopeSessionParams } },
    async (req, reply) => {
      await removeScopeSession(ctx, req.params.workspace_id, req.params.scope_id, req.params.session_id);
      return reply.code(204).send();
    },
  );
  app.post(
    `${SC}/sessions/list`,
    { schema: { ...v3op('scopes', 'Get Scope Sessions', PageSession, 200, 'The member Sessions of a Scope, longest-standing member first (newest first with reverse).'), params: ScopeParams, querystring: ListQuery } },
    (req) => listScopeSessions(ctx, req.params.workspace_id, req.params.scope_id, req.query),
  );
  app.get(
    `${SC}/status`,
    { schema: { ...v3op('scopes', 'Get Scope Status', ScopeStatus, 200, 'Per member session, the state of its backfill into the Scope (pending, completed with docs_copied, failed).'), params: ScopeParams } },
    (req) => scopeStatus(ctx, req.params.workspace_id, req.params.scope_id),
  );
}
