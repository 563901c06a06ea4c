import type { FastifyInstance } from 'fastify';
import { requirePermission } from '../api/guards.ts';
import { notFound } from '../api/errors.ts';
import { baseUrl } from '../api/pagination.ts';
import { objectId } from '../api/params.ts';
import type { ChangeSink } from '../changes/write.ts';
import { pathsView, traceView } from '../models/cable-paths.ts';
import { fetchRow, type ReadCtx } from '../models/read.ts';
import { MODELS } from '../models/registry.ts';

/** Path endpoints answer `/trace/` (NetBox's PathEndpointMixin); pass-through ports and circuit terminations `/paths/`. */
const TRACE = new Set(['interface', 'consoleport', 'consoleserverport', 'powerport', 'poweroutlet', 'powerfeed']);
const PATHS = new Set(['frontport', 'rearport', 'circuittermination', 'virtualcircuittermination']);

export function cablePathRoutes(app: FastifyInstance, sink: ChangeSink, appLabel: string): void {
  for (const m of MODELS.filter((x) => x.app === appLabel && (TRACE.has(x.key) || PATHS.has(x.key)))) {
    const action = TRACE.has(m.key) ? 'trace' : 'paths';
    app.get(
      `/api/${m.app}/${m.path}/:id/${action}/`,
      { preHandler: requirePermission(m.objectType, 'view'), config: { shaped: true }, schema: { tags: [m.docsTag ?? m.app], summary: action === 'trace' ? `Trace the cable path of a ${m.verboseName}` : `Cable paths through a ${m.verboseName}` } },
      async (req) => {
        const ctx: ReadCtx = { db: sink.deps.storage.db, dialect: sink.deps.storage.dialect, base: baseUrl(req) };
        const row = await fetchRow(ctx, m, objectId(req.params));
        if (!row) throw notFound();
        const start = { object_type: m.objectType, object_id: row.id as number };
        return action === 'trace' ? traceView(ctx, start) : pathsView(ctx, start);
      },
    );
  }
}
