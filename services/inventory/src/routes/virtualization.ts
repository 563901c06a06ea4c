import type { FastifyInstance } from 'fastify';
import type { ChangeSink } from '../changes/write.ts';
import { MODELS } from '../models/registry.ts';
import { registerModelRoutes } from './objects.ts';

/** /api/virtualization/: cluster types, cluster groups, clusters, virtual machines, VM interfaces, virtual disks. */
export function virtualizationRoutes(app: FastifyInstance, sink: ChangeSink): void {
  for (const m of MODELS.filter((x) => x.app === 'virtualization')) registerModelRoutes(app, sink, m);
}
