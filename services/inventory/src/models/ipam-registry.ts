import { fail } from './field-problem.ts';
import { hexKey, parseNet } from './ip.ts';
import { descriptionField, commentsField, nameField, refFilters, ref, slugField, tenancyFilters } from './tenancy.ts';
import type { FieldDef, ModelDef, ReadCtx } from './types.ts';
import { sql } from 'kysely';
import { linkFilters } from './link-filters.ts';

/** How many sites (or providers) each ASN is linked to. */
async function linkCounts(ctx: ReadCtx, link: string, ids: number[]): Promise<Map<number, number>> {
  const rows = await sql<{ id: number; n: number }>`select asn_id as id, count(*) as n from ${sql.table(link)} where asn_id in (${sql.join(ids)}) group by asn_id`.execute(ctx.db);
  return new Map(rows.rows.map((r) => [Number(r.id), Number(r.n)]));
}

/** Regional Internet Registries (NetBox's RIR): name, slug, is_private; aggregates and ASNs hang off them. */
export const rir: ModelDef = {
  key: 'rir',
  app: 'ipam',
  path: 'rirs',
  table: 'ipam_rir',
  objectType: 'ipam.rir',
  verboseName: 'RIR',
  title: 'RIR',
  fields: [nameField(100, { unique: true }), slugField({ unique: true }), { name: 'is_private', column: 'is_private', kind: 'boolean', default: false, filter: true, label: 'Private' }, descriptionField],
  ordering: ['name'],
  search: ['name', 'slug', 'description'],
  brief: ['name', 'slug', 'description', 'aggregate_count'],
  taggable: true,
  display: (r) => r.name,
  counts: { aggregate_count: { model: 'aggregate', column: 'rir_id' } },
  protectedBy: [
    { model: 'aggregate', column: 'rir_id' },
    { model: 'asn', column: 'rir_id' },
  ],
};

/** An aggregate: a top-level block from an RIR (never inside another aggregate). */
export const aggregate: ModelDef = {
  key: 'aggregate',
  app: 'ipam',
  path: 'aggregates',
  table: 'ipam_aggregate',
  objectType: 'ipam.aggregate',
  verboseName: 'aggregate',
  title: 'Aggregate',
  fields: [
    { name: 'prefix', column: 'prefix', kind: 'prefix', required: true, filter: true },
    { name: 'rir', column: 'rir_id', kind: 'fk', fk: 'rir', required: true, label: 'RIR' },
    ref('tenant', 'tenant'),
    {
      name: 'date_added',
      column: 'date_added',
      kind: 'char',
      nullable: true,
      blank: true,
      default: null,
      maxLength: 10,
      filter: true,
      parse: (v) => {
        const s = typeof v === 'string' ? v.trim() : '';
        if (!/^\d{4}-\d{2}-\d{2}$/.test(s) || Number.isNaN(Date.parse(`${s}T00:00:00Z`)) || new Date(`${s}T00:00:00Z`).toISOString().slice(0, 10) !== s) fail('Date has wrong format. Use one of these formats instead: YYYY-MM-DD.');
        return s;
      },
    },
    descriptionField,
    commentsField,
  ],
  ordering: ['prefix', 'id'],
  search: ['prefix', 'description', 'comments'],
  brief: ['family', 'prefix', 'description'],
  taggable: true,
  display: (r) => r.prefix,
  derived: (r) => {
    const n = r.prefix ? parseNet(r.prefix) : undefined;
    return n ? { _first: hexKey(n.first, n.family), _last: hexKey(n.last, n.family), _len: n.len } : {};
  },
  extraFilters: [{ name: 'family', kind: 'int', column: 'family' }, ...refFilters('rir', 'rir'), ...tenancyFilters],
  represent(row, out) {
    const family = Number(row.family);
    const { id, url, display_url, display, ...rest } = out;
    return { id, url, display_url, display, family: { value: family, label: `IPv${family}` }, ...rest };
  },
  check: async (ctx, values, existing, errors) => {
    const prefix = values.prefix ?? existing?.prefix;
    const net = typeof prefix === 'string' ? parseNet(prefix) : undefined;
    if (!net) return;
    // NetBox's Aggregate.clean(): no overlap with another aggregate.
    const others = await ctx.db.selectFrom('ipam_aggregate').select(['id', 'prefix']).where('family', '=', net.family).execute();
    for (const o of others) {
      if (existing && Number(o.id) === existing.id) continue;
      const n = parseNet(String(o.prefix));
      if (!n) continue;
      if (n.first <= net.first && net.last <= n.last) return void (errors.prefix ??= []).push(`Aggregates cannot overlap. ${prefix} is already covered by an existing aggregate (${o.prefix}).`);
      if (net.first <= n.first && n.last <= net.last) return void (errors.prefix ??= []).push(`Prefixes cannot overlap aggregates. ${prefix} covers an existing aggregate (${o.prefix}).`);
    }
  },
};

/** IPAM roles (prefix and VLAN functions): name, slug, weight. */
export const ipamRole: ModelDef = {
  key: 'role',
  app: 'ipam',
  path: 'roles',
  table: 'ipam_role',
  objectType: 'ipam.role',
  verboseName: 'role',
  title: 'Role',
  fields: [nameField(100, { unique: true }), slugField({ unique: true }), { name: 'weight', column: 'weight', kind: 'integer', default: 1000, min: 0, max: 32767, filter: true }, descriptionField],
  ordering: ['weight', 'name'],
  search: ['name', 'slug', 'description'],
  brief: ['name', 'slug', 'description'],
  taggable: true,
  display: (r) => r.name,
  counts: { prefix_count: { model: 'prefix', column: 'role_id' }, vlan_count: { model: 'vlan', column: 'role_id' } },
  // Prefix.role and VLAN.role are SET_NULL.
  setNull: [
    { model: 'prefix', column: 'role_id' },
    { model: 'vlan', column: 'role_id' },
  ],
};

const asnField: FieldDef = {
  name: 'asn',
  column: 'asn',
  kind: 'integer',
  required: true,
  unique: true,
  min: 1,
  max: 4294967295,
  filter: true,
  label: 'ASN',
};

/** Autonomous system numbers (16- and 32-bit), each from an RIR. */
export const asn: ModelDef = {
  key: 'asn',
  app: 'ipam',
  path: 'asns',
  table: 'ipam_asn',
  objectType: 'ipam.asn',
  verboseName: 'ASN',
  title: 'ASN',
  fields: [asnField, { name: 'rir', column: 'rir_id', kind: 'fk', fk: 'rir', required: true, label: 'RIR' }, ref('tenant', 'tenant'), descriptionField, commentsField],
  ordering: ['asn'],
  search: ['description', 'comments'],
  brief: ['asn', 'description'],
  taggable: true,
  // NetBox's asn_with_asdot: 32-bit numbers also in asdot notation.
  display: (r) => (Number(r.asn) > 65535 ? `AS${r.asn} (${Math.floor(Number(r.asn) / 65536)}.${Number(r.asn) % 65536})` : `AS${r.asn}`),
  counts: { site_count: null, provider_count: null },
  countsCustom: { site_count: (ctx, ids) => linkCounts(ctx, 'dcim_site_asns', ids), provider_count: (ctx, ids) => linkCounts(ctx, 'circuits_provider_asns', ids) },
  extraFilters: [
    ...refFilters('rir', 'rir'),
    ...tenancyFilters,
    ...linkFilters('site', { table: 'ipam_asn', link: 'dcim_site_asns', self: 'asn_id', other: 'site_id', target: 'dcim_site' }),
    ...linkFilters('site_group', { table: 'ipam_asn', link: 'dcim_site_asns', self: 'asn_id', other: 'site_id', target: 'dcim_sitegroup', via: { table: 'dcim_site', column: 'group_id', tree: true } }),
    ...linkFilters('provider', { table: 'ipam_asn', link: 'circuits_provider_asns', self: 'asn_id', other: 'provider_id', target: 'circuits_provider' }),
  ],
};

export const IPAM_REGISTRY_MODELS = [rir, aggregate, ipamRole, asn];