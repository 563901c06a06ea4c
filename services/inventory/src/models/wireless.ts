import { commentsField, descriptionField, nestedGroup, ref, tenancyFilters, treeFilters } from './tenancy.ts';
import { checkScope, LOCATION_SCOPE_TYPES, SCOPE_REF, scopedFilters, scopeFields } from './scopes.ts';
import { linkFilter } from './link-filters.ts';
import { INTERFACE_TYPES } from './choices.ts';
import type { Choice, FieldDef, ModelDef, Row } from './types.ts';
import type { WriteContext } from '../changes/write-context.ts';
import { model } from './lookup.ts';
import { lockRows, updateObject } from './write.ts';

/**
 * NetBox's wireless app: LAN groups (nested), wireless LANs (SSIDs, with a scope as NetBox 4.2+, and interfaces'
 * `wireless_lans`), and point-to-point wireless links between two wireless interfaces, which each interface
 * shows as its `wireless_link` (NetBox's update_connected_interfaces signal).
 */

/** NetBox's WIRELESS_IFACE_TYPES. */
export const WIRELESS_TYPES = new Set(['ieee802.11a', 'ieee802.11g', 'ieee802.11n', 'ieee802.11ac', 'ieee802.11ad', 'ieee802.11ax', 'ieee802.11ay', 'ieee802.11be', 'ieee802.15.1', 'other-wireless']);

const WLAN_STATUS: Choice[] = [
  { value: 'active', label: 'Active' },
  { value: 'reserved', label: 'Reserved' },
  { value: 'disabled', label: 'Disabled' },
  { value: 'deprecated', label: 'Deprecated' },
];
const LINK_STATUS: Choice[] = [
  { value: 'connected', label: 'Connected' },
  { value: 'planned', label: 'Planned' },
  { value: 'decommissioning', label: 'Decommissioning' },
];
const AUTH_TYPES: Choice[] = [
  { value: 'open', label: 'Open' },
  { value: 'wep', label: 'WEP' },
  { value: 'wpa-personal', label: 'WPA Personal (PSK)' },
  { value: 'wpa-enterprise', label: 'WPA Enterprise' },
];
const AUTH_CIPHERS: Choice[] = [
  { value: 'auto', label: 'Auto' },
  { value: 'tkip', label: 'TKIP' },
  { value: 'aes', label: 'AES' },
];
const DISTANCE_UNITS: Choice[] = [
  { value: 'km', label: 'Kilometers' },
  { value: 'm', label: 'Meters' },
  { value: 'mi', label: 'Miles' },
  { value: 'ft', label: 'Feet' },
];

const authFields: FieldDef[] = [
  { name: 'auth_type', column: 'auth_type', kind: 'choice', choices: AUTH_TYPES, nullable: true, blank: true, default: null, filter: true, label: 'Authentication type' },
  { name: 'auth_cipher', column: 'auth_cipher', kind: 'choice', choices: AUTH_CIPHERS, nullable: true, blank: true, default: null, filter: true, label: 'Authentication cipher' },
  { name: 'auth_psk', column: 'auth_psk', kind: 'char', blank: true, maxLength: 64, default: '', filter: true, label: 'Pre-shared key' },
];
const pick = (values: Row, existing: Row | null, column: string) => (column in values ? values[column] : existing?.[column] ?? null);

export const wirelessLanGroup = nestedGroup('wirelesslangroup', 'wireless', 'wireless-lan-groups', 'wireless_wirelesslangroup', 'WirelessLANGroup', 'wireless LAN group', {
  counts: { wirelesslan_count: { model: 'wirelesslan', column: 'group_id' } },
  setNull: [{ model: 'wirelesslan', column: 'group_id' }],
});

export const wirelessLan: ModelDef = {
  key: 'wirelesslan',
  app: 'wireless',
  path: 'wireless-lans',
  table: 'wireless_wirelesslan',
  objectType: 'wireless.wirelesslan',
  verboseName: 'wireless LAN',
  title: 'WirelessLAN',
  fields: [
    { name: 'ssid', column: 'ssid', kind: 'char', required: true, maxLength: 32, filter: true, label: 'SSID' },
    descriptionField,
    ref('group', 'wirelesslangroup'),
    { name: 'status', column: 'status', kind: 'choice', choices: WLAN_STATUS, default: 'active', filter: true },
    ref('vlan', 'vlan', { label: 'VLAN' }),
    ...scopeFields(LOCATION_SCOPE_TYPES),
    ref('tenant', 'tenant'),
    ...authFields,
    commentsField,
  ],
  scopeRef: SCOPE_REF,
  ordering: ['ssid', 'id'],
  search: ['ssid', 'description'],
  brief: ['ssid', 'description'],
  taggable: true,
  display: (r) => r.ssid,
  check: (ctx, values, existing, errors) => checkScope(ctx, values, existing, errors, true),
  extraFilters: [
    ...treeFilters('group', 'wirelesslangroup', 'group_id'),
    { name: 'vlan_id', kind: 'fk_id', column: 'vlan_id', model: 'vlan' },
    linkFilter({ name: 'interface_id', table: 'wireless_wirelesslan', link: 'dcim_interface_wireless_lans', self: 'wirelesslan_id', other: 'interface_id', target: 'dcim_interface' }),
    ...scopedFilters('wireless_wirelesslan'),
    ...tenancyFilters,
  ],
};

export const wirelessLink: ModelDef = {
  key: 'wirelesslink',
  app: 'wireless',
  path: 'wireless-links',
  table: 'wireless_wirelesslink',
  objectType: 'wireless.wirelesslink',
  verboseName: 'wireless link',
  title: 'WirelessLink',
  fields: [
    { name: 'interface_a', column: 'interface_a_id', kind: 'fk', fk: 'interface', required: true, label: 'Interface A' },
    { name: 'interface_b', column: 'interface_b_id', kind: 'fk', fk: 'interface', required: true, label: 'Interface B' },
    { name: 'ssid', column: 'ssid', kind: 'char', blank: true, maxLength: 32, default: '', filter: true, label: 'SSID' },
    { name: 'status', column: 'status', kind: 'choice', choices: LINK_STATUS, default: 'connected', filter: true },
    ref('tenant', 'tenant'),
    ...authFields,
    { name: 'distance', column: 'distance', kind: 'decimal', nullable: true, default: null, min: 0, max: 999999.99, places: 2, filter: true },
    { name: 'distance_unit', column: 'distance_unit', kind: 'choice', choices: DISTANCE_UNITS, nullable: true, blank: true, default: null, filter: true },
    descriptionField,
    commentsField,
  ],
  uniqueTogether: [['interface_a', 'interface_b']],
  ordering: ['id'],
  search: ['ssid', 'description'],
  brief: ['ssid', 'description'],
  taggable: true,
  display: (r) => r.ssid || `#${r.id}`,
  async check(ctx, values, existing, errors) {
    // WirelessLink.clean(): both ends are wireless interfaces; DistanceMixin: a distance needs its unit.
    for (const end of ['a', 'b']) {
      const id = pick(values, existing, `interface_${end}_id`);
      const i = id === null ? undefined : await ctx.db.selectFrom('dcim_interface').select(['type', 'device_id']).where('id', '=', id).executeTakeFirst();
      if (!i) continue;
      if (!WIRELESS_TYPES.has(i.type)) {
        (errors[`interface_${end}`] ??= []).push(`${INTERFACE_TYPES.find((c) => c.value === i.type)?.label ?? i.type} is not a wireless interface.`);
        continue;
      }
      // The cached devices of the two ends (the device filters match them).
      values[`_interface_${end}_device_id`] = Number(i.device_id);
      if (!existing || Number(existing[`interface_${end}_id`]) !== Number(id)) {
        const busy = await ctx.db.selectFrom('dcim_interface').select('wireless_link_id').where('id', '=', id).executeTakeFirst();
        if (busy?.wireless_link_id !== null && busy?.wireless_link_id !== undefined && Number(busy.wireless_link_id) !== Number(existing?.id)) {
          (errors[`interface_${end}`] ??= []).push('This interface already has a wireless link.');
        }
      }
    }
    if (pick(values, existing, 'distance') !== null && pick(values, existing, 'distance_unit') === null) (errors.distance_unit ??= []).push('Must specify a unit when setting a distance');
  },
  // The interfaces at either end show this link and lose it when the link moves or goes, each change change-logged as
  // NetBox's update_connected_interfaces / nullify_connected_interfaces signals save them.
  async afterSave(w, id, row) {
    await pointInterfaces(w, id, [Number(row.interface_a_id), Number(row.interface_b_id)]);
  },
  async beforeDelete(w, row) {
    await pointInterfaces(w, Number(row.id), []);
  },
  extraFilters: [
    { name: 'interface_a_id', kind: 'fk_id', column: 'interface_a_id', model: 'interface' },
    { name: 'interface_b_id', kind: 'fk_id', column: 'interface_b_id', model: 'interface' },
    ...tenancyFilters,
  ],
};

/** Interfaces `ends` get `wireless_link` = link; others that had it lose it (through updateObject: change log, events). */
async function pointInterfaces(w: WriteContext, link: number, ends: number[]): Promise<void> {
  const iface = model('interface');
  const had = (await w.trx.selectFrom('dcim_interface').select('id').where('wireless_link_id', '=', link).execute()).map((r) => Number(r.id));
  const rows = await lockRows(w, iface, [...new Set([...had, ...ends])]);
  for (const r of rows.values()) {
    const want = ends.includes(Number(r.id)) ? link : null;
    if ((r.wireless_link_id ?? null) === null ? want !== null : Number(r.wireless_link_id) !== want) await updateObject(w, iface, r, { values: { wireless_link_id: want } });
  }
}

/** `wireless_lans` of interfaces (NetBox's many-to-many field), added to the interface model by networking.ts. */
export const interfaceWirelessLans: FieldDef = {
  name: 'wireless_lans',
  column: '',
  kind: 'm2m',
  fk: 'wirelesslan',
  default: undefined,
  through: { table: 'dcim_interface_wireless_lans', column: 'interface_id', target: 'wirelesslan_id' },
  label: 'Wireless LANs',
};

