import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';
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
];
