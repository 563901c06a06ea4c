// Placeholder written by Part A so app.ts compiles; Part B replaces this file with the real events pipeline.
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Migration } from '@svc/storage';
import type { TaskHandler } from '@svc/queue';
import type { InventoryDeps } from '../deps.ts';
import type { ObjectEvent } from '../changes/types.ts';

export const eventMigrations: Migration[] = [];

export function deliveryTasks(_deps: InventoryDeps): Record<string, TaskHandler> {
  return {};
}

export async function enqueueObjectEvents(_trx: Kysely<any>, _deps: InventoryDeps, _events: ObjectEvent[]): Promise<void> {}

export async function eventRoutes(_app: FastifyInstance, _deps: InventoryDeps): Promise<void> {}
