import { sql } from 'kysely';
import { jsonListHasAny, objectTypeRows, objectTypesOfIds, typeIn, typeName } from './object-types.ts';
import { availablePowerSql, connectedFilter, PATH_ENDPOINT_MODELS } from './path-filters.ts';
import type { ExtraFilter, ModelDef } from './types.ts';
import { vlanAvailabilityFilters } from './vlan-availability.ts';

/**
 * Issue 24's remaining NetBox 4.3 filters that take object type ids, follow cable paths or compute availability:
 * added to the registry's models by withCoreFilters() (registry.ts), next to the models' own filters.
 */

/** A ModelMultipleChoiceFilter on object types by id, matched by `cond` on the types' names. */
function objectTypeIdFilter(name: string, cond: (types: string[]) => ReturnType<typeof sql>): ExtraFilter {
  return {
    name,
    kind: 'custom',
    where: async (ctx, vals, errors) => {
      const types = await objectTypesOfIds(ctx, vals, name, errors);
      return types && cond(types);
    },
  };
}

/** MultiValueNumberFilter values: integers, else django-filter's `Enter a number.`. */
function numbers(vals: string[], name: string, errors: Record<string, string[]>): number[] | undefined {
  if (vals.some((v) => !/^-?\d{1,16}$/.test(v.trim()))) return void (errors[name] = ['Enter a number.']);
  return vals.map((v) => Number(v.trim()));
}

const tagged = (types: string[]) => sql`extras_tag.id in (select tag_id from extras_taggeditem where ${typeIn(sql.ref('object_type'), types)})`;

/** TagFilterSet: content_type / content_type_id (types of the objects tagged), for_object_type_id, object_types. */
const tagFilters: ExtraFilter[] = [
  {
    name: 'content_type',
    kind: 'custom',
    // `app.model` pairs; a value that is not one is skipped, and when none is left every tagged object counts (NetBox's empty Q()).
    where: async (_ctx, vals) => {
      const pairs = vals.map((v) => v.trim().toLowerCase()).filter((v) => v.split('.').length === 2);
      return pairs.length ? tagged(pairs) : sql`extras_tag.id in (select tag_id from extras_taggeditem)`;
    },
  },
  {
    name: 'content_type_id',
    kind: 'custom',
    where: async (ctx, vals, errors) => {
      const ids = numbers(vals, 'content_type_id', errors);
      if (!ids) return undefined;
      const types = (await objectTypeRows(ctx)).filter((r) => ids.includes(r.id)).map(typeName);
      return tagged(types);
    },
  },
  {
    name: 'for_object_type_id',
    kind: 'custom',
    // Tags that may be applied to objects of the type: it is listed, or the tag lists none.
    where: async (ctx, vals, errors) => {
      const ids = numbers(vals, 'for_object_type_id', errors);
      if (!ids) return undefined;
      const types = (await objectTypeRows(ctx)).filter((r) => ids.includes(r.id)).map(typeName);
      const column = sql.ref('extras_tag.object_types');
      return sql`(${jsonListHasAny(column, types)} or cast(${column} as text) = '[]')`;
    },
  },
  objectTypeIdFilter('object_types', (types) => jsonListHasAny(sql.ref('extras_tag.object_types'), types)),
];

/** CustomFieldFilterSet: object_type_id; related_object_type(_id) (object-typed fields are not modelled: nothing matches a type). */
const customFieldFilters: ExtraFilter[] = [
  objectTypeIdFilter('object_type_id', (types) => jsonListHasAny(sql.ref('extras_customfield.object_types'), types)),
  objectTypeIdFilter('related_object_type_id', () => sql`1 = 0`),
  {
    name: 'related_object_type',
    kind: 'custom',
    // ContentTypeFilter: a value that is no `app.model` matches nothing, and so does every type here.
    where: async (_ctx, vals) => (vals[vals.length - 1]!.trim() === '' ? undefined : sql`1 = 0`),
  },
];

const FILTERS: Record<string, ExtraFilter[]> = {
  tag: tagFilters,
  customfield: customFieldFilters,
  journalentry: [objectTypeIdFilter('assigned_object_type_id', (types) => typeIn(sql.ref('extras_journalentry.assigned_object_type'), types))],
  contactassignment: [objectTypeIdFilter('object_type_id', (types) => typeIn(sql.ref('tenancy_contactassignment.object_type'), types))],
  vlan: vlanAvailabilityFilters,
  powerfeed: [{ name: 'available_power', kind: 'int', expr: availablePowerSql }],
};

export function withCoreFilters(models: ModelDef[]): void {
  for (const m of models) {
    const add = [...(FILTERS[m.key] ?? []), ...(PATH_ENDPOINT_MODELS.includes(m.key) ? [connectedFilter(m)] : [])];
    if (add.length) m.extraFilters = [...(m.extraFilters ?? []), ...add];
  }
}
