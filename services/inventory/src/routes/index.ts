import type { FastifyInstance } from 'fastify';
import type { ObjectEvent } from '../changes/types.ts';
import type { InventoryDeps } from '../deps.ts';
import { statusRoutes } from './status.ts';

export interface CoreRouteOptions {
  deps: InventoryDeps;
  onObjectEvents?: (events: ObjectEvent[]) => void;
}

/**
 * Part A's REST API. Request bodies and queries are validated in the
 * handlers (DRF wording and shapes); schemas here only document the API.
 */
export async function coreRoutes(app: FastifyInstance, opts: CoreRouteOptions): Promise<void> {
  app.setValidatorCompiler(() => () => true);
  await statusRoutes(app, opts.deps);
}
