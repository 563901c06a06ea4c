import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';
import { HttpError } from '@svc/kernel';

/** Where and why a body is not UTF-8, worded as Python's codec error that DRF quotes. */
export function utf8Problem(buf: Buffer): string {
  let i = 0;
  while (i < buf.length) {
    const b = buf[i]!;
    const need = b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (need < 0) return `'utf-8' codec can't decode byte 0x${b.toString(16).padStart(2, '0')} in position ${i}: invalid start byte`;
    for (let k = 1; k <= need; k++) {
      const c = buf[i + k];
      if (c === undefined) return `'utf-8' codec can't decode bytes in position ${i}-${buf.length - 1}: unexpected end of data`;
      // Overlong forms and UTF-16 surrogates (ED A0..BF) are invalid in their second byte.
      const lo = k === 1 ? (b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80) : 0x80;
      const hi = k === 1 ? (b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf) : 0xbf;
      if (c < lo || c > hi) return `'utf-8' codec can't decode byte 0x${b.toString(16).padStart(2, '0')} in position ${i}: invalid continuation byte`;
    }
    i += need + 1;
  }
  return "'utf-8' codec can't decode the body";
}

/**
 * DRF reads an empty JSON body as "no data" rather than a parse error (so a
 * DELETE with `Content-Type: application/json` and no body is fine), reports
 * broken JSON and bodies that are not UTF-8 as `{"detail": "JSON parse error - …"}`.
 * Installed on the root instance so every route plugin inherits it.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => {
    const buf = body as Buffer;
    if (!isUtf8(buf)) return done(new HttpError(400, { detail: `JSON parse error - ${utf8Problem(buf)}` }), undefined);
    const text = buf.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text));
    } catch (err) {
      done(new HttpError(400, { detail: `JSON parse error - ${(err as Error).message}` }), undefined);
    }
  });
}
