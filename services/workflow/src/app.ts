import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import websocket from '@fastify/websocket';
import { createHttpServer, type ServiceConfig } from '@svc/kernel';
import { migrate, openStorage, type Storage } from '@svc/storage';
import { workflowConfig, type WorkflowConfig } from './config.ts';
import { workflowMigrations } from './db/index.ts';
import { ModelFolders } from './domain/models.ts';
import { getPrompt } from './domain/prompts.ts';
import { AssetSeeder } from './domain/assets/seeder.ts';
import { AssetService } from './domain/assets/service.ts';
import { UserManager } from './domain/users.ts';
import { Executor } from './engine/executor.ts';
import { NodeRegistry } from './engine/registry.ts';
import { apiKeyGuard, corsHook, originGuard } from './http/access.ts';
import { workflowErrorStyle } from './http/errors.ts';
import { installJsonParser } from './http/json-body.ts';
import { identityConfig } from './identity/config.ts';
import type { NodeDefinition, NodeScope } from './nodes/api.ts';
import { workspaceScope, workspacesRoot } from './files/workspace-folders.ts';
import { mayViewOutput } from './domain/output-owners.ts';
import { apiNodes, openaiConfig } from './nodes/api-nodes.ts';
import { builtinNodes } from './nodes/index.ts';
import { loadPacks } from './nodes/loader.ts';
import { PromptRunner } from './runtime/prompt-runner.ts';
import { assetRoutes } from './routes/assets.ts';
import { assetFileHooks } from './routes/asset-hooks.ts';
import type { RouteCtx } from './routes/context.ts';
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
import { WsHub } from './ws/hub.ts';
import { createRelay } from './ws/relay-factory.ts';

export async function openWorkflowStorage(cfg: ServiceConfig): Promise<Storage> {
  const storage = await openStorage({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir, sqliteFile: 'workflow.sqlite', pgSchema: cfg.pgSchema, sqliteStatementCache: 128 });
  try {
    await migrate(storage.db, storage.dialect, workflowMigrations);
  } catch (err) {
    await storage.close();
    throw err;
  }
  return storage;
}

/** Built-in nodes, the test pack when enabled, and the packs under custom_nodes. */
export async function buildRegistry(config: WorkflowConfig, log: { warn(o: object, m: string): void; info(o: object, m: string): void }): Promise<NodeRegistry> {
  const registry = new NodeRegistry();
  for (const def of builtinNodes({ input: config.dirs.input, output: config.dirs.output, temp: config.dirs.temp, models: config.dirs.models })) registry.add(def);
  for (const def of apiNodes(openaiConfig(config.flags))) registry.add(def);
  if (config.enableTestNodes) {
    const { testingPackNodes } = await import('./nodes/testing-pack/index.ts');
    for (const def of testingPackNodes as NodeDefinition[]) registry.add(def);
  }
  const reports = await loadPacks(config.dirs.customNodes, (def) => registry.add(def));
  for (const r of reports) {
    if (r.error) log.warn({ pack: r.pack, error: r.error, loaded: r.nodes }, 'node pack failed to load');
    else log.info({ pack: r.pack, nodes: r.nodes.length }, 'node pack loaded');
  }
  registry.freeze();
  return registry;
}

/** The workflow execution service (local runtime): prompts, queue, jobs, history, nodes and the WebSocket. */
export async function buildApp(base: ServiceConfig): Promise<FastifyInstance> {
  const config = workflowConfig(base);
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
      bodyLimit: config.maxUploadSize + 1024 * 1024,
      health: async () => ({ storage: storage.dialect.kind, runtime: config.runtime, queue_remaining: runner.queueRemaining() }),
    })) as unknown as FastifyInstance;
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));
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
    const cloud = config.runtime === 'cloud' ? await installCloud(app, () => storage.db, { ...identityConfig(config.flags), sharedRateLimits: storage.dialect.kind === 'postgres' }, { dataDir: config.dataDir, userDir: config.dirs.user, flags: config.flags }) : undefined;

    const registry = await buildRegistry(config, app.log);
    const executor = new Executor(registry, config.cache);
    // Several API processes on one PostgreSQL database: a prompt's frames reach its client's socket whichever process holds it.
    const relay = createRelay(storage, config.flags, app.log);
    const hub = new WsHub({ isolateOwners: config.runtime === 'cloud', relay });
    if (relay) await relay.start((frames) => hub.receive(frames));
    // Assets are on unless --disable-assets: every file a job saves becomes one, its id in the `executed` entry.
    const assets = config.flags.disableAssets === true || process.env.WORKFLOW_DISABLE_ASSETS === '1'
      ? undefined
      : new AssetService(storage, { input: config.dirs.input, output: config.dirs.output, temp: config.dirs.temp, models: config.dirs.models, blobs: path.join(config.dataDir, 'assets', 'blobs'), ...(config.runtime === 'cloud' ? { workspaces: workspacesRoot(config.dataDir) } : {}) }, app.log);
    const ops = cloud ? new CloudOps(storage, config) : undefined;
    const baseDirs = { input: config.dirs.input, output: config.dirs.output, temp: config.dirs.temp, models: config.dirs.models };
    // Hosted runtime: each workspace has its own input folder; with users or workspaces, outputs are read only by their job's owner.
    const scopeFor: ((owner: string) => NodeScope) | undefined = cloud
      ? (owner) => workspaceScope(baseDirs, config.dataDir, owner, (ref) => mayViewOutput(storage.db, owner, ref))
      : config.multiUser
        ? (owner) => ({ dirs: baseDirs, canRead: (ref) => mayViewOutput(storage.db, owner, ref) })
        : undefined;
    const runner = new PromptRunner({
      storage,
      executor,
      hub,
      dirs: baseDirs,
      scopeFor,
      perOwnerStatus: cloud !== undefined,
      maxHistory: config.maxHistory,
      log: app.log,
      onFinished: ops?.onFinished,
      readSecret: cloud?.content.readSecret,
      fileWritten: assets
        ? async (file, job) => {
            try {
              const r = await assets.registerFile({ ...file, owner: job.owner, jobId: job.promptId });
              return r ? { id: r.row.id } : undefined;
            } catch (err) {
              app.log.warn({ err, file }, 'output file could not be registered as an asset');
            }
          }
        : undefined,
    });

    const userOf = (req: FastifyRequest): string => {
      if (!config.multiUser) return '';
      const h = req.headers['comfy-user'];
      return typeof h === 'string' && /^[\w.-]{1,100}$/.test(h) ? h : 'default';
    };
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

    promptRoutes(app, ctx, runner);
    queueRoutes(app, ctx, runner);
    jobRoutes(app, ctx, runner);
    systemRoutes(app, registry, { folders: (req) => ctx.folders(req), maxUploadSize: config.maxUploadSize, assets: assets !== undefined, extraFeatures: ops?.features() });
    assetRoutes(app, ctx, { service: assets, seeder: assets && new AssetSeeder(assets), maxUploadSize: config.maxUploadSize, fromUrl: assetFromUrl(ops?.outbound ?? outboundConfig(config.flags.outboundAllow, process.env, config.flags.outboundTimeoutMs), config.maxUploadSize) });
    wsRoutes(app, ctx, hub, runner, { ...features(config.maxUploadSize, assets !== undefined), ...ops?.features() });
    const models = new ModelFolders(config.dirs.models, config.dirs.customNodes);
    const users = cloud?.userManager(config.dirs.user) ?? new UserManager(config.dirs.user, config.multiUser);
    fileRoutes(app, ctx, { dirs: config.dirs, models, maxUploadSize: config.maxUploadSize, multiUser: config.multiUser || cloud !== undefined, onInputChanged: (scope) => registry.invalidate(scope), ...(assets ? assetFileHooks(assets, ctx, app.log) : {}) });
    userRoutes(app, users);
    settingsRoutes(app, users);
    userdataRoutes(app, users, { maxUploadSize: config.maxUploadSize });
    modelRoutes(app, models);
    frontendRoutes(app, ctx, { dirs: config.dirs, customNodesDir: config.dirs.customNodes, models, multiUser: config.multiUser || cloud !== undefined, frontEndRoot: config.flags.frontEndRoot as string | undefined, templatesRoot: config.flags.templatesRoot as string | undefined, hub });
    if (ops && cloud) ops.routes(app, { ctx, runner, registry, hub, assets, view: cloud.view });
    else cloudOnlyPathsOnLocal(app);
    // Without a frontend build, the local runtime serves its built-in page at /.
    if (!config.flags.frontEndRoot && config.runtime === 'local') webPageRoutes(app);

    app.addHook('onClose', async () => {
      await runner.stop();
      await relay?.close();
      hub.closeAll();
      await storage.close();
    });
    if (config.runWorkers) await runner.start();
    return app;
  } catch (err) {
    await storage.close();
    throw err;
  }
}
