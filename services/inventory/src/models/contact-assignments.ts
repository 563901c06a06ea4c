import { sql } from 'kysely';
import { contentTypeLabel, genericFields, genericFilters } from './generic-object.ts';
import { NETBOX_FILTERS } from './netbox-filters.ts';
import { refFilters } from './tenancy.ts';
import type { Choice, ExtraFilter, GenericRef, ModelDef } from './types.ts';

/** NetBox's ContactPriorityChoices. */
export const CONTACT_PRIORITIES: Choice[] = [
  { value: 'primary', label: 'Primary' },
  { value: 'secondary', label: 'Secondary' },
  { value: 'tertiary', label: 'Tertiary' },
  { value: 'inactive', label: 'Inactive' },
];

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
  ],
  genericRef: OBJECT,
  represent(_row, out) {
    const { id, url, display_url, display, object_type, object_id, contact, role, priority, tags, custom_fields, created, last_updated } = out;
    return { id, url, display_url, display, object_type, object_id, contact, role, priority, tags, custom_fields, created, last_updated };
  },
};

/**
 * NetBox's ContactModelFilterSet on every model with contacts: `contact` and `contact_role` (ids) match the objects
 * that have such an assignment. `contact_group` stays refused (contacts' group membership is not modelled).
 */
export function contactFilters(m: ModelDef): ExtraFilter[] {
  return ([['contact', 'tenancy_contact', 'contact_id'], ['contact_role', 'tenancy_contactrole', 'role_id']] as const).map(([name, table, column]) => ({
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
}

/** Adds the contact filters to the models with contacts (as NetBox's filter sets mix ContactModelFilterSet in). */
export function withContactFilters(models: ModelDef[]): void {
  for (const m of models) if (takesContacts(m)) m.extraFilters = [...(m.extraFilters ?? []), ...contactFilters(m)];
}
