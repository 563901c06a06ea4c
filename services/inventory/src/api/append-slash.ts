import type { FastifyInstance } from 'fastify';

/** A route URL (`/api/dcim/devices/:id/`, `/docs/*`) as a regular expression over concrete paths. */
function patternOf(url: string): RegExp {
  const body = url
    .split('/')
    .map((seg) => (seg === '*' ? '.*' : seg.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+').replace(/\*/g, '.*')))
    .join('/');
  return new RegExp(`^${body}$`);
}

/**
 * Django's APPEND_SLASH, which NetBox runs with: a GET or HEAD of a path that no route serves, when the
 * same path with a trailing slash is served, answers 301 to it (query kept). Clients written against
 * NetBox rely on it (Ansible's collection asks for `/api/status` and `/api/ipam/prefixes`).
 * Installed before the routes: it watches them being registered.
 */
export function installAppendSlash(app: FastifyInstance): void {
  // Route URLs as registered; their patterns are built on the first request that needs them (a start registers thousands).
  const urls: string[] = [];
  let patterns: { served: RegExp[]; slashed: RegExp[] } | undefined;
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.some((m) => m.toUpperCase() === 'GET' || m.toUpperCase() === 'HEAD')) return;
    urls.push(route.url);
    patterns = undefined;
  });
  const built = () => {
    if (!patterns) {
      const served = urls.map(patternOf);
      patterns = { served, slashed: served.filter((_, i) => urls[i]!.endsWith('/')) };
    }
    return patterns;
  };
  app.addHook('onRequest', async (req, reply) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return;
    const raw = req.url;
    const cut = raw.indexOf('?');
    const path = cut < 0 ? raw : raw.slice(0, cut);
    if (path.endsWith('/') || path.length > 2000) return;
    const { served, slashed } = built();
    if (served.some((re) => re.test(path))) return;
    const target = `${path}/`;
    if (!slashed.some((re) => re.test(target))) return;
    // A path-absolute Location, as Django's; `//host` would be protocol-relative, so it never starts with two slashes.
    if (target.startsWith('//')) return;
    return reply.code(301).header('location', target + (cut < 0 ? '' : raw.slice(cut))).type('text/html; charset=utf-8').send('');
  });
}
