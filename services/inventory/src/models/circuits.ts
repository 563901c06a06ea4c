import { blankColor, cabledFilters, cabledObject } from './cabling.ts';
import { fail } from './field-problem.ts';
import { CIRCUIT_STATUS, TERMINATION_SIDES, VC_TERMINATION_ROLES } from './netbox-choices.ts';
import { commentsField, descriptionField, nameField, ref, refFilters, slugField, tenancyFilters, treeFilters } from './tenancy.ts';
import { cachedScopeOf } from './scopes.ts';
import type { Choice, FieldDef, ModelDef } from './types.ts';
import { circuitTerminationFilter } from './count-filters.ts';
import { linkFilter, linkFilters } from './link-filters.ts';

/** NetBox's DistanceUnitChoices (circuit distance). */
const DISTANCE_UNITS: Choice[] = [
  { value: 'km', label: 'Kilometers' },
  { value: 'm', label: 'Meters' },
  { value: 'mi', label: 'Miles' },
  { value: 'ft', label: 'Feet' },
];

/** What a circuit termination may attach to (NetBox 4.2+: any location scope or a provider network). */
const TERMINATION_TYPES: Choice[] = ['dcim.site', 'dcim.location', 'dcim.region', 'dcim.sitegroup', 'circuits.providernetwork'].map((v) => ({ value: v, label: v }));

const colorField: FieldDef = blankColor;

/** A date (`install_date`): `YYYY-MM-DD`, as Django's DateField. */
const dateField = (name: string, label: string): FieldDef => ({
  name,
  column: name,
  kind: 'char',
  nullable: true,
  blank: true,
  default: null,
  maxLength: 10,
  filter: true,
  label,
  parse: (v) => {
    if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(v.trim()) || Number.isNaN(Date.parse(`${v.trim()}T00:00:00Z`)) || new Date(`${v.trim()}T00:00:00Z`).toISOString().slice(0, 10) !== v.trim()) {
      fail('Date has wrong format. Use one of these formats instead: YYYY-MM-DD.');
    }
    return (v as string).trim();
  },
});

function typeModel(key: string, path: string, title: string, verboseName: string, countName: string, countModel: string): ModelDef {
  return {
    key,
    app: 'circuits',
    path,
    table: `circuits_${key}`,
    objectType: `circuits.${key}`,
    verboseName,
    title,
    fields: [nameField(100, { unique: true }), slugField({ unique: true }), colorField, descriptionField],
    ordering: ['name'],
    search: ['name', 'slug', 'description'],
    brief: ['name', 'slug', 'description', countName],
    taggable: true,
    display: (r) => r.name,
    counts: { [countName]: { model: countModel, column: 'type_id' } },
    protectedBy: [{ model: countModel, column: 'type_id' }],
  };
}

export const provider: ModelDef = {
  key: 'provider',
  app: 'circuits',
  path: 'providers',
  table: 'circuits_provider',
  objectType: 'circuits.provider',
  verboseName: 'provider',
  title: 'Provider',
  fields: [
    nameField(100, { unique: true }),
    slugField({ unique: true }),
    descriptionField,
    commentsField,
    { name: 'asns', column: '', kind: 'm2m', fk: 'asn', default: undefined, through: { table: 'circuits_provider_asns', column: 'provider_id', target: 'asn_id' }, label: 'ASNs' },
  ],
  // Provider accounts are not modelled.
  unmodelled: { accounts: [] },
  ordering: ['name'],
  search: ['name', 'slug', 'description', 'comments'],
  brief: ['name', 'slug', 'description', 'circuit_count'],
  taggable: true,
  display: (r) => r.name,
  counts: { circuit_count: { model: 'circuit', column: 'provider_id' } },
  extraFilters: [
    ...linkFilters('asn', { table: 'circuits_provider', link: 'circuits_provider_asns', self: 'provider_id', other: 'asn_id', target: 'ipam_asn' }, 'asn', true),
    // NetBox's circuits__terminations___region / ___site_group / ___site: where the provider's circuits end.
    ...(
      [
        ['region', 'dcim_region', '_region_id', true],
        ['site_group', 'dcim_sitegroup', '_site_group_id', true],
        ['site', 'dcim_site', '_site_id', false],
      ] as const
    ).flatMap(([name, target, column, tree]) => linkFilters(name, { table: 'circuits_provider', link: 'circuits_circuit', self: 'provider_id', other: 'id', target, via: { table: 'circuits_circuittermination', key: 'circuit_id', column, tree } })),
  ],
  protectedBy: [
    { model: 'circuit', column: 'provider_id' },
    { model: 'providernetwork', column: 'provider_id' },
  ],
};

export const providerNetwork: ModelDef = {
  key: 'providernetwork',
  app: 'circuits',
  path: 'provider-networks',
  table: 'circuits_providernetwork',
  objectType: 'circuits.providernetwork',
  verboseName: 'provider network',
  title: 'ProviderNetwork',
  fields: [
    { name: 'provider', column: 'provider_id', kind: 'fk', fk: 'provider', required: true },
    nameField(100),
    { name: 'service_id', column: 'service_id', kind: 'char', blank: true, maxLength: 100, default: '', filter: true, label: 'Service ID' },
    descriptionField,
    commentsField,
  ],
  uniqueTogether: [['provider', 'name']],
  ordering: ['provider', 'name'],
  search: ['name', 'service_id', 'description', 'comments'],
  brief: ['name', 'description'],
  taggable: true,
  display: (r) => r.name,
  extraFilters: refFilters('provider', 'provider'),
  protectedBy: [{ model: 'virtualcircuit', column: 'provider_network_id' }],
};

export const circuitType = typeModel('circuittype', 'circuit-types', 'CircuitType', 'circuit type', 'circuit_count', 'circuit');
export const virtualCircuitType = typeModel('virtualcircuittype', 'virtual-circuit-types', 'VirtualCircuitType', 'virtual circuit type', 'virtual_circuit_count', 'virtualcircuit');

/** NetBox's CircuitFilterSet region/site group (subtrees) and location_id: what its terminations stand in (the cached columns). */
const circuitPlaceFilters = [
  ...linkFilters('region', { table: 'circuits_circuit', link: 'circuits_circuittermination', self: 'circuit_id', other: '_region_id', target: 'dcim_region', tree: true }),
  ...linkFilters('site_group', { table: 'circuits_circuit', link: 'circuits_circuittermination', self: 'circuit_id', other: '_site_group_id', target: 'dcim_sitegroup', tree: true }),
  linkFilter({ name: 'location_id', table: 'circuits_circuit', link: 'circuits_circuittermination', self: 'circuit_id', other: '_location_id', target: 'dcim_location', tree: true }),
];

export const circuit: ModelDef = {
  key: 'circuit',
  app: 'circuits',
  path: 'circuits',
  table: 'circuits_circuit',
  objectType: 'circuits.circuit',
  verboseName: 'circuit',
  title: 'Circuit',
  fields: [
    { name: 'cid', column: 'cid', kind: 'char', required: true, maxLength: 100, filter: true, label: 'Circuit ID' },
    { name: 'provider', column: 'provider_id', kind: 'fk', fk: 'provider', required: true },
    { name: 'type', column: 'type_id', kind: 'fk', fk: 'circuittype', required: true },
    { name: 'status', column: 'status', kind: 'choice', choices: CIRCUIT_STATUS, default: 'active', filter: true },
    ref('tenant', 'tenant'),
    dateField('install_date', 'Installed'),
    dateField('termination_date', 'Terminates'),
    { name: 'commit_rate', column: 'commit_rate', kind: 'integer', nullable: true, default: null, min: 0, max: 2147483647, filter: true, label: 'Commit rate (Kbps)' },
    descriptionField,
    { name: 'distance', column: 'distance', kind: 'decimal', nullable: true, default: null, min: 0, max: 999999.99, places: 2, filter: true },
    { name: 'distance_unit', column: 'distance_unit', kind: 'choice', choices: DISTANCE_UNITS, nullable: true, default: null, filter: true },
    commentsField,
  ],
  unmodelled: { provider_account: null, assignments: [] },
  uniqueTogether: [['provider', 'cid']],
  ordering: ['provider', 'cid'],
  search: ['cid', 'description', 'comments'],
  brief: ['provider', 'cid', 'description'],
  taggable: true,
  display: (r) => r.cid,
  extraFilters: [...refFilters('provider', 'provider'), ...refFilters('type', 'circuittype'), ...tenancyFilters, { name: 'site_id', kind: 'custom' }, { name: 'site', kind: 'custom' }, { name: 'provider_network_id', kind: 'custom' }, circuitTerminationFilter('A'), circuitTerminationFilter('Z'), ...circuitPlaceFilters],
  cascade: [{ model: 'circuittermination', column: 'circuit_id' }],
  extraRefs: {
    termination_a: { model: 'circuittermination', column: 'termination_a_id' },
    termination_z: { model: 'circuittermination', column: 'termination_z_id' },
  },
  represent(_row, out, refs) {
    const { comments, tags, custom_fields, created, last_updated, ...rest } = out;
    return { ...rest, termination_a: refs.termination_a ?? null, termination_z: refs.termination_z ?? null, comments, tags, custom_fields, created, last_updated };
  },
  check: async (_ctx, values, existing, errors) => {
    if ((values.distance_unit ?? existing?.distance_unit ?? null) === null && (values.distance ?? existing?.distance ?? null) !== null) (errors.distance_unit ??= []).push('Must specify a unit when setting a distance');
  },
};

const cableHooks = cabledObject('circuits.circuittermination', false);


export const circuitTermination: ModelDef = {
  key: 'circuittermination',
  app: 'circuits',
  path: 'circuit-terminations',
  table: 'circuits_circuittermination',
  objectType: 'circuits.circuittermination',
  verboseName: 'circuit termination',
  title: 'CircuitTermination',
  fields: [
    { name: 'circuit', column: 'circuit_id', kind: 'fk', fk: 'circuit', required: true },
    { name: 'term_side', column: 'term_side', kind: 'choice', choices: TERMINATION_SIDES, required: true, filter: true, label: 'Termination' },
    { name: 'termination_type', column: 'termination_type', kind: 'objecttype', choices: TERMINATION_TYPES, nullable: true, default: null },
    { name: 'termination_id', column: 'termination_id', kind: 'integer', nullable: true, default: null, min: 0, max: 2 ** 53 - 1 },
    { name: 'port_speed', column: 'port_speed', kind: 'integer', nullable: true, default: null, min: 0, max: 2147483647, filter: true, label: 'Port speed (Kbps)' },
    { name: 'upstream_speed', column: 'upstream_speed', kind: 'integer', nullable: true, default: null, min: 0, max: 2147483647, filter: true, label: 'Upstream speed (Kbps)' },
    { name: 'xconnect_id', column: 'xconnect_id', kind: 'char', blank: true, maxLength: 50, default: '', filter: true, label: 'Cross-connect ID' },
    { name: 'pp_info', column: 'pp_info', kind: 'char', blank: true, maxLength: 100, default: '', filter: true, label: 'Patch panel/port(s)' },
    descriptionField,
    { name: 'mark_connected', column: 'mark_connected', kind: 'boolean', default: false, filter: true },
  ],
  uniqueTogether: [['circuit', 'term_side']],
  ordering: ['circuit', 'term_side'],
  search: ['xconnect_id', 'pp_info', 'description'],
  brief: ['circuit', 'term_side', 'description', 'cable', '_occupied'],
  taggable: true,
  displayNeeds: ['circuit'],
  display: (r, refs) => `${(refs.circuit as { cid?: string } | null)?.cid ?? r.circuit_id}: Termination ${r.term_side}`,
  ...cableHooks,
  extraRefs: {
    cable: { model: 'cable', column: 'cable_id' },
    termination_site: { model: 'site', column: 'termination_id', typeColumn: 'termination_type', type: 'dcim.site' },
    termination_location: { model: 'location', column: 'termination_id', typeColumn: 'termination_type', type: 'dcim.location' },
    termination_region: { model: 'region', column: 'termination_id', typeColumn: 'termination_type', type: 'dcim.region' },
    termination_sitegroup: { model: 'sitegroup', column: 'termination_id', typeColumn: 'termination_type', type: 'dcim.sitegroup' },
    termination_providernetwork: { model: 'providernetwork', column: 'termination_id', typeColumn: 'termination_type', type: 'circuits.providernetwork' },
  },
  represent(_row, out, refs) {
    const { termination_id, port_speed, ...rest } = out;
    const termination = refs.termination_site ?? refs.termination_location ?? refs.termination_region ?? refs.termination_sitegroup ?? refs.termination_providernetwork ?? null;
    const { id, url, display_url, display, circuit, term_side, termination_type, ...tail } = { ...rest } as Record<string, unknown>;
    return { id, url, display_url, display, circuit, term_side, termination_type, termination_id, termination, port_speed, ...tail, cable: refs.cable ?? null };
  },
  // The circuit's termination_a / termination_z follow its terminations (NetBox's CircuitTermination.save()).
  afterSave: async (w, id, row, existing) => {
    if (existing && (existing.circuit_id !== row.circuit_id || existing.term_side !== row.term_side)) {
      await w.trx.updateTable('circuits_circuit').set({ [`termination_${String(existing.term_side).toLowerCase()}_id`]: null }).where('id', '=', existing.circuit_id).execute();
    }
    await w.trx.updateTable('circuits_circuit').set({ [`termination_${String(row.term_side).toLowerCase()}_id`]: id }).where('id', '=', row.circuit_id).execute();
  },
  beforeDelete: async (w, row) => {
    await w.trx.updateTable('circuits_circuit').set({ [`termination_${String(row.term_side).toLowerCase()}_id`]: null }).where('id', '=', row.circuit_id).execute();
    await cableHooks.beforeDelete!(w, row);
  },
  check: async (ctx, values, existing, errors) => {
    const type = 'termination_type' in values ? values.termination_type : existing?.termination_type;
    const id = 'termination_id' in values ? values.termination_id : existing?.termination_id;
    if ((type === null || type === undefined) !== (id === null || id === undefined)) return void (errors.non_field_errors ??= []).push('termination_type and termination_id must be given together.');
    // CircuitTermination.cache_related_objects(): the region, site group, site and location it stands in.
    if ('termination_type' in values || 'termination_id' in values) Object.assign(values, await cachedScopeOf(ctx, type ?? null, id ?? null));
  },
  extraFilters: [
    ...refFilters('circuit', 'circuit', 'cid'),
    { name: 'termination_type', kind: 'custom' },
    { name: 'termination_id', kind: 'int', column: 'termination_id' },
    { name: 'site_id', kind: 'custom' },
    { name: 'site', kind: 'custom' },
    { name: 'provider_network_id', kind: 'custom' },
    ...refFilters('provider', 'provider', 'slug', 'circuit_id').map((f) => ({ ...f, through: [{ table: 'circuits_circuit', column: 'provider_id' }] })),
    ...treeFilters('region', 'region', '_region_id'),
    ...treeFilters('site_group', 'sitegroup', '_site_group_id'),
    ...treeFilters('location', 'location', '_location_id'),
    ...cabledFilters,
  ],
};

export const virtualCircuit: ModelDef = {
  key: 'virtualcircuit',
  app: 'circuits',
  path: 'virtual-circuits',
  table: 'circuits_virtualcircuit',
  objectType: 'circuits.virtualcircuit',
  verboseName: 'virtual circuit',
  title: 'VirtualCircuit',
  fields: [
    { name: 'cid', column: 'cid', kind: 'char', required: true, maxLength: 100, filter: true, label: 'Circuit ID' },
    { name: 'provider_network', column: 'provider_network_id', kind: 'fk', fk: 'providernetwork', required: true },
    { name: 'type', column: 'type_id', kind: 'fk', fk: 'virtualcircuittype', required: true },
    { name: 'status', column: 'status', kind: 'choice', choices: CIRCUIT_STATUS, default: 'active', filter: true },
    ref('tenant', 'tenant'),
    descriptionField,
    commentsField,
  ],
  unmodelled: { provider_account: null },
  uniqueTogether: [['provider_network', 'cid']],
  ordering: ['provider_network', 'cid'],
  search: ['cid', 'description', 'comments'],
  brief: ['provider_network', 'cid', 'description'],
  taggable: true,
  display: (r) => r.cid,
  extraFilters: [
    ...refFilters('provider_network', 'providernetwork', 'name'),
    ...refFilters('provider', 'provider', 'slug', 'provider_network_id').map((f) => ({ ...f, through: [{ table: 'circuits_providernetwork', column: 'provider_id' }] })),
    ...refFilters('type', 'virtualcircuittype'),
    ...tenancyFilters,
  ],
  cascade: [{ model: 'virtualcircuittermination', column: 'virtual_circuit_id' }],
};

export const virtualCircuitTermination: ModelDef = {
  key: 'virtualcircuittermination',
  app: 'circuits',
  path: 'virtual-circuit-terminations',
  table: 'circuits_virtualcircuittermination',
  objectType: 'circuits.virtualcircuittermination',
  verboseName: 'virtual circuit termination',
  title: 'VirtualCircuitTermination',
  fields: [
    { name: 'virtual_circuit', column: 'virtual_circuit_id', kind: 'fk', fk: 'virtualcircuit', required: true },
    { name: 'role', column: 'role', kind: 'choice', choices: VC_TERMINATION_ROLES, default: 'peer', filter: true },
    { name: 'interface', column: 'interface_id', kind: 'fk', fk: 'interface', required: true, unique: true },
    descriptionField,
  ],
  ordering: ['virtual_circuit', 'role', 'id'],
  search: ['description'],
  brief: ['virtual_circuit', 'role', 'interface', 'description'],
  taggable: true,
  displayNeeds: ['virtual_circuit', 'interface'],
  display: (r, refs) => `${(refs.virtual_circuit as { cid?: string } | null)?.cid ?? r.virtual_circuit_id}: ${(refs.interface as { name?: string } | null)?.name ?? r.interface_id}`,
  extraFilters: [
    ...refFilters('virtual_circuit', 'virtualcircuit', 'cid'),
    { name: 'interface_id', kind: 'fk_id', column: 'interface_id', model: 'interface' },
    { name: 'provider_network_id', kind: 'fk_id', column: 'virtual_circuit_id', model: 'providernetwork', through: [{ table: 'circuits_virtualcircuit', column: 'provider_network_id' }] },
    ...refFilters('provider', 'provider', 'slug', 'virtual_circuit_id').map((f) => ({
      ...f,
      through: [
        { table: 'circuits_virtualcircuit', column: 'provider_network_id' },
        { table: 'circuits_providernetwork', column: 'provider_id' },
      ],
    })),
  ],
};

export const CIRCUIT_MODELS = [provider, providerNetwork, circuitType, circuit, circuitTermination, virtualCircuitType, virtualCircuit, virtualCircuitTermination];
