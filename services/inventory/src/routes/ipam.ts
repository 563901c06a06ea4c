import type { FastifyInstance } from 'fastify';
import type { ChangeSink } from '../changes/write.ts';
import { model } from '../models/registry.ts';
import { registerModelRoutes } from './objects.ts';

/** /api/ipam/ip-addresses/. */
export function ipamRoutes(app: FastifyInstance, sink: ChangeSink): void {
  registerModelRoutes(app, sink, model('ipaddress'));
}
