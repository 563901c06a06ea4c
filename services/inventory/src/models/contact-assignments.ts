import { sql } from 'kysely';
import { contentTypeLabel, genericFields, genericFilters } from './generic-object.ts';
import { NETBOX_FILTERS } from './netbox-filters.ts';
import { refFilters } from './tenancy.ts';
import type { Choice, ExtraFilter, GenericRef, ModelDef, ReadCtx } from './types.ts';

/** NetBox's ContactPriorityChoices. */
export const CONTACT_PRIORITIES: Choice[] = [
  { value: 'primary', label: 'Primary' },
  { value: 'secondary', label: 'Secondary' },
  { value: 'tertiary', label: 'Tertiary' },
  { value: 'inactive', label: 'Inactive' },
];

/** The contact groups given (by id or slug) and every group below them, as SQL (NetBox's TreeNodeMultipleChoiceFilter). */
function groupSubtree(ids: unknown): ReturnType<typeof sql> {
  return sql`(with recursive t(id) as (select id from tenancy_contactgroup where id in ${ids} union select g.id from tenancy_contactgroup g join t on g.parent_id = t.id) select id from t)`;
}

/**
 * Contacts in the named contact groups or their descendants (`tenancy_contact_groups` links), as SQL; undefined with
 * django-filter's message in `errors[name]` when a value names no group.
 */
export async function contactsInGroups(ctx: ReadCtx, name: string, vals: string[], by: 'id' | 'slug', errors: Record<string, string[]>): Promise<ReturnType<typeof sql> | undefined> {
  let ids: number[];
  if (by === 'id') {
    const bad = vals.find((v) => !/^\d{1,16}$/.test(v.trim()));
    if (bad !== undefined) return void (errors[name] = [`Select a valid choice. ${bad} is not one of the available choices.`]);
    ids = vals.map(Number);
    const found = new Set((await ctx.db.selectFrom('tenancy_contactgroup').select('id').where('id', 'in', ids).execute()).map((r) => Number(r.id)));
    const missing = ids.find((id) => !found.has(id));
    if (missing !== undefined) return void (errors[name] = [`Select a valid choice. ${missing} is not one of the available choices.`]);
  } else {
    const rows = await ctx.db.selectFrom('tenancy_contactgroup').select(['id', 'slug']).where('slug', 'in', vals).execute();
    const found = new Set(rows.map((r) => String(r.slug)));
    const missing = vals.find((v) => !found.has(v));
    if (missing !== undefined) return void (errors[name] = [`Select a valid choice. ${missing} is not one of the available choices.`]);
    ids = rows.map((r) => Number(r.id));
  }
  return sql`(select contact_id from tenancy_contact_groups where contactgroup_id in ${groupSubtree(sql`(${sql.join(ids)})`)})`;
}

/** `group_id` / `group` (slug) filters matching `column` (a contact id) against contacts in the groups' subtrees. */
export function contactGroupFilters(column: string, names: [idName: string, slugName: string] = ['group_id', 'group']): ExtraFilter[] {
  return ([[names[0], 'id'], [names[1], 'slug']] as const).map(([name, by]) => ({
    name,
    kind: 'custom' as const,
    where: async (ctx: ReadCtx, vals: string[], errors: Record<string, string[]>) => {
      const contacts = await contactsInGroups(ctx, name, vals, by, errors);
      return contacts && sql`${sql.ref(column)} in ${contacts}`;
    },
  }));
}

/** NetBox's cumulative contact_count of contact groups: distinct contacts in each group or any group below it. */
export async function contactCounts(ctx: ReadCtx, ids: number[]): Promise<Map<number, number>> {
  const rows = await sql<{ k: number; n: number }>`with recursive t(root, id) as (select id, id from tenancy_contactgroup where id in (${sql.join(ids)})
    union select t.root, g.id from tenancy_contactgroup g join t on g.parent_id = t.id)
    select t.root as k, count(distinct l.contact_id) as n from t join tenancy_contact_groups l on l.contactgroup_id = t.id group by t.root`.execute(ctx.db);
  return new Map(rows.rows.map((r) => [Number(r.k), Number(r.n)]));
}

const OBJECT: GenericRef = {
  typeColumn: 'object_type',
  idColumn: 'object_id',
  objectName: 'object',
  supported: (m) => takesContacts(m),
  unsupported: (m) => ['non_field_errors', `Contacts cannot be assigned to this object type (${contentTypeLabel(m)}).`],
  missing: (_label, id) => ['object_id', `Related object not found using the provided numeric ID: ${id}`],
};

/** Models with NetBox's contacts feature (ContactsMixin): those whose filter sets have the `contact` filter. */
export function takesContacts(m: ModelDef): boolean {
  return NETBOX_FILTERS[m.key]?.includes('contact') ?? false;
}

/** `/api/tenancy/contact-assignments/`: a contact in a role on any object with contacts. */
export const contactAssignment: ModelDef = {
  key: 'contactassignment',
  app: 'tenancy',
  path: 'contact-assignments',
  table: 'tenancy_contactassignment',
  objectType: 'tenancy.contactassignment',
  verboseName: 'contact assignment',
  title: 'ContactAssignment',
  fields: [
    ...genericFields(OBJECT),
    { name: 'contact', column: 'contact_id', kind: 'fk', fk: 'contact', required: true },
    { name: 'role', column: 'role_id', kind: 'fk', fk: 'contactrole', required: true },
    { name: 'priority', column: 'priority', kind: 'choice', choices: CONTACT_PRIORITIES, nullable: true, default: null, filter: true },
  ],
  uniqueTogether: [['object_type', 'object_id', 'contact', 'role']],
  ordering: ['contact', 'priority', 'role', 'id'],
  search: ['priority'],
  brief: ['contact', 'role', 'priority'],
  displayNeeds: ['contact', 'role'],
  taggable: true,
  display: (_r, refs) => `${(refs.contact as any)?.display ?? ''}${refs.role ? ` (${(refs.role as any).display})` : ''}`,
  extraFilters: [
    ...genericFilters('tenancy_contactassignment', OBJECT),
    ...refFilters('contact', 'contact', 'name').filter((f) => f.name === 'contact_id'),
    ...refFilters('role', 'contactrole'),
    ...contactGroupFilters('tenancy_contactassignment.contact_id'),
  ],
  genericRef: OBJECT,
  represent(_row, out) {
    const { id, url, display_url, display, object_type, object_id, contact, role, priority, tags, custom_fields, created, last_updated } = out;
    return { id, url, display_url, display, object_type, object_id, contact, role, priority, tags, custom_fields, created, last_updated };
  },
};

/**
 * NetBox's ContactModelFilterSet on every model with contacts: `contact` and `contact_role` (ids) match the objects
 * that have such an assignment; `contact_group` (ids) those with a contact in the groups or their descendants.
 */
export function contactFilters(m: ModelDef): ExtraFilter[] {
  const byAssignment: ExtraFilter[] = ([['contact', 'tenancy_contact', 'contact_id'], ['contact_role', 'tenancy_contactrole', 'role_id']] as const).map(([name, table, column]) => ({
    name,
    kind: 'custom' as const,
    where: async (ctx, vals, errors) => {
      const bad = vals.find((v) => !/^\d{1,16}$/.test(v.trim()));
      if (bad !== undefined) return void (errors[name] = [`Select a valid choice. ${bad} is not one of the available choices.`]);
      const ids = vals.map(Number);
      const found = new Set((await ctx.db.selectFrom(table).select('id').where('id', 'in', ids).execute()).map((r) => Number(r.id)));
      const missing = ids.find((id) => !found.has(id));
      if (missing !== undefined) return void (errors[name] = [`Select a valid choice. ${missing} is not one of the available choices.`]);
      return sql`${sql.ref(`${m.table}.id`)} in (select object_id from tenancy_contactassignment where object_type = ${m.objectType} and ${sql.ref(column)} in (${sql.join(ids)}))`;
    },
  }));
  return [...byAssignment, {
    name: 'contact_group',
    kind: 'custom',
    where: async (ctx, vals, errors) => {
      const contacts = await contactsInGroups(ctx, 'contact_group', vals, 'id', errors);
      return contacts && sql`${sql.ref(`${m.table}.id`)} in (select object_id from tenancy_contactassignment where object_type = ${m.objectType} and contact_id in ${contacts})`;
    },
  }];
}

/** Adds the contact filters to the models with contacts (as NetBox's filter sets mix ContactModelFilterSet in). */
export function withContactFilters(models: ModelDef[]): void {
  for (const m of models) if (takesContacts(m)) m.extraFilters = [...(m.extraFilters ?? []), ...contactFilters(m)];
}
