import type { FastifyBaseLogger } from 'fastify';
import type { Storage } from '@svc/storage';
import type { JobQueue } from '@svc/queue';
import type { InventoryConfig } from './config.ts';
import type { Auth } from './auth/index.ts';

/** Everything the route plugins and background tasks of the inventory service share. */
export interface InventoryDeps {
  storage: Storage;
  queue: JobQueue;
  config: InventoryConfig;
  auth: Auth;
  log: FastifyBaseLogger;
}
