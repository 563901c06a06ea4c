import { sql } from 'kysely';
import { fail } from './field-problem.ts';
import { DEVICE_AIRFLOW, DEVICE_FACE, SUBDEVICE_ROLE, DEVICE_STATUS, INTERFACE_DUPLEX, INTERFACE_MODE, INTERFACE_TYPES, LOCATION_STATUS, RACK_AIRFLOW, RACK_FORM_FACTOR, RACK_DIMENSION_UNIT, RACK_STATUS, RACK_WIDTH, SITE_STATUS, WEIGHT_UNIT } from './choices.ts';
import { commentsField, descriptionField, nameField, nestedGroup, ref, refFilters, siteTreeFilters, slugField, tenancyFilters, treeFilters } from './tenancy.ts';
import type { FieldDef, ModelDef, Refs, Row } from './types.ts';
import { refreshCachedScopes } from './scopes.ts';
import { linkFilters } from './link-filters.ts';
import { INTERFACE_POE_MODES, INTERFACE_POE_TYPES, WIRELESS_CHANNELS, WIRELESS_ROLES } from './netbox-choices.ts';
import { checkDevice, checkInterface, deviceComputed } from './device-rules.ts';
import { cabledFilters, cabledObject } from './cabling.ts';
import { countFilter, deviceMacFilter, hasChildrenFilter, localContextFilter } from './count-filters.ts';
import { afterDeviceSave, checkDeviceChassisBay, checkDeviceTypeRole, enrichParentDevice } from './chassis-bays.ts';
import { DEVICE_TYPE_TEMPLATE_COUNTS, imageField, templatePresenceFilters } from './template-filters.ts';
import { copyRackTypeAttributes } from './rack-type-attrs.ts';

const name = (max = 100, extra: Partial<FieldDef> = {}): FieldDef => ({ name: 'name', column: 'name', kind: 'char', required: true, maxLength: max, filter: true, ...extra });
const slug = (extra: Partial<FieldDef> = {}): FieldDef => ({ name: 'slug', column: 'slug', kind: 'slug', required: true, maxLength: 100, filter: true, ...extra });
const description: FieldDef = { name: 'description', column: 'description', kind: 'char', blank: true, maxLength: 200, default: '', filter: true };
const comments: FieldDef = { name: 'comments', column: 'comments', kind: 'text', blank: true, maxLength: 100_000, default: '' };

/** NetBox's WeightMixin: a weight (8 digits, 2 places) and its unit; a weight needs a unit (clean()). */
export const weightFields: FieldDef[] = [
  { name: 'weight', column: 'weight', kind: 'decimal', nullable: true, default: null, min: -999999.99, max: 999999.99, places: 2, filter: true },
  { name: 'weight_unit', column: 'weight_unit', kind: 'choice', choices: WEIGHT_UNIT, nullable: true, blank: true, default: null, filter: true },
];

/** WeightMixin.clean() (and a rack's max_weight): a weight without a unit is refused. */
export function checkWeightUnit(values: Row, existing: Row | null, errors: Record<string, string[]>, maxWeight = false): void {
  const at = (c: string) => (c in values ? values[c] : existing?.[c]);
  if (at('weight_unit')) return;
  if (at('weight') !== null && at('weight') !== undefined && Number(at('weight')) !== 0) (errors.non_field_errors ??= []).push('Must specify a unit when setting a weight');
  else if (maxWeight && at('max_weight')) (errors.non_field_errors ??= []).push('Must specify a unit when setting a maximum weight');
}

/**
 * NetBox's TimeZoneSerializerField: an IANA zone name (`Europe/Paris`, `UTC`, aliases such as `US/Eastern`), as the
 * zoneinfo database names it (case as written there); anything else is "A valid timezone is required.".
 */
function parseTimeZone(v: unknown): string {
  const name = typeof v === 'string' ? v.trim() : '';
  const bad = () => fail('A valid timezone is required.');
  if (!name || name.length > 63 || !/^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9][A-Za-z0-9_+-]*)*$/.test(name)) return bad();
  // Intl knows the zone (aliases included) but ignores case; zoneinfo's names start each part with a capital or a digit.
  if (!name.split('/').every((part) => /^[A-Z0-9]/.test(part))) return bad();
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
  } catch {
    return bad();
  }
  return name;
}

export const site: ModelDef = {
  key: 'site',
  naturalName: true,
  app: 'dcim',
  path: 'sites',
  table: 'dcim_site',
  objectType: 'dcim.site',
  verboseName: 'site',
  title: 'Site',
  fields: [
    name(100, { unique: true }),
    slug({ unique: true }),
    { name: 'status', column: 'status', kind: 'choice', choices: SITE_STATUS, default: 'active', filter: true },
    ref('region', 'region'),
    ref('group', 'sitegroup'),
    ref('tenant', 'tenant'),
    { name: 'facility', column: 'facility', kind: 'char', blank: true, maxLength: 50, default: '', filter: true },
    { name: 'time_zone', column: 'time_zone', kind: 'char', nullable: true, default: null, maxLength: 63, filter: true, parse: parseTimeZone },
    { name: 'physical_address', column: 'physical_address', kind: 'char', blank: true, maxLength: 200, default: '' },
    { name: 'shipping_address', column: 'shipping_address', kind: 'char', blank: true, maxLength: 200, default: '' },
    { name: 'latitude', column: 'latitude', kind: 'decimal', nullable: true, default: null, min: -90, max: 90, places: 6, filter: true },
    { name: 'longitude', column: 'longitude', kind: 'decimal', nullable: true, default: null, min: -180, max: 180, places: 6, filter: true },
    description,
    comments,
    { name: 'asns', column: '', kind: 'm2m', fk: 'asn', default: undefined, through: { table: 'dcim_site_asns', column: 'site_id', target: 'asn_id' }, label: 'ASNs' },
  ],
  ordering: ['name'],
  search: ['name', 'slug', 'facility', 'description', 'comments', 'physical_address', 'shipping_address'],
  brief: ['name', 'slug', 'description'],
  taggable: true,
  display: (r) => r.name,
  extraFilters: [
    ...treeFilters('region', 'region', 'region_id'),
    ...treeFilters('group', 'sitegroup', 'group_id'),
    ...tenancyFilters,
    ...linkFilters('asn', { table: 'dcim_site', link: 'dcim_site_asns', self: 'site_id', other: 'asn_id', target: 'ipam_asn' }, 'asn', true),
  ],
  protectedBy: [{ model: 'device', column: 'site_id' }, { model: 'rack', column: 'site_id' }, { model: 'location', column: 'site_id' }, { model: 'virtualmachine', column: 'site_id' }, { model: 'powerpanel', column: 'site_id' }, { model: 'cluster', column: '_site_id' }],
  setNull: [{ model: 'prefix', column: 'site_id' }, { model: 'vlan', column: 'site_id' }],
  // Clusters scoped to the site (or a location of it) keep its region and group.
  afterSave: async (w, id, row, existing) => {
    if (existing && (existing.region_id !== row.region_id || existing.group_id !== row.group_id)) await refreshCachedScopes(w.trx, ['virtualization_cluster', 'circuits_circuittermination', 'wireless_wirelesslan'], { site: id });
  },
  counts: {
    circuit_count: null,
    device_count: { model: 'device', column: 'site_id' },
    prefix_count: { model: 'prefix', column: 'site_id' },
    rack_count: { model: 'rack', column: 'site_id' },
    virtualmachine_count: { model: 'virtualmachine', column: 'site_id' },
    vlan_count: { model: 'vlan', column: 'site_id' },
  },
};

export const region = nestedGroup('region', 'dcim', 'regions', 'dcim_region', 'Region', 'region', {
  counts: { site_count: { model: 'site', column: 'region_id' }, prefix_count: null },
  setNull: [{ model: 'site', column: 'region_id' }],
  protectedBy: [{ model: 'cluster', column: '_region_id' }],
});

export const siteGroup = nestedGroup('sitegroup', 'dcim', 'site-groups', 'dcim_sitegroup', 'SiteGroup', 'site group', {
  counts: { site_count: { model: 'site', column: 'group_id' }, prefix_count: null },
  setNull: [{ model: 'site', column: 'group_id' }],
  protectedBy: [{ model: 'cluster', column: '_site_group_id' }],
});

export const location: ModelDef = {
  key: 'location',
  app: 'dcim',
  path: 'locations',
  table: 'dcim_location',
  objectType: 'dcim.location',
  verboseName: 'location',
  title: 'Location',
  fields: [
    nameField(100),
    slugField(),
    { name: 'site', column: 'site_id', kind: 'fk', fk: 'site', required: true },
    ref('parent', 'location'),
    { name: 'status', column: 'status', kind: 'choice', choices: LOCATION_STATUS, default: 'active', filter: true },
    ref('tenant', 'tenant'),
    { name: 'facility', column: 'facility', kind: 'char', blank: true, maxLength: 50, default: '', filter: true },
    descriptionField,
    commentsField,
  ],
  uniqueTogether: [
    ['site', 'parent', 'name'],
    ['site', 'parent', 'slug'],
  ],
  ordering: ['site', 'name'],
  search: ['name', 'slug', 'facility', 'description', 'comments'],
  brief: ['name', 'slug', 'description'],
  taggable: true,
  display: (r) => r.name,
  extraFilters: [...refFilters('site', 'site'), ...siteTreeFilters(), ...refFilters('parent', 'location'), ...treeFilters('ancestor', 'location', 'parent_id'), ...tenancyFilters],
  cascade: [{ model: 'location', column: 'parent_id' }],
  protectedBy: [{ model: 'cluster', column: '_location_id' }],
  afterSave: async (w, id, row, existing) => {
    if (existing && existing.site_id !== row.site_id) await refreshCachedScopes(w.trx, ['virtualization_cluster', 'circuits_circuittermination', 'wireless_wirelesslan'], { location: id });
  },
  setNull: [{ model: 'rack', column: 'location_id' }, { model: 'device', column: 'location_id' }, { model: 'powerpanel', column: 'location_id' }],
  counts: { rack_count: { model: 'rack', column: 'location_id' }, device_count: { model: 'device', column: 'location_id' }, prefix_count: null },
  unmodelled: { _depth: 0 },
  async check(ctx, values, existing, errors) {
    const site = 'site_id' in values ? values.site_id : existing?.site_id;
    const parent = 'parent_id' in values ? values.parent_id : existing?.parent_id;
    if (parent === null || parent === undefined) return;
    if (existing && parent === existing.id) (errors.parent ??= []).push('Cannot assign self or child as parent.');
    const p = await ctx.db.selectFrom('dcim_location').select(['site_id', 'name']).where('id', '=', parent).executeTakeFirst();
    if (p && Number(p.site_id) !== Number(site)) (errors.parent ??= []).push(`Parent location (${p.name}) must belong to the same site (${site}).`);
  },
};

export const platform: ModelDef = {
  key: 'platform',
  app: 'dcim',
  path: 'platforms',
  table: 'dcim_platform',
  objectType: 'dcim.platform',
  verboseName: 'platform',
  title: 'Platform',
  fields: [nameField(100, { unique: true }), slugField({ unique: true }), ref('manufacturer', 'manufacturer'), ref('config_template', 'configtemplate'), descriptionField, commentsField],
  ordering: ['name'],
  search: ['name', 'slug', 'description'],
  brief: ['name', 'slug', 'description', 'device_count', 'virtualmachine_count'],
  taggable: true,
  display: (r) => r.name,
  extraFilters: [
    ...refFilters('manufacturer', 'manufacturer'),
    { name: 'config_template_id', kind: 'fk_id', column: 'config_template_id', model: 'configtemplate' },
    // PlatformFilterSet.available_for_device_type (one device type): platforms of its manufacturer or of none.
    {
      name: 'available_for_device_type',
      kind: 'custom',
      where: async (ctx, vals, errors) => {
        const v = vals[vals.length - 1]!.trim();
        const t = /^\d{1,16}$/.test(v) ? await ctx.db.selectFrom('dcim_devicetype').select('manufacturer_id').where('id', '=', Number(v)).executeTakeFirst() : undefined;
        if (!t) return void (errors.available_for_device_type ??= []).push('Select a valid choice. That choice is not one of the available choices.');
        return sql`(${sql.ref('dcim_platform.manufacturer_id')} is null or ${sql.ref('dcim_platform.manufacturer_id')} = ${Number(t.manufacturer_id)})`;
      },
    },
  ],
  setNull: [{ model: 'device', column: 'platform_id' }, { model: 'virtualmachine', column: 'platform_id' }, { model: 'devicetype', column: 'default_platform_id' }],
  counts: { device_count: { model: 'device', column: 'platform_id' }, virtualmachine_count: { model: 'virtualmachine', column: 'platform_id' } },
};

export const rack: ModelDef = {
  key: 'rack',
  naturalName: true,
  app: 'dcim',
  path: 'racks',
  table: 'dcim_rack',
  objectType: 'dcim.rack',
  verboseName: 'rack',
  title: 'Rack',
  fields: [
    nameField(100),
    { name: 'facility_id', column: 'facility_id', kind: 'char', nullable: true, blank: true, maxLength: 50, default: null, filter: true },
    { name: 'site', column: 'site_id', kind: 'fk', fk: 'site', required: true },
    ref('location', 'location'),
    ref('tenant', 'tenant'),
    { name: 'status', column: 'status', kind: 'choice', choices: RACK_STATUS, default: 'active', filter: true },
    ref('role', 'rackrole'),
    { name: 'serial', column: 'serial', kind: 'char', blank: true, maxLength: 50, default: '', filter: true },
    { name: 'asset_tag', column: 'asset_tag', kind: 'char', nullable: true, blank: true, maxLength: 50, default: null, unique: true, filter: true },
    ref('rack_type', 'racktype'),
    { name: 'form_factor', column: 'form_factor', kind: 'choice', choices: RACK_FORM_FACTOR, nullable: true, default: null, filter: true },
    { name: 'width', column: 'width', kind: 'choice', choices: RACK_WIDTH, default: '19', filter: true },
    { name: 'u_height', column: 'u_height', kind: 'integer', default: 42, min: 1, max: 100, filter: true },
    { name: 'starting_unit', column: 'starting_unit', kind: 'integer', default: 1, min: 1, max: 32767, filter: true },
    weightFields[0]!,
    { name: 'max_weight', column: 'max_weight', kind: 'integer', nullable: true, default: null, min: 0, max: 2147483647, filter: true },
    weightFields[1]!,
    { name: 'desc_units', column: 'desc_units', kind: 'boolean', default: false, filter: true },
    ...(['outer_width', 'outer_height', 'outer_depth'] as const).map((n): FieldDef => ({ name: n, column: n, kind: 'integer', nullable: true, default: null, min: 0, max: 32767, filter: true })),
    { name: 'outer_unit', column: 'outer_unit', kind: 'choice', choices: RACK_DIMENSION_UNIT, nullable: true, blank: true, default: null, filter: true },
    { name: 'mounting_depth', column: 'mounting_depth', kind: 'integer', nullable: true, default: null, min: 0, max: 32767, filter: true },
    { name: 'airflow', column: 'airflow', kind: 'choice', choices: RACK_AIRFLOW, nullable: true, default: null, filter: true },
    descriptionField,
    commentsField,
  ],
  uniqueTogether: [['location', 'name']],
  ordering: ['site', 'location', 'name'],
  search: ['name', 'facility_id', 'serial', 'asset_tag', 'description', 'comments'],
  brief: ['name', 'description'],
  taggable: true,
  display: (r) => r.name,
  extraFilters: [
    ...refFilters('site', 'site'),
    ...siteTreeFilters(),
    ...treeFilters('location', 'location', 'location_id'),
    ...refFilters('role', 'rackrole'),
    ...tenancyFilters,
    ...refFilters('rack_type', 'racktype'),
    // The rack type's manufacturer (NetBox: rack_type__manufacturer).
    ...refFilters('manufacturer', 'manufacturer', 'slug', 'rack_type_id').map((f) => ({ ...f, through: [{ table: 'dcim_racktype', column: 'manufacturer_id' }] })),
  ],
  protectedBy: [],
  setNull: [{ model: 'device', column: 'rack_id' }, { model: 'powerfeed', column: 'rack_id' }],
  counts: { device_count: { model: 'device', column: 'rack_id' }, powerfeed_count: null },
  // Rack.clean(): a weight needs a unit, outer dimensions need a unit, a maximum weight needs a unit (in this order).
  clean(values, existing, errors) {
    checkWeightUnit(values, existing, errors);
    if (errors.non_field_errors?.length) return;
    const at = (c: string) => (c in values ? values[c] : existing?.[c]);
    if ((at('outer_width') || at('outer_height') || at('outer_depth')) && !at('outer_unit')) return void (errors.non_field_errors ??= []).push('Must specify a unit when setting an outer dimension');
    checkWeightUnit(values, existing, errors, true);
  },
  async check(ctx, values, existing, errors) {
    // Rack.save() copies the rack type's attributes; the unit checks below see the copied height.
    await copyRackTypeAttributes(ctx, values, existing);
    const site = 'site_id' in values ? values.site_id : existing?.site_id;
    const loc = 'location_id' in values ? values.location_id : existing?.location_id;
    if (loc !== null && loc !== undefined) {
      const l = await ctx.db.selectFrom('dcim_location').select(['site_id', 'name']).where('id', '=', loc).executeTakeFirst();
      if (l && Number(l.site_id) !== Number(site)) (errors.location ??= []).push(`Location must be from the same site, ${site}.`);
    }
    if (existing && ('u_height' in values || 'starting_unit' in values)) {
      // Shrinking the rack may not strand a mounted device (NetBox's Rack.clean()).
      const top = ('starting_unit' in values ? values.starting_unit : existing.starting_unit) + ('u_height' in values ? values.u_height : existing.u_height) - 1;
      const devices = await ctx.db
        .selectFrom('dcim_device as d')
        .innerJoin('dcim_devicetype as t', 't.id', 'd.device_type_id')
        .select(['d.position', 't.u_height'])
        .where('d.rack_id', '=', existing.id)
        .where('d.position', 'is not', null)
        .execute();
      const highest = Math.max(0, ...devices.map((d) => Number(d.position) + Math.max(Number(d.u_height), 1) - 1));
      if (highest > top) (errors[('rack_type_id' in values ? values.rack_type_id : existing.rack_type_id) ? 'rack_type' : 'u_height'] ??= []).push(`Rack must be at least ${highest}U tall to house currently installed devices.`);
    }
  },
};

/** NetBox's RackRole: a rack's functional role (name, slug, color). */
export const rackRole: ModelDef = {
  key: 'rackrole',
  app: 'dcim',
  path: 'rack-roles',
  table: 'dcim_rackrole',
  objectType: 'dcim.rackrole',
  verboseName: 'rack role',
  title: 'RackRole',
  fields: [name(100, { unique: true }), slug({ unique: true }), { name: 'color', column: 'color', kind: 'color', default: '9e9e9e', filter: true }, description],
  ordering: ['name'],
  search: ['name', 'slug', 'description'],
  brief: ['name', 'slug', 'description', 'rack_count'],
  taggable: true,
  display: (r) => r.name,
  counts: { rack_count: { model: 'rack', column: 'role_id' } },
  protectedBy: [{ model: 'rack', column: 'role_id' }],
};

export const manufacturer: ModelDef = {
  key: 'manufacturer',
  app: 'dcim',
  path: 'manufacturers',
  table: 'dcim_manufacturer',
  objectType: 'dcim.manufacturer',
  verboseName: 'manufacturer',
  title: 'Manufacturer',
  fields: [name(100, { unique: true }), slug({ unique: true }), description],
  ordering: ['name'],
  search: ['name', 'slug', 'description'],
  brief: ['name', 'slug', 'description', 'devicetype_count'],
  taggable: true,
  display: (r) => r.name,
  counts: { devicetype_count: { model: 'devicetype', column: 'manufacturer_id' }, inventoryitem_count: null, platform_count: { model: 'platform', column: 'manufacturer_id' } },
  protectedBy: [{ model: 'devicetype', column: 'manufacturer_id' }, { model: 'moduletype', column: 'manufacturer_id' }, { model: 'racktype', column: 'manufacturer_id' }, { model: 'inventoryitemtemplate', column: 'manufacturer_id' }],
  // Inventory items keep going without their manufacturer (NetBox SET_NULL).
  setNull: [{ model: 'inventoryitem', column: 'manufacturer_id' }],
};

export const deviceType: ModelDef = {
  key: 'devicetype',
  app: 'dcim',
  path: 'device-types',
  table: 'dcim_devicetype',
  objectType: 'dcim.devicetype',
  verboseName: 'device type',
  title: 'DeviceType',
  fields: [
    { name: 'manufacturer', column: 'manufacturer_id', kind: 'fk', fk: 'manufacturer', required: true },
    { name: 'model', column: 'model', kind: 'char', required: true, maxLength: 100, filter: true },
    slug(),
    { name: 'part_number', column: 'part_number', kind: 'char', blank: true, maxLength: 50, default: '', filter: true },
    ref('default_platform', 'platform'),
    { name: 'u_height', column: 'u_height', kind: 'decimal', default: 1, min: 0, max: 999.5, filter: true },
    { name: 'exclude_from_utilization', column: 'exclude_from_utilization', kind: 'boolean', default: false, filter: true },
    { name: 'is_full_depth', column: 'is_full_depth', kind: 'boolean', default: true, filter: true },
    { name: 'subdevice_role', column: 'subdevice_role', kind: 'choice', choices: SUBDEVICE_ROLE, nullable: true, default: null, filter: true, label: 'Parent/child status' },
    { name: 'airflow', column: 'airflow', kind: 'choice', choices: DEVICE_AIRFLOW, nullable: true, blank: true, default: null, filter: true },
    ...weightFields,
    // NetBox's ImageFields: a path in the representation (null without an image); JSON cannot carry a file.
    imageField('front_image'),
    imageField('rear_image'),
    description,
    comments,
  ],
  check: checkDeviceTypeRole,
  clean: (values, existing, errors) => checkWeightUnit(values, existing, errors),
  counts: {
    device_count: { model: 'device', column: 'device_type_id' },
    ...Object.fromEntries(DEVICE_TYPE_TEMPLATE_COUNTS.map(([name, key]) => [name, { model: key, column: 'device_type_id' }])),
  },
  uniqueTogether: [
    ['manufacturer', 'model'],
    ['manufacturer', 'slug'],
  ],
  ordering: ['manufacturer', 'model'],
  search: ['model', 'slug', 'description'],
  brief: ['manufacturer', 'model', 'slug', 'description', 'device_count'],
  taggable: true,
  display: (r) => r.model,
  extraFilters: [
    { name: 'manufacturer_id', kind: 'fk_id', column: 'manufacturer_id', model: 'manufacturer' },
    { name: 'manufacturer', kind: 'fk_slug', column: 'manufacturer_id', model: 'manufacturer', attribute: 'slug' },
    { name: 'device_bays', kind: 'custom' },
    ...refFilters('default_platform', 'platform'),
    ...DEVICE_TYPE_TEMPLATE_COUNTS.map(([name, key]) => countFilter(name, `dcim_${key}`, 'device_type_id')),
    ...templatePresenceFilters('device_type_id', true),
    { name: 'has_front_image', kind: 'bool', expr: (t) => sql`(${sql.ref(`${t}.front_image`)} is not null and ${sql.ref(`${t}.front_image`)} <> '')` },
    { name: 'has_rear_image', kind: 'bool', expr: (t) => sql`(${sql.ref(`${t}.rear_image`)} is not null and ${sql.ref(`${t}.rear_image`)} <> '')` },
  ],
  protectedBy: [{ model: 'device', column: 'device_type_id' }],
  // Its templates go with it (ComponentTemplateModel.device_type: CASCADE); front ports before the rear ports they map.
  cascade: ['frontporttemplate', ...DEVICE_TYPE_TEMPLATE_COUNTS.map(([, key]) => key).filter((k) => k !== 'frontporttemplate')].map((model) => ({ model, column: 'device_type_id' })),
};

const nestedRoleTemplate = nestedGroup('devicerole', 'dcim', 'device-roles', 'dcim_devicerole', 'DeviceRole', 'device role');
const nestedRoleFilters = nestedRoleTemplate.extraFilters!;
const nestedRoleCheck = nestedRoleTemplate.check!;

export const deviceRole: ModelDef = {
  key: 'devicerole',
  app: 'dcim',
  path: 'device-roles',
  table: 'dcim_devicerole',
  objectType: 'dcim.devicerole',
  verboseName: 'device role',
  title: 'DeviceRole',
  fields: [
    name(100, { unique: true }),
    slug({ unique: true }),
    { name: 'color', column: 'color', kind: 'color', default: '9e9e9e', filter: true },
    { name: 'vm_role', column: 'vm_role', kind: 'boolean', default: true, filter: true, label: 'VM role' },
    ref('config_template', 'configtemplate'),
    ref('parent', 'devicerole'),
    description,
    comments,
  ],
  ordering: ['name'],
  search: ['name', 'slug', 'description'],
  brief: ['name', 'slug', 'description', 'device_count', 'virtualmachine_count', '_depth'],
  unmodelled: { _depth: 0 },
  // NetBox 4.3's nested device roles: `parent` the direct parent, `ancestor` any role above; children go with their parent.
  extraFilters: [{ name: 'config_template_id', kind: 'fk_id', column: 'config_template_id', model: 'configtemplate' }, ...nestedRoleFilters],
  check: nestedRoleCheck,
  cascade: [{ model: 'devicerole', column: 'parent_id' }],
  counts: { device_count: { model: 'device', column: 'role_id' }, virtualmachine_count: { model: 'virtualmachine', column: 'role_id' } },
  taggable: true,
  display: (r) => r.name,
  protectedBy: [{ model: 'device', column: 'role_id' }, { model: 'virtualmachine', column: 'role_id' }],
};

/**
 * NetBox's Device.__str__: the name, or `<virtual chassis>:<position>` for an unnamed member (Device.label), with the
 * asset tag in brackets; without either, the type's manufacturer and model with the asset tag, else the id.
 */
export function deviceDisplay(r: Row, refs: Refs): string {
  const vc = refs['virtual_chassis:row'];
  const label = r.name ? String(r.name) : vc ? `${vc.name}:${r.vc_position ?? 'None'}` : '';
  const tag = r.asset_tag === null || r.asset_tag === undefined || r.asset_tag === '' ? '' : String(r.asset_tag);
  if (label) return tag ? `${label} (${tag})` : label;
  const dt = refs.device_type;
  if (!dt) return `Device ${r.id}`;
  return `${dt.manufacturer?.display ?? ''} ${dt.model} (${tag || r.id})`.trim();
}

export const device: ModelDef = {
  key: 'device',
  naturalName: true,
  app: 'dcim',
  path: 'devices',
  table: 'dcim_device',
  objectType: 'dcim.device',
  verboseName: 'device',
  title: 'Device',
  fields: [
    { name: 'name', column: 'name', kind: 'char', nullable: true, blank: true, maxLength: 64, default: null, filter: true },
    { name: 'device_type', column: 'device_type_id', kind: 'fk', fk: 'devicetype', required: true },
    { name: 'role', column: 'role_id', kind: 'fk', fk: 'devicerole', required: true },
    { name: 'site', column: 'site_id', kind: 'fk', fk: 'site', required: true },
    { name: 'status', column: 'status', kind: 'choice', choices: DEVICE_STATUS, default: 'active', filter: true },
    { name: 'serial', column: 'serial', kind: 'char', blank: true, maxLength: 50, default: '', filter: true },
    ref('platform', 'platform'),
    ref('tenant', 'tenant'),
    ref('location', 'location'),
    ref('rack', 'rack'),
    { name: 'position', column: 'position', kind: 'decimal', nullable: true, default: null, min: 0.5, max: 100.5, filter: true },
    { name: 'face', column: 'face', kind: 'choice', choices: DEVICE_FACE, nullable: true, default: null, filter: true },
    { name: 'asset_tag', column: 'asset_tag', kind: 'char', nullable: true, blank: true, maxLength: 50, default: null, unique: true, filter: true },
    { name: 'airflow', column: 'airflow', kind: 'choice', choices: DEVICE_AIRFLOW, nullable: true, default: null, filter: true },
    { name: 'latitude', column: 'latitude', kind: 'decimal', nullable: true, default: null, min: -90, max: 90, places: 6, filter: true },
    { name: 'longitude', column: 'longitude', kind: 'decimal', nullable: true, default: null, min: -180, max: 180, places: 6, filter: true },
    ref('primary_ip4', 'ipaddress', { label: 'Primary IPv4' }),
    ref('primary_ip6', 'ipaddress', { label: 'Primary IPv6' }),
    ref('oob_ip', 'ipaddress', { label: 'Out-of-band IP' }),
    ref('cluster', 'cluster'),
    ref('virtual_chassis', 'virtualchassis'),
    { name: 'vc_position', column: 'vc_position', kind: 'integer', nullable: true, default: null, min: 0, max: 255, filter: true, label: 'VC position' },
    { name: 'vc_priority', column: 'vc_priority', kind: 'integer', nullable: true, default: null, min: 0, max: 255, filter: true, label: 'VC priority' },
    ref('config_template', 'configtemplate'),
    { name: 'local_context_data', column: 'local_context_data', kind: 'json', nullable: true, default: null },
    description,
    comments,
  ],
  uniqueTogether: [['name', 'site'], ['virtual_chassis', 'vc_position']],
  ordering: ['name'],
  search: ['name', 'serial', 'asset_tag', 'description', 'comments'],
  brief: ['name', 'description'],
  taggable: true,
  check: async (ctx, values, existing, errors) => {
    await checkDeviceChassisBay(ctx, values, existing, errors);
    if (!Object.keys(errors).length) await checkDevice(ctx, values, existing, errors);
  },
  computed: deviceComputed,
  afterSave: afterDeviceSave,
  enrich: enrichParentDevice,
  counts: {
    console_port_count: { model: 'consoleport', column: 'device_id' },
    console_server_port_count: { model: 'consoleserverport', column: 'device_id' },
    power_port_count: { model: 'powerport', column: 'device_id' },
    power_outlet_count: { model: 'poweroutlet', column: 'device_id' },
    interface_count: { model: 'interface', column: 'device_id' },
    front_port_count: { model: 'frontport', column: 'device_id' },
    rear_port_count: { model: 'rearport', column: 'device_id' },
    device_bay_count: { model: 'devicebay', column: 'device_id' },
    module_bay_count: { model: 'modulebay', column: 'device_id' },
    inventory_item_count: { model: 'inventoryitem', column: 'device_id' },
  },
  displayNeeds: ['device_type'],
  // An unnamed member shows as `<chassis>:<position>`: the chassis row only, as its brief would load the master again.
  displayRows: { virtual_chassis: (r) => !r.name },
  display: deviceDisplay,
  extraFilters: [
    { name: 'site_id', kind: 'fk_id', column: 'site_id', model: 'site' },
    { name: 'site', kind: 'fk_slug', column: 'site_id', model: 'site', attribute: 'slug' },
    { name: 'role_id', kind: 'fk_id', column: 'role_id', model: 'devicerole' },
    { name: 'role', kind: 'fk_slug', column: 'role_id', model: 'devicerole', attribute: 'slug' },
    { name: 'device_type_id', kind: 'fk_id', column: 'device_type_id', model: 'devicetype' },
    { name: 'device_type', kind: 'fk_slug', column: 'device_type_id', model: 'devicetype', attribute: 'slug' },
    // NetBox's device_type__is_full_depth.
    { name: 'is_full_depth', kind: 'bool', expr: (t) => sql`exists (select 1 from dcim_devicetype dt where dt.id = ${sql.ref(`${t}.device_type_id`)} and dt.is_full_depth = ${sql.lit(true)})` },
    { name: 'manufacturer_id', kind: 'custom' },
    { name: 'manufacturer', kind: 'fk_slug', column: 'device_type_id', model: 'manufacturer', attribute: 'slug', through: [{ table: 'dcim_devicetype', column: 'manufacturer_id' }] },
    // NetBox's `model` names the device type by its slug, as `device_type`.
    { name: 'model', kind: 'fk_slug', column: 'device_type_id', model: 'devicetype', attribute: 'slug' },
    ...refFilters('platform', 'platform'),
    ...siteTreeFilters(),
    ...treeFilters('location', 'location', 'location_id'),
    { name: 'rack_id', kind: 'fk_id', column: 'rack_id', model: 'rack' },
    { name: 'primary_ip4_id', kind: 'fk_id', column: 'primary_ip4_id', model: 'ipaddress' },
    { name: 'primary_ip6_id', kind: 'fk_id', column: 'primary_ip6_id', model: 'ipaddress' },
    { name: 'primary_ip4', kind: 'fk_slug', column: 'primary_ip4_id', model: 'ipaddress', attribute: 'address' },
    { name: 'primary_ip6', kind: 'fk_slug', column: 'primary_ip6_id', model: 'ipaddress', attribute: 'address' },
    { name: 'oob_ip_id', kind: 'fk_id', column: 'oob_ip_id', model: 'ipaddress' },
    { name: 'has_primary_ip', kind: 'custom' },
    localContextFilter,
    deviceMacFilter,
    countFilter('console_port_count', 'dcim_consoleport', 'device_id'),
    countFilter('console_server_port_count', 'dcim_consoleserverport', 'device_id'),
    countFilter('power_port_count', 'dcim_powerport', 'device_id'),
    countFilter('power_outlet_count', 'dcim_poweroutlet', 'device_id'),
    countFilter('interface_count', 'dcim_interface', 'device_id'),
    countFilter('front_port_count', 'dcim_frontport', 'device_id'),
    countFilter('rear_port_count', 'dcim_rearport', 'device_id'),
    countFilter('device_bay_count', 'dcim_devicebay', 'device_id'),
    countFilter('module_bay_count', 'dcim_modulebay', 'device_id'),
    countFilter('inventory_item_count', 'dcim_inventoryitem', 'device_id'),
    hasChildrenFilter('console_ports', ['dcim_consoleport'], 'device_id'),
    hasChildrenFilter('console_server_ports', ['dcim_consoleserverport'], 'device_id'),
    hasChildrenFilter('power_ports', ['dcim_powerport'], 'device_id'),
    hasChildrenFilter('power_outlets', ['dcim_poweroutlet'], 'device_id'),
    hasChildrenFilter('interfaces', ['dcim_interface'], 'device_id'),
    hasChildrenFilter('module_bays', ['dcim_modulebay'], 'device_id'),
    hasChildrenFilter('pass_through_ports', ['dcim_frontport', 'dcim_rearport'], 'device_id'),
    { name: 'has_oob_ip', kind: 'custom' },
    { name: 'config_template_id', kind: 'fk_id', column: 'config_template_id', model: 'configtemplate' },
    { name: 'cluster_id', kind: 'fk_id', column: 'cluster_id', model: 'cluster' },
    ...refFilters('cluster_group', 'clustergroup', 'slug', 'cluster_id').map((f) => ({ ...f, through: [{ table: 'virtualization_cluster', column: 'group_id' }] })),
    ...tenancyFilters,
    { name: 'virtual_chassis_id', kind: 'fk_id', column: 'virtual_chassis_id', model: 'virtualchassis' },
    { name: 'virtual_chassis_member', kind: 'custom' },
    { name: 'parent_device_id', kind: 'custom' },
    { name: 'parent_bay_id', kind: 'custom' },
    { name: 'device_bays', kind: 'custom' },
  ],
  cascade: [
    { model: 'interface', column: 'device_id' },
    { model: 'consoleport', column: 'device_id' },
    { model: 'consoleserverport', column: 'device_id' },
    { model: 'poweroutlet', column: 'device_id' },
    { model: 'powerport', column: 'device_id' },
    { model: 'frontport', column: 'device_id' },
    { model: 'rearport', column: 'device_id' },
    { model: 'module', column: 'device_id' },
    { model: 'modulebay', column: 'device_id' },
    { model: 'inventoryitem', column: 'device_id' },
    { model: 'devicebay', column: 'device_id' },
    { model: 'service', column: 'parent_object_id', typeColumn: 'parent_object_type' },
  ],
  protectedBy: [{ model: 'virtualmachine', column: 'device_id' }, { model: 'virtualchassis', column: 'master_id' }],
  // A deleted child device leaves its bay empty (DeviceBay.installed_device SET_NULL).
  setNull: [{ model: 'devicebay', column: 'installed_device_id' }],
};

/** NetBox's WWNField: 8 octets (EUI-64) in any common notation, stored as uppercase colon-separated hex. */
function normaliseWwn(input: string): string | undefined {
  const s = input.trim();
  if (!/^(?:[0-9a-fA-F]{2}([:-]?)){7}[0-9a-fA-F]{2}$/.test(s) && !/^[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}$/.test(s)) return undefined;
  const hex = s.replace(/[:\-.]/g, '');
  return hex.length === 16 ? hex.toUpperCase().match(/../g)!.join(':') : undefined;
}

const VIRTUAL_IFACE_TYPES = new Set(['virtual', 'lag', 'bridge']);
const WIRELESS_IFACE_TYPES = new Set(['ieee802.11a', 'ieee802.11g', 'ieee802.11n', 'ieee802.11ac', 'ieee802.11ad', 'ieee802.11ax', 'ieee802.11ay', 'ieee802.11be', 'ieee802.15.1', 'ieee802.15.4', 'other-wireless', 'gsm', 'cdma', 'lte', '4g', '5g']);
/** A channel value's frequency or width (`5g-36-5180-20`: 5180 MHz, 20 MHz), as NetBox's get_channel_attr(). */
const channelAttr = (channel: string, attr: 'frequency' | 'width') => Number(channel.split('-')[attr === 'frequency' ? 2 : 3]);

/** Interface.clean()'s PoE and wireless rules (physical interfaces only; radio settings on wireless ones; a channel fixes frequency and width). */
function cleanInterfaceRadio(values: Row, existing: Row | null, errors: Record<string, string[]>): void {
  const at = (c: string) => (c in values ? values[c] : existing?.[c]);
  const type = String(at('type') ?? '');
  const wireless = WIRELESS_IFACE_TYPES.has(type);
  const one = (field: string, message: string) => void (errors[field] ??= []).push(message);
  if (at('poe_mode') && VIRTUAL_IFACE_TYPES.has(type)) return one('poe_mode', 'Virtual interfaces cannot have a PoE mode.');
  if (at('poe_type') && VIRTUAL_IFACE_TYPES.has(type)) return one('poe_type', 'Virtual interfaces cannot have a PoE type.');
  if (at('poe_type') && !at('poe_mode')) return one('poe_type', 'Must specify PoE mode when designating a PoE type.');
  if (at('rf_role') && !wireless) return one('rf_role', 'Wireless role may be set only on wireless interfaces.');
  const channel = at('rf_channel') ? String(at('rf_channel')) : '';
  if (channel && !wireless) return one('rf_channel', 'Channel may be set only on wireless interfaces.');
  // A changed channel recomputes the frequency and width unless they are given with it (Interface.save()).
  const given = (c: string) => (c in values ? values[c] : 'rf_channel' in values && existing && values.rf_channel !== existing.rf_channel ? null : existing?.[c]);
  const freq = given('rf_channel_frequency');
  if (freq !== null && freq !== undefined && Number(freq) !== 0) {
    if (!wireless) return one('rf_channel_frequency', 'Channel frequency may be set only on wireless interfaces.');
    if (channel && Number(freq) !== channelAttr(channel, 'frequency')) return one('rf_channel_frequency', 'Cannot specify custom frequency with channel selected.');
  }
  const width = given('rf_channel_width');
  if (width !== null && width !== undefined && Number(width) !== 0) {
    if (!wireless) return one('rf_channel_width', 'Channel width may be set only on wireless interfaces.');
    if (channel && Number(width) !== channelAttr(channel, 'width')) return one('rf_channel_width', 'Cannot specify custom width with channel selected.');
  }
  if (channel) {
    if (!freq || Number(freq) === 0) values.rf_channel_frequency = channelAttr(channel, 'frequency');
    if (!width || Number(width) === 0) values.rf_channel_width = channelAttr(channel, 'width');
  }
}

export const iface: ModelDef = {
  key: 'interface',
  naturalName: true,
  app: 'dcim',
  path: 'interfaces',
  table: 'dcim_interface',
  objectType: 'dcim.interface',
  verboseName: 'interface',
  title: 'Interface',
  fields: [
    { name: 'device', column: 'device_id', kind: 'fk', fk: 'device', required: true },
    ref('module', 'module'),
    name(64),
    { name: 'type', column: 'type', kind: 'choice', choices: INTERFACE_TYPES, required: true, filter: true },
    { name: 'enabled', column: 'enabled', kind: 'boolean', default: true, filter: true },
    { name: 'mtu', column: 'mtu', kind: 'integer', nullable: true, min: 1, max: 65536, default: null, filter: true },
    { name: 'mac_address', column: 'mac_address', kind: 'mac', nullable: true, default: null, filter: true },
    { name: 'label', column: 'label', kind: 'char', blank: true, maxLength: 64, default: '', filter: true },
    { name: 'mgmt_only', column: 'mgmt_only', kind: 'boolean', default: false, filter: true, label: 'Management only' },
    ref('parent', 'interface', { label: 'Parent interface' }),
    ref('bridge', 'interface', { label: 'Bridge interface' }),
    ref('lag', 'interface', { label: 'Parent LAG' }),
    { name: 'speed', column: 'speed', kind: 'integer', nullable: true, default: null, min: 0, max: 2147483647, filter: true },
    { name: 'duplex', column: 'duplex', kind: 'choice', choices: INTERFACE_DUPLEX, nullable: true, default: null, filter: true },
    {
      name: 'wwn',
      column: 'wwn',
      kind: 'char',
      nullable: true,
      default: null,
      maxLength: 23,
      filter: true,
      label: 'WWN',
      parse: (v) => {
        if (typeof v !== 'string') return fail('Not a valid string.');
        if (v.trim() === '') return null;
        return normaliseWwn(v) ?? fail(`Invalid WWN format: ${v.slice(0, 100)}`);
      },
      filterNormalise: (s) => normaliseWwn(s) ?? s,
    },
    { name: 'mark_connected', column: 'mark_connected', kind: 'boolean', default: false, filter: true },
    { name: 'mode', column: 'mode', kind: 'choice', choices: INTERFACE_MODE, nullable: true, default: null, filter: true, label: '802.1Q Mode' },
    { name: 'rf_role', column: 'rf_role', kind: 'choice', choices: WIRELESS_ROLES, nullable: true, blank: true, default: null, filter: true, label: 'Wireless role' },
    { name: 'rf_channel', column: 'rf_channel', kind: 'choice', choices: WIRELESS_CHANNELS, nullable: true, blank: true, default: null, filter: true, label: 'Wireless channel' },
    { name: 'poe_mode', column: 'poe_mode', kind: 'choice', choices: INTERFACE_POE_MODES, nullable: true, blank: true, default: null, filter: true, label: 'PoE mode' },
    { name: 'poe_type', column: 'poe_type', kind: 'choice', choices: INTERFACE_POE_TYPES, nullable: true, blank: true, default: null, filter: true, label: 'PoE type' },
    { name: 'rf_channel_frequency', column: 'rf_channel_frequency', kind: 'decimal', nullable: true, default: null, min: -99999.99, max: 99999.99, places: 2, filter: true, label: 'Channel frequency (MHz)' },
    { name: 'rf_channel_width', column: 'rf_channel_width', kind: 'decimal', nullable: true, default: null, min: -9999.999, max: 9999.999, places: 3, filter: true, label: 'Channel width (MHz)' },
    { name: 'tx_power', column: 'tx_power', kind: 'integer', nullable: true, default: null, min: 0, max: 127, filter: true, label: 'Transmit power (dBm)' },
    ref('untagged_vlan', 'vlan', { label: 'Untagged VLAN' }),
    { name: 'tagged_vlans', column: '', kind: 'm2m', fk: 'vlan', default: undefined, through: { table: 'dcim_interface_tagged_vlans', column: 'interface_id', target: 'vlan_id' }, label: 'Tagged VLANs' },
    ref('vrf', 'vrf', { label: 'VRF' }),
    description,
  ],
  uniqueTogether: [['device', 'name']],
  ordering: ['device', 'name'],
  search: ['name', 'description', 'mac_address'],
  brief: ['device', 'name', 'description', 'cable', '_occupied'],
  taggable: true,
  display: (r) => r.name,
  ...cabledObject('dcim.interface', true),
  extraFilters: [
    ...cabledFilters,
    { name: 'device_id', kind: 'fk_id', column: 'device_id', model: 'device' },
    { name: 'device', kind: 'fk_slug', column: 'device_id', model: 'device', attribute: 'name' },
    { name: 'site_id', kind: 'custom' },
    { name: 'site', kind: 'fk_slug', column: 'device_id', model: 'site', attribute: 'slug', through: [{ table: 'dcim_device', column: 'site_id' }] },
    ...siteTreeFilters('device_id', [{ table: 'dcim_device', column: 'site_id' }]),
    ...treeFilters('location', 'location', 'device_id', [{ table: 'dcim_device', column: 'location_id' }]),
    { name: 'parent_id', kind: 'fk_id', column: 'parent_id', model: 'interface' },
    { name: 'bridge_id', kind: 'fk_id', column: 'bridge_id', model: 'interface' },
    { name: 'lag_id', kind: 'fk_id', column: 'lag_id', model: 'interface' },
    { name: 'module_id', kind: 'fk_id', column: 'module_id', model: 'module' },
    { name: 'vrf_id', kind: 'fk_id', column: 'vrf_id', model: 'vrf' },
    { name: 'vrf', kind: 'fk_slug', column: 'vrf_id', model: 'vrf', attribute: 'rd' },
    ...refFilters('device_type', 'devicetype', 'model', 'device_id').map((f) => ({ ...f, through: [{ table: 'dcim_device', column: 'device_type_id' }] })),
    ...refFilters('device_role', 'devicerole', 'slug', 'device_id').map((f) => ({ ...f, through: [{ table: 'dcim_device', column: 'role_id' }] })),
    ...refFilters('rack', 'rack', 'name', 'device_id').map((f) => ({ ...f, through: [{ table: 'dcim_device', column: 'rack_id' }] })),
    { name: 'device_status', kind: 'custom' },
    ...refFilters('virtual_chassis', 'virtualchassis', 'name', 'device_id').map((f) => ({ ...f, through: [{ table: 'dcim_device', column: 'virtual_chassis_id' }] })),
    { name: 'virtual_chassis_member_id', kind: 'custom' },
    { name: 'virtual_chassis_member', kind: 'custom' },
    { name: 'virtual_chassis_member_or_master_id', kind: 'custom' },
    { name: 'virtual_chassis_member_or_master', kind: 'custom' },
    { name: 'kind', kind: 'custom' },
    { name: 'vlan_id', kind: 'custom' },
    { name: 'vlan', kind: 'custom' },
  ],
  clean: cleanInterfaceRadio,
  check: checkInterface,
  unmodelled: { vdcs: [], qinq_svlan: null, vlan_translation_policy: null, wireless_link: null, wireless_lans: [] },
  counts: { count_ipaddresses: { model: 'ipaddress', column: 'assigned_object_id', typeColumn: 'assigned_object_type' }, count_fhrp_groups: null },
  cascade: [
    { model: 'ipaddress', column: 'assigned_object_id', typeColumn: 'assigned_object_type' },
    { model: 'virtualcircuittermination', column: 'interface_id' },
    // Inventory items assigned to it (NetBox's GenericRelation deletes them along).
    { model: 'inventoryitem', column: 'component_id', typeColumn: 'component_type' },
  ],
  setNull: [{ model: 'interface', column: 'parent_id' }, { model: 'interface', column: 'lag_id' }, { model: 'interface', column: 'bridge_id' }],
};
