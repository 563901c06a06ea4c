import { sql } from 'kysely';
import { fail } from './field-problem.ts';
import { CABLE_LENGTH_UNITS, CABLE_TYPES, CONSOLE_PORT_SPEEDS, CONSOLE_PORT_TYPES, FEED_LEGS, LINK_STATUS, PORT_TYPES, POWER_OUTLET_STATUS, POWER_OUTLET_TYPES, POWER_PORT_TYPES } from './netbox-choices.ts';
import { commentsField, descriptionField, nameField, ref, refFilters, siteTreeFilters, tenancyFilters, treeFilters } from './tenancy.ts';
import type { ExtraFilter, FieldDef, ModelDef, Row } from './types.ts';
import { cableUnterminatedFilter } from './count-filters.ts';

type Obj = Record<string, unknown>;

/** The cable functions that read other models through the registry, loaded when first used (the registry lists this module's models). */
import { CABLE_TERMINATION_TYPES, ENDPOINT_TYPES, type Termination } from './cable-types.ts';

const paths = () => import('./cable-paths.ts');

export { CABLE_TERMINATION_TYPES, COMPATIBLE, ENDPOINT_TYPES, type Termination } from './cable-types.ts';
const MAX_TERMINATIONS = 100;


/** `a_terminations` / `b_terminations` input: a list of `{object_type, object_id}` (NetBox's GenericObjectSerializer). */
function parseTerminations(v: unknown): Termination[] {
  if (!Array.isArray(v)) fail(`Expected a list of items but got type "${v === null ? 'NoneType' : typeof v === 'string' ? 'str' : typeof v === 'object' ? 'dict' : typeof v}".`);
  const list = v as unknown[];
  if (list.length > MAX_TERMINATIONS) fail(`Ensure this field has no more than ${MAX_TERMINATIONS} elements.`);
  const out: Termination[] = [];
  const seen = new Set<string>();
  for (const item of list) {
    if (!item || typeof item !== 'object' || Array.isArray(item)) fail('Invalid data. Expected a dictionary.');
    const { object_type, object_id } = item as Record<string, unknown>;
    if (typeof object_type !== 'string') fail('object_type: This field is required.');
    if (!(CABLE_TERMINATION_TYPES as readonly string[]).includes(object_type as string)) fail(`Invalid object type: ${String(object_type).slice(0, 100)}`);
    const id = typeof object_id === 'number' ? object_id : typeof object_id === 'string' && /^\d{1,15}$/.test(object_id) ? Number(object_id) : NaN;
    if (!Number.isSafeInteger(id) || id < 1) fail('object_id: A valid integer is required.');
    const key = `${object_type}:${id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ object_type: object_type as string, object_id: id });
  }
  return out;
}

/**
 * The cable-related read-only keys of a terminated object (NetBox's CabledObjectSerializer and, for path
 * endpoints, ConnectedEndpointsSerializer): `cable`, `cable_end`, `link_peers`, `link_peers_type`,
 * `connected_endpoints`, `connected_endpoints_type`, `connected_endpoints_reachable`, `_occupied`.
 */
export function cabledObject(objectType: string, endpoint: boolean): Pick<ModelDef, 'extraRefs' | 'briefValues' | 'enrich' | 'beforeDelete'> {
  return {
    extraRefs: { cable: { model: 'cable', column: 'cable_id' } },
    briefValues: { _occupied: (row) => row.cable_id !== null && row.cable_id !== undefined ? true : !!row.mark_connected },
    async enrich(ctx, rows, outs) {
      const { terminationsOfCables, briefsOf, key, traceSegments, allConnected } = await paths();
      const cabled = rows.filter((r) => r.cable_id !== null && r.cable_id !== undefined);
      const terms = await terminationsOfCables(ctx, cabled.map((r) => Number(r.cable_id)));
      const peersOf = new Map<number, Termination[]>();
      for (const r of cabled) {
        peersOf.set(
          r.id,
          terms.filter((t) => t.cable_id === Number(r.cable_id) && t.cable_end !== r.cable_end).map((t) => ({ object_type: t.termination_type, object_id: t.termination_id })),
        );
      }
      const briefs = await briefsOf(ctx, [...[...peersOf.values()].flat(), ...cabled.map((r) => ({ object_type: 'dcim.cable', object_id: Number(r.cable_id) }))]);
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i]!;
        const o = outs[i]!;
        const peers = peersOf.get(r.id) ?? [];
        o.cable = r.cable_id !== null && r.cable_id !== undefined ? (briefs.get(`dcim.cable:${Number(r.cable_id)}`) ?? null) : null;
        o.cable_end = r.cable_end ?? '';
        o.link_peers = peers.map((p) => briefs.get(key(p))).filter(Boolean);
        o.link_peers_type = peers.length ? peers[0]!.object_type : null;
        if (endpoint) {
          let ends: Obj[] | null = null;
          let type: string | null = null;
          let reachable: boolean | null = null;
          if (r.cable_id !== null && r.cable_id !== undefined) {
            const segments = await traceSegments(ctx, { object_type: objectType, object_id: r.id });
            const last = segments[segments.length - 1];
            if (last && last.far.length && ENDPOINT_TYPES.has(last.far[0]!.object_type)) {
              const b = await briefsOf(ctx, last.far);
              ends = last.far.map((f) => b.get(key(f))!).filter(Boolean);
              type = last.far[0]!.object_type;
              reachable = await allConnected(ctx, segments);
            }
          }
          o.connected_endpoints = ends;
          o.connected_endpoints_type = type;
          o.connected_endpoints_reachable = reachable;
        }
        o._occupied = r.cable_id !== null && r.cable_id !== undefined ? true : !!r.mark_connected;
      }
    },
    async beforeDelete(w, row) {
      await (await paths()).detachFromCable(w, objectType, row);
    },
  };
}

/** Filters of terminated objects: `cabled`, `occupied`, `cable_id`, `cable_end`. */
export const cabledFilters: ExtraFilter[] = [
  { name: 'cabled', kind: 'custom' },
  { name: 'occupied', kind: 'custom' },
  { name: 'cable_id', kind: 'fk_id', column: 'cable_id', model: 'cable' },
  { name: 'cable_end', kind: 'custom' },
];

/** A colour that may be left blank (NetBox's ColorField with blank=True). */
export const blankColor: FieldDef = {
  name: 'color',
  column: 'color',
  kind: 'color',
  blank: true,
  default: '',
  filter: true,
  parse: (v) => {
    if (v === '') return '';
    if (typeof v !== 'string' || !/^[0-9a-fA-F]{6}$/.test(v)) fail('Enter a valid hexadecimal RGB color code.');
    return (v as string).toLowerCase();
  },
};

/** A power port's (and its template's) rated and allocated draw in watts. */
export const powerDrawFields: FieldDef[] = [
  { name: 'maximum_draw', column: 'maximum_draw', kind: 'integer', nullable: true, default: null, min: 1, max: 2147483647, filter: true, label: 'Maximum draw (W)' },
  { name: 'allocated_draw', column: 'allocated_draw', kind: 'integer', nullable: true, default: null, min: 1, max: 2147483647, filter: true, label: 'Allocated draw (W)' },
];

const markConnected: FieldDef = { name: 'mark_connected', column: 'mark_connected', kind: 'boolean', default: false, filter: true };
const label: FieldDef = { name: 'label', column: 'label', kind: 'char', blank: true, maxLength: 64, default: '', filter: true };
const device: FieldDef = { name: 'device', column: 'device_id', kind: 'fk', fk: 'device', required: true };

/** Filters every device component has (NetBox's DeviceComponentFilterSet). */
export const deviceComponentFilters: ExtraFilter[] = [
  { name: 'device_id', kind: 'fk_id', column: 'device_id', model: 'device' },
  { name: 'device', kind: 'fk_slug', column: 'device_id', model: 'device', attribute: 'name' },
  ...refFilters('site', 'site', 'slug', 'device_id').map((f) => ({ ...f, through: [{ table: 'dcim_device', column: 'site_id' }] })),
  ...siteTreeFilters('device_id', [{ table: 'dcim_device', column: 'site_id' }]),
  ...treeFilters('location', 'location', 'device_id', [{ table: 'dcim_device', column: 'location_id' }]),
  ...refFilters('rack', 'rack', 'name', 'device_id').map((f) => ({ ...f, through: [{ table: 'dcim_device', column: 'rack_id' }] })),
  ...refFilters('device_type', 'devicetype', 'model', 'device_id').map((f) => ({ ...f, through: [{ table: 'dcim_device', column: 'device_type_id' }] })),
  ...refFilters('device_role', 'devicerole', 'slug', 'device_id').map((f) => ({ ...f, through: [{ table: 'dcim_device', column: 'role_id' }] })),
  ...refFilters('virtual_chassis', 'virtualchassis', 'name', 'device_id').map((f) => ({ ...f, through: [{ table: 'dcim_device', column: 'virtual_chassis_id' }] })),
];

/** A device component with a cable end (console, power and pass-through ports). */
function component(key: string, path: string, title: string, verboseName: string, fields: FieldDef[], opts: Partial<ModelDef> & { endpoint: boolean }): ModelDef {
  const objectType = `dcim.${key}`;
  const { endpoint, extraFilters, ...rest } = opts;
  return {
    key,
    app: 'dcim',
    path,
    table: `dcim_${key}`,
    objectType,
    verboseName,
    title,
    docsTag: 'dcim-cabling',
    naturalName: true,
    fields: [device, ref('module', 'module'), nameField(64), label, ...fields, descriptionField, markConnected],
    uniqueTogether: [['device', 'name']],
    ordering: ['device', 'name'],
    search: ['name', 'label', 'description'],
    brief: ['device', 'name', 'description', 'cable', '_occupied'],
    taggable: true,
    display: (r) => r.name,
    extraFilters: [...deviceComponentFilters, { name: 'module_id', kind: 'fk_id', column: 'module_id', model: 'module' }, ...cabledFilters, { name: 'device_status', kind: 'custom' }, ...(extraFilters ?? [])],
    ...cabledObject(objectType, endpoint),
    // Inventory items assigned to the component go with it (NetBox's GenericRelation).
    cascade: [{ model: 'inventoryitem', column: 'component_id', typeColumn: 'component_type' }],
    ...rest,
  };
}

/** Choice-like integer (`speed` of console ports: 9600 …), read as `{value, label}`. */
function consoleSpeed(): FieldDef {
  return {
    name: 'speed',
    column: 'speed',
    kind: 'integer',
    nullable: true,
    default: null,
    filter: true,
    label: 'Speed (bps)',
    parse: (v) => {
      const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,10}$/.test(v.trim()) ? Number(v) : NaN;
      if (!CONSOLE_PORT_SPEEDS.some((c) => Number(c.value) === n)) fail(`"${String(v).slice(0, 100)}" is not a valid choice.`);
      return n;
    },
  };
}

const speedChoice = (row: Row, out: Obj): Obj => {
  const v = row.speed;
  out.speed = v === null || v === undefined ? null : { value: Number(v), label: CONSOLE_PORT_SPEEDS.find((c) => Number(c.value) === Number(v))?.label ?? String(v) };
  return out;
};

const typeField = (choices: typeof PORT_TYPES, required = false): FieldDef =>
  required ? { name: 'type', column: 'type', kind: 'choice', choices, required: true, filter: true } : { name: 'type', column: 'type', kind: 'choice', choices, nullable: true, default: null, filter: true };

export const consolePort = component('consoleport', 'console-ports', 'ConsolePort', 'console port', [typeField(CONSOLE_PORT_TYPES), consoleSpeed()], { endpoint: true, represent: speedChoice });
export const consoleServerPort = component('consoleserverport', 'console-server-ports', 'ConsoleServerPort', 'console server port', [typeField(CONSOLE_PORT_TYPES), consoleSpeed()], { endpoint: true, represent: speedChoice });
export const powerPort = component(
  'powerport',
  'power-ports',
  'PowerPort',
  'power port',
  [
    typeField(POWER_PORT_TYPES),
    ...powerDrawFields,
  ],
  { endpoint: true, setNull: [{ model: 'poweroutlet', column: 'power_port_id' }] },
);
export const powerOutlet = component(
  'poweroutlet',
  'power-outlets',
  'PowerOutlet',
  'power outlet',
  [
    typeField(POWER_OUTLET_TYPES),
    { name: 'status', column: 'status', kind: 'choice', choices: POWER_OUTLET_STATUS, default: 'enabled', filter: true },
    blankColor,
    ref('power_port', 'powerport'),
    { name: 'feed_leg', column: 'feed_leg', kind: 'choice', choices: FEED_LEGS, nullable: true, default: null, filter: true },
  ],
  {
    endpoint: true,
    extraFilters: [{ name: 'power_port_id', kind: 'fk_id', column: 'power_port_id', model: 'powerport' }],
    check: async (ctx, values, existing, errors) => {
      const pp = 'power_port_id' in values ? values.power_port_id : existing?.power_port_id;
      const dev = 'device_id' in values ? values.device_id : existing?.device_id;
      if (pp === null || pp === undefined) return;
      const row = await ctx.db.selectFrom('dcim_powerport').select('device_id').where('id', '=', pp).executeTakeFirst();
      if (row && Number(row.device_id) !== Number(dev)) (errors.power_port ??= []).push(`Parent power port (${pp}) must belong to the same device`);
    },
  },
);
export const rearPort = component(
  'rearport',
  'rear-ports',
  'RearPort',
  'rear port',
  [typeField(PORT_TYPES, true), blankColor, { name: 'positions', column: 'positions', kind: 'integer', default: 1, min: 1, max: 1024, filter: true }],
  {
    endpoint: false,
    protectedBy: [{ model: 'frontport', column: 'rear_port_id' }],
    check: async (ctx, values, existing, errors) => {
      if (!existing || !('positions' in values)) return;
      const row = await ctx.db.selectFrom('dcim_frontport').select((eb) => eb.fn.max('rear_port_position').as('n')).where('rear_port_id', '=', existing.id).executeTakeFirst();
      const used = Number(row?.n ?? 0);
      if (used > Number(values.positions)) (errors.positions ??= []).push(`The number of positions cannot be less than the number of mapped front ports (${used})`);
    },
  },
);
export const frontPort = component(
  'frontport',
  'front-ports',
  'FrontPort',
  'front port',
  [
    typeField(PORT_TYPES, true),
    blankColor,
    { name: 'rear_port', column: 'rear_port_id', kind: 'fk', fk: 'rearport', required: true },
    { name: 'rear_port_position', column: 'rear_port_position', kind: 'integer', default: 1, min: 1, max: 1024, filter: true },
  ],
  {
    endpoint: false,
    uniqueTogether: [['device', 'name'], ['rear_port', 'rear_port_position']],
    extraFilters: [{ name: 'rear_port_id', kind: 'fk_id', column: 'rear_port_id', model: 'rearport' }],
    check: async (ctx, values, existing, errors) => {
      const rp = 'rear_port_id' in values ? values.rear_port_id : existing?.rear_port_id;
      const pos = Number('rear_port_position' in values ? values.rear_port_position : existing?.rear_port_position ?? 1);
      const dev = 'device_id' in values ? values.device_id : existing?.device_id;
      const row = await ctx.db.selectFrom('dcim_rearport').select(['device_id', 'positions']).where('id', '=', rp).executeTakeFirst();
      if (!row) return;
      if (Number(row.device_id) !== Number(dev)) (errors.rear_port ??= []).push(`Rear port (${rp}) must belong to the same device`);
      else if (pos > Number(row.positions)) (errors.rear_port_position ??= []).push(`Invalid rear port position (${pos}): Rear port has only ${Number(row.positions)} positions`);
    },
  },
);

/** A cable between the A and B terminations (NetBox 4.x: several objects per end, all of one type). */
export const cable: ModelDef = {
  key: 'cable',
  app: 'dcim',
  path: 'cables',
  table: 'dcim_cable',
  objectType: 'dcim.cable',
  docsTag: 'dcim-cabling',
  verboseName: 'cable',
  title: 'Cable',
  fields: [
    { name: 'type', column: 'type', kind: 'choice', choices: CABLE_TYPES, nullable: true, default: null, filter: true },
    { name: 'a_terminations', column: 'a_terminations', kind: 'json', default: [], parse: parseTerminations, label: 'A terminations' },
    { name: 'b_terminations', column: 'b_terminations', kind: 'json', default: [], parse: parseTerminations, label: 'B terminations' },
    { name: 'status', column: 'status', kind: 'choice', choices: LINK_STATUS, default: 'connected', filter: true },
    ref('tenant', 'tenant'),
    { name: 'label', column: 'label', kind: 'char', blank: true, maxLength: 100, default: '', filter: true },
    blankColor,
    { name: 'length', column: 'length', kind: 'decimal', nullable: true, default: null, min: 0, max: 99999.99, places: 2, filter: true },
    { name: 'length_unit', column: 'length_unit', kind: 'choice', choices: CABLE_LENGTH_UNITS, nullable: true, default: null, filter: true },
    descriptionField,
    commentsField,
  ],
  ordering: ['id'],
  search: ['label', 'description', 'comments'],
  brief: ['label', 'description'],
  taggable: true,
  display: (r) => r.label || `#${r.id}`,
  check: async (ctx, values, existing, errors) => {
    await (await paths()).checkCable(ctx, values, existing, errors);
    if ((values.length_unit ?? existing?.length_unit ?? null) === null && (values.length ?? existing?.length ?? null) !== null && !errors.length_unit) {
      (errors.length_unit ??= []).push('Must specify a unit when setting a cable length');
    }
  },
  afterSave: async (w, id, row, existing) => {
    if (!existing || JSON.stringify(existing.a_terminations) !== JSON.stringify(row.a_terminations) || JSON.stringify(existing.b_terminations) !== JSON.stringify(row.b_terminations)) await (await paths()).saveTerminations(w, id, row);
  },
  beforeDelete: async (w, row) => (await paths()).clearTerminations(w, row.id),
  async enrich(ctx, rows, outs) {
    const { briefsOf, key } = await paths();
    const all = rows.flatMap((r) => [...((r.a_terminations ?? []) as Termination[]), ...((r.b_terminations ?? []) as Termination[])]);
    const briefs = await briefsOf(ctx, all);
    const shown = (list: Termination[]) => list.map((t) => ({ object_type: t.object_type, object_id: t.object_id, object: briefs.get(key(t)) ?? null }));
    rows.forEach((r, i) => {
      outs[i]!.a_terminations = shown(r.a_terminations ?? []);
      outs[i]!.b_terminations = shown(r.b_terminations ?? []);
      if (outs[i]!.type === null) outs[i]!.type = '';
    });
  },
  extraFilters: [
    ...tenancyFilters,
    { name: 'termination_a_type', kind: 'custom' },
    { name: 'termination_a_id', kind: 'custom' },
    { name: 'termination_b_type', kind: 'custom' },
    { name: 'termination_b_id', kind: 'custom' },
    { name: 'device_id', kind: 'custom' },
    { name: 'device', kind: 'custom' },
    { name: 'site_id', kind: 'custom' },
    { name: 'site', kind: 'custom' },
    { name: 'rack_id', kind: 'custom' },
    { name: 'rack', kind: 'custom' },
    { name: 'location_id', kind: 'custom' },
    { name: 'location', kind: 'custom' },
    cableUnterminatedFilter,
    { name: 'interface_id', kind: 'custom' },
    { name: 'consoleport_id', kind: 'custom' },
    { name: 'consoleserverport_id', kind: 'custom' },
    { name: 'powerport_id', kind: 'custom' },
    { name: 'poweroutlet_id', kind: 'custom' },
    { name: 'frontport_id', kind: 'custom' },
    { name: 'rearport_id', kind: 'custom' },
    { name: 'circuittermination_id', kind: 'custom' },
    { name: 'powerfeed_id', kind: 'custom' },
  ],
};

/** SQL of the cabling filters (called from filters.ts's custom filter switch). */
export function cablingFilterSql(m: ModelDef, name: string, vals: string[], ids: number[] | undefined): ReturnType<typeof sql> | 'bad' | undefined {
  const idCol = sql.ref(`${m.table}.id`);
  const v = vals[0]!.trim().toLowerCase();
  const truth = ['true', '1', 't', 'yes', 'on'].includes(v) ? true : ['false', '0', 'f', 'no', 'off'].includes(v) ? false : undefined;
  if (name === 'cabled' || name === 'occupied') {
    if (truth === undefined) return 'bad';
    const cabled = sql`${sql.ref(`${m.table}.cable_id`)} is not null`;
    const cond = name === 'occupied' ? sql`(${cabled} or ${sql.ref(`${m.table}.mark_connected`)} = ${sql.lit(true)})` : cabled;
    return truth ? cond : sql`not ${cond}`;
  }
  if (name === 'cable_end') return sql`${sql.ref(`${m.table}.cable_end`)} in (${sql.join(vals.map((x) => x.trim().toUpperCase()))})`;
  if (m.key !== 'cable') return undefined;
  const term = (cond: ReturnType<typeof sql>) => sql`${idCol} in (select cable_id from dcim_cabletermination where ${cond})`;
  if (name === 'termination_a_type' || name === 'termination_b_type') return term(sql`cable_end = ${name.includes('_a_') ? 'A' : 'B'} and termination_type in (${sql.join(vals)})`);
  if (!ids) return 'bad';
  if (!ids.length) return sql`1 = 0`;
  if (name === 'termination_a_id' || name === 'termination_b_id') return term(sql`cable_end = ${name.includes('_a_') ? 'A' : 'B'} and termination_id in (${sql.join(ids)})`);
  const component = /^(interface|consoleport|consoleserverport|powerport|poweroutlet|frontport|rearport|circuittermination|powerfeed)_id$/.exec(name)?.[1];
  if (component) return term(sql`termination_type = ${component === 'circuittermination' ? 'circuits.circuittermination' : `dcim.${component}`} and termination_id in (${sql.join(ids)})`);
  const components = ['interface', 'consoleport', 'consoleserverport', 'powerport', 'poweroutlet', 'frontport', 'rearport'];
  const onDevices = (devices: ReturnType<typeof sql>) => term(sql.join(components.map((c) => sql`(termination_type = ${`dcim.${c}`} and termination_id in (select id from ${sql.table(`dcim_${c}`)} where device_id in ${devices}))`), sql` or `));
  if (name === 'device_id') return onDevices(sql`(${sql.join(ids)})`);
  // A termination's site, rack and location are its device's (NetBox's cached _site/_rack/_location of device components).
  if (name === 'site_id' || name === 'rack_id' || name === 'location_id') return onDevices(sql`(select id from dcim_device where ${sql.ref(name)} in (${sql.join(ids)}))`);
  return undefined;
}

export const CABLING_MODELS = [consolePort, consoleServerPort, powerPort, powerOutlet, rearPort, frontPort, cable];
