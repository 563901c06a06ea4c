import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * NetBox's object permissions in the service's own model: a permission names object types (`dcim.site`), actions
 * (`view`, `add`, `change`, `delete`, or any other action name) and the users it is assigned to; it grants its actions on
 * its object types to those users while enabled. Superusers need none. Constraints (NetBox's JSON attribute filters) are
 * not supported: a permission with constraints is refused, so no grant is ever wider than what was asked for.
 *
 * Accounts that have no permission assigned at all keep the service's earlier rules: any user views every model and a
 * user with `can_write` may also add, change and delete (NetBox's `EXEMPT_VIEW_PERMISSIONS = ['*']` plus a grant of
 * everything). Once a permission is assigned to a user (enabled or not), only permissions decide, as in NetBox.
 * Unsafe methods also need a write-enabled token, whatever the permissions.
 */

export const STANDARD_ACTIONS = ['view', 'add', 'change', 'delete'] as const;
export type Action = string;

/** Object type → granted actions; null: the account has no permissions (the earlier rules apply). */
export type Grants = ReadonlyMap<string, ReadonlySet<string>> | null;

export const permissionMigrations: Migration[] = [
  {
    name: '090_object_permissions',
    async up(db: Kysely<any>, d: SqlDialect) {
      for (const s of [
        `create table users_objectpermission (id ${d.serialPrimaryKey}, name varchar(100) not null, description varchar(200) not null default '',
          enabled ${d.booleanType} not null, object_types ${d.jsonType} not null, actions ${d.jsonType} not null, constraints ${d.jsonType})`,
        `create table users_objectpermission_users (id ${d.serialPrimaryKey},
          objectpermission_id bigint not null references users_objectpermission(id) on delete cascade,
          user_id bigint not null references users_user(id) on delete cascade, unique (objectpermission_id, user_id))`,
        `create index users_objectpermission_users_user on users_objectpermission_users (user_id)`,
      ]) {
        await sql.raw(s).execute(db);
      }
    },
  },
];

/** The grants of a user: null when no permission is assigned to them. */
export async function loadGrants(db: Kysely<any>, d: SqlDialect, userId: number): Promise<Grants> {
  const rows = await db
    .selectFrom('users_objectpermission_users as pu')
    .innerJoin('users_objectpermission as p', 'p.id', 'pu.objectpermission_id')
    .select(['p.enabled', 'p.object_types', 'p.actions'])
    .where('pu.user_id', '=', userId)
    .execute();
  if (!rows.length) return null;
  const out = new Map<string, Set<string>>();
  for (const r of rows) {
    if (!d.readBool(r.enabled)) continue;
    const types = d.parseJson<string[]>(r.object_types) ?? [];
    const actions = d.parseJson<string[]>(r.actions) ?? [];
    for (const t of types) {
      let s = out.get(t);
      if (!s) out.set(t, (s = new Set()));
      for (const a of actions) s.add(a);
    }
  }
  return out;
}

/** Whether a grant set allows `action` on `objectType` (the earlier rules when `grants` is null). */
export function granted(isSuperuser: boolean, canWrite: boolean, grants: Grants | undefined, objectType: string, action: Action): boolean {
  if (isSuperuser) return true;
  if (!grants) return action === 'view' || canWrite;
  return grants.get(objectType)?.has(action) ?? false;
}

/** The action an HTTP method needs, as NetBox's TokenPermissions map. */
export function actionOf(method: string): Action {
  switch (method) {
    case 'POST':
      return 'add';
    case 'PUT':
    case 'PATCH':
      return 'change';
    case 'DELETE':
      return 'delete';
    default:
      return 'view';
  }
}
