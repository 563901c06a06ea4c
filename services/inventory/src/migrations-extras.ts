import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

async function exec(db: Kysely<any>, statements: string[]): Promise<void> {
  for (const s of statements) await sql.raw(s).execute(db);
}

function common(d: SqlDialect): string {
  return `custom_fields ${d.jsonType} not null, created ${d.timestampType} not null, last_updated ${d.timestampType} not null`;
}

/** Config context assignment link tables as migration 014 made them: name, referenced column and table (frozen here). */
const ASSIGNMENTS_014: Array<[name: string, target: string, table: string]> = [
  ['regions', 'region_id', 'dcim_region'],
  ['site_groups', 'sitegroup_id', 'dcim_sitegroup'],
  ['sites', 'site_id', 'dcim_site'],
  ['locations', 'location_id', 'dcim_location'],
  ['device_types', 'devicetype_id', 'dcim_devicetype'],
  ['roles', 'devicerole_id', 'dcim_devicerole'],
  ['platforms', 'platform_id', 'dcim_platform'],
  ['cluster_types', 'clustertype_id', 'virtualization_clustertype'],
  ['cluster_groups', 'clustergroup_id', 'virtualization_clustergroup'],
  ['clusters', 'cluster_id', 'virtualization_cluster'],
  ['tenant_groups', 'tenantgroup_id', 'tenancy_tenantgroup'],
  ['tenants', 'tenant_id', 'tenancy_tenant'],
  ['tags', 'tag_id', 'extras_tag'],
];

/**
 * Issue 24's extras: journal entries, config contexts and templates (with the config_template of devices, VMs,
 * roles and platforms), custom field choice sets (and custom fields' choice_set), contact assignments.
 */
export const extrasMigrations: Migration[] = [
  {
    name: '014_journal_config_choice_sets_contacts',
    async up(db, d) {
      const c = common(d);
      await exec(db, [
        `create table extras_journalentry (id ${d.serialPrimaryKey}, assigned_object_type varchar(100) not null, assigned_object_id bigint not null,
          created_by_id bigint, kind varchar(30) not null, comments text not null, ${c})`,
        `create index extras_journalentry_object on extras_journalentry (assigned_object_type, assigned_object_id)`,
        `create table extras_configtemplate (id ${d.serialPrimaryKey}, name varchar(100) not null, description varchar(200) not null,
          template_code text not null, environment_params ${d.jsonType}, mime_type varchar(50) not null, file_name varchar(200) not null,
          file_extension varchar(15) not null, as_attachment ${d.booleanType} not null, ${c})`,
        `create table extras_configcontext (id ${d.serialPrimaryKey}, name varchar(100) not null unique, weight integer not null,
          description varchar(200) not null, is_active ${d.booleanType} not null, data ${d.jsonType} not null, ${c})`,
        ...ASSIGNMENTS_014.flatMap(([name, target, table]) => [
          `create table extras_configcontext_${name} (id ${d.serialPrimaryKey}, configcontext_id bigint not null references extras_configcontext(id) on delete cascade,
            ${target} bigint not null references ${table}(id) on delete cascade, unique (configcontext_id, ${target}))`,
          `create index extras_configcontext_${name}_target on extras_configcontext_${name} (${target})`,
        ]),
        `alter table dcim_device add column config_template_id bigint references extras_configtemplate(id)`,
        `alter table virtualization_virtualmachine add column config_template_id bigint references extras_configtemplate(id)`,
        `alter table dcim_devicerole add column config_template_id bigint references extras_configtemplate(id)`,
        `alter table dcim_platform add column config_template_id bigint references extras_configtemplate(id)`,
        `create table extras_customfieldchoiceset (id ${d.serialPrimaryKey}, name varchar(100) not null unique, description varchar(200) not null,
          base_choices varchar(50), extra_choices ${d.jsonType}, order_alphabetically ${d.booleanType} not null, ${c})`,
        `alter table extras_customfield add column choice_set_id bigint references extras_customfieldchoiceset(id)`,
        // One row per (field, value) of every unique custom field: the database refuses the second of two racing writers.
        `create table extras_customfield_unique (id ${d.serialPrimaryKey}, field_name varchar(50) not null, object_type varchar(100) not null,
          value_key varchar(500) not null, object_id bigint not null, unique (field_name, object_type, value_key))`,
        `create index extras_customfield_unique_object on extras_customfield_unique (object_type, object_id)`,
        `create table tenancy_contactassignment (id ${d.serialPrimaryKey}, object_type varchar(100) not null, object_id bigint not null,
          contact_id bigint not null references tenancy_contact(id), role_id bigint not null references tenancy_contactrole(id),
          priority varchar(50), ${c}, unique (object_type, object_id, contact_id, role_id))`,
        `create index tenancy_contactassignment_object on tenancy_contactassignment (object_type, object_id)`,
      ]);
    },
  },
  {
    name: '015_contact_groups',
    async up(db, d) {
      // NetBox 4.3's Contact.groups: a contact in any number of contact groups.
      await exec(db, [
        `create table tenancy_contact_groups (id ${d.serialPrimaryKey}, contact_id bigint not null references tenancy_contact(id) on delete cascade,
          contactgroup_id bigint not null references tenancy_contactgroup(id) on delete cascade, unique (contact_id, contactgroup_id))`,
        `create index tenancy_contact_groups_group on tenancy_contact_groups (contactgroup_id)`,
      ]);
    },
  },
  {
    // Issue 24 (NetBox filter names): rack roles; racks' role and physical fields; device types' default platform, airflow,
    // depth, utilization flag and weight; nested device roles; prefixes' and VLANs' IPAM role; VLANs' Q-in-Q role and S-VLAN.
    name: '016_roles_rack_device_type_fields',
    async up(db, d) {
      const c = common(d);
      const f = d.kind === 'postgres' ? 'false' : '0';
      const t = d.kind === 'postgres' ? 'true' : '1';
      await exec(db, [
        `create table dcim_rackrole (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          color varchar(6) not null, description varchar(200) not null, ${c})`,
        `alter table dcim_rack add column role_id bigint references dcim_rackrole(id)`,
        `create index dcim_rack_role on dcim_rack (role_id)`,
        ...['outer_width', 'outer_height', 'outer_depth', 'mounting_depth', 'max_weight'].map((col) => `alter table dcim_rack add column ${col} integer`),
        `alter table dcim_rack add column outer_unit varchar(50)`,
        `alter table dcim_rack add column weight numeric(8,2)`,
        `alter table dcim_rack add column weight_unit varchar(50)`,
        `alter table dcim_devicetype add column default_platform_id bigint references dcim_platform(id)`,
        `alter table dcim_devicetype add column airflow varchar(50)`,
        `alter table dcim_devicetype add column exclude_from_utilization ${d.booleanType} not null default ${f}`,
        `alter table dcim_devicetype add column is_full_depth ${d.booleanType} not null default ${t}`,
        `alter table dcim_devicetype add column weight numeric(8,2)`,
        `alter table dcim_devicetype add column weight_unit varchar(50)`,
        `alter table dcim_moduletype add column weight numeric(8,2)`,
        `alter table dcim_moduletype add column weight_unit varchar(50)`,
        `alter table dcim_devicerole add column parent_id bigint references dcim_devicerole(id)`,
        `alter table ipam_prefix add column role_id bigint references ipam_role(id)`,
        `create index ipam_prefix_role on ipam_prefix (role_id)`,
        `alter table ipam_vlan add column role_id bigint references ipam_role(id)`,
        `create index ipam_vlan_role on ipam_vlan (role_id)`,
        `alter table ipam_vlan add column qinq_role varchar(50)`,
        `alter table ipam_vlan add column qinq_svlan_id bigint references ipam_vlan(id)`,
      ]);
    },
  },
  {
    // Issue 24: interfaces' module, bridge, VRF, WWN, PoE and wireless fields; the module of every other device component.
    name: '017_interface_fields_component_modules',
    async up(db, d) {
      const components = ['dcim_consoleport', 'dcim_consoleserverport', 'dcim_powerport', 'dcim_poweroutlet', 'dcim_frontport', 'dcim_rearport', 'dcim_interface', 'dcim_modulebay'];
      await exec(db, [
        ...components.flatMap((t) => [`alter table ${t} add column module_id bigint references dcim_module(id)`, `create index ${t}_module on ${t} (module_id)`]),
        `alter table dcim_interface add column bridge_id bigint references dcim_interface(id)`,
        `alter table dcim_interface add column vrf_id bigint references ipam_vrf(id)`,
        `create index dcim_interface_vrf on dcim_interface (vrf_id)`,
        `alter table dcim_interface add column wwn varchar(23)`,
        `alter table dcim_interface add column rf_role varchar(30)`,
        `alter table dcim_interface add column rf_channel varchar(50)`,
        `alter table dcim_interface add column rf_channel_frequency numeric(7,2)`,
        `alter table dcim_interface add column rf_channel_width numeric(7,3)`,
        `alter table dcim_interface add column tx_power integer`,
        `alter table dcim_interface add column poe_mode varchar(50)`,
        `alter table dcim_interface add column poe_type varchar(50)`,
      ]);
    },
  },
  {
    // Issue 24: NetBox 4.2+ scopes of prefixes, VLAN groups and clusters (clusters with CachedScopeMixin's cached
    // region/site group/site/location); VLAN groups' tenant.
    name: '018_scopes',
    async up(db) {
      const scope = (t: string) => [`alter table ${t} add column scope_type varchar(100)`, `alter table ${t} add column scope_id bigint`, `create index ${t}_scope on ${t} (scope_type, scope_id)`];
      await exec(db, [
        ...scope('ipam_prefix'),
        ...scope('ipam_vlangroup'),
        ...scope('virtualization_cluster'),
        `alter table ipam_vlangroup add column tenant_id bigint references tenancy_tenant(id)`,
        `alter table virtualization_cluster add column _region_id bigint references dcim_region(id)`,
        `alter table virtualization_cluster add column _site_group_id bigint references dcim_sitegroup(id)`,
        `alter table virtualization_cluster add column _site_id bigint references dcim_site(id)`,
        `alter table virtualization_cluster add column _location_id bigint references dcim_location(id)`,
      ]);
    },
  },
  {
    // Issue 24: IP addresses' NAT inside address; VRFs' import/export route targets; sites' and providers' ASNs.
    name: '019_nat_route_targets_asns',
    async up(db, d) {
      const link = (table: string, a: string, aTable: string, b: string, bTable: string) => [
        `create table ${table} (id ${d.serialPrimaryKey}, ${a} bigint not null references ${aTable}(id) on delete cascade,
          ${b} bigint not null references ${bTable}(id) on delete cascade, unique (${a}, ${b}))`,
        `create index ${table}_${b} on ${table} (${b})`,
      ];
      await exec(db, [
        `alter table ipam_ipaddress add column nat_inside_id bigint references ipam_ipaddress(id)`,
        `create index ipam_ipaddress_nat_inside on ipam_ipaddress (nat_inside_id)`,
        ...link('ipam_vrf_import_targets', 'vrf_id', 'ipam_vrf', 'routetarget_id', 'ipam_routetarget'),
        ...link('ipam_vrf_export_targets', 'vrf_id', 'ipam_vrf', 'routetarget_id', 'ipam_routetarget'),
        ...link('dcim_site_asns', 'site_id', 'dcim_site', 'asn_id', 'ipam_asn'),
        ...link('circuits_provider_asns', 'provider_id', 'circuits_provider', 'asn_id', 'ipam_asn'),
      ]);
    },
  },
  {
    // Issue 24: circuit terminations' cached region/site group/site/location (NetBox 4.2+), for their and circuits' filters.
    // No foreign keys: a termination keeps pointing at a deleted site as its termination_id does.
    name: '020_circuit_termination_cached_scope',
    async up(db) {
      await exec(db, [
        ...['_region_id', '_site_group_id', '_site_id', '_location_id'].map((c) => `alter table circuits_circuittermination add column ${c} bigint`),
        `create index circuits_circuittermination_region on circuits_circuittermination (_region_id)`,
      ]);
      // Terminations made before: fill the cache from their termination.
      await sql.raw(`update circuits_circuittermination set _site_id = termination_id where termination_type = 'dcim.site'`).execute(db);
      await sql.raw(`update circuits_circuittermination set _location_id = termination_id, _site_id = (select site_id from dcim_location where id = termination_id) where termination_type = 'dcim.location'`).execute(db);
      await sql.raw(`update circuits_circuittermination set _region_id = termination_id where termination_type = 'dcim.region'`).execute(db);
      await sql.raw(`update circuits_circuittermination set _site_group_id = termination_id where termination_type = 'dcim.sitegroup'`).execute(db);
      await sql.raw(`update circuits_circuittermination set _region_id = (select region_id from dcim_site where id = _site_id), _site_group_id = (select group_id from dcim_site where id = _site_id) where _site_id is not null`).execute(db);
    },
  },
];
