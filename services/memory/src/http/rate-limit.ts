import type { FastifyRequest } from 'fastify';
import { HttpError } from '@svc/kernel';
import type { RateLimit } from '../config.ts';

const SECONDS = { second: 1, minute: 60, hour: 3600, day: 86400 } as const;

const OPEN = /^\/health(\/|\?|$)/;

/**
 * Per-client (IP address) fixed-window limit on every route but /health,
 * answering as slowapi did: 429 `{"error":"Rate limit exceeded: 100 per 1 minute"}`.
 * In-process counters: with several processes each counts its own requests.
 */
export function rateLimitHook(limit: RateLimit) {
  const now = limit.now ?? Date.now;
  const windowMs = limit.multiples * SECONDS[limit.granularity] * 1000;
  const body = { error: `Rate limit exceeded: ${limit.amount} per ${limit.multiples} ${limit.granularity}` };
  const counters = new Map<string, { window: number; count: number }>();
  let lastSweep = 0;
  return async (req: FastifyRequest): Promise<void> => {
    if (OPEN.test(req.url)) return;
    const t = now();
    const window = Math.floor(t / windowMs);
    if (window !== lastSweep) {
      // Forget clients of past windows so the map holds only this window's.
      for (const [k, c] of counters) if (c.window !== window) counters.delete(k);
      lastSweep = window;
    }
    const key = req.ip;
    let c = counters.get(key);
    if (!c) counters.set(key, (c = { window, count: 0 }));
    c.count++;
    if (c.count > limit.amount) {
      const retry = Math.max(1, Math.ceil(((window + 1) * windowMs - t) / 1000));
      throw new HttpError(429, body, { 'Retry-After': String(retry) });
    }
  };
}
