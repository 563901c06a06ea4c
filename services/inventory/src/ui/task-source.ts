import type { InventoryDeps } from '../deps.ts';

/** Statuses of a webhook delivery task, in the order the queue table shows them. */
export const TASK_STATUSES = ['queued', 'scheduled', 'sent', 'successful', 'failed', 'stopped'] as const;

export interface QueueStats {
  name: string;
  counts: Record<string, number>;
  workers?: number | null;
}

export interface TaskRow {
  id: string;
  status: string;
  queue: string;
  callable: string;
  event: string;
  objectType: string;
  objectId: number | null;
  webhookId: number | null;
  webhookName: string | null;
  eventRuleId: number | null;
  eventRuleName: string | null;
  attemptCount: number;
  lastResponseStatus: number | null;
  lastDurationMs: number | null;
  createdAt: unknown;
  enqueuedAt: unknown;
  endedAt: unknown;
}

export interface RenderedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
}

export interface TaskAttempt {
  number: number;
  outcome?: string;
  startedAt: unknown;
  durationMs: number | null;
  request: RenderedRequest | null;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
}

export interface TaskDetail extends TaskRow {
  messageId: string | null;
  nextAttemptAt: unknown;
  maxAttempts: number | null;
  timeoutSeconds: number | null;
  /** The event context the webhook was rendered from (event, data, snapshots, username, …). */
  arguments: Record<string, unknown>;
  renderedRequest: RenderedRequest | null;
  attempts: TaskAttempt[];
  errorLog: string | null;
  canRequeue: boolean;
  canStop: boolean;
}

export interface ActionResult {
  ok: boolean;
  notFound?: boolean;
  message: string;
}

export interface TaskFilter {
  queue?: string;
  status?: string;
  webhookId?: number;
  limit: number;
  offset: number;
}

/** The background-task view the UI renders; adapts Part B's task domain (src/events/tasks.ts). */
export interface TaskSource {
  queues(): Promise<QueueStats[]>;
  list(filter: TaskFilter): Promise<{ items: TaskRow[]; total: number }>;
  get(id: string): Promise<TaskDetail | null>;
  requeue(id: string): Promise<ActionResult>;
  stop(id: string): Promise<ActionResult>;
  delete(id: string): Promise<ActionResult>;
}

class NotWired extends Error {
  statusCode = 503;
  constructor() {
    super('Background task data is not available: the task domain (src/events/tasks.ts) is not wired in yet.');
  }
}

// Interim until Part B's task domain lands; replaced by the adapter over src/events/tasks.ts.
export function createTaskSource(_deps: InventoryDeps): TaskSource {
  const fail = async (): Promise<never> => {
    throw new NotWired();
  };
  return { queues: fail, list: fail, get: fail, requeue: fail, stop: fail, delete: fail };
}
