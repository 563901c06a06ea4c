import type { ReadCtx } from './read.ts';
import type { Refs, Row } from './types.ts';

type Errors = Record<string, string[]>;

const pick = (values: Row, existing: Row | null, column: string) => (column in values ? values[column] : existing?.[column] ?? null);
const one = (errors: Errors, field: string, message: string) => {
  errors[field] = [message];
};

async function nameOf(ctx: ReadCtx, table: string, id: number, column = 'name'): Promise<string> {
  const r = await ctx.db.selectFrom(table).select(`${column} as v`).where('id', '=', id).executeTakeFirst();
  return r ? String(r.v) : String(id);
}

/** Whether an IP address is assigned to one of the device's interfaces; its address for messages. */
async function ipOnDevice(ctx: ReadCtx, ipId: number, deviceId: number | null): Promise<{ address: string; family: number; onDevice: boolean }> {
  const ip = await ctx.db.selectFrom('ipam_ipaddress').select(['address', 'family', 'assigned_object_type', 'assigned_object_id']).where('id', '=', ipId).executeTakeFirst();
  if (!ip) return { address: String(ipId), family: 0, onDevice: false };
  let onDevice = false;
  if (deviceId !== null && ip.assigned_object_type === 'dcim.interface' && ip.assigned_object_id !== null) {
    const i = await ctx.db.selectFrom('dcim_interface').select('device_id').where('id', '=', ip.assigned_object_id).executeTakeFirst();
    onDevice = !!i && Number(i.device_id) === deviceId;
  }
  return { address: ip.address, family: Number(ip.family), onDevice };
}

/** NetBox's Device.clean(): site/location/rack agree, rack position and face, rack space, primary and OOB IPs, platform. */
export async function checkDevice(ctx: ReadCtx, values: Row, existing: Row | null, errors: Errors): Promise<void> {
  const site = pick(values, existing, 'site_id');
  const rack = pick(values, existing, 'rack_id');
  const location = pick(values, existing, 'location_id');
  const position = pick(values, existing, 'position');
  const face = pick(values, existing, 'face');
  const typeId = pick(values, existing, 'device_type_id');
  const rackRow = rack === null ? undefined : await ctx.db.selectFrom('dcim_rack').select(['site_id', 'location_id', 'name', 'u_height', 'starting_unit']).where('id', '=', rack).executeTakeFirst();
  const siteName = () => nameOf(ctx, 'dcim_site', site);
  if (rackRow && Number(rackRow.site_id) !== Number(site)) return one(errors, 'rack', `Rack ${rackRow.name} does not belong to site ${await siteName()}.`);
  if (location !== null) {
    const l = await ctx.db.selectFrom('dcim_location').select(['site_id', 'name']).where('id', '=', location).executeTakeFirst();
    if (l && Number(l.site_id) !== Number(site)) return one(errors, 'location', `Location ${l.name} does not belong to site ${await siteName()}.`);
    if (rackRow && Number(rackRow.location_id ?? -1) !== Number(location)) return one(errors, 'rack', `Rack ${rackRow.name} does not belong to location ${l?.name ?? location}.`);
  }
  if (!rackRow) {
    if (face) return one(errors, 'face', 'Cannot select a rack face without assigning a rack.');
    if (position) return one(errors, 'position', 'Cannot select a rack position without assigning a rack.');
  }
  if (position && Math.round(position * 2) !== position * 2) return one(errors, 'position', 'Position must be in increments of 0.5 rack units.');
  if (position && !face) return one(errors, 'face', 'Must specify rack face when defining rack position.');
  const type = await ctx.db.selectFrom('dcim_devicetype').select(['model', 'u_height', 'manufacturer_id', 'is_full_depth', 'default_platform_id', 'airflow']).where('id', '=', typeId).executeTakeFirst();
  const height = Number(type?.u_height ?? 1);
  if (position && type && height === 0) return one(errors, 'position', `A 0U device type (${type.model}) cannot be assigned to a rack position.`);
  if (rackRow && position && type) {
    // A full-depth device takes both faces of its units; a half-depth one only its face (Rack.get_available_units()).
    const fullDepth = (v: unknown) => v === true || v === 1 || v === '1' || v === 't';
    const bottom = Number(rackRow.starting_unit);
    const top = bottom + Number(rackRow.u_height) - 1;
    let free = position >= bottom && position + height - 1 <= top + 0.5;
    if (free) {
      let q = ctx.db
        .selectFrom('dcim_device as d')
        .innerJoin('dcim_devicetype as t', 't.id', 'd.device_type_id')
        .select(['d.position', 'd.face', 't.u_height', 't.is_full_depth'])
        .where('d.rack_id', '=', rack)
        .where('d.position', 'is not', null);
      if (existing) q = q.where('d.id', '<>', existing.id);
      for (const d of await q.execute()) {
        const p = Number(d.position);
        const h = Number(d.u_height);
        const sameFaces = fullDepth(type.is_full_depth) || fullDepth(d.is_full_depth) || d.face === face;
        if (h > 0 && sameFaces && p < position + height && position < p + h) free = false;
      }
    }
    const shown = Number.isInteger(position) ? `${position}.0` : String(position);
    if (!free) return one(errors, 'position', `U${shown} is already occupied or does not have sufficient space to accommodate this device type: ${type.model} (${Number.isInteger(height) ? `${height}.0` : height}U)`);
  }
  const deviceId = existing?.id ?? null;
  for (const [field, family] of [
    ['primary_ip4', 4],
    ['primary_ip6', 6],
  ] as const) {
    const id = pick(values, existing, `${field}_id`);
    if (id === null) continue;
    const ip = await ipOnDevice(ctx, id, deviceId);
    if (ip.family !== family) return one(errors, field, `${ip.address} is not an IPv${family} address.`);
    if (!ip.onDevice) return one(errors, field, `The specified IP address (${ip.address}) is not assigned to this device.`);
  }
  const oob = pick(values, existing, 'oob_ip_id');
  if (oob !== null) {
    const ip = await ipOnDevice(ctx, oob, deviceId);
    if (!ip.onDevice) return one(errors, 'oob_ip', `The specified IP address (${ip.address}) is not assigned to this device.`);
  }
  const platform = pick(values, existing, 'platform_id');
  if (platform !== null && type) {
    const p = await ctx.db.selectFrom('dcim_platform').select('manufacturer_id').where('id', '=', platform).executeTakeFirst();
    if (p?.manufacturer_id !== null && p?.manufacturer_id !== undefined && Number(p.manufacturer_id) !== Number(type.manufacturer_id)) {
      return one(
        errors,
        'platform',
        `The assigned platform is limited to ${await nameOf(ctx, 'dcim_manufacturer', Number(p.manufacturer_id))} device types, but this device's type belongs to ${await nameOf(ctx, 'dcim_manufacturer', Number(type.manufacturer_id))}.`,
      );
    }
  }
  // Device.save(): a new device without a platform or airflow takes its type's default platform and airflow.
  if (!existing && type) {
    if (!values.platform_id && type.default_platform_id !== null && type.default_platform_id !== undefined) values.platform_id = Number(type.default_platform_id);
    if (!values.airflow && type.airflow) values.airflow = type.airflow;
  }
}

/** NetBox's Interface.clean() for the relations modelled here: parent, LAG, 802.1Q mode and VLANs. */
export async function checkInterface(ctx: ReadCtx, values: Row, existing: Row | null, errors: Errors, m2m?: Record<string, number[]>): Promise<void> {
  const device = pick(values, existing, 'device_id');
  const self = existing?.id ?? null;
  const other = async (id: number) => ctx.db.selectFrom('dcim_interface').select(['device_id', 'name', 'type']).where('id', '=', id).executeTakeFirst();
  const parent = pick(values, existing, 'parent_id');
  if (parent !== null) {
    if (parent === self) return one(errors, 'parent', 'An interface cannot be its own parent.');
    const p = await other(parent);
    if (p && Number(p.device_id) !== Number(device)) return one(errors, 'parent', `The selected parent interface (${p.name}) belongs to a different device (${await nameOf(ctx, 'dcim_device', Number(p.device_id))}).`);
  }
  const bridge = pick(values, existing, 'bridge_id');
  if (bridge !== null) {
    if (bridge === self) return one(errors, 'bridge', 'An interface cannot be bridged to itself.');
    const b = await other(bridge);
    if (b && Number(b.device_id) !== Number(device)) {
      // A bridge may span the members of one virtual chassis (NetBox's Interface.clean()).
      const vcOf = async (id: number) => (await ctx.db.selectFrom('dcim_device').select('virtual_chassis_id').where('id', '=', id).executeTakeFirst())?.virtual_chassis_id ?? null;
      const vc = await vcOf(Number(device));
      const bridgeDevice = await nameOf(ctx, 'dcim_device', Number(b.device_id));
      if (vc === null) return one(errors, 'bridge', `The selected bridge interface (${b.name}) belongs to a different device (${bridgeDevice}).`);
      if (Number(await vcOf(Number(b.device_id))) !== Number(vc)) {
        return one(errors, 'bridge', `The selected bridge interface (${b.name}) belongs to ${bridgeDevice}, which is not part of virtual chassis ${await nameOf(ctx, 'dcim_virtualchassis', Number(vc))}.`);
      }
    }
  }
  const lag = pick(values, existing, 'lag_id');
  if (lag !== null) {
    if (lag === self) return one(errors, 'lag', 'A LAG interface cannot be its own parent.');
    const l = await other(lag);
    if (l && Number(l.device_id) !== Number(device)) {
      // A LAG may span the members of one virtual chassis (NetBox's Interface.clean()).
      const vcOf = async (id: number) => (await ctx.db.selectFrom('dcim_device').select('virtual_chassis_id').where('id', '=', id).executeTakeFirst())?.virtual_chassis_id ?? null;
      const vc = await vcOf(Number(device));
      const lagName = await nameOf(ctx, 'dcim_device', Number(l.device_id));
      if (vc === null) return one(errors, 'lag', `The selected LAG interface (${l.name}) belongs to a different device (${lagName}).`);
      if (Number(await vcOf(Number(l.device_id))) !== Number(vc)) {
        return one(errors, 'lag', `The selected LAG interface (${l.name}) belongs to ${lagName}, which is not part of virtual chassis ${await nameOf(ctx, 'dcim_virtualchassis', Number(vc))}.`);
      }
    }
    if (l && l.type !== 'lag') return one(errors, 'lag', `${l.name} is not a LAG interface.`);
  }
  const type = pick(values, existing, 'type');
  const mode = pick(values, existing, 'mode');
  if (type === 'virtual' && lag !== null) return one(errors, 'lag', 'Virtual interfaces cannot have a parent LAG interface.');
  const untagged = pick(values, existing, 'untagged_vlan_id');
  if (untagged !== null && !mode) return one(errors, 'untagged_vlan', 'An untagged VLAN requires an 802.1Q mode.');
  const taggedGiven = m2m?.tagged_vlans;
  if (taggedGiven?.length && mode !== 'tagged') return one(errors, 'tagged_vlans', 'Tagged VLANs may only be assigned to an interface in tagged mode.');
}

/** Device representation additions: `primary_ip` (IPv6 first, as NetBox without PREFER_IPV4) and `config_context`, before the named fields. */
export const deviceComputed: Record<string, Array<[string, (row: Row, refs: Refs) => unknown]>> = {
  oob_ip: [['primary_ip', (_row, refs) => refs.primary_ip6 ?? refs.primary_ip4 ?? null]],
  local_context_data: [['config_context', (row) => row.local_context_data ?? {}]],
};
