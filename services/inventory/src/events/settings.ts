import os from 'node:os';
import type { InventoryConfig } from '../config.ts';
import { defaultPoolSize } from '@svc/jinja';
import { parseCidrList, type Cidr } from './guard.ts';

/** Delivery settings (env, or the same names as --flags in camelCase on the command line). */
export interface DeliverySettings {
  /** Per-request timeout when the webhook sets none (ms). */
  defaultTimeoutMs: number;
  /** Automatic retries after the first try; 0 reproduces NetBox (failed at once). */
  maxRetries: number;
  retryBaseMs: number;
  retryFactor: number;
  retryMaxMs: number;
  /** Fraction of each delay randomised (0.2 → ±20 %). */
  retryJitter: number;
  /**
   * How long a claim is held without a heartbeat: a worker renews the claims it
   * holds every third of this while it sends, so a claimer that died or froze
   * loses them (and another worker re-sends) within about this long.
   */
  leaseMs: number;
  /** Deliveries claimed per cycle of a loop (capped by concurrency) and sent concurrently. */
  batchSize: number;
  concurrency: number;
  allow: Cidr[];
  deny: Cidr[];
  /** Glob patterns of environment variables templates may read with `| env`. */
  jinjaEnvParams: string[];
  /** Template render worker threads, their heap limit (MB) and hard time limit per render (ms). */
  renderWorkers: number;
  renderHeapMb: number;
  renderHardTimeoutMs: number;
  /** Sign and send webhook requests in a thread of their own (default: when the machine has more than one core). */
  sendThread: boolean;
}

function num(v: unknown, dflt: number, min: number, max: number, name: string): number {
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || n > max) throw new Error(`invalid ${name}: ${String(v)} (expected ${min}..${max})`);
  return n;
}

function list(v: unknown): string[] {
  if (typeof v !== 'string' || !v.trim()) return [];
  const t = v.trim();
  if (t.startsWith('[')) return (JSON.parse(t) as unknown[]).map(String);
  return t.split(/[\s,]+/).filter(Boolean);
}

/**
 * Deliveries per claim cycle by storage: on PostgreSQL each cycle costs about eight round trips to the server (begin,
 * commit, outcome update, attempt insert, claim, contexts, …) whatever its size, so larger cycles amortise them; SQLite's
 * cycle has no round trips and 64 keeps the chunk re-sent after a crash small.
 */
const DEFAULT_CHUNK = { sqlite: 64, postgres: 192 } as const;

export function deliverySettings(cfg?: Pick<InventoryConfig, 'flags'>, env: NodeJS.ProcessEnv = process.env, storage: 'sqlite' | 'postgres' = 'sqlite'): DeliverySettings {
  const chunk = DEFAULT_CHUNK[storage];
  const pick = (flag: string, envName: string) => {
    const f = cfg?.flags?.[flag];
    return typeof f === 'string' ? f : env[envName];
  };
  return {
    defaultTimeoutMs: num(pick('webhookTimeout', 'INVENTORY_WEBHOOK_TIMEOUT'), 15, 0.05, 3600, 'INVENTORY_WEBHOOK_TIMEOUT (seconds)') * 1000,
    maxRetries: num(pick('webhookRetries', 'INVENTORY_WEBHOOK_RETRIES'), 5, 0, 100, 'INVENTORY_WEBHOOK_RETRIES'),
    retryBaseMs: num(pick('webhookRetryBaseMs', 'INVENTORY_WEBHOOK_RETRY_BASE_MS'), 30_000, 0, 86_400_000, 'INVENTORY_WEBHOOK_RETRY_BASE_MS'),
    retryFactor: num(pick('webhookRetryFactor', 'INVENTORY_WEBHOOK_RETRY_FACTOR'), 3, 1, 100, 'INVENTORY_WEBHOOK_RETRY_FACTOR'),
    retryMaxMs: num(pick('webhookRetryMaxMs', 'INVENTORY_WEBHOOK_RETRY_MAX_MS'), 6 * 3_600_000, 0, 30 * 86_400_000, 'INVENTORY_WEBHOOK_RETRY_MAX_MS'),
    retryJitter: num(pick('webhookRetryJitter', 'INVENTORY_WEBHOOK_RETRY_JITTER'), 0.2, 0, 1, 'INVENTORY_WEBHOOK_RETRY_JITTER'),
    leaseMs: num(pick('webhookLeaseMs', 'INVENTORY_WEBHOOK_LEASE_MS'), 10_000, 300, 3_600_000, 'INVENTORY_WEBHOOK_LEASE_MS'),
    batchSize: num(pick('webhookBatch', 'INVENTORY_WEBHOOK_BATCH'), chunk, 1, 10_000, 'INVENTORY_WEBHOOK_BATCH'),
    concurrency: num(pick('webhookConcurrency', 'INVENTORY_WEBHOOK_CONCURRENCY'), chunk, 1, 1000, 'INVENTORY_WEBHOOK_CONCURRENCY'),
    allow: parseCidrList(list(pick('webhookAllow', 'INVENTORY_WEBHOOK_ALLOW')), 'INVENTORY_WEBHOOK_ALLOW'),
    deny: parseCidrList(list(pick('webhookDeny', 'INVENTORY_WEBHOOK_DENY')), 'INVENTORY_WEBHOOK_DENY'),
    jinjaEnvParams: list(pick('jinjaEnvParams', 'INVENTORY_JINJA_ENV_PARAMS')),
    renderWorkers: num(pick('renderWorkers', 'INVENTORY_RENDER_WORKERS'), defaultPoolSize(), 1, 64, 'INVENTORY_RENDER_WORKERS'),
    renderHeapMb: num(pick('renderHeapMb', 'INVENTORY_RENDER_HEAP_MB'), 256, 16, 16_384, 'INVENTORY_RENDER_HEAP_MB'),
    renderHardTimeoutMs: num(pick('renderHardTimeoutMs', 'INVENTORY_RENDER_HARD_TIMEOUT_MS'), 5000, 100, 600_000, 'INVENTORY_RENDER_HARD_TIMEOUT_MS'),
    sendThread: num(pick('webhookSendThread', 'INVENTORY_WEBHOOK_SEND_THREAD'), os.availableParallelism() > 1 ? 1 : 0, 0, 1, 'INVENTORY_WEBHOOK_SEND_THREAD (0 or 1)') === 1,
  };
}

/** Delay before retry number `n` (1-based): base·factor^(n-1), capped, with jitter. */
export function retryDelayMs(s: DeliverySettings, n: number, random = Math.random): number {
  const raw = Math.min(s.retryMaxMs, s.retryBaseMs * s.retryFactor ** Math.max(0, n - 1));
  const jitter = raw * s.retryJitter * (2 * random() - 1);
  return Math.max(0, Math.round(raw + jitter));
}
