import { sql, type RawBuilder } from 'kysely';
import type { ExtraFilter } from './types.ts';
import { normaliseMac } from './values.ts';

/**
 * NetBox filters computed from what is stored instead of NetBox's cached columns: counter filters (`interface_count`,
 * MultiValueNumberFilter on a cached count), "has children" filters (`interfaces=true`, BooleanFilter), and filters over a
 * relation kept on the other side (`service_id` of IP addresses, `termination_a_id` of circuits).
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

/** CableFilterSet's `unterminated=true`: cables without a termination at one of their ends (A or B). */
export const cableUnterminatedFilter: ExtraFilter = {
  name: 'unterminated',
  kind: 'bool',
  expr: (t) => {
    const end = (e: string) => sql`exists (select 1 from dcim_cabletermination ct where ct.cable_id = ${sql.ref(`${t}.id`)} and ct.cable_end = ${e})`;
    return sql`not (${end('A')} and ${end('B')})`;
  },
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

/**
 * A ModelMultipleChoiceFilter over a relation stored on the other side (`service_id` of IP addresses, `termination_a_id` of
 * circuits): ids of `table` that must exist (django-filter's error otherwise); `null` matches objects without one.
 */
function reverseIdFilter(name: string, table: string, matches: (ids: number[]) => RawBuilder<unknown>, none: () => RawBuilder<unknown>): ExtraFilter {
  return {
    name,
    kind: 'custom',
    where: async (ctx, vals, errors) => {
      const withNull = vals.includes('null');
      const given = vals.filter((v) => v !== 'null').map((v) => v.trim());
      const bad = given.find((v) => !/^\d{1,16}$/.test(v));
      const found = bad === undefined && given.length ? new Set((await ctx.db.selectFrom(table).select('id').where('id', 'in', given.map(Number)).execute()).map((r) => Number(r.id))) : new Set<number>();
      const missing = bad ?? given.find((v) => !found.has(Number(v)));
      if (missing !== undefined) {
        (errors[name] ??= []).push(`Select a valid choice. ${missing} is not one of the available choices.`);
        return undefined;
      }
      const parts = [];
      if (given.length) parts.push(matches(given.map(Number)));
      if (withNull) parts.push(none());
      return parts.length ? sql`(${sql.join(parts, sql` or `)})` : sql`1 = 0`;
    },
  };
}

/** CircuitFilterSet's `termination_a_id` / `termination_z_id`: circuits whose A (Z) side is one of the terminations. */
export function circuitTerminationFilter(side: 'A' | 'Z'): ExtraFilter {
  const own = (cond: RawBuilder<unknown>) => sql`${sql.ref('circuits_circuit.id')} in (select circuit_id from circuits_circuittermination where term_side = ${side} and ${cond})`;
  return reverseIdFilter(`termination_${side.toLowerCase()}_id`, 'circuits_circuittermination', (ids) => own(sql`id in (${sql.join(ids)})`), () => sql`not ${own(sql`1 = 1`)}`);
}

/** IPAddressFilterSet's `service_id`: addresses a service listens on; `null` means used by no service. */
export const ipServiceFilter: ExtraFilter = reverseIdFilter(
  'service_id',
  'ipam_service',
  (ids) => sql`${sql.ref('ipam_ipaddress.id')} in (select ipaddress_id from ipam_service_ipaddresses where service_id in (${sql.join(ids)}))`,
  () => sql`not exists (select 1 from ipam_service_ipaddresses s where s.ipaddress_id = ${sql.ref('ipam_ipaddress.id')})`,
);
