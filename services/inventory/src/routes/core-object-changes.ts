import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sql, type RawBuilder } from 'kysely';
import { Type } from 'typebox';
import { requirePermission } from '../api/guards.ts';
import { notFound, validationError } from '../api/errors.ts';
import { baseUrl, pageOf, paginated } from '../api/pagination.ts';
import { objectId } from '../api/params.ts';
import { ACTION_LABELS } from '../changes/changelog.ts';
import type { InventoryDeps } from '../deps.ts';
import { values, type Query } from '../models/filters.ts';
import type { ReadCtx } from '../models/read.ts';
import { modelForObjectType } from '../models/registry.ts';
import { loadBriefs } from '../models/represent.ts';
import type { Errors } from '../models/validate.ts';

type Row = Record<string, any>;

async function representChanges(ctx: ReadCtx, rows: Row[]): Promise<Record<string, unknown>[]> {
  const d = ctx.dialect;
  // Briefs of the changed objects that still exist, grouped by type.
  const briefs = new Map<string, Map<number, Record<string, unknown>>>();
  for (const type of new Set(rows.map((r) => r.changed_object_type as string))) {
    const m = modelForObjectType(type);
    if (!m) continue;
    briefs.set(type, await loadBriefs(ctx, m, rows.filter((r) => r.changed_object_type === type).map((r) => Number(r.changed_object_id))));
  }
  const users = new Map<number, Row>();
  const userIds = [...new Set(rows.map((r) => r.user_id).filter((x) => x !== null).map(Number))];
  if (userIds.length) for (const u of await ctx.db.selectFrom('users_user').select(['id', 'username']).where('id', 'in', userIds).execute()) users.set(Number(u.id), u);
  return rows.map((r) => {
    const id = Number(r.id);
    const user = r.user_id === null ? undefined : users.get(Number(r.user_id));
    return {
      id,
      url: `${ctx.base}/api/core/object-changes/${id}/`,
      display_url: `${ctx.base}/core/changelog/${id}/`,
      display: `${r.changed_object_type} ${r.object_repr} ${(ACTION_LABELS[r.action] ?? r.action).toLowerCase()} by ${r.user_name}`,
      time: d.readTimestamp(r.time),
      user: user ? { id: Number(user.id), url: `${ctx.base}/api/users/users/${user.id}/`, display: user.username, username: user.username } : null,
      user_name: r.user_name,
      request_id: r.request_id,
      action: { value: r.action, label: ACTION_LABELS[r.action] ?? r.action },
      changed_object_type: r.changed_object_type,
      changed_object_id: Number(r.changed_object_id),
      changed_object: briefs.get(r.changed_object_type)?.get(Number(r.changed_object_id)) ?? null,
      object_repr: r.object_repr,
      prechange_data: r.prechange_data === null ? null : d.parseJson(r.prechange_data),
      postchange_data: r.postchange_data === null ? null : d.parseJson(r.postchange_data),
    };
  });
}

function filters(ctx: ReadCtx, q: Query): RawBuilder<unknown>[] {
  const errors: Errors = {};
  const conds: RawBuilder<unknown>[] = [];
  const inList = (column: string, vals: unknown[]) => sql`${sql.ref(column)} in (${sql.join(vals)})`;
  const ints = (key: string) => {
    const vals = values(q, key);
    const bad = vals.find((v) => !/^\d{1,15}$/.test(v.trim()));
    if (bad !== undefined) (errors[key] ??= []).push('Enter a number.');
    return bad === undefined ? vals.map(Number) : [];
  };
  for (const key of ['id', 'changed_object_id', 'user_id']) {
    const vals = ints(key);
    if (vals.length) conds.push(inList(key, vals));
  }
  for (const key of ['changed_object_type', 'request_id', 'user_name', 'object_repr']) {
    const vals = values(q, key);
    if (vals.length) conds.push(inList(key, vals));
  }
  const actions = values(q, 'action');
  const badAction = actions.find((a) => !(a in ACTION_LABELS));
  if (badAction !== undefined) (errors.action ??= []).push(`Select a valid choice. ${badAction} is not one of the available choices.`);
  else if (actions.length) conds.push(inList('action', actions));
  const search = values(q, 'q')[0]?.trim();
  if (search) conds.push(sql`lower(object_repr) like lower(${`%${search.replace(/[!%_]/g, (c) => `!${c}`)}%`}) escape '!'`);
  for (const [key, op] of [
    ['time__gte', '>='],
    ['time__lte', '<='],
    ['time_after', '>='],
    ['time_before', '<='],
  ] as const) {
    for (const v of values(q, key)) {
      const t = new Date(v);
      if (Number.isNaN(t.getTime()) || v.length > 40) (errors[key] ??= []).push('Enter a valid date/time.');
      else conds.push(sql`time ${sql.raw(op)} ${ctx.dialect.timestamp(t)}`);
    }
  }
  if (Object.keys(errors).length) throw validationError(errors);
  return conds;
}

/** `/api/core/object-changes/`: the read-only change log. */
export async function objectChangeRoutes(app: FastifyInstance, deps: InventoryDeps): Promise<void> {
  const ctxOf = (req: FastifyRequest): ReadCtx => ({ db: deps.storage.db, dialect: deps.storage.dialect, base: baseUrl(req) });
  const querystring = Type.Object({
    limit: Type.Optional(Type.Integer({ minimum: 0 })),
    offset: Type.Optional(Type.Integer({ minimum: 0 })),
    changed_object_type: Type.Optional(Type.String()),
    changed_object_id: Type.Optional(Type.Integer()),
    request_id: Type.Optional(Type.String()),
    action: Type.Optional(Type.Union([Type.Literal('create'), Type.Literal('update'), Type.Literal('delete')])),
    user_name: Type.Optional(Type.String()),
    time__gte: Type.Optional(Type.String({ format: 'date-time' })),
    time__lte: Type.Optional(Type.String({ format: 'date-time' })),
    q: Type.Optional(Type.String()),
  });
  app.get('/api/core/object-changes/', { preHandler: requirePermission('core.objectchange', 'view'), schema: { tags: ['core'], summary: 'List object changes', querystring } }, async (req) => {
    const q = req.query as Query;
    const page = pageOf(q);
    const ctx = ctxOf(req);
    let base = deps.storage.db.selectFrom('object_changes');
    for (const c of filters(ctx, q)) base = base.where(c as any);
    const counted = await base.select(sql<number>`count(*)`.as('n')).executeTakeFirst();
    const rows = await base.selectAll().orderBy('time', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute();
    return paginated(req, page, Number(counted?.n ?? 0), await representChanges(ctx, rows));
  });
  app.get('/api/core/object-changes/:id/', { preHandler: requirePermission('core.objectchange', 'view'), schema: { tags: ['core'], summary: 'Get an object change', params: Type.Object({ id: Type.Integer() }) } }, async (req) => {
    const id = objectId(req.params);
    const row = await deps.storage.db.selectFrom('object_changes').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw notFound();
    return (await representChanges(ctxOf(req), [row]))[0];
  });
}
