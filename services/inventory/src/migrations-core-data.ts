import { sql, type Kysely } from 'kysely';
import type { Migration } from '@svc/storage';

async function exec(db: Kysely<any>, statements: string[]): Promise<void> {
  for (const s of statements) await sql.raw(s).execute(db);
}

/** Issue 24 (core data): numbered object types, tags' object types and weight, data sources and files. */
export const coreDataMigrations: Migration[] = [
  {
    // NetBox's ObjectType rows: the ids the `*_type_id` filters take (filled as types are first needed, see models/object-types.ts).
    name: '033_object_types',
    async up(db, d) {
      await exec(db, [`create table core_objecttype (id ${d.serialPrimaryKey}, app_label varchar(100) not null, model varchar(100) not null, unique (app_label, model))`]);
    },
  },
  {
    // NetBox 4.x tags: the object types a tag may be applied to (empty: any) and the weight tags are ordered by.
    name: '034_tag_object_types_weight',
    async up(db, d) {
      await exec(db, [`alter table extras_tag add column weight integer not null default 1000`, `alter table extras_tag add column object_types ${d.jsonType} not null default '[]'`]);
    },
  },
  {
    // NetBox's data sources and the files a sync copies from them (content as bytes); config contexts' and templates'
    // SyncedDataMixin columns. Sync times are ISO text, compared as text by the filters.
    name: '035_data_sources',
    async up(db, d) {
      const c = `custom_fields ${d.jsonType} not null, created ${d.timestampType} not null, last_updated ${d.timestampType} not null`;
      const synced = (t: string) => [
        `alter table ${t} add column data_source_id bigint references core_datasource(id)`,
        `alter table ${t} add column data_file_id bigint references core_datafile(id) on delete set null`,
        `alter table ${t} add column data_path varchar(1000) not null default ''`,
        `alter table ${t} add column auto_sync_enabled ${d.booleanType} not null default ${d.kind === 'postgres' ? 'false' : '0'}`,
        `alter table ${t} add column data_synced varchar(40)`,
      ];
      await exec(db, [
        `create table core_datasource (id ${d.serialPrimaryKey}, name varchar(100) not null unique, type varchar(50) not null,
          source_url varchar(200) not null, status varchar(50) not null default 'new', enabled ${d.booleanType} not null,
          description varchar(200) not null, sync_interval integer, parameters ${d.jsonType}, ignore_rules text not null,
          comments text not null, last_synced varchar(40), ${c})`,
        `create table core_datafile (id ${d.serialPrimaryKey}, source_id bigint not null references core_datasource(id) on delete cascade,
          path varchar(1000) not null, size bigint not null, hash varchar(64) not null, data ${d.kind === 'postgres' ? 'bytea' : 'blob'} not null,
          custom_fields ${d.jsonType} not null default '{}', created ${d.timestampType} not null, last_updated ${d.timestampType} not null, unique (source_id, path))`,
        ...synced('extras_configcontext'),
        ...synced('extras_configtemplate'),
      ]);
    },
  },
];
