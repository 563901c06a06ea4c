import type { FastifyInstance } from 'fastify';
import type { ChangeSink } from '../changes/write.ts';
import { MODELS } from '../models/registry.ts';
import { registerModelRoutes } from './objects.ts';
import { availableRoutes } from './ipam-available.ts';
import { availableVlanRoutes } from './ipam-available-vlans.ts';

/** /api/ipam/: VRFs, prefixes (with available-ips / available-prefixes), VLAN groups, VLANs, IP addresses. */
export function ipamRoutes(app: FastifyInstance, sink: ChangeSink): void {
  for (const m of MODELS.filter((x) => x.app === 'ipam')) registerModelRoutes(app, sink, m);
  availableRoutes(app, sink);
  availableVlanRoutes(app, sink);
}
