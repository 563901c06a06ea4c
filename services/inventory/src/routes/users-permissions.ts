import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { Type } from 'typebox';
import { requireAdmin } from '../api/guards.ts';
import { notFound, validationError } from '../api/errors.ts';
import { baseUrl, pageOf, paginated } from '../api/pagination.ts';
import { objectId, truthy } from '../api/params.ts';
import type { InventoryDeps } from '../deps.ts';
import { MODELS } from '../models/registry.ts';
import type { Errors } from '../models/validate.ts';
import { pyType } from '../models/values.ts';

type Row = Record<string, any>;

/**
 * Object types a permission may name: the inventory's models and the change log, whose routes check permissions
 * (webhooks, event rules, users and tokens keep their administrator rules, so naming them would grant nothing).
 */
export const PERMISSION_OBJECT_TYPES: readonly string[] = [...new Set([...MODELS.map((m) => m.objectType), 'core.objectchange'])].sort();

export interface PermissionInput {
  name?: string;
  description?: string;
  enabled?: boolean;
  object_types?: string[];
  actions?: string[];
  users?: number[];
}

/** The permission's API representation (NetBox's ObjectPermissionSerializer; groups: the service has none). */
export function permissionRepr(base: string, d: InventoryDeps['storage']['dialect'], p: Row, users: Row[], brief = false): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: Number(p.id),
    url: `${base}/api/users/permissions/${p.id}/`,
    display_url: `${base}/users/permissions/${p.id}/`,
    display: p.name,
    name: p.name,
    description: p.description,
    enabled: d.readBool(p.enabled),
    object_types: d.parseJson<string[]>(p.object_types),
    actions: d.parseJson<string[]>(p.actions),
    constraints: p.constraints === null || p.constraints === undefined ? null : d.parseJson(p.constraints),
    groups: [],
    users: users.map((u) => ({ id: Number(u.id), url: `${base}/api/users/users/${u.id}/`, display: u.username, username: u.username })),
  };
  if (brief) for (const k of ['display_url', 'constraints', 'groups', 'users']) delete out[k];
  return out;
}

async function usersOf(db: Kysely<any>, ids: number[]): Promise<Map<number, Row[]>> {
  const out = new Map<number, Row[]>(ids.map((id) => [id, []]));
  if (!ids.length) return out;
  const rows = await db
    .selectFrom('users_objectpermission_users as pu')
    .innerJoin('users_user as u', 'u.id', 'pu.user_id')
    .select(['pu.objectpermission_id as pid', 'u.id', 'u.username'])
    .where('pu.objectpermission_id', 'in', ids)
    .orderBy('u.username')
    .execute();
  for (const r of rows) out.get(Number(r.pid))?.push(r);
  return out;
}

function strList(v: unknown, name: string, errors: Errors): string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) {
    errors[name] = [`Expected a list of items but got type "${pyType(v)}".`];
    return undefined;
  }
  return v as string[];
}

/**
 * Validates a permission body (all fields for create/PUT, the given ones for PATCH): NetBox's messages and shapes.
 * Constraints are refused: this service does not filter by them, and ignoring them would grant more than asked for.
 */
export async function validatePermission(db: Kysely<any>, body: unknown, partial: boolean): Promise<PermissionInput> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw validationError({ non_field_errors: [`Invalid data. Expected a dictionary, but got ${pyType(body)}.`] });
  const b = body as Record<string, unknown>;
  const errors: Errors = {};
  const out: PermissionInput = {};
  for (const k of partial ? [] : ['name', 'object_types', 'actions']) if (b[k] === undefined) errors[k] = ['This field is required.'];
  if (b.name !== undefined) {
    if (typeof b.name !== 'string') errors.name = [b.name === null ? 'This field may not be null.' : 'Not a valid string.'];
    else if (!b.name.trim()) errors.name = ['This field may not be blank.'];
    else if (b.name.trim().length > 100) errors.name = ['Ensure this field has no more than 100 characters.'];
    else out.name = b.name.trim();
  }
  if (b.description !== undefined) {
    if (typeof b.description !== 'string') errors.description = ['Not a valid string.'];
    else if (b.description.trim().length > 200) errors.description = ['Ensure this field has no more than 200 characters.'];
    else out.description = b.description.trim();
  }
  if (b.enabled !== undefined) {
    if (typeof b.enabled === 'boolean') out.enabled = b.enabled;
    else if (typeof b.enabled === 'string' && ['true', 'false', '1', '0'].includes(b.enabled.toLowerCase())) out.enabled = ['true', '1'].includes(b.enabled.toLowerCase());
    else errors.enabled = ['Must be a valid boolean.'];
  }
  const types = strList(b.object_types, 'object_types', errors);
  if (types) {
    const msgs: string[] = [];
    for (const t of types) {
      if (typeof t !== 'string' || t.split('.').length !== 2) msgs.push("Invalid value. Specify a content type as '<app_label>.<model_name>'.");
      else if (!PERMISSION_OBJECT_TYPES.includes(t)) msgs.push(`Invalid content type: ${t.slice(0, 100)}`);
    }
    if (!types.length) msgs.push('This list may not be empty.');
    if (msgs.length) errors.object_types = msgs;
    else out.object_types = [...new Set(types)];
  }
  const actions = strList(b.actions, 'actions', errors);
  if (actions) {
    if (!actions.length) errors.actions = ['This list may not be empty.'];
    else if (actions.some((a) => typeof a !== 'string' || !a.trim() || a.length > 30)) errors.actions = ['Each action must be a non-empty string of at most 30 characters.'];
    else out.actions = [...new Set(actions.map((a) => a.trim()))];
  }
  if (b.constraints !== undefined && b.constraints !== null && !(typeof b.constraints === 'object' && Object.keys(b.constraints).length === 0)) {
    errors.constraints = ['Constraints are not supported by this service: leave them empty.'];
  }
  if (b.groups !== undefined) {
    const g = strList(b.groups, 'groups', errors);
    // The service has no groups: any group named does not exist.
    if (g?.length) errors.groups = [`Invalid pk "${String(typeof g[0] === 'object' && g[0] ? (g[0] as Row).id : g[0]).slice(0, 50)}" - object does not exist.`];
  }
  const users = strList(b.users, 'users', errors);
  if (users) {
    const ids: number[] = [];
    for (const u of users as unknown[]) {
      const ref = u && typeof u === 'object' ? (u as Row).id : u;
      const n = typeof ref === 'number' || (typeof ref === 'string' && /^\d{1,15}$/.test(ref)) ? Number(ref) : NaN;
      if (!Number.isSafeInteger(n) || n < 1) {
        errors.users = [`Incorrect type. Expected pk value, received ${pyType(ref)}.`];
        break;
      }
      ids.push(n);
    }
    if (!errors.users) {
      const unique = [...new Set(ids)];
      const found = unique.length ? new Set((await db.selectFrom('users_user').select('id').where('id', 'in', unique).execute()).map((r) => Number(r.id))) : new Set<number>();
      const missing = unique.find((id) => !found.has(id));
      if (missing !== undefined) errors.users = [`Invalid pk "${missing}" - object does not exist.`];
      else out.users = unique;
    }
  }
  if (Object.keys(errors).length) throw validationError(errors);
  return out;
}

/** Writes a permission (new when `id` is null) and its users, in one transaction; returns its id. */
export async function savePermission(deps: InventoryDeps, id: number | null, v: PermissionInput): Promise<number> {
  const d = deps.storage.dialect;
  return deps.storage.db.transaction().execute(async (trx: Kysely<any>) => {
    const set: Row = {};
    if (v.name !== undefined) set.name = v.name;
    if (v.description !== undefined) set.description = v.description;
    if (v.enabled !== undefined) set.enabled = d.bool(v.enabled);
    if (v.object_types !== undefined) set.object_types = d.json(v.object_types);
    if (v.actions !== undefined) set.actions = d.json(v.actions);
    let pid: number;
    if (id === null) {
      const row = await trx
        .insertInto('users_objectpermission')
        .values({ description: '', enabled: d.bool(true), constraints: null, ...set })
        .returning('id')
        .executeTakeFirstOrThrow();
      pid = Number(row.id);
    } else {
      pid = id;
      if (Object.keys(set).length) await trx.updateTable('users_objectpermission').set(set).where('id', '=', id).execute();
    }
    if (v.users !== undefined) {
      await trx.deleteFrom('users_objectpermission_users').where('objectpermission_id', '=', pid).execute();
      if (v.users.length) await trx.insertInto('users_objectpermission_users').values(v.users.map((u) => ({ objectpermission_id: pid, user_id: u }))).execute();
    }
    return pid;
  });
}

export async function loadPermissions(deps: InventoryDeps, base: string, ids: number[], brief = false): Promise<Record<string, unknown>[]> {
  if (!ids.length) return [];
  const db = deps.storage.db;
  const rows = await db.selectFrom('users_objectpermission').selectAll().where('id', 'in', ids).execute();
  const users = await usersOf(db, ids);
  const byId = new Map(rows.map((r) => [Number(r.id), r]));
  return ids.filter((id) => byId.has(id)).map((id) => permissionRepr(base, deps.storage.dialect, byId.get(id)!, users.get(id) ?? [], brief));
}

/** Permission ids matching NetBox's list filters (`id`, `name`, `enabled`, `object_type`, `user_id`, `q`), ordered by name. */
export async function permissionIds(deps: InventoryDeps, q: Record<string, unknown>): Promise<number[]> {
  const db = deps.storage.db;
  const d = deps.storage.dialect;
  const list = (k: string) => (q[k] === undefined ? [] : (Array.isArray(q[k]) ? (q[k] as unknown[]) : [q[k]]).map(String));
  let qb = db.selectFrom('users_objectpermission as p').select(['p.id', 'p.object_types']);
  const ids = list('id').filter((x) => /^\d{1,15}$/.test(x)).map(Number);
  if (list('id').length) qb = qb.where('p.id', 'in', ids.length ? ids : [0]);
  if (list('name').length) qb = qb.where('p.name', 'in', list('name'));
  if (q.enabled !== undefined) qb = qb.where('p.enabled', '=', d.bool(truthy(q.enabled)));
  if (typeof q.q === 'string' && q.q) qb = qb.where(sql`lower(p.name)`, 'like', `%${q.q.toLowerCase().replace(/[%_\\]/g, '')}%`);
  const users = list('user_id').filter((x) => /^\d{1,15}$/.test(x)).map(Number);
  if (list('user_id').length) qb = qb.where('p.id', 'in', db.selectFrom('users_objectpermission_users').select('objectpermission_id').where('user_id', 'in', users.length ? users : [0]));
  const rows = await qb.orderBy('p.name').orderBy('p.id').execute();
  const types = list('object_type');
  return rows.filter((r) => !types.length || d.parseJson<string[]>(r.object_types).some((t) => types.includes(t))).map((r) => Number(r.id));
}

/** `/api/users/permissions/`: superusers manage NetBox's object permissions. */
export async function permissionRoutes(app: FastifyInstance, deps: InventoryDeps): Promise<void> {
  const db = deps.storage.db;
  const tags = ['users'];
  const params = Type.Object({ id: Type.Integer() });
  const base = (req: FastifyRequest) => baseUrl(req);

  app.get('/api/users/permissions/', { preHandler: requireAdmin, schema: { tags, summary: 'List object permissions' } }, async (req) => {
    const q = req.query as Record<string, unknown>;
    const page = pageOf(q);
    const ids = await permissionIds(deps, q);
    const shown = await loadPermissions(deps, base(req), ids.slice(page.offset, page.offset + page.limit), truthy(q.brief));
    return paginated(req, page, ids.length, shown);
  });

  app.get('/api/users/permissions/:id/', { preHandler: requireAdmin, schema: { tags, summary: 'Get an object permission', params } }, async (req) => {
    const [p] = await loadPermissions(deps, base(req), [objectId(req.params)], truthy((req.query as Record<string, unknown>).brief));
    if (!p) throw notFound();
    return p;
  });

  app.post('/api/users/permissions/', { preHandler: requireAdmin, schema: { tags, summary: 'Create object permissions (one or a list)' } }, async (req, reply) => {
    const many = Array.isArray(req.body);
    const items = many ? (req.body as unknown[]) : [req.body ?? {}];
    const valid: PermissionInput[] = [];
    const errors: Errors[] = [];
    for (const item of items) {
      try {
        valid.push(await validatePermission(db, item, false));
        errors.push({});
      } catch (err) {
        if (!many) throw err;
        errors.push((err as { body?: Errors }).body ?? {});
      }
    }
    if (errors.some((e) => Object.keys(e).length)) throw validationError(errors);
    const ids: number[] = [];
    for (const v of valid) ids.push(await savePermission(deps, null, v));
    reply.code(201);
    const shown = await loadPermissions(deps, base(req), ids);
    return many ? shown : shown[0];
  });

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/users/permissions/:id/',
      preHandler: requireAdmin,
      schema: { tags, summary: 'Update an object permission', params },
      handler: async (req) => {
        const id = objectId(req.params);
        if (!(await db.selectFrom('users_objectpermission').select('id').where('id', '=', id).executeTakeFirst())) throw notFound();
        await savePermission(deps, id, await validatePermission(db, req.body ?? {}, method === 'PATCH'));
        return (await loadPermissions(deps, base(req), [id]))[0];
      },
    });
  }

  app.delete('/api/users/permissions/:id/', { preHandler: requireAdmin, schema: { tags, summary: 'Delete an object permission', params } }, async (req, reply) => {
    const r = await db.deleteFrom('users_objectpermission').where('id', '=', objectId(req.params)).executeTakeFirst();
    if (!Number(r.numDeletedRows)) throw notFound();
    return reply.code(204).send();
  });
}
