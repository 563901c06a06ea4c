import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { createHttpServer, type ServiceConfig } from '@svc/kernel';
import { inventoryOpenApi } from './api/openapi.ts';
import { createQueue, type JobQueue } from '@svc/queue';
import { installAppendSlash } from './api/append-slash.ts';
import { ApiConventions } from './api/conventions.ts';
import { netboxErrorStyle } from './api/errors.ts';
import { installResponseShaping } from './api/shape.ts';
import { inputGuard } from './api/input-guard.ts';
import { installJsonBodyParser } from './api/json-body.ts';
import { createAuth } from './auth/index.ts';
import { ensureAdminToken } from './auth/store.ts';
import type { ObjectEvent } from './changes/types.ts';
import { inventoryConfig } from './config.ts';
import type { InventoryDeps } from './deps.ts';
import { openInventoryStorage } from './storage.ts';
import { coreRoutes } from './routes/index.ts';
import { eventRoutes } from './routes/events.ts';
import { deliveryTasks } from './events/index.ts';
import { ensureWorker, quiesceWorker } from './events/registry.ts';
import { uiRoutes } from './ui/index.ts';

const VERSION = '0.1.0';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface BuildOptions {
  /** Test hook: receives the coalesced events each write request hands to the event pipeline. */
  onObjectEvents?: (events: ObjectEvent[]) => void;
}

declare module 'fastify' {
  interface FastifyInstance {
    inventoryAuth: import('./auth/index.ts').Auth;
    /** Set when this start generated the admin token (printed once by main.ts). */
    generatedAdminToken: string | undefined;
    inventoryDeps: InventoryDeps;
  }
}

/** The inventory service: NetBox-style REST API, change log, event rules and webhooks, admin UI. */
export async function buildApp(cfg: ServiceConfig, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const config = inventoryConfig(cfg);
  const storage = await openInventoryStorage(config);
  let app: Awaited<ReturnType<typeof createHttpServer>> | undefined;
  try {
    const generated = await ensureAdminToken(storage, config.adminToken);
    // The queue exists only after the server (its tasks log through app.log); /health reads it once it does.
    let queue: JobQueue | undefined;
    app = await createHttpServer({
      name: 'inventory',
      title: 'Inventory API',
      version: VERSION,
      description: 'NetBox-compatible inventory with event rules and outgoing webhooks',
      logLevel: config.logLevel,
      errorStyle: netboxErrorStyle,
      openapi: inventoryOpenApi,
      health: async () => ({ storage: storage.dialect.kind, queue_depth: queue ? await queue.depth() : null }),
      fastify: {
        // request_id is a UUID as NetBox's; a client-sent UUID is kept so callers can correlate.
        genReqId: (req) => {
          const h = req.headers['x-request-id'];
          return typeof h === 'string' && UUID.test(h) ? h.toLowerCase() : randomUUID();
        },
      },
    });
    installJsonBodyParser(app);
    installAppendSlash(app);
    const conventions = new ApiConventions();
    conventions.install(app);
    installResponseShaping(app);
    // Every API route refuses input no storage can keep (NUL, lone surrogates, absurd nesting) after its own auth check.
    app.addHook('onRoute', (route) => {
      if (!route.url.startsWith('/api/')) return;
      const own = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
      route.preHandler = [...own, inputGuard];
    });
    const auth = createAuth(storage, config.loginThrottle, { loginRequired: config.loginRequired });
    const deps = { storage, config, auth, log: app.log } as InventoryDeps;
    deps.queue = await createQueue(storage, {
      tasks: deliveryTasks(deps),
      onError: (err, task, ctx) => app!.log.warn({ err, task, jobId: ctx.jobId, attempt: ctx.attempt }, 'background task failed'),
    });
    app.decorate('inventoryAuth', auth);
    queue = deps.queue;
    app.decorate('inventoryDeps', deps);
    app.decorate('generatedAdminToken', generated);

    await app.register(coreRoutes, { deps, conventions, onObjectEvents: opts.onObjectEvents });
    await app.register(eventRoutes as any, deps);
    await app.register(uiRoutes as any, deps);
    conventions.finish(app);

    app.addHook('onClose', async () => {
      await quiesceWorker(deps);
      await deps.queue.stop();
      await storage.close();
    });
    if (config.runWorkers) {
      await deps.queue.start();
      // Claims left by a worker that died on this host are taken over at once, without waiting for a queued job.
      ensureWorker(deps).kick();
    }
    return app;
  } catch (err) {
    if (app) await app.close().catch(() => {});
    await storage.close().catch(() => {});
    throw err;
  }
}
