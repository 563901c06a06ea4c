import { sql, type Kysely } from 'kysely';
import type { Migration } from '@svc/storage';

async function exec(db: Kysely<any>, statements: string[]): Promise<void> {
  for (const s of statements) await sql.raw(s).execute(db);
}

/** Issue 24 (core data): numbered object types, tags' object types and weight. */
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
];
