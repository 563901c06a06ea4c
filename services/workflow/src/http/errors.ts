import type { ErrorStyle } from '@svc/kernel';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** aiohttp's plain-text answers for unknown paths and methods, `{"error": …}` for bad requests, as the reference's routes. */
export const workflowErrorStyle: ErrorStyle = {
  validation(err) {
    return { statusCode: 400, body: { error: `Invalid request: ${err.message}` } };
  },
  invalidBody(err, req) {
    if (req.is404) return workflowErrorStyle.notFound(req, false);
    const message = `Invalid JSON body: ${err.message}`;
    if (/\/prompt$/.test(req.routeOptions.url ?? '')) {
      return { statusCode: 400, body: { error: { type: 'invalid_prompt', message: 'Invalid JSON body', details: err.message, extra_info: {} }, node_errors: {} } };
    }
    return { statusCode: 400, body: { error: message } };
  },
  notFound(_req, methodNotAllowed) {
    return methodNotAllowed
      ? { statusCode: 405, body: '405: Method Not Allowed', contentType: 'text/plain; charset=utf-8' }
      : { statusCode: 404, body: '404: Not Found', contentType: 'text/plain; charset=utf-8' };
  },
  internal() {
    return { statusCode: 500, body: { error: 'Internal server error' } };
  },
  unavailable() {
    return { statusCode: 503, body: { error: 'The service is busy (database locked); retry the request.' } };
  },
};

/**
 * Client errors the framework raises before a route runs (a body over the
 * limit, a Content-Type it cannot read, …) reach the shared error handler,
 * which answers them as `{"detail": …}`, a shape no client of this service
 * knows. They leave in this service's body instead: the prompt error on the
 * prompt routes, `{error, code, details}` (CloudError, and an `error`
 * string as the reference's bad requests) everywhere else.
 */
export function frameworkErrorBodies(routes?: RouteMethods) {
  // A callback hook, not an async one: it runs on every response and almost always passes the payload on.
  return (req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void): void => {
    const status = reply.statusCode;
    if (status < 400 || status >= 500) return done(null, payload);
    // RFC 9110 §15.5.6 (and the reference, aiohttp): a 405 names the methods the resource answers.
    if (status === 405 && routes && !reply.hasHeader('allow')) {
      const allowed = routes.allowed(req.url.split('?')[0]!);
      if (allowed.length) reply.header('allow', allowed.join(', '));
    }
    done(null, typeof payload === 'string' && payload.startsWith('{"detail":') ? reshaped(req, status, payload) : payload);
  };
}

function reshaped(req: FastifyRequest, status: number, payload: string): string {
  let detail: unknown;
  try {
    const body = JSON.parse(payload) as Record<string, unknown>;
    if (Object.keys(body).length !== 1) return payload;
    detail = body.detail;
  } catch {
    return payload;
  }
  if (typeof detail !== 'string') return payload;
  const code = status === 413 ? 'payload_too_large' : status === 415 ? 'unsupported_media_type' : 'invalid_request';
  const message = status === 413 ? 'The request body is larger than this endpoint accepts' : status === 415 ? `Unsupported Content-Type: ${String(req.headers['content-type'] ?? '').slice(0, 200)}` : detail;
  if (/\/prompt$/.test(req.routeOptions.url ?? '')) return JSON.stringify({ error: { type: 'invalid_prompt', message, details: code, extra_info: {} }, node_errors: {} });
  return JSON.stringify({ error: message, code, details: {} });
}

/** The methods each route pattern answers (fed by an onRoute hook), for the Allow header of a 405. */
export class RouteMethods {
  /** A route's pattern is built when a path is first checked (a start registers hundreds of routes). */
  private readonly routes: Array<{ methods: string[]; url: string; re?: RegExp }> = [];

  add(method: string | string[], url: string): void {
    this.routes.push({ methods: Array.isArray(method) ? method : [method], url });
  }

  allowed(path: string): string[] {
    const out = new Set<string>();
    for (const r of this.routes) if ((r.re ??= patternOf(r.url)).test(path)) for (const m of r.methods) out.add(m);
    return [...out].sort();
  }
}

function patternOf(url: string): RegExp {
  const pattern = url
    .split('/')
    .map((seg) => (seg === '*' ? '.*' : seg.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+')))
    .join('/');
  return new RegExp(`^${pattern}$`);
}
