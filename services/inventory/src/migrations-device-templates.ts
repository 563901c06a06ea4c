import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

async function exec(db: Kysely<any>, statements: string[]): Promise<void> {
  for (const s of statements) await sql.raw(s).execute(db);
}

function common(d: SqlDialect): string {
  return `custom_fields ${d.jsonType} not null, created ${d.timestampType} not null, last_updated ${d.timestampType} not null`;
}

/**
 * Issue 24: NetBox 4.3's device-type component templates (instantiated as components when a device is created or a
 * module installed), rack types, module type profiles, device types' front/rear image paths.
 */
export const deviceTemplateMigrations: Migration[] = [
  {
    name: '021_component_templates',
    async up(db, d) {
      const c = common(d);
      // A modular template belongs to a device type or to a module type (the clean() rule; both columns nullable).
      const modular = (table: string, extra: string, more = '') =>
        `create table ${table} (id ${d.serialPrimaryKey}, device_type_id bigint references dcim_devicetype(id), module_type_id bigint references dcim_moduletype(id),
          name varchar(64) not null, _name varchar(100), label varchar(64) not null, ${extra} description varchar(200) not null, ${c},
          unique (device_type_id, name), unique (module_type_id, name)${more})`;
      await exec(db, [
        modular('dcim_consoleporttemplate', 'type varchar(50),'),
        modular('dcim_consoleserverporttemplate', 'type varchar(50),'),
        modular('dcim_powerporttemplate', 'type varchar(50), maximum_draw integer, allocated_draw integer,'),
        modular('dcim_poweroutlettemplate', 'type varchar(50), power_port_id bigint references dcim_powerporttemplate(id), feed_leg varchar(50),'),
        modular(
          'dcim_interfacetemplate',
          `type varchar(50) not null, enabled ${d.booleanType} not null, mgmt_only ${d.booleanType} not null, bridge_id bigint references dcim_interfacetemplate(id),
          poe_mode varchar(50), poe_type varchar(50), rf_role varchar(30),`,
        ),
        modular('dcim_rearporttemplate', 'type varchar(50) not null, color varchar(6) not null, positions integer not null,'),
        modular(
          'dcim_frontporttemplate',
          'type varchar(50) not null, color varchar(6) not null, rear_port_id bigint not null references dcim_rearporttemplate(id), rear_port_position integer not null,',
          ', unique (rear_port_id, rear_port_position)',
        ),
        modular('dcim_modulebaytemplate', 'position varchar(30) not null,'),
        `create table dcim_inventoryitemtemplate (id ${d.serialPrimaryKey}, device_type_id bigint not null references dcim_devicetype(id),
          parent_id bigint references dcim_inventoryitemtemplate(id), name varchar(64) not null, _name varchar(100), label varchar(64) not null,
          role_id bigint references dcim_inventoryitemrole(id), manufacturer_id bigint references dcim_manufacturer(id), part_id varchar(50) not null,
          description varchar(200) not null, component_type varchar(100), component_id bigint, ${c}, unique (device_type_id, parent_id, name))`,
        `create index dcim_inventoryitemtemplate_component on dcim_inventoryitemtemplate (component_type, component_id)`,
        // Inventory items' assigned component (NetBox's component_type/component_id).
        `alter table dcim_inventoryitem add column component_type varchar(100)`,
        `alter table dcim_inventoryitem add column component_id bigint`,
        `create index dcim_inventoryitem_component on dcim_inventoryitem (component_type, component_id)`,
      ]);
    },
  },
  {
    name: '022_rack_types_module_type_profiles_images',
    async up(db, d) {
      const c = common(d);
      await exec(db, [
        `create table dcim_racktype (id ${d.serialPrimaryKey}, manufacturer_id bigint not null references dcim_manufacturer(id), model varchar(100) not null,
          slug varchar(100) not null unique, form_factor varchar(50) not null, width varchar(50) not null, u_height integer not null, starting_unit integer not null,
          desc_units ${d.booleanType} not null, outer_width integer, outer_height integer, outer_depth integer, outer_unit varchar(50), weight numeric(8,2),
          max_weight integer, weight_unit varchar(50), mounting_depth integer, description varchar(200) not null, comments text not null, ${c},
          unique (manufacturer_id, model))`,
        `alter table dcim_rack add column rack_type_id bigint references dcim_racktype(id)`,
        `create index dcim_rack_rack_type on dcim_rack (rack_type_id)`,
        `create table dcim_moduletypeprofile (id ${d.serialPrimaryKey}, name varchar(100) not null unique, schema ${d.jsonType}, description varchar(200) not null,
          comments text not null, ${c})`,
        `alter table dcim_moduletype add column profile_id bigint references dcim_moduletypeprofile(id)`,
        `alter table dcim_moduletype add column attributes ${d.jsonType}`,
        `alter table dcim_devicetype add column front_image varchar(100)`,
        `alter table dcim_devicetype add column rear_image varchar(100)`,
      ]);
    },
  },
];
