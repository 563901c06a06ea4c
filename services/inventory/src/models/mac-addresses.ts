import { sql, type RawBuilder } from 'kysely';
import { compileLookup } from './regex-lookup.ts';
import { commentsField, descriptionField } from './tenancy.ts';
import { interfaceAssignmentFilters } from './assigned-filters.ts';
import { normaliseMac } from './values.ts';
import type { ExtraFilter, ModelDef, ReadCtx, Row } from './types.ts';

/**
 * NetBox 4.2+'s MAC addresses (`/api/dcim/mac-addresses/`): objects of their own, assigned to an interface or a
 * VM interface, one of which may be that interface's `primary_mac_address` (its `mac_address` is then that
 * object's). MACAddress.clean(): a primary MAC may be neither unassigned nor moved to another object.
 */

type Errors = Record<string, string[]>;
const ASSIGNABLE = [
  { value: 'dcim.interface', label: 'dcim.interface' },
  { value: 'virtualization.vminterface', label: 'virtualization.vminterface' },
];
const TABLE_OF: Record<string, string> = { 'dcim.interface': 'dcim_interface', 'virtualization.vminterface': 'virtualization_vminterface' };
const pick = (values: Row, existing: Row | null, column: string) => (column in values ? values[column] : existing?.[column] ?? null);

export const macAddress: ModelDef = {
  key: 'macaddress',
  app: 'dcim',
  path: 'mac-addresses',
  table: 'dcim_macaddress',
  objectType: 'dcim.macaddress',
  verboseName: 'MAC address',
  title: 'MACAddress',
  fields: [
    { name: 'mac_address', column: 'mac_address', kind: 'mac', required: true, filter: true, label: 'MAC address' },
    { name: 'assigned_object_type', column: 'assigned_object_type', kind: 'objecttype', nullable: true, default: null, choices: ASSIGNABLE },
    { name: 'assigned_object_id', column: 'assigned_object_id', kind: 'integer', nullable: true, default: null, min: 0, max: 2 ** 53 - 1 },
    descriptionField,
    commentsField,
  ],
  ordering: ['mac_address', 'id'],
  search: ['mac_address', 'description'],
  brief: ['mac_address', 'description'],
  taggable: true,
  display: (r) => r.mac_address,
  extraRefs: {
    assigned_interface: { model: 'interface', column: 'assigned_object_id', typeColumn: 'assigned_object_type', type: 'dcim.interface' },
    assigned_vminterface: { model: 'vminterface', column: 'assigned_object_id', typeColumn: 'assigned_object_type', type: 'virtualization.vminterface' },
  },
  represent(_row, out, refs) {
    const { assigned_object_id, ...rest } = out;
    const copy: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(rest)) {
      copy[k] = v;
      if (k === 'assigned_object_type') Object.assign(copy, { assigned_object_id, assigned_object: refs.assigned_interface ?? refs.assigned_vminterface ?? null });
    }
    return copy;
  },
  clean(values, existing, errors) {
    const type = pick(values, existing, 'assigned_object_type');
    const id = pick(values, existing, 'assigned_object_id');
    if (type !== null && id === null) (errors.assigned_object_id ??= []).push('This field is required when assigned_object_type is set.');
    if (type === null && id !== null) (errors.assigned_object_type ??= []).push('This field is required when assigned_object_id is set.');
  },
  async check(ctx, values, existing, errors) {
    const type = pick(values, existing, 'assigned_object_type');
    const id = pick(values, existing, 'assigned_object_id');
    if (type !== null && id !== null && ('assigned_object_id' in values || 'assigned_object_type' in values)) {
      const found = await ctx.db.selectFrom(TABLE_OF[type]!).select('id').where('id', '=', id).executeTakeFirst();
      if (!found) return void (errors.assigned_object_id ??= []).push(`Related object not found using the provided numeric ID: ${id}`);
    }
    if (!existing?.assigned_object_type || existing.assigned_object_id === null) return;
    // MACAddress.clean(): the primary MAC of its object stays assigned to that object.
    const table = TABLE_OF[existing.assigned_object_type];
    const owner = table && (await ctx.db.selectFrom(table).select('primary_mac_address_id').where('id', '=', existing.assigned_object_id).executeTakeFirst());
    if (!owner || Number(owner.primary_mac_address_id) !== Number(existing.id)) return;
    if (type === null) (errors.non_field_errors ??= []).push('Cannot unassign MAC Address while it is designated as the primary MAC for an object');
    else if (type !== existing.assigned_object_type || Number(id) !== Number(existing.assigned_object_id)) {
      (errors.non_field_errors ??= []).push('Cannot reassign MAC Address while it is designated as the primary MAC for an object');
    }
  },
  // The interface's `mac_address` column caches its primary MAC's address (the device `mac_address` filter and search read it).
  async afterSave(w, id, row) {
    await w.trx.updateTable('dcim_interface').set({ mac_address: row.mac_address }).where('primary_mac_address_id', '=', id).execute();
  },
  async beforeDelete(w, row) {
    await w.trx.updateTable('dcim_interface').set({ mac_address: null }).where('primary_mac_address_id', '=', row.id).execute();
  },
  setNull: [
    { model: 'interface', column: 'primary_mac_address_id' },
    { model: 'vminterface', column: 'primary_mac_address_id' },
  ],
  extraFilters: [
    ...interfaceAssignmentFilters({ table: 'dcim_macaddress', typeColumn: 'assigned_object_type', idColumn: 'assigned_object_id' }, true),
    { name: 'assigned_object_type', kind: 'custom', where: async (_ctx, vals) => sql`dcim_macaddress.assigned_object_type in (${sql.join(vals.map((v) => v.trim().toLowerCase()))})` },
    { name: 'assigned_object_id', kind: 'int', column: 'assigned_object_id' },
  ],
};

type Cond = RawBuilder<unknown>;
/** django-filter's BooleanFilter values; anything else filters nothing. */
const parseBool = (v: string) => ({ true: true, '1': true, false: false, '0': false })[v.trim().toLowerCase()] as boolean | undefined;
const likeEscape = (v: string) => v.replace(/[!%_]/g, (c) => `!${c}`);
const ilike = (c: Cond, pattern: string) => sql`lower(${c}) like lower(${pattern}) escape '!'`;

/** NetBox's string lookups of a MAC address filter: the condition on one address column for one value. */
const MAC_LOOKUPS: Record<string, { negate: boolean; cond: (c: Cond, v: string, ctx: ReadCtx) => Cond | Error }> = {
  '': { negate: false, cond: (c, v) => sql`${c} = ${normaliseMac(v) ?? v}` },
  n: { negate: true, cond: (c, v) => sql`${c} = ${normaliseMac(v) ?? v}` },
  ic: { negate: false, cond: (c, v) => ilike(c, `%${likeEscape(v)}%`) },
  nic: { negate: true, cond: (c, v) => ilike(c, `%${likeEscape(v)}%`) },
  ie: { negate: false, cond: (c, v) => ilike(c, likeEscape(v)) },
  nie: { negate: true, cond: (c, v) => ilike(c, likeEscape(v)) },
  isw: { negate: false, cond: (c, v) => ilike(c, `${likeEscape(v)}%`) },
  nisw: { negate: true, cond: (c, v) => ilike(c, `${likeEscape(v)}%`) },
  iew: { negate: false, cond: (c, v) => ilike(c, `%${likeEscape(v)}`) },
  niew: { negate: true, cond: (c, v) => ilike(c, `%${likeEscape(v)}`) },
  regex: { negate: false, cond: (c, v, ctx) => regex(c, v, ctx, false) },
  iregex: { negate: false, cond: (c, v, ctx) => regex(c, v, ctx, true) },
};

function regex(c: Cond, pattern: string, ctx: ReadCtx, insensitive: boolean): Cond | Error {
  const re = compileLookup(pattern, insensitive);
  if (re instanceof Error) return re;
  if (ctx.dialect.kind === 'postgres') return insensitive ? sql`${c} ~* ${pattern}` : sql`${c} ~ ${pattern}`;
  return sql`inventory_regexp(${pattern}, ${insensitive ? 'i' : ''}, ${c}) = 1`;
}

/**
 * `mac_address` (and its lookups) of interfaces and VM interfaces: NetBox's `mac_addresses__mac_address`, any MAC address
 * object assigned there, or (interfaces, `ownColumn`) the interface's own column, which holds its primary MAC's address or a
 * value written before 4.2. `__n` and the other negations keep the objects none of whose addresses match, as Django's exclude().
 */
export function macLookupFilters(table: string, type: string, ownColumn?: string): ExtraFilter[] {
  const filters: ExtraFilter[] = Object.entries(MAC_LOOKUPS).map(([lookup, l]) => {
    const name = lookup ? `mac_address__${lookup}` : 'mac_address';
    return {
      name,
      kind: 'custom',
      where: async (ctx, vals, errors) => {
        const parts: Cond[] = [];
        for (const raw of vals) {
          const v = raw.trim();
          const own = ownColumn ? l.cond(sql.ref(`${table}.${ownColumn}`), v, ctx) : undefined;
          const other = l.cond(sql.ref('m.mac_address'), v, ctx);
          if (other instanceof Error) return void (errors[name] = [other.message]);
          const objects = sql`exists (select 1 from dcim_macaddress m where m.assigned_object_type = ${type} and m.assigned_object_id = ${sql.ref(`${table}.id`)} and ${other})`;
          parts.push(own && !(own instanceof Error) ? sql`(coalesce(${own}, ${sql.lit(false)}) or ${objects})` : objects);
        }
        if (!parts.length) return undefined;
        return l.negate ? sql`not (${sql.join(parts, sql` or `)})` : sql`(${sql.join(parts, sql` or `)})`;
      },
    };
  });
  filters.push({
    name: 'mac_address__empty',
    kind: 'custom',
    where: async (_ctx, vals) => {
      const b = parseBool(vals[0]!);
      if (b === undefined) return undefined;
      const has = sql`exists (select 1 from dcim_macaddress m where m.assigned_object_type = ${type} and m.assigned_object_id = ${sql.ref(`${table}.id`)})`;
      const any = ownColumn ? sql`(${has} or coalesce(${sql.ref(`${table}.${ownColumn}`)}, '') <> '')` : has;
      return b ? sql`not ${any}` : any;
    },
  });
  return filters;
}

/** `mac_address` of VMs: any MAC address object on their interfaces (exact, any notation). */
export function macAddressFilter(table: string, type: string, owner?: { table: string; column: string }): ExtraFilter {
  return {
    name: 'mac_address',
    kind: 'custom',
    where: async (_ctx, vals) => {
      const macs = vals.map((v) => normaliseMac(v.trim()) ?? v.trim());
      const assigned = sql`(select assigned_object_id from dcim_macaddress where assigned_object_type = ${type} and mac_address in (${sql.join(macs)}))`;
      if (!owner) return sql`${sql.ref(`${table}.id`)} in ${assigned}`;
      return sql`${sql.ref(`${table}.id`)} in (select ${sql.ref(owner.column)} from ${sql.table(owner.table)} where id in ${assigned})`;
    },
  };
}

/** `primary_mac_address_id` / `primary_mac_address` (by address) of interfaces and VM interfaces. */
export function primaryMacFilters(): ExtraFilter[] {
  return [
    { name: 'primary_mac_address_id', kind: 'fk_id', column: 'primary_mac_address_id', model: 'macaddress' },
    { name: 'primary_mac_address', kind: 'fk_slug', column: 'primary_mac_address_id', model: 'macaddress', attribute: 'mac_address' },
  ];
}

/** Interface.clean() / VMInterface.clean(): the primary MAC must be one assigned to this interface. */
export async function checkPrimaryMac(ctx: ReadCtx, type: string, values: Row, existing: Row | null, errors: Errors): Promise<void> {
  const mac = pick(values, existing, 'primary_mac_address_id');
  if (mac === null || !('primary_mac_address_id' in values)) return;
  const row = await ctx.db.selectFrom('dcim_macaddress').select(['mac_address', 'assigned_object_type', 'assigned_object_id']).where('id', '=', mac).executeTakeFirst();
  if (!row) return;
  if (!existing || row.assigned_object_type !== type || Number(row.assigned_object_id) !== Number(existing.id)) {
    (errors.primary_mac_address ??= []).push(`MAC address ${row.mac_address} is not assigned to this interface.`);
  }
}
