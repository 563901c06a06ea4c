import type { InventoryDeps } from '../deps.ts';
import { DeliveryWorker } from './deliver.ts';
import { deliverySettings } from './settings.ts';

/** One delivery worker (template engine, HTTP agents, in-flight sends) per app instance. */
const workers = new WeakMap<InventoryDeps, DeliveryWorker>();

export function workerFor(deps: InventoryDeps): DeliveryWorker | undefined {
  return workers.get(deps);
}

export function ensureWorker(deps: InventoryDeps): DeliveryWorker {
  let w = workers.get(deps);
  if (!w) {
    w = new DeliveryWorker(deps, deliverySettings(deps.config, process.env, deps.storage.dialect.kind));
    workers.set(deps, w);
  }
  return w;
}

export async function closeWorker(deps: InventoryDeps): Promise<void> {
  const w = workers.get(deps);
  if (!w) return;
  await w.quiesce();
  w.close();
  workers.delete(deps);
}

/**
 * After a commit that queued deliveries: with in-process workers, drain at
 * once; otherwise (or before the worker exists) the queue's wake-up.
 */
export function wakeDelivery(deps: InventoryDeps): void {
  const w = deps.config.runWorkers ? workers.get(deps) : undefined;
  if (w) w.kick();
  else deps.queue.wake();
}

/** Stops kicked drains and waits for the running one (before the queue stops and storage closes). */
export async function quiesceWorker(deps: InventoryDeps): Promise<void> {
  await workers.get(deps)?.quiesce();
}
