import { sql, type RawBuilder } from 'kysely';
import type { ExtraFilter } from './types.ts';

/**
 * NetBox's counter filters (`interface_count`, MultiValueNumberFilter on a cached count) and "has children" filters
 * (`interfaces=true`, BooleanFilter), computed from the stored children instead of a cached counter.
 */
const children = (table: string, childTable: string, column: string): RawBuilder<unknown> =>
  sql`(select count(*) from ${sql.table(childTable)} c where c.${sql.ref(column)} = ${sql.ref(`${table}.id`)})`;
const exists = (table: string, childTable: string, column: string): RawBuilder<unknown> =>
  sql`exists (select 1 from ${sql.table(childTable)} c where c.${sql.ref(column)} = ${sql.ref(`${table}.id`)})`;

/** `<name>` as the number of rows of `childTable` whose `column` points at the object. */
export function countFilter(name: string, childTable: string, column: string): ExtraFilter {
  return { name, kind: 'int', expr: (t) => children(t, childTable, column) };
}

/** `<name>=true|false`: whether the object has rows in any of `childTables` (pointing at it by `column`). */
export function hasChildrenFilter(name: string, childTables: string[], column: string): ExtraFilter {
  return { name, kind: 'bool', expr: (t) => sql`(${sql.join(childTables.map((c) => exists(t, c, column)), sql` or `)})` };
}

/** LocalConfigContextFilterSet's `local_context_data=true|false`: whether the object has local config context data. */
export const localContextFilter: ExtraFilter = {
  name: 'local_context_data',
  kind: 'bool',
  expr: (t) => sql`(${sql.ref(`${t}.local_context_data`)} is not null and cast(${sql.ref(`${t}.local_context_data`)} as text) <> 'null')`,
};
