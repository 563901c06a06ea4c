import type { FastifyInstance } from 'fastify';
import type { ChangeSink } from '../changes/write.ts';
import { model } from '../models/registry.ts';
import { registerModelRoutes } from './objects.ts';

/** /api/dcim/: sites, manufacturers, device types, device roles, devices, interfaces. */
export function dcimRoutes(app: FastifyInstance, sink: ChangeSink): void {
  for (const key of ['site', 'manufacturer', 'devicetype', 'devicerole', 'device', 'interface']) registerModelRoutes(app, sink, model(key));
}
