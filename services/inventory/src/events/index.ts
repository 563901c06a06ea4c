import type { TaskHandler } from '@svc/queue';
import type { InventoryDeps } from '../deps.ts';
import { DELIVER_TASK } from './enqueue.ts';
import { ensureWorker } from './registry.ts';

export { eventMigrations } from './schema.ts';
export { enqueueObjectEvents } from './enqueue.ts';

/** Queue tasks: every job just drains whatever deliveries are due (the rows carry the state). */
export function deliveryTasks(deps: InventoryDeps): Record<string, TaskHandler> {
  return {
    [DELIVER_TASK]: async () => {
      await ensureWorker(deps).drain();
    },
  };
}
