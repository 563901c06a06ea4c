import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * Issue 24's networking objects (src/models/networking.ts): MAC addresses, L2VPNs, wireless, VLAN translation,
 * virtual device contexts, FHRP groups, provider accounts, and the columns they add to interfaces and circuits.
 */

async function exec(db: Kysely<any>, statements: string[]): Promise<void> {
  for (const s of statements) await sql.raw(s).execute(db);
}

function common(d: SqlDialect): string {
  return `custom_fields ${d.jsonType} not null, created ${d.timestampType} not null, last_updated ${d.timestampType} not null`;
}

/** A many-to-many link table: both sides deleted with either object. */
function link(d: SqlDialect, table: string, a: string, aTable: string, b: string, bTable: string): string[] {
  return [
    `create table ${table} (id ${d.serialPrimaryKey}, ${a} bigint not null references ${aTable}(id) on delete cascade,
      ${b} bigint not null references ${bTable}(id) on delete cascade, unique (${a}, ${b}))`,
    `create index ${table}_${b} on ${table} (${b})`,
  ];
}

export const networkingMigrations: Migration[] = [
  {
    // NetBox 4.2+: MAC addresses as objects, assigned to an interface or VM interface; each interface's primary one.
    name: '026_mac_addresses',
    async up(db, d) {
      await exec(db, [
        `create table dcim_macaddress (id ${d.serialPrimaryKey}, mac_address varchar(17) not null, assigned_object_type varchar(100),
          assigned_object_id bigint, description varchar(200) not null, comments text not null, ${common(d)})`,
        `create index dcim_macaddress_assigned on dcim_macaddress (assigned_object_type, assigned_object_id)`,
        `create index dcim_macaddress_mac on dcim_macaddress (mac_address)`,
        `alter table dcim_interface add column primary_mac_address_id bigint references dcim_macaddress(id)`,
        `create unique index dcim_interface_primary_mac on dcim_interface (primary_mac_address_id)`,
        `alter table virtualization_vminterface add column primary_mac_address_id bigint references dcim_macaddress(id)`,
        `create unique index virtualization_vminterface_primary_mac on virtualization_vminterface (primary_mac_address_id)`,
      ]);
    },
  },
  {
    // L2VPNs with import/export route targets; their terminations on an interface, VM interface or VLAN (one each).
    name: '027_l2vpn',
    async up(db, d) {
      await exec(db, [
        `create table vpn_l2vpn (id ${d.serialPrimaryKey}, name varchar(100) not null unique, _name varchar(200), slug varchar(100) not null unique,
          type varchar(50) not null, status varchar(50) not null, identifier bigint, tenant_id bigint references tenancy_tenant(id),
          description varchar(200) not null, comments text not null, ${common(d)})`,
        ...link(d, 'vpn_l2vpn_import_targets', 'l2vpn_id', 'vpn_l2vpn', 'routetarget_id', 'ipam_routetarget'),
        ...link(d, 'vpn_l2vpn_export_targets', 'l2vpn_id', 'vpn_l2vpn', 'routetarget_id', 'ipam_routetarget'),
        `create table vpn_l2vpntermination (id ${d.serialPrimaryKey}, l2vpn_id bigint not null references vpn_l2vpn(id),
          assigned_object_type varchar(100) not null, assigned_object_id bigint not null, ${common(d)},
          unique (assigned_object_type, assigned_object_id))`,
        `create index vpn_l2vpntermination_l2vpn on vpn_l2vpntermination (l2vpn_id)`,
      ]);
    },
  },
  {
    // Wireless LAN groups, wireless LANs (scoped, cached scope as clusters) on interfaces, wireless links between interfaces.
    name: '028_wireless',
    async up(db, d) {
      await exec(db, [
        `create table wireless_wirelesslangroup (id ${d.serialPrimaryKey}, name varchar(100) not null unique, slug varchar(100) not null unique,
          parent_id bigint references wireless_wirelesslangroup(id), description varchar(200) not null, comments text not null, ${common(d)})`,
        `create table wireless_wirelesslan (id ${d.serialPrimaryKey}, ssid varchar(32) not null, group_id bigint references wireless_wirelesslangroup(id),
          status varchar(50) not null, vlan_id bigint references ipam_vlan(id), scope_type varchar(100), scope_id bigint,
          _region_id bigint references dcim_region(id), _site_group_id bigint references dcim_sitegroup(id), _site_id bigint references dcim_site(id),
          _location_id bigint references dcim_location(id), tenant_id bigint references tenancy_tenant(id), auth_type varchar(50), auth_cipher varchar(50),
          auth_psk varchar(64) not null, description varchar(200) not null, comments text not null, ${common(d)})`,
        `create index wireless_wirelesslan_scope on wireless_wirelesslan (scope_type, scope_id)`,
        ...link(d, 'dcim_interface_wireless_lans', 'interface_id', 'dcim_interface', 'wirelesslan_id', 'wireless_wirelesslan'),
        `create table wireless_wirelesslink (id ${d.serialPrimaryKey}, interface_a_id bigint not null references dcim_interface(id),
          interface_b_id bigint not null references dcim_interface(id), ssid varchar(32) not null, status varchar(50) not null,
          tenant_id bigint references tenancy_tenant(id), auth_type varchar(50), auth_cipher varchar(50), auth_psk varchar(64) not null,
          distance numeric(8,2), distance_unit varchar(50), _interface_a_device_id bigint references dcim_device(id),
          _interface_b_device_id bigint references dcim_device(id), description varchar(200) not null, comments text not null, ${common(d)},
          unique (interface_a_id, interface_b_id))`,
        `alter table dcim_interface add column wireless_link_id bigint references wireless_wirelesslink(id)`,
      ]);
    },
  },
  {
    // VLAN translation policies and their rules; interfaces' and VM interfaces' policy.
    name: '029_vlan_translation',
    async up(db, d) {
      await exec(db, [
        `create table ipam_vlantranslationpolicy (id ${d.serialPrimaryKey}, name varchar(100) not null unique, description varchar(200) not null,
          comments text not null, ${common(d)})`,
        `create table ipam_vlantranslationrule (id ${d.serialPrimaryKey}, policy_id bigint not null references ipam_vlantranslationpolicy(id),
          local_vid integer not null, remote_vid integer not null, description varchar(200) not null, ${common(d)},
          unique (policy_id, local_vid), unique (policy_id, remote_vid))`,
        `alter table dcim_interface add column vlan_translation_policy_id bigint references ipam_vlantranslationpolicy(id)`,
        `alter table virtualization_vminterface add column vlan_translation_policy_id bigint references ipam_vlantranslationpolicy(id)`,
      ]);
    },
  },
  {
    // Virtual device contexts of devices; interfaces' VDCs.
    name: '030_virtual_device_contexts',
    async up(db, d) {
      await exec(db, [
        `create table dcim_virtualdevicecontext (id ${d.serialPrimaryKey}, device_id bigint not null references dcim_device(id),
          name varchar(64) not null, _name varchar(200), status varchar(50) not null, identifier integer, tenant_id bigint references tenancy_tenant(id),
          primary_ip4_id bigint references ipam_ipaddress(id), primary_ip6_id bigint references ipam_ipaddress(id),
          description varchar(200) not null, comments text not null, ${common(d)}, unique (device_id, name), unique (device_id, identifier))`,
        ...link(d, 'dcim_interface_vdcs', 'interface_id', 'dcim_interface', 'virtualdevicecontext_id', 'dcim_virtualdevicecontext'),
      ]);
    },
  },
  {
    // FHRP groups and their assignments to interfaces and VM interfaces.
    name: '031_fhrp_groups',
    async up(db, d) {
      await exec(db, [
        `create table ipam_fhrpgroup (id ${d.serialPrimaryKey}, name varchar(100) not null, protocol varchar(50) not null, group_id integer not null,
          auth_type varchar(50), auth_key varchar(255) not null, description varchar(200) not null, comments text not null, ${common(d)})`,
        `create table ipam_fhrpgroupassignment (id ${d.serialPrimaryKey}, group_id bigint not null references ipam_fhrpgroup(id),
          interface_type varchar(100) not null, interface_id bigint not null, priority integer not null, ${common(d)},
          unique (interface_type, interface_id, group_id))`,
        `create index ipam_fhrpgroupassignment_interface on ipam_fhrpgroupassignment (interface_type, interface_id)`,
      ]);
    },
  },
  {
    // Provider accounts; circuits' and virtual circuits' account.
    name: '032_provider_accounts',
    async up(db, d) {
      await exec(db, [
        `create table circuits_provideraccount (id ${d.serialPrimaryKey}, provider_id bigint not null references circuits_provider(id),
          name varchar(100) not null, account varchar(100) not null, description varchar(200) not null, comments text not null, ${common(d)},
          unique (provider_id, account))`,
        `alter table circuits_circuit add column provider_account_id bigint references circuits_provideraccount(id)`,
        `alter table circuits_virtualcircuit add column provider_account_id bigint references circuits_provideraccount(id)`,
      ]);
    },
  },
];
