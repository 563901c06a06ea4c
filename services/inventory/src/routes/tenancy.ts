import type { FastifyInstance } from 'fastify';
import type { ChangeSink } from '../changes/write.ts';
import { MODELS } from '../models/registry.ts';
import { registerModelRoutes } from './objects.ts';

/** /api/tenancy/: tenants and tenant groups. */
export function tenancyRoutes(app: FastifyInstance, sink: ChangeSink): void {
  for (const m of MODELS.filter((x) => x.app === 'tenancy')) registerModelRoutes(app, sink, m);
}
