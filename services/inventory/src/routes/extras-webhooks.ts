import type { FastifyInstance } from 'fastify';
import { requireAdmin, requireRead } from '../auth/index.ts';
import type { InventoryDeps } from '../deps.ts';
import { ensureWorker } from '../events/registry.ts';
import { bulk, bulkId, noContent, notFound, pageParams, paginated, pathId, queryIds, queryList, withValidation } from '../events/rest.ts';
import { ValidationFailed } from '../events/validate.ts';
import { createWebhook, deleteWebhook, getWebhook, listWebhooks, serializeWebhook, updateWebhook, validateWebhook } from '../events/webhooks.ts';

/** `/api/extras/webhooks/`: reads for any authenticated caller, writes for administrators (templates are code). */
export async function webhookRoutes(app: FastifyInstance, deps: InventoryDeps): Promise<void> {
  const { db } = deps.storage;
  const d = deps.storage.dialect;
  const engine = () => ensureWorker(deps).engine;
  const NAME = 'Webhook';

  app.get('/api/extras/webhooks/', { preHandler: requireRead }, async (req) => {
    const page = pageParams(req);
    const q = (req.query as Record<string, unknown>).q;
    const { count, rows } = await listWebhooks(db, d, { id: queryIds(req, 'id'), name: queryList(req, 'name'), q: typeof q === 'string' ? q.slice(0, 200) : undefined, ...page });
    return paginated(req, count, rows.map(serializeWebhook), page);
  });

  app.get('/api/extras/webhooks/:id/', { preHandler: requireRead }, async (req) => {
    const w = await getWebhook(db, d, pathId(req, NAME));
    if (!w) throw notFound(NAME);
    return serializeWebhook(w);
  });

  app.post('/api/extras/webhooks/', { preHandler: requireAdmin }, async (req, reply) => {
    if (Array.isArray(req.body)) {
      const rows = await db.transaction().execute((trx) => bulk(req.body, async (item) => createWebhook(trx, d, validateWebhook(item, undefined, false, engine()))));
      return reply.code(201).send(rows.map(serializeWebhook));
    }
    const w = await withValidation(async () => createWebhook(db, d, validateWebhook(req.body, undefined, false, engine())));
    return reply.code(201).send(serializeWebhook(w));
  });

  // Bulk update and delete on the list URL: [{"id": 1, …}, …].
  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/extras/webhooks/',
      preHandler: requireAdmin,
      handler: async (req) => {
        const rows = await db.transaction().execute((trx) =>
          bulk(req.body, async (item) => {
            const id = bulkId(item);
            const current = await getWebhook(trx, d, id);
            if (!current) throw new ValidationFailed({ id: [`Webhook with id ${id} does not exist.`] });
            const { id: _id, ...fields } = item;
            return updateWebhook(trx, d, id, validateWebhook(fields, current, method === 'PATCH', engine()));
          }),
        );
        return rows.map(serializeWebhook);
      },
    });
  }
  app.delete('/api/extras/webhooks/', { preHandler: requireAdmin }, async (req, reply) => {
    await db.transaction().execute((trx) =>
      bulk(req.body, async (item) => {
        const id = bulkId(item);
        if (!(await getWebhook(trx, d, id))) throw new ValidationFailed({ id: [`Webhook with id ${id} does not exist.`] });
        await deleteWebhook(trx, id);
      }),
    );
    return noContent(reply);
  });

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/extras/webhooks/:id/',
      preHandler: requireAdmin,
      handler: async (req) => {
        const id = pathId(req, NAME);
        const current = await getWebhook(db, d, id);
        if (!current) throw notFound(NAME);
        const w = await withValidation(async () => updateWebhook(db, d, id, validateWebhook(req.body, current, method === 'PATCH', engine())));
        return serializeWebhook(w);
      },
    });
  }

  app.delete('/api/extras/webhooks/:id/', { preHandler: requireAdmin }, async (req, reply) => {
    const id = pathId(req, NAME);
    if (!(await getWebhook(db, d, id))) throw notFound(NAME);
    await db.transaction().execute((trx) => deleteWebhook(trx, id));
    return noContent(reply);
  });
}
