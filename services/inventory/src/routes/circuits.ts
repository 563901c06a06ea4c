import type { FastifyInstance } from 'fastify';
import type { ChangeSink } from '../changes/write.ts';
import { MODELS } from '../models/registry.ts';
import { registerModelRoutes } from './objects.ts';
import { cablePathRoutes } from './dcim-cable-paths.ts';

/** /api/circuits/: providers, provider networks, circuit types, circuits and their terminations, virtual circuits. */
export function circuitRoutes(app: FastifyInstance, sink: ChangeSink): void {
  for (const m of MODELS.filter((x) => x.app === 'circuits')) registerModelRoutes(app, sink, m);
  cablePathRoutes(app, sink, 'circuits');
}
