import type { ExtraFilter, FieldDef, ModelDef } from './types.ts';

export const nameField = (max = 100, extra: Partial<FieldDef> = {}): FieldDef => ({ name: 'name', column: 'name', kind: 'char', required: true, maxLength: max, filter: true, ...extra });
export const slugField = (extra: Partial<FieldDef> = {}): FieldDef => ({ name: 'slug', column: 'slug', kind: 'slug', required: true, maxLength: 100, filter: true, ...extra });
export const descriptionField: FieldDef = { name: 'description', column: 'description', kind: 'char', blank: true, maxLength: 200, default: '', filter: true };
export const commentsField: FieldDef = { name: 'comments', column: 'comments', kind: 'text', blank: true, maxLength: 100_000, default: '' };

/** An optional reference: `tenant` → column `tenant_id`. */
export const ref = (name: string, fk: string, extra: Partial<FieldDef> = {}): FieldDef => ({ name, column: `${name}_id`, kind: 'fk', fk, nullable: true, default: null, ...extra });

/** `<name>_id` and `<name>` (by slug, or another attribute) filters of a reference. */
export function refFilters(name: string, fk: string, attribute = 'slug', column = `${name}_id`): ExtraFilter[] {
  return [
    { name: `${name}_id`, kind: 'fk_id', column, model: fk },
    { name, kind: 'fk_slug', column, model: fk, attribute },
  ];
}

/**
 * `<name>_id` and `<name>` (by slug) filters on a tree model (NetBox's TreeNodeMultipleChoiceFilter):
 * each named node stands for its subtree. `through` reaches the tree's ids from `column` via other tables.
 */
export function treeFilters(name: string, tree: string, column: string, through?: ExtraFilter['through']): ExtraFilter[] {
  return refFilters(name, tree, 'slug', column).map((f) => ({ ...f, subtree: true, ...(through ? { through } : {}) }));
}

/** Region and site group filters of objects placed at a site (`site_id` column, or reached through `via`). */
export function siteTreeFilters(column = 'site_id', via: NonNullable<ExtraFilter['through']> = []): ExtraFilter[] {
  return [
    ...treeFilters('region', 'region', column, [...via, { table: 'dcim_site', column: 'region_id' }]),
    ...treeFilters('site_group', 'sitegroup', column, [...via, { table: 'dcim_site', column: 'group_id' }]),
  ];
}

/** NetBox's nested groups (regions, site groups, tenant groups): a parent of the same kind; children go with it. */
export function nestedGroup(key: string, app: string, path: string, table: string, title: string, verboseName: string, extra: Partial<ModelDef> = {}): ModelDef {
  return {
    key,
    app,
    path,
    table,
    objectType: `${app}.${key}`,
    verboseName,
    title,
    fields: [nameField(100, { unique: true }), slugField({ unique: true }), ref('parent', key), descriptionField, commentsField],
    ordering: ['name'],
    search: ['name', 'slug', 'description', 'comments'],
    brief: ['name', 'slug', 'description', ...Object.keys(extra.counts ?? {}).slice(0, 1), '_depth'],
    taggable: true,
    display: (r) => r.name,
    // `parent` is the direct parent; `ancestor` any group above (NetBox 4.3).
    extraFilters: [...refFilters('parent', key), ...treeFilters('ancestor', key, 'parent_id')],
    unmodelled: { _depth: 0 },
    cascade: [{ model: key, column: 'parent_id' }],
    check: async (ctx, values, existing, errors) => {
      const parent = 'parent_id' in values ? values.parent_id : undefined;
      if (!existing || parent === undefined || parent === null) return;
      // A group may not sit under itself or one of its descendants.
      let at: number | null = parent;
      for (let hops = 0; at !== null && hops < 1000; hops++) {
        if (at === existing.id) {
          (errors.parent ??= []).push('Cannot assign self or child as parent.');
          return;
        }
        const row: { parent_id: number | null } | undefined = await ctx.db.selectFrom(table).select('parent_id').where('id', '=', at).executeTakeFirst();
        at = row?.parent_id === null || row?.parent_id === undefined ? null : Number(row.parent_id);
      }
    },
    ...extra,
  };
}

export const tenantGroup = nestedGroup('tenantgroup', 'tenancy', 'tenant-groups', 'tenancy_tenantgroup', 'TenantGroup', 'tenant group', {
  counts: { tenant_count: { model: 'tenant', column: 'group_id' } },
  setNull: [{ model: 'tenant', column: 'group_id' }],
});

export const tenant: ModelDef = {
  key: 'tenant',
  app: 'tenancy',
  path: 'tenants',
  table: 'tenancy_tenant',
  objectType: 'tenancy.tenant',
  verboseName: 'tenant',
  title: 'Tenant',
  fields: [nameField(100, { unique: true }), slugField({ unique: true }), ref('group', 'tenantgroup'), descriptionField, commentsField],
  ordering: ['name'],
  search: ['name', 'slug', 'description', 'comments'],
  brief: ['name', 'slug', 'description'],
  taggable: true,
  display: (r) => r.name,
  extraFilters: treeFilters('group', 'tenantgroup', 'group_id'),
  counts: {
    circuit_count: null,
    device_count: { model: 'device', column: 'tenant_id' },
    ipaddress_count: { model: 'ipaddress', column: 'tenant_id' },
    prefix_count: { model: 'prefix', column: 'tenant_id' },
    rack_count: { model: 'rack', column: 'tenant_id' },
    site_count: { model: 'site', column: 'tenant_id' },
    virtualmachine_count: { model: 'virtualmachine', column: 'tenant_id' },
    vlan_count: { model: 'vlan', column: 'tenant_id' },
    vrf_count: { model: 'vrf', column: 'tenant_id' },
    cluster_count: { model: 'cluster', column: 'tenant_id' },
  },
  // NetBox protects tenants that objects still belong to.
  protectedBy: ['site', 'location', 'rack', 'device', 'vrf', 'prefix', 'vlan', 'ipaddress', 'cluster', 'virtualmachine'].map((model) => ({ model, column: 'tenant_id' })),
};

/** The filters every tenant-scoped object has: `tenant`, `tenant_id`, and the tenant's group with its subgroups. */
export const tenancyFilters: ExtraFilter[] = [...refFilters('tenant', 'tenant'), ...treeFilters('tenant_group', 'tenantgroup', 'tenant_id', [{ table: 'tenancy_tenant', column: 'group_id' }])];
