import { sql, type RawBuilder } from 'kysely';
import type { ExtraFilter, ReadCtx } from './types.ts';

type Cond = RawBuilder<unknown>;
const INVALID = 'Select a valid choice. That choice is not one of the available choices.';
const MAX_DEPTH = 100;

/** A node of a tree table (`parent_id`) and every node above it (MPTT's get_ancestors(include_self=True)). */
async function withAncestors(ctx: ReadCtx, table: string, id: number | null): Promise<number[]> {
  const out: number[] = [];
  let next = id;
  while (next !== null && out.length < MAX_DEPTH && !out.includes(next)) {
    out.push(next);
    const r = await ctx.db.selectFrom(table).select('parent_id').where('id', '=', next).executeTakeFirst();
    next = r && r.parent_id !== null ? Number(r.parent_id) : null;
  }
  return out;
}

/** VLAN groups scoped to one of the (type, ids) pairs. */
function groupsScoped(scopes: Array<[type: string, ids: number[]]>): Cond {
  const parts = scopes.filter(([, ids]) => ids.length).map(([type, ids]) => sql`(scope_type = ${type} and scope_id in (${sql.join(ids)}))`);
  return parts.length ? sql`(select id from ipam_vlangroup where ${sql.join(parts, sql` or `)})` : sql`(select id from ipam_vlangroup where 1 = 0)`;
}

/** VLANQuerySet's common tail: VLANs of the groups, of the site, and the global ones (no site; no group or a group without scope). */
function availableVlans(groups: Cond, site: number | null): Cond {
  const parts: Cond[] = [sql`ipam_vlan.group_id in ${groups}`];
  if (site !== null) parts.push(sql`ipam_vlan.site_id = ${site}`);
  parts.push(sql`(ipam_vlan.site_id is null and (ipam_vlan.group_id is null or ipam_vlan.group_id in (select id from ipam_vlangroup where scope_id is null)))`);
  return sql`(${sql.join(parts, sql` or `)})`;
}

async function siteScopes(ctx: ReadCtx, siteId: number): Promise<Array<[string, number[]]>> {
  const site = await ctx.db.selectFrom('dcim_site').select(['region_id', 'group_id']).where('id', '=', siteId).executeTakeFirst();
  return [
    ['dcim.site', [siteId]],
    ['dcim.region', await withAncestors(ctx, 'dcim_region', site?.region_id == null ? null : Number(site.region_id))],
    ['dcim.sitegroup', await withAncestors(ctx, 'dcim_sitegroup', site?.group_id == null ? null : Number(site.group_id))],
  ];
}

/** VLANQuerySet.get_for_site(). */
async function forSite(ctx: ReadCtx, id: number): Promise<Cond> {
  return availableVlans(groupsScoped(await siteScopes(ctx, id)), id);
}

/** VLANQuerySet.get_for_device(): groups of its site (region, site group), location (and above) and rack. */
async function forDevice(ctx: ReadCtx, id: number): Promise<Cond> {
  const d = (await ctx.db.selectFrom('dcim_device').select(['site_id', 'location_id', 'rack_id']).where('id', '=', id).executeTakeFirst())!;
  const site = Number(d.site_id);
  const scopes = await siteScopes(ctx, site);
  scopes.push(['dcim.location', await withAncestors(ctx, 'dcim_location', d.location_id == null ? null : Number(d.location_id))]);
  if (d.rack_id != null) scopes.push(['dcim.rack', [Number(d.rack_id)]]);
  return availableVlans(groupsScoped(scopes), site);
}

/** VLANQuerySet.get_for_virtualmachine(): groups of its cluster (and cluster group, and the cluster's scope), and of its site. */
async function forVirtualMachine(ctx: ReadCtx, id: number): Promise<Cond> {
  const vm = (await ctx.db.selectFrom('virtualization_virtualmachine').select(['site_id', 'cluster_id']).where('id', '=', id).executeTakeFirst())!;
  let site = vm.site_id == null ? null : Number(vm.site_id);
  const scopes: Array<[string, number[]]> = [];
  if (vm.cluster_id != null) {
    const c = await ctx.db.selectFrom('virtualization_cluster').select(['group_id', 'scope_type', 'scope_id']).where('id', '=', vm.cluster_id).executeTakeFirst();
    scopes.push(['virtualization.cluster', [Number(vm.cluster_id)]]);
    if (c?.group_id != null) scopes.push(['virtualization.clustergroup', [Number(c.group_id)]]);
    const scopeId = c?.scope_id == null ? null : Number(c.scope_id);
    if (scopeId !== null && c?.scope_type === 'dcim.location') {
      if (site === null) {
        const l = await ctx.db.selectFrom('dcim_location').select('site_id').where('id', '=', scopeId).executeTakeFirst();
        site = l ? Number(l.site_id) : null;
      }
      scopes.push(['dcim.location', await withAncestors(ctx, 'dcim_location', scopeId)]);
    } else if (scopeId !== null && c?.scope_type === 'dcim.site') {
      site ??= scopeId;
      scopes.push(['dcim.site', [scopeId]]);
    } else if (scopeId !== null && c?.scope_type === 'dcim.sitegroup') scopes.push(['dcim.sitegroup', await withAncestors(ctx, 'dcim_sitegroup', scopeId)]);
    else if (scopeId !== null && c?.scope_type === 'dcim.region') scopes.push(['dcim.region', await withAncestors(ctx, 'dcim_region', scopeId)]);
  }
  if (site !== null) scopes.push(...(await siteScopes(ctx, site)));
  return availableVlans(groupsScoped(scopes), site);
}

/** VLANs an interface carries, untagged or tagged (VLANFilterSet.filter_interface_id / filter_vminterface_id). */
function carriedBy(table: string, link: string, column: string) {
  return async (_ctx: ReadCtx, id: number): Promise<Cond> =>
    sql`(ipam_vlan.id in (select untagged_vlan_id from ${sql.table(table)} where id = ${id}) or ipam_vlan.id in (select vlan_id from ${sql.table(link)} where ${sql.ref(column)} = ${id}))`;
}

/**
 * A django-filter ModelChoiceFilter with a method: one object by id (the last value given, as a QueryDict's get()),
 * `Select a valid choice…` when it is not one; an empty value filters nothing.
 */
function objectFilter(name: string, table: string, build: (ctx: ReadCtx, id: number) => Promise<Cond>): ExtraFilter {
  return {
    name,
    kind: 'custom',
    where: async (ctx, vals, errors) => {
      const v = vals[vals.length - 1]!.trim();
      if (v === '') return undefined;
      const found = /^\d{1,16}$/.test(v) ? await ctx.db.selectFrom(table).select('id').where('id', '=', Number(v)).executeTakeFirst() : undefined;
      if (!found) {
        errors[name] = [INVALID];
        return undefined;
      }
      return build(ctx, Number(v));
    },
  };
}

/** VLANFilterSet's availability and assignment filters (NetBox 4.3). */
export const vlanAvailabilityFilters: ExtraFilter[] = [
  objectFilter('available_at_site', 'dcim_site', forSite),
  objectFilter('available_on_device', 'dcim_device', forDevice),
  objectFilter('available_on_virtualmachine', 'virtualization_virtualmachine', forVirtualMachine),
  objectFilter('interface_id', 'dcim_interface', carriedBy('dcim_interface', 'dcim_interface_tagged_vlans', 'interface_id')),
  objectFilter('vminterface_id', 'virtualization_vminterface', carriedBy('virtualization_vminterface', 'virtualization_vminterface_tagged_vlans', 'vminterface_id')),
];
