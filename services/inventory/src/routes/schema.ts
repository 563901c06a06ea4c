import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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
  app.get('/api/schema/', { schema: { hide: true } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const format = formatOf(req);
    reply.header('Vary', 'Accept');
    if (format === 'json') return reply.type('application/vnd.oai.openapi+json').send(JSON.stringify(root.swagger()));
    return reply.type('application/vnd.oai.openapi; charset=utf-8').send(root.swagger({ yaml: true }) as string);
  });
  app.get('/api/schema/swagger-ui/', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/docs/', 302));
}
