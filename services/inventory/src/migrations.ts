import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';
import { hostKey } from './models/ip.ts';
import { naturalize } from './models/values.ts';

/** Change-logged columns every inventory object has. */
function common(d: SqlDialect): string {
  return `custom_fields ${d.jsonType} not null, created ${d.timestampType} not null, last_updated ${d.timestampType} not null`;
}

async function exec(db: Kysely<any>, statements: string[]): Promise<void> {
  for (const s of statements) await sql.raw(s).execute(db);
}

export const coreMigrations: Migration[] = [
  {
    name: '001_users',
    async up(db, d) {
      await exec(db, [
        `create table users_user (
          id ${d.serialPrimaryKey}, username varchar(150) not null unique, password_hash text,
          first_name varchar(150) not null default '', last_name varchar(150) not null default '', email varchar(254) not null default '',
          is_superuser ${d.booleanType} not null, can_write ${d.booleanType} not null, is_active ${d.booleanType} not null,
          date_joined ${d.timestampType} not null, last_login ${d.timestampType})`,
        `create table users_token (
          id ${d.serialPrimaryKey}, user_id bigint not null references users_user(id) on delete cascade,
          key_hash char(64) not null unique, key_prefix varchar(8) not null,
          created ${d.timestampType} not null, expires ${d.timestampType}, last_used ${d.timestampType},
          write_enabled ${d.booleanType} not null, description varchar(200) not null default '')`,
      ]);
    },
  },
  {
    name: '002_inventory',
    async up(db, d) {
      const c = common(d);
      await exec(db, [
        `create table extras_tag (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          color varchar(6) not null, description varchar(200) not null, ${c})`,
        `create table extras_taggeditem (id ${d.serialPrimaryKey}, tag_id bigint not null references extras_tag(id) on delete cascade,
          object_type varchar(100) not null, object_id bigint not null, unique (tag_id, object_type, object_id))`,
        `create index extras_taggeditem_object on extras_taggeditem (object_type, object_id)`,
        `create table dcim_site (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          status varchar(50) not null, description varchar(200) not null, comments text not null, ${c})`,
        `create table dcim_manufacturer (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          description varchar(200) not null, ${c})`,
        `create table dcim_devicetype (id ${d.serialPrimaryKey}, manufacturer_id bigint not null references dcim_manufacturer(id),
          model varchar(100) not null, slug varchar(100) not null, u_height numeric(4,1) not null, description varchar(200) not null, ${c},
          unique (manufacturer_id, model), unique (manufacturer_id, slug))`,
        `create table dcim_devicerole (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          color varchar(6) not null, description varchar(200) not null, ${c})`,
        `create table dcim_device (id ${d.serialPrimaryKey}, name varchar(64), site_id bigint not null references dcim_site(id),
          device_type_id bigint not null references dcim_devicetype(id), role_id bigint not null references dcim_devicerole(id),
          status varchar(50) not null, serial varchar(50) not null, description varchar(200) not null, comments text not null, ${c},
          unique (site_id, name))`,
        `create index dcim_device_site on dcim_device (site_id)`,
        `create table dcim_interface (id ${d.serialPrimaryKey}, device_id bigint not null references dcim_device(id),
          name varchar(64) not null, type varchar(50) not null, enabled ${d.booleanType} not null, mtu integer, mac_address varchar(17),
          description varchar(200) not null, ${c}, unique (device_id, name))`,
        `create table ipam_ipaddress (id ${d.serialPrimaryKey}, address varchar(64) not null, family integer not null,
          status varchar(50) not null, dns_name varchar(255) not null, description varchar(200) not null,
          assigned_object_type varchar(100), assigned_object_id bigint, ${c})`,
        `create index ipam_ipaddress_assigned on ipam_ipaddress (assigned_object_type, assigned_object_id)`,
        `create table object_changes (id ${d.serialPrimaryKey}, time ${d.timestampType} not null, user_id bigint, user_name varchar(150) not null,
          request_id varchar(64) not null, action varchar(50) not null, changed_object_type varchar(100) not null, changed_object_id bigint not null,
          object_repr varchar(200) not null, prechange_data ${d.jsonType}, postchange_data ${d.jsonType})`,
        `create index object_changes_object on object_changes (changed_object_type, changed_object_id)`,
        `create index object_changes_request on object_changes (request_id)`,
        `create index object_changes_time on object_changes (time)`,
      ]);
    },
  },
  {
    name: '003_natural_names',
    async up(db) {
      // NetBox orders sites, devices and interfaces by a naturalised copy of the name.
      for (const table of ['dcim_site', 'dcim_device', 'dcim_interface']) {
        await sql.raw(`alter table ${table} add column _name varchar(100)`).execute(db);
        const rows = await db.selectFrom(table).select(['id', 'name']).execute();
        for (const r of rows) await db.updateTable(table).set({ _name: naturalize(r.name) }).where('id', '=', r.id).execute();
      }
    },
  },
  {
    name: '004_netbox_objects',
    async up(db, d) {
      const c = common(d);
      const f = d.kind === 'postgres' ? 'false' : '0';
      const group = (table: string) =>
        `create table ${table} (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          parent_id bigint references ${table}(id), description varchar(200) not null, comments text not null, ${c})`;
      await exec(db, [
        group('tenancy_tenantgroup'),
        `create table tenancy_tenant (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          group_id bigint references tenancy_tenantgroup(id), description varchar(200) not null, comments text not null, ${c})`,
        group('dcim_region'),
        group('dcim_sitegroup'),
        `create table dcim_platform (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          manufacturer_id bigint references dcim_manufacturer(id), description varchar(200) not null, comments text not null, ${c})`,
        `create table dcim_location (id ${d.serialPrimaryKey}, name varchar(100) not null, slug varchar(100) not null,
          site_id bigint not null references dcim_site(id), parent_id bigint references dcim_location(id), status varchar(50) not null,
          tenant_id bigint references tenancy_tenant(id), facility varchar(50) not null, description varchar(200) not null, comments text not null, ${c})`,
        `create table dcim_rack (id ${d.serialPrimaryKey}, name varchar(100) not null, _name varchar(100), facility_id varchar(50),
          site_id bigint not null references dcim_site(id), location_id bigint references dcim_location(id), tenant_id bigint references tenancy_tenant(id),
          status varchar(50) not null, serial varchar(50) not null, asset_tag varchar(50) unique, form_factor varchar(50), width varchar(10) not null,
          u_height integer not null, starting_unit integer not null, desc_units ${d.booleanType} not null, airflow varchar(50),
          description varchar(200) not null, comments text not null, ${c})`,
        `create index dcim_rack_site on dcim_rack (site_id)`,
        `create table ipam_vrf (id ${d.serialPrimaryKey}, name varchar(100) not null, rd varchar(21) unique, tenant_id bigint references tenancy_tenant(id),
          enforce_unique ${d.booleanType} not null, description varchar(200) not null, comments text not null, ${c})`,
        `create table ipam_vlangroup (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          description varchar(200) not null, comments text not null, ${c})`,
        `create table ipam_vlan (id ${d.serialPrimaryKey}, site_id bigint references dcim_site(id), group_id bigint references ipam_vlangroup(id),
          vid integer not null, name varchar(64) not null, tenant_id bigint references tenancy_tenant(id), status varchar(50) not null,
          description varchar(200) not null, comments text not null, ${c}, unique (group_id, vid), unique (group_id, name))`,
        `create table ipam_prefix (id ${d.serialPrimaryKey}, prefix varchar(64) not null, family integer not null,
          _first varchar(32) not null, _last varchar(32) not null, _len integer not null,
          vrf_id bigint references ipam_vrf(id), site_id bigint references dcim_site(id), tenant_id bigint references tenancy_tenant(id),
          vlan_id bigint references ipam_vlan(id), status varchar(50) not null, is_pool ${d.booleanType} not null, mark_utilized ${d.booleanType} not null,
          description varchar(200) not null, comments text not null, ${c})`,
        `create index ipam_prefix_range on ipam_prefix (family, _first, _last)`,
        `create table dcim_interface_tagged_vlans (id ${d.serialPrimaryKey},
          interface_id bigint not null references dcim_interface(id) on delete cascade, vlan_id bigint not null references ipam_vlan(id) on delete cascade,
          unique (interface_id, vlan_id))`,
        `create index dcim_interface_tagged_vlans_vlan on dcim_interface_tagged_vlans (vlan_id)`,
      ]);
      const add = async (table: string, columns: string[]) => {
        for (const col of columns) await sql.raw(`alter table ${table} add column ${col}`).execute(db);
      };
      await add('dcim_site', [
        'region_id bigint',
        'group_id bigint',
        'tenant_id bigint',
        `facility varchar(50) not null default ''`,
        `physical_address varchar(200) not null default ''`,
        `shipping_address varchar(200) not null default ''`,
        'latitude numeric(8,6)',
        'longitude numeric(9,6)',
      ]);
      await add('dcim_device', [
        'platform_id bigint',
        'tenant_id bigint',
        'location_id bigint',
        'rack_id bigint',
        'position numeric(4,1)',
        'face varchar(50)',
        'asset_tag varchar(50)',
        'airflow varchar(50)',
        'latitude numeric(8,6)',
        'longitude numeric(9,6)',
        'primary_ip4_id bigint',
        'primary_ip6_id bigint',
        'oob_ip_id bigint',
        `local_context_data ${d.jsonType}`,
      ]);
      await add('dcim_interface', [
        `label varchar(64) not null default ''`,
        `mgmt_only ${d.booleanType} not null default ${f}`,
        'parent_id bigint',
        'lag_id bigint',
        'speed bigint',
        'duplex varchar(50)',
        `mark_connected ${d.booleanType} not null default ${f}`,
        'mode varchar(50)',
        'untagged_vlan_id bigint',
      ]);
      await add('ipam_ipaddress', ['vrf_id bigint', 'tenant_id bigint', 'role varchar(50)', `comments text not null default ''`, '_host varchar(32)']);
      const ips = await db.selectFrom('ipam_ipaddress').select(['id', 'address']).execute();
      for (const r of ips) await db.updateTable('ipam_ipaddress').set({ _host: hostKey(r.address) }).where('id', '=', r.id).execute();
      await exec(db, [
        `create unique index dcim_device_asset_tag on dcim_device (asset_tag)`,
        `create index dcim_device_rack on dcim_device (rack_id)`,
        `create index dcim_device_tenant on dcim_device (tenant_id)`,
        `create index ipam_ipaddress_host on ipam_ipaddress (family, _host)`,
        `create index ipam_ipaddress_vrf on ipam_ipaddress (vrf_id)`,
      ]);
    },
  },
  {
    name: '005_comments',
    async up(db) {
      for (const table of ['dcim_devicetype', 'dcim_devicerole']) await sql.raw(`alter table ${table} add column comments text not null default ''`).execute(db);
    },
  },
  {
    // available-ips counts and scans the used hosts of one VRF in a range: index-only with the VRF first.
    // It also serves lookups by VRF alone, so the index on vrf_id goes (the planner picked it for range scans).
    name: '006_ip_vrf_host_index',
    async up(db) {
      await exec(db, [`create index ipam_ipaddress_vrf_host on ipam_ipaddress (vrf_id, family, _host)`, `drop index ipam_ipaddress_vrf`]);
    },
  },
  {
    // A counter that moves whenever an IP address row is deleted or moved (address, family or VRF changed):
    // available-ips trusts its remembered "everything below here is used" only while the counter stands still.
    // PostgreSQL: a sequence (never blocks, ignores rollbacks; a rolled-back delete merely costs a rescan).
    name: '007_ip_freed_counter',
    async up(db, d) {
      if (d.kind === 'postgres') {
        await exec(db, [
          `create sequence ipam_ip_freed`,
          `create function ipam_ip_freed_bump() returns trigger language plpgsql as $$ begin perform nextval('ipam_ip_freed'); return null; end $$`,
          `create trigger ipam_ip_freed_delete after delete on ipam_ipaddress for each statement execute function ipam_ip_freed_bump()`,
          `create trigger ipam_ip_freed_update after update of _host, family, vrf_id on ipam_ipaddress for each statement execute function ipam_ip_freed_bump()`,
        ]);
      } else {
        await exec(db, [
          `create table ipam_ip_freed (id integer primary key, n integer not null)`,
          `insert into ipam_ip_freed (id, n) values (1, 0)`,
          `create trigger ipam_ip_freed_delete after delete on ipam_ipaddress begin update ipam_ip_freed set n = n + 1 where id = 1; end`,
          `create trigger ipam_ip_freed_update after update of _host, family, vrf_id on ipam_ipaddress begin update ipam_ip_freed set n = n + 1 where id = 1; end`,
        ]);
      }
    },
  },
  {
    // NetBox's virtualization app: cluster types and groups, clusters, virtual machines, their interfaces and disks; a device's cluster.
    name: '008_virtualization',
    async up(db, d) {
      const c = common(d);
      const org = (table: string) =>
        `create table ${table} (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          description varchar(200) not null, ${c})`;
      await exec(db, [
        org('virtualization_clustertype'),
        org('virtualization_clustergroup'),
        `create table virtualization_cluster (id ${d.serialPrimaryKey}, name varchar(100) not null,
          type_id bigint not null references virtualization_clustertype(id), group_id bigint references virtualization_clustergroup(id),
          status varchar(50) not null, tenant_id bigint references tenancy_tenant(id), description varchar(200) not null, comments text not null, ${c})`,
        `create table virtualization_virtualmachine (id ${d.serialPrimaryKey}, name varchar(64) not null, _name varchar(100),
          status varchar(50) not null, site_id bigint references dcim_site(id), cluster_id bigint references virtualization_cluster(id),
          device_id bigint references dcim_device(id), serial varchar(50) not null, role_id bigint references dcim_devicerole(id),
          tenant_id bigint references tenancy_tenant(id), platform_id bigint references dcim_platform(id),
          primary_ip4_id bigint, primary_ip6_id bigint, vcpus numeric(6,2), memory bigint, disk bigint,
          description varchar(200) not null, comments text not null, local_context_data ${d.jsonType}, ${c})`,
        `create index virtualization_virtualmachine_cluster on virtualization_virtualmachine (cluster_id)`,
        `create index virtualization_virtualmachine_site on virtualization_virtualmachine (site_id)`,
        `create table virtualization_vminterface (id ${d.serialPrimaryKey},
          virtual_machine_id bigint not null references virtualization_virtualmachine(id), name varchar(64) not null, _name varchar(100),
          enabled ${d.booleanType} not null, parent_id bigint, bridge_id bigint, mtu integer, description varchar(200) not null,
          mode varchar(50), untagged_vlan_id bigint, vrf_id bigint, ${c}, unique (virtual_machine_id, name))`,
        `create table virtualization_vminterface_tagged_vlans (id ${d.serialPrimaryKey},
          vminterface_id bigint not null references virtualization_vminterface(id) on delete cascade,
          vlan_id bigint not null references ipam_vlan(id) on delete cascade, unique (vminterface_id, vlan_id))`,
        `create index virtualization_vminterface_tagged_vlans_vlan on virtualization_vminterface_tagged_vlans (vlan_id)`,
        `create table virtualization_virtualdisk (id ${d.serialPrimaryKey},
          virtual_machine_id bigint not null references virtualization_virtualmachine(id), name varchar(64) not null, _name varchar(100),
          description varchar(200) not null, size bigint not null, ${c}, unique (virtual_machine_id, name))`,
        `alter table dcim_device add column cluster_id bigint`,
        `create index dcim_device_cluster on dcim_device (cluster_id)`,
      ]);
    },
  },
  {
    // NetBox 4.3's application services: on a device or a virtual machine (parent_object_*), with their IP addresses.
    name: '009_services',
    async up(db, d) {
      const c = common(d);
      await exec(db, [
        `create table ipam_service (id ${d.serialPrimaryKey}, parent_object_type varchar(100) not null, parent_object_id bigint not null,
          name varchar(100) not null, protocol varchar(50) not null, ports ${d.jsonType} not null,
          description varchar(200) not null, comments text not null, ${c})`,
        `create index ipam_service_parent on ipam_service (parent_object_type, parent_object_id)`,
        `create table ipam_service_ipaddresses (id ${d.serialPrimaryKey},
          service_id bigint not null references ipam_service(id) on delete cascade,
          ipaddress_id bigint not null references ipam_ipaddress(id) on delete cascade, unique (service_id, ipaddress_id))`,
        `create index ipam_service_ipaddresses_ip on ipam_service_ipaddresses (ipaddress_id)`,
      ]);
    },
  },
  {
    // Cabling (console, power and pass-through ports, cables and their terminations), circuits and virtual circuits,
    // RIRs, aggregates, IPAM roles and ASNs (issue 24: the endpoints NetBox's clients reach).
    name: '010_cabling_circuits',
    async up(db, d) {
      const c = common(d);
      const component = (table: string, columns: string) =>
        `create table ${table} (id ${d.serialPrimaryKey}, device_id bigint not null references dcim_device(id), name varchar(64) not null,
          _name varchar(100), label varchar(64) not null, ${columns}, description varchar(200) not null, mark_connected ${d.booleanType} not null,
          cable_id bigint, cable_end varchar(1), ${c}, unique (device_id, name))`;
      const org = (table: string, extra = '') =>
        `create table ${table} (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          ${extra} description varchar(200) not null, ${c})`;
      await exec(db, [
        component('dcim_consoleport', 'type varchar(50), speed integer'),
        component('dcim_consoleserverport', 'type varchar(50), speed integer'),
        component('dcim_powerport', 'type varchar(50), maximum_draw integer, allocated_draw integer'),
        component('dcim_poweroutlet', `type varchar(50), status varchar(50) not null, color varchar(6) not null, power_port_id bigint references dcim_powerport(id), feed_leg varchar(50)`),
        component('dcim_rearport', 'type varchar(50) not null, color varchar(6) not null, positions integer not null'),
        component('dcim_frontport', 'type varchar(50) not null, color varchar(6) not null, rear_port_id bigint not null references dcim_rearport(id), rear_port_position integer not null'),
        `create unique index dcim_frontport_rear_position on dcim_frontport (rear_port_id, rear_port_position)`,
        `create table dcim_cable (id ${d.serialPrimaryKey}, type varchar(50), a_terminations ${d.jsonType} not null, b_terminations ${d.jsonType} not null,
          status varchar(50) not null, tenant_id bigint references tenancy_tenant(id), label varchar(100) not null, color varchar(6) not null,
          length numeric(8,2), length_unit varchar(50), description varchar(200) not null, comments text not null, ${c})`,
        `create table dcim_cabletermination (id ${d.serialPrimaryKey}, cable_id bigint not null references dcim_cable(id) on delete cascade,
          cable_end varchar(1) not null, termination_type varchar(100) not null, termination_id bigint not null, unique (termination_type, termination_id))`,
        `create index dcim_cabletermination_cable on dcim_cabletermination (cable_id)`,
        `alter table dcim_interface add column cable_id bigint`,
        `alter table dcim_interface add column cable_end varchar(1)`,
        `create table circuits_provider (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          description varchar(200) not null, comments text not null, ${c})`,
        `create table circuits_providernetwork (id ${d.serialPrimaryKey}, provider_id bigint not null references circuits_provider(id),
          name varchar(100) not null, service_id varchar(100) not null, description varchar(200) not null, comments text not null, ${c}, unique (provider_id, name))`,
        org('circuits_circuittype', 'color varchar(6) not null,'),
        org('circuits_virtualcircuittype', 'color varchar(6) not null,'),
        `create table circuits_circuit (id ${d.serialPrimaryKey}, cid varchar(100) not null, provider_id bigint not null references circuits_provider(id),
          type_id bigint not null references circuits_circuittype(id), status varchar(50) not null, tenant_id bigint references tenancy_tenant(id),
          install_date varchar(10), termination_date varchar(10), commit_rate integer, description varchar(200) not null, distance numeric(8,2),
          distance_unit varchar(50), comments text not null, termination_a_id bigint, termination_z_id bigint, ${c}, unique (provider_id, cid))`,
        `create table circuits_circuittermination (id ${d.serialPrimaryKey}, circuit_id bigint not null references circuits_circuit(id),
          term_side varchar(1) not null, termination_type varchar(100), termination_id bigint, port_speed integer, upstream_speed integer,
          xconnect_id varchar(50) not null, pp_info varchar(100) not null, description varchar(200) not null, mark_connected ${d.booleanType} not null,
          cable_id bigint, cable_end varchar(1), ${c}, unique (circuit_id, term_side))`,
        `create table circuits_virtualcircuit (id ${d.serialPrimaryKey}, cid varchar(100) not null,
          provider_network_id bigint not null references circuits_providernetwork(id), type_id bigint not null references circuits_virtualcircuittype(id),
          status varchar(50) not null, tenant_id bigint references tenancy_tenant(id), description varchar(200) not null, comments text not null, ${c},
          unique (provider_network_id, cid))`,
        `create table circuits_virtualcircuittermination (id ${d.serialPrimaryKey}, virtual_circuit_id bigint not null references circuits_virtualcircuit(id),
          role varchar(50) not null, interface_id bigint not null unique references dcim_interface(id), description varchar(200) not null, ${c})`,
        org('ipam_rir', `is_private ${d.booleanType} not null,`),
        `create table ipam_aggregate (id ${d.serialPrimaryKey}, prefix varchar(64) not null, family integer not null, rir_id bigint not null references ipam_rir(id),
          _first varchar(32) not null, _last varchar(32) not null, _len integer not null,
          tenant_id bigint references tenancy_tenant(id), date_added varchar(10), description varchar(200) not null, comments text not null, ${c})`,
        org('ipam_role', 'weight integer not null,'),
        `create table ipam_asn (id ${d.serialPrimaryKey}, asn bigint not null unique, rir_id bigint not null references ipam_rir(id),
          tenant_id bigint references tenancy_tenant(id), description varchar(200) not null, comments text not null, ${c})`,
      ]);
    },
  },
  {
    // NetBox's custom field definitions (issue 24).
    name: '011_custom_fields',
    async up(db, d) {
      await exec(db, [
        `create table extras_customfield (id ${d.serialPrimaryKey}, object_types ${d.jsonType} not null, type varchar(50) not null,
          name varchar(50) not null unique, label varchar(50) not null, group_name varchar(50) not null, description varchar(200) not null,
          required ${d.booleanType} not null, is_unique ${d.booleanType} not null, search_weight integer not null, filter_logic varchar(50) not null,
          ui_visible varchar(50) not null, ui_editable varchar(50) not null, is_cloneable ${d.booleanType} not null, default_value ${d.jsonType},
          weight integer not null, validation_minimum numeric(20,4), validation_maximum numeric(20,4), validation_regex varchar(500) not null,
          comments text not null, custom_fields ${d.jsonType} not null, created ${d.timestampType} not null, last_updated ${d.timestampType} not null)`,
      ]);
    },
  },
  {
    // Route targets, tenancy contacts, power panels and feeds, module types/bays/modules, inventory items (issue 24).
    name: '012_more_models',
    async up(db, d) {
      const c = common(d);
      const org = (table: string, extra = '') =>
        `create table ${table} (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          ${extra} description varchar(200) not null, ${c})`;
      await exec(db, [
        `create table ipam_routetarget (id ${d.serialPrimaryKey}, name varchar(21) not null unique, tenant_id bigint references tenancy_tenant(id),
          description varchar(200) not null, comments text not null, ${c})`,
        `create table tenancy_contactgroup (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          parent_id bigint references tenancy_contactgroup(id), description varchar(200) not null, comments text not null, ${c})`,
        org('tenancy_contactrole'),
        `create table tenancy_contact (id ${d.serialPrimaryKey}, name varchar(100) not null, title varchar(100) not null, phone varchar(50) not null,
          email varchar(254) not null, address varchar(200) not null, link varchar(200) not null, description varchar(200) not null, comments text not null, ${c})`,
        `create table dcim_powerpanel (id ${d.serialPrimaryKey}, site_id bigint not null references dcim_site(id), location_id bigint references dcim_location(id),
          name varchar(100) not null, description varchar(200) not null, comments text not null, ${c}, unique (site_id, name))`,
        `create table dcim_powerfeed (id ${d.serialPrimaryKey}, power_panel_id bigint not null references dcim_powerpanel(id), rack_id bigint references dcim_rack(id),
          name varchar(100) not null, status varchar(50) not null, type varchar(50) not null, supply varchar(50) not null, phase varchar(50) not null,
          voltage integer not null, amperage integer not null, max_utilization integer not null, mark_connected ${d.booleanType} not null,
          description varchar(200) not null, tenant_id bigint references tenancy_tenant(id), comments text not null, cable_id bigint, cable_end varchar(1), ${c},
          unique (power_panel_id, name))`,
        `create table dcim_moduletype (id ${d.serialPrimaryKey}, manufacturer_id bigint not null references dcim_manufacturer(id), model varchar(100) not null,
          part_number varchar(50) not null, airflow varchar(50), description varchar(200) not null, comments text not null, ${c}, unique (manufacturer_id, model))`,
        `create table dcim_modulebay (id ${d.serialPrimaryKey}, device_id bigint not null references dcim_device(id), name varchar(64) not null, _name varchar(100),
          label varchar(64) not null, position varchar(30) not null, description varchar(200) not null, installed_module_id bigint, ${c}, unique (device_id, name))`,
        `create table dcim_module (id ${d.serialPrimaryKey}, device_id bigint not null references dcim_device(id), module_bay_id bigint not null unique references dcim_modulebay(id),
          module_type_id bigint not null references dcim_moduletype(id), status varchar(50) not null, serial varchar(50) not null, asset_tag varchar(50) unique,
          description varchar(200) not null, comments text not null, ${c})`,
        org('dcim_inventoryitemrole', 'color varchar(6) not null,'),
        `create table dcim_inventoryitem (id ${d.serialPrimaryKey}, device_id bigint not null references dcim_device(id), parent_id bigint references dcim_inventoryitem(id),
          name varchar(64) not null, _name varchar(100), label varchar(64) not null, status varchar(50) not null, role_id bigint references dcim_inventoryitemrole(id),
          manufacturer_id bigint references dcim_manufacturer(id), part_id varchar(50) not null, serial varchar(50) not null, asset_tag varchar(50) unique,
          discovered ${d.booleanType} not null, description varchar(200) not null, ${c})`,
      ]);
    },
  },
  {
    // Virtual chassis, device bays and their templates, device type subdevice roles, VLAN group VID ranges (issue 24).
    name: '013_virtual_chassis_device_bays',
    async up(db, d) {
      const c = common(d);
      await exec(db, [
        `create table dcim_virtualchassis (id ${d.serialPrimaryKey}, name varchar(64) not null, _name varchar(100), domain varchar(30) not null,
          master_id bigint unique references dcim_device(id), description varchar(200) not null, comments text not null, ${c})`,
        `alter table dcim_device add column virtual_chassis_id bigint references dcim_virtualchassis(id)`,
        `alter table dcim_device add column vc_position integer`,
        `alter table dcim_device add column vc_priority integer`,
        `create unique index dcim_device_unique_virtual_chassis_vc_position on dcim_device (virtual_chassis_id, vc_position)`,
        `alter table dcim_devicetype add column subdevice_role varchar(50)`,
        `create table dcim_devicebay (id ${d.serialPrimaryKey}, device_id bigint not null references dcim_device(id), name varchar(64) not null, _name varchar(100),
          label varchar(64) not null, description varchar(200) not null, installed_device_id bigint unique references dcim_device(id), ${c}, unique (device_id, name))`,
        `create table dcim_devicebaytemplate (id ${d.serialPrimaryKey}, device_type_id bigint not null references dcim_devicetype(id), name varchar(64) not null,
          _name varchar(100), label varchar(64) not null, description varchar(200) not null, ${c}, unique (device_type_id, name))`,
        `alter table ipam_vlangroup add column vid_ranges ${d.jsonType} not null default '[[1, 4094]]'`,
      ]);
    },
  },
  {
    // Fields Ansible's netbox.netbox modules write (issue 24): a site's time zone, a device type's part number, a device
    // role's vm_role (VMs may only take roles with vm_role set).
    name: '014_site_time_zone_part_number_vm_role',
    async up(db, d) {
      await exec(db, [
        `alter table dcim_site add column time_zone varchar(63)`,
        `alter table dcim_devicetype add column part_number varchar(50) not null default ''`,
        `alter table dcim_devicerole add column vm_role ${d.booleanType} not null default ${d.kind === 'postgres' ? 'true' : '1'}`,
      ]);
    },
  },
];
