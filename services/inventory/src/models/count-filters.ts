import { sql, type RawBuilder } from 'kysely';
import type { ExtraFilter } from './types.ts';
import { normaliseMac } from './values.ts';

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

/** DeviceFilterSet's `mac_address`: devices with an interface of that MAC address (exact, any notation). */
export const deviceMacFilter: ExtraFilter = {
  name: 'mac_address',
  kind: 'custom',
  where: async (_ctx, vals) => {
    const macs = vals.map((v) => normaliseMac(v.trim()) ?? v.trim());
    return sql`${sql.ref('dcim_device.id')} in (select device_id from dcim_interface where mac_address in (${sql.join(macs)}))`;
  },
};

/** IPAddressFilterSet's `service_id`: addresses a service listens on; `null` means used by no service. */
export const ipServiceFilter: ExtraFilter = {
  name: 'service_id',
  kind: 'custom',
  where: async (ctx, vals, errors) => {
    const withNull = vals.includes('null');
    const given = vals.filter((v) => v !== 'null').map((v) => v.trim());
    const bad = given.find((v) => !/^\d{1,16}$/.test(v));
    const found = bad === undefined && given.length ? new Set((await ctx.db.selectFrom('ipam_service').select('id').where('id', 'in', given.map(Number)).execute()).map((r) => Number(r.id))) : new Set<number>();
    const missing = bad ?? given.find((v) => !found.has(Number(v)));
    if (missing !== undefined) {
      (errors.service_id ??= []).push(`Select a valid choice. ${missing} is not one of the available choices.`);
      return undefined;
    }
    const parts = [];
    if (given.length) parts.push(sql`${sql.ref('ipam_ipaddress.id')} in (select ipaddress_id from ipam_service_ipaddresses where service_id in (${sql.join(given.map(Number))}))`);
    if (withNull) parts.push(sql`not exists (select 1 from ipam_service_ipaddresses s where s.ipaddress_id = ${sql.ref('ipam_ipaddress.id')})`);
    return parts.length ? sql`(${sql.join(parts, sql` or `)})` : sql`1 = 0`;
  },
};
