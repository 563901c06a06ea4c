import { listRows } from './list.ts';
import { model } from './lookup.ts';
import { represent } from './represent.ts';
import type { ModelDef, ReadCtx } from './types.ts';

/**
 * The related objects a config template reaches through Django's related managers, as NetBox's render_config gives
 * templates model instances: the object's own children (`device.interfaces.all()`), those of the objects it points
 * at (`device.site.racks.all()`, `device.tenant.devices.filter(status='active')`) and of the related objects in turn
 * (`{% for i in device.interfaces.all() %}{{ i.ip_addresses.all() }}`), each relation by its NetBox name, the objects as
 * their REST representations in the model's ordering. Only relations whose names the template's source contains are
 * loaded, MAX_DEPTH hops from the object at most and MAX_RELATED objects in all (one query per relation and level,
 * whatever the number of parents); a relation that does not fit is marked, and its manager raises an error when the template
 * uses it (never a silently short list). The render worker turns them into managers (events/template-managers.ts).
 */
export const MAX_RELATED = 10_000;
const MAX_DEPTH = 3;
const IDS_PER_QUERY = 500;

/** NetBox's related name, the related model, the API filter selecting the parent's children, the item's field naming the parent. */
type Relation = [name: string, model: string, filter: string, back: string];

const components = (filter: string, back: string): Relation[] =>
  (['interfaces', 'consoleports', 'consoleserverports', 'powerports', 'poweroutlets', 'frontports', 'rearports', 'devicebays', 'modulebays', 'modules', 'inventoryitems'] as const).map((n) => [
    n,
    n === 'inventoryitems' ? 'inventoryitem' : n.slice(0, -1),
    filter,
    back,
  ]);
const tenancy = (name: string, key: string): Relation => [name, key, 'tenant_id', 'tenant'];

export const RELATIONS: Record<string, Relation[]> = {
  device: [...components('device_id', 'device'), ['services', 'service', 'device_id', 'parent_object_id'], ['virtual_machines', 'virtualmachine', 'device_id', 'device']],
  virtualmachine: [
    ['interfaces', 'vminterface', 'virtual_machine_id', 'virtual_machine'],
    ['virtualdisks', 'virtualdisk', 'virtual_machine_id', 'virtual_machine'],
    ['services', 'service', 'virtual_machine_id', 'parent_object_id'],
  ],
  site: [
    ['devices', 'device', 'site_id', 'site'],
    ['racks', 'rack', 'site_id', 'site'],
    ['locations', 'location', 'site_id', 'site'],
    ['vlans', 'vlan', 'site_id', 'site'],
    ['virtual_machines', 'virtualmachine', 'site_id', 'site'],
  ],
  region: [['sites', 'site', 'region_id', 'region']],
  sitegroup: [['sites', 'site', 'group_id', 'group']],
  location: [
    ['devices', 'device', 'location_id', 'location'],
    ['racks', 'rack', 'location_id', 'location'],
  ],
  rack: [
    ['devices', 'device', 'rack_id', 'rack'],
    ['powerfeeds', 'powerfeed', 'rack_id', 'rack'],
  ],
  tenant: [
    tenancy('devices', 'device'),
    tenancy('sites', 'site'),
    tenancy('racks', 'rack'),
    tenancy('locations', 'location'),
    tenancy('prefixes', 'prefix'),
    tenancy('ip_addresses', 'ipaddress'),
    tenancy('aggregates', 'aggregate'),
    tenancy('vlans', 'vlan'),
    tenancy('vrfs', 'vrf'),
    tenancy('virtual_machines', 'virtualmachine'),
    tenancy('clusters', 'cluster'),
    tenancy('circuits', 'circuit'),
    tenancy('power_feeds', 'powerfeed'),
  ],
  tenantgroup: [['tenants', 'tenant', 'group_id', 'group']],
  devicerole: [
    ['devices', 'device', 'role_id', 'role'],
    ['virtual_machines', 'virtualmachine', 'role_id', 'role'],
  ],
  platform: [
    ['devices', 'device', 'platform_id', 'platform'],
    ['virtual_machines', 'virtualmachine', 'platform_id', 'platform'],
  ],
  devicetype: [['instances', 'device', 'device_type_id', 'device_type']],
  manufacturer: [
    ['device_types', 'devicetype', 'manufacturer_id', 'manufacturer'],
    ['platforms', 'platform', 'manufacturer_id', 'manufacturer'],
  ],
  cluster: [
    ['devices', 'device', 'cluster_id', 'cluster'],
    ['virtual_machines', 'virtualmachine', 'cluster_id', 'cluster'],
  ],
  clustertype: [['clusters', 'cluster', 'type_id', 'type']],
  clustergroup: [['clusters', 'cluster', 'group_id', 'group']],
  interface: [
    ['ip_addresses', 'ipaddress', 'interface_id', 'assigned_object_id'],
    ['child_interfaces', 'interface', 'parent_id', 'parent'],
    ['member_interfaces', 'interface', 'lag_id', 'lag'],
  ],
  vminterface: [
    ['ip_addresses', 'ipaddress', 'vminterface_id', 'assigned_object_id'],
    ['child_interfaces', 'vminterface', 'parent_id', 'parent'],
  ],
  vrf: [
    ['prefixes', 'prefix', 'vrf_id', 'vrf'],
    ['ip_addresses', 'ipaddress', 'vrf_id', 'vrf'],
  ],
  vlan: [['prefixes', 'prefix', 'vlan_id', 'vlan']],
  vlangroup: [['vlans', 'vlan', 'group_id', 'group']],
  powerpanel: [['powerfeeds', 'powerfeed', 'power_panel_id', 'power_panel']],
  powerport: [['poweroutlets', 'poweroutlet', 'power_port_id', 'power_port']],
  rearport: [['frontports', 'frontport', 'rear_port_id', 'rear_port']],
  virtualchassis: [['members', 'device', 'virtual_chassis_id', 'virtual_chassis']],
  provider: [['circuits', 'circuit', 'provider_id', 'provider']],
  circuittype: [['circuits', 'circuit', 'type_id', 'type']],
  circuit: [['terminations', 'circuittermination', 'circuit_id', 'circuit']],
  rir: [['aggregates', 'aggregate', 'rir_id', 'rir']],
};

type Obj = Record<string, unknown>;
/** `truncated`: the relation's objects did not fit in the budget (its number); the manager then raises an error when used. */
export type RelatedTable = Record<string, Record<string, { model: string; items: unknown[]; truncated?: number }>>;

/** The key an object is known by in the table: `<app>/<path>/<id>` from its `url` (the render worker derives the same). */
export function objectKey(o: unknown): string | undefined {
  const url = o && typeof o === 'object' ? (o as Obj).url : undefined;
  const m = typeof url === 'string' ? /\/api\/([a-z-]+)\/([a-z0-9-]+)\/(\d+)\/$/.exec(url) : null;
  return m ? `${m[1]}/${m[2]}/${m[3]}` : undefined;
}

const idOf = (v: unknown): number | undefined => {
  const x = v && typeof v === 'object' ? (v as Obj).id : v;
  return typeof x === 'number' ? x : undefined;
};

/**
 * `{<object key>: {<relation>: {model, items}}}` for the object `root` (a REST representation of model `key`) and the
 * objects reached from it, for the relations `source` names.
 */
export async function relatedForTemplate(ctx: ReadCtx, key: string, root: Obj, source: string): Promise<RelatedTable> {
  const named = new Set(Object.values(RELATIONS).flatMap((list) => list.map((r) => r[0])).filter((n) => new RegExp(`\\b${n}\\b`).test(source)));
  const out: RelatedTable = {};
  if (!named.size) return out;
  const wanted = (m: ModelDef) => (RELATIONS[m.key] ?? []).some((r) => named.has(r[0]));
  const seen = new Set<string>();
  let budget = MAX_RELATED;
  let level: Array<{ m: ModelDef; obj: Obj }> = [{ m: model(key), obj: root }];
  for (let depth = 0; depth <= MAX_DEPTH && level.length && budget > 0; depth++) {
    const next: Array<{ m: ModelDef; obj: Obj }> = [];
    // The objects this level points at (`device.site`): their relations are loaded with the level's own.
    const here = [...level];
    for (const { m, obj } of level) {
      for (const f of m.fields) {
        if (f.kind !== 'fk' || !f.fk) continue;
        const target = model(f.fk);
        const v = obj[f.name];
        if (v && typeof v === 'object' && !Array.isArray(v) && wanted(target)) here.push({ m: target, obj: v as Obj });
      }
    }
    const groups = new Map<string, { m: ModelDef; objs: Map<number, Obj[]> }>();
    for (const { m, obj } of here) {
      const k = objectKey(obj);
      const id = idOf(obj);
      if (!k || id === undefined || !wanted(m) || seen.has(k)) continue;
      seen.add(k);
      const g = groups.get(m.key) ?? { m, objs: new Map() };
      groups.set(m.key, g);
      g.objs.set(id, [obj]);
    }
    for (const { m, objs } of groups.values()) {
      const ids = [...objs.keys()];
      for (const [name, targetKey, filter, back] of RELATIONS[m.key] ?? []) {
        if (!named.has(name)) continue;
        const target = model(targetKey);
        const byParent = new Map<number, unknown[]>(ids.map((id) => [id, []]));
        // Parents whose objects did not all fit in the budget: their manager refuses to answer rather than answer wrongly.
        const cut = new Set<number>();
        for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
          const chunk = ids.slice(i, i + IDS_PER_QUERY);
          if (budget <= 0) {
            for (const id of chunk) cut.add(id);
            continue;
          }
          const { rows } = await listRows(ctx, target, { [filter]: chunk.map(String) }, { limit: budget + 1, offset: 0 });
          if (rows.length > budget) {
            for (const id of chunk) cut.add(id);
            budget = 0;
            continue;
          }
          const items = (await represent(ctx, target, rows)) as Obj[];
          budget -= items.length;
          for (const item of items) {
            byParent.get(idOf(item[back]) ?? -1)?.push(item);
            if (depth < MAX_DEPTH) next.push({ m: target, obj: item });
          }
        }
        for (const [id, items] of byParent) {
          (out[objectKey(objs.get(id)![0])!] ??= {})[name] = cut.has(id) ? { model: target.title, items: [], truncated: MAX_RELATED } : { model: target.title, items };
        }
      }
    }
    level = next;
  }
  return out;
}
