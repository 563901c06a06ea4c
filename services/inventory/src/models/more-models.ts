import { sql } from 'kysely';
import { fail } from './field-problem.ts';
import { blankColor, cabledFilters, cabledObject, deviceComponentFilters } from './cabling.ts';
import { INVENTORY_ITEM_STATUS, MODULE_AIRFLOW, MODULE_STATUS, POWER_FEED_PHASE, POWER_FEED_STATUS, POWER_FEED_SUPPLY, POWER_FEED_TYPES } from './netbox-choices.ts';
import { commentsField, descriptionField, nameField, nestedGroup, ref, refFilters, siteTreeFilters, slugField, tenancyFilters, treeFilters } from './tenancy.ts';
import { contactCounts, contactGroupFilters } from './contact-assignments.ts';
import type { FieldDef, ModelDef } from './types.ts';
import { checkWeightUnit, weightFields } from './dcim.ts';
import { linkFilters } from './link-filters.ts';
import { templatePresenceFilters } from './template-filters.ts';
import { checkComponentPair, checkInventoryComponentDevice, componentTypeCondition, enrichInventoryComponent, parseComponentType, treeDepths } from './inventory-components.ts';
import { checkModuleComponentNames, instantiateModuleComponents } from './template-instantiation.ts';
import { availablePower } from './path-filters.ts';

/**
 * Further NetBox models automation reaches: route targets, tenancy contacts, power panels and feeds,
 * module types, module bays and modules, inventory item roles and items (NetBox 4.3's fields; what is
 * not modelled is listed in `unmodelled`, read-only and refused when written).
 */

const char = (name: string, max: number, extra: Partial<FieldDef> = {}): FieldDef => ({ name, column: name, kind: 'char', blank: true, maxLength: max, default: '', filter: true, ...extra });
const uniqueAssetTag: FieldDef = { name: 'asset_tag', column: 'asset_tag', kind: 'char', nullable: true, blank: true, maxLength: 50, default: null, unique: true, filter: true };

export const routeTarget: ModelDef = {
  key: 'routetarget',
  app: 'ipam',
  path: 'route-targets',
  table: 'ipam_routetarget',
  objectType: 'ipam.routetarget',
  verboseName: 'route target',
  title: 'RouteTarget',
  fields: [nameField(21, { unique: true }), ref('tenant', 'tenant'), descriptionField, commentsField],
  ordering: ['name'],
  search: ['name', 'description', 'comments'],
  brief: ['name', 'description'],
  taggable: true,
  display: (r) => r.name,
  extraFilters: [
    ...tenancyFilters,
    ...linkFilters('importing_vrf', { table: 'ipam_routetarget', link: 'ipam_vrf_import_targets', self: 'routetarget_id', other: 'vrf_id', target: 'ipam_vrf' }, 'rd'),
    ...linkFilters('exporting_vrf', { table: 'ipam_routetarget', link: 'ipam_vrf_export_targets', self: 'routetarget_id', other: 'vrf_id', target: 'ipam_vrf' }, 'rd'),
  ],
};

export const contactGroup = nestedGroup('contactgroup', 'tenancy', 'contact-groups', 'tenancy_contactgroup', 'ContactGroup', 'contact group', {
  counts: { contact_count: null },
  // NetBox counts the contacts of the group and of every group below it (add_related_count, cumulative).
  countsCustom: { contact_count: contactCounts },
});
// NetBox 4.3's ContactGroupFilterSet.contact_id: the groups a contact is in.
contactGroup.extraFilters = [
  ...(contactGroup.extraFilters ?? []),
  {
    name: 'contact_id',
    kind: 'custom',
    where: async (ctx, vals, errors) => {
      const bad = vals.find((v) => !/^\d{1,16}$/.test(v.trim()));
      if (bad !== undefined) return void (errors.contact_id = [`Select a valid choice. ${bad} is not one of the available choices.`]);
      const ids = vals.map(Number);
      const found = new Set((await ctx.db.selectFrom('tenancy_contact').select('id').where('id', 'in', ids).execute()).map((r) => Number(r.id)));
      const missing = ids.find((id) => !found.has(id));
      if (missing !== undefined) return void (errors.contact_id = [`Select a valid choice. ${missing} is not one of the available choices.`]);
      return sql`tenancy_contactgroup.id in (select contactgroup_id from tenancy_contact_groups where contact_id in (${sql.join(ids)}))`;
    },
  },
];

export const contactRole: ModelDef = {
  key: 'contactrole',
  app: 'tenancy',
  path: 'contact-roles',
  table: 'tenancy_contactrole',
  objectType: 'tenancy.contactrole',
  verboseName: 'contact role',
  title: 'ContactRole',
  fields: [nameField(100, { unique: true }), slugField({ unique: true }), descriptionField],
  ordering: ['name'],
  search: ['name', 'slug', 'description'],
  brief: ['name', 'slug', 'description'],
  taggable: true,
  display: (r) => r.name,
  protectedBy: [{ model: 'contactassignment', column: 'role_id' }],
};

export const contact: ModelDef = {
  key: 'contact',
  app: 'tenancy',
  path: 'contacts',
  table: 'tenancy_contact',
  objectType: 'tenancy.contact',
  verboseName: 'contact',
  title: 'Contact',
  fields: [
    // NetBox 4.3: a contact sits in any number of groups (nested briefs; written as ids).
    { name: 'groups', column: '', kind: 'm2m', fk: 'contactgroup', default: undefined, through: { table: 'tenancy_contact_groups', column: 'contact_id', target: 'contactgroup_id' } },
    nameField(100),
    char('title', 100),
    char('phone', 50),
    { name: 'email', column: 'email', kind: 'char', blank: true, maxLength: 254, default: '', filter: true, parse: (v) => {
      if (typeof v !== 'string' || (v !== '' && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v))) fail('Enter a valid email address.');
      return v;
    } },
    char('address', 200),
    char('link', 200),
    descriptionField,
    commentsField,
  ],
  extraFilters: contactGroupFilters('tenancy_contact.id'),
  protectedBy: [{ model: 'contactassignment', column: 'contact_id' }],
  ordering: ['name'],
  search: ['name', 'title', 'phone', 'email', 'address', 'link', 'description', 'comments'],
  brief: ['name', 'description'],
  taggable: true,
  display: (r) => r.name,
};

export const powerPanel: ModelDef = {
  key: 'powerpanel',
  app: 'dcim',
  path: 'power-panels',
  table: 'dcim_powerpanel',
  objectType: 'dcim.powerpanel',
  docsTag: 'dcim-cabling',
  verboseName: 'power panel',
  title: 'PowerPanel',
  fields: [{ name: 'site', column: 'site_id', kind: 'fk', fk: 'site', required: true }, ref('location', 'location'), nameField(100), descriptionField, commentsField],
  uniqueTogether: [['site', 'name']],
  ordering: ['site', 'name'],
  search: ['name', 'description', 'comments'],
  brief: ['name', 'description', 'powerfeed_count'],
  taggable: true,
  display: (r) => r.name,
  counts: { powerfeed_count: { model: 'powerfeed', column: 'power_panel_id' } },
  extraFilters: [...refFilters('site', 'site'), ...siteTreeFilters(), { name: 'location_id', kind: 'fk_id', column: 'location_id', model: 'location' }],
  protectedBy: [{ model: 'powerfeed', column: 'power_panel_id' }],
};

const feedHooks = cabledObject('dcim.powerfeed', true);

export const powerFeed: ModelDef = {
  key: 'powerfeed',
  app: 'dcim',
  path: 'power-feeds',
  table: 'dcim_powerfeed',
  objectType: 'dcim.powerfeed',
  docsTag: 'dcim-cabling',
  verboseName: 'power feed',
  title: 'PowerFeed',
  fields: [
    { name: 'power_panel', column: 'power_panel_id', kind: 'fk', fk: 'powerpanel', required: true },
    ref('rack', 'rack'),
    nameField(100),
    { name: 'status', column: 'status', kind: 'choice', choices: POWER_FEED_STATUS, default: 'active', filter: true },
    { name: 'type', column: 'type', kind: 'choice', choices: POWER_FEED_TYPES, default: 'primary', filter: true },
    { name: 'supply', column: 'supply', kind: 'choice', choices: POWER_FEED_SUPPLY, default: 'ac', filter: true },
    { name: 'phase', column: 'phase', kind: 'choice', choices: POWER_FEED_PHASE, default: 'single-phase', filter: true },
    { name: 'voltage', column: 'voltage', kind: 'integer', default: 120, min: -32768, max: 32767, filter: true },
    { name: 'amperage', column: 'amperage', kind: 'integer', default: 20, min: 1, max: 32767, filter: true },
    { name: 'max_utilization', column: 'max_utilization', kind: 'integer', default: 80, min: 1, max: 100, filter: true, label: 'Max utilization (%)' },
    { name: 'mark_connected', column: 'mark_connected', kind: 'boolean', default: false, filter: true },
    descriptionField,
    ref('tenant', 'tenant'),
    commentsField,
  ],
  uniqueTogether: [['power_panel', 'name']],
  ordering: ['power_panel', 'name'],
  search: ['name', 'description', 'comments'],
  brief: ['name', 'cable', 'description', '_occupied'],
  taggable: true,
  display: (r) => r.name,
  ...feedHooks,
  // NetBox's available_power: |volts| × amps × max utilisation, × 1.732 for three-phase, rounded as Python's round().
  represent(row, out) {
    return { ...out, available_power: availablePower(row) };
  },
  extraFilters: [
    ...refFilters('power_panel', 'powerpanel', 'name'),
    { name: 'rack_id', kind: 'fk_id', column: 'rack_id', model: 'rack' },
    // The site of the feed's power panel (NetBox: power_panel__site).
    ...refFilters('site', 'site', 'slug', 'power_panel_id').map((f) => ({ ...f, through: [{ table: 'dcim_powerpanel', column: 'site_id' }] })),
    ...siteTreeFilters('power_panel_id', [{ table: 'dcim_powerpanel', column: 'site_id' }]),
    ...tenancyFilters,
    ...cabledFilters,
  ],
};

export const moduleType: ModelDef = {
  key: 'moduletype',
  app: 'dcim',
  path: 'module-types',
  table: 'dcim_moduletype',
  objectType: 'dcim.moduletype',
  docsTag: 'dcim-modules',
  verboseName: 'module type',
  title: 'ModuleType',
  fields: [
    ref('profile', 'moduletypeprofile'),
    { name: 'manufacturer', column: 'manufacturer_id', kind: 'fk', fk: 'manufacturer', required: true },
    { name: 'model', column: 'model', kind: 'char', required: true, maxLength: 100, filter: true },
    char('part_number', 50),
    { name: 'airflow', column: 'airflow', kind: 'choice', choices: MODULE_AIRFLOW, nullable: true, default: null, filter: true },
    ...weightFields,
    descriptionField,
    commentsField,
  ],
  clean: (values, existing, errors) => checkWeightUnit(values, existing, errors),
  // The attributes a profile's schema describes are not modelled.
  unmodelled: { attributes: null },
  uniqueTogether: [['manufacturer', 'model']],
  ordering: ['manufacturer', 'model'],
  search: ['model', 'part_number', 'description', 'comments'],
  brief: ['profile', 'manufacturer', 'model', 'description'],
  taggable: true,
  display: (r) => r.model,
  extraFilters: [
    ...refFilters('manufacturer', 'manufacturer'),
    // The profile by id or by name (ModuleTypeFilterSet).
    ...refFilters('profile', 'moduletypeprofile', 'name'),
    ...templatePresenceFilters('module_type_id', false),
  ],
  protectedBy: [{ model: 'module', column: 'module_type_id' }],
  // Its component templates go with it (ModularComponentTemplateModel.module_type: CASCADE); front ports before rear ports.
  cascade: ['frontporttemplate', 'consoleporttemplate', 'consoleserverporttemplate', 'powerporttemplate', 'poweroutlettemplate', 'interfacetemplate', 'rearporttemplate', 'modulebaytemplate'].map((model) => ({ model, column: 'module_type_id' })),
};

export const moduleBay: ModelDef = {
  key: 'modulebay',
  app: 'dcim',
  path: 'module-bays',
  table: 'dcim_modulebay',
  objectType: 'dcim.modulebay',
  docsTag: 'dcim-modules',
  verboseName: 'module bay',
  title: 'ModuleBay',
  naturalName: true,
  fields: [{ name: 'device', column: 'device_id', kind: 'fk', fk: 'device', required: true }, ref('module', 'module'), nameField(64), char('label', 64), char('position', 30), descriptionField],
  uniqueTogether: [['device', 'name']],
  ordering: ['device', 'name'],
  search: ['name', 'label', 'description'],
  // NetBox's brief has installed_module too; here it is on the full form only (a module's brief nests its bay: no cycle).
  brief: ['name', 'description'],
  taggable: true,
  display: (r) => r.name,
  extraRefs: { installed_module: { model: 'module', column: 'installed_module_id' } },
  represent(_row, out, refs) {
    return { ...out, installed_module: refs.installed_module ?? null };
  },
  extraFilters: [
    ...deviceComponentFilters,
    { name: 'installed_module_id', kind: 'fk_id', column: 'installed_module_id', model: 'module' },
    { name: 'module_id', kind: 'fk_id', column: 'module_id', model: 'module' },
    { name: 'device_status', kind: 'custom' },
    // NetBox 4.3 nests a module's bays under the bay the module is installed in (MPTT parent).
    {
      name: 'parent_id',
      kind: 'custom',
      where: async (ctx, vals, errors) => {
        const bad = vals.find((v) => !/^\d{1,16}$/.test(v.trim()));
        const ids = bad === undefined ? [...new Set(vals.map((v) => Number(v.trim())))] : [];
        const found = ids.length ? new Set((await ctx.db.selectFrom('dcim_modulebay').select('id').where('id', 'in', ids).execute()).map((r) => Number(r.id))) : new Set<number>();
        const missing = bad ?? ids.find((id) => !found.has(id));
        if (missing !== undefined) return void (errors.parent_id ??= []).push(`Select a valid choice. ${String(missing).slice(0, 100)} is not one of the available choices.`);
        return sql`dcim_modulebay.module_id in (select id from dcim_module where module_bay_id in (${sql.join(ids)}))`;
      },
    },
  ],
  // The module in the bay goes with it (Module.module_bay: CASCADE), so a module's nested modules go with the module.
  cascade: [{ model: 'module', column: 'module_bay_id' }],
};

export const module: ModelDef = {
  key: 'module',
  app: 'dcim',
  path: 'modules',
  table: 'dcim_module',
  objectType: 'dcim.module',
  docsTag: 'dcim-modules',
  verboseName: 'module',
  title: 'Module',
  fields: [
    { name: 'device', column: 'device_id', kind: 'fk', fk: 'device', required: true },
    { name: 'module_bay', column: 'module_bay_id', kind: 'fk', fk: 'modulebay', required: true, unique: true },
    { name: 'module_type', column: 'module_type_id', kind: 'fk', fk: 'moduletype', required: true },
    { name: 'status', column: 'status', kind: 'choice', choices: MODULE_STATUS, default: 'active', filter: true },
    char('serial', 50),
    uniqueAssetTag,
    descriptionField,
    commentsField,
  ],
  ordering: ['device', 'module_bay', 'id'],
  search: ['serial', 'asset_tag', 'description', 'comments'],
  brief: ['device', 'module_bay', 'module_type', 'description'],
  taggable: true,
  displayNeeds: ['module_bay', 'module_type'],
  display: (r, refs) => `${(refs.module_bay as { name?: string } | null)?.name ?? r.module_bay_id}: ${(refs.module_type as { model?: string } | null)?.model ?? r.module_type_id} (${r.id})`,
  check: async (ctx, values, existing, errors) => {
    const bay = values.module_bay_id ?? existing?.module_bay_id;
    const dev = values.device_id ?? existing?.device_id;
    const row = await ctx.db.selectFrom('dcim_modulebay').select('device_id').where('id', '=', bay).executeTakeFirst();
    if (row && Number(row.device_id) !== Number(dev)) (errors.module_bay ??= []).push(`Module must be installed within a module bay belonging to the assigned device (${dev}).`);
    if (!Object.keys(errors).length) await checkModuleComponentNames(ctx, values, existing, errors);
  },
  afterSave: async (w, id, row, existing) => {
    if (existing && existing.module_bay_id !== row.module_bay_id) await w.trx.updateTable('dcim_modulebay').set({ installed_module_id: null }).where('id', '=', existing.module_bay_id).execute();
    await w.trx.updateTable('dcim_modulebay').set({ installed_module_id: id }).where('id', '=', row.module_bay_id).execute();
    // Module.save(): a newly installed module gets its type's components.
    if (!existing) await instantiateModuleComponents(w, id, row);
  },
  beforeDelete: async (w, row) => {
    await w.trx.updateTable('dcim_modulebay').set({ installed_module_id: null }).where('id', '=', row.module_bay_id).execute();
  },
  // A module's components go with it (ModularComponentModel.module: CASCADE).
  cascade: ['interface', 'consoleport', 'consoleserverport', 'powerport', 'poweroutlet', 'frontport', 'rearport', 'modulebay'].map((model) => ({ model, column: 'module_id' })),
  extraFilters: [
    { name: 'device_id', kind: 'fk_id', column: 'device_id', model: 'device' },
    { name: 'device', kind: 'fk_slug', column: 'device_id', model: 'device', attribute: 'name' },
    { name: 'module_bay_id', kind: 'fk_id', column: 'module_bay_id', model: 'modulebay' },
    ...refFilters('module_type', 'moduletype', 'model'),
    // Where the module's device is (NetBox: device__site, device__location, device__rack) and its type's manufacturer.
    ...refFilters('site', 'site', 'slug', 'device_id').map((f) => ({ ...f, through: [{ table: 'dcim_device', column: 'site_id' }] })),
    ...siteTreeFilters('device_id', [{ table: 'dcim_device', column: 'site_id' }]),
    ...treeFilters('location', 'location', 'device_id', [{ table: 'dcim_device', column: 'location_id' }]),
    ...refFilters('rack', 'rack', 'name', 'device_id').map((f) => ({ ...f, through: [{ table: 'dcim_device', column: 'rack_id' }] })),
    ...refFilters('manufacturer', 'manufacturer', 'slug', 'module_type_id').map((f) => ({ ...f, through: [{ table: 'dcim_moduletype', column: 'manufacturer_id' }] })),
  ],
};

export const inventoryItemRole: ModelDef = {
  key: 'inventoryitemrole',
  app: 'dcim',
  path: 'inventory-item-roles',
  table: 'dcim_inventoryitemrole',
  objectType: 'dcim.inventoryitemrole',
  docsTag: 'dcim-modules',
  verboseName: 'inventory item role',
  title: 'InventoryItemRole',
  fields: [nameField(100, { unique: true }), slugField({ unique: true }), { ...blankColor, kind: 'color', default: '9e9e9e' }, descriptionField],
  ordering: ['name'],
  search: ['name', 'slug', 'description'],
  brief: ['name', 'slug', 'description', 'inventoryitem_count'],
  taggable: true,
  display: (r) => r.name,
  counts: { inventoryitem_count: { model: 'inventoryitem', column: 'role_id' } },
  setNull: [{ model: 'inventoryitem', column: 'role_id' }],
  protectedBy: [{ model: 'inventoryitemtemplate', column: 'role_id' }],
};

export const inventoryItem: ModelDef = {
  key: 'inventoryitem',
  app: 'dcim',
  path: 'inventory-items',
  table: 'dcim_inventoryitem',
  objectType: 'dcim.inventoryitem',
  docsTag: 'dcim-modules',
  verboseName: 'inventory item',
  title: 'InventoryItem',
  naturalName: true,
  fields: [
    { name: 'device', column: 'device_id', kind: 'fk', fk: 'device', required: true },
    ref('parent', 'inventoryitem'),
    nameField(64),
    char('label', 64),
    { name: 'status', column: 'status', kind: 'choice', choices: INVENTORY_ITEM_STATUS, default: 'active', filter: true },
    ref('role', 'inventoryitemrole'),
    ref('manufacturer', 'manufacturer'),
    char('part_id', 50, { label: 'Part ID' }),
    char('serial', 50),
    uniqueAssetTag,
    { name: 'discovered', column: 'discovered', kind: 'boolean', default: false, filter: true },
    descriptionField,
    // The assigned component (NetBox's generic relation, limited to the modular components); `component` is its brief.
    { name: 'component_type', column: 'component_type', kind: 'char', nullable: true, default: null, maxLength: 100, parse: parseComponentType },
    { name: 'component_id', column: 'component_id', kind: 'integer', nullable: true, default: null, min: 0, max: 2 ** 53 - 1 },
  ],
  enrich: enrichInventoryComponent,
  // NetBox's serializer gives the parent as its id (a PrimaryKeyRelatedField), not nested.
  represent: (row, out) => ({ ...out, parent: row.parent_id ?? null }),
  // `_depth`: the MPTT level, counted through the parents; last, as NetBox's serializer has it.
  counts: { _depth: null },
  countsCustom: { _depth: (ctx, ids) => treeDepths(ctx.db, 'dcim_inventoryitem', ids) },
  uniqueTogether: [['device', 'parent', 'name']],
  ordering: ['device', 'parent', 'name'],
  search: ['name', 'label', 'serial', 'asset_tag', 'part_id', 'description'],
  brief: ['device', 'name', 'description', '_depth'],
  taggable: true,
  display: (r) => r.name,
  check: async (ctx, values, existing, errors) => {
    checkComponentPair(values, existing, errors);
    if (Object.keys(errors).length) return;
    await checkInventoryComponentDevice(ctx, values, existing, errors);
    if (Object.keys(errors).length) return;
    const parent = 'parent_id' in values ? values.parent_id : existing?.parent_id;
    if (parent === null || parent === undefined) return;
    if (existing && Number(parent) === existing.id) return void (errors.parent ??= []).push('Cannot assign self as parent.');
    const row = await ctx.db.selectFrom('dcim_inventoryitem').select('device_id').where('id', '=', parent).executeTakeFirst();
    const dev = values.device_id ?? existing?.device_id;
    if (row && Number(row.device_id) !== Number(dev)) (errors.parent ??= []).push(`Parent inventory item does not belong to the same device.`);
  },
  extraFilters: [
    ...deviceComponentFilters,
    { name: 'parent_id', kind: 'fk_id', column: 'parent_id', model: 'inventoryitem' },
    ...refFilters('role', 'inventoryitemrole'),
    ...refFilters('manufacturer', 'manufacturer'),
    { name: 'device_status', kind: 'custom' },
    { name: 'component_type', kind: 'custom', where: async (_ctx, vals) => componentTypeCondition('dcim_inventoryitem', vals) },
    { name: 'component_id', kind: 'int', column: 'component_id' },
  ],
  cascade: [{ model: 'inventoryitem', column: 'parent_id' }],
};

export const MORE_MODELS = [routeTarget, contactGroup, contactRole, contact, powerPanel, powerFeed, moduleType, moduleBay, module, inventoryItemRole, inventoryItem];
