import { conflict } from '../api/errors.ts';
import type { WriteContext } from '../changes/write-context.ts';
import { deviceComponentFilters } from './cabling.ts';
import { chunks, type ReadCtx } from './read.ts';
import { loadBriefs } from './represent.ts';
import { model } from './lookup.ts';
import { commentsField, descriptionField, nameField, ref, refFilters, siteTreeFilters } from './tenancy.ts';
import type { FieldDef, ModelDef, Row } from './types.ts';
import { lockRows, updateObject } from './write.ts';
import { instantiateDeviceComponents } from './template-instantiation.ts';

/**
 * NetBox 4.3's virtual chassis (`/api/dcim/virtual-chassis/`), device bays and device bay templates, with
 * the rules of their models' clean() and signals: a chassis' master must be one of its members (a new
 * chassis makes its master member 1), members are released when the chassis goes; only a parent device
 * type has bay templates and only a parent device has bays; a device sits in one bay at most.
 */

type Errors = Record<string, string[]>;

const pick = (values: Row, existing: Row | null, column: string) => (column in values ? values[column] : existing?.[column] ?? null);
const label: FieldDef = { name: 'label', column: 'label', kind: 'char', blank: true, maxLength: 64, default: '', filter: true };
const throughDevice = (column: string) => [{ table: 'dcim_device', column }];

async function deviceName(ctx: ReadCtx, id: number): Promise<string> {
  const rows = [...(await loadBriefs(ctx, model('device'), [id])).values()];
  return String(rows[0]?.display ?? id);
}

async function deviceTypeOf(ctx: ReadCtx, deviceId: number): Promise<{ model: string; subdevice_role: string | null } | undefined> {
  return ctx.db
    .selectFrom('dcim_device as d')
    .innerJoin('dcim_devicetype as t', 't.id', 'd.device_type_id')
    .select(['t.model as model', 't.subdevice_role as subdevice_role'])
    .where('d.id', '=', deviceId)
    .executeTakeFirst();
}

export const virtualChassis: ModelDef = {
  key: 'virtualchassis',
  app: 'dcim',
  path: 'virtual-chassis',
  table: 'dcim_virtualchassis',
  objectType: 'dcim.virtualchassis',
  verboseName: 'virtual chassis',
  title: 'VirtualChassis',
  naturalName: true,
  fields: [
    nameField(64),
    { name: 'domain', column: 'domain', kind: 'char', blank: true, maxLength: 30, default: '', filter: true },
    ref('master', 'device', { unique: true }),
    descriptionField,
    commentsField,
  ],
  ordering: ['name'],
  search: ['name', 'domain', 'description'],
  brief: ['name', 'master', 'description', 'member_count'],
  taggable: true,
  display: (r) => r.name,
  counts: { member_count: { model: 'device', column: 'virtual_chassis_id' } },
  extraFilters: [
    ...refFilters('master', 'device', 'name'),
    ...refFilters('site', 'site', 'slug', 'master_id').map((f) => ({ ...f, through: throughDevice('site_id') })),
    ...siteTreeFilters('master_id', throughDevice('site_id')),
    ...refFilters('tenant', 'tenant', 'slug', 'master_id').map((f) => ({ ...f, through: throughDevice('tenant_id') })),
    { name: 'member_count', kind: 'custom' },
  ],
  async check(ctx, values, existing, errors) {
    // VirtualChassis.clean(): on an existing chassis the master must already be a member.
    const master = pick(values, existing, 'master_id');
    if (!existing || master === null || !('master_id' in values)) return;
    const d = await ctx.db.selectFrom('dcim_device').select('virtual_chassis_id').where('id', '=', master).executeTakeFirst();
    if (d && Number(d.virtual_chassis_id) !== Number(existing.id)) {
      (errors.master ??= []).push(`The selected master (${await deviceName(ctx, Number(master))}) is not assigned to this virtual chassis.`);
    }
  },
  // NetBox's assign_virtualchassis_master signal: a new chassis takes its master as member 1.
  async afterSave(w, id, row, existing) {
    if (existing || row.master_id === null || row.master_id === undefined) return;
    const dev = (await lockRows(w, model('device'), [Number(row.master_id)])).get(Number(row.master_id));
    if (dev) await updateObject(w, model('device'), dev, { values: { virtual_chassis_id: id, vc_position: 1 } });
  },
  // clear_virtualchassis_members: members leave with their position and priority cleared (each change-logged).
  async beforeDelete(w, row) {
    // VirtualChassis.delete(): not while a member's interface is in a LAG of another member.
    const crossLag = await w.trx
      .selectFrom('dcim_interface as i')
      .innerJoin('dcim_interface as l', 'l.id', 'i.lag_id')
      .innerJoin('dcim_device as d', 'd.id', 'i.device_id')
      .select('i.id')
      .where('d.virtual_chassis_id', '=', row.id)
      .whereRef('l.device_id', '!=', 'i.device_id')
      .limit(1)
      .executeTakeFirst();
    if (crossLag) throw conflict(`Unable to delete virtual chassis ${row.name}. There are member interfaces which form a cross-chassis LAG interfaces.`);
    const ids = (await w.trx.selectFrom('dcim_device').select('id').where('virtual_chassis_id', '=', row.id).execute()).map((r) => Number(r.id));
    for (const dev of (await lockRows(w, model('device'), ids)).values()) {
      await updateObject(w, model('device'), dev, { values: { virtual_chassis_id: null, vc_position: null, vc_priority: null } });
    }
    await w.trx.updateTable('dcim_virtualchassis').set({ master_id: null }).where('id', '=', row.id).execute();
  },
  // `members`: NetBox's nested devices (id, url, display, name) in the devices' order.
  async enrich(ctx, rows, out) {
    const ids = rows.map((r) => Number(r.id));
    const members = new Map<number, number[]>();
    for (const part of chunks(ids)) {
      if (!part.length) continue;
      const found = await ctx.db.selectFrom('dcim_device').select(['id', 'virtual_chassis_id']).where('virtual_chassis_id', 'in', part).orderBy('_name').orderBy('id').execute();
      for (const d of found) members.set(Number(d.virtual_chassis_id), [...(members.get(Number(d.virtual_chassis_id)) ?? []), Number(d.id)]);
    }
    const briefs = await loadBriefs(ctx, model('device'), [...members.values()].flat());
    rows.forEach((r, i) => {
      out[i]!.members = (members.get(Number(r.id)) ?? []).map((d) => {
        const b = briefs.get(d)!;
        return { id: b.id, url: b.url, display: b.display, name: b.name };
      });
    });
  },
};

export const deviceBay: ModelDef = {
  key: 'devicebay',
  app: 'dcim',
  path: 'device-bays',
  table: 'dcim_devicebay',
  objectType: 'dcim.devicebay',
  docsTag: 'dcim-modules',
  verboseName: 'device bay',
  title: 'DeviceBay',
  naturalName: true,
  fields: [
    { name: 'device', column: 'device_id', kind: 'fk', fk: 'device', required: true },
    nameField(64),
    label,
    descriptionField,
    ref('installed_device', 'device', { unique: true }),
  ],
  uniqueTogether: [['device', 'name']],
  ordering: ['device', 'name'],
  search: ['name', 'label', 'description'],
  brief: ['device', 'name', 'description'],
  taggable: true,
  display: (r) => r.name,
  extraFilters: [...deviceComponentFilters, ...refFilters('installed_device', 'device', 'name'), { name: 'device_status', kind: 'custom' }],
  // DeviceBay.clean(): the device's type must be a parent; a device is never installed in itself.
  async check(ctx, values, existing, errors) {
    const device = pick(values, existing, 'device_id');
    const installed = pick(values, existing, 'installed_device_id');
    const type = device === null ? undefined : await deviceTypeOf(ctx, Number(device));
    if (type && type.subdevice_role !== 'parent') return void (errors.non_field_errors ??= []).push(`This type of device (${type.model}) does not support device bays.`);
    if (installed !== null && Number(installed) === Number(device)) return void (errors.non_field_errors ??= []).push('Cannot install a device into itself.');
  },
};

export const deviceBayTemplate: ModelDef = {
  key: 'devicebaytemplate',
  app: 'dcim',
  path: 'device-bay-templates',
  table: 'dcim_devicebaytemplate',
  objectType: 'dcim.devicebaytemplate',
  docsTag: 'dcim-modules',
  verboseName: 'device bay template',
  title: 'DeviceBayTemplate',
  naturalName: true,
  fields: [{ name: 'device_type', column: 'device_type_id', kind: 'fk', fk: 'devicetype', required: true }, nameField(64), label, descriptionField],
  uniqueTogether: [['device_type', 'name']],
  ordering: ['device_type', 'name'],
  search: ['name', 'description'],
  brief: ['name', 'description'],
  taggable: false,
  // ComponentTemplateModel.__str__: the label in brackets when there is one.
  display: (r) => (r.label ? `${r.name} (${r.label})` : r.name),
  extraFilters: [{ name: 'device_type_id', kind: 'fk_id', column: 'device_type_id', model: 'devicetype' }],
  async check(ctx, values, existing, errors) {
    const typeId = pick(values, existing, 'device_type_id');
    const t = await ctx.db.selectFrom('dcim_devicetype').select(['model', 'subdevice_role']).where('id', '=', typeId).executeTakeFirst();
    if (t && t.subdevice_role !== 'parent') (errors.non_field_errors ??= []).push(`Subdevice role of device type (${t.model}) must be set to "parent" to allow device bays.`);
  },
};

/** The device type's own rules for parent/child roles (DeviceType.clean()). */
export async function checkDeviceTypeRole(ctx: ReadCtx, values: Row, existing: Row | null, errors: Errors): Promise<void> {
  const role = pick(values, existing, 'subdevice_role');
  if (existing && role !== 'parent' && 'subdevice_role' in values) {
    const t = await ctx.db.selectFrom('dcim_devicebaytemplate').select('id').where('device_type_id', '=', existing.id).limit(1).executeTakeFirst();
    if (t) (errors.subdevice_role ??= []).push('Must delete all device bay templates associated with this device before declassifying it as a parent device.');
  }
  if (role === 'child' && Number(pick(values, existing, 'u_height') ?? 1) !== 0) (errors.u_height ??= []).push('Child device types must be 0U.');
}

/** Device.clean()'s virtual chassis and child-device rules (run before the placement rules). */
export async function checkDeviceChassisBay(ctx: ReadCtx, values: Row, existing: Row | null, errors: Errors): Promise<void> {
  const vc = pick(values, existing, 'virtual_chassis_id');
  if (vc !== null && pick(values, existing, 'vc_position') === null) (errors.vc_position ??= []).push('A device assigned to a virtual chassis must have its position defined.');
  if (existing) {
    const masterOf = await ctx.db.selectFrom('dcim_virtualchassis').select(['id', 'name']).where('master_id', '=', existing.id).executeTakeFirst();
    if (masterOf && Number(masterOf.id) !== Number(vc)) {
      (errors.virtual_chassis ??= []).push(`Device cannot be removed from virtual chassis ${masterOf.name} because it is currently designated as its master.`);
    }
  }
  if (pick(values, existing, 'rack_id') === null) return;
  const t = await ctx.db.selectFrom('dcim_devicetype').select('subdevice_role').where('id', '=', pick(values, existing, 'device_type_id')).executeTakeFirst();
  if (t?.subdevice_role !== 'child') return;
  if (pick(values, existing, 'face')) (errors.face ??= []).push('Child device types cannot be assigned to a rack face. This is an attribute of the parent device.');
  else if (pick(values, existing, 'position')) (errors.position ??= []).push('Child device types cannot be assigned to a rack position. This is an attribute of the parent device.');
}

/**
 * Device.save(): a new device gets the components of its type's templates (template-instantiation.ts); a parent that moves takes the
 * devices installed in its bays along (site, rack, location), each change change-logged.
 */
export async function afterDeviceSave(w: WriteContext, id: number, row: Row, existing: Row | null): Promise<void> {
  if (!existing) return instantiateDeviceComponents(w, id, Number(row.device_type_id));
  if (['site_id', 'rack_id', 'location_id'].every((c) => String(existing[c]) === String(row[c]))) return;
  const children = (await w.trx.selectFrom('dcim_devicebay').select('installed_device_id').where('device_id', '=', id).where('installed_device_id', 'is not', null).execute()).map((r) => Number(r.installed_device_id));
  const device = model('device');
  for (const child of (await lockRows(w, device, children)).values()) {
    await updateObject(w, device, child, { values: { site_id: row.site_id, rack_id: row.rack_id, location_id: row.location_id } });
  }
}

/** Device's `parent_device`: the device whose bay holds it, with that bay (NetBox's nested forms). */
export async function enrichParentDevice(ctx: ReadCtx, rows: Row[], out: Array<Record<string, unknown>>): Promise<void> {
  const bays = new Map<number, { bay: number; name: string; device: number }>();
  for (const part of chunks(rows.map((r) => Number(r.id)))) {
    if (!part.length) continue;
    const found = await ctx.db.selectFrom('dcim_devicebay').select(['id', 'name', 'device_id', 'installed_device_id']).where('installed_device_id', 'in', part).execute();
    for (const b of found) bays.set(Number(b.installed_device_id), { bay: Number(b.id), name: String(b.name), device: Number(b.device_id) });
  }
  const parents = bays.size ? await loadBriefs(ctx, model('device'), [...bays.values()].map((b) => b.device)) : new Map();
  const bayModel = model('devicebay');
  rows.forEach((r, i) => {
    const b = bays.get(Number(r.id));
    const p = b && parents.get(b.device);
    out[i]!.parent_device = p
      ? { id: p.id, url: p.url, display: p.display, name: p.name, device_bay: { id: b.bay, url: `${ctx.base}/api/dcim/${bayModel.path}/${b.bay}/`, display: b.name, name: b.name } }
      : null;
  });
}

export const CHASSIS_BAY_MODELS = [virtualChassis, deviceBay, deviceBayTemplate];
