import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { HttpError } from '@svc/kernel';

// The root URL only redirects to the docs.
export const OPEN = /^\/((health|openapi\.json|docs)(\/|\?|$)|(\?|$))/;

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Optional API-key auth. Without configured keys the Authorization header is
 * ignored (the reference's clients always send `Bearer <something>`); with
 * keys, every route but /, /health, /docs and /openapi.json needs one of them.
 */
export function apiKeyHook(keys: string[]) {
  const known = keys.map(digest);
  return async (req: FastifyRequest): Promise<void> => {
    if (OPEN.test(req.url)) return;
    const h = req.headers.authorization;
    const m = typeof h === 'string' ? /^Bearer\s+(.+)$/i.exec(h.trim()) : null;
    if (m) {
      const d = digest(m[1]!);
      if (known.some((k) => timingSafeEqual(k, d))) return;
    }
    throw new HttpError(401, { detail: m ? 'Invalid API key' : 'Not authenticated' }, { 'WWW-Authenticate': 'Bearer' });
  };
}
