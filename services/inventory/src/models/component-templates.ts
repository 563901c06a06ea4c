import { blankColor, powerDrawFields } from './cabling.ts';
import { INTERFACE_TYPES } from './choices.ts';
import { CONSOLE_PORT_TYPES, FEED_LEGS, INTERFACE_POE_MODES, INTERFACE_POE_TYPES, PORT_TYPES, POWER_OUTLET_TYPES, POWER_PORT_TYPES, WIRELESS_ROLES } from './netbox-choices.ts';
import { checkComponentPair, COMPONENT_TEMPLATE_TYPES, componentTypeCondition, enrichInventoryComponent, MAX_DEPTH, parseComponentTemplateType, treeDepths } from './inventory-components.ts';
import { descriptionField, nameField, ref, refFilters } from './tenancy.ts';
import type { ExtraFilter, FieldDef, ModelDef, Row } from './types.ts';

/**
 * NetBox 4.3's device-type component templates (`/api/dcim/<kind>-templates/`): the components a device of the type
 * (or a module of the module type) gets when it is created (see template-instantiation.ts). Templates are
 * change-logged but carry no tags or custom fields (NetBox's ChangeLoggedModel). The modular ones belong to a device
 * type or to a module type, never both, and a name may hold `{module}`, the position of the bay a module goes into.
 */

type Errors = Record<string, string[]>;

const pick = (values: Row, existing: Row | null, column: string) => (column in values ? values[column] : (existing?.[column] ?? null));
const label: FieldDef = { name: 'label', column: 'label', kind: 'char', blank: true, maxLength: 64, default: '', filter: true };
const deviceTypeRef: FieldDef = ref('device_type', 'devicetype');
const moduleTypeRef: FieldDef = ref('module_type', 'moduletype');
/** ComponentTemplateModel.__str__: the name, with the label in brackets when there is one. */
const templateDisplay = (r: Row) => (r.label ? `${r.name} (${r.label})` : String(r.name));
const typeOf = (choices: FieldDef['choices'], required = false): FieldDef =>
  required
    ? { name: 'type', column: 'type', kind: 'choice', choices, required: true, filter: true }
    : { name: 'type', column: 'type', kind: 'choice', choices, nullable: true, blank: true, default: null, filter: true };

/** NetBox's WIRELESS_IFACE_TYPES: the only interface types that take a wireless role. */
const WIRELESS_IFACE_TYPES = new Set(['ieee802.11a', 'ieee802.11g', 'ieee802.11n', 'ieee802.11ac', 'ieee802.11ad', 'ieee802.11ax', 'ieee802.11ay', 'ieee802.11be', 'ieee802.15.1', 'ieee802.15.4', 'other-wireless', 'gsm', 'cdma', 'lte', '4g', '5g']);

/** ComponentTemplateModel.clean() and ModularComponentTemplateModel.clean(), in their order. */
function cleanOwner(modular: boolean) {
  return (values: Row, existing: Row | null, errors: Errors) => {
    if (existing && 'device_type_id' in values && String(values.device_type_id) !== String(existing.device_type_id)) {
      return void (errors.device_type ??= []).push('Component templates cannot be moved to a different device type.');
    }
    if (!modular) return;
    const dt = pick(values, existing, 'device_type_id');
    const mt = pick(values, existing, 'module_type_id');
    if (dt !== null && mt !== null) (errors.non_field_errors ??= []).push('A component template cannot be associated with both a device type and a module type.');
    else if (dt === null && mt === null) (errors.non_field_errors ??= []).push('A component template must be associated with either a device type or a module type.');
  };
}

/** The owner filters: `device_type_id`, and `module_type_id` for the modular templates (DeviceTypeComponentFilterSet). */
const ownerFilters = (modular: boolean): ExtraFilter[] => [
  { name: 'device_type_id', kind: 'fk_id', column: 'device_type_id', model: 'devicetype' },
  ...(modular ? [{ name: 'module_type_id', kind: 'fk_id', column: 'module_type_id', model: 'moduletype' } as ExtraFilter] : []),
];

/** A template's sibling (power port, rear port, bridge) must have the same owner: a message, or undefined. */
async function sameOwner(db: any, table: string, id: unknown, values: Row, existing: Row | null): Promise<{ row: Row; owner?: 'device type' | 'module type' } | undefined> {
  if (id === null || id === undefined) return undefined;
  const row = await db.selectFrom(table).selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) return undefined;
  const dt = pick(values, existing, 'device_type_id');
  const mt = pick(values, existing, 'module_type_id');
  if (dt !== null && String(row.device_type_id) !== String(dt)) return { row, owner: 'device type' };
  if (mt !== null && String(row.module_type_id) !== String(mt)) return { row, owner: 'module type' };
  return { row };
}

/** Clears inventory item templates' assignment to a template that goes (the generic relation has no foreign key). */
async function unassignInventoryTemplates(w: { trx: any }, objectType: string, id: number): Promise<void> {
  await w.trx.updateTable('dcim_inventoryitemtemplate').set({ component_type: null, component_id: null }).where('component_type', '=', objectType).where('component_id', '=', id).execute();
}

function template(key: string, path: string, title: string, verboseName: string, fields: FieldDef[], opts: Partial<ModelDef> & { modular?: boolean; after?: FieldDef[] } = {}): ModelDef {
  const { modular = true, after = [], extraFilters = [], ...rest } = opts;
  const objectType = `dcim.${key}`;
  return {
    key,
    app: 'dcim',
    path,
    table: `dcim_${key}`,
    objectType,
    docsTag: 'dcim-templates',
    verboseName,
    title,
    naturalName: true,
    fields: [modular ? deviceTypeRef : { ...deviceTypeRef, nullable: false, default: undefined, required: true }, ...(modular ? [moduleTypeRef] : []), nameField(64), label, ...fields, descriptionField, ...after],
    uniqueTogether: modular ? [['device_type', 'name'], ['module_type', 'name']] : [['device_type', 'name']],
    ordering: modular ? ['device_type', 'module_type', 'name'] : ['device_type', 'name'],
    search: ['name', 'description'],
    brief: ['name', 'description'],
    taggable: false,
    display: templateDisplay,
    clean: cleanOwner(modular),
    extraFilters: [...ownerFilters(modular), ...extraFilters],
    ...(COMPONENT_TEMPLATE_TYPES.includes(objectType) ? { beforeDelete: (w: any, row: Row) => unassignInventoryTemplates(w, objectType, Number(row.id)) } : {}),
    ...rest,
  };
}

export const consolePortTemplate = template('consoleporttemplate', 'console-port-templates', 'ConsolePortTemplate', 'console port template', [typeOf(CONSOLE_PORT_TYPES)]);
export const consoleServerPortTemplate = template('consoleserverporttemplate', 'console-server-port-templates', 'ConsoleServerPortTemplate', 'console server port template', [typeOf(CONSOLE_PORT_TYPES)]);

export const powerPortTemplate = template(
  'powerporttemplate',
  'power-port-templates',
  'PowerPortTemplate',
  'power port template',
  [
    typeOf(POWER_PORT_TYPES),
    ...powerDrawFields,
  ],
  {
    setNull: [{ model: 'poweroutlettemplate', column: 'power_port_id' }],
    clean(values, existing, errors) {
      cleanOwner(true)(values, existing, errors);
      if (Object.keys(errors).length) return;
      const max = pick(values, existing, 'maximum_draw');
      const alloc = pick(values, existing, 'allocated_draw');
      if (max !== null && alloc !== null && Number(alloc) > Number(max)) (errors.allocated_draw ??= []).push(`Allocated draw cannot exceed the maximum draw (${max}W).`);
    },
  },
);

export const powerOutletTemplate = template(
  'poweroutlettemplate',
  'power-outlet-templates',
  'PowerOutletTemplate',
  'power outlet template',
  [typeOf(POWER_OUTLET_TYPES), ref('power_port', 'powerporttemplate'), { name: 'feed_leg', column: 'feed_leg', kind: 'choice', choices: FEED_LEGS, nullable: true, blank: true, default: null, filter: true }],
  {
    extraFilters: [{ name: 'power_port_id', kind: 'fk_id', column: 'power_port_id', model: 'powerporttemplate' }],
    async check(ctx, values, existing, errors) {
      const hit = await sameOwner(ctx.db, 'dcim_powerporttemplate', pick(values, existing, 'power_port_id'), values, existing);
      if (hit?.owner) (errors.non_field_errors ??= []).push(`Parent power port (${templateDisplay(hit.row)}) must belong to the same ${hit.owner}`);
    },
  },
);

export const interfaceTemplate = template(
  'interfacetemplate',
  'interface-templates',
  'InterfaceTemplate',
  'interface template',
  [
    typeOf(INTERFACE_TYPES, true),
    { name: 'enabled', column: 'enabled', kind: 'boolean', default: true, filter: true },
    { name: 'mgmt_only', column: 'mgmt_only', kind: 'boolean', default: false, filter: true, label: 'Management only' },
  ],
  {
    after: [
      ref('bridge', 'interfacetemplate', { label: 'Bridge interface' }),
      { name: 'poe_mode', column: 'poe_mode', kind: 'choice', choices: INTERFACE_POE_MODES, nullable: true, blank: true, default: null, filter: true, label: 'PoE mode' },
      { name: 'poe_type', column: 'poe_type', kind: 'choice', choices: INTERFACE_POE_TYPES, nullable: true, blank: true, default: null, filter: true, label: 'PoE type' },
      { name: 'rf_role', column: 'rf_role', kind: 'choice', choices: WIRELESS_ROLES, nullable: true, blank: true, default: null, filter: true, label: 'Wireless role' },
    ],
    extraFilters: [{ name: 'bridge_id', kind: 'fk_id', column: 'bridge_id', model: 'interfacetemplate' }],
    setNull: [{ model: 'interfacetemplate', column: 'bridge_id' }],
    clean(values, existing, errors) {
      cleanOwner(true)(values, existing, errors);
      if (Object.keys(errors).length) return;
      const bridge = pick(values, existing, 'bridge_id');
      if (existing && bridge !== null && Number(bridge) === Number(existing.id)) return void (errors.bridge ??= []).push('An interface cannot be bridged to itself.');
      const role = pick(values, existing, 'rf_role');
      if (role && !WIRELESS_IFACE_TYPES.has(String(pick(values, existing, 'type')))) (errors.rf_role ??= []).push('Wireless role may be set only on wireless interfaces.');
    },
    async check(ctx, values, existing, errors) {
      const hit = await sameOwner(ctx.db, 'dcim_interfacetemplate', pick(values, existing, 'bridge_id'), values, existing);
      if (hit?.owner) (errors.bridge ??= []).push(`Bridge interface (${templateDisplay(hit.row)}) must belong to the same ${hit.owner}`);
    },
  },
);

export const rearPortTemplate = template('rearporttemplate', 'rear-port-templates', 'RearPortTemplate', 'rear port template', [
  typeOf(PORT_TYPES, true),
  blankColor,
  { name: 'positions', column: 'positions', kind: 'integer', default: 1, min: 1, max: 1024, filter: true },
]);
rearPortTemplate.cascade = [{ model: 'frontporttemplate', column: 'rear_port_id' }];

export const frontPortTemplate = template(
  'frontporttemplate',
  'front-port-templates',
  'FrontPortTemplate',
  'front port template',
  [
    typeOf(PORT_TYPES, true),
    blankColor,
    { name: 'rear_port', column: 'rear_port_id', kind: 'fk', fk: 'rearporttemplate', required: true },
    { name: 'rear_port_position', column: 'rear_port_position', kind: 'integer', default: 1, min: 1, max: 1024, filter: true },
  ],
  {
    uniqueTogether: [['device_type', 'name'], ['module_type', 'name'], ['rear_port', 'rear_port_position']],
    extraFilters: [{ name: 'rear_port_id', kind: 'fk_id', column: 'rear_port_id', model: 'rearporttemplate' }],
    async check(ctx, values, existing, errors) {
      const hit = await sameOwner(ctx.db, 'dcim_rearporttemplate', pick(values, existing, 'rear_port_id'), values, existing);
      if (!hit) return;
      if (hit.owner) return void (errors.non_field_errors ??= []).push(`Rear port (${templateDisplay(hit.row)}) must belong to the same ${hit.owner}`);
      const pos = Number(pick(values, existing, 'rear_port_position') ?? 1);
      if (pos > Number(hit.row.positions)) {
        (errors.non_field_errors ??= []).push(`Invalid rear port position (${pos}); rear port ${hit.row.name} has only ${Number(hit.row.positions)} positions`);
      }
    },
  },
);

export const moduleBayTemplate = template('modulebaytemplate', 'module-bay-templates', 'ModuleBayTemplate', 'module bay template', [
  { name: 'position', column: 'position', kind: 'char', blank: true, maxLength: 30, default: '', filter: true },
]);

export const inventoryItemTemplate = template(
  'inventoryitemtemplate',
  'inventory-item-templates',
  'InventoryItemTemplate',
  'inventory item template',
  [],
  {
    modular: false,
    after: [],
    uniqueTogether: [['device_type', 'parent', 'name']],
    ordering: ['device_type', 'parent', 'name'],
    search: ['name', 'part_id', 'description'],
    brief: ['name', 'description', '_depth'],
    extraFilters: [
      { name: 'parent_id', kind: 'fk_id', column: 'parent_id', model: 'inventoryitemtemplate' },
      ...refFilters('manufacturer', 'manufacturer'),
      ...refFilters('role', 'inventoryitemrole'),
      { name: 'component_type', kind: 'custom', where: async (_ctx, vals) => componentTypeCondition('dcim_inventoryitemtemplate', vals) },
      { name: 'component_id', kind: 'int', column: 'component_id' },
    ],
    cascade: [{ model: 'inventoryitemtemplate', column: 'parent_id' }],
    enrich: enrichInventoryComponent,
    // NetBox's serializer gives the parent as its id (a PrimaryKeyRelatedField), not nested.
    represent: (row, out) => ({ ...out, parent: row.parent_id ?? null }),
    async check(ctx, values, existing, errors) {
      const parent = pick(values, existing, 'parent_id');
      if (parent !== null && 'parent_id' in values) {
        // An MPTT tree: the parent is neither the template itself nor one below it, and belongs to the same device type
        // (instantiation finds the parent item by name on the new device).
        let at: unknown = parent;
        for (let level = 0; at !== null && at !== undefined && level < MAX_DEPTH; level++) {
          if (existing && Number(at) === Number(existing.id)) return void (errors.parent ??= []).push('Cannot assign self or child as parent.');
          at = (await ctx.db.selectFrom('dcim_inventoryitemtemplate').select('parent_id').where('id', '=', at).executeTakeFirst())?.parent_id;
        }
        const p = await ctx.db.selectFrom('dcim_inventoryitemtemplate').select('device_type_id').where('id', '=', parent).executeTakeFirst();
        if (p && String(p.device_type_id) !== String(pick(values, existing, 'device_type_id'))) (errors.parent ??= []).push('The parent inventory item template must belong to the same device type.');
      }
      checkComponentPair(values, existing, errors);
    },
  },
);
// Fields in NetBox's serializer order: device_type, parent, name, label, role, manufacturer, part_id, description, component_type, component_id.
inventoryItemTemplate.fields = [
  inventoryItemTemplate.fields[0]!,
  ref('parent', 'inventoryitemtemplate'),
  nameField(64),
  label,
  ref('role', 'inventoryitemrole'),
  ref('manufacturer', 'manufacturer'),
  { name: 'part_id', column: 'part_id', kind: 'char', blank: true, maxLength: 50, default: '', filter: true, label: 'Part ID' },
  descriptionField,
  { name: 'component_type', column: 'component_type', kind: 'char', nullable: true, default: null, maxLength: 100, parse: parseComponentTemplateType },
  { name: 'component_id', column: 'component_id', kind: 'integer', nullable: true, default: null, min: 0, max: 2 ** 53 - 1 },
];
// `_depth`: the level in the tree (NetBox's MPTT level), counted through the parents; last, as NetBox's serializer has it.
inventoryItemTemplate.counts = { _depth: null };
inventoryItemTemplate.countsCustom = { _depth: (ctx, ids) => treeDepths(ctx.db, 'dcim_inventoryitemtemplate', ids) };

export const COMPONENT_TEMPLATE_MODELS = [
  consolePortTemplate,
  consoleServerPortTemplate,
  powerPortTemplate,
  powerOutletTemplate,
  interfaceTemplate,
  rearPortTemplate,
  frontPortTemplate,
  moduleBayTemplate,
  inventoryItemTemplate,
];
