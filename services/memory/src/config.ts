import type { ServiceConfig } from '@svc/kernel';

/**
 * The memory service's configuration: the shared ServiceConfig plus the
 * service's own settings. Owner B adds embedding/LLM fields here (add only).
 */
export interface MemoryConfig extends ServiceConfig {
  /** Bearer keys accepted when API-key auth is on; undefined/empty means the Authorization header is ignored. */
  apiKeys?: string[];
  /**
   * Deriver jobs run at once per process (`--worker-concurrency` or
   * MEMORY_WORKER_CONCURRENCY). Default 4 on SQLite (the work is CPU in this
   * process); 16 on PostgreSQL, where a job mostly waits on round trips.
   */
  workerConcurrency?: number;
  /** Per-client request limit (`--rate-limit 100/minute` or MEMORY_RATE_LIMIT); off when unset. */
  rateLimit?: RateLimit | string;
  embedding: Record<string, unknown>;
  llm: Record<string, unknown>;
  /** v3 webhooks: the HMAC-SHA256 key of `X-Honcho-Signature` (`--webhook-secret` / MEMORY_WEBHOOK_SECRET); without it events are dropped, as the reference does. */
  webhookSecret?: string;
  /** v3 webhooks: accept endpoint URLs whose host is a private or loopback IP literal (`--webhook-allow-private` / MEMORY_WEBHOOK_ALLOW_PRIVATE=1; for local receivers). */
  webhookAllowPrivate?: boolean;
  /** Scoped JWT keys on (the reference's AUTH_USE_AUTH; `--auth-use-auth`): every route needs a key, see src/http/v3-auth.ts. */
  authUseAuth?: boolean;
  /** The HS256 secret of the keys (AUTH_JWT_SECRET; `--auth-jwt-secret`); required when auth is on. */
  authJwtSecret?: string;
}

/** A per-client request limit (`--rate-limit`), enforced by src/http/rate-limit.ts. */
export interface RateLimit {
  amount: number;
  /** Window length in units of `granularity`. */
  multiples: number;
  granularity: 'second' | 'minute' | 'hour' | 'day';
  /** Clock (ms); tests pin it. */
  now?: () => number;
}

/**
 * Parses the limits-library notation the reference (slowapi) used:
 * `100/minute`, `100 per minute`, `10/5 minutes`, `10 per 5 minutes`.
 */
export function parseRateLimit(text: string): RateLimit {
  const m = /^\s*(\d+)\s*(?:\/|per)\s*(\d+)?\s*(second|minute|hour|day)s?\s*$/i.exec(text);
  if (!m || Number(m[1]) < 1 || (m[2] !== undefined && Number(m[2]) < 1)) {
    throw new Error(`invalid rate limit "${text}" (expected e.g. 100/minute or 10 per 5 minutes)`);
  }
  return { amount: Number(m[1]), multiples: m[2] ? Number(m[2]) : 1, granularity: m[3]!.toLowerCase() as RateLimit['granularity'] };
}

function list(v: unknown): string[] | undefined {
  if (typeof v !== 'string') return undefined;
  const keys = v.split(',').map((s) => s.trim()).filter(Boolean);
  return keys.length ? keys : undefined;
}

/** Reads the memory-specific settings from flags (`--api-keys a,b`) and env (`MEMORY_API_KEYS`). */
export function memoryConfig(cfg: ServiceConfig, env: NodeJS.ProcessEnv = process.env): MemoryConfig {
  const base = cfg as Partial<MemoryConfig> & ServiceConfig;
  return {
    ...cfg,
    apiKeys: base.apiKeys ?? list(cfg.flags.apiKeys) ?? list(env.MEMORY_API_KEYS),
    workerConcurrency: base.workerConcurrency ?? positiveInt(cfg.flags.workerConcurrency ?? env.MEMORY_WORKER_CONCURRENCY),
    rateLimit: rateLimitFrom(base.rateLimit ?? cfg.flags.rateLimit ?? env.MEMORY_RATE_LIMIT),
    embedding: base.embedding ?? {},
    llm: base.llm ?? {},
    webhookSecret: base.webhookSecret ?? (typeof cfg.flags.webhookSecret === 'string' ? cfg.flags.webhookSecret : undefined) ?? (env.MEMORY_WEBHOOK_SECRET || undefined),
    webhookAllowPrivate: base.webhookAllowPrivate ?? (cfg.flags.webhookAllowPrivate === true || cfg.flags.webhookAllowPrivate === 'true' || env.MEMORY_WEBHOOK_ALLOW_PRIVATE === '1'),
    ...authSettings(base, cfg, env),
  };
}

/** pydantic's bool: true/1/yes/on/t/y (any case); false/0/no/off/f/n; anything else is an error. */
function pyBool(v: unknown, name: string): boolean | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'boolean') return v;
  const s = String(v).trim().toLowerCase();
  if (['true', '1', 'yes', 'on', 't', 'y'].includes(s)) return true;
  if (['false', '0', 'no', 'off', 'f', 'n'].includes(s)) return false;
  throw new Error(`invalid ${name} "${v}" (a boolean)`);
}

function authSettings(base: Partial<MemoryConfig>, cfg: ServiceConfig, env: NodeJS.ProcessEnv): Pick<MemoryConfig, 'authUseAuth' | 'authJwtSecret'> {
  const useAuth = base.authUseAuth ?? pyBool(cfg.flags.authUseAuth, '--auth-use-auth') ?? pyBool(env.AUTH_USE_AUTH, 'AUTH_USE_AUTH') ?? false;
  const secret = base.authJwtSecret ?? (typeof cfg.flags.authJwtSecret === 'string' ? cfg.flags.authJwtSecret : undefined) ?? (env.AUTH_JWT_SECRET || undefined);
  if (useAuth && !secret) throw new Error('JWT_SECRET must be set if USE_AUTH is true (AUTH_JWT_SECRET or --auth-jwt-secret)');
  return { authUseAuth: useAuth, authJwtSecret: secret };
}

function rateLimitFrom(v: unknown): RateLimit | undefined {
  if (v === undefined || v === null || v === '' || v === false || v === 'off' || v === '0') return undefined;
  if (typeof v === 'object') return v as RateLimit;
  return parseRateLimit(String(v));
}

function positiveInt(v: unknown): number | undefined {
  if (typeof v !== 'string' || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 256) throw new Error(`invalid worker concurrency "${v}" (an integer 1..256)`);
  return n;
}
