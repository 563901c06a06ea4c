import { sql, type RawBuilder } from 'kysely';
import type { Errors } from './validate.ts';
import type { ExtraFilter, ReadCtx } from './types.ts';

/**
 * django-filter's ModelMultipleChoiceFilter for objects tied to others by a NetBox generic relation
 * (`assigned_object_type` + `assigned_object_id`: MAC addresses, L2VPN terminations, FHRP group assignments),
 * in both directions. Every value must name an existing object (by id, or by `attribute`), else django-filter's
 * "Select a valid choice"; `null` matches objects without the relation. Leaf module: no registry imports.
 */

type Cond = RawBuilder<unknown>;
const invalid = (v: string) => `Select a valid choice. ${v} is not one of the available choices.`;

/** The ids of `table` the values name (by id, or by `attribute`), or undefined after recording django-filter's error. */
export async function namedIds(ctx: ReadCtx, name: string, vals: string[], table: string, attribute: string | undefined, errors: Errors, lenient = false, numeric = false): Promise<{ ids: number[]; withNull: boolean } | undefined> {
  // A lenient filter (NetBox's MultiValueCharFilter / MultiValueNumberFilter with a method) matches nothing for an unknown value.
  const withNull = !lenient && vals.includes('null');
  const given = vals.filter((v) => lenient || v !== 'null').map((v) => v.trim());
  if (!attribute || numeric) {
    const bad = given.find((v) => !/^-?\d{1,16}$/.test(v));
    if (bad !== undefined) return void (errors[name] = [lenient ? 'Enter a number.' : invalid(bad)]);
  } else if (given.some((v) => v.length > 200)) return void (errors[name] = [invalid(given.find((v) => v.length > 200)!.slice(0, 200))]);
  if (!given.length) return { ids: [], withNull };
  const col = attribute ?? 'id';
  const rows = await ctx.db.selectFrom(table).select(['id', `${col} as v`]).where(col, 'in', attribute && !numeric ? given : given.map(Number)).execute();
  const found = new Set(rows.map((r) => String(r.v)));
  const missing = given.find((v) => !found.has(attribute && !numeric ? v : String(Number(v))));
  if (missing !== undefined && !lenient) return void (errors[name] = [invalid(missing)]);
  return { ids: rows.map((r) => Number(r.id)), withNull };
}

const idList = (ids: number[]) => (ids.length ? sql`(${sql.join(ids)})` : sql`(select -1 where 1 = 0)`);

export interface AssignedSpec {
  /** This model's table and its generic relation's columns. */
  table: string;
  typeColumn: string;
  idColumn: string;
}

/**
 * A filter on the object this one is assigned to (`interface_id`, `device`, `virtual_machine_id`): values name rows of
 * `target`; `reach` maps their ids to the ids of the assigned objects of `type` (the ids themselves when absent).
 */
export function assignedFilter(name: string, spec: AssignedSpec, type: string, target: string, attribute?: string, reach?: (ids: Cond) => Cond, lenient = false): ExtraFilter {
  return {
    name,
    kind: 'custom',
    where: async (ctx, vals, errors) => {
      const named = await namedIds(ctx, name, vals, target, attribute, errors, lenient);
      if (!named) return undefined;
      const t = sql.ref(`${spec.table}.${spec.typeColumn}`);
      const id = sql.ref(`${spec.table}.${spec.idColumn}`);
      const parts: Cond[] = [];
      if (named.ids.length) parts.push(sql`(${t} = ${type} and ${id} in ${reach ? reach(idList(named.ids)) : idList(named.ids)})`);
      if (named.withNull) parts.push(sql`(${t} is null or ${t} <> ${type})`);
      return parts.length ? sql`(${sql.join(parts, sql` or `)})` : sql`1 = 0`;
    },
  };
}

export interface ReverseSpec {
  /** The filtered model's table and its object type (`dcim.interface`). */
  table: string;
  type: string;
  /** The table holding the generic relation, its columns, and the column holding the referenced value's id. */
  link: string;
  typeColumn: string;
  idColumn: string;
  column: string;
}

/** A filter on what points at this object through a generic relation (`l2vpn_id` of interfaces: their L2VPN terminations' L2VPN). */
export function reverseAssignedFilter(name: string, spec: ReverseSpec, target: string, attribute?: string, numeric = false): ExtraFilter {
  return {
    name,
    kind: 'custom',
    where: async (ctx, vals, errors) => {
      const named = await namedIds(ctx, name, vals, target, attribute, errors, false, numeric);
      if (!named) return undefined;
      const me = sql.ref(`${spec.table}.id`);
      const links = (cond: Cond) => sql`${me} in (select ${sql.ref(spec.idColumn)} from ${sql.table(spec.link)} where ${sql.ref(spec.typeColumn)} = ${spec.type} and ${cond})`;
      const parts: Cond[] = [];
      if (named.ids.length) parts.push(links(sql`${sql.ref(spec.column)} in ${idList(named.ids)}`));
      if (named.withNull) parts.push(sql`not ${links(sql`1 = 1`)}`);
      return parts.length ? sql`(${sql.join(parts, sql` or `)})` : sql`1 = 0`;
    },
  };
}

/** `<name>_id` and `<name>` (by `attribute`) of reverseAssignedFilter. */
export function reverseAssignedFilters(name: string, spec: ReverseSpec, target: string, attribute = 'slug', numeric = false): ExtraFilter[] {
  return [reverseAssignedFilter(`${name}_id`, spec, target), reverseAssignedFilter(name, spec, target, attribute, numeric)];
}

/** Interfaces of the given devices, VM interfaces of the given VMs: the `reach` of device / virtual machine filters. */
export const interfacesOf = (devices: Cond) => sql`(select id from dcim_interface where device_id in ${devices})`;
export const vmInterfacesOf = (vms: Cond) => sql`(select id from virtualization_vminterface where virtual_machine_id in ${vms})`;

/** The interface / VM interface / device / VM filters of an object assigned to an interface or VM interface. */
export function interfaceAssignmentFilters(spec: AssignedSpec, lenientParents = false): ExtraFilter[] {
  const l = lenientParents;
  return [
    assignedFilter('interface_id', spec, 'dcim.interface', 'dcim_interface'),
    assignedFilter('interface', spec, 'dcim.interface', 'dcim_interface', 'name'),
    assignedFilter('vminterface_id', spec, 'virtualization.vminterface', 'virtualization_vminterface'),
    assignedFilter('vminterface', spec, 'virtualization.vminterface', 'virtualization_vminterface', 'name'),
    assignedFilter('device_id', spec, 'dcim.interface', 'dcim_device', undefined, interfacesOf, l),
    assignedFilter('device', spec, 'dcim.interface', 'dcim_device', 'name', interfacesOf, l),
    assignedFilter('virtual_machine_id', spec, 'virtualization.vminterface', 'virtualization_virtualmachine', undefined, vmInterfacesOf, l),
    assignedFilter('virtual_machine', spec, 'virtualization.vminterface', 'virtualization_virtualmachine', 'name', vmInterfacesOf, l),
  ];
}
