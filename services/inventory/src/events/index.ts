import type { TaskHandler } from '@svc/queue';
import type { InventoryDeps } from '../deps.ts';
import { DELIVER_TASK } from './enqueue.ts';
import { ensureWorker } from './registry.ts';

export { eventMigrations } from './schema.ts';
export { enqueueObjectEvents } from './enqueue.ts';

/**
 * Queue tasks: every job drains whatever deliveries are due (the rows carry the state). A worker's recovery job
 * names that worker: when another one runs it, it checks that the claims it was for were all taken.
 */
export function deliveryTasks(deps: InventoryDeps): Record<string, TaskHandler> {
  return {
    [DELIVER_TASK]: async (payload: unknown) => {
      const worker = ensureWorker(deps);
      await worker.drain();
      const claimer = payload && typeof payload === 'object' ? (payload as { recover?: unknown }).recover : undefined;
      if (typeof claimer === 'string') await worker.recoverAgain(claimer);
    },
  };
}
