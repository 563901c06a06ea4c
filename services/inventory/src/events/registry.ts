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
    w = new DeliveryWorker(deps, deliverySettings(deps.config));
    workers.set(deps, w);
  }
  return w;
}

export function closeWorker(deps: InventoryDeps): void {
  workers.get(deps)?.close();
  workers.delete(deps);
}
