import { sql, type RawBuilder } from 'kysely';
import { IPADDRESS_ROLE, IPADDRESS_STATUS, PREFIX_STATUS, VLAN_QINQ_ROLE, VLAN_STATUS } from './choices.ts';
import { hexKey, hostKey, parseNet } from './ip.ts';
import { commentsField, descriptionField, nameField, ref, refFilters, siteTreeFilters, slugField, tenancyFilters } from './tenancy.ts';
import { parseVidRanges, rangesToString, totalVids, vidRangesField } from './vid-ranges.ts';
import type { ModelDef } from './types.ts';
import type { ReadCtx } from './read.ts';
import { ipServiceFilter } from './count-filters.ts';
import { linkFilters } from './link-filters.ts';
import { loadBriefs } from './represent.ts';
import { checkScope, LOCATION_SCOPE_TYPES, SCOPE_REF, scopeFields, VLANGROUP_SCOPE_TYPES, vlanGroupScopeFilters } from './scopes.ts';

/** Roles whose addresses may repeat under ENFORCE_GLOBAL_UNIQUE (NetBox's IPADDRESS_ROLES_NONUNIQUE). */
const NONUNIQUE_ROLES = new Set(['anycast', 'vip', 'vrrp', 'hsrp', 'glbp', 'carp']);

export const ipAddress: ModelDef = {
  key: 'ipaddress',
  app: 'ipam',
  path: 'ip-addresses',
  table: 'ipam_ipaddress',
  objectType: 'ipam.ipaddress',
  verboseName: 'IP address',
  title: 'IPAddress',
  fields: [
    { name: 'address', column: 'address', kind: 'ipaddress', required: true, filter: true },
    { name: 'status', column: 'status', kind: 'choice', choices: IPADDRESS_STATUS, default: 'active', filter: true },
    {
      name: 'assigned_object_type',
      column: 'assigned_object_type',
      kind: 'objecttype',
      nullable: true,
      default: null,
      choices: [
        { value: 'dcim.interface', label: 'dcim.interface' },
        { value: 'virtualization.vminterface', label: 'virtualization.vminterface' },
      ],
    },
    { name: 'assigned_object_id', column: 'assigned_object_id', kind: 'integer', nullable: true, min: 0, max: 2 ** 53 - 1, default: null },
    { name: 'dns_name', column: 'dns_name', kind: 'dnsname', blank: true, maxLength: 255, default: '', filter: true },
    { name: 'description', column: 'description', kind: 'char', blank: true, maxLength: 200, default: '', filter: true },
    ref('vrf', 'vrf', { label: 'VRF' }),
    ref('tenant', 'tenant'),
    { name: 'role', column: 'role', kind: 'choice', choices: IPADDRESS_ROLE, nullable: true, default: null, filter: true },
    ref('nat_inside', 'ipaddress', { label: 'NAT (inside)' }),
    commentsField,
  ],
  // NetBox's nat_outside: the addresses whose NAT inside address this is (briefs), right after nat_inside.
  async enrich(ctx, rows, out) {
    if (!rows.length) return;
    const ids = rows.map((r) => Number(r.id));
    const outside = await ctx.db.selectFrom('ipam_ipaddress').select(['id', 'nat_inside_id']).where('nat_inside_id', 'in', ids).orderBy('id').execute();
    const briefs = outside.length ? await loadBriefs(ctx, ipAddress, outside.map((r) => Number(r.id))) : new Map();
    const byInside = new Map<number, unknown[]>();
    for (const r of outside) byInside.set(Number(r.nat_inside_id), [...(byInside.get(Number(r.nat_inside_id)) ?? []), briefs.get(Number(r.id))]);
    out.forEach((o, i) => {
      const copy: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(o)) {
        copy[k] = v;
        if (k === 'nat_inside') copy.nat_outside = byInside.get(ids[i]!) ?? [];
      }
      for (const k of Object.keys(o)) delete o[k];
      Object.assign(o, copy);
    });
  },
  setNull: [
    { model: 'ipaddress', column: 'nat_inside_id' },
    { model: 'device', column: 'primary_ip4_id' },
    { model: 'device', column: 'primary_ip6_id' },
    { model: 'device', column: 'oob_ip_id' },
    { model: 'virtualmachine', column: 'primary_ip4_id' },
    { model: 'virtualmachine', column: 'primary_ip6_id' },
  ],
  derived: (r) => ({ _host: r.address ? hostKey(r.address) : null }),
  async check(ctx, values, existing, errors) {
    const address = 'address' in values ? values.address : existing?.address;
    const vrfId = 'vrf_id' in values ? values.vrf_id : existing?.vrf_id ?? null;
    const role = 'role' in values ? values.role : existing?.role ?? null;
    let enforce = ctx.settings?.enforceGlobalUnique ?? true;
    let vrfName: string | undefined;
    if (vrfId !== null) {
      const v = await ctx.db.selectFrom('ipam_vrf').select(['name', 'enforce_unique']).where('id', '=', vrfId).executeTakeFirst();
      enforce = !!v && ctx.dialect.readBool(v.enforce_unique);
      vrfName = v?.name;
    }
    if (!enforce || !address) return;
    let q = ctx.db.selectFrom('ipam_ipaddress').select(['address', 'role']).where('_host', '=', hostKey(address)).where('family', '=', 'family' in values ? values.family : existing?.family);
    q = vrfId === null ? q.where('vrf_id', 'is', null) : q.where('vrf_id', '=', vrfId);
    if (existing) q = q.where('id', '<>', existing.id);
    const dups = await q.orderBy('id').limit(100).execute();
    if (!dups.length) return;
    if (NONUNIQUE_ROLES.has(role) && dups.every((d) => NONUNIQUE_ROLES.has(d.role))) return;
    errors.address = [`Duplicate IP address found in ${vrfName !== undefined ? `VRF ${vrfName}` : 'global table'}: ${dups[0]!.address}`];
  },
  ordering: ['address'],
  search: ['address', 'dns_name', 'description'],
  brief: ['family', 'address', 'description'],
  taggable: true,
  display: (r) => r.address,
  extraRefs: {
    assigned_object: { model: 'interface', column: 'assigned_object_id', typeColumn: 'assigned_object_type', type: 'dcim.interface' },
    assigned_vminterface: { model: 'vminterface', column: 'assigned_object_id', typeColumn: 'assigned_object_type', type: 'virtualization.vminterface' },
  },
  clean(values, existing, errors) {
    const type = 'assigned_object_type' in values ? values.assigned_object_type : existing?.assigned_object_type ?? null;
    const id = 'assigned_object_id' in values ? values.assigned_object_id : existing?.assigned_object_id ?? null;
    if (type !== null && id === null) (errors.assigned_object_id ??= []).push('This field is required when assigned_object_type is set.');
    if (type === null && id !== null) (errors.assigned_object_type ??= []).push('This field is required when assigned_object_id is set.');
  },
  represent(row, out, refs) {
    const family = Number(row.family);
    return {
      id: out.id,
      url: out.url,
      display_url: out.display_url,
      display: out.display,
      family: { value: family, label: `IPv${family}` },
      address: out.address,
      status: out.status,
      assigned_object_type: out.assigned_object_type,
      assigned_object_id: out.assigned_object_id,
      assigned_object: refs.assigned_object ?? refs.assigned_vminterface ?? null,
      ...Object.fromEntries(Object.entries(out).filter(([k]) => !['id', 'url', 'display_url', 'display', 'address', 'status', 'assigned_object_type', 'assigned_object_id'].includes(k))),
    };
  },
  extraFilters: [
    { name: 'family', kind: 'int', column: 'family' },
    { name: 'interface_id', kind: 'custom' },
    { name: 'nat_inside_id', kind: 'fk_id', column: 'nat_inside_id', model: 'ipaddress' },
    { name: 'device_id', kind: 'custom' },
    { name: 'assigned_to_interface', kind: 'custom' },
    { name: 'assigned', kind: 'custom' },
    { name: 'assigned_object_id', kind: 'int', column: 'assigned_object_id' },
    { name: 'assigned_object_type', kind: 'custom' },
    { name: 'device', kind: 'custom' },
    { name: 'interface', kind: 'custom' },
    { name: 'virtual_machine_id', kind: 'custom' },
    { name: 'virtual_machine', kind: 'custom' },
    { name: 'vminterface_id', kind: 'custom' },
    { name: 'vminterface', kind: 'custom' },
    { name: 'mask_length', kind: 'custom' },
    { name: 'mask_length__gte', kind: 'custom' },
    { name: 'mask_length__lte', kind: 'custom' },
    { name: 'present_in_vrf_id', kind: 'custom' },
    { name: 'present_in_vrf', kind: 'custom' },
    { name: 'vrf_id', kind: 'fk_id', column: 'vrf_id', model: 'vrf' },
    { name: 'vrf', kind: 'fk_slug', column: 'vrf_id', model: 'vrf', attribute: 'rd' },
    { name: 'parent', kind: 'custom' },
    ipServiceFilter,
    ...tenancyFilters,
  ],
};

export const vrf: ModelDef = {
  key: 'vrf',
  app: 'ipam',
  path: 'vrfs',
  table: 'ipam_vrf',
  objectType: 'ipam.vrf',
  verboseName: 'VRF',
  title: 'VRF',
  fields: [
    nameField(100),
    { name: 'rd', column: 'rd', kind: 'char', nullable: true, blank: true, maxLength: 21, default: null, unique: true, filter: true, label: 'Route distinguisher' },
    ref('tenant', 'tenant'),
    { name: 'enforce_unique', column: 'enforce_unique', kind: 'boolean', default: true, filter: true, label: 'Enforce unique space' },
    descriptionField,
    commentsField,
    { name: 'import_targets', column: '', kind: 'm2m', fk: 'routetarget', default: undefined, through: { table: 'ipam_vrf_import_targets', column: 'vrf_id', target: 'routetarget_id' } },
    { name: 'export_targets', column: '', kind: 'm2m', fk: 'routetarget', default: undefined, through: { table: 'ipam_vrf_export_targets', column: 'vrf_id', target: 'routetarget_id' } },
  ],
  ordering: ['name', 'rd'],
  search: ['name', 'rd', 'description', 'comments'],
  brief: ['name', 'rd', 'description', 'prefix_count'],
  taggable: true,
  display: (r) => (r.rd ? `${r.name} (${r.rd})` : r.name),
  extraFilters: [
    ...tenancyFilters,
    ...linkFilters('import_target', { table: 'ipam_vrf', link: 'ipam_vrf_import_targets', self: 'vrf_id', other: 'routetarget_id', target: 'ipam_routetarget' }, 'name'),
    ...linkFilters('export_target', { table: 'ipam_vrf', link: 'ipam_vrf_export_targets', self: 'vrf_id', other: 'routetarget_id', target: 'ipam_routetarget' }, 'name'),
  ],
  setNull: [{ model: 'vminterface', column: 'vrf_id' }, { model: 'interface', column: 'vrf_id' }],
  counts: { ipaddress_count: { model: 'ipaddress', column: 'vrf_id' }, prefix_count: { model: 'prefix', column: 'vrf_id' } },
  protectedBy: [
    { model: 'prefix', column: 'vrf_id' },
    { model: 'ipaddress', column: 'vrf_id' },
  ],
};

/**
 * How many prefixes strictly contain (`parents`: NetBox's `_depth`) or are strictly contained in (`children`) each prefix of
 * `table`, counted in the same VRF (a global prefix counts global ones), as NetBox's get_parents()/get_children().
 */
export function prefixRelatives(table: string, which: 'parents' | 'children'): RawBuilder<unknown> {
  const t = (c: string) => sql.ref(`${table}.${c}`);
  const sameVrf = sql`(r.vrf_id = ${t('vrf_id')} or (r.vrf_id is null and ${t('vrf_id')} is null))`;
  const inside =
    which === 'parents'
      ? sql`r._first <= ${t('_first')} and r._last >= ${t('_last')} and r._len < ${t('_len')}`
      : sql`r._first >= ${t('_first')} and r._last <= ${t('_last')} and r._len > ${t('_len')}`;
  return sql`(select count(*) from ipam_prefix r where r.family = ${t('family')} and ${sameVrf} and ${inside})`;
}

async function prefixRelativeCounts(ctx: ReadCtx, ids: number[], which: 'parents' | 'children'): Promise<Map<number, number>> {
  const rows = await sql<{ id: number; n: number }>`select p.id as id, ${prefixRelatives('p', which)} as n from ipam_prefix p where p.id in (${sql.join(ids)})`.execute(ctx.db);
  return new Map(rows.rows.map((r) => [Number(r.id), Number(r.n)]));
}

export const prefix: ModelDef = {
  key: 'prefix',
  app: 'ipam',
  path: 'prefixes',
  table: 'ipam_prefix',
  objectType: 'ipam.prefix',
  verboseName: 'prefix',
  title: 'Prefix',
  fields: [
    { name: 'prefix', column: 'prefix', kind: 'prefix', required: true, filter: true },
    ref('vrf', 'vrf', { label: 'VRF' }),
    ...scopeFields(LOCATION_SCOPE_TYPES),
    ref('site', 'site'),
    ref('tenant', 'tenant'),
    ref('vlan', 'vlan', { label: 'VLAN' }),
    { name: 'status', column: 'status', kind: 'choice', choices: PREFIX_STATUS, default: 'active', filter: true },
    ref('role', 'role'),
    { name: 'is_pool', column: 'is_pool', kind: 'boolean', default: false, filter: true, label: 'Is a pool' },
    { name: 'mark_utilized', column: 'mark_utilized', kind: 'boolean', default: false, filter: true },
    descriptionField,
    commentsField,
  ],
  ordering: ['vrf', 'prefix'],
  search: ['prefix', 'description', 'comments'],
  brief: ['family', 'prefix', 'description'],
  taggable: true,
  display: (r) => r.prefix,
  derived: (r) => {
    const n = r.prefix ? parseNet(r.prefix) : undefined;
    return n ? { _first: hexKey(n.first, n.family), _last: hexKey(n.last, n.family), _len: n.len } : {};
  },
  extraFilters: [
    { name: 'family', kind: 'int', column: 'family' },
    { name: 'vrf_id', kind: 'fk_id', column: 'vrf_id', model: 'vrf' },
    { name: 'vrf', kind: 'fk_slug', column: 'vrf_id', model: 'vrf', attribute: 'rd' },
    ...refFilters('site', 'site'),
    { name: 'vlan_id', kind: 'fk_id', column: 'vlan_id', model: 'vlan' },
    { name: 'mask_length', kind: 'int', column: '_len' },
    { name: 'within', kind: 'custom' },
    { name: 'within_include', kind: 'custom' },
    { name: 'contains', kind: 'custom' },
    // NetBox's `_depth` / `_children`: the prefixes of the same VRF (or both global) that contain this one / that it contains.
    { name: 'depth', kind: 'int', expr: (t) => prefixRelatives(t, 'parents') },
    { name: 'children', kind: 'int', expr: (t) => prefixRelatives(t, 'children') },
    { name: 'present_in_vrf_id', kind: 'custom' },
    { name: 'present_in_vrf', kind: 'custom' },
    // NetBox's `vlan_vid` (vlan__vid): the VID of the prefix's VLAN.
    { name: 'vlan_vid', kind: 'int', expr: (t) => sql`(select v.vid from ipam_vlan v where v.id = ${sql.ref(`${t}.vlan_id`)})` },
    // NetBox's vlan__group: the group of the prefix's VLAN.
    ...refFilters('vlan_group', 'vlangroup', 'slug', 'vlan_id').map((f) => ({ ...f, through: [{ table: 'ipam_vlan', column: 'group_id' }] })),
    ...refFilters('role', 'role'),
    { name: 'scope_type', kind: 'custom', where: async (_ctx, vals) => sql`ipam_prefix.scope_type in (${sql.join(vals.map((v) => v.trim().toLowerCase()))})` },
    ...tenancyFilters,
  ],
  scopeRef: SCOPE_REF,
  check: (ctx, values, existing, errors) => checkScope(ctx, values, existing, errors, false),
  counts: { children: null, _depth: null },
  countsCustom: { children: (ctx, ids) => prefixRelativeCounts(ctx, ids, 'children'), _depth: (ctx, ids) => prefixRelativeCounts(ctx, ids, 'parents') },
  represent(row, out) {
    const family = Number(row.family);
    const { id, url, display_url, display, ...rest } = out;
    return { id, url, display_url, display, family: { value: family, label: `IPv${family}` }, ...rest };
  },
};

export const vlanGroup: ModelDef = {
  key: 'vlangroup',
  app: 'ipam',
  path: 'vlan-groups',
  table: 'ipam_vlangroup',
  objectType: 'ipam.vlangroup',
  verboseName: 'VLAN group',
  title: 'VLANGroup',
  fields: [nameField(100, { unique: true }), slugField({ unique: true }), ...scopeFields(VLANGROUP_SCOPE_TYPES), vidRangesField, ref('tenant', 'tenant'), descriptionField, commentsField],
  ordering: ['name'],
  search: ['name', 'slug', 'description'],
  brief: ['name', 'slug', 'description', 'vlan_count'],
  taggable: true,
  display: (r) => r.name,
  scopeRef: SCOPE_REF,
  check: (ctx, values, existing, errors) => checkScope(ctx, values, existing, errors, false),
  counts: { vlan_count: { model: 'vlan', column: 'group_id' } },
  extraFilters: [{ name: 'contains_vid', kind: 'custom' }, ...vlanGroupScopeFilters('ipam_vlangroup'), ...tenancyFilters],
  // NetBox's annotate_utilization: VLANs per VID of the ranges, in percent with two decimals.
  represent(row, out) {
    const total = totalVids(parseVidRanges(row.vid_ranges));
    const hundredths = total ? Math.round((Number(out.vlan_count ?? 0) * 10_000) / total) : null;
    return { ...out, utilization: hundredths === null ? null : `${Math.floor(hundredths / 100)}.${String(hundredths % 100).padStart(2, '0')}` };
  },
  protectedBy: [{ model: 'vlan', column: 'group_id' }],
};

export const vlan: ModelDef = {
  key: 'vlan',
  app: 'ipam',
  path: 'vlans',
  table: 'ipam_vlan',
  objectType: 'ipam.vlan',
  verboseName: 'VLAN',
  title: 'VLAN',
  fields: [
    ref('site', 'site'),
    ref('group', 'vlangroup'),
    { name: 'vid', column: 'vid', kind: 'integer', required: true, min: 1, max: 4094, filter: true, label: 'VLAN ID' },
    nameField(64),
    ref('tenant', 'tenant'),
    { name: 'status', column: 'status', kind: 'choice', choices: VLAN_STATUS, default: 'active', filter: true },
    ref('role', 'role'),
    { name: 'qinq_role', column: 'qinq_role', kind: 'choice', choices: VLAN_QINQ_ROLE, nullable: true, blank: true, default: null, filter: true, label: 'Q-in-Q role' },
    ref('qinq_svlan', 'vlan', { label: 'Q-in-Q SVLAN' }),
    descriptionField,
    commentsField,
  ],
  uniqueTogether: [
    ['group', 'vid'],
    ['group', 'name'],
    ['qinq_svlan', 'vid'],
    ['qinq_svlan', 'name'],
  ],
  ordering: ['site', 'group', 'vid'],
  search: ['name', 'description', 'comments'],
  brief: ['vid', 'name', 'description'],
  taggable: true,
  display: (r) => `${r.name} (${r.vid})`,
  extraFilters: [
    ...refFilters('site', 'site'),
    ...siteTreeFilters(),
    ...refFilters('group', 'vlangroup'),
    ...refFilters('role', 'role'),
    { name: 'qinq_svlan_id', kind: 'fk_id', column: 'qinq_svlan_id', model: 'vlan' },
    { name: 'qinq_svlan_vid', kind: 'int', expr: (t) => sql`(select s.vid from ipam_vlan s where s.id = ${sql.ref(`${t}.qinq_svlan_id`)})` },
    ...tenancyFilters,
  ],
  // VLAN.clean(): only customer VLANs sit in a service VLAN, and a customer VLAN needs one.
  clean(values, existing, errors) {
    const at = (c: string) => (c in values ? values[c] : existing?.[c]);
    if (at('qinq_svlan_id') !== null && at('qinq_svlan_id') !== undefined && at('qinq_role') !== 'cvlan') (errors.qinq_svlan ??= []).push('Only Q-in-Q customer VLANs maybe assigned to a service VLAN.');
    else if (at('qinq_role') === 'cvlan' && (at('qinq_svlan_id') === null || at('qinq_svlan_id') === undefined)) (errors.qinq_role ??= []).push('A Q-in-Q customer VLAN must be assigned to a service VLAN.');
  },
  // VLAN.clean(): a VLAN of a group has a VID of the group's ranges.
  async check(ctx, values, existing, errors) {
    const group = 'group_id' in values ? values.group_id : existing?.group_id;
    if (group === null || group === undefined) return;
    const g = await ctx.db.selectFrom('ipam_vlangroup').select(['name', 'vid_ranges']).where('id', '=', group).executeTakeFirst();
    const vid = Number('vid' in values ? values.vid : existing?.vid);
    const ranges = g ? parseVidRanges(ctx.dialect.parseJson(g.vid_ranges)) : [];
    if (g && !ranges.some(([lo, hi]) => vid >= lo && vid <= hi)) (errors.vid ??= []).push(`VID must be in ranges ${rangesToString(ranges)} for VLANs in group ${g.name}`);
  },
  unmodelled: { l2vpn_termination: null },
  counts: { prefix_count: { model: 'prefix', column: 'vlan_id' } },
  protectedBy: [{ model: 'vlan', column: 'qinq_svlan_id' }],
  setNull: [
    { model: 'prefix', column: 'vlan_id' },
    { model: 'interface', column: 'untagged_vlan_id' },
    { model: 'vminterface', column: 'untagged_vlan_id' },
  ],
};
