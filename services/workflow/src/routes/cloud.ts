import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { loadSecretKeys, SecretBox } from '../domain/cloud/secret-box.ts';
import { getPrompt } from '../domain/prompts.ts';
import type { IdentityConfig } from '../identity/config.ts';
import type { UserManager } from '../domain/users.ts';
import { Identity } from '../identity/index.ts';
import { WorkspaceUserManager } from '../domain/workspace-users.ts';
import { authRoutes } from './auth.ts';
import type { ViewRoute } from './cloud-jobs.ts';
import { cloudSchemas, type AuthMode } from './cloud-common.ts';
import type { RouteCtx } from './context.ts';
import { oauthRoutes } from './oauth.ts';
import { cloudUserRoutes } from './users-cloud.ts';
import { workspaceRoutes } from './workspaces.ts';
import { installContent, type CloudContent, type CloudContentOptions } from './cloud-content.ts';

/** Routes every caller reaches without credentials (besides those declared `public` by the cloud routes). */
const PUBLIC_URLS = new Set(['/health', '/openapi.json', '/docs', '/docs/*', '/docs/json', '/docs/yaml', '/docs/static/*']);
/** The web page itself and its script and style sheet (it signs in); its data comes through authenticated routes. */
const PUBLIC_GET_URLS = new Set(['/', '/*', '/web/app.js', '/web/app.css']);
/** Local-runtime conveniences that would show one tenant the server's internals or other tenants' traces. */
const LOCAL_ONLY: Array<[string, string]> = [
  ['GET', '/internal/logs'],
  ['GET', '/internal/logs/raw'],
  ['PATCH', '/internal/logs/subscribe'],
  ['GET', '/internal/folder_paths'],
  // Lists the shared input folder (other tenants' uploads).
  ['GET', '/internal/files/:directory_type'],
  ['POST', '/users'],
  // Operator tasks: seeding registers every file on disk as a shared asset.
  ['POST', '/assets/seed'],
  ['GET', '/assets/seed/status'],
  ['POST', '/assets/seed/cancel'],
  ['POST', '/assets/prune'],
];
const WS_URLS = new Set(['/ws', '/api/ws']);
/** No workspace id has this form, so a request without a principal sees nothing. */
const NOBODY = '~anonymous~';

function authFailure(id: Identity, req: FastifyRequest, reply: FastifyReply, error: 'missing' | 'invalid' | 'csrf' | 'workspace' | 'scope') {
  const meta = `resource_metadata="${id.baseUrl(req)}/.well-known/oauth-protected-resource"`;
  const send = (status: number, code: string, message: string, www?: string) => {
    if (www) reply.header('WWW-Authenticate', www);
    return reply.code(status).type('application/json').send(JSON.stringify({ error: message, code, details: {} }));
  };
  switch (error) {
    case 'missing':
      return send(401, 'unauthorized', 'Authentication required: send a Bearer access token or API key, or the session cookie', `Bearer ${meta}`);
    case 'invalid':
      return send(401, 'invalid_token', 'The access token, API key or session is invalid, expired or revoked', `Bearer error="invalid_token", ${meta}`);
    case 'csrf':
      return send(403, 'csrf_failed', 'Cookie-authenticated writes need the X-CSRF-Token header (and WebSockets a same-origin page)');
    case 'workspace':
      return send(403, 'workspace_forbidden', 'This credential cannot act in the workspace named by X-Workspace-Id');
    case 'scope':
      return send(403, 'insufficient_scope', 'The token lacks the workflow:write scope', `Bearer error="insufficient_scope", scope="workflow:write", ${meta}`);
  }
}

/**
 * The hosted runtime on top of the shared routes: the identity provider, an
 * onRequest hook that authenticates every non-public route (and sets the
 * caller's workspace, which RouteCtx then uses as the owner of every stored
 * row), and the cloud-only routes. Call before the shared routes are added.
 */
export async function installCloud(app: FastifyInstance, db: () => Kysely<any>, cfg: IdentityConfig, opts: CloudContentOptions = { dataDir: 'data', flags: {} }): Promise<{ identity: Identity; ctx: Omit<RouteCtx, 'folders'>; userManager(dir: string): UserManager; content: CloudContent; view: ViewRoute }> {
  // The signing keys' private halves are sealed with the workspace secrets' key (--secrets-key or its generated file).
  const identity = new Identity(db, cfg, new SecretBox(loadSecretKeys(opts.flags, opts.dataDir)));
  // Operators and tests reach key rotation and the caches through the app.
  app.decorate('identity', identity);
  for (const s of Object.values(cloudSchemas)) app.addSchema(s);
  const localOnly = new Set(LOCAL_ONLY.map(([m, u]) => `${m} ${u}`));
  // GET /api/viewvideo is an alias of /api/view: its handler and query schema, captured as the shared routes are added.
  const view: ViewRoute = {};
  app.addHook('onRoute', (r) => {
    if (r.url === '/api/view' && (r.method === 'GET' || (Array.isArray(r.method) && r.method.includes('GET')))) Object.assign(view, { handler: r.handler, schema: r.schema });
  });

  app.addHook('onRequest', async (req, reply) => {
    const url = req.routeOptions.url;
    if (url === undefined || PUBLIC_URLS.has(url) || url.startsWith('/docs')) return;
    if (localOnly.has(`${req.method} ${url.replace(/^\/api\//, '/')}`)) return reply.code(404).type('text/plain; charset=utf-8').send('404: Not Found');
    if (req.method === 'GET' && PUBLIC_GET_URLS.has(url)) {
      delete req.headers['comfy-user'];
      return;
    }
    const config = req.routeOptions.config as { auth?: AuthMode; csrfExempt?: boolean; firstParty?: boolean };
    const mode = config.auth ?? 'required';
    const ws = WS_URLS.has(url);
    const out = await identity.authenticate(req, { allowQueryToken: ws, csrfExempt: config.csrfExempt === true, websocket: ws });
    if ('principal' in out) {
      req.principal = out.principal;
      // The shared settings/userdata routes pick their folder from Comfy-User: it becomes the workspace.
      req.headers['comfy-user'] = out.principal.workspaceId;
      // Identity management (members, invites, keys, consent, sessions) is the user's own, not a third-party client's.
      if (config.firstParty && out.principal.clientId) {
        return reply.code(403).type('application/json').send(JSON.stringify({ error: 'Third-party OAuth clients cannot manage accounts, workspaces or credentials', code: 'forbidden', details: {} }));
      }
      return;
    }
    delete req.headers['comfy-user'];
    if (mode !== 'required') return;
    return authFailure(identity, req, reply, out.error);
  });

  authRoutes(app, identity);
  await oauthRoutes(app, identity);
  workspaceRoutes(app, identity);
  cloudUserRoutes(app, identity);
  const content = installContent(app, db, opts, identity);

  const owner = (req: FastifyRequest) => req.principal?.workspaceId ?? NOBODY;
  const ctx: Omit<RouteCtx, 'folders'> = {
    owner,
    scope: owner,
    storageDb: db,
    ownsPrompt: async (req, id) => (await getPrompt(db(), id, owner(req))) !== null,
  };
  identity.start();
  app.addHook('onClose', async () => identity.stop());
  return { identity, ctx, userManager: (dir) => new WorkspaceUserManager(dir), content, view };
}
