import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import websocket from '@fastify/websocket';
import { createHttpServer, type ServiceConfig } from '@svc/kernel';
import { workflowOpenApi } from './http/openapi.ts';
import { migrate, openStorage, type Storage } from '@svc/storage';
import { publishFfmpegPath, workflowConfig, type WorkflowConfig } from './config.ts';
import { workflowMigrations } from './db/index.ts';
import { ModelFolders } from './domain/models.ts';
import { getPrompt } from './domain/prompts.ts';
import { AssetSeeder } from './domain/assets/seeder.ts';
import { UserManager } from './domain/users.ts';
export { buildRegistry } from './runtime/execution.ts';
import { apiKeyGuard, corsHook, originGuard } from './http/access.ts';
import { frameworkErrorBodies, RouteMethods, workflowErrorStyle } from './http/errors.ts';
import { installJsonParser } from './http/json-body.ts';
import { identityConfig } from './identity/config.ts';
import { assetRoutes } from './routes/assets.ts';
import { assetFileHooks } from './routes/asset-hooks.ts';
import type { RouteCtx } from './routes/context.ts';
import { BODY_LIMITS } from './routes/common.ts';
import { buildExecution } from './runtime/execution.ts';
import type { NodeScope } from './nodes/api.ts';
import { installCloud } from './routes/cloud.ts';
import { CloudOps, cloudOnlyPathsOnLocal } from './routes/cloud-ops.ts';
import { assetFromUrl } from './domain/cloud/cloud-assets.ts';
import { outboundConfig } from './domain/cloud/outbound.ts';
import { fileRoutes } from './routes/files.ts';
import { frontendRoutes } from './routes/frontend.ts';
import { jobRoutes } from './routes/jobs.ts';
import { modelRoutes } from './routes/models.ts';
import { promptRoutes } from './routes/prompt.ts';
import { queueRoutes } from './routes/queue.ts';
import { settingsRoutes } from './routes/settings.ts';
import { features, SERVICE_VERSION, systemRoutes } from './routes/system.ts';
import { userdataRoutes } from './routes/userdata.ts';
import { userRoutes } from './routes/users.ts';
import { webPageRoutes } from './routes/web-page.ts';
import { wsRoutes } from './routes/ws.ts';

/** The ids `POST /users` makes (a path-safe name and a UUID); anything else is the default user. */
const USER_ID = /^[\w.-]{1,100}$/;
const USER_COOKIE = 'comfy-user';

/** The `comfy-user` cookie of a request, when it has one. */
function userCookie(req: FastifyRequest): string | undefined {
  const raw = req.headers.cookie;
  if (!raw) return undefined;
  for (const part of raw.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === USER_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export async function openWorkflowStorage(cfg: ServiceConfig, opts: { relaxedCommits?: boolean } = {}): Promise<Storage> {
  // SQLite: WAL checkpoints in a thread of their own, never inside a prompt's commit on the event loop.
  const storage = await openStorage({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir, sqliteFile: 'workflow.sqlite', pgSchema: cfg.pgSchema, sqliteStatementCache: 128, sqliteCheckpointThread: true, pgStatementCache: 256, pgRelaxedCommits: opts.relaxedCommits });
  try {
    await migrate(storage.db, storage.dialect, workflowMigrations);
  } catch (err) {
    await storage.close();
    throw err;
  }
  return storage;
}

/** The workflow execution service (local runtime): prompts, queue, jobs, history, nodes and the WebSocket. */
export async function buildApp(base: ServiceConfig): Promise<FastifyInstance> {
  const config = workflowConfig(base);
  publishFfmpegPath(config);
  for (const d of Object.values(config.dirs)) fs.mkdirSync(d, { recursive: true });
  const storage = await openWorkflowStorage(config);
  try {
    const app = (await createHttpServer({
      name: 'workflow',
      title: 'Workflow Execution Service',
      description: `Prompts (node graphs) queued, validated and executed, with progress over WebSocket (${config.runtime} runtime). Every route is served at its bare path and under /api.`,
      version: SERVICE_VERSION,
      logLevel: config.logLevel,
      errorStyle: workflowErrorStyle,
      openapi: workflowOpenApi(config),
      // Routes that take more say so (prompts, uploads, user data files, saved workflows): see BODY_LIMITS.
      bodyLimit: BODY_LIMITS.json,
      health: async () => ({ storage: storage.dialect.kind, runtime: config.runtime, queue_remaining: runner.queueRemaining() }),
    })) as unknown as FastifyInstance;
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));
    const routeMethods = new RouteMethods();
    app.addHook('onRoute', (route) => routeMethods.add(route.method, route.url));
    app.addHook('onSend', frameworkErrorBodies(routeMethods));
    installJsonParser(app);
    await app.register(websocket, { options: { maxPayload: 1024 * 1024 } });
    await app.register(multipart, { limits: { fileSize: config.maxUploadSize } });
    if (config.apiKey) app.addHook('onRequest', apiKeyGuard(config.apiKey));
    else if (config.runtime === 'local' && !/^(127\.|localhost$|::1$|\[::1\]$)/.test(config.host)) {
      // Open by default only where the reference is safe to leave open: on loopback.
      app.log.warn({ host: config.host }, 'listening beyond loopback without --api-key: anyone who can reach this address can run prompts and read files');
    }
    if (config.corsOrigin) app.addHook('onRequest', corsHook(config.corsOrigin));
    else app.addHook('onRequest', originGuard);
    // Hosted runtime: identity, its routes and the authentication hook, before every shared route.
    const ops = config.runtime === 'cloud' ? new CloudOps(storage, config) : undefined;
    const cloud = config.runtime === 'cloud' ? await installCloud(app, () => storage.db, { ...identityConfig(config.flags), sharedRateLimits: storage.dialect.kind === 'postgres' }, { dataDir: config.dataDir, userDir: config.dirs.user, flags: config.flags }) : undefined;

    const ex = await buildExecution(config, storage, app.log, { readSecret: cloud?.content.readSecret, onFinished: ops?.onFinished });
    const { registry, hub, assets, runner, scopeFor, baseDirs } = ex;

    const userOf = (req: FastifyRequest): string => {
      if (!config.multiUser) return '';
      const h = req.headers['comfy-user'] ?? userCookie(req);
      return typeof h === 'string' && USER_ID.test(h) ? h : 'default';
    };
    // A browser loads images and videos (/view in <img>, <video>) without the Comfy-User header the web frontend
    // sends on its API calls: the user of such a request is the one its last API call named, kept in a
    // same-site cookie, so the frontend shows its own outputs while other users' stay hidden.
    if (config.multiUser && !cloud) {
      app.addHook('onSend', async (req, reply, payload) => {
        const h = req.headers['comfy-user'];
        if (typeof h === 'string' && USER_ID.test(h) && userCookie(req) !== h) reply.header('Set-Cookie', `${USER_COOKIE}=${h}; Path=/; SameSite=Strict; HttpOnly`);
        return payload;
      });
    }
    const sharedScope: NodeScope = { dirs: baseDirs };
    const ctx: RouteCtx = cloud
      ? { ...cloud.ctx, folders: (req) => scopeFor!(cloud.ctx.owner(req)) }
      : {
          owner: userOf,
          scope: (req) => (config.multiUser ? userOf(req) : undefined),
          storageDb: () => storage.db,
          ownsPrompt: async (req, id) => !config.multiUser || (await getPrompt(storage.db, id, userOf(req))) !== null,
          folders: scopeFor ? (req) => scopeFor(userOf(req)) : () => sharedScope,
        };

    promptRoutes(app, ctx, runner, { cloud: cloud !== undefined, bodyLimit: config.maxUploadSize + 1024 * 1024 });
    queueRoutes(app, ctx, runner);
    jobRoutes(app, ctx, runner);
    systemRoutes(app, registry, {
      folders: (req) => ctx.folders(req),
      maxUploadSize: config.maxUploadSize,
      assets: assets !== undefined,
      extraFeatures: ops?.features(),
      models: { loaded: () => runner.loadedModels(), budget: config.maxModelMemoryMb * 2 ** 20, namesHidden: cloud !== undefined },
      device: config.device,
      precision: config.precision,
    });
    assetRoutes(app, ctx, { service: assets, seeder: assets && new AssetSeeder(assets), maxUploadSize: config.maxUploadSize, fromUrl: assetFromUrl(ops?.outbound ?? outboundConfig(config.flags.outboundAllow, process.env, config.flags.outboundTimeoutMs), config.maxUploadSize) });
    wsRoutes(app, ctx, hub, runner, { ...features(config.maxUploadSize, assets !== undefined), ...ops?.features() });
    const models = new ModelFolders(config.dirs.models, config.dirs.customNodes);
    const users = cloud?.userManager(config.dirs.user) ?? new UserManager(config.dirs.user, config.multiUser);
    fileRoutes(app, ctx, { dirs: config.dirs, models, content: ex.content, maxUploadSize: config.maxUploadSize, multiUser: config.multiUser || cloud !== undefined, onInputChanged: (scope) => registry.invalidate(scope), ...(assets ? assetFileHooks(assets, ctx, app.log) : {}) });
    userRoutes(app, users);
    settingsRoutes(app, users);
    userdataRoutes(app, users, { maxUploadSize: config.maxUploadSize });
    modelRoutes(app, models);
    frontendRoutes(app, ctx, { dirs: config.dirs, customNodesDir: config.dirs.customNodes, models, multiUser: config.multiUser || cloud !== undefined, frontEndRoot: config.flags.frontEndRoot as string | undefined, templatesRoot: config.flags.templatesRoot as string | undefined, hub });
    if (ops && cloud) ops.routes(app, { ctx, runner, registry, hub, assets, view: cloud.view });
    else cloudOnlyPathsOnLocal(app);
    // Without a frontend build, the built-in page is at / (in the hosted runtime it signs in first).
    if (!config.flags.frontEndRoot) webPageRoutes(app, { runtime: cloud ? 'cloud' : 'local' });

    app.addHook('onClose', async () => {
      await ex.close();
      await storage.close();
    });
    if (config.runWorkers) await runner.start();
    return app;
  } catch (err) {
    await storage.close();
    throw err;
  }
}
