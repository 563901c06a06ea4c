import { sql, type RawBuilder } from 'kysely';
import { chunks, type ReadCtx } from './read.ts';
import { model } from './lookup.ts';
import type { ExtraFilter, FieldDef, ModelDef } from './types.ts';
import type { Errors } from './validate.ts';
import { normaliseMac } from './values.ts';
import { hexKey, parseNet } from './ip.ts';
import { NETBOX_FILTERS, NETBOX_LOOKUPS } from './netbox-filters.ts';
import { DEVICE_STATUS } from './choices.ts';
import { cablingFilterSql } from './cabling.ts';
import { compileLookup } from './regex-lookup.ts';
import { customFieldsFor } from './custom-fields.ts';
import { chassisBayFilter } from './chassis-bay-filters.ts';

export type Query = Record<string, string | string[] | undefined>;
type Cond = RawBuilder<unknown>;

/** Parameters that are not filters. */
const RESERVED = new Set(['limit', 'offset', 'ordering', 'brief', 'fields', 'omit', 'format', 'exclude']);
const MAX_VALUES = 1000;

export function values(q: Query, key: string): string[] {
  const v = q[key];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).slice(0, MAX_VALUES).map((s) => String(s).slice(0, 1000));
}

function likeEscape(s: string): string {
  return s.replace(/[!%_]/g, (c) => `!${c}`);
}

function ilike(column: string, pattern: string): Cond {
  return sql`lower(${sql.ref(column)}) like lower(${pattern}) escape '!'`;
}

const col = (table: string, column: string) => sql.ref(`${table}.${column}`);

function invalidChoice(v: string): string {
  return `Select a valid choice. ${v} is not one of the available choices.`;
}

function parseNumbers(vals: string[], name: string, errors: Errors, decimal = false): number[] | undefined {
  const out: number[] = [];
  for (const v of vals) {
    const t = v.trim();
    const ok = decimal ? /^-?\d{1,12}(\.\d{1,6})?$/.test(t) : /^-?\d{1,16}$/.test(t) && Number.isSafeInteger(Number(t));
    if (!ok) {
      (errors[name] ??= []).push('Enter a number.');
      return undefined;
    }
    out.push(Number(t));
  }
  return out;
}

function parseDate(v: string): string | undefined {
  const t = v.trim();
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(t)) return undefined;
  const d = new Date(/[T ]/.test(t) && !/(Z|[+-]\d{2}:?\d{2})$/.test(t) ? t.replace(' ', 'T') + 'Z' : t.replace(' ', 'T'));
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

function inList(column: Cond | ReturnType<typeof sql.ref> | RawBuilder<unknown>, vals: unknown[]): Cond {
  if (vals.length === 0) return sql`1 = 0`;
  return sql`${column} in (${sql.join(vals)})`;
}

const NUMERIC_LOOKUPS: Record<string, string> = { gt: '>', gte: '>=', lt: '<', lte: '<=' };

function numericFilters(table: string, column: string | Cond, name: string, q: Query, errors: Errors, conds: Cond[], decimal = false): void {
  // Compared as bigint: a 32-bit column would make PostgreSQL reject a large parameter instead of matching nothing.
  const ref = typeof column === 'string' ? col(table, column) : sql`(${column})`;
  const c = column === 'id' ? ref : decimal ? sql`cast(${ref} as numeric)` : sql`cast(${ref} as bigint)`;
  const exact = parseNumbers(values(q, name), name, errors, decimal);
  if (exact?.length) conds.push(inList(c, exact));
  const neg = parseNumbers(values(q, `${name}__n`), `${name}__n`, errors, decimal);
  // Django's exclude() keeps rows whose (nullable) column is empty.
  if (neg?.length) conds.push(sql`(${ref} is null or not ${inList(c, neg)})`);
  for (const [lookup, op] of Object.entries(NUMERIC_LOOKUPS)) {
    const vals = parseNumbers(values(q, `${name}__${lookup}`), `${name}__${lookup}`, errors, decimal);
    for (const n of vals ?? []) conds.push(sql`${c} ${sql.raw(op)} ${n}`);
  }
}

/** `__regex` / `__iregex`: RE2-checked patterns, matched by the storage (see regex-lookup.ts). */
function regexFilters(ctx: ReadCtx | undefined, table: string, column: string, name: string, q: Query, errors: Errors | undefined, conds: Cond[]): void {
  for (const lookup of ['regex', 'iregex'] as const) {
    const key = `${name}__${lookup}`;
    for (const pattern of values(q, key)) {
      const re = compileLookup(pattern, lookup === 'iregex');
      if (re instanceof Error) {
        if (errors) (errors[key] ??= []).push(re.message);
        else conds.push(sql`1 = 0`);
        continue;
      }
      const c = col(table, column);
      if (ctx?.dialect.kind === 'postgres') conds.push(lookup === 'iregex' ? sql`cast(${c} as text) ~* ${pattern}` : sql`cast(${c} as text) ~ ${pattern}`);
      else conds.push(sql`inventory_regexp(${pattern}, ${lookup === 'iregex' ? 'i' : ''}, ${c}) = 1`);
    }
  }
}

function stringFilters(table: string, column: string, name: string, q: Query, conds: Cond[], normalise = (s: string) => s, ctx?: ReadCtx, errors?: Errors): void {
  const c = `${table}.${column}`;
  regexFilters(ctx, table, column, name, q, errors, conds);
  const exact = values(q, name).map(normalise);
  if (exact.length) conds.push(inList(col(table, column), exact));
  const neg = values(q, `${name}__n`).map(normalise);
  if (neg.length) conds.push(sql`(${col(table, column)} is null or not ${inList(col(table, column), neg)})`);
  const or = (vals: string[], make: (v: string) => string, negate = false) => {
    if (!vals.length) return;
    const any = sql`(${sql.join(vals.map((v) => ilike(c, make(likeEscape(v)))), sql` or `)})`;
    conds.push(negate ? sql`(${col(table, column)} is null or not ${any})` : any);
  };
  or(values(q, `${name}__ic`), (v) => `%${v}%`);
  or(values(q, `${name}__nic`), (v) => `%${v}%`, true);
  or(values(q, `${name}__ie`), (v) => v);
  or(values(q, `${name}__nie`), (v) => v, true);
  or(values(q, `${name}__isw`), (v) => `${v}%`);
  or(values(q, `${name}__nisw`), (v) => `${v}%`, true);
  or(values(q, `${name}__iew`), (v) => `%${v}`);
  or(values(q, `${name}__niew`), (v) => `%${v}`, true);
  for (const v of values(q, `${name}__empty`)) {
    const b = parseBool(v);
    if (b === true) conds.push(sql`(${col(table, column)} is null or ${col(table, column)} = '')`);
    if (b === false) conds.push(sql`(${col(table, column)} is not null and ${col(table, column)} <> '')`);
  }
}

export function parseBool(v: string): boolean | undefined {
  const l = v.trim().toLowerCase();
  if (['true', '1', 't', 'yes', 'on'].includes(l)) return true;
  if (['false', '0', 'f', 'no', 'off'].includes(l)) return false;
  return undefined;
}

async function existingIds(ctx: ReadCtx, table: string, column: string, vals: (string | number)[]): Promise<Set<string>> {
  if (vals.length === 0) return new Set();
  const rows = await ctx.db.selectFrom(table).select(`${column} as v`).where(column, 'in', vals).execute();
  return new Set(rows.map((r) => String(r.v)));
}

/** A related-object filter (`site_id=1`, `site=hq`): every value must exist, as django-filter's ModelMultipleChoiceFilter. */
async function relatedFilter(ctx: ReadCtx, m: ModelDef, f: ExtraFilter, q: Query, errors: Errors, conds: Cond[]): Promise<void> {
  const target = model(f.model!);
  for (const [suffix, negate] of [['', false], ['__n', true]] as const) {
    const key = `${f.name}${suffix}`;
    const vals = values(q, key);
    if (!vals.length) continue;
    // django-filter's null_value: `null` among the values also matches objects without the relation.
    const withNull = vals.includes('null');
    const given = vals.filter((v) => v !== 'null');
    let ids: number[] = [];
    if (f.kind === 'fk_id') {
      const bad = given.find((v) => !/^\d{1,16}$/.test(v.trim()));
      if (bad !== undefined) {
        (errors[key] ??= []).push(invalidChoice(bad));
        continue;
      }
      const found = await existingIds(ctx, target.table, 'id', given.map(Number));
      const missing = given.find((v) => !found.has(String(Number(v))));
      if (missing !== undefined) {
        (errors[key] ??= []).push(invalidChoice(missing));
        continue;
      }
      ids = given.map(Number);
    } else if (given.length) {
      const rows = await ctx.db.selectFrom(target.table).select(['id', `${f.attribute!} as v`]).where(f.attribute!, 'in', given).execute();
      const found = new Set(rows.map((r) => String(r.v)));
      const missing = given.find((v) => !found.has(v));
      if (missing !== undefined) {
        (errors[key] ??= []).push(invalidChoice(missing));
        continue;
      }
      ids = rows.map((r) => Number(r.id));
    }
    if (f.subtree) ids = await subtreeIds(ctx, target.table, ids);
    const steps = [...(f.through ?? [])].reverse();
    let set: Cond = ids.length ? sql`(${sql.join(ids)})` : sql`(select null where 1 = 0)`;
    for (const step of steps) set = sql`(select id from ${sql.table(step.table)} where ${sql.ref(step.column)} in ${set})`;
    const parts: Cond[] = [];
    if (ids.length) parts.push(sql`${col(m.table, f.column!)} in ${set}`);
    if (withNull) {
      // The relation is empty at some hop: directly on this table, or on a row of the `through` chain (Django's
      // `a__b__isnull=True` joins outer, so a row without `a` matches too).
      if (!steps.length) parts.push(sql`${col(m.table, f.column!)} is null`);
      else {
        let nulls: Cond = sql`(select id from ${sql.table(steps[0]!.table)} where ${sql.ref(steps[0]!.column)} is null)`;
        for (const step of steps.slice(1)) nulls = sql`(select id from ${sql.table(step.table)} where ${sql.ref(step.column)} is null or ${sql.ref(step.column)} in ${nulls})`;
        parts.push(sql`(${col(m.table, f.column!)} is null or ${col(m.table, f.column!)} in ${nulls})`);
      }
    }
    const c = parts.length ? sql`(${sql.join(parts, sql` or `)})` : sql`1 = 0`;
    // Django's exclude() keeps the rows whose column is empty, unless `null` itself is excluded.
    if (!negate) conds.push(c);
    else if (withNull && !steps.length) conds.push(sql`(${col(m.table, f.column!)} is not null and not ${c})`);
    else conds.push(sql`(${col(m.table, f.column!)} is null or not ${c})`);
  }
}

/** Most levels of a tree a subtree filter follows (NetBox's MPTT trees are shallow; this bounds a cycle). */
const MAX_TREE_DEPTH = 100;

/** The given nodes of a tree (rows linked by `parent_id`) and all their descendants. */
async function subtreeIds(ctx: ReadCtx, table: string, roots: number[]): Promise<number[]> {
  const seen = new Set(roots);
  let frontier = [...seen];
  for (let depth = 0; frontier.length && depth < MAX_TREE_DEPTH; depth++) {
    const next: number[] = [];
    for (const part of chunks(frontier, 1000)) {
      const rows = await ctx.db.selectFrom(table).select('id').where('parent_id', 'in', part).execute();
      for (const r of rows) {
        const id = Number(r.id);
        if (!seen.has(id)) seen.add(id), next.push(id);
      }
    }
    frontier = next;
  }
  return [...seen];
}

/** NetBox's interface kinds (`kind=`): virtual and wireless types; physical is every other type. */
const VIRTUAL_IFACE_TYPES = ['virtual', 'bridge', 'lag'];
const WIRELESS_IFACE_TYPES = ['ieee802.11a', 'ieee802.11g', 'ieee802.11n', 'ieee802.11ac', 'ieee802.11ad', 'ieee802.11ax', 'ieee802.11ay', 'ieee802.11be', 'ieee802.15.1', 'other-wireless'];

/**
 * NetBox's Device.vc_interfaces() of the named devices: their own interfaces, and for a virtual chassis' master
 * also the other members' non-management ones (what IP address `device`/`device_id` filters match).
 */
function interfacesOfDevices(devices: Cond): Cond {
  const members = sql`(select m.id from dcim_device m join dcim_device d on m.virtual_chassis_id = d.virtual_chassis_id join dcim_virtualchassis vc on vc.id = d.virtual_chassis_id and vc.master_id = d.id where d.id in ${devices})`;
  return sql`(select id from dcim_interface where device_id in ${devices} or (mgmt_only = ${sql.lit(false)} and device_id in ${members}))`;
}

/** Model-specific filters that follow a relation through another table. */
async function customFilter(ctx: ReadCtx, m: ModelDef, f: ExtraFilter, q: Query, errors: Errors, conds: Cond[]): Promise<void> {
  const vals = values(q, f.name);
  if (!vals.length) return;
  if (f.where) {
    const c = await f.where(ctx, vals, errors);
    if (c) conds.push(c);
    return;
  }
  const key0 = `${m.key}.${f.name}`;
  if (await chassisBayFilter(ctx, key0, m.table, f.name, vals, errors, conds)) return;
  switch (key0) {
    case 'interface.device_status':
    case 'consoleport.device_status':
    case 'consoleserverport.device_status':
    case 'powerport.device_status':
    case 'poweroutlet.device_status':
    case 'frontport.device_status':
    case 'rearport.device_status':
    case 'modulebay.device_status':
    case 'inventoryitem.device_status': {
      const bad = vals.find((v) => !DEVICE_STATUS.some((c) => c.value === v));
      if (bad !== undefined) (errors[f.name] ??= []).push(invalidChoice(bad));
      else conds.push(sql`${col(m.table, 'device_id')} in (select id from dcim_device where ${inList(sql.ref('status'), vals)})`);
      return;
    }
    case 'interface.kind': {
      const kind = vals[0]!.trim().toLowerCase();
      const t = col(m.table, 'type');
      if (kind === 'physical') conds.push(sql`not ${inList(t, [...VIRTUAL_IFACE_TYPES, ...WIRELESS_IFACE_TYPES])}`);
      else if (kind === 'virtual') conds.push(inList(t, VIRTUAL_IFACE_TYPES));
      else if (kind === 'wireless') conds.push(inList(t, WIRELESS_IFACE_TYPES));
      else conds.push(sql`1 = 0`);
      return;
    }
    case 'interface.vlan_id':
    case 'interface.vlan':
    case 'vminterface.vlan_id':
    case 'vminterface.vlan': {
      const v = vals[0]!.trim();
      if (!v) return;
      if (!/^\d{1,9}$/.test(v)) {
        // NetBox compares with an integer column; a value that is not one matches nothing.
        conds.push(sql`1 = 0`);
        return;
      }
      const n = Number(v);
      const vlans = f.name === 'vlan_id' ? sql`(${n})` : sql`(select id from ipam_vlan where vid = ${n})`;
      const tagged = m.key === 'interface' ? sql`(select interface_id from dcim_interface_tagged_vlans where vlan_id in ${vlans})` : sql`(select vminterface_id from virtualization_vminterface_tagged_vlans where vlan_id in ${vlans})`;
      conds.push(sql`(${col(m.table, 'untagged_vlan_id')} in ${vlans} or ${col(m.table, 'id')} in ${tagged})`);
      return;
    }
    case 'ipaddress.mask_length':
    case 'ipaddress.mask_length__gte':
    case 'ipaddress.mask_length__lte': {
      const nums = parseNumbers(vals, f.name, errors);
      if (!nums) return;
      const address = col(m.table, 'address');
      // The digits after the slash of the stored `address/len`, in SQL both storages share.
      const len = sql`cast(substr(${address}, length(rtrim(${address}, '0123456789')) + 1) as integer)`;
      if (f.name === 'mask_length') conds.push(inList(len, nums));
      else conds.push(sql`${len} ${sql.raw(f.name.endsWith('gte') ? '>=' : '<=')} ${nums[0]!}`);
      return;
    }
    case 'service.parent_object_type':
      conds.push(inList(col(m.table, 'parent_object_type'), vals.map((v) => v.trim().toLowerCase())));
      return;
    case 'service.device_id':
    case 'service.virtual_machine_id': {
      const nums = parseNumbers(vals, f.name, errors);
      if (!nums) return;
      const type = f.name === 'device_id' ? 'dcim.device' : 'virtualization.virtualmachine';
      conds.push(sql`(${col(m.table, 'parent_object_type')} = ${type} and ${inList(col(m.table, 'parent_object_id'), nums)})`);
      return;
    }
    case 'service.device':
    case 'service.virtual_machine': {
      const [type, table] = f.name === 'device' ? ['dcim.device', 'dcim_device'] : ['virtualization.virtualmachine', 'virtualization_virtualmachine'];
      conds.push(sql`(${col(m.table, 'parent_object_type')} = ${type} and ${col(m.table, 'parent_object_id')} in (select id from ${sql.table(table)} where ${inList(sql.ref('name'), vals)}))`);
      return;
    }
    case 'service.ip_address_id':
    case 'service.ip_address': {
      let ips: Cond;
      if (f.name === 'ip_address_id') {
        const nums = parseNumbers(vals, f.name, errors);
        if (!nums) return;
        ips = sql`(${sql.join(nums)})`;
      } else {
        // NetBox matches the address with its mask, as stored.
        ips = sql`(select id from ipam_ipaddress where ${inList(sql.ref('address'), vals.map((v) => v.trim().toLowerCase()))})`;
      }
      conds.push(sql`${col(m.table, 'id')} in (select service_id from ipam_service_ipaddresses where ipaddress_id in ${ips})`);
      return;
    }
    case 'service.port': {
      const nums = parseNumbers(vals, f.name, errors);
      if (!nums) return;
      // `ports` holds a JSON array of integers; a port matches as a whole element of it.
      const ports = col(m.table, 'ports');
      const text = ctx.dialect.kind === 'postgres' ? sql`(${ports})::text` : sql`${ports}`;
      const spaced = sql`replace(replace(replace(${text}, ' ', ''), '[', ','), ']', ',')`;
      conds.push(sql`(${sql.join(nums.map((n) => sql`${spaced} like ${`%,${n},%`}`), sql` or `)})`);
      return;
    }
    case 'ipaddress.assigned_object_type':
      conds.push(inList(col(m.table, 'assigned_object_type'), vals.map((v) => v.trim().toLowerCase())));
      return;
    case 'ipaddress.device': {
      const ifaces = interfacesOfDevices(sql`(select id from dcim_device where ${inList(sql.ref('name'), vals)})`);
      conds.push(sql`(${col(m.table, 'assigned_object_type')} = 'dcim.interface' and ${col(m.table, 'assigned_object_id')} in ${ifaces})`);
      return;
    }
    case 'ipaddress.virtual_machine_id':
    case 'ipaddress.virtual_machine': {
      let vms: Cond;
      if (f.name === 'virtual_machine') vms = sql`(select id from virtualization_virtualmachine where ${inList(sql.ref('name'), vals)})`;
      else {
        const nums = parseNumbers(vals, f.name, errors);
        if (!nums) return;
        vms = sql`(${sql.join(nums)})`;
      }
      conds.push(
        sql`(${col(m.table, 'assigned_object_type')} = 'virtualization.vminterface' and ${col(m.table, 'assigned_object_id')} in (select id from virtualization_vminterface where virtual_machine_id in ${vms}))`,
      );
      return;
    }
    case 'ipaddress.vminterface_id':
    case 'ipaddress.vminterface': {
      // ModelMultipleChoiceFilters: every id or name must be some VM interface's.
      const byId = f.name === 'vminterface_id';
      if (byId && vals.some((v) => !/^\d{1,16}$/.test(v.trim()))) {
        (errors[f.name] ??= []).push(invalidChoice(vals.find((v) => !/^\d{1,16}$/.test(v.trim()))!));
        return;
      }
      const wanted = byId ? vals.map((v) => Number(v)) : vals;
      const rows = await ctx.db.selectFrom('virtualization_vminterface').select(byId ? 'id as v' : 'name as v').distinct().where(byId ? 'id' : 'name', 'in', wanted).execute();
      const found = new Set(rows.map((r) => String(r.v)));
      const missing = vals.find((v) => !found.has(byId ? String(Number(v)) : v));
      if (missing !== undefined) (errors[f.name] ??= []).push(invalidChoice(missing));
      else conds.push(sql`(${col(m.table, 'assigned_object_type')} = 'virtualization.vminterface' and ${col(m.table, 'assigned_object_id')} in (select id from virtualization_vminterface where ${inList(sql.ref(byId ? 'id' : 'name'), wanted)}))`);
      return;
    }
    case 'ipaddress.interface': {
      // A ModelMultipleChoiceFilter by name: every name must be some interface's.
      const rows = await ctx.db.selectFrom('dcim_interface').select('name').distinct().where('name', 'in', vals).execute();
      const found = new Set(rows.map((r) => String(r.name)));
      const missing = vals.find((v) => !found.has(v));
      if (missing !== undefined) (errors[f.name] ??= []).push(invalidChoice(missing));
      else conds.push(sql`(${col(m.table, 'assigned_object_type')} = 'dcim.interface' and ${col(m.table, 'assigned_object_id')} in (select id from dcim_interface where ${inList(sql.ref('name'), vals)}))`);
      return;
    }
    case 'ipaddress.assigned': {
      const b = parseBool(vals[0]!);
      if (b === true) conds.push(sql`(${col(m.table, 'assigned_object_type')} is not null or ${col(m.table, 'assigned_object_id')} is not null)`);
      if (b === false) conds.push(sql`(${col(m.table, 'assigned_object_type')} is null and ${col(m.table, 'assigned_object_id')} is null)`);
      return;
    }
    case 'ipaddress.present_in_vrf_id':
    case 'ipaddress.present_in_vrf':
    case 'prefix.present_in_vrf_id':
    case 'prefix.present_in_vrf': {
      // A ModelChoiceFilter: one VRF, by id or by RD. Route targets are not modelled, so "present" is "in".
      const v = vals[vals.length - 1]!.trim();
      const attr = f.name === 'present_in_vrf_id' ? 'id' : 'rd';
      const row = attr === 'id' && !/^\d{1,16}$/.test(v) ? undefined : await ctx.db.selectFrom('ipam_vrf').select('id').where(attr, '=', attr === 'id' ? Number(v) : v).executeTakeFirst();
      if (!row) (errors[f.name] ??= []).push('Select a valid choice. That choice is not one of the available choices.');
      else conds.push(sql`${col(m.table, 'vrf_id')} = ${Number(row.id)}`);
      return;
    }
  }
  if (f.name === 'assigned_to_interface') {
    const b = parseBool(vals[0]!);
    const onInterface = sql`(${col(m.table, 'assigned_object_type')} in ('dcim.interface', 'virtualization.vminterface') and ${col(m.table, 'assigned_object_id')} is not null)`;
    if (b === true) conds.push(onInterface);
    if (b === false) conds.push(sql`not ${onInterface}`);
    return;
  }
  const key = `${m.key}.${f.name}`;
  if (key === 'device.has_primary_ip' || key === 'device.has_oob_ip' || key === 'virtualmachine.has_primary_ip') {
    const b = parseBool(vals[0]!);
    const c = key === 'device.has_oob_ip' ? sql`${col(m.table, 'oob_ip_id')} is not null` : sql`(${col(m.table, 'primary_ip4_id')} is not null or ${col(m.table, 'primary_ip6_id')} is not null)`;
    if (b === undefined) (errors[f.name] ??= []).push('Must be a valid boolean.');
    else conds.push(b ? c : sql`not ${c}`);
    return;
  }
  if (key === 'ipaddress.parent' || key === 'prefix.within' || key === 'prefix.within_include' || key === 'prefix.contains') {
    const nets = [];
    for (const v of vals) {
      const n = parseNet(v.includes('/') ? v : `${v}/${v.includes(':') ? 128 : 32}`);
      if (!n) {
        (errors[f.name] ??= []).push(key === 'prefix.contains' ? 'Enter a valid IPv4 or IPv6 address or prefix.' : 'Enter a valid IPv4 or IPv6 prefix.');
        return;
      }
      nets.push(n);
    }
    const one = (n: NonNullable<ReturnType<typeof parseNet>>) => {
      const first = hexKey(n.first, n.family);
      const last = hexKey(n.last, n.family);
      const fam = sql`${col(m.table, 'family')} = ${n.family}`;
      if (key === 'ipaddress.parent') return sql`(${fam} and ${col(m.table, '_host')} >= ${first} and ${col(m.table, '_host')} <= ${last})`;
      if (key === 'prefix.contains') return sql`(${fam} and ${col(m.table, '_first')} <= ${first} and ${col(m.table, '_last')} >= ${last})`;
      const strict = key === 'prefix.within' ? sql`${col(m.table, '_len')} > ${n.len}` : sql`${col(m.table, '_len')} >= ${n.len}`;
      return sql`(${fam} and ${col(m.table, '_first')} >= ${first} and ${col(m.table, '_last')} <= ${last} and ${strict})`;
    };
    conds.push(sql`(${sql.join(nets.map(one), sql` or `)})`);
    return;
  }
  if (key0 === 'customfield.object_type') {
    // Definitions whose object_types list holds the type (a JSON list: matched on its quoted element).
    conds.push(sql`(${sql.join(vals.map((v) => sql`cast(${col(m.table, 'object_types')} as text) like ${`%${likeEscape(JSON.stringify(v.trim()))}%`} escape '!'`), sql` or `)})`);
    return;
  }
  if (f.name === 'cabled' || f.name === 'occupied' || f.name === 'cable_end' || m.key === 'cable') {
    let ids: number[] | undefined;
    let name = f.name;
    // CableFilterSet's device/site/rack/location by name (site: slug): values naming nothing match nothing.
    const byName = ({ 'cable.device': ['dcim_device', 'name'], 'cable.site': ['dcim_site', 'slug'], 'cable.rack': ['dcim_rack', 'name'], 'cable.location': ['dcim_location', 'name'] } as Record<string, [string, string]>)[key];
    if (byName) {
      ids = (await ctx.db.selectFrom(byName[0]).select('id').where(byName[1], 'in', vals).execute()).map((r) => Number(r.id));
      name = `${f.name}_id`;
    } else if (/_id$/.test(f.name)) {
      ids = parseNumbers(vals, f.name, errors);
      if (!ids) return;
    }
    const c = cablingFilterSql(m, name, vals, ids);
    if (c === 'bad') (errors[f.name] ??= []).push(f.name === 'cabled' || f.name === 'occupied' ? 'Select a valid choice. That choice is not one of the available choices.' : 'Enter a number.');
    else if (c) conds.push(c);
    return;
  }
  if (key === 'circuit.site' || key === 'circuit.site_id' || key === 'circuittermination.site' || key === 'circuittermination.site_id' || key === 'circuittermination.provider_network_id' || key === 'circuit.provider_network_id' || key === 'circuittermination.termination_type') {
    let target: Cond;
    if (key.endsWith('.termination_type')) {
      conds.push(inList(col(m.table, 'termination_type'), vals));
      return;
    }
    if (key.endsWith('_id')) {
      const ids = parseNumbers(vals, f.name, errors);
      if (!ids) return;
      target = sql`(${sql.join(ids.length ? ids : [0])})`;
    } else target = sql`(select id from dcim_site where ${inList(sql.ref('slug'), vals)})`;
    const type = key.endsWith('provider_network_id') ? 'circuits.providernetwork' : 'dcim.site';
    const own = sql`termination_type = ${type} and termination_id in ${target}`;
    conds.push(m.key === 'circuit' ? sql`${col(m.table, 'id')} in (select circuit_id from circuits_circuittermination where ${own})` : sql`(${col(m.table, 'termination_type')} = ${type} and ${col(m.table, 'termination_id')} in ${target})`);
    return;
  }
  const ids = parseNumbers(vals, f.name, errors);
  if (!ids) return;
  if (key === 'device.manufacturer_id') conds.push(sql`${col(m.table, 'device_type_id')} in (select id from dcim_devicetype where ${inList(sql.ref('manufacturer_id'), ids)})`);
  else if (key === 'interface.site_id') conds.push(sql`${col(m.table, 'device_id')} in (select id from dcim_device where ${inList(sql.ref('site_id'), ids)})`);
  else if (key === 'ipaddress.interface_id') conds.push(sql`(${col(m.table, 'assigned_object_type')} = 'dcim.interface' and ${inList(col(m.table, 'assigned_object_id'), ids)})`);
  else if (key === 'ipaddress.device_id')
    conds.push(
      sql`(${col(m.table, 'assigned_object_type')} = 'dcim.interface' and ${col(m.table, 'assigned_object_id')} in ${interfacesOfDevices(ids.length ? sql`(${sql.join(ids)})` : sql`(null)`)})`,
    );
}

function fieldFilters(ctx: ReadCtx, m: ModelDef, f: FieldDef, q: Query, errors: Errors, conds: Cond[]): void {
  const name = f.name;
  switch (f.kind) {
    case 'choice': {
      for (const [key, negate] of [
        [name, false],
        [`${name}__n`, true],
      ] as const) {
        const vals = values(q, key);
        if (!vals.length) continue;
        const bad = vals.find((v) => !f.choices!.some((c) => c.value === v));
        if (bad !== undefined) (errors[key] ??= []).push(invalidChoice(bad));
        else conds.push(negate ? sql`not ${inList(col(m.table, f.column), vals)}` : inList(col(m.table, f.column), vals));
      }
      return;
    }
    case 'integer':
      return numericFilters(m.table, f.column, name, q, errors, conds);
    case 'decimal':
      return numericFilters(m.table, f.column, name, q, errors, conds, true);
    case 'boolean': {
      const v = values(q, name)[0];
      const b = v === undefined ? undefined : parseBool(v);
      if (b !== undefined) conds.push(b ? sql`${col(m.table, f.column)} = ${sql.lit(true)}` : sql`${col(m.table, f.column)} = ${sql.lit(false)}`);
      return;
    }
    case 'mac':
      return stringFilters(m.table, f.column, name, q, conds, (s) => normaliseMac(s) ?? s, ctx, errors);
    case 'ipaddress': {
      // NetBox matches the host part, whatever the mask.
      const vals = values(q, name).map((v) => v.split('/')[0]!.trim().toLowerCase());
      if (vals.length) conds.push(sql`(${sql.join(vals.map((v) => sql`${col(m.table, f.column)} like ${likeEscape(v) + '/%'} escape '!'`), sql` or `)})`);
      return;
    }
    default:
      return stringFilters(m.table, f.column, name, q, conds, f.filterNormalise, ctx, errors);
  }
}

function tagFilters(ctx: ReadCtx, m: ModelDef, q: Query, errors: Errors, conds: Cond[], tagSlugs: Map<string, number>): void {
  const tagged = (tagCond: Cond) =>
    sql`exists (select 1 from extras_taggeditem ti join extras_tag t on t.id = ti.tag_id where ti.object_type = ${m.objectType} and ti.object_id = ${col(m.table, 'id')} and ${tagCond})`;
  for (const slug of values(q, 'tag')) {
    if (!tagSlugs.has(slug)) (errors.tag ??= []).push(invalidChoice(slug));
    else conds.push(tagged(sql`t.slug = ${slug}`));
  }
  for (const slug of values(q, 'tag__n')) {
    if (!tagSlugs.has(slug)) (errors.tag__n ??= []).push(invalidChoice(slug));
    else conds.push(sql`not ${tagged(sql`t.slug = ${slug}`)}`);
  }
  const ids = parseNumbers(values(q, 'tag_id'), 'tag_id', errors);
  for (const id of ids ?? []) conds.push(tagged(sql`t.id = ${id}`));
}

/** `cf_<name>` (exact; `__n`, `__ic`, `__gt/__gte/__lt/__lte` for numbers and dates) on the stored custom field data. */
async function customFieldFilters(ctx: ReadCtx, m: ModelDef, q: Query, errors: Errors, conds: Cond[]): Promise<void> {
  const defs = m.taggable ? await customFieldsFor(ctx, m.objectType) : [];
  for (const key of Object.keys(q)) {
    if (!key.startsWith('cf_')) continue;
    const match = /^cf_([a-z0-9_]+?)(?:__(n|ic|gt|gte|lt|lte))?$/.exec(key);
    const def = match ? defs.find((d) => d.name === match[1]) : undefined;
    if (!match || !def) {
      (errors[key] ??= []).push(`No custom field of this name is defined for ${m.verboseName}s; the request was refused rather than ignored.`);
      continue;
    }
    const lookup = match[2] ?? '';
    const pg = ctx.dialect.kind === 'postgres';
    const text = pg ? sql`(${col(m.table, 'custom_fields')} ->> ${def.name})` : sql`cast(json_extract(${col(m.table, 'custom_fields')}, ${`$."${def.name}"`}) as text)`;
    const numeric = def.type === 'integer' || def.type === 'decimal';
    for (const raw of values(q, key)) {
      const v = raw.trim();
      if (v === 'null' && (lookup === '' || lookup === 'n')) {
        conds.push(lookup === 'n' ? sql`${text} is not null` : sql`${text} is null`);
        continue;
      }
      if (numeric) {
        if (!/^-?\d{1,15}(\.\d{1,6})?$/.test(v)) {
          (errors[key] ??= []).push('Enter a number.');
          continue;
        }
        const n = sql`cast(${text} as ${sql.raw(pg ? 'numeric' : 'real')})`;
        const op = { '': '=', n: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' }[lookup];
        if (!op) (errors[key] ??= []).push('Unsupported lookup for a number.');
        else conds.push(lookup === 'n' ? sql`(${text} is null or ${n} <> ${Number(v)})` : sql`${n} ${sql.raw(op)} ${Number(v)}`);
        continue;
      }
      if (def.type === 'multiselect') {
        // A multiple selection matches when its list holds the value (`__n`: when it does not).
        const data = col(m.table, 'custom_fields');
        const has = pg ? sql`coalesce((${data} -> ${def.name}) @> to_jsonb(cast(${v} as text)), false)` : sql`exists (select 1 from json_each(${data}, ${`$."${def.name}"`}) where value = ${v})`;
        if (lookup === '') conds.push(has);
        else if (lookup === 'n') conds.push(sql`not ${has}`);
        else (errors[key] ??= []).push('Unsupported lookup for a multiple selection.');
        continue;
      }
      if (def.type === 'boolean') {
        const b = parseBool(v);
        if (b === undefined) (errors[key] ??= []).push('Select a valid choice.');
        else conds.push(pg ? sql`${text} = ${b ? 'true' : 'false'}` : sql`${text} = ${b ? '1' : '0'}`);
        continue;
      }
      if (lookup === 'ic') conds.push(sql`lower(${text}) like lower(${`%${likeEscape(v)}%`}) escape '!'`);
      else if (lookup === 'n') conds.push(sql`(${text} is null or ${text} <> ${v})`);
      else if (lookup === '') conds.push(sql`${text} = ${v}`);
      else if (def.type === 'date' || def.type === 'datetime') conds.push(sql`${text} ${sql.raw({ gt: '>', gte: '>=', lt: '<', lte: '<=' }[lookup]!)} ${v}`);
      else (errors[key] ??= []).push('Unsupported lookup for this custom field type.');
    }
  }
}

/** A BooleanFilter whose method tests a condition (`interfaces=true`: has interfaces); `null`/'' filter nothing. */
function boolFilter(c: Cond, name: string, q: Query, errors: Errors, conds: Cond[]): void {
  for (const v of values(q, name)) {
    const t = v.trim().toLowerCase();
    if (t === '' || t === 'null' || t === 'none' || t === 'unknown') continue;
    const b = parseBool(t);
    if (b === undefined) (errors[name] ??= []).push('Select a valid choice. That choice is not one of the available choices.');
    else conds.push(b ? sql`(${c})` : sql`not (${c})`);
  }
}

/** ChangeLoggedModelFilterSet's UUID filters: the objects a request created, updated, or either (its change log). */
const REQUEST_FILTERS: Record<string, string[]> = { created_by_request: ['create'], updated_by_request: ['update'], modified_by_request: ['create', 'update'] };
const UUID_RE = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

function requestFilters(m: ModelDef, q: Query, errors: Errors, conds: Cond[]): void {
  for (const [name, actions] of Object.entries(REQUEST_FILTERS)) {
    const v = values(q, name)[0];
    if (v === undefined || v.trim() === '') continue;
    const t = v.trim().toLowerCase();
    if (!UUID_RE.test(t)) {
      (errors[name] ??= []).push('Enter a valid UUID.');
      continue;
    }
    const hex = t.replace(/-/g, '');
    const uuid = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    conds.push(
      sql`${col(m.table, 'id')} in (select changed_object_id from object_changes where changed_object_type = ${m.objectType} and request_id = ${uuid} and ${inList(sql.ref('action'), actions)})`,
    );
  }
}

const TIME_LOOKUPS: Record<string, string> = { '': '=', __gt: '>', __gte: '>=', __lt: '<', __lte: '<=' };

/**
 * Turns NetBox's query parameters into SQL conditions. Invalid values are
 * collected as django-filter reports them (400 `{"param": ["message"]}`);
 * unknown parameters are ignored.
 */
export async function buildFilters(ctx: ReadCtx, m: ModelDef, q: Query): Promise<{ conds: Cond[]; errors: Errors }> {
  const errors: Errors = unsupportedFilters(m, q);
  const conds: Cond[] = [];
  numericFilters(m.table, 'id', 'id', q, errors, conds);
  for (const f of m.fields) if (f.filter) fieldFilters(ctx, m, f, q, errors, conds);
  for (const f of m.extraFilters ?? []) {
    if (f.kind === 'fk_id' || f.kind === 'fk_slug') await relatedFilter(ctx, m, f, q, errors, conds);
    else if (f.kind === 'int') numericFilters(m.table, f.expr ? f.expr(m.table) : f.column!, f.name, q, errors, conds);
    else if (f.kind === 'bool' && f.expr) boolFilter(f.expr(m.table), f.name, q, errors, conds);
    else if (f.kind === 'custom') await customFilter(ctx, m, f, q, errors, conds);
  }
  if (NETBOX_FILTERS[m.key]?.includes('created_by_request')) requestFilters(m, q, errors, conds);
  if (Object.keys(q).some((k) => k.startsWith('cf_'))) await customFieldFilters(ctx, m, q, errors, conds);
  const search = values(q, 'q')[0]?.trim();
  if (search && m.search.length) conds.push(sql`(${sql.join(m.search.map((c) => ilike(`${m.table}.${c}`, `%${likeEscape(search)}%`)), sql` or `)})`);
  if (m.taggable && (q.tag !== undefined || q.tag__n !== undefined || q.tag_id !== undefined)) {
    const slugs = [...values(q, 'tag'), ...values(q, 'tag__n')];
    const rows = slugs.length ? await ctx.db.selectFrom('extras_tag').select(['id', 'slug']).where('slug', 'in', slugs).execute() : [];
    tagFilters(ctx, m, q, errors, conds, new Map(rows.map((r) => [r.slug as string, Number(r.id)])));
  }
  for (const field of ['created', 'last_updated']) {
    for (const [suffix, op] of Object.entries(TIME_LOOKUPS)) {
      const key = field + suffix;
      for (const v of values(q, key)) {
        const iso = parseDate(v);
        if (!iso) (errors[key] ??= []).push('Enter a valid date/time.');
        else conds.push(sql`${col(m.table, field)} ${sql.raw(op)} ${ctx.dialect.timestamp(iso)}`);
      }
    }
  }
  return { conds, errors };
}

const NUMERIC = ['', '__n', '__gt', '__gte', '__lt', '__lte'];
const STRING = ['', '__n', '__ic', '__nic', '__ie', '__nie', '__isw', '__nisw', '__iew', '__niew', '__empty', '__regex', '__iregex'];
const implementedCache = new Map<string, Set<string>>();

/** Every query parameter buildFilters() acts on for a model (kept in step with it). */
export function implementedFilters(m: ModelDef): Set<string> {
  const cached = implementedCache.get(m.key);
  if (cached) return cached;
  const out = new Set<string>(['q']);
  const add = (name: string, suffixes: string[]) => suffixes.forEach((s) => out.add(name + s));
  add('id', NUMERIC);
  for (const f of m.fields) {
    if (!f.filter) continue;
    if (f.kind === 'choice') add(f.name, ['', '__n']);
    else if (f.kind === 'integer' || f.kind === 'decimal') add(f.name, NUMERIC);
    else if (f.kind === 'boolean' || f.kind === 'ipaddress') add(f.name, ['']);
    else add(f.name, STRING);
  }
  for (const f of m.extraFilters ?? []) {
    if (f.kind === 'fk_id' || f.kind === 'fk_slug') add(f.name, ['', '__n']);
    else if (f.kind === 'int') add(f.name, NUMERIC);
    else add(f.name, ['']);
  }
  if (m.taggable) add('tag', ['', '__n']), out.add('tag_id');
  if (NETBOX_FILTERS[m.key]?.includes('created_by_request')) for (const name of Object.keys(REQUEST_FILTERS)) out.add(name);
  for (const t of ['created', 'last_updated']) add(t, ['', '__gt', '__gte', '__lt', '__lte']);
  implementedCache.set(m.key, out);
  return out;
}

/**
 * Parameters that NetBox would filter on but this service does not implement: a 400 naming each,
 * never the unfiltered list. Parameters NetBox does not know either are ignored, as NetBox does.
 */
export function unsupportedFilters(m: ModelDef, q: Query): Errors {
  const errors: Errors = {};
  const known = NETBOX_FILTERS[m.key] ?? [];
  const implemented = implementedFilters(m);
  for (const key of Object.keys(q)) {
    if (RESERVED.has(key) || implemented.has(key)) continue;
    const cut = key.lastIndexOf('__');
    const base = cut > 0 ? key.slice(0, cut) : key;
    const lookup = cut > 0 ? key.slice(cut + 2) : '';
    // cf_<name> filters are checked against the custom field definitions in buildFilters.
    if (/^cf_/.test(key)) continue;
    const netbox = known.includes(key) || (known.includes(base) && (lookup === '' || NETBOX_LOOKUPS.has(lookup)));
    if (netbox) errors[key] = [`This NetBox filter is not supported by this service; the request was refused rather than ignored.`];
  }
  return errors;
}

export function isReserved(key: string): boolean {
  return RESERVED.has(key);
}
