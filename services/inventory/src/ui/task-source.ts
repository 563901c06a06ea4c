import type { InventoryDeps } from '../deps.ts';
import * as tasks from '../events/tasks.ts';

/** A queue as the UI lists it: the task domain's counts plus where its workers run. */
export interface QueueView extends tasks.QueueStats {
  workers: string;
}

/** A task row plus its last attempt's duration, which only the attempt log has (shown on a webhook's Deliveries tab). */
export interface TaskListRow extends tasks.TaskRow {
  lastDurationMs?: number | null;
}

export type TaskFilter = Parameters<typeof tasks.listTasks>[1];

/**
 * The background-task operations the UI needs, bound to the service's deps so
 * the UI can be mounted over another backend. Types and statuses are the task
 * domain's own (src/events/tasks.ts).
 */
export interface TaskSource {
  queues(): Promise<QueueView[]>;
  list(filter: TaskFilter): Promise<{ items: TaskListRow[]; total: number }>;
  get(id: string): Promise<tasks.TaskDetail | null>;
  requeue(id: string): Promise<tasks.ActionResult>;
  stop(id: string): Promise<tasks.ActionResult>;
  delete(id: string): Promise<tasks.ActionResult>;
}

export function createTaskSource(deps: InventoryDeps): TaskSource {
  return {
    async queues() {
      const workers = deps.config.runWorkers ? 'in this process (and any worker processes)' : 'separate worker processes';
      return (await tasks.queueCounts(deps)).map((q) => ({ ...q, workers }));
    },
    async list(filter) {
      const { count, items } = await tasks.listTasks(deps, filter);
      if (filter.webhookId === undefined) return { items, total: count };
      const detailed = await Promise.all(items.map((t) => tasks.getTask(deps, t.id)));
      return {
        items: items.map((t, i) => {
          const last = detailed[i]?.attempts.at(-1);
          return { ...t, lastDurationMs: last ? Math.round(last.durationMs) : null };
        }),
        total: count,
      };
    },
    get: (id) => tasks.getTask(deps, id),
    requeue: (id) => tasks.requeueTask(deps, id),
    stop: (id) => tasks.stopTask(deps, id),
    delete: (id) => tasks.deleteTask(deps, id),
  };
}
