import type { FastifyInstance } from 'fastify';

/** Deeper JSON is refused before parsing: no prompt needs it, and deep values would only burden every walk over them. */
export const MAX_JSON_DEPTH = 512;

/** Depth of JSON text, counted outside strings, stopping as soon as it exceeds `max`. */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++;
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > max) return true;
    } else if (c === 125 || c === 93) depth--;
  }
  return false;
}

/**
 * JSON bodies whatever their Content-Type (the reference reads JSON from any
 * request, and clients send form or no content types): empty means no body;
 * too deep, malformed or invalid UTF-8 is a 400.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, buf, done) => {
    const bytes = buf as Buffer;
    if (bytes.length === 0) return done(null, undefined);
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      return done(new SyntaxError('body is not valid UTF-8'), undefined);
    }
    if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) return done(new SyntaxError(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}
