/**
 * Login attempts per key (client address, username) in a fixed window. The
 * table is bounded: when full, the entry whose window ends first is dropped
 * (an attacker cycling keys only forgets the oldest, never grows memory).
 */
export class AttemptLimiter {
  #hits = new Map<string, { count: number; resetAt: number }>();

  constructor(
    readonly max: number,
    readonly windowMs: number,
    private readonly maxKeys = 50_000,
  ) {}

  /** Counts one attempt; returns the seconds to wait when the key is over its budget, else 0. */
  hit(key: string, now = Date.now()): number {
    if (this.max <= 0) return 0;
    let e = this.#hits.get(key);
    if (!e || e.resetAt <= now) {
      if (e) this.#hits.delete(key);
      else if (this.#hits.size >= this.maxKeys) this.#evict(now);
      e = { count: 0, resetAt: now + this.windowMs };
      // Map order is insertion order: re-inserting keeps the oldest window first.
      this.#hits.set(key, e);
    }
    e.count++;
    return e.count > this.max ? Math.max(1, Math.ceil((e.resetAt - now) / 1000)) : 0;
  }

  #evict(now: number): void {
    for (const [k, e] of this.#hits) {
      if (e.resetAt <= now || this.#hits.size >= this.maxKeys) this.#hits.delete(k);
      else break;
    }
  }
}

export interface LoginThrottleSettings {
  /** Attempts per client address per window (0: unlimited). */
  perAddress: number;
  /** Attempts per username per window (0: unlimited). */
  perUsername: number;
  windowMs: number;
}

export const DEFAULT_LOGIN_THROTTLE: LoginThrottleSettings = { perAddress: 20, perUsername: 10, windowMs: 60_000 };

/** Unauthenticated credential checks (token provisioning, UI login): how long the caller must wait, or 0. */
export class LoginThrottle {
  readonly byAddress: AttemptLimiter;
  readonly byUsername: AttemptLimiter;

  constructor(readonly settings: LoginThrottleSettings = DEFAULT_LOGIN_THROTTLE) {
    this.byAddress = new AttemptLimiter(settings.perAddress, settings.windowMs);
    this.byUsername = new AttemptLimiter(settings.perUsername, settings.windowMs);
  }

  /** Counts an attempt from `address` (and for `username`, when given); the larger wait wins. */
  attempt(address: string, username?: string): number {
    const a = this.byAddress.hit(address);
    const u = username === undefined ? 0 : this.byUsername.hit(username.toLowerCase().slice(0, 150));
    return Math.max(a, u);
  }
}

export function throttledDetail(seconds: number): string {
  return `Request was throttled. Expected available in ${seconds} second${seconds === 1 ? '' : 's'}.`;
}
