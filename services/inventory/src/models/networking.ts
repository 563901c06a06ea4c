import { sql } from 'kysely';
import { macAddress, checkPrimaryMac, macAddressFilter, macLookupFilters, primaryMacFilters } from './mac-addresses.ts';
import { l2vpn, l2vpnTermination } from './l2vpn.ts';
import { interfaceWirelessLans, wirelessLan, wirelessLanGroup, wirelessLink } from './wireless.ts';
import { vlanTranslationPolicy, vlanTranslationRule } from './vlan-translation.ts';
import { virtualDeviceContext } from './virtual-device-contexts.ts';
import { fhrpGroup, fhrpGroupAssignment } from './fhrp.ts';
import { providerAccount, providerAccountFilters } from './provider-accounts.ts';
import { assignedFilter, reverseAssignedFilters } from './assigned-filters.ts';
import { linkFilter, linkFilters } from './link-filters.ts';
import { loadBriefs } from './represent.ts';
import { RELATIONS } from './related-managers.ts';
import { ref, refFilters } from './tenancy.ts';
import { normaliseMac } from './values.ts';
import type { ExtraFilter, FieldDef, ModelDef, ReadCtx, Row } from './types.ts';

/**
 * Issue 24's networking objects (MAC addresses, L2VPNs, wireless, VLAN translation, virtual device contexts, FHRP
 * groups, provider accounts) and what they add to the models that existed before them: fields, representation
 * keys that were fixed placeholders, filters, deletion rules. Kept here so those models' modules stay as they were.
 */
export const NETWORKING_MODELS: ModelDef[] = [
  macAddress,
  virtualDeviceContext,
  l2vpn,
  l2vpnTermination,
  wirelessLanGroup,
  wirelessLan,
  wirelessLink,
  vlanTranslationPolicy,
  vlanTranslationRule,
  fhrpGroup,
  fhrpGroupAssignment,
  providerAccount,
];

type Errors = Record<string, string[]>;
const byKey = (models: ModelDef[], key: string) => models.find((m) => m.key === key)!;

/** Inserts fields right after the named one (at the end when it is absent). */
function insertAfter(m: ModelDef, after: string, ...fields: FieldDef[]): void {
  const at = m.fields.findIndex((f) => f.name === after);
  m.fields.splice(at < 0 ? m.fields.length : at + 1, 0, ...fields);
}

function dropUnmodelled(m: ModelDef, ...keys: string[]): void {
  if (!m.unmodelled) return;
  for (const k of keys) delete m.unmodelled[k];
}

/** Runs `more` after the model's own enrich. */
function addEnrich(m: ModelDef, more: NonNullable<ModelDef['enrich']>): void {
  const own = m.enrich;
  m.enrich = async (ctx, rows, out) => {
    if (own) await own(ctx, rows, out);
    await more(ctx, rows, out);
  };
}

/** Runs `more` after the model's own check (when that found nothing wrong). */
function addCheck(m: ModelDef, more: NonNullable<ModelDef['check']>): void {
  const own = m.check;
  m.check = async (ctx, values, existing, errors, m2m) => {
    if (own) await own(ctx, values, existing, errors, m2m);
    if (!Object.keys(errors).length) await more(ctx, values, existing, errors, m2m);
  };
}

/** Replaces the value of `key` in each representation, keeping its place (or adding it after `after`). */
function place(o: Record<string, unknown>, key: string, value: unknown, after?: string): void {
  if (key in o || !after || !(after in o)) {
    o[key] = value;
    return;
  }
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    copy[k] = v;
    if (k === after) copy[key] = value;
  }
  for (const k of Object.keys(o)) delete o[k];
  Object.assign(o, copy);
}

/** MAC address objects assigned to each row (briefs, in address order) of an interface type. */
async function assignedMacs(ctx: ReadCtx, type: string, ids: number[]): Promise<Map<number, unknown[]>> {
  const out = new Map<number, unknown[]>();
  if (!ids.length) return out;
  const rows = await ctx.db.selectFrom('dcim_macaddress').select(['id', 'assigned_object_id']).where('assigned_object_type', '=', type).where('assigned_object_id', 'in', ids).orderBy('mac_address').orderBy('id').execute();
  const briefs = await loadBriefs(ctx, macAddress, rows.map((r) => Number(r.id)));
  for (const r of rows) out.set(Number(r.assigned_object_id), [...(out.get(Number(r.assigned_object_id)) ?? []), briefs.get(Number(r.id))]);
  return out;
}

/** The L2VPN termination of each row (a brief) of an object type. */
async function terminations(ctx: ReadCtx, type: string, ids: number[]): Promise<Map<number, unknown>> {
  const out = new Map<number, unknown>();
  if (!ids.length) return out;
  const rows = await ctx.db.selectFrom('vpn_l2vpntermination').select(['id', 'assigned_object_id']).where('assigned_object_type', '=', type).where('assigned_object_id', 'in', ids).execute();
  const briefs = await loadBriefs(ctx, l2vpnTermination, rows.map((r) => Number(r.id)));
  for (const r of rows) out.set(Number(r.assigned_object_id), briefs.get(Number(r.id)));
  return out;
}

const primaryMacField: FieldDef = { ...ref('primary_mac_address', 'macaddress', { unique: true, label: 'Primary MAC address' }) };
const translationField: FieldDef = ref('vlan_translation_policy', 'vlantranslationpolicy', { label: 'VLAN Translation Policy' });

/**
 * A write of `primary_mac_address` sets the interface's `mac_address` (its cache of that object's address); a
 * `mac_address` of its own is refused while it differs from the primary MAC's (NetBox 4.2+ derives it from there).
 */
async function checkInterfaceMac(ctx: ReadCtx, values: Row, existing: Row | null, errors: Errors): Promise<void> {
  await checkPrimaryMac(ctx, 'dcim.interface', values, existing, errors);
  if (errors.primary_mac_address) return;
  const primary = 'primary_mac_address_id' in values ? values.primary_mac_address_id : existing?.primary_mac_address_id ?? null;
  if (primary === null) {
    if ('primary_mac_address_id' in values && existing?.primary_mac_address_id && !('mac_address' in values)) values.mac_address = null;
    return;
  }
  const mac = await ctx.db.selectFrom('dcim_macaddress').select('mac_address').where('id', '=', primary).executeTakeFirst();
  if (!mac) return;
  if ('mac_address' in values && values.mac_address !== mac.mac_address) {
    (errors.mac_address ??= []).push(`An interface's MAC address is its primary MAC address (${mac.mac_address}); change that MAC address object or primary_mac_address instead.`);
    return;
  }
  values.mac_address = mac.mac_address;
}

function extendInterface(iface: ModelDef): void {
  insertAfter(iface, 'device', { name: 'vdcs', column: '', kind: 'm2m', fk: 'virtualdevicecontext', default: undefined, through: { table: 'dcim_interface_vdcs', column: 'interface_id', target: 'virtualdevicecontext_id' }, label: 'Virtual device contexts' });
  insertAfter(iface, 'mac_address', primaryMacField);
  insertAfter(iface, 'tagged_vlans', translationField);
  insertAfter(iface, 'vrf', interfaceWirelessLans);
  dropUnmodelled(iface, 'vdcs', 'vlan_translation_policy', 'wireless_link', 'wireless_lans');
  iface.extraRefs = { ...iface.extraRefs, wireless_link: { model: 'wirelesslink', column: 'wireless_link_id' } };
  // Interface._occupied: a wireless link occupies it as a cable does (the brief form too).
  const occupied = iface.briefValues?._occupied;
  if (occupied) iface.briefValues = { ...iface.briefValues, _occupied: (row, refs) => (row.wireless_link_id !== null && row.wireless_link_id !== undefined) || !!occupied(row, refs) };
  iface.counts = { ...iface.counts, count_fhrp_groups: { model: 'fhrpgroupassignment', column: 'interface_id', typeColumn: 'interface_type' } };
  addCheck(iface, (ctx, values, existing, errors) => checkInterfaceMac(ctx, values, existing, errors));
  addEnrich(iface, async (ctx, rows, out) => {
    const ids = rows.map((r) => Number(r.id));
    const macs = await assignedMacs(ctx, 'dcim.interface', ids);
    const terms = await terminations(ctx, 'dcim.interface', ids);
    const links = await loadBriefs(ctx, wirelessLink, rows.filter((r) => r.wireless_link_id !== null && r.wireless_link_id !== undefined).map((r) => Number(r.wireless_link_id)));
    rows.forEach((r, i) => {
      const o = out[i]!;
      place(o, 'mac_addresses', macs.get(Number(r.id)) ?? [], 'primary_mac_address');
      const link = r.wireless_link_id === null || r.wireless_link_id === undefined ? null : links.get(Number(r.wireless_link_id)) ?? null;
      // NetBox's NestedWirelessLinkSerializer: id, url, display, ssid.
      place(o, 'wireless_link', link && { id: link.id, url: link.url, display: link.display, ssid: link.ssid }, 'cable_end');
      place(o, 'l2vpn_termination', terms.get(Number(r.id)) ?? null, 'vrf');
      // An interface with a wireless link is occupied (Interface._occupied).
      if (link && '_occupied' in o) o._occupied = true;
    });
  });
  // MAC addresses, L2VPN terminations and FHRP assignments go with their interface (GenericRelation); a wireless link protects it.
  iface.cascade = [
    ...(iface.cascade ?? []),
    { model: 'macaddress', column: 'assigned_object_id', typeColumn: 'assigned_object_type' },
    { model: 'l2vpntermination', column: 'assigned_object_id', typeColumn: 'assigned_object_type' },
    { model: 'fhrpgroupassignment', column: 'interface_id', typeColumn: 'interface_type' },
  ];
  iface.protectedBy = [...(iface.protectedBy ?? []), { model: 'wirelesslink', column: 'interface_a_id' }, { model: 'wirelesslink', column: 'interface_b_id' }];
  const spec = { table: 'dcim_interface', type: 'dcim.interface', link: 'vpn_l2vpntermination', typeColumn: 'assigned_object_type', idColumn: 'assigned_object_id', column: 'l2vpn_id' };
  // `mac_address` (every lookup) matches any MAC address object of the interface as well as its own column.
  iface.fields.find((f) => f.name === 'mac_address')!.filter = false;
  iface.extraFilters = [
    ...(iface.extraFilters ?? []),
    ...reverseAssignedFilters('l2vpn', spec, 'vpn_l2vpn', 'identifier', true),
    ...macLookupFilters('dcim_interface', 'dcim.interface', 'mac_address'),
    ...primaryMacFilters(),
    linkFilter({ name: 'vdc_id', table: 'dcim_interface', link: 'dcim_interface_vdcs', self: 'interface_id', other: 'virtualdevicecontext_id', target: 'dcim_virtualdevicecontext' }),
    linkFilter({ name: 'vdc', table: 'dcim_interface', link: 'dcim_interface_vdcs', self: 'interface_id', other: 'virtualdevicecontext_id', target: 'dcim_virtualdevicecontext', attribute: 'name' }),
    linkFilter({ name: 'vdc_identifier', table: 'dcim_interface', link: 'dcim_interface_vdcs', self: 'interface_id', other: 'virtualdevicecontext_id', target: 'dcim_virtualdevicecontext', attribute: 'identifier', numeric: true }),
    linkFilter({ name: 'wireless_lan_id', table: 'dcim_interface', link: 'dcim_interface_wireless_lans', self: 'interface_id', other: 'wirelesslan_id', target: 'wireless_wirelesslan' }),
    { name: 'wireless_link_id', kind: 'fk_id', column: 'wireless_link_id', model: 'wirelesslink' },
    ...refFilters('vlan_translation_policy', 'vlantranslationpolicy', 'name'),
    // The virtual circuit termination on the interface (a reverse one-to-one) and its virtual circuit.
    linkFilter({ name: 'virtual_circuit_termination_id', table: 'dcim_interface', link: 'circuits_virtualcircuittermination', self: 'interface_id', other: 'id', target: 'circuits_virtualcircuittermination' }),
    linkFilter({ name: 'virtual_circuit_id', table: 'dcim_interface', link: 'circuits_virtualcircuittermination', self: 'interface_id', other: 'virtual_circuit_id', target: 'circuits_virtualcircuit' }),
  ];
}

function extendVmInterface(vmi: ModelDef): void {
  dropUnmodelled(vmi, 'mac_address', 'primary_mac_address', 'mac_addresses', 'vlan_translation_policy', 'l2vpn_termination');
  insertAfter(vmi, 'mtu', primaryMacField);
  insertAfter(vmi, 'tagged_vlans', translationField);
  vmi.extraRefs = { ...vmi.extraRefs, primary_mac: { model: 'macaddress', column: 'primary_mac_address_id' } };
  vmi.counts = { ...vmi.counts, count_fhrp_groups: { model: 'fhrpgroupassignment', column: 'interface_id', typeColumn: 'interface_type' } };
  addCheck(vmi, (ctx, values, existing, errors) => checkPrimaryMac(ctx, 'virtualization.vminterface', values, existing, errors));
  addEnrich(vmi, async (ctx, rows, out) => {
    const ids = rows.map((r) => Number(r.id));
    const macs = await assignedMacs(ctx, 'virtualization.vminterface', ids);
    const terms = await terminations(ctx, 'virtualization.vminterface', ids);
    rows.forEach((r, i) => {
      const o = out[i]!;
      const primary = o.primary_mac_address as { mac_address?: string } | null;
      place(o, 'mac_address', primary?.mac_address ?? null, 'mtu');
      place(o, 'mac_addresses', macs.get(Number(r.id)) ?? [], 'primary_mac_address');
      place(o, 'l2vpn_termination', terms.get(Number(r.id)) ?? null, 'vrf');
    });
  });
  vmi.cascade = [
    ...(vmi.cascade ?? []),
    { model: 'macaddress', column: 'assigned_object_id', typeColumn: 'assigned_object_type' },
    { model: 'l2vpntermination', column: 'assigned_object_id', typeColumn: 'assigned_object_type' },
    { model: 'fhrpgroupassignment', column: 'interface_id', typeColumn: 'interface_type' },
  ];
  const spec = { table: 'virtualization_vminterface', type: 'virtualization.vminterface', link: 'vpn_l2vpntermination', typeColumn: 'assigned_object_type', idColumn: 'assigned_object_id', column: 'l2vpn_id' };
  vmi.extraFilters = [
    ...(vmi.extraFilters ?? []),
    ...reverseAssignedFilters('l2vpn', spec, 'vpn_l2vpn', 'identifier', true),
    ...macLookupFilters('virtualization_vminterface', 'virtualization.vminterface'),
    ...primaryMacFilters(),
    ...refFilters('vlan_translation_policy', 'vlantranslationpolicy', 'name'),
  ];
}

function extendVlan(vlan: ModelDef): void {
  dropUnmodelled(vlan, 'l2vpn_termination');
  addEnrich(vlan, async (ctx, rows, out) => {
    const terms = await terminations(ctx, 'ipam.vlan', rows.map((r) => Number(r.id)));
    rows.forEach((r, i) => place(out[i]!, 'l2vpn_termination', terms.get(Number(r.id)) ?? null, 'comments'));
  });
  vlan.cascade = [...(vlan.cascade ?? []), { model: 'l2vpntermination', column: 'assigned_object_id', typeColumn: 'assigned_object_type' }];
  const spec = { table: 'ipam_vlan', type: 'ipam.vlan', link: 'vpn_l2vpntermination', typeColumn: 'assigned_object_type', idColumn: 'assigned_object_id', column: 'l2vpn_id' };
  vlan.extraFilters = [...(vlan.extraFilters ?? []), ...reverseAssignedFilters('l2vpn', spec, 'vpn_l2vpn', 'identifier', true)];
}

/** IP addresses may be an FHRP group's virtual addresses; services may run on an FHRP group. */
function extendForFhrp(ip: ModelDef, service: ModelDef): void {
  const type = ip.fields.find((f) => f.name === 'assigned_object_type')!;
  type.choices = [...type.choices!, { value: 'ipam.fhrpgroup', label: 'ipam.fhrpgroup' }];
  ip.extraRefs = { ...ip.extraRefs, assigned_fhrpgroup: { model: 'fhrpgroup', column: 'assigned_object_id', typeColumn: 'assigned_object_type', type: 'ipam.fhrpgroup' } };
  const ipRepresent = ip.represent!;
  ip.represent = (row, out, refs) => {
    const o = ipRepresent(row, out, refs);
    if (row.assigned_object_type === 'ipam.fhrpgroup') o.assigned_object = refs.assigned_fhrpgroup ?? null;
    return o;
  };
  ip.extraFilters = [...(ip.extraFilters ?? []), assignedFilter('fhrpgroup_id', { table: 'ipam_ipaddress', typeColumn: 'assigned_object_type', idColumn: 'assigned_object_id' }, 'ipam.fhrpgroup', 'ipam_fhrpgroup')];
  const parentType = service.fields.find((f) => f.name === 'parent_object_type')!;
  parentType.choices = [...parentType.choices!, { value: 'ipam.fhrpgroup', label: 'ipam.fhrpgroup' }];
  service.extraRefs = { ...service.extraRefs, parent_fhrpgroup: { model: 'fhrpgroup', column: 'parent_object_id', typeColumn: 'parent_object_type', type: 'ipam.fhrpgroup' } };
  const serviceRepresent = service.represent!;
  service.represent = (row, out, refs) => {
    const o = serviceRepresent(row, out, refs);
    if (row.parent_object_type === 'ipam.fhrpgroup') o.parent = refs.parent_fhrpgroup ?? null;
    return o;
  };
  const spec = { table: 'ipam_service', typeColumn: 'parent_object_type', idColumn: 'parent_object_id' };
  service.extraFilters = [...(service.extraFilters ?? []), assignedFilter('fhrpgroup_id', spec, 'ipam.fhrpgroup', 'ipam_fhrpgroup'), assignedFilter('fhrpgroup', spec, 'ipam.fhrpgroup', 'ipam_fhrpgroup', 'name')];
}

/** Circuit.clean() / VirtualCircuit.clean(): the account belongs to the circuit's provider (a virtual circuit's: its network's). */
async function checkAccount(ctx: ReadCtx, values: Row, existing: Row | null, errors: Errors, virtual: boolean): Promise<void> {
  const account = 'provider_account_id' in values ? values.provider_account_id : existing?.provider_account_id ?? null;
  if (account === null || account === undefined) return;
  const a = await ctx.db.selectFrom('circuits_provideraccount').select('provider_id').where('id', '=', account).executeTakeFirst();
  let provider: unknown;
  if (virtual) {
    const network = 'provider_network_id' in values ? values.provider_network_id : existing?.provider_network_id;
    provider = (await ctx.db.selectFrom('circuits_providernetwork').select('provider_id').where('id', '=', network).executeTakeFirst())?.provider_id;
  } else provider = 'provider_id' in values ? values.provider_id : existing?.provider_id;
  if (a && Number(a.provider_id) !== Number(provider)) {
    (errors.provider_account ??= []).push(virtual ? 'The assigned account must belong to the provider of the assigned network.' : 'The assigned account must belong to the assigned provider.');
  }
}

function extendCircuits(models: ModelDef[]): void {
  const provider = byKey(models, 'provider');
  dropUnmodelled(provider, 'accounts');
  provider.protectedBy = [...(provider.protectedBy ?? []), { model: 'provideraccount', column: 'provider_id' }];
  addEnrich(provider, async (ctx, rows, out) => {
    const ids = rows.map((r) => Number(r.id));
    const accounts = ids.length ? await ctx.db.selectFrom('circuits_provideraccount').select(['id', 'provider_id']).where('provider_id', 'in', ids).orderBy('account').orderBy('id').execute() : [];
    const briefs = await loadBriefs(ctx, providerAccount, accounts.map((a) => Number(a.id)));
    rows.forEach((r, i) => place(out[i]!, 'accounts', accounts.filter((a) => Number(a.provider_id) === Number(r.id)).map((a) => briefs.get(Number(a.id))), 'slug'));
  });
  for (const [key, after, virtual] of [
    ['circuit', 'provider', false],
    ['virtualcircuit', 'provider_network', true],
  ] as const) {
    const m = byKey(models, key);
    dropUnmodelled(m, 'provider_account');
    insertAfter(m, after, ref('provider_account', 'provideraccount'));
    addCheck(m, (ctx, values, existing, errors) => checkAccount(ctx, values, existing, errors, virtual));
    m.extraFilters = [...(m.extraFilters ?? []), ...providerAccountFilters()];
  }
  const vct = byKey(models, 'virtualcircuittermination');
  vct.extraFilters = [...(vct.extraFilters ?? []), ...providerAccountFilters('virtual_circuit_id', [{ table: 'circuits_virtualcircuit', column: 'provider_account_id' }])];
}

const deviceMacFilter: ExtraFilter = {
  name: 'mac_address',
  kind: 'custom',
  where: async (_ctx, vals) => {
    const macs = vals.map((v) => normaliseMac(v.trim()) ?? v.trim());
    const objects = sql`(select assigned_object_id from dcim_macaddress where assigned_object_type = 'dcim.interface' and mac_address in (${sql.join(macs)}))`;
    return sql`dcim_device.id in (select device_id from dcim_interface where mac_address in (${sql.join(macs)}) or id in ${objects})`;
  },
};

/** Adds the networking objects' fields, filters and deletion rules to the models that existed before them. */
export function withNetworking(models: ModelDef[]): void {
  extendInterface(byKey(models, 'interface'));
  extendVmInterface(byKey(models, 'vminterface'));
  extendVlan(byKey(models, 'vlan'));
  extendForFhrp(byKey(models, 'ipaddress'), byKey(models, 'service'));
  extendCircuits(models);

  const device = byKey(models, 'device');
  device.extraFilters = [
    // DeviceFilterSet.mac_address: any MAC address object on one of its interfaces (and an interface's own legacy mac_address).
    ...(device.extraFilters ?? []).map((f) => (f.name === 'mac_address' ? deviceMacFilter : f)),
    { name: 'has_virtual_device_context', kind: 'bool', expr: (t) => sql`exists (select 1 from dcim_virtualdevicecontext v where v.device_id = ${sql.ref(`${t}.id`)})` },
  ];
  // A device's wireless links go first (their cached devices CASCADE), before its interfaces, which they protect; its VDCs protect it.
  device.cascade = [{ model: 'wirelesslink', column: '_interface_a_device_id' }, { model: 'wirelesslink', column: '_interface_b_device_id' }, ...(device.cascade ?? [])];
  device.protectedBy = [...(device.protectedBy ?? []), { model: 'virtualdevicecontext', column: 'device_id' }];

  const vm = byKey(models, 'virtualmachine');
  vm.extraFilters = [...(vm.extraFilters ?? []), macAddressFilter('virtualization_virtualmachine', 'virtualization.vminterface', { table: 'virtualization_vminterface', column: 'virtual_machine_id' })];

  const routeTarget = byKey(models, 'routetarget');
  routeTarget.extraFilters = [
    ...(routeTarget.extraFilters ?? []),
    ...linkFilters('importing_l2vpn', { table: 'ipam_routetarget', link: 'vpn_l2vpn_import_targets', self: 'routetarget_id', other: 'l2vpn_id', target: 'vpn_l2vpn' }, 'identifier', true),
    ...linkFilters('exporting_l2vpn', { table: 'ipam_routetarget', link: 'vpn_l2vpn_export_targets', self: 'routetarget_id', other: 'l2vpn_id', target: 'vpn_l2vpn' }, 'identifier', true),
  ];

  // Wireless LANs' cached scope protects the region, site group, site or location it stands in, as clusters' does.
  for (const [key, column] of [
    ['region', '_region_id'],
    ['sitegroup', '_site_group_id'],
    ['site', '_site_id'],
    ['location', '_location_id'],
  ] as const) {
    const m = byKey(models, key);
    m.protectedBy = [...(m.protectedBy ?? []), { model: 'wirelesslan', column }];
  }
  const tenant = byKey(models, 'tenant');
  tenant.protectedBy = [...(tenant.protectedBy ?? []), ...['l2vpn', 'wirelesslan', 'wirelesslink', 'virtualdevicecontext'].map((model) => ({ model, column: 'tenant_id' }))];
  const ip = byKey(models, 'ipaddress');
  ip.setNull = [...(ip.setNull ?? []), { model: 'virtualdevicecontext', column: 'primary_ip4_id' }, { model: 'virtualdevicecontext', column: 'primary_ip6_id' }];
  byKey(models, 'vlan').setNull = [...(byKey(models, 'vlan').setNull ?? []), { model: 'wirelesslan', column: 'vlan_id' }];

  // The related managers config templates reach (`device.vdcs.all()`, `l2vpn.terminations.all()`), by NetBox's names; those that
  // are keys of the representation too (an interface's `mac_addresses`, a provider's `accounts`) are its lists there.
  const relate = (key: string, ...relations: Array<[string, string, string, string]>) => (RELATIONS[key] = [...(RELATIONS[key] ?? []), ...relations]);
  relate('device', ['vdcs', 'virtualdevicecontext', 'device_id', 'device']);
  relate('l2vpn', ['terminations', 'l2vpntermination', 'l2vpn_id', 'l2vpn']);
  relate('wirelesslangroup', ['wireless_lans', 'wirelesslan', 'group_id', 'group']);
  relate('tenant', ['l2vpns', 'l2vpn', 'tenant_id', 'tenant'], ['wireless_lans', 'wirelesslan', 'tenant_id', 'tenant'], ['wireless_links', 'wirelesslink', 'tenant_id', 'tenant'], ['vdcs', 'virtualdevicecontext', 'tenant_id', 'tenant']);
}

