/**
 * Fixed-window counters in memory, per key (`login:ip:1.2.3.4`,
 * `login:acct:a@b.c`, …). Per process: with several API processes the
 * effective limit is the per-process limit times their number, which still
 * bounds a guesser; a shared store is part of the scale-out work.
 */
export class RateLimiter {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  private sweeps = 0;

  /** Counts one hit; returns the seconds to wait when over `limit` per `windowMs`, else 0. */
  hit(key: string, limit: number, windowMs: number, now = Date.now()): number {
    if (++this.sweeps % 1024 === 0) this.sweep(now);
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) {
      w = { count: 0, resetAt: now + windowMs };
      this.windows.set(key, w);
    }
    w.count++;
    return w.count > limit ? Math.max(1, Math.ceil((w.resetAt - now) / 1000)) : 0;
  }

  /** Whether `key` is already over `limit` (without counting a hit). */
  blocked(key: string, limit: number, now = Date.now()): number {
    const w = this.windows.get(key);
    return w && w.resetAt > now && w.count >= limit ? Math.max(1, Math.ceil((w.resetAt - now) / 1000)) : 0;
  }

  reset(key: string): void {
    this.windows.delete(key);
  }

  private sweep(now: number): void {
    for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k);
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
