import { loadConfig, onShutdown } from '@svc/kernel';
import { createQueue } from '@svc/queue';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { createAuth } from './auth/index.ts';
import { inventoryConfig } from './config.ts';
import type { InventoryDeps } from './deps.ts';
import { openInventoryStorage } from './storage.ts';
import { deliveryTasks } from './events/index.ts';
import { closeWorker, ensureWorker } from './events/registry.ts';

/** A delivery worker without the HTTP API: `npm run inventory:worker` (same --data-dir / --database-url). */
const config = inventoryConfig(loadConfig('inventory', { port: 8080 }));
const log: FastifyBaseLogger = pino({ level: config.logLevel, base: { service: 'inventory-worker' } });
const storage = await openInventoryStorage(config);
const deps = { storage, config, auth: createAuth(storage, config.loginThrottle, { loginRequired: config.loginRequired }), log } as InventoryDeps;
deps.queue = await createQueue(storage, {
  tasks: deliveryTasks(deps),
  onError: (err, task, ctx) => log.warn({ err, task, jobId: ctx.jobId, attempt: ctx.attempt }, 'background task failed'),
});
await deps.queue.start();
// Claims left by a worker that died on this host are taken over at once, without waiting for a queued job.
ensureWorker(deps).kick();
// The SQLite queue's poll timer is unref'd (so an API process can exit); a worker process has nothing else keeping it alive.
const keepAlive = setInterval(() => {}, 1 << 30);
process.stdout.write(`inventory worker started [storage: ${storage.dialect.kind}]\n`);
onShutdown(async () => {
  clearInterval(keepAlive);
  await closeWorker(deps);
  await deps.queue.stop();
  await storage.close();
});
