import type { FastifyInstance } from 'fastify';
import type { InventoryDeps } from '../deps.ts';
import { closeWorker, ensureWorker } from '../events/registry.ts';
import { backgroundTaskRoutes } from './core-background-tasks.ts';
import { eventRuleRoutes } from './extras-event-rules.ts';
import { webhookRoutes } from './extras-webhooks.ts';

/** Part B's REST endpoints; also releases the delivery worker's connections when the app closes. */
export async function eventRoutes(app: FastifyInstance, deps: InventoryDeps): Promise<void> {
  ensureWorker(deps);
  await webhookRoutes(app, deps);
  await eventRuleRoutes(app, deps);
  await backgroundTaskRoutes(app, deps);
  app.addHook('onClose', async () => closeWorker(deps));
}
