import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { requireAdmin, requireRead } from '../api/guards.ts';
import type { InventoryDeps } from '../deps.ts';
import { writeTransaction } from '../write-transaction.ts';
import { bulk, bulkId, noContent, notFound, pageParams, paginated, pathId, queryIds, queryList, withValidation } from '../events/rest.ts';
import { ValidationFailed } from '../events/validate.ts';
import { logChange, ruleSnapshot } from '../events/changelog.ts';
import { createRule, getRule, listRules, serializeRule, updateRule, validateRule, type EventRuleRow } from '../events/rules.ts';

/** `/api/extras/event-rules/`: which changes send which webhook; listed in name order (the evaluation order). */
export async function eventRuleRoutes(app: FastifyInstance, deps: InventoryDeps): Promise<void> {
  const { db } = deps.storage;
  const d = deps.storage.dialect;
  const NAME = 'EventRule';
  const snap = (r: EventRuleRow) => ({ id: r.id, name: r.name, snap: ruleSnapshot(r) });
  const create = async (trx: Kysely<any>, req: FastifyRequest, body: unknown) => {
    const r = await createRule(trx, d, await validateRule(trx, body, undefined, false));
    await logChange(trx, d, req, 'create', 'eventrule', null, snap(r));
    return r;
  };
  const update = async (trx: Kysely<any>, req: FastifyRequest, current: EventRuleRow, body: unknown, partial: boolean) => {
    const r = await updateRule(trx, d, current.id, await validateRule(trx, body, current, partial));
    await logChange(trx, d, req, 'update', 'eventrule', snap(current), snap(r));
    return r;
  };
  const remove = async (trx: Kysely<any>, req: FastifyRequest, current: EventRuleRow) => {
    await trx.deleteFrom('extras_eventrule').where('id', '=', current.id).execute();
    await logChange(trx, d, req, 'delete', 'eventrule', snap(current), null);
  };
  /** The rule a bulk item's id names; a missing one is that item's validation error. */
  const bulkTarget = async (trx: Kysely<any>, item: Record<string, unknown>) => {
    const id = bulkId(item);
    const current = await getRule(trx, d, id, true);
    if (!current) throw new ValidationFailed({ id: [`Event rule with id ${id} does not exist.`] });
    return current;
  };

  async function withWebhooks(rules: EventRuleRow[]) {
    const ids = [...new Set(rules.map((r) => r.action_object_id).filter((x): x is number => x !== null))];
    const hooks = new Map<number, { id: number; name: string; description: string }>();
    if (ids.length) {
      for (const w of await db.selectFrom('extras_webhook').select(['id', 'name', 'description']).where('id', 'in', ids).execute()) {
        hooks.set(Number(w.id), { id: Number(w.id), name: w.name, description: w.description });
      }
    }
    return rules.map((r) => serializeRule(r, r.action_object_id === null ? undefined : hooks.get(r.action_object_id)));
  }

  app.get('/api/extras/event-rules/', { preHandler: requireRead, schema: { tags: ['extras'], summary: 'List event rules' } }, async (req) => {
    const page = pageParams(req);
    const query = req.query as Record<string, unknown>;
    const enabled = query.enabled === undefined ? undefined : ['true', 'True', '1'].includes(String(query.enabled));
    const { count, rows } = await listRules(db, d, {
      id: queryIds(req, 'id'),
      name: queryList(req, 'name'),
      q: typeof query.q === 'string' ? query.q.slice(0, 200) : undefined,
      enabled,
      actionObjectId: queryIds(req, 'action_object_id'),
      ...page,
    });
    return paginated(req, count, await withWebhooks(rows), page);
  });

  app.get('/api/extras/event-rules/:id/', { preHandler: requireRead, schema: { tags: ['extras'], summary: 'Get an event rule' } }, async (req) => {
    const r = await getRule(db, d, pathId(req, NAME));
    if (!r) throw notFound(NAME);
    return (await withWebhooks([r]))[0];
  });

  app.post('/api/extras/event-rules/', { preHandler: requireAdmin, schema: { tags: ['extras'], summary: 'Create event rules (one object or a list)' } }, async (req, reply) => {
    if (Array.isArray(req.body)) {
      const rows = await writeTransaction(deps.storage, (trx) => bulk(req.body, (item) => create(trx, req, item)));
      return reply.code(201).send(await withWebhooks(rows));
    }
    const r = await withValidation(() => writeTransaction(deps.storage, (trx) => create(trx, req, req.body)));
    return reply.code(201).send((await withWebhooks([r]))[0]);
  });

  // Bulk update and delete on the list URL: [{"id": 1, …}, …].
  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/extras/event-rules/',
      preHandler: requireAdmin,
      schema: { tags: ['extras'], summary: method === 'PUT' ? 'Update event rules in bulk' : 'Partially update event rules in bulk' },
      handler: async (req) => {
        const rows = await writeTransaction(deps.storage, (trx) =>
          bulk(req.body, async (item) => {
            const current = await bulkTarget(trx, item);
            const { id: _id, ...fields } = item;
            return update(trx, req, current, fields, method === 'PATCH');
          }),
        );
        return withWebhooks(rows);
      },
    });
  }
  app.delete('/api/extras/event-rules/', { preHandler: requireAdmin, schema: { tags: ['extras'], summary: 'Delete event rules in bulk' } }, async (req, reply) => {
    await writeTransaction(deps.storage, (trx) => bulk(req.body, async (item) => remove(trx, req, await bulkTarget(trx, item))));
    return noContent(reply);
  });

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/extras/event-rules/:id/',
      preHandler: requireAdmin,
      schema: { tags: ['extras'], summary: method === 'PUT' ? 'Update an event rule' : 'Partially update an event rule' },
      handler: async (req) => {
        const id = pathId(req, NAME);
        const r = await withValidation(() => writeTransaction(deps.storage, async (trx) => {
          const current = await getRule(trx, d, id, true);
          if (!current) throw notFound(NAME);
          return update(trx, req, current, req.body, method === 'PATCH');
        }));
        return (await withWebhooks([r]))[0];
      },
    });
  }

  app.delete('/api/extras/event-rules/:id/', { preHandler: requireAdmin, schema: { tags: ['extras'], summary: 'Delete an event rule' } }, async (req, reply) => {
    const id = pathId(req, NAME);
    await writeTransaction(deps.storage, async (trx) => {
      const current = await getRule(trx, d, id, true);
      if (!current) throw notFound(NAME);
      await remove(trx, req, current);
    });
    return noContent(reply);
  });
}
