import type { FastifyInstance } from 'fastify';
import type { ChangeSink } from '../changes/write.ts';
import { MODELS } from '../models/registry.ts';
import { rackElevationRoutes } from './dcim-rack-elevation.ts';
import { registerModelRoutes } from './objects.ts';
import { cablePathRoutes } from './dcim-cable-paths.ts';

/** /api/dcim/: every dcim model of the registry (regions, sites, racks, devices, interfaces, …). */
export function dcimRoutes(app: FastifyInstance, sink: ChangeSink): void {
  for (const m of MODELS.filter((x) => x.app === 'dcim')) registerModelRoutes(app, sink, m);
  rackElevationRoutes(app, sink);
  cablePathRoutes(app, sink, 'dcim');
}
