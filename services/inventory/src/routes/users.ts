import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import { Type } from 'typebox';
import { authenticate } from '../auth/index.ts';
import { requireAdmin } from '../api/guards.ts';
import { checkPassword, hashPassword, hashTokenKey, newTokenKey, validTokenKey } from '../auth/keys.ts';
import { HttpError } from '@svc/kernel';
import { forbidden, notFound, validationError } from '../api/errors.ts';
import { throttledDetail } from '../auth/throttle.ts';
import { createToken, deleteToken } from '../auth/tokens.ts';
import { baseUrl, pageOf, paginated } from '../api/pagination.ts';
import { objectId } from '../api/params.ts';
import type { InventoryDeps } from '../deps.ts';
import type { Errors } from '../models/validate.ts';
import { pyType } from '../models/values.ts';
import { loadPermissions } from './users-permissions.ts';

type Row = Record<string, any>;
const USERNAME = /^[\w.@+-]+$/;

function userRepr(deps: InventoryDeps, base: string, u: Row, permissions: unknown[] = []) {
  const d = deps.storage.dialect;
  const superuser = d.readBool(u.is_superuser);
  return {
    id: Number(u.id),
    url: `${base}/api/users/users/${u.id}/`,
    display_url: `${base}/users/users/${u.id}/`,
    display: u.username,
    username: u.username,
    first_name: u.first_name,
    last_name: u.last_name,
    email: u.email,
    is_staff: superuser,
    is_superuser: superuser,
    can_write: superuser || d.readBool(u.can_write),
    is_active: d.readBool(u.is_active),
    date_joined: d.readTimestamp(u.date_joined),
    last_login: u.last_login ? d.readTimestamp(u.last_login) : null,
    groups: [],
    permissions,
  };
}

function tokenRepr(deps: InventoryDeps, base: string, t: Row, user: Row | undefined, key?: string) {
  const d = deps.storage.dialect;
  const out: Record<string, unknown> = {
    id: Number(t.id),
    url: `${base}/api/users/tokens/${t.id}/`,
    display_url: `${base}/users/tokens/${t.id}/`,
    display: `**********${t.key_prefix}`,
    user: user ? { id: Number(user.id), url: `${base}/api/users/users/${user.id}/`, display: user.username, username: user.username } : null,
    created: d.readTimestamp(t.created),
    expires: t.expires ? d.readTimestamp(t.expires) : null,
    last_used: t.last_used ? d.readTimestamp(t.last_used) : null,
    write_enabled: d.readBool(t.write_enabled),
    description: t.description,
  };
  // The key exists in clear only in the response that created it.
  if (key) out.key = key;
  return out;
}

function bool(v: unknown, name: string, errors: Errors): boolean | undefined {
  if (v === undefined) return undefined;
  if (v === true || v === false) return v;
  if (typeof v === 'string' && ['true', 'false', '1', '0'].includes(v.toLowerCase())) return ['true', '1'].includes(v.toLowerCase());
  (errors[name] ??= []).push('Must be a valid boolean.');
  return undefined;
}

function str(v: unknown, name: string, max: number, errors: Errors, allowBlank = true): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' && typeof v !== 'number') {
    (errors[name] ??= []).push(v === null ? 'This field may not be null.' : 'Not a valid string.');
    return undefined;
  }
  const s = String(v).trim();
  if (!allowBlank && s === '') (errors[name] ??= []).push('This field may not be blank.');
  else if (s.length > max) (errors[name] ??= []).push(`Ensure this field has no more than ${max} characters.`);
  else if (s.includes('\u0000')) (errors[name] ??= []).push('Null characters are not allowed.');
  else return s;
  return undefined;
}

function dictBody(body: unknown): Record<string, unknown> {
  const b = body ?? {};
  if (typeof b !== 'object' || Array.isArray(b)) throw validationError({ non_field_errors: [`Invalid data. Expected a dictionary, but got ${pyType(b)}.`] });
  return b as Record<string, unknown>;
}

/** The object permissions assigned to each user, brief (NetBox's user `permissions`). */
async function permissionsOfUsers(deps: InventoryDeps, base: string, userIds: number[]): Promise<Map<number, unknown[]>> {
  const out = new Map<number, unknown[]>(userIds.map((id) => [id, []]));
  if (!userIds.length) return out;
  const links = await deps.storage.db.selectFrom('users_objectpermission_users').select(['user_id', 'objectpermission_id']).where('user_id', 'in', userIds).execute();
  const perms = new Map((await loadPermissions(deps, base, [...new Set(links.map((l) => Number(l.objectpermission_id)))], true)).map((p) => [p.id as number, p]));
  for (const l of links) {
    const p = perms.get(Number(l.objectpermission_id));
    if (p) out.get(Number(l.user_id))?.push(p);
  }
  return out;
}

/** `/api/users/users/` and `/api/users/tokens/`: administrators manage accounts and API tokens. */
export async function userRoutes(app: FastifyInstance, deps: InventoryDeps): Promise<void> {
  const db = deps.storage.db;
  const d = deps.storage.dialect;
  const base = (req: FastifyRequest) => baseUrl(req);
  const tags = ['users'];

  const userBody = Type.Object(
    {
      username: Type.String({ maxLength: 150 }),
      password: Type.Optional(Type.String({ maxLength: 128 })),
      first_name: Type.Optional(Type.String()),
      last_name: Type.Optional(Type.String()),
      email: Type.Optional(Type.String()),
      is_superuser: Type.Optional(Type.Boolean()),
      can_write: Type.Optional(Type.Boolean()),
      is_active: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: true },
  );

  async function validateUser(body: Record<string, unknown>, existing: Row | undefined, partial: boolean): Promise<Row> {
    const errors: Errors = {};
    const values: Row = {};
    if (body.username === undefined) {
      if (!partial) errors.username = ['This field is required.'];
    } else {
      const u = str(body.username, 'username', 150, errors, false);
      if (u !== undefined && !USERNAME.test(u)) errors.username = ['Enter a valid username. This value may contain only letters, numbers, and @/./+/-/_ characters.'];
      else if (u !== undefined) {
        let q = db.selectFrom('users_user').select('id').where('username', '=', u);
        if (existing) q = q.where('id', '!=', existing.id);
        if (await q.executeTakeFirst()) errors.username = ['A user with that username already exists.'];
        else values.username = u;
      }
    }
    for (const [k, max] of [
      ['first_name', 150],
      ['last_name', 150],
      ['email', 254],
    ] as const) {
      const v = str(body[k], k, max, errors);
      if (v !== undefined) values[k] = v;
    }
    if (typeof values.email === 'string' && values.email !== '' && !/^[^@\s]+@[^@\s]+$/.test(values.email)) errors.email = ['Enter a valid email address.'];
    if (body.password !== undefined) {
      const p = str(body.password, 'password', 128, errors, false);
      if (p !== undefined) values.password_hash = await hashPassword(p);
    }
    for (const k of ['is_superuser', 'can_write', 'is_active']) {
      const b = bool(body[k], k, errors);
      if (b !== undefined) values[k] = d.bool(b);
    }
    if (Object.keys(errors).length) throw validationError(errors);
    return values;
  }

  app.get('/api/users/users/', { preHandler: requireAdmin, schema: { tags, summary: 'List users' } }, async (req) => {
    const page = pageOf(req.query as Record<string, unknown>);
    const q = req.query as Record<string, unknown>;
    let qb = db.selectFrom('users_user');
    if (typeof q.username === 'string') qb = qb.where('username', '=', q.username);
    const n = await qb.select(sql<number>`count(*)`.as('n')).executeTakeFirst();
    const rows = await qb.selectAll().orderBy('username').limit(page.limit).offset(page.offset).execute();
    const perms = await permissionsOfUsers(deps, base(req), rows.map((u) => Number(u.id)));
    return paginated(req, page, Number(n?.n ?? 0), rows.map((u) => userRepr(deps, base(req), u, perms.get(Number(u.id)))));
  });

  app.get('/api/users/users/:id/', { preHandler: requireAdmin, schema: { tags, summary: 'Get a user', params: Type.Object({ id: Type.Integer() }) } }, async (req) => {
    const u = await db.selectFrom('users_user').selectAll().where('id', '=', objectId(req.params)).executeTakeFirst();
    if (!u) throw notFound();
    return userRepr(deps, base(req), u, (await permissionsOfUsers(deps, base(req), [Number(u.id)])).get(Number(u.id)));
  });

  app.post('/api/users/users/', { preHandler: requireAdmin, schema: { tags, summary: 'Create a user', body: userBody } }, async (req, reply) => {
    const values = await validateUser(dictBody(req.body), undefined, false);
    const row = await db
      .insertInto('users_user')
      .values({ is_superuser: d.bool(false), can_write: d.bool(false), is_active: d.bool(true), first_name: '', last_name: '', email: '', password_hash: null, ...values, date_joined: d.timestamp(new Date()) })
      .returningAll()
      .executeTakeFirstOrThrow()
      .catch((err) => {
        if (err?.code === '23505' || err?.code === 'SQLITE_CONSTRAINT_UNIQUE') throw validationError({ username: ['A user with that username already exists.'] });
        throw err;
      });
    reply.code(201);
    return userRepr(deps, base(req), row);
  });

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/users/users/:id/',
      preHandler: requireAdmin,
      schema: { tags, summary: 'Update a user', params: Type.Object({ id: Type.Integer() }), body: Type.Partial(userBody) },
      handler: async (req) => {
        const id = objectId(req.params);
        const existing = await db.selectFrom('users_user').selectAll().where('id', '=', id).executeTakeFirst();
        if (!existing) throw notFound();
        const values = await validateUser(dictBody(req.body), existing, method === 'PATCH');
        if (Object.keys(values).length) await db.updateTable('users_user').set(values).where('id', '=', id).execute();
        return userRepr(deps, base(req), (await db.selectFrom('users_user').selectAll().where('id', '=', id).executeTakeFirst())!, (await permissionsOfUsers(deps, base(req), [id])).get(id));
      },
    });
  }

  app.delete('/api/users/users/:id/', { preHandler: requireAdmin, schema: { tags, summary: 'Delete a user', params: Type.Object({ id: Type.Integer() }) } }, async (req, reply) => {
    const id = objectId(req.params);
    const me = await authenticate(req);
    if (me?.userId === id) throw validationError({ non_field_errors: ['You cannot delete your own account.'] });
    const r = await db.deleteFrom('users_user').where('id', '=', id).executeTakeFirst();
    if (!Number(r.numDeletedRows)) throw notFound();
    return reply.code(204).send();
  });

  // Tokens.
  const tokenUsers = async (rows: Row[]) => {
    const ids = [...new Set(rows.map((r) => Number(r.user_id)))];
    const users = ids.length ? await db.selectFrom('users_user').select(['id', 'username']).where('id', 'in', ids).execute() : [];
    return new Map(users.map((u) => [Number(u.id), u]));
  };

  app.get('/api/users/tokens/', { preHandler: requireAdmin, schema: { tags, summary: 'List API tokens' } }, async (req) => {
    const q = req.query as Record<string, unknown>;
    const page = pageOf(q);
    let qb = db.selectFrom('users_token');
    if (typeof q.user_id === 'string' && /^\d{1,15}$/.test(q.user_id)) qb = qb.where('user_id', '=', Number(q.user_id));
    const n = await qb.select(sql<number>`count(*)`.as('n')).executeTakeFirst();
    const rows = await qb.selectAll().orderBy('id').limit(page.limit).offset(page.offset).execute();
    const users = await tokenUsers(rows);
    return paginated(req, page, Number(n?.n ?? 0), rows.map((t) => tokenRepr(deps, base(req), t, users.get(Number(t.user_id)))));
  });

  app.get('/api/users/tokens/:id/', { preHandler: requireAdmin, schema: { tags, summary: 'Get an API token', params: Type.Object({ id: Type.Integer() }) } }, async (req) => {
    const t = await db.selectFrom('users_token').selectAll().where('id', '=', objectId(req.params)).executeTakeFirst();
    if (!t) throw notFound();
    return tokenRepr(deps, base(req), t, (await tokenUsers([t])).get(Number(t.user_id)));
  });

  const tokenBody = Type.Object(
    {
      user: Type.Optional(Type.Integer({ minimum: 1 })),
      key: Type.Optional(Type.String({ minLength: 8, maxLength: 256 })),
      write_enabled: Type.Optional(Type.Boolean()),
      description: Type.Optional(Type.String({ maxLength: 200 })),
      expires: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
    },
    { additionalProperties: true },
  );

  app.post('/api/users/tokens/', { preHandler: requireAdmin, schema: { tags, summary: 'Create an API token (the key is shown only in this response)', body: tokenBody } }, async (req, reply) => {
    const body = dictBody(req.body);
    const errors: Errors = {};
    let userId = (await authenticate(req))!.userId;
    if (body.user !== undefined) {
      const ref = typeof body.user === 'object' && body.user !== null ? (body.user as Row).id : body.user;
      const n = typeof ref === 'number' || (typeof ref === 'string' && /^\d{1,15}$/.test(ref)) ? Number(ref) : NaN;
      const exists = Number.isSafeInteger(n) && (await db.selectFrom('users_user').select('id').where('id', '=', n).executeTakeFirst());
      if (!exists) errors.user = [`Related object not found using the provided numeric ID: ${String(ref).slice(0, 50)}`];
      else userId = n;
    }
    let key: string | undefined;
    if (body.key !== undefined) {
      if (typeof body.key !== 'string' || !validTokenKey(body.key)) errors.key = ['Ensure the key has 8 to 256 printable characters and no spaces.'];
      else if (await db.selectFrom('users_token').select('id').where('key_hash', '=', hashTokenKey(body.key)).executeTakeFirst()) errors.key = ['token with this key already exists.'];
      else key = body.key;
    }
    const writeEnabled = bool(body.write_enabled, 'write_enabled', errors) ?? true;
    const description = str(body.description, 'description', 200, errors) ?? '';
    let expires: Date | null = null;
    if (body.expires !== undefined && body.expires !== null) {
      const t = typeof body.expires === 'string' && body.expires.length <= 40 ? new Date(body.expires) : new Date(NaN);
      if (Number.isNaN(t.getTime())) errors.expires = ['Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].'];
      else expires = t;
    }
    if (Object.keys(errors).length) throw validationError(errors);
    const created = await createToken(deps.storage, { userId, key, writeEnabled, description, expires });
    reply.code(201);
    return tokenRepr(deps, base(req), created.row, (await tokenUsers([created.row])).get(userId), created.key);
  });

  // NetBox's token provisioning: a user trades username and password for a new token (no token needed).
  app.post(
    '/api/users/tokens/provision/',
    {
      schema: {
        tags,
        summary: 'Create a token for yourself with username and password',
        body: Type.Object({ username: Type.String(), password: Type.String(), write_enabled: Type.Optional(Type.Boolean()), description: Type.Optional(Type.String()) }),
      },
    },
    async (req, reply) => {
      const body = dictBody(req.body);
      const errors: Errors = {};
      for (const k of ['username', 'password']) if (typeof body[k] !== 'string' || body[k] === '') errors[k] = ['This field is required.'];
      const writeEnabled = bool(body.write_enabled, 'write_enabled', errors) ?? true;
      const description = str(body.description, 'description', 200, errors) ?? '';
      if (Object.keys(errors).length) throw validationError(errors);
      const username = String(body.username).slice(0, 150);
      const wait = deps.auth.throttle.attempt(req.ip, username);
      if (wait > 0) throw new HttpError(429, { detail: throttledDetail(wait) }, { 'Retry-After': String(wait) });
      const user = await db.selectFrom('users_user').selectAll().where('username', '=', username).executeTakeFirst();
      // The hash is checked whatever the user (a dummy one when unknown), so the time taken does not reveal who exists.
      const matches = await checkPassword(String(body.password).slice(0, 128), user?.password_hash);
      if (!user || !d.readBool(user.is_active) || !matches) throw forbidden('Invalid username/password');
      const { row, key } = await createToken(deps.storage, { userId: Number(user.id), writeEnabled, description, expires: null });
      await db.updateTable('users_user').set({ last_login: d.timestamp(new Date()) }).where('id', '=', user.id).execute();
      reply.code(201);
      return tokenRepr(deps, base(req), row, user, key);
    },
  );

  app.patch('/api/users/tokens/:id/', { preHandler: requireAdmin, schema: { tags, summary: 'Update an API token', params: Type.Object({ id: Type.Integer() }), body: Type.Partial(tokenBody) } }, async (req) => {
    const id = objectId(req.params);
    const body = dictBody(req.body);
    const errors: Errors = {};
    const set: Row = {};
    const w = bool(body.write_enabled, 'write_enabled', errors);
    if (w !== undefined) set.write_enabled = d.bool(w);
    const desc = str(body.description, 'description', 200, errors);
    if (desc !== undefined) set.description = desc;
    if (Object.keys(errors).length) throw validationError(errors);
    const t = await db.selectFrom('users_token').selectAll().where('id', '=', id).executeTakeFirst();
    if (!t) throw notFound();
    if (Object.keys(set).length) await db.updateTable('users_token').set(set).where('id', '=', id).execute();
    const row = (await db.selectFrom('users_token').selectAll().where('id', '=', id).executeTakeFirst())!;
    return tokenRepr(deps, base(req), row, (await tokenUsers([row])).get(Number(row.user_id)));
  });

  app.delete('/api/users/tokens/:id/', { preHandler: requireAdmin, schema: { tags, summary: 'Delete an API token', params: Type.Object({ id: Type.Integer() }) } }, async (req, reply) => {
    if (!(await deleteToken(deps.storage, objectId(req.params)))) throw notFound();
    return reply.code(204).send();
  });
}
