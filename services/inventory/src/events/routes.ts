import type { FastifyInstance } from 'fastify';
import type { InventoryDeps } from '../deps.ts';
import { backgroundTaskRoutes } from '../routes/core-background-tasks.ts';
import { eventRuleRoutes } from '../routes/extras-event-rules.ts';
import { webhookRoutes } from '../routes/extras-webhooks.ts';
import { closeWorker, ensureWorker } from './registry.ts';

/** Part B's REST endpoints; also releases the delivery worker's connections when the app closes. */
export async function eventRoutes(app: FastifyInstance, deps: InventoryDeps): Promise<void> {
  ensureWorker(deps);
  await webhookRoutes(app, deps);
  await eventRuleRoutes(app, deps);
  await backgroundTaskRoutes(app, deps);
  app.addHook('onClose', async () => closeWorker(deps));
}
