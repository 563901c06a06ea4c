import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requireRead } from '../api/guards.ts';
import { notFound, validationError } from '../api/errors.ts';
import { baseUrl, pageOf, paginated } from '../api/pagination.ts';
import { objectId } from '../api/params.ts';
import type { InventoryDeps } from '../deps.ts';
import { values, type Query } from '../models/filters.ts';
import { contentTypeLabel } from '../models/generic-object.ts';
import { objectTypeRows, type ObjectTypeRow } from '../models/object-types.ts';
import type { ReadCtx } from '../models/read.ts';
import { modelForObjectType } from '../models/registry.ts';

/** Django's app_labeled_name of the types that are no model here (the event pipeline's). */
const OTHER_LABELS: Record<string, string> = { 'extras.eventrule': 'Extras | event rule', 'extras.webhook': 'Extras | webhook' };

function represent(base: string, r: ObjectTypeRow) {
  const type = `${r.app_label}.${r.model}`;
  const m = modelForObjectType(type);
  return { id: r.id, url: `${base}/api/extras/object-types/${r.id}/`, display: m ? contentTypeLabel(m) : (OTHER_LABELS[type] ?? type), app_label: r.app_label, model: r.model };
}

/** ObjectTypeFilterSet: id, app_label, model (exact, several values) and q (either contains it). */
function filter(rows: ObjectTypeRow[], q: Query): ObjectTypeRow[] {
  const errors: Record<string, string[]> = {};
  const ids = values(q, 'id');
  if (ids.some((v) => !/^\d{1,16}$/.test(v.trim()))) errors.id = ['Enter a number.'];
  if (Object.keys(errors).length) throw validationError(errors);
  const apps = values(q, 'app_label');
  const models = values(q, 'model');
  const search = values(q, 'q')[0]?.trim().toLowerCase();
  return rows.filter(
    (r) =>
      (!ids.length || ids.some((v) => Number(v) === r.id)) &&
      (!apps.length || apps.includes(r.app_label)) &&
      (!models.length || models.includes(r.model)) &&
      (!search || r.app_label.includes(search) || r.model.includes(search)),
  );
}

/** `/api/extras/object-types/` (NetBox 4.3's read-only ObjectType list): the ids the `*_type_id` filters take. */
export function objectTypeRoutes(app: FastifyInstance, deps: InventoryDeps): void {
  const ctxOf = (): ReadCtx => ({ db: deps.storage.db, dialect: deps.storage.dialect, base: '' });
  app.get('/api/extras/object-types/', { preHandler: requireRead, schema: { tags: ['extras'], summary: 'List object types' } }, async (req: FastifyRequest) => {
    const q = req.query as Query;
    const page = pageOf(q);
    // NetBox orders them by app label and model.
    const rows = filter(await objectTypeRows(ctxOf()), q).sort((a, b) => (a.app_label === b.app_label ? (a.model < b.model ? -1 : 1) : a.app_label < b.app_label ? -1 : 1));
    const base = baseUrl(req);
    return paginated(req, page, rows.length, rows.slice(page.offset, page.offset + page.limit).map((r) => represent(base, r)));
  });
  app.get('/api/extras/object-types/:id/', { preHandler: requireRead, schema: { tags: ['extras'], summary: 'Get an object type' } }, async (req: FastifyRequest) => {
    const id = objectId(req.params);
    const row = (await objectTypeRows(ctxOf())).find((r) => r.id === id);
    if (!row) throw notFound();
    return represent(baseUrl(req), row);
  });
}
