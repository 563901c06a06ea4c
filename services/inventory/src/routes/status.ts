import type { FastifyInstance } from 'fastify';
import { requireReadOrLoginNotRequired } from '../api/guards.ts';
import type { InventoryDeps } from '../deps.ts';

import { NETBOX_VERSION } from '../api/conventions.ts';

export { NETBOX_VERSION };
const SERVICE_VERSION = '0.1.0';

/**
 * `/api/status/` in NetBox's shape. The keys NetBox derives from its Python stack are present but
 * null (there is no Django or Python here); the service names itself in `netbox-full-version` and
 * in its own extra keys.
 */
export async function statusRoutes(app: FastifyInstance, deps: InventoryDeps): Promise<void> {
  app.get('/api/status/', { preHandler: requireReadOrLoginNotRequired, schema: { tags: ['status'], summary: 'Service status' } }, async () => ({
    'django-version': null,
    'installed-apps': {},
    'netbox-version': NETBOX_VERSION,
    'netbox-full-version': `${NETBOX_VERSION}-inventory-${SERVICE_VERSION}`,
    plugins: {},
    'python-version': null,
    'rq-workers-running': deps.config.runWorkers ? 1 : 0,
    'inventory-version': SERVICE_VERSION,
    'node-version': process.versions.node,
    database: deps.storage.dialect.kind,
    'queue-depth': await deps.queue.depth(),
  }));
}
