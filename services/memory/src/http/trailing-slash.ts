import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '@svc/kernel';

/**
 * Starlette's redirect_slashes: a request for `/apps/` that only exists as
 * `/apps` answers 307 to the slash-less URL (method and body are kept).
 * Route patterns are collected as they are registered.
 */
export function installSlashRedirect(app: App): void {
  const routes: Array<{ methods: Set<string>; re: RegExp }> = [];
  app.addHook('onRoute', (route) => {
    // `:name` and `:name(regex)` (the regex may contain `/`) match one path segment or part of one.
    const pattern = route.url
      .replace(/:[A-Za-z0-9_]+(\([^)]*\))?/g, '\u0000')
      .replace(/[.+?^${}()|[\]\\*]/g, '\\$&')
      .replace(/\u0000/g, '[^/]+');
    const re = new RegExp(`^${pattern}$`);
    routes.push({ methods: new Set(Array.isArray(route.method) ? route.method : [route.method]), re });
  });
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const q = req.url.indexOf('?');
    const path = q < 0 ? req.url : req.url.slice(0, q);
    if (path.length < 2 || !path.endsWith('/') || path.startsWith('/docs')) return;
    const target = path.replace(/\/+$/, '');
    if (!target || !routes.some((r) => r.methods.has(req.method) && r.re.test(target))) return;
    // A router match for the slash form itself (none here) would have priority; only unknown paths get here.
    if (req.routeOptions.url) return;
    reply.code(307).header('location', target + (q < 0 ? '' : req.url.slice(q))).send();
    return reply;
  });
}
