import type { FastifyInstance } from 'fastify';
import { baseUrl } from '../api/pagination.ts';
import { requireRead } from '../auth/index.ts';
import type { ObjectEvent } from '../changes/types.ts';
import type { ChangeSink } from '../changes/write.ts';
import type { InventoryDeps } from '../deps.ts';
import { MODELS, modelForObjectType } from '../models/registry.ts';
import { fetchRowsByIds } from '../models/read.ts';
import { represent } from '../models/represent.ts';
import { objectChangeRoutes } from './core-object-changes.ts';
import { dcimRoutes } from './dcim.ts';
import { tagRoutes } from './extras-tags.ts';
import { ipamRoutes } from './ipam.ts';
import { statusRoutes } from './status.ts';
import { userRoutes } from './users.ts';

export interface CoreRouteOptions {
  deps: InventoryDeps;
  onObjectEvents?: (events: ObjectEvent[]) => void;
}

/**
 * Part A's REST API. Request bodies and queries are validated in the
 * handlers (DRF wording and shapes); schemas here only document the API.
 */
export async function coreRoutes(app: FastifyInstance, opts: CoreRouteOptions): Promise<void> {
  app.setValidatorCompiler(() => () => true);
  // Response schemas document the API; output is plain JSON.stringify so no field is ever dropped by a schema.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  const { deps } = opts;
  const sink: ChangeSink = {
    deps,
    onObjectEvents: opts.onObjectEvents,
    async representations(trx, objectType, ids) {
      const m = modelForObjectType(objectType);
      if (!m) return new Map();
      const ctx = { db: trx, dialect: deps.storage.dialect, base: '' };
      const rows = [...(await fetchRowsByIds(ctx, m, ids)).values()];
      return new Map((await represent(ctx, m, rows)).map((r) => [r.id as number, r]));
    },
  };

  app.get('/api/', { preHandler: requireRead, schema: { tags: ['status'], summary: 'API root' } }, async (req) => {
    const base = baseUrl(req);
    const apps: Record<string, string> = {};
    for (const a of ['core', 'dcim', 'extras', 'ipam', 'users']) apps[a] = `${base}/api/${a}/`;
    return apps;
  });
  for (const a of ['dcim', 'ipam', 'extras']) {
    app.get(`/api/${a}/`, { preHandler: requireRead, schema: { tags: ['status'], summary: `${a} endpoints` } }, async (req) => {
      const base = baseUrl(req);
      return Object.fromEntries(MODELS.filter((m) => m.app === a).map((m) => [m.path, `${base}/api/${m.app}/${m.path}/`]));
    });
  }

  await statusRoutes(app, deps);
  dcimRoutes(app, sink);
  ipamRoutes(app, sink);
  tagRoutes(app, sink);
  await objectChangeRoutes(app, deps);
  await userRoutes(app, deps);
}
