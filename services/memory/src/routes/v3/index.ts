import multipart from '@fastify/multipart';
import type { App } from '@svc/kernel';
import type { Ctx } from '../../domain/context.ts';
import type { MemoryConfig } from '../../config.ts';
import { v3ChatRoutes } from './chat.ts';
import { v3ConclusionRoutes } from './conclusions.ts';
import { v3MemoryRoutes } from './memory.ts';
import { v3MessageRoutes, v3UploadRoute } from './messages.ts';
import { v3KeyRoutes } from './keys.ts';
import { v3WebhookRoutes } from './webhooks.ts';
import { v3PeerRoutes } from './peers.ts';
import { v3ScopeRoutes } from './scopes.ts';
import { v3SessionRoutes } from './sessions.ts';
import { v3WorkspaceRoutes } from './workspaces.ts';

/** The v3 API (today's Honcho SDKs) beside the seed's, on the same storage. */
export async function v3Routes(app: App, ctx: Ctx, config: MemoryConfig): Promise<void> {
  v3WorkspaceRoutes(app, ctx);
  v3KeyRoutes(app, config.authUseAuth ? config.authJwtSecret : undefined);
  v3PeerRoutes(app, ctx);
  v3SessionRoutes(app, ctx);
  v3ScopeRoutes(app, ctx);
  v3MessageRoutes(app, ctx);
  v3MemoryRoutes(app, ctx);
  v3ConclusionRoutes(app, ctx);
  v3ChatRoutes(app, ctx, config);
  v3WebhookRoutes(app, ctx, config);
  // Multipart parsing only where a route takes a form: the seed's routes keep refusing such bodies.
  await app.register(async (scope: any) => {
    await scope.register(multipart);
    v3UploadRoute(scope, ctx);
  });
}
