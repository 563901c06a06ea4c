import { sql } from 'kysely';
import { commentsField, descriptionField } from './tenancy.ts';
import { interfaceAssignmentFilters } from './assigned-filters.ts';
import { loadBriefs } from './represent.ts';
import { model } from './lookup.ts';
import type { Choice, ModelDef } from './types.ts';

/**
 * NetBox's FHRP groups (`/api/ipam/fhrp-groups/`: VRRP, HSRP, … with their virtual IP addresses, which are IP
 * addresses assigned to the group) and their assignments to interfaces and VM interfaces with a priority
 * (`/api/ipam/fhrp-group-assignments/`, one per interface and group).
 */

export const FHRP_PROTOCOLS: Choice[] = [
  { value: 'vrrp2', label: 'VRRPv2' },
  { value: 'vrrp3', label: 'VRRPv3' },
  { value: 'carp', label: 'CARP' },
  { value: 'clusterxl', label: 'ClusterXL' },
  { value: 'hsrp', label: 'HSRP' },
  { value: 'glbp', label: 'GLBP' },
  { value: 'other', label: 'Other' },
];
const AUTH_TYPES: Choice[] = [
  { value: 'plaintext', label: 'Plaintext' },
  { value: 'md5', label: 'MD5' },
];
const INTERFACE_TYPES: Choice[] = ['dcim.interface', 'virtualization.vminterface'].map((v) => ({ value: v, label: v }));

export const fhrpGroup: ModelDef = {
  key: 'fhrpgroup',
  app: 'ipam',
  path: 'fhrp-groups',
  table: 'ipam_fhrpgroup',
  objectType: 'ipam.fhrpgroup',
  verboseName: 'FHRP group',
  title: 'FHRPGroup',
  fields: [
    { name: 'name', column: 'name', kind: 'char', blank: true, maxLength: 100, default: '', filter: true },
    { name: 'protocol', column: 'protocol', kind: 'choice', choices: FHRP_PROTOCOLS, required: true, filter: true },
    { name: 'group_id', column: 'group_id', kind: 'integer', required: true, min: 0, max: 32767, filter: true, label: 'Group ID' },
    { name: 'auth_type', column: 'auth_type', kind: 'choice', choices: AUTH_TYPES, nullable: true, blank: true, default: null, filter: true, label: 'Authentication type' },
    { name: 'auth_key', column: 'auth_key', kind: 'char', blank: true, maxLength: 255, default: '', filter: true, label: 'Authentication key' },
    descriptionField,
    commentsField,
  ],
  ordering: ['protocol', 'group_id', 'id'],
  search: ['name', 'description'],
  brief: ['protocol', 'group_id', 'description'],
  taggable: true,
  // FHRPGroup.__str__ without the first address NetBox appends when the group has one.
  display: (r) => `${r.name ? `${r.name} ` : ''}${FHRP_PROTOCOLS.find((c) => c.value === r.protocol)?.label ?? r.protocol}: ${r.group_id}`,
  // The group's virtual addresses (GenericRelation) and assignments go with it; services on it too.
  cascade: [
    { model: 'ipaddress', column: 'assigned_object_id', typeColumn: 'assigned_object_type' },
    { model: 'fhrpgroupassignment', column: 'group_id' },
    { model: 'service', column: 'parent_object_id', typeColumn: 'parent_object_type' },
  ],
  // `ip_addresses`: the addresses assigned to the group (nested IP addresses).
  async enrich(ctx, rows, out) {
    const ids = rows.map((r) => Number(r.id));
    const ips = ids.length ? await ctx.db.selectFrom('ipam_ipaddress').select(['id', 'assigned_object_id']).where('assigned_object_type', '=', 'ipam.fhrpgroup').where('assigned_object_id', 'in', ids).orderBy('address').orderBy('id').execute() : [];
    const briefs = ips.length ? await loadBriefs(ctx, model('ipaddress'), ips.map((r) => Number(r.id))) : new Map();
    rows.forEach((r, i) => {
      out[i]!.ip_addresses = ips.filter((x) => Number(x.assigned_object_id) === Number(r.id)).map((x) => briefs.get(Number(x.id)));
    });
  },
  extraFilters: [
    {
      // FHRPGroupFilterSet.related_ip: groups with an address equal (host, VRF) to one of the given IP addresses.
      name: 'related_ip',
      kind: 'custom',
      where: async (ctx, vals, errors) => {
        const bad = vals.find((v) => !/^\d{1,16}$/.test(v.trim()));
        if (bad !== undefined) return void (errors.related_ip = [`Select a valid choice. ${bad} is not one of the available choices.`]);
        const ids = vals.map((v) => Number(v.trim()));
        const found = await ctx.db.selectFrom('ipam_ipaddress').select(['id', '_host', 'vrf_id']).where('id', 'in', ids).execute();
        const missing = ids.find((id) => !found.some((r) => Number(r.id) === id));
        if (missing !== undefined) return void (errors.related_ip = [`Select a valid choice. ${missing} is not one of the available choices.`]);
        const same = found.map((r) => (r.vrf_id === null ? sql`(_host = ${r._host} and vrf_id is null)` : sql`(_host = ${r._host} and vrf_id = ${r.vrf_id})`));
        return sql`ipam_fhrpgroup.id in (select assigned_object_id from ipam_ipaddress where assigned_object_type = 'ipam.fhrpgroup' and (${sql.join(same, sql` or `)}))`;
      },
    },
  ],
};

const spec = { table: 'ipam_fhrpgroupassignment', typeColumn: 'interface_type', idColumn: 'interface_id' };

export const fhrpGroupAssignment: ModelDef = {
  key: 'fhrpgroupassignment',
  app: 'ipam',
  path: 'fhrp-group-assignments',
  table: 'ipam_fhrpgroupassignment',
  objectType: 'ipam.fhrpgroupassignment',
  verboseName: 'FHRP group assignment',
  title: 'FHRPGroupAssignment',
  fields: [
    { name: 'group', column: 'group_id', kind: 'fk', fk: 'fhrpgroup', required: true },
    { name: 'interface_type', column: 'interface_type', kind: 'objecttype', required: true, choices: INTERFACE_TYPES },
    { name: 'interface_id', column: 'interface_id', kind: 'integer', required: true, min: 0, max: 2 ** 53 - 1, filter: true },
    { name: 'priority', column: 'priority', kind: 'integer', required: true, min: 0, max: 255, filter: true },
  ],
  uniqueTogether: [['interface_type', 'interface_id', 'group']],
  ordering: ['-priority', 'id'],
  search: [],
  brief: ['group', 'interface_type', 'interface_id', 'priority'],
  taggable: false,
  displayNeeds: ['group', 'assigned_interface', 'assigned_vminterface'],
  // `<interface>: <group> (<priority>)`.
  display: (r, refs) => {
    const i = (refs.assigned_interface ?? refs.assigned_vminterface) as { display?: string } | null;
    return `${i?.display ?? r.interface_id}: ${(refs.group as { display?: string } | null)?.display ?? r.group_id} (${r.priority})`;
  },
  extraRefs: {
    assigned_interface: { model: 'interface', column: 'interface_id', typeColumn: 'interface_type', type: 'dcim.interface' },
    assigned_vminterface: { model: 'vminterface', column: 'interface_id', typeColumn: 'interface_type', type: 'virtualization.vminterface' },
  },
  represent(_row, out, refs) {
    const { priority, created, last_updated, ...rest } = out;
    return { ...rest, interface: refs.assigned_interface ?? refs.assigned_vminterface ?? null, priority, created, last_updated };
  },
  extraFilters: [
    { name: 'group_id', kind: 'fk_id', column: 'group_id', model: 'fhrpgroup' },
    { name: 'interface_type', kind: 'custom', where: async (_ctx, vals) => sql`ipam_fhrpgroupassignment.interface_type in (${sql.join(vals.map((v) => v.trim().toLowerCase()))})` },
    ...interfaceAssignmentFilters(spec, true).filter((f) => f.name.startsWith('device') || f.name.startsWith('virtual_machine')),
  ],
};
