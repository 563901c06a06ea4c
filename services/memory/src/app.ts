import type { FastifyInstance } from 'fastify';
import * as sqliteVec from 'sqlite-vec';
import { createHttpServer, type App, type ServiceConfig } from '@svc/kernel';
import { migrate, openStorage, type Storage } from '@svc/storage';
import { createQueue } from '@svc/queue';
import { memoryConfig, type RateLimit } from './config.ts';
import { coreMigrations } from './db/migrations/001_core.ts';
import { v3Migration } from './db/migrations/010_v3.ts';
import { v3RecallMigration } from './db/migrations/011_v3_recall.ts';
import { v3BodiesMigration } from './db/migrations/012_v3_bodies.ts';
import { v3SeqMigration } from './db/migrations/013_v3_seq.ts';
import { v3IngestMigration } from './db/migrations/014_v3_ingest.ts';
import { v3Q8Migration } from './db/migrations/015_v3_q8.ts';
import { v3ScopesMigration } from './db/migrations/016_v3_scopes.ts';
import { v3Tasks } from './domain/v3/deletion.ts';
import { v3ReasoningTasks } from './domain/v3/reasoning.ts';
import { scopeTasks } from './domain/v3/scopes.ts';
import { v3Routes } from './routes/v3/index.ts';
import type { Ctx } from './domain/context.ts';
import { createSearch, searchMigrations, type MemoryDeps } from './search/index.ts';
import { deriverTasks } from './deriver/index.ts';
import { installValidators } from './http/validators.ts';
import { inputGuard } from './http/input-guard.ts';
import { apiKeyHook } from './http/auth.ts';
import { v3AuthHook } from './http/v3-auth.ts';
import { memoryOpenApi } from './http/openapi.ts';
import { rateLimitHook } from './http/rate-limit.ts';
import { memoryErrorStyle } from './http/error-order.ts';
import { installSlashRedirect } from './http/trailing-slash.ts';
import { appRoutes } from './routes/apps.ts';
import { userRoutes } from './routes/users.ts';
import { sessionRoutes } from './routes/sessions.ts';
import { messageRoutes } from './routes/messages.ts';
import { metamessageRoutes } from './routes/metamessages.ts';
import { collectionRoutes } from './routes/collections.ts';
import { documentRoutes } from './routes/documents.ts';
import { queryRoutes } from './routes/query.ts';
import { chatRoutes } from './routes/chat.ts';

export const VERSION = '0.1.0';

/** Opens the service's storage (SQLite file `memory.sqlite` with sqlite-vec, or PostgreSQL) and applies all migrations. */
export async function openMemoryStorage(cfg: ServiceConfig): Promise<Storage> {
  const storage = await openStorage({
    databaseUrl: cfg.databaseUrl,
    dataDir: cfg.dataDir,
    sqliteFile: 'memory.sqlite',
    pgSchema: cfg.pgSchema,
    // Room for the deriver's workers (see workerConcurrency) beside the API's requests.
    pgPoolSize: 20,
    // Statements run twice get a name: PostgreSQL parses and plans them once per connection (server CPU per
    // 100-message v3 batch 4.5-5.0 -> 3.8-4.2 ms).
    pgStatementCache: 256,
    // Kysely prepares every statement it runs; reusing them saved ~0.1 ms of each /query and GET on SQLite.
    sqliteStatementCache: 256,
    sqliteCheckpointThread: true,
    onSqliteOpen: (db) => sqliteVec.load(db),
  });
  try {
    await migrate(storage.db, storage.dialect, [...coreMigrations, v3Migration, v3RecallMigration, v3BodiesMigration, v3SeqMigration, v3IngestMigration, v3Q8Migration, v3ScopesMigration, ...searchMigrations]);
  } catch (err) {
    await storage.close();
    throw err;
  }
  return storage;
}

/** The memory service: core API (apps … documents), search/chat routes and the deriver queue. */
export async function buildApp(base: ServiceConfig): Promise<FastifyInstance> {
  const config = memoryConfig(base);
  const storage = await openMemoryStorage(config);
  try {
    // The deriver's handlers receive deps; the queue is filled in once it exists.
    const deps = { storage, config } as MemoryDeps;
    // Job failures go to the app's log once it exists (the queue is created first).
    let log: { warn(obj: object, msg: string): void } | undefined;
    const queue = await createQueue(storage, {
      tasks: { ...deriverTasks(deps), ...v3Tasks(storage), ...v3ReasoningTasks(() => ctx, config), ...scopeTasks(() => ctx) },
      concurrency: config.workerConcurrency ?? (storage.dialect.kind === 'postgres' ? 16 : 4),
      // graphile-worker's named queues: a worker that finds every available user queue locked by
      // concurrent fetches sleeps until a new job is added or its next poll, and a queue's next job
      // becomes available when the previous one completes, which wakes nobody. Measured on a drained
      // backlog: 1-3 of 16 workers busy and a ~2 s wait for the last jobs at the default 2 s poll.
      // The price: an idle process's 16 workers look 32 times a second instead of 8.
      pollIntervalMs: storage.dialect.kind === 'postgres' ? 500 : undefined,
      onError: (err, task, job) => {
        const info = { err, task, job_id: job.jobId, attempt: job.attempt, max_attempts: job.maxAttempts };
        if (log) log.warn(info, 'job failed');
        else process.stderr.write(`job ${task} failed: ${err}\n`);
      },
    });
    deps.queue = queue;
    const ctx: Ctx = { storage, queue, search: createSearch({ storage, config }) };

    const app: App = await createHttpServer({
      name: 'memory',
      title: 'Conversation Memory Service',
      description: 'Apps, users, sessions, messages, metamessages, collections and documents (Honcho v0.0.5 compatible).',
      version: VERSION,
      logLevel: config.logLevel,
      errorStyle: memoryErrorStyle,
      openapi: memoryOpenApi((config.apiKeys?.length ?? 0) > 0 || config.authUseAuth === true, config.authUseAuth === true),
      laxCoercion: true,
      bodyLimit: 2 * 1024 * 1024,
      health: async () => ({ storage: storage.dialect.kind, queue_depth: await queue.depth() }),
      fastify: {
        // Router-level failures (e.g. invalid percent-encoding in the path) answer in the service's error shape.
        frameworkErrors: (err, _req, reply: any) => {
          const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400;
          const detail = err.code === 'FST_ERR_BAD_URL' ? 'Invalid percent-encoding in URL' : err.message;
          reply.code(status).type('application/json').send(JSON.stringify({ detail }));
        },
      },
    });
    log = app.log;
    installValidators(app);
    installSlashRedirect(app);
    // Responses are built to the schemas exactly; V8's JSON.stringify beats a schema-compiled
    // serializer here (free-form metadata, measured ~2x on a page of 50 messages).
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));
    // FastAPI treats an empty JSON body as no body (a "missing" error only where a body is expected).
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, text, done) => {
      if (text === '') return done(null, undefined);
      try {
        done(null, JSON.parse(text as string));
      } catch (err) {
        // Truncated input has no position in V8's message; Python reports the end of the text.
        const msg = (err as Error).message;
        done(/position \d+/.test(msg) ? (err as Error) : new SyntaxError(`${msg} at position ${(text as string).length}`), undefined);
      }
    });
    // Counted before authentication, as slowapi did: refused keys use up the client's budget too.
    if (config.rateLimit) app.addHook('onRequest', rateLimitHook(config.rateLimit as RateLimit));
    if (config.authUseAuth) app.addHook('onRequest', v3AuthHook(ctx, { secret: config.authJwtSecret!, apiKeys: config.apiKeys }));
    else if (config.apiKeys?.length) app.addHook('onRequest', apiKeyHook(config.apiKeys));
    app.addHook('preHandler', inputGuard);

    // The service has no page of its own: its root URL leads to the docs.
    app.get('/', { schema: { hide: true } }, (_req, reply) => reply.redirect('/docs'));
    appRoutes(app, ctx);
    userRoutes(app, ctx);
    sessionRoutes(app, ctx);
    messageRoutes(app, ctx);
    metamessageRoutes(app, ctx);
    collectionRoutes(app, ctx);
    documentRoutes(app, ctx);
    await queryRoutes(app as unknown as FastifyInstance, deps);
    await chatRoutes(app as unknown as FastifyInstance, deps);
    await v3Routes(app, ctx, config);

    app.addHook('onClose', async () => {
      await queue.stop();
      await storage.close();
    });
    if (config.runWorkers) await queue.start();
    return app as unknown as FastifyInstance;
  } catch (err) {
    await storage.close();
    throw err;
  }
}
