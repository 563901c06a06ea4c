import type { FastifyInstance } from 'fastify';
import { requireAdmin, requireRead } from '../api/guards.ts';
import type { InventoryDeps } from '../deps.ts';
import { writeTransaction } from '../write-transaction.ts';
import { ensureWorker } from '../events/registry.ts';
import { maskHeaders, maskUrl } from '../events/deliver.ts';
import { renderRequest } from '../events/request.ts';
import { bulk, bulkId, noContent, notFound, pageParams, paginated, pathId, queryIds, queryList, withValidation } from '../events/rest.ts';
import { ValidationFailed } from '../events/validate.ts';
import { logChange, ruleSnapshot, webhookSnapshot } from '../events/changelog.ts';
import { readRule } from '../events/rules.ts';
import type { Kysely } from 'kysely';
import type { FastifyRequest } from 'fastify';
import type { WebhookRow } from '../events/webhooks.ts';
import { createWebhook, deleteWebhook, getWebhook, listWebhooks, precheckTemplates, serializeWebhook, updateWebhook, validateWebhook } from '../events/webhooks.ts';

/** The context a preview renders when the caller sends none: a device created by the caller. */
function sampleContext(username: string, requestId: string) {
  const data = { id: 1, url: '/api/dcim/devices/1/', display: 'device1', name: 'device1', status: { value: 'active', label: 'Active' }, tags: [], custom_fields: {} };
  return {
    event: 'created',
    timestamp: new Date().toISOString().replace('Z', '000+00:00'),
    model: 'device',
    username,
    request_id: requestId,
    data,
    snapshots: { prechange: null, postchange: { name: 'device1', status: 'active', tags: [], custom_fields: {} } },
  };
}

/** `/api/extras/webhooks/`: reads for any authenticated caller, writes for administrators (templates are code). */
export async function webhookRoutes(app: FastifyInstance, deps: InventoryDeps): Promise<void> {
  const { db } = deps.storage;
  const d = deps.storage.dialect;
  const engine = () => ensureWorker(deps).engine;
  const NAME = 'Webhook';
  const snap = (w: WebhookRow) => ({ id: w.id, name: w.name, snap: webhookSnapshot(w) });
  /** Deletes a webhook and the event rules calling it, each change-logged. */
  const remove = async (trx: Kysely<any>, req: FastifyRequest, current: WebhookRow) => {
    const rules = await trx.selectFrom('extras_eventrule').selectAll().where('action_object_type', '=', 'extras.webhook').where('action_object_id', '=', current.id).execute();
    for (const r of rules.map((x) => readRule(x, d))) await logChange(trx, d, req, 'delete', 'eventrule', { id: r.id, name: r.name, snap: ruleSnapshot(r) }, null);
    await deleteWebhook(trx, current.id);
    await logChange(trx, d, req, 'delete', 'webhook', snap(current), null);
  };
  const create = async (trx: Kysely<any>, req: FastifyRequest, body: unknown) => {
    const w = await createWebhook(trx, d, await validateWebhook(body, undefined, false, engine()));
    await logChange(trx, d, req, 'create', 'webhook', null, snap(w));
    return w;
  };
  const update = async (trx: Kysely<any>, req: FastifyRequest, current: WebhookRow, body: unknown, partial: boolean) => {
    const w = await updateWebhook(trx, d, current.id, await validateWebhook(body, current, partial, engine()));
    await logChange(trx, d, req, 'update', 'webhook', snap(current), snap(w));
    return w;
  };
  /** The webhook a bulk item's id names; a missing one is that item's validation error. */
  const bulkTarget = async (trx: Kysely<any>, item: Record<string, unknown>) => {
    const id = bulkId(item);
    const current = await getWebhook(trx, d, id, true);
    if (!current) throw new ValidationFailed({ id: [`Webhook with id ${id} does not exist.`] });
    return current;
  };

  app.get('/api/extras/webhooks/', { preHandler: requireRead, schema: { tags: ['extras'], summary: 'List webhooks' } }, async (req) => {
    const page = pageParams(req);
    const q = (req.query as Record<string, unknown>).q;
    const { count, rows } = await listWebhooks(db, d, { id: queryIds(req, 'id'), name: queryList(req, 'name'), q: typeof q === 'string' ? q.slice(0, 200) : undefined, ...page });
    return paginated(req, count, rows.map(serializeWebhook), page);
  });

  app.get('/api/extras/webhooks/:id/', { preHandler: requireRead, schema: { tags: ['extras'], summary: 'Get a webhook' } }, async (req) => {
    const w = await getWebhook(db, d, pathId(req, NAME));
    if (!w) throw notFound(NAME);
    return serializeWebhook(w);
  });

  app.post('/api/extras/webhooks/', { preHandler: requireAdmin, schema: { tags: ['extras'], summary: 'Create webhooks (one object or a list)' } }, async (req, reply) => {
    // templates compile in a worker thread before the write transaction, not while holding its lock
    await precheckTemplates(req.body, engine());
    if (Array.isArray(req.body)) {
      const rows = await writeTransaction(deps.storage, (trx) => bulk(req.body, (item) => create(trx, req, item)));
      return reply.code(201).send(rows.map(serializeWebhook));
    }
    const w = await withValidation(() => writeTransaction(deps.storage, (trx) => create(trx, req, req.body)));
    return reply.code(201).send(serializeWebhook(w));
  });

  // Bulk update and delete on the list URL: [{"id": 1, …}, …].
  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/extras/webhooks/',
      preHandler: requireAdmin,
      schema: { tags: ['extras'], summary: method === 'PUT' ? 'Update webhooks in bulk' : 'Partially update webhooks in bulk' },
      handler: async (req) => {
        await precheckTemplates(req.body, engine());
        const rows = await writeTransaction(deps.storage, (trx) =>
          bulk(req.body, async (item) => {
            const current = await bulkTarget(trx, item);
            const { id: _id, ...fields } = item;
            return update(trx, req, current, fields, method === 'PATCH');
          }),
        );
        return rows.map(serializeWebhook);
      },
    });
  }
  app.delete('/api/extras/webhooks/', { preHandler: requireAdmin, schema: { tags: ['extras'], summary: 'Delete webhooks in bulk' } }, async (req, reply) => {
    await writeTransaction(deps.storage, (trx) => bulk(req.body, async (item) => remove(trx, req, await bulkTarget(trx, item))));
    return noContent(reply);
  });

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/extras/webhooks/:id/',
      preHandler: requireAdmin,
      schema: { tags: ['extras'], summary: method === 'PUT' ? 'Update a webhook' : 'Partially update a webhook' },
      handler: async (req) => {
        const id = pathId(req, NAME);
        await precheckTemplates(req.body, engine());
        const w = await withValidation(() => writeTransaction(deps.storage, async (trx) => {
          const current = await getWebhook(trx, d, id, true);
          if (!current) throw notFound(NAME);
          return update(trx, req, current, req.body, method === 'PATCH');
        }));
        return serializeWebhook(w);
      },
    });
  }

  /**
   * Template preview: renders the webhook's URL, headers and body for a context (the body's
   * `context`, else a sample event) exactly as a delivery would — in a render worker thread — and
   * returns them (credentials masked as in attempt logs). A failing template is a 400 on its field.
   */
  app.post('/api/extras/webhooks/:id/preview/', { preHandler: requireAdmin, schema: { tags: ['extras'], summary: 'Preview a webhook request (URL, headers, body) for an event' } }, async (req) => withValidation(async () => {
    const id = pathId(req, NAME);
    const w = await getWebhook(db, d, id);
    if (!w) throw notFound(NAME);
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (typeof body !== 'object' || Array.isArray(body)) throw new ValidationFailed({ non_field_errors: ['Invalid data. Expected a dictionary.'] });
    const who = await deps.auth.authenticate(req);
    const ctx = body.context === undefined ? sampleContext(who?.username ?? 'admin', String(req.id)) : body.context;
    if (typeof ctx !== 'object' || ctx === null || Array.isArray(ctx)) throw new ValidationFailed({ context: ['Expected a dictionary of items.'] });
    const r = await renderRequest(engine(), w, JSON.stringify(ctx));
    if (r.error) throw new ValidationFailed({ [r.error.field]: [r.error.message] });
    return { method: w.http_method, url: maskUrl(r.url), headers: Object.fromEntries(maskHeaders(r.headers.entries())), body: r.body };
  }));

  app.delete('/api/extras/webhooks/:id/', { preHandler: requireAdmin, schema: { tags: ['extras'], summary: 'Delete a webhook' } }, async (req, reply) => {
    const id = pathId(req, NAME);
    await writeTransaction(deps.storage, async (trx) => {
      const current = await getWebhook(trx, d, id, true);
      if (!current) throw notFound(NAME);
      await remove(trx, req, current);
    });
    return noContent(reply);
  });
}
