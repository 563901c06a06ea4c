import type { FastifyInstance } from 'fastify';
import { requireRead } from '../auth/index.ts';
import type { InventoryDeps } from '../deps.ts';

/** `/api/status/`: a minimal version of NetBox's. */
export async function statusRoutes(app: FastifyInstance, deps: InventoryDeps): Promise<void> {
  app.get('/api/status/', { preHandler: requireRead, schema: { tags: ['status'], summary: 'Service status' } }, async () => ({
    'netbox-version': '4.3.0-compatible',
    'inventory-version': '0.1.0',
    'node-version': process.versions.node,
    database: deps.storage.dialect.kind,
    'installed-apps': {},
    plugins: {},
    'rq-workers-running': deps.config.runWorkers ? 1 : 0,
    'queue-depth': await deps.queue.depth(),
  }));
}
