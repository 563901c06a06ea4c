import type { ReadCtx } from './read.ts';
import type { Row } from './types.ts';

type Errors = Record<string, string[]>;

const pick = (values: Row, existing: Row | null, column: string) => (column in values ? values[column] : existing?.[column] ?? null);
const one = (errors: Errors, field: string, message: string) => {
  errors[field] = [message];
};

async function nameOf(ctx: ReadCtx, table: string, id: number): Promise<string> {
  const r = await ctx.db.selectFrom(table).select('name').where('id', '=', id).executeTakeFirst();
  return r ? String(r.name) : String(id);
}

/** NetBox's VirtualMachine.clean(): a site and/or cluster, a host device of the cluster, disk sizes, primary IPs on its interfaces. */
export async function checkVirtualMachine(ctx: ReadCtx, values: Row, existing: Row | null, errors: Errors): Promise<void> {
  const site = pick(values, existing, 'site_id');
  const cluster = pick(values, existing, 'cluster_id');
  const device = pick(values, existing, 'device_id');
  if (site === null && cluster === null) return one(errors, 'cluster', 'A virtual machine must be assigned to a site and/or cluster.');
  if (device !== null && cluster === null) return one(errors, 'device', 'Must specify a cluster when assigning a host device.');
  if (device !== null) {
    const d = await ctx.db.selectFrom('dcim_device').select(['cluster_id', 'name']).where('id', '=', device).executeTakeFirst();
    if (d && Number(d.cluster_id ?? -1) !== Number(cluster)) {
      return one(errors, 'device', `The selected device (${d.name ?? device}) is not assigned to this cluster (${await nameOf(ctx, 'virtualization_cluster', cluster)}).`);
    }
  }
  // VirtualMachine.role has limit_choices_to={'vm_role': True}: Django's ForeignKey.validate() refuses another role.
  if ('role_id' in values && values.role_id !== null && values.role_id !== undefined) {
    const r = await ctx.db.selectFrom('dcim_devicerole').select('vm_role').where('id', '=', values.role_id).executeTakeFirst();
    if (r && (r.vm_role === false || Number(r.vm_role) === 0)) return one(errors, 'role', `device role instance with id ${values.role_id} is not a valid choice.`);
  }
  if (existing && 'disk' in values) {
    const sum = await ctx.db.selectFrom('virtualization_virtualdisk').select((eb) => eb.fn.sum('size').as('n')).where('virtual_machine_id', '=', existing.id).executeTakeFirst();
    const total = Number(sum?.n ?? 0);
    if (total && values.disk !== null && Number(values.disk) !== total) {
      return one(errors, 'disk', `The specified disk size (${values.disk}) must match the aggregate size of assigned virtual disks (${total}).`);
    }
  }
  for (const [field, family] of [
    ['primary_ip4', 4],
    ['primary_ip6', 6],
  ] as const) {
    const id = pick(values, existing, `${field}_id`);
    if (id === null) continue;
    const ip = await ctx.db.selectFrom('ipam_ipaddress').select(['address', 'family', 'assigned_object_type', 'assigned_object_id']).where('id', '=', id).executeTakeFirst();
    if (!ip) continue;
    if (Number(ip.family) !== family) return one(errors, field, `Must be an IPv${family} address. (${ip.address} is an IPv${ip.family} address.)`);
    let onVm = false;
    if (existing && ip.assigned_object_type === 'virtualization.vminterface' && ip.assigned_object_id !== null) {
      const i = await ctx.db.selectFrom('virtualization_vminterface').select('virtual_machine_id').where('id', '=', ip.assigned_object_id).executeTakeFirst();
      onVm = !!i && Number(i.virtual_machine_id) === Number(existing.id);
    }
    if (!onVm) return one(errors, field, `The specified IP address (${ip.address}) is not assigned to this VM.`);
  }
}

/** NetBox's VMInterface.clean(): parent and bridge on the same VM, not itself; VLANs need a mode. */
export async function checkVMInterface(ctx: ReadCtx, values: Row, existing: Row | null, errors: Errors, m2m?: Record<string, number[]>): Promise<void> {
  const vm = pick(values, existing, 'virtual_machine_id');
  const self = existing?.id ?? null;
  for (const [field, what] of [
    ['parent', 'parent'],
    ['bridge', 'bridge'],
  ] as const) {
    const id = pick(values, existing, `${field}_id`);
    if (id === null) continue;
    if (id === self) return one(errors, field, `An interface cannot be its own ${what}.`);
    const other = await ctx.db.selectFrom('virtualization_vminterface').select(['virtual_machine_id', 'name']).where('id', '=', id).executeTakeFirst();
    if (other && Number(other.virtual_machine_id) !== Number(vm)) {
      const label = field === 'parent' ? 'parent interface' : 'bridge interface';
      return one(errors, field, `The selected ${label} (${other.name}) belongs to a different virtual machine (${await nameOf(ctx, 'virtualization_virtualmachine', Number(other.virtual_machine_id))}).`);
    }
  }
  const mode = pick(values, existing, 'mode');
  const untagged = pick(values, existing, 'untagged_vlan_id');
  if (untagged !== null && !mode) return one(errors, 'untagged_vlan', 'An untagged VLAN requires an 802.1Q mode.');
  if (m2m?.tagged_vlans?.length && mode !== 'tagged') return one(errors, 'tagged_vlans', 'Tagged VLANs may only be assigned to an interface in tagged mode.');
}
