import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';

/** Fixed-window counters per key (`login:ip:1.2.3.4`, `login:acct:a@b.c`, …). */
export interface RateLimiter {
  /** Counts one hit; resolves to the seconds to wait when over `limit` per `windowMs`, else 0. */
  hit(key: string, limit: number, windowMs: number): Promise<number>;
  /** Whether `key` is already over `limit` (without counting a hit). */
  blocked(key: string, limit: number): Promise<number>;
  reset(key: string): Promise<void>;
}

function waitSeconds(resetAt: number, now: number): number {
  return Math.max(1, Math.ceil((resetAt - now) / 1000));
}

/** In this process's memory: the embedded (SQLite, one process) default. */
export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  private sweeps = 0;

  async hit(key: string, limit: number, windowMs: number, now = Date.now()): Promise<number> {
    if (++this.sweeps % 1024 === 0) this.sweep(now);
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) {
      w = { count: 0, resetAt: now + windowMs };
      this.windows.set(key, w);
    }
    w.count++;
    return w.count > limit ? waitSeconds(w.resetAt, now) : 0;
  }

  async blocked(key: string, limit: number, now = Date.now()): Promise<number> {
    const w = this.windows.get(key);
    return w && w.resetAt > now && w.count >= limit ? waitSeconds(w.resetAt, now) : 0;
  }

  async reset(key: string): Promise<void> {
    this.windows.delete(key);
  }

  private sweep(now: number): void {
    for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k);
  }
}

/**
 * In the database (PostgreSQL): every API process counts against the same
 * window, so N processes do not multiply the limit. One upsert per hit;
 * only the authentication endpoints count, and they hash passwords anyway.
 */
export class SharedRateLimiter implements RateLimiter {
  private lastSweep = 0;

  constructor(private readonly db: () => Kysely<any>) {}

  /** Keys carry client text (an email may hold NUL or lone surrogates): stored as a digest, which any column holds. */
  private id(key: string): string {
    return createHash('sha256').update(key).digest('base64url');
  }

  async hit(rawKey: string, limit: number, windowMs: number): Promise<number> {
    const key = this.id(rawKey);
    const now = Date.now();
    const r = await sql<{ count: number | string; reset_at: number | string }>`
      insert into id_rate_limits (key, count, reset_at) values (${key}, 1, ${now + windowMs})
      on conflict (key) do update set
        count = case when id_rate_limits.reset_at <= ${now} then 1 else id_rate_limits.count + 1 end,
        reset_at = case when id_rate_limits.reset_at <= ${now} then ${now + windowMs} else id_rate_limits.reset_at end
      returning count, reset_at`.execute(this.db());
    const row = r.rows[0]!;
    if (now - this.lastSweep > windowMs) {
      this.lastSweep = now;
      await this.db().deleteFrom('id_rate_limits').where('reset_at', '<=', now).execute();
    }
    return Number(row.count) > limit ? waitSeconds(Number(row.reset_at), now) : 0;
  }

  async blocked(rawKey: string, limit: number): Promise<number> {
    const key = this.id(rawKey);
    const now = Date.now();
    const row = await this.db().selectFrom('id_rate_limits').select(['count', 'reset_at']).where('key', '=', key).executeTakeFirst();
    return row && Number(row.reset_at) > now && Number(row.count) >= limit ? waitSeconds(Number(row.reset_at), now) : 0;
  }

  async reset(rawKey: string): Promise<void> {
    await this.db().deleteFrom('id_rate_limits').where('key', '=', this.id(rawKey)).execute();
  }
}

export interface RateLimits {
  windowMs: number;
  loginPerIp: number;
  /** Failed logins per account. */
  loginPerAccount: number;
  signupPerIp: number;
  tokenPerIp: number;
  registerPerIp: number;
}

export const DEFAULT_RATE_LIMITS: RateLimits = { windowMs: 60_000, loginPerIp: 60, loginPerAccount: 10, signupPerIp: 30, tokenPerIp: 120, registerPerIp: 30 };

/** `--auth-rate-limits login=60,login_account=10,signup=30,token=120,register=30,window=60` (any subset). */
export function parseRateLimits(spec: string | undefined): RateLimits {
  const out = { ...DEFAULT_RATE_LIMITS };
  if (!spec) return out;
  const names: Record<string, keyof RateLimits> = { login: 'loginPerIp', login_account: 'loginPerAccount', signup: 'signupPerIp', token: 'tokenPerIp', register: 'registerPerIp', window: 'windowMs' };
  for (const part of spec.split(',')) {
    const [k, v] = part.split('=').map((s) => s.trim());
    const field = names[k ?? ''];
    const n = Number(v);
    if (!field || !Number.isInteger(n) || n < 1) throw new Error(`--auth-rate-limits: bad entry "${part}"`);
    out[field] = field === 'windowMs' ? n * 1000 : n;
  }
  return out;
}
