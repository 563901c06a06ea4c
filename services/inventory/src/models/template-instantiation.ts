import type { WriteContext } from '../changes/write-context.ts';
import { model } from './lookup.ts';
import type { ModelDef, ReadCtx, Row } from './types.ts';
import { createObject, lockRows, updateObject } from './write.ts';

/**
 * NetBox's component replication: a new device gets a component for each template of its device type
 * (Device.save()), a newly installed module one for each template of its module type (Module.save()), every
 * component created through the registry so it is change-logged and fires event rules as NetBox's post_save does.
 * In a module's templates `{module}` stands for the position of the bay the module sits in (one token per level
 * of nested modules, outermost first: NetBox's resolve_name()).
 */

const MODULE_TOKEN = '{module}';

/** NetBox's order of Device.save(): console, console server, power ports and outlets, interfaces, rear then front ports, bays, items. */
const DEVICE_ORDER = ['consoleport', 'consoleserverport', 'powerport', 'poweroutlet', 'interface', 'rearport', 'frontport', 'modulebay', 'devicebay', 'inventoryitem'];
/** Module.save()'s order (module types have no device bay or inventory item templates). */
const MODULE_ORDER = ['consoleport', 'consoleserverport', 'interface', 'powerport', 'poweroutlet', 'rearport', 'frontport', 'modulebay'];

/** The stored defaults of a model's fields (what an API create without them would store). */
function defaults(m: ModelDef): Row {
  const out: Row = {};
  for (const f of m.fields) if (f.kind !== 'm2m' && f.default !== undefined) out[f.column] = f.default;
  return out;
}

/** `{module}` tokens replaced one at a time by the positions, outermost module first (resolve_name / resolve_label). */
function resolve(text: string, positions: string[] | null): string {
  if (!positions || !text.includes(MODULE_TOKEN)) return text;
  let out = text;
  for (const p of positions) out = out.replace(MODULE_TOKEN, () => p);
  return out;
}

/** The positions of the bays from the device down to the given bay, the module's own (_get_module_tree). */
async function bayPositions(db: any, bayId: number): Promise<string[]> {
  const positions: string[] = [];
  const seen = new Set<number>();
  let at: number | null = bayId;
  while (at !== null && !seen.has(at)) {
    seen.add(at);
    const bay: Row | undefined = await db
      .selectFrom('dcim_modulebay as b')
      .leftJoin('dcim_module as m', 'm.id', 'b.module_id')
      .select(['b.position as position', 'm.module_bay_id as up'])
      .where('b.id', '=', at)
      .executeTakeFirst();
    if (!bay) break;
    positions.unshift(String(bay.position ?? ''));
    at = bay.up === null || bay.up === undefined ? null : Number(bay.up);
  }
  return positions;
}

/** A module bay made from a module's template: every token is the module's own bay position (Module.save()). */
const moduleBayName = (name: string, positions: string[] | null) => (positions ? name.split(MODULE_TOKEN).join(positions[positions.length - 1] ?? '') : name);

/** A component's own values from its template (what each template's instantiate() copies). */
function copied(kind: string, t: Row): Row {
  switch (kind) {
    case 'consoleport':
    case 'consoleserverport':
      return { type: t.type };
    case 'powerport':
      return { type: t.type, maximum_draw: t.maximum_draw, allocated_draw: t.allocated_draw };
    case 'poweroutlet':
      return { type: t.type, feed_leg: t.feed_leg };
    case 'interface':
      return { type: t.type, enabled: !!t.enabled, mgmt_only: !!t.mgmt_only, poe_mode: t.poe_mode, poe_type: t.poe_type, rf_role: t.rf_role };
    case 'rearport':
      return { type: t.type, color: t.color, positions: t.positions };
    case 'frontport':
      return { type: t.type, color: t.color, rear_port_position: t.rear_port_position };
    case 'modulebay':
      return { position: t.position };
    case 'inventoryitem':
      return { role_id: t.role_id, manufacturer_id: t.manufacturer_id, part_id: t.part_id };
    default:
      return {};
  }
}

interface Owner {
  deviceId: number;
  moduleId: number | null;
  /** Bay positions for `{module}`; null on a device (names are taken as they are). */
  positions: string[] | null;
}

async function instantiate(w: WriteContext, owner: Owner, templates: { column: 'device_type_id' | 'module_type_id'; id: unknown }, order: string[]): Promise<void> {
  // Created components by template id, per kind: outlets find their power port, front ports their rear port, items their parent.
  const made = new Map<string, Map<number, number>>();
  const bridges: Array<[iface: number, bridgeTemplate: number]> = [];
  for (const kind of order) {
    const tm = model(`${kind}template`);
    const target = model(kind);
    const rows = await w.trx.selectFrom(tm.table).selectAll().where(templates.column, '=', templates.id).orderBy('_name').orderBy('id').execute();
    const ids = new Map<number, number>();
    made.set(kind, ids);
    // Inventory item templates are a tree: parents first.
    const pending = [...rows];
    for (let guard = 0; pending.length && guard <= rows.length; guard++) {
      for (let i = 0; i < pending.length; ) {
        const t = pending[i]!;
        if (kind === 'inventoryitem' && t.parent_id !== null && !ids.has(Number(t.parent_id)) && rows.some((r) => Number(r.id) === Number(t.parent_id))) {
          i++;
          continue;
        }
        pending.splice(i, 1);
        const values: Row = { ...defaults(target), ...copied(kind, t), device_id: owner.deviceId, name: resolve(String(t.name), owner.positions), label: resolve(String(t.label ?? ''), owner.positions), description: '' };
        if (target.fields.some((f) => f.column === 'module_id')) values.module_id = owner.moduleId;
        // ModuleBay instances from a module take the module's bay position for every token (Module.save()).
        if (kind === 'modulebay') {
          values.name = moduleBayName(String(t.name), owner.positions);
          values.label = String(t.label ?? '');
        }
        if (kind === 'poweroutlet') values.power_port_id = t.power_port_id === null ? null : (made.get('powerport')?.get(Number(t.power_port_id)) ?? null);
        if (kind === 'frontport') {
          const rear = made.get('rearport')?.get(Number(t.rear_port_id));
          if (rear === undefined) continue;
          values.rear_port_id = rear;
        }
        if (kind === 'inventoryitem') {
          values.parent_id = t.parent_id === null ? null : (ids.get(Number(t.parent_id)) ?? null);
          const ck = typeof t.component_type === 'string' ? /^dcim\.(\w+)template$/.exec(t.component_type)?.[1] : undefined;
          const component = ck ? made.get(ck)?.get(Number(t.component_id)) : undefined;
          values.component_type = component === undefined ? null : `dcim.${ck}`;
          values.component_id = component ?? null;
        }
        const id = await createObject(w, target, { values });
        ids.set(Number(t.id), id);
        if (kind === 'interface' && t.bridge_id !== null && t.bridge_id !== undefined) bridges.push([id, Number(t.bridge_id)]);
      }
    }
  }
  // Interface bridges are set once every interface exists (update_interface_bridges), each change-logged.
  const ifaces = made.get('interface');
  const iface = model('interface');
  for (const [id, bridgeTemplate] of bridges) {
    const bridge = ifaces?.get(bridgeTemplate);
    if (bridge === undefined) continue;
    const row = (await lockRows(w, iface, [id])).get(id);
    if (row) await updateObject(w, iface, row, { values: { bridge_id: bridge } });
  }
}

/** Device.save() on create: the device type's templates as the device's components. */
export async function instantiateDeviceComponents(w: WriteContext, deviceId: number, deviceTypeId: number): Promise<void> {
  await instantiate(w, { deviceId, moduleId: null, positions: null }, { column: 'device_type_id', id: deviceTypeId }, DEVICE_ORDER);
}

/** Module.save() on create: the module type's templates as components of the module's device, with `{module}` resolved. */
export async function instantiateModuleComponents(w: WriteContext, moduleId: number, row: Row): Promise<void> {
  const positions = await bayPositions(w.trx, Number(row.module_bay_id));
  await instantiate(w, { deviceId: Number(row.device_id), moduleId, positions }, { column: 'module_type_id', id: row.module_type_id }, MODULE_ORDER);
}

/**
 * Before a module is installed: a component its type would make whose name the device already uses is refused with a
 * 400, as NetBox's module form does ("A Interface named Gi1/1 already exists"), never left to the unique index.
 */
export async function checkModuleComponentNames(ctx: ReadCtx, values: Row, existing: Row | null, errors: Record<string, string[]>): Promise<void> {
  if (existing) return;
  const positions = await bayPositions(ctx.db, Number(values.module_bay_id));
  for (const kind of MODULE_ORDER) {
    const target = model(kind);
    const templates = await ctx.db.selectFrom(`dcim_${kind}template`).select('name').where('module_type_id', '=', values.module_type_id).execute();
    const names = templates.map((t) => (kind === 'modulebay' ? moduleBayName(String(t.name), positions) : resolve(String(t.name), positions)));
    if (!names.length) continue;
    const taken = await ctx.db.selectFrom(target.table).select('name').where('device_id', '=', values.device_id).where('name', 'in', [...new Set(names)]).limit(1).executeTakeFirst();
    if (taken) return void (errors.non_field_errors ??= []).push(`A ${target.title} named ${taken.name} already exists`);
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup !== undefined) return void (errors.non_field_errors ??= []).push(`A ${target.title} named ${dup} already exists`);
  }
}
