import type { FastifyReply } from 'fastify';
import { UnsafePathError } from '../files/paths.ts';

/** A plain-text answer, where the reference's handler answers with text (userdata, users). */
export function sendText(reply: FastifyReply, status: number, text: string): FastifyReply {
  return reply.code(status).type('text/plain; charset=utf-8').send(text);
}

/** `{"error": message}`, the service's error body where the reference answers with an empty one. */
export function sendError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply.code(status).type('application/json').send(JSON.stringify({ error: message }));
}

/** Runs a path resolution; an unsafe name becomes `onUnsafe(err)` (the route's own status and body). */
export function resolveOr<T>(fn: () => T, onUnsafe: (err: UnsafePathError) => never): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof UnsafePathError) onUnsafe(err);
    throw err;
  }
}

/** The parts of a query string every route reads as text: repeated keys keep the first value, as aiohttp's query.get. */
export function queryString(q: unknown, name: string): string | undefined {
  const v = (q as Record<string, unknown> | undefined)?.[name];
  if (Array.isArray(v)) return typeof v[0] === 'string' ? v[0] : undefined;
  return typeof v === 'string' ? v : undefined;
}

/** `?x=true` as the reference reads flags: only the text "true", any case. */
export function queryFlag(q: unknown, name: string): boolean {
  return queryString(q, name)?.toLowerCase() === 'true';
}
