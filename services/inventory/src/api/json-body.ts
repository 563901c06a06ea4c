import type { FastifyInstance } from 'fastify';
import { HttpError } from '@svc/kernel';

/**
 * DRF reads an empty JSON body as "no data" rather than a parse error, and
 * reports broken JSON as `{"detail": "JSON parse error - …"}`.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(new HttpError(400, { detail: `JSON parse error - ${(err as Error).message}` }), undefined);
    }
  });
}
