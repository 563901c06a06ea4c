import { sql } from 'kysely';
import { commentsField, descriptionField, nameField, ref, slugField, tenancyFilters } from './tenancy.ts';
import { assignedFilter, interfaceAssignmentFilters, namedIds } from './assigned-filters.ts';
import { linkFilters } from './link-filters.ts';
import type { Choice, ModelDef, Row } from './types.ts';

/**
 * NetBox's L2VPNs (`/api/vpn/l2vpns/`) with import/export route targets, and their terminations
 * (`/api/vpn/l2vpn-terminations/`) on an interface, a VM interface or a VLAN: one termination per object,
 * at most two on a point-to-point type (L2VPNTermination.clean()).
 */

const TYPES: Array<[string, string]> = [
  ['vpws', 'VPWS'],
  ['vpls', 'VPLS'],
  ['vxlan', 'VXLAN'],
  ['vxlan-evpn', 'VXLAN-EVPN'],
  ['mpls-evpn', 'MPLS EVPN'],
  ['pbb-evpn', 'PBB EVPN'],
  ['evpn-vpws', 'EVPN VPWS'],
  ['epl', 'EPL'],
  ['evpl', 'EVPL'],
  ['ep-lan', 'Ethernet Private LAN'],
  ['evp-lan', 'Ethernet Virtual Private LAN'],
  ['ep-tree', 'Ethernet Private Tree'],
  ['evp-tree', 'Ethernet Virtual Private Tree'],
  ['spb', 'SPB'],
];
export const L2VPN_TYPES: Choice[] = TYPES.map(([value, label]) => ({ value, label }));
const L2VPN_STATUS: Choice[] = [
  { value: 'active', label: 'Active' },
  { value: 'planned', label: 'Planned' },
  { value: 'decommissioning', label: 'Decommissioning' },
];
/** L2VPNTypeChoices.P2P: types with at most two terminations. */
const POINT_TO_POINT = new Set(['vpws', 'epl', 'ep-lan', 'ep-tree']);

const TERMINATION_TYPES: Choice[] = ['dcim.interface', 'ipam.vlan', 'virtualization.vminterface'].map((v) => ({ value: v, label: v }));
const TABLE_OF: Record<string, string> = { 'dcim.interface': 'dcim_interface', 'ipam.vlan': 'ipam_vlan', 'virtualization.vminterface': 'virtualization_vminterface' };
const pick = (values: Row, existing: Row | null, column: string) => (column in values ? values[column] : existing?.[column] ?? null);

export const l2vpn: ModelDef = {
  key: 'l2vpn',
  app: 'vpn',
  path: 'l2vpns',
  table: 'vpn_l2vpn',
  objectType: 'vpn.l2vpn',
  verboseName: 'L2VPN',
  title: 'L2VPN',
  naturalName: true,
  fields: [
    { name: 'identifier', column: 'identifier', kind: 'integer', nullable: true, default: null, min: -(2 ** 63), max: 2 ** 63 - 1, filter: true },
    nameField(100, { unique: true }),
    slugField({ unique: true }),
    { name: 'type', column: 'type', kind: 'choice', choices: L2VPN_TYPES, required: true, filter: true },
    { name: 'status', column: 'status', kind: 'choice', choices: L2VPN_STATUS, default: 'active', filter: true },
    { name: 'import_targets', column: '', kind: 'm2m', fk: 'routetarget', default: undefined, through: { table: 'vpn_l2vpn_import_targets', column: 'l2vpn_id', target: 'routetarget_id' } },
    { name: 'export_targets', column: '', kind: 'm2m', fk: 'routetarget', default: undefined, through: { table: 'vpn_l2vpn_export_targets', column: 'l2vpn_id', target: 'routetarget_id' } },
    descriptionField,
    commentsField,
    ref('tenant', 'tenant'),
  ],
  ordering: ['name', 'identifier'],
  search: ['name', 'description'],
  brief: ['identifier', 'name', 'slug', 'type', 'description'],
  taggable: true,
  display: (r) => (r.identifier !== null && r.identifier !== undefined && Number(r.identifier) !== 0 ? `${r.name} (${r.identifier})` : r.name),
  cascade: [{ model: 'l2vpntermination', column: 'l2vpn_id' }],
  extraFilters: [
    ...tenancyFilters,
    ...linkFilters('import_target', { table: 'vpn_l2vpn', link: 'vpn_l2vpn_import_targets', self: 'l2vpn_id', other: 'routetarget_id', target: 'ipam_routetarget' }, 'name'),
    ...linkFilters('export_target', { table: 'vpn_l2vpn', link: 'vpn_l2vpn_export_targets', self: 'l2vpn_id', other: 'routetarget_id', target: 'ipam_routetarget' }, 'name'),
  ],
};

const spec = { table: 'vpn_l2vpntermination', typeColumn: 'assigned_object_type', idColumn: 'assigned_object_id' };
const me = (c: string) => sql.ref(`vpn_l2vpntermination.${c}`);

/** L2VPNTerminationFilterSet's site / region: the VLAN's site, the interface's device's, the VM interface's VM's. */
function placeFilter(name: string, table: string, attribute: string | undefined, siteColumn: string) {
  return {
    name,
    kind: 'custom' as const,
    // MultiValueNumberFilter / MultiValueCharFilter with a method: unknown values match nothing.
    where: async (ctx: Parameters<NonNullable<ModelDef['check']>>[0], vals: string[], errors: Record<string, string[]>) => {
      const named = await namedIds(ctx, name, vals, table, attribute, errors, true);
      if (!named) return undefined;
      const ids = named.ids.length ? sql`(${sql.join(named.ids)})` : sql`(select -1 where 1 = 0)`;
      const sites = siteColumn === 'id' ? ids : sql`(select id from dcim_site where ${sql.ref(siteColumn)} in ${ids})`;
      return sql`((${me('assigned_object_type')} = 'ipam.vlan' and ${me('assigned_object_id')} in (select id from ipam_vlan where site_id in ${sites}))
        or (${me('assigned_object_type')} = 'dcim.interface' and ${me('assigned_object_id')} in (select i.id from dcim_interface i join dcim_device d on d.id = i.device_id where d.site_id in ${sites}))
        or (${me('assigned_object_type')} = 'virtualization.vminterface' and ${me('assigned_object_id')} in (select i.id from virtualization_vminterface i join virtualization_virtualmachine v on v.id = i.virtual_machine_id where v.site_id in ${sites})))`;
    },
  };
}

export const l2vpnTermination: ModelDef = {
  key: 'l2vpntermination',
  app: 'vpn',
  path: 'l2vpn-terminations',
  table: 'vpn_l2vpntermination',
  objectType: 'vpn.l2vpntermination',
  verboseName: 'L2VPN termination',
  title: 'L2VPNTermination',
  fields: [
    { name: 'l2vpn', column: 'l2vpn_id', kind: 'fk', fk: 'l2vpn', required: true, label: 'L2VPN' },
    { name: 'assigned_object_type', column: 'assigned_object_type', kind: 'objecttype', required: true, choices: TERMINATION_TYPES },
    { name: 'assigned_object_id', column: 'assigned_object_id', kind: 'integer', required: true, min: 0, max: 2 ** 53 - 1 },
  ],
  ordering: ['l2vpn', 'id'],
  search: [],
  brief: ['l2vpn'],
  taggable: true,
  displayNeeds: ['l2vpn', 'assigned_interface', 'assigned_vminterface', 'assigned_vlan'],
  // NetBox's `<assigned object> <> <L2VPN>`.
  display: (r, refs) => {
    const obj = (refs.assigned_interface ?? refs.assigned_vminterface ?? refs.assigned_vlan) as { display?: string } | null;
    return `${obj?.display ?? r.assigned_object_id} <> ${(refs.l2vpn as { display?: string } | null)?.display ?? r.l2vpn_id}`;
  },
  extraRefs: {
    assigned_interface: { model: 'interface', column: 'assigned_object_id', typeColumn: 'assigned_object_type', type: 'dcim.interface' },
    assigned_vminterface: { model: 'vminterface', column: 'assigned_object_id', typeColumn: 'assigned_object_type', type: 'virtualization.vminterface' },
    assigned_vlan: { model: 'vlan', column: 'assigned_object_id', typeColumn: 'assigned_object_type', type: 'ipam.vlan' },
  },
  represent(_row, out, refs) {
    const { tags, custom_fields, created, last_updated, ...rest } = out;
    return { ...rest, assigned_object: refs.assigned_interface ?? refs.assigned_vminterface ?? refs.assigned_vlan ?? null, tags, custom_fields, created, last_updated };
  },
  async check(ctx, values, existing, errors) {
    const type = pick(values, existing, 'assigned_object_type');
    const id = pick(values, existing, 'assigned_object_id');
    const table = TABLE_OF[type];
    const obj = table ? await ctx.db.selectFrom(table).select('id').where('id', '=', id).executeTakeFirst() : undefined;
    if (!obj) return void (errors.assigned_object_id ??= []).push(`Related object not found using the provided numeric ID: ${id}`);
    // L2VPNTermination.clean(): an object terminates one L2VPN; a point-to-point L2VPN has two terminations at most.
    let dup = ctx.db.selectFrom('vpn_l2vpntermination').select('id').where('assigned_object_type', '=', type).where('assigned_object_id', '=', id);
    if (existing) dup = dup.where('id', '<>', existing.id);
    if (await dup.executeTakeFirst()) {
      const label = await ctx.db.selectFrom(table!).select('name as n').where('id', '=', id).executeTakeFirst();
      return void (errors.non_field_errors ??= []).push(`L2VPN Termination already assigned (${label?.n ?? id})`);
    }
    const vpnId = pick(values, existing, 'l2vpn_id');
    const vpn = await ctx.db.selectFrom('vpn_l2vpn').select('type').where('id', '=', vpnId).executeTakeFirst();
    if (vpn && POINT_TO_POINT.has(vpn.type)) {
      let q = ctx.db.selectFrom('vpn_l2vpntermination').select(sql<number>`count(*)`.as('n')).where('l2vpn_id', '=', vpnId);
      if (existing) q = q.where('id', '<>', existing.id);
      const n = Number((await q.executeTakeFirst())?.n ?? 0);
      if (n >= 2) {
        const label = L2VPN_TYPES.find((c) => c.value === vpn.type)?.label ?? vpn.type;
        (errors.non_field_errors ??= []).push(`${label} L2VPNs cannot have more than two terminations; found ${n} already defined.`);
      }
    }
  },
  extraFilters: [
    // L2VPNTerminationFilterSet.search(): the L2VPN's name.
    {
      name: 'q',
      kind: 'custom',
      where: async (_ctx, vals) => {
        const v = vals[0]!.trim();
        if (!v) return undefined;
        return sql`${me('l2vpn_id')} in (select id from vpn_l2vpn where lower(name) like lower(${`%${v.replace(/[!%_]/g, (c) => `!${c}`)}%`}) escape '!')`;
      },
    },
    { name: 'l2vpn_id', kind: 'fk_id', column: 'l2vpn_id', model: 'l2vpn' },
    { name: 'l2vpn', kind: 'fk_slug', column: 'l2vpn_id', model: 'l2vpn', attribute: 'slug' },
    ...interfaceAssignmentFilters(spec),
    assignedFilter('vlan_id', spec, 'ipam.vlan', 'ipam_vlan'),
    assignedFilter('vlan', spec, 'ipam.vlan', 'ipam_vlan', 'name'),
    {
      name: 'vlan_vid',
      kind: 'custom',
      where: async (_ctx, vals, errors) => {
        const v = vals[0]!.trim();
        if (!/^-?\d{1,9}$/.test(v)) return void (errors.vlan_vid = ['Enter a number.']);
        return sql`(${me('assigned_object_type')} = 'ipam.vlan' and ${me('assigned_object_id')} in (select id from ipam_vlan where vid = ${Number(v)}))`;
      },
    },
    placeFilter('site_id', 'dcim_site', undefined, 'id'),
    placeFilter('site', 'dcim_site', 'slug', 'id'),
    placeFilter('region_id', 'dcim_region', undefined, 'region_id'),
    placeFilter('region', 'dcim_region', 'slug', 'region_id'),
    { name: 'assigned_object_type', kind: 'custom', where: async (_ctx, vals) => sql`${me('assigned_object_type')} in (${sql.join(vals.map((v) => v.trim().toLowerCase()))})` },
    { name: 'assigned_object_id', kind: 'int', column: 'assigned_object_id' },
  ],
};
