import { sql } from 'kysely';
import { commentsField, descriptionField, ref, tenancyFilters } from './tenancy.ts';
import { linkFilter } from './link-filters.ts';
import type { Choice, ModelDef, Row } from './types.ts';

/**
 * NetBox's virtual device contexts (`/api/dcim/virtual-device-contexts/`): named partitions of a device (unique name and
 * identifier per device) with their own primary IPs on the device's interfaces; interfaces list theirs in `vdcs`.
 */

const VDC_STATUS: Choice[] = [
  { value: 'active', label: 'Active' },
  { value: 'planned', label: 'Planned' },
  { value: 'offline', label: 'Offline' },
];
const pick = (values: Row, existing: Row | null, column: string) => (column in values ? values[column] : existing?.[column] ?? null);

export const virtualDeviceContext: ModelDef = {
  key: 'virtualdevicecontext',
  app: 'dcim',
  path: 'virtual-device-contexts',
  table: 'dcim_virtualdevicecontext',
  objectType: 'dcim.virtualdevicecontext',
  verboseName: 'virtual device context',
  title: 'VirtualDeviceContext',
  naturalName: true,
  fields: [
    { name: 'name', column: 'name', kind: 'char', required: true, maxLength: 64, filter: true },
    { name: 'device', column: 'device_id', kind: 'fk', fk: 'device', required: true },
    { name: 'identifier', column: 'identifier', kind: 'integer', nullable: true, default: null, min: 0, max: 32767, filter: true },
    ref('tenant', 'tenant'),
    ref('primary_ip4', 'ipaddress', { unique: true, label: 'Primary IPv4' }),
    ref('primary_ip6', 'ipaddress', { unique: true, label: 'Primary IPv6' }),
    { name: 'status', column: 'status', kind: 'choice', choices: VDC_STATUS, required: true, filter: true },
    descriptionField,
    commentsField,
  ],
  // NetBox's primary_ip: IPv6 first (PREFER_IPV4 off), right before primary_ip4.
  computed: { primary_ip4: [['primary_ip', (_r, refs) => refs.primary_ip6 ?? refs.primary_ip4 ?? null]] },
  uniqueTogether: [
    ['device', 'name'],
    ['device', 'identifier'],
  ],
  ordering: ['name'],
  search: ['name', 'description'],
  brief: ['name', 'identifier', 'device', 'description'],
  taggable: true,
  display: (r) => r.name,
  counts: { interface_count: null },
  countsCustom: {
    interface_count: async (ctx, ids) => {
      const rows = ids.length ? await ctx.db.selectFrom('dcim_interface_vdcs').select(['virtualdevicecontext_id as v']).select(sql<number>`count(*)`.as('n')).where('virtualdevicecontext_id', 'in', ids).groupBy('virtualdevicecontext_id').execute() : [];
      return new Map(rows.map((r) => [Number(r.v), Number(r.n)]));
    },
  },
  // VirtualDeviceContext.clean(): each primary IP of its family, on one of the device's interfaces.
  async check(ctx, values, existing, errors) {
    const device = Number(pick(values, existing, 'device_id'));
    for (const family of [4, 6]) {
      const id = pick(values, existing, `primary_ip${family}_id`);
      if (id === null) continue;
      const ip = await ctx.db.selectFrom('ipam_ipaddress').select(['address', 'family', 'assigned_object_type', 'assigned_object_id']).where('id', '=', id).executeTakeFirst();
      if (!ip) continue;
      if (Number(ip.family) !== family) return void (errors[`primary_ip${family}`] = [`${ip.address} is not an IPv${family} address.`]);
      const iface = ip.assigned_object_type === 'dcim.interface' ? await ctx.db.selectFrom('dcim_interface').select('device_id').where('id', '=', ip.assigned_object_id).executeTakeFirst() : undefined;
      if (!iface || Number(iface.device_id) !== device) return void (errors[`primary_ip${family}`] = ['Primary IP address must belong to an interface on the assigned device.']);
    }
  },
  setNull: [],
  extraFilters: [
    { name: 'device_id', kind: 'fk_id', column: 'device_id', model: 'device' },
    // NetBox's `device` filter of VDCs takes device ids too (no to_field_name).
    { name: 'device', kind: 'fk_id', column: 'device_id', model: 'device' },
    linkFilter({ name: 'interface_id', table: 'dcim_virtualdevicecontext', link: 'dcim_interface_vdcs', self: 'virtualdevicecontext_id', other: 'interface_id', target: 'dcim_interface' }),
    { name: 'has_primary_ip', kind: 'bool', expr: (t) => sql`(${sql.ref(`${t}.primary_ip4_id`)} is not null or ${sql.ref(`${t}.primary_ip6_id`)} is not null)` },
    { name: 'primary_ip4_id', kind: 'fk_id', column: 'primary_ip4_id', model: 'ipaddress' },
    { name: 'primary_ip6_id', kind: 'fk_id', column: 'primary_ip6_id', model: 'ipaddress' },
    { name: 'primary_ip4', kind: 'fk_slug', column: 'primary_ip4_id', model: 'ipaddress', attribute: 'address' },
    { name: 'primary_ip6', kind: 'fk_slug', column: 'primary_ip6_id', model: 'ipaddress', attribute: 'address' },
    ...tenancyFilters,
  ],
};
