import { sql } from 'kysely';
import { fail } from './field-problem.ts';
import { modelForObjectType } from './lookup.ts';
import { refFilters, treeFilters } from './tenancy.ts';
import type { ExtraFilter, FieldDef, GenericRef, ModelDef, ReadCtx, Row } from './types.ts';

/**
 * NetBox's scopes (4.2+): a prefix, cluster or VLAN group applies to one region, site group, site or location (VLAN
 * groups also a rack, cluster group or cluster), named by `scope_type` (`dcim.site`) and `scope_id`; `scope` is its brief.
 * Clusters also keep NetBox's cached `_region`/`_site_group`/`_site`/`_location` (CachedScopeMixin), which the
 * region/site group/site/location filters match; they follow a site's region and group and a location's site.
 */

/** NetBox's LOCATION_SCOPE_TYPES and VLANGROUP_SCOPE_TYPES. */
export const LOCATION_SCOPE_TYPES = ['dcim.region', 'dcim.sitegroup', 'dcim.site', 'dcim.location'];
export const VLANGROUP_SCOPE_TYPES = [...LOCATION_SCOPE_TYPES, 'dcim.rack', 'virtualization.clustergroup', 'virtualization.cluster'];

/** The cached columns of CachedScopeMixin. */
export const CACHED_SCOPE_COLUMNS = ['_region_id', '_site_group_id', '_site_id', '_location_id'] as const;

export function scopeFields(types: string[]): FieldDef[] {
  return [
    {
      name: 'scope_type',
      column: 'scope_type',
      kind: 'char',
      nullable: true,
      default: null,
      maxLength: 100,
      parse: (v) => {
        if (typeof v !== 'string' || !/^[a-z_]{1,50}\.[a-z0-9_]{1,100}$/.test(v)) return fail("Invalid value. Specify a content type as '<app_label>.<model_name>'.");
        return types.includes(v) ? v : fail(`Invalid content type: ${v}`);
      },
    },
    { name: 'scope_id', column: 'scope_id', kind: 'integer', nullable: true, default: null, min: 0, max: 2 ** 53 - 1, filter: true },
  ];
}

/** The nested `scope` (right after `scope_id`), filled as a generic reference's object. */
export const SCOPE_REF: GenericRef = {
  typeColumn: 'scope_type',
  idColumn: 'scope_id',
  objectName: 'scope',
  supported: () => true,
  unsupported: () => ['scope_type', ''],
  missing: (_label, id) => ['scope_id', `Related object not found using the provided numeric ID: ${id}`],
};

/**
 * The pair's rules: a type needs an id (CachedScopeMixin.clean()'s "Please select a site." for cached scopes, VLANGroup.clean()'s
 * non-field message otherwise), an id needs a type, the object exists; cached scopes get their region/site group/site/location.
 */
export async function checkScope(ctx: ReadCtx, values: Row, existing: Row | null, errors: Record<string, string[]>, cached: boolean): Promise<void> {
  if (!('scope_type' in values) && !('scope_id' in values)) return;
  const at = (c: string) => (c in values ? values[c] : existing?.[c]) ?? null;
  const type = at('scope_type') as string | null;
  const id = at('scope_id') as number | null;
  if (type && id === null) {
    if (cached) (errors.scope ??= []).push(`Please select a ${type.split('.')[1]}.`);
    else (errors.non_field_errors ??= []).push('Cannot set scope_type without scope_id.');
    return;
  }
  if (!type && id !== null) return void (errors.non_field_errors ??= []).push('Cannot set scope_id without scope_type.');
  const m = type ? modelForObjectType(type) : undefined;
  const row = m ? await ctx.db.selectFrom(m.table).selectAll().where('id', '=', id).executeTakeFirst() : undefined;
  if (type && !row) return void (errors.scope_id ??= []).push(`Related object not found using the provided numeric ID: ${id}`);
  if (cached) Object.assign(values, await cachedScope(ctx, type, row ?? null));
}

/** The cached columns for an object named by type and id (a circuit termination's), all null for other types. */
export async function cachedScopeOf(ctx: ReadCtx, type: string | null, id: number | null): Promise<Row> {
  const m = type && LOCATION_SCOPE_TYPES.includes(type) && id !== null ? modelForObjectType(type) : undefined;
  const row = m ? await ctx.db.selectFrom(m.table).selectAll().where('id', '=', id).executeTakeFirst() : undefined;
  return cachedScope(ctx, row ? type : null, row ?? null);
}

/** CachedScopeMixin.cache_related_objects(): the region, site group, site and location a scope stands in. */
async function cachedScope(ctx: ReadCtx, type: string | null, row: Row | null): Promise<Row> {
  const out: Row = { _region_id: null, _site_group_id: null, _site_id: null, _location_id: null };
  if (!type || !row) return out;
  if (type === 'dcim.region') out._region_id = Number(row.id);
  else if (type === 'dcim.sitegroup') out._site_group_id = Number(row.id);
  else {
    const siteId = type === 'dcim.site' ? Number(row.id) : Number(row.site_id);
    const site = await ctx.db.selectFrom('dcim_site').select(['region_id', 'group_id']).where('id', '=', siteId).executeTakeFirst();
    out._site_id = siteId;
    out._region_id = site?.region_id ?? null;
    out._site_group_id = site?.group_id ?? null;
    if (type === 'dcim.location') out._location_id = Number(row.id);
  }
  return out;
}

/** NetBox's ScopedFilterSet: region/site group/location (with their subtrees) and site by the cached columns, and the pair. */
export function scopedFilters(table: string): ExtraFilter[] {
  return [
    { name: 'scope_type', kind: 'custom', where: async (_ctx, vals) => scopeTypeCond(table, vals) },
    ...treeFilters('region', 'region', '_region_id'),
    ...treeFilters('site_group', 'sitegroup', '_site_group_id'),
    ...refFilters('site', 'site', 'slug', '_site_id'),
    ...treeFilters('location', 'location', '_location_id'),
  ];
}

/** ContentTypeFilter: `app_label.model`; anything else matches nothing. */
function scopeTypeCond(table: string, vals: string[]) {
  const types = vals.map((v) => v.trim().toLowerCase()).filter((v) => /^[a-z_]+\.[a-z0-9_]+$/.test(v));
  return types.length ? sql`${sql.ref(`${table}.scope_type`)} in (${sql.join(types)})` : sql`1 = 0`;
}

/** VLANGroupFilterSet's scope filters: `region=<id>` … `cluster=<id>` match that scope exactly (NumberFilter). */
export function vlanGroupScopeFilters(table: string): ExtraFilter[] {
  const byType: Array<[string, string]> = [
    ['region', 'dcim.region'],
    ['site_group', 'dcim.sitegroup'],
    ['site', 'dcim.site'],
    ['location', 'dcim.location'],
    ['rack', 'dcim.rack'],
    ['cluster_group', 'virtualization.clustergroup'],
    ['cluster', 'virtualization.cluster'],
  ];
  return [
    { name: 'scope_type', kind: 'custom', where: async (_ctx, vals) => scopeTypeCond(table, vals) },
    ...byType.map(
      ([name, type]): ExtraFilter => ({
        name,
        kind: 'custom',
        where: async (_ctx, vals, errors) => {
          const v = vals[vals.length - 1]!.trim();
          if (!/^-?\d{1,15}(\.0*)?$/.test(v)) return void (errors[name] = ['Enter a number.']);
          return sql`(${sql.ref(`${table}.scope_type`)} = ${type} and ${sql.ref(`${table}.scope_id`)} = ${Number.parseInt(v, 10)})`;
        },
      }),
    ),
  ];
}

/**
 * Keeps the cached scope columns of `tables` right when a site's region or group, or a location's site, changes
 * (NetBox refreshes them on those saves too).
 */
export async function refreshCachedScopes(db: ReadCtx['db'], tables: string[], changed: { site?: number; location?: number }): Promise<void> {
  for (const table of tables) {
    if (changed.site !== undefined) {
      await sql`update ${sql.table(table)} set _region_id = (select region_id from dcim_site where id = ${changed.site}), _site_group_id = (select group_id from dcim_site where id = ${changed.site}) where _site_id = ${changed.site}`.execute(db);
    }
    if (changed.location !== undefined) {
      const site = sql`(select site_id from dcim_location where id = ${changed.location})`;
      await sql`update ${sql.table(table)} set _site_id = ${site}, _region_id = (select region_id from dcim_site where id = ${site}), _site_group_id = (select group_id from dcim_site where id = ${site}) where _location_id = ${changed.location}`.execute(db);
    }
  }
}

export type { ModelDef };
