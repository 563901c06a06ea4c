import type { FastifyInstance } from 'fastify';
import type { ChangeSink } from '../changes/write.ts';
import { MODELS } from '../models/registry.ts';
import { registerModelRoutes } from './objects.ts';

/** /api/vpn/ (L2VPNs and their terminations) and /api/wireless/ (LAN groups, LANs, links): NetBox's apps of those names. */
export function networkingRoutes(app: FastifyInstance, sink: ChangeSink): void {
  for (const m of MODELS.filter((x) => x.app === 'vpn' || x.app === 'wireless')) registerModelRoutes(app, sink, m);
}
