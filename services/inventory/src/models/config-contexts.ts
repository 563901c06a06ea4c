import { sql } from 'kysely';
import { fail } from './field-problem.ts';
import { chunks } from './read.ts';
import type { FieldDef, ModelDef, ReadCtx, Row } from './types.ts';
import { syncedDataFields, syncedDataFilters, syncedDataValues } from './data-sources.ts';
import { resolveSyncedData } from './synced-data.ts';

/**
 * NetBox's config contexts (`/api/extras/config-contexts/`): JSON data assigned to devices and virtual machines by
 * region, site group, site, location, device type, role, platform, cluster type/group, cluster, tenant group, tenant
 * and tag. An object's `config_context` merges every active context that applies, by weight then name, and its own
 * `local_context_data` last (NetBox's deepmerge). Config templates (`/api/extras/config-templates/`) render it.
 */

export interface Assignment {
  /** API name (`regions`). */
  name: string;
  /** Referenced model key. */
  fk: string;
  through: string;
  /** Column of the link table holding the referenced id. */
  target: string;
  targetTable: string;
}

const assign = (name: string, fk: string, targetTable: string): Assignment => ({ name, fk, through: `extras_configcontext_${name}`, target: `${fk}_id`, targetTable });

/** The assignment lists in NetBox's field order. */
export const CONFIG_CONTEXT_ASSIGNMENTS: Assignment[] = [
  assign('regions', 'region', 'dcim_region'),
  assign('site_groups', 'sitegroup', 'dcim_sitegroup'),
  assign('sites', 'site', 'dcim_site'),
  assign('locations', 'location', 'dcim_location'),
  assign('device_types', 'devicetype', 'dcim_devicetype'),
  assign('roles', 'devicerole', 'dcim_devicerole'),
  assign('platforms', 'platform', 'dcim_platform'),
  assign('cluster_types', 'clustertype', 'virtualization_clustertype'),
  assign('cluster_groups', 'clustergroup', 'virtualization_clustergroup'),
  assign('clusters', 'cluster', 'virtualization_cluster'),
  assign('tenant_groups', 'tenantgroup', 'tenancy_tenantgroup'),
  assign('tenants', 'tenant', 'tenancy_tenant'),
  assign('tags', 'tag', 'extras_tag'),
];

/** `<name>_id` (ids) and `<name>` (slugs; device types by slug too) filters of an assignment, as ConfigContextFilterSet. */
const FILTER_NAMES: Record<string, [string, string | null]> = {
  regions: ['region', 'slug'],
  site_groups: ['site_group', 'slug'],
  sites: ['site', 'slug'],
  locations: ['location', 'slug'],
  device_types: ['device_type', null],
  roles: ['role', 'slug'],
  platforms: ['platform', 'slug'],
  cluster_types: ['cluster_type', 'slug'],
  cluster_groups: ['cluster_group', 'slug'],
  clusters: ['cluster', null],
  tenant_groups: ['tenant_group', 'slug'],
  tenants: ['tenant', 'slug'],
  tags: ['tag', 'slug'],
};

function assignmentFilters(): NonNullable<ModelDef['extraFilters']> {
  const out: NonNullable<ModelDef['extraFilters']> = [];
  for (const a of CONFIG_CONTEXT_ASSIGNMENTS) {
    const [base, attr] = FILTER_NAMES[a.name]!;
    const linked = (ids: unknown) => sql`extras_configcontext.id in (select configcontext_id from ${sql.table(a.through)} where ${sql.ref(a.target)} in ${ids})`;
    out.push({
      name: `${base}_id`,
      kind: 'custom',
      where: async (ctx, vals, errors) => {
        const bad = vals.find((v) => !/^\d{1,16}$/.test(v.trim()));
        if (bad !== undefined) return void (errors[`${base}_id`] = [`Select a valid choice. ${bad} is not one of the available choices.`]);
        const ids = vals.map(Number);
        const found = new Set((await ctx.db.selectFrom(a.targetTable).select('id').where('id', 'in', ids).execute()).map((r) => Number(r.id)));
        const missing = ids.find((id) => !found.has(id));
        if (missing !== undefined) return void (errors[`${base}_id`] = [`Select a valid choice. ${missing} is not one of the available choices.`]);
        return linked(sql`(${sql.join(ids)})`);
      },
    });
    if (attr) {
      out.push({
        name: base,
        kind: 'custom',
        where: async (ctx, vals, errors) => {
          const rows = await ctx.db.selectFrom(a.targetTable).select(['id', attr]).where(attr, 'in', vals).execute();
          const found = new Set(rows.map((r: Row) => String(r[attr])));
          const missing = vals.find((v) => !found.has(v));
          if (missing !== undefined) return void (errors[base] = [`Select a valid choice. ${missing} is not one of the available choices.`]);
          return linked(sql`(select id from ${sql.table(a.targetTable)} where ${sql.ref(attr)} in (${sql.join(vals)}))`);
        },
      });
    }
  }
  return out;
}

export const configContext: ModelDef = {
  key: 'configcontext',
  app: 'extras',
  path: 'config-contexts',
  table: 'extras_configcontext',
  objectType: 'extras.configcontext',
  verboseName: 'config context',
  title: 'ConfigContext',
  fields: [
    { name: 'name', column: 'name', kind: 'char', required: true, maxLength: 100, unique: true, filter: true },
    { name: 'weight', column: 'weight', kind: 'integer', default: 1000, min: 0, max: 32767, filter: true },
    { name: 'description', column: 'description', kind: 'char', blank: true, maxLength: 200, default: '', filter: true },
    { name: 'is_active', column: 'is_active', kind: 'boolean', default: true, filter: true },
    ...CONFIG_CONTEXT_ASSIGNMENTS.map(
      (a): FieldDef => ({ name: a.name, column: '', kind: 'm2m', fk: a.fk, default: undefined, through: { table: a.through, column: 'configcontext_id', target: a.target }, ...(a.name === 'tags' ? { itemAttribute: 'slug' } : {}) }),
    ),
    ...syncedDataFields,
    // Required, as NetBox's serializer has it; a data file's content replaces it (resolveSyncedData).
    { name: 'data', column: 'data', kind: 'json', required: true },
  ],
  extraRefs: { data_file: { model: 'datafile', column: 'data_file_id' } },
  ordering: ['weight', 'name'],
  search: ['name', 'description'],
  brief: ['name', 'description'],
  // NetBox's ConfigContext is change-logged but has no tags or custom fields of its own (`tags` assigns it).
  taggable: false,
  display: (r) => r.name,
  extraFilters: [...assignmentFilters(), ...syncedDataFilters('extras_configcontext')],
  check: (ctx, values, existing, errors) => resolveSyncedData(ctx, 'context', values, existing, errors),
  represent(row, out, refs) {
    // Tags as slugs (NetBox's SlugRelatedField); data after the data-source keys, as NetBox orders them.
    const tags = (out.tags as Array<{ slug: string }>).map((t) => t.slug);
    const { data, created, last_updated, data_source, data_path, auto_sync_enabled: _a, ...rest } = out;
    const { data_file, data_synced } = syncedDataValues(row, refs);
    return { ...rest, tags, data_source, data_path, data_file, data_synced, data, created, last_updated };
  },
};

/** NetBox 4.3's ConfigTemplate environment_params this service's engine honours. */
export const ENVIRONMENT_PARAMS = ['trim_blocks', 'lstrip_blocks', 'keep_trailing_newline'] as const;

function parseEnvironmentParams(v: unknown): unknown {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail('JSON data must be in object form. Example: {"foo": 123}');
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (!(ENVIRONMENT_PARAMS as readonly string[]).includes(k)) fail(`This service's template engine does not support the environment parameter '${k.slice(0, 100)}' (supported: ${ENVIRONMENT_PARAMS.join(', ')}).`);
    if (typeof x !== 'boolean') fail(`The environment parameter '${k}' must be true or false.`);
  }
  return v;
}

/** The render environment a template's environment_params select (see events/render-setup.ts). */
export function environmentName(params: unknown): string {
  const p = (params && typeof params === 'object' ? params : {}) as Record<string, unknown>;
  return `config-${p.trim_blocks === true ? 1 : 0}${p.lstrip_blocks === true ? 1 : 0}${p.keep_trailing_newline === true ? 1 : 0}`;
}

export const configTemplate: ModelDef = {
  key: 'configtemplate',
  app: 'extras',
  path: 'config-templates',
  table: 'extras_configtemplate',
  objectType: 'extras.configtemplate',
  verboseName: 'config template',
  title: 'ConfigTemplate',
  fields: [
    { name: 'name', column: 'name', kind: 'char', required: true, maxLength: 100, filter: true },
    { name: 'description', column: 'description', kind: 'char', blank: true, maxLength: 200, default: '', filter: true },
    { name: 'environment_params', column: 'environment_params', kind: 'json', nullable: true, default: {}, parse: parseEnvironmentParams },
    // Required, as NetBox's serializer has it; a data file's content replaces it (resolveSyncedData).
    { name: 'template_code', column: 'template_code', kind: 'text', required: true, maxLength: 1_048_576 },
    { name: 'mime_type', column: 'mime_type', kind: 'char', blank: true, maxLength: 50, default: '', filter: true },
    { name: 'file_name', column: 'file_name', kind: 'char', blank: true, maxLength: 200, default: '', filter: true },
    { name: 'file_extension', column: 'file_extension', kind: 'char', blank: true, maxLength: 15, default: '', filter: true },
    { name: 'as_attachment', column: 'as_attachment', kind: 'boolean', default: true, filter: true },
    ...syncedDataFields,
  ],
  extraRefs: { data_file: { model: 'datafile', column: 'data_file_id' } },
  extraFilters: syncedDataFilters('extras_configtemplate'),
  check: (ctx, values, existing, errors) => resolveSyncedData(ctx, 'template', values, existing, errors),
  ordering: ['name'],
  search: ['name', 'description'],
  brief: ['name', 'description'],
  taggable: true,
  display: (r) => r.name,
  // NetBox protects a template that devices, VMs, roles or platforms use.
  protectedBy: ['device', 'virtualmachine', 'devicerole', 'platform'].map((model) => ({ model, column: 'config_template_id' })),
  represent(row, out, refs) {
    const { tags, custom_fields: _cf, created, last_updated, data_source, data_path, auto_sync_enabled, ...rest } = out;
    const { data_file, data_synced } = syncedDataValues(row, refs);
    return { ...rest, data_source, data_path, data_file, auto_sync_enabled, data_synced, tags, created, last_updated };
  },
};

/** NetBox's utilities.data.deepmerge: nested dictionaries merge, anything else is replaced. */
export function deepmerge(original: Record<string, unknown>, next: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...original };
  for (const [k, v] of Object.entries(next)) {
    const o = original[k];
    if (isDict(o) && isDict(v) && Object.keys(v).length) merged[k] = deepmerge(o, v);
    else merged[k] = v;
  }
  return merged;
}

const isDict = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

interface ActiveContext {
  id: number;
  name: string;
  weight: number;
  data: Record<string, unknown>;
  /** Assigned ids per assignment name; absent = applies to all. */
  sets: Map<string, Set<number>>;
}

async function activeContexts(ctx: ReadCtx): Promise<ActiveContext[]> {
  const rows = await ctx.db.selectFrom('extras_configcontext').select(['id', 'name', 'weight', 'data']).where('is_active', '=', ctx.dialect.bool(true)).execute();
  if (!rows.length) return [];
  const byId = new Map<number, ActiveContext>();
  for (const r of rows) byId.set(Number(r.id), { id: Number(r.id), name: String(r.name), weight: Number(r.weight), data: (ctx.dialect.parseJson<Record<string, unknown>>(r.data) ?? {}) as Record<string, unknown>, sets: new Map() });
  // Every assignment link in one statement (the link tables are small: one row per assignment).
  const union = sql.join(
    CONFIG_CONTEXT_ASSIGNMENTS.map((a, i) => sql`select ${i} as a, configcontext_id as c, ${sql.ref(a.target)} as t from ${sql.table(a.through)}`),
    sql` union all `,
  );
  const links = await sql<{ a: unknown; c: unknown; t: unknown }>`${union}`.execute(ctx.db);
  for (const l of links.rows) {
    const c = byId.get(Number(l.c));
    if (!c) continue;
    const name = CONFIG_CONTEXT_ASSIGNMENTS[Number(l.a)]!.name;
    let set = c.sets.get(name);
    if (!set) c.sets.set(name, (set = new Set()));
    set.add(Number(l.t));
  }
  // NetBox's order: weight, then name (Python's string order: code points).
  return [...byId.values()].sort((x, y) => x.weight - y.weight || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
}

/** Every id of a tree table with its ancestors (`parent_id`), for region/site group/location/tenant group matching. */
async function ancestorsOf(ctx: ReadCtx, table: string, ids: Iterable<number>): Promise<Map<number, number[]>> {
  const parent = new Map<number, number | null>();
  let frontier = [...new Set(ids)];
  for (let depth = 0; frontier.length && depth < 100; depth++) {
    const next: number[] = [];
    for (const part of chunks(frontier)) {
      const rows = await ctx.db.selectFrom(table).select(['id', 'parent_id']).where('id', 'in', part).execute();
      for (const r of rows) {
        const p = r.parent_id === null ? null : Number(r.parent_id);
        parent.set(Number(r.id), p);
        if (p !== null && !parent.has(p)) next.push(p);
      }
    }
    frontier = next;
  }
  const out = new Map<number, number[]>();
  for (const id of new Set(ids)) {
    const chain: number[] = [];
    for (let at: number | null | undefined = id, hops = 0; at !== null && at !== undefined && hops < 100; hops++) {
      chain.push(at);
      at = parent.get(at);
    }
    out.set(id, chain);
  }
  return out;
}

async function columnOf(ctx: ReadCtx, table: string, column: string, ids: number[]): Promise<Map<number, number | null>> {
  const out = new Map<number, number | null>();
  for (const part of chunks([...new Set(ids)])) {
    if (!part.length) continue;
    const rows = await ctx.db.selectFrom(table).select(['id', column]).where('id', 'in', part).execute();
    for (const r of rows) out.set(Number(r.id), (r as Row)[column] === null ? null : Number((r as Row)[column]));
  }
  return out;
}

/**
 * `config_context` of devices or virtual machines (`m` is one of them): the applicable active contexts merged by
 * weight and name, then the object's local context data. Replaces the value the representation carries.
 */
export async function applyConfigContexts(ctx: ReadCtx, m: ModelDef, rows: Row[], out: Array<Record<string, unknown>>): Promise<void> {
  if (ctx.skipConfigContext || !rows.length || !out.some((o) => 'config_context' in o)) return;
  const contexts = await activeContexts(ctx);
  if (!contexts.length) return;
  const used = (name: string) => contexts.some((c) => c.sets.has(name));
  const idsOf = (col: string) => rows.map((r) => r[col]).filter((v) => v !== null && v !== undefined).map(Number);
  const isDevice = m.key === 'device';
  // What each object is, per assignment (only the dimensions some context uses).
  const sites = idsOf('site_id');
  const siteRegion = used('regions') ? await columnOf(ctx, 'dcim_site', 'region_id', sites) : new Map();
  const siteGroup = used('site_groups') ? await columnOf(ctx, 'dcim_site', 'group_id', sites) : new Map();
  const regionChains = used('regions') ? await ancestorsOf(ctx, 'dcim_region', [...siteRegion.values()].filter((v): v is number => v !== null)) : new Map();
  const groupChains = used('site_groups') ? await ancestorsOf(ctx, 'dcim_sitegroup', [...siteGroup.values()].filter((v): v is number => v !== null)) : new Map();
  const locationChains = isDevice && used('locations') ? await ancestorsOf(ctx, 'dcim_location', idsOf('location_id')) : new Map();
  const clusterIds = idsOf('cluster_id');
  const clusterType = used('cluster_types') ? await columnOf(ctx, 'virtualization_cluster', 'type_id', clusterIds) : new Map();
  const clusterGroup = used('cluster_groups') ? await columnOf(ctx, 'virtualization_cluster', 'group_id', clusterIds) : new Map();
  const tenantGroup = used('tenant_groups') ? await columnOf(ctx, 'tenancy_tenant', 'group_id', idsOf('tenant_id')) : new Map();
  const tenantGroupChains = used('tenant_groups') ? await ancestorsOf(ctx, 'tenancy_tenantgroup', [...tenantGroup.values()].filter((v): v is number => v !== null)) : new Map();
  const tagsOf = new Map<number, number[]>();
  if (used('tags')) {
    for (const part of chunks(rows.map((r) => Number(r.id)))) {
      const links = await ctx.db.selectFrom('extras_taggeditem').select(['object_id', 'tag_id']).where('object_type', '=', m.objectType).where('object_id', 'in', part).execute();
      for (const l of links) tagsOf.set(Number(l.object_id), [...(tagsOf.get(Number(l.object_id)) ?? []), Number(l.tag_id)]);
    }
  }
  rows.forEach((r, i) => {
    const o = out[i]!;
    if (!('config_context' in o)) return;
    const one = (v: unknown) => (v === null || v === undefined ? [] : [Number(v)]);
    const chain = (chains: Map<number, number[]>, v: unknown) => (v === null || v === undefined ? [] : (chains.get(Number(v)) ?? [Number(v)]));
    const is: Record<string, number[]> = {
      regions: chain(regionChains, siteRegion.get(Number(r.site_id))),
      site_groups: chain(groupChains, siteGroup.get(Number(r.site_id))),
      sites: one(r.site_id),
      locations: isDevice ? chain(locationChains, r.location_id) : [],
      device_types: isDevice ? one(r.device_type_id) : [],
      roles: one(r.role_id),
      platforms: one(r.platform_id),
      cluster_types: one(clusterType.get(Number(r.cluster_id))),
      cluster_groups: one(clusterGroup.get(Number(r.cluster_id))),
      clusters: one(r.cluster_id),
      tenant_groups: chain(tenantGroupChains, tenantGroup.get(Number(r.tenant_id))),
      tenants: one(r.tenant_id),
      tags: tagsOf.get(Number(r.id)) ?? [],
    };
    let data: Record<string, unknown> = {};
    for (const c of contexts) {
      let applies = true;
      for (const [name, set] of c.sets) {
        if (!is[name]!.some((id) => set.has(id))) {
          applies = false;
          break;
        }
      }
      if (applies) data = deepmerge(data, c.data);
    }
    const local = r.local_context_data;
    o.config_context = isDict(local) ? deepmerge(data, local) : data;
  });
}
