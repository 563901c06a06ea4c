import { DEVICE_STATUS, INTERFACE_TYPES, SITE_STATUS } from './choices.ts';
import type { FieldDef, ModelDef } from './types.ts';

const name = (max = 100, extra: Partial<FieldDef> = {}): FieldDef => ({ name: 'name', column: 'name', kind: 'char', required: true, maxLength: max, filter: true, ...extra });
const slug = (extra: Partial<FieldDef> = {}): FieldDef => ({ name: 'slug', column: 'slug', kind: 'slug', required: true, maxLength: 100, filter: true, ...extra });
const description: FieldDef = { name: 'description', column: 'description', kind: 'char', blank: true, maxLength: 200, default: '', filter: true };
const comments: FieldDef = { name: 'comments', column: 'comments', kind: 'text', blank: true, maxLength: 100_000, default: '' };

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
    description,
    comments,
  ],
  ordering: ['name'],
  search: ['name', 'slug', 'description', 'comments'],
  brief: ['name', 'slug', 'description'],
  taggable: true,
  display: (r) => r.name,
  protectedBy: [{ model: 'device', column: 'site_id' }],
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
  brief: ['name', 'slug', 'description'],
  taggable: true,
  display: (r) => r.name,
  protectedBy: [{ model: 'devicetype', column: 'manufacturer_id' }],
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
    { name: 'u_height', column: 'u_height', kind: 'decimal', default: 1, min: 0, max: 999.5 },
    description,
  ],
  uniqueTogether: [
    ['manufacturer', 'model'],
    ['manufacturer', 'slug'],
  ],
  ordering: ['manufacturer', 'model'],
  search: ['model', 'slug', 'description'],
  brief: ['manufacturer', 'model', 'slug', 'description'],
  taggable: true,
  display: (r) => r.model,
  extraFilters: [
    { name: 'manufacturer_id', kind: 'fk_id', column: 'manufacturer_id', model: 'manufacturer' },
    { name: 'manufacturer', kind: 'fk_slug', column: 'manufacturer_id', model: 'manufacturer', attribute: 'slug' },
  ],
  protectedBy: [{ model: 'device', column: 'device_type_id' }],
};

export const deviceRole: ModelDef = {
  key: 'devicerole',
  app: 'dcim',
  path: 'device-roles',
  table: 'dcim_devicerole',
  objectType: 'dcim.devicerole',
  verboseName: 'device role',
  title: 'DeviceRole',
  fields: [name(100, { unique: true }), slug({ unique: true }), { name: 'color', column: 'color', kind: 'color', default: '9e9e9e', filter: true }, description],
  ordering: ['name'],
  search: ['name', 'slug', 'description'],
  brief: ['name', 'slug', 'description'],
  taggable: true,
  display: (r) => r.name,
  protectedBy: [{ model: 'device', column: 'role_id' }],
};

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
    description,
    comments,
  ],
  uniqueTogether: [['name', 'site']],
  ordering: ['name'],
  search: ['name', 'serial', 'description', 'comments'],
  brief: ['name', 'description'],
  taggable: true,
  displayNeeds: ['device_type'],
  display: (r, refs) => {
    if (r.name) return r.name;
    const dt = refs.device_type;
    return dt ? `${dt.manufacturer?.display ?? ''} ${dt.model} (${r.id})`.trim() : `Device ${r.id}`;
  },
  extraFilters: [
    { name: 'site_id', kind: 'fk_id', column: 'site_id', model: 'site' },
    { name: 'site', kind: 'fk_slug', column: 'site_id', model: 'site', attribute: 'slug' },
    { name: 'role_id', kind: 'fk_id', column: 'role_id', model: 'devicerole' },
    { name: 'role', kind: 'fk_slug', column: 'role_id', model: 'devicerole', attribute: 'slug' },
    { name: 'device_type_id', kind: 'fk_id', column: 'device_type_id', model: 'devicetype' },
    { name: 'device_type', kind: 'fk_slug', column: 'device_type_id', model: 'devicetype', attribute: 'slug' },
    { name: 'manufacturer_id', kind: 'custom' },
  ],
  cascade: [{ model: 'interface', column: 'device_id' }],
};

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
    name(64),
    { name: 'type', column: 'type', kind: 'choice', choices: INTERFACE_TYPES, required: true, filter: true },
    { name: 'enabled', column: 'enabled', kind: 'boolean', default: true, filter: true },
    { name: 'mtu', column: 'mtu', kind: 'integer', nullable: true, min: 1, max: 65536, default: null, filter: true },
    { name: 'mac_address', column: 'mac_address', kind: 'mac', nullable: true, default: null, filter: true },
    description,
  ],
  uniqueTogether: [['device', 'name']],
  ordering: ['device', 'name'],
  search: ['name', 'description', 'mac_address'],
  brief: ['device', 'name', 'description'],
  taggable: true,
  display: (r) => r.name,
  extraFilters: [
    { name: 'device_id', kind: 'fk_id', column: 'device_id', model: 'device' },
    { name: 'device', kind: 'fk_slug', column: 'device_id', model: 'device', attribute: 'name' },
    { name: 'site_id', kind: 'custom' },
  ],
  cascade: [{ model: 'ipaddress', column: 'assigned_object_id', typeColumn: 'assigned_object_type' }],
};
