import { sql, type RawBuilder } from 'kysely';
import { DEVICE_STATUS } from './choices.ts';
import type { ReadCtx } from './read.ts';
import { parseVidRanges } from './vid-ranges.ts';

type Cond = RawBuilder<unknown>;
type Errors = Record<string, string[]>;

const col = (table: string, column: string) => sql.ref(`${table}.${column}`);
const inList = (c: Cond | ReturnType<typeof sql.ref>, vals: unknown[]): Cond => (vals.length ? sql`${c} in (${sql.join(vals)})` : sql`1 = 0`);

function numbers(vals: string[], name: string, errors: Errors): number[] | undefined {
  const bad = vals.find((v) => !/^-?\d{1,16}$/.test(v.trim()) || !Number.isSafeInteger(Number(v.trim())));
  if (bad !== undefined) return void (errors[name] ??= []).push('Enter a number.');
  return vals.map((v) => Number(v.trim()));
}

function bool(vals: string[], name: string, errors: Errors): boolean | undefined {
  const l = vals[0]!.trim().toLowerCase();
  if (['true', '1', 't', 'yes', 'on'].includes(l)) return true;
  if (['false', '0', 'f', 'no', 'off'].includes(l)) return false;
  (errors[name] ??= []).push('Must be a valid boolean.');
  return undefined;
}

/** django-filter's ModelMultipleChoiceFilter: every id must exist. */
async function existing(ctx: ReadCtx, table: string, vals: string[], name: string, errors: Errors): Promise<number[] | undefined> {
  const bad = vals.find((v) => !/^\d{1,16}$/.test(v.trim()));
  if (bad !== undefined) return void (errors[name] ??= []).push(`Select a valid choice. ${bad.slice(0, 100)} is not one of the available choices.`);
  const ids = [...new Set(vals.map((v) => Number(v.trim())))];
  const found = new Set((await ctx.db.selectFrom(table).select('id').where('id', 'in', ids).execute()).map((r) => Number(r.id)));
  const missing = ids.find((id) => !found.has(id));
  if (missing !== undefined) return void (errors[name] ??= []).push(`Select a valid choice. ${missing} is not one of the available choices.`);
  return ids;
}

/**
 * The virtual chassis, device bay and VID-range filters (`<model>.<filter>` keys); false when the key is not one
 * of them. Interfaces follow NetBox's Device.vc_interfaces(): a device's own interfaces, plus the non-management
 * interfaces of its chassis' other members — for `virtual_chassis_member_or_master` only when it is the master.
 */
export async function chassisBayFilter(ctx: ReadCtx, key: string, table: string, name: string, vals: string[], errors: Errors, conds: Cond[]): Promise<boolean> {
  switch (key) {
    case 'interface.virtual_chassis_member':
    case 'interface.virtual_chassis_member_id':
    case 'interface.virtual_chassis_member_or_master':
    case 'interface.virtual_chassis_member_or_master_id': {
      let devices: Cond;
      if (name.endsWith('_id')) {
        const ids = numbers(vals, name, errors);
        if (!ids) return true;
        devices = sql`(${sql.join(ids)})`;
      } else devices = sql`(select id from dcim_device where ${inList(sql.ref('name'), vals)})`;
      const masterOnly = name.startsWith('virtual_chassis_member_or_master') ? sql`and exists (select 1 from dcim_virtualchassis vc where vc.id = d.virtual_chassis_id and vc.master_id = d.id)` : sql``;
      const members = sql`(select m.id from dcim_device m join dcim_device d on m.virtual_chassis_id = d.virtual_chassis_id where d.id in ${devices} ${masterOnly})`;
      conds.push(sql`(${col(table, 'device_id')} in ${devices} or (${col(table, 'mgmt_only')} = ${sql.lit(false)} and ${col(table, 'device_id')} in ${members}))`);
      return true;
    }
    case 'device.virtual_chassis_member': {
      const b = bool(vals, name, errors);
      if (b !== undefined) conds.push(b ? sql`${col(table, 'virtual_chassis_id')} is not null` : sql`${col(table, 'virtual_chassis_id')} is null`);
      return true;
    }
    case 'device.device_bays':
    case 'devicetype.device_bays': {
      const b = bool(vals, name, errors);
      const c = key === 'device.device_bays' ? sql`exists (select 1 from dcim_devicebay b where b.device_id = ${col(table, 'id')})` : sql`exists (select 1 from dcim_devicebaytemplate b where b.device_type_id = ${col(table, 'id')})`;
      if (b !== undefined) conds.push(b ? c : sql`not ${c}`);
      return true;
    }
    case 'device.parent_device_id': {
      const ids = await existing(ctx, 'dcim_device', vals, name, errors);
      if (ids) conds.push(sql`${col(table, 'id')} in (select installed_device_id from dcim_devicebay where ${inList(sql.ref('device_id'), ids)})`);
      return true;
    }
    case 'device.parent_bay_id': {
      const ids = await existing(ctx, 'dcim_devicebay', vals, name, errors);
      if (ids) conds.push(sql`${col(table, 'id')} in (select installed_device_id from dcim_devicebay where ${inList(sql.ref('id'), ids)})`);
      return true;
    }
    case 'devicebay.device_status': {
      const bad = vals.find((v) => !DEVICE_STATUS.some((c) => c.value === v));
      if (bad !== undefined) (errors[name] ??= []).push(`Select a valid choice. ${bad.slice(0, 100)} is not one of the available choices.`);
      else conds.push(sql`${col(table, 'device_id')} in (select id from dcim_device where ${inList(sql.ref('status'), vals)})`);
      return true;
    }
    case 'virtualchassis.member_count': {
      const ns = numbers(vals, name, errors);
      if (ns) conds.push(sql`(select count(*) from dcim_device m where m.virtual_chassis_id = ${col(table, 'id')}) in (${sql.join(ns)})`);
      return true;
    }
    case 'vlangroup.contains_vid': {
      // NetBox's NumberFilter: one VID; the groups whose ranges hold it (ranges are JSON: matched here, groups are few).
      const ns = numbers(vals.slice(-1), name, errors);
      if (!ns) return true;
      const rows = await ctx.db.selectFrom('ipam_vlangroup').select(['id', 'vid_ranges']).execute();
      const hit = rows.filter((r) => parseVidRanges(ctx.dialect.parseJson(r.vid_ranges)).some(([lo, hi]) => ns[0]! >= lo && ns[0]! <= hi)).map((r) => Number(r.id));
      conds.push(inList(col(table, 'id'), hit));
      return true;
    }
  }
  return false;
}
