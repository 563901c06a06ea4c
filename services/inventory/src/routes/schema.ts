import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CachedJson } from '@svc/kernel';
import { notFound } from '../api/errors.ts';

type Format = 'json' | 'yaml';

/** drf-spectacular's choice: `?format=` wins, then Accept; YAML by default; any other format is a 404 as DRF's. */
function formatOf(req: FastifyRequest): Format {
  const raw = (req.query as Record<string, unknown>).format;
  const f = Array.isArray(raw) ? raw[raw.length - 1] : raw;
  if (f !== undefined) {
    if (f === 'json' || f === 'yaml') return f;
    throw notFound();
  }
  const accept = String(req.headers.accept ?? '').toLowerCase();
  const json = accept.search(/application\/(vnd\.oai\.openapi\+)?json/);
  const yaml = accept.search(/application\/(vnd\.oai\.openapi|yaml|x-yaml)(?![+\w])/);
  if (json >= 0 && (yaml < 0 || json < yaml)) return 'json';
  return 'yaml';
}

/** `/api/schema/` (the OpenAPI document NetBox clients fetch) and `/api/schema/swagger-ui/` (the docs). */
export async function schemaRoutes(app: FastifyInstance): Promise<void> {
  const root = app as unknown as { swagger(opts?: { yaml?: boolean }): unknown };
  // Every parameter inline, as NetBox's own document (Ansible's inventory reads each filter's name
  // from the operation's list): the largest document, serialized once per format and gzipped on request.
  let json: CachedJson | undefined;
  let yaml: CachedJson | undefined;
  app.get('/api/schema/', { schema: { hide: true } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const format = formatOf(req);
    reply.header('Vary', 'Accept');
    if (format === 'json') return (json ??= new CachedJson(JSON.stringify(root.swagger()))).send(req, reply, 'application/vnd.oai.openapi+json');
    return (yaml ??= new CachedJson(root.swagger({ yaml: true }) as string)).send(req, reply, 'application/vnd.oai.openapi; charset=utf-8');
  });
  app.get('/api/schema/swagger-ui/', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/docs/', 302));
}
