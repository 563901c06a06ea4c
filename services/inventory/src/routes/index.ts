import type { FastifyInstance } from 'fastify';
import type { ApiConventions } from '../api/conventions.ts';
import { enqueueObjectEvents } from '../events/index.ts';
import { describeEventEndpoints } from '../events/metadata.ts';
import { wakeDelivery } from '../events/registry.ts';
import { modelFieldInfo } from '../models/metadata.ts';
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
import { schemaRoutes } from './schema.ts';
import { statusRoutes } from './status.ts';
import { tenancyRoutes } from './tenancy.ts';
import { registerModelRoutes } from './objects.ts';
import { userRoutes } from './users.ts';
import { permissionRoutes } from './users-permissions.ts';
import { virtualizationRoutes } from './virtualization.ts';
import { circuitRoutes } from './circuits.ts';
import { networkingRoutes } from './networking.ts';
import { extrasConfigRoutes } from './extras-config.ts';
import { objectTypeRoutes } from './extras-object-types.ts';
import { dataSourceRoutes } from './core-data-sources.ts';

/** The apps whose roots `/api/` lists (besides `plugins` and `status`). */
export const API_APPS = ['circuits', 'core', 'dcim', 'extras', 'ipam', 'tenancy', 'users', 'virtualization', 'vpn', 'wireless'];

export interface CoreRouteOptions {
  deps: InventoryDeps;
  conventions: ApiConventions;
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
    enqueueEvents: (trx, events) => enqueueObjectEvents(trx, deps, events),
    wakeDelivery: () => wakeDelivery(deps),
  };

  opts.conventions.registerRoots(app, API_APPS);
  describeEventEndpoints(opts.conventions);
  for (const m of MODELS) opts.conventions.describe(`/api/${m.app}/${m.path}/`, { name: m.title.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/^IPAddress$/, 'IP Address'), fields: () => modelFieldInfo(m) });

  await statusRoutes(app, deps);
  await schemaRoutes(app);
  dcimRoutes(app, sink);
  ipamRoutes(app, sink);
  tenancyRoutes(app, sink);
  virtualizationRoutes(app, sink);
  circuitRoutes(app, sink);
  networkingRoutes(app, sink);
  tagRoutes(app, sink);
  registerModelRoutes(app, sink, MODELS.find((m) => m.key === 'customfield')!);
  extrasConfigRoutes(app, sink);
  objectTypeRoutes(app, deps);
  dataSourceRoutes(app, sink);
  await objectChangeRoutes(app, deps);
  await userRoutes(app, deps);
  await permissionRoutes(app, deps);
}
