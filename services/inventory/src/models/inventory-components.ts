import { sql } from 'kysely';
import { fail } from './field-problem.ts';
import { chunks } from './read.ts';
import { loadBriefs } from './represent.ts';
import { modelForObjectType } from './lookup.ts';
import type { ReadCtx, Row } from './types.ts';

/**
 * The component an inventory item (or inventory item template) is assigned to: NetBox's generic relation
 * `component_type` + `component_id`, limited to the modular components (templates), with `component`, the
 * component's brief, right after `component_id` in the representation.
 */

/** MODULAR_COMPONENT_MODELS: what an inventory item may be assigned to. */
export const COMPONENT_TYPES = ['dcim.consoleport', 'dcim.consoleserverport', 'dcim.frontport', 'dcim.interface', 'dcim.poweroutlet', 'dcim.powerport', 'dcim.rearport'];
/** MODULAR_COMPONENT_TEMPLATE_MODELS: what an inventory item template may be assigned to. */
export const COMPONENT_TEMPLATE_TYPES = COMPONENT_TYPES.map((t) => `${t}template`);

/** DRF's ContentTypeField over a limited queryset: `app_label.model`, one of `allowed`. */
function parseType(v: unknown, allowed: string[]): string {
  if (typeof v !== 'string' || !/^[a-z_]{1,50}\.[a-z0-9_]{1,100}$/.test(v)) fail("Invalid value. Specify a content type as '<app_label>.<model_name>'.");
  if (!allowed.includes(v as string)) fail(`Invalid content type: ${v}`);
  return v as string;
}

export const parseComponentType = (v: unknown) => parseType(v, COMPONENT_TYPES);
export const parseComponentTemplateType = (v: unknown) => parseType(v, COMPONENT_TEMPLATE_TYPES);

/** ContentTypeFilter: `app.model` (any case); a value not of that form matches nothing. */
export function componentTypeCondition(table: string, vals: string[]) {
  const types = vals.map((v) => v.trim().toLowerCase()).filter((v) => /^[a-z_]+\.[a-z0-9_]+$/.test(v));
  return types.length ? sql`${sql.ref(`${table}.component_type`)} in (${sql.join(types)})` : sql`1 = 0`;
}

/** `component` (the assigned object's brief, null when none or gone) right after `component_id`. */
export async function enrichInventoryComponent(ctx: ReadCtx, rows: Row[], out: Array<Record<string, unknown>>): Promise<void> {
  const byType = new Map<string, number[]>();
  for (const r of rows) if (r.component_type && r.component_id !== null) byType.set(r.component_type, [...(byType.get(r.component_type) ?? []), Number(r.component_id)]);
  const briefs = new Map<string, Record<string, unknown>>();
  for (const [type, ids] of byType) {
    const m = modelForObjectType(type);
    if (!m) continue;
    for (const part of chunks(ids)) for (const [id, b] of await loadBriefs(ctx, m, part)) briefs.set(`${type}:${id}`, b);
  }
  out.forEach((o, i) => {
    const r = rows[i]!;
    const copy: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) {
      copy[k] = v;
      if (k === 'component_id') copy.component = briefs.get(`${r.component_type}:${r.component_id}`) ?? null;
    }
    for (const k of Object.keys(o)) delete o[k];
    Object.assign(o, copy);
  });
}

/** Type and id are set together (a half-given assignment is refused rather than stored). */
export function checkComponentPair(values: Row, existing: Row | null, errors: Record<string, string[]>): void {
  if (!('component_type' in values) && !('component_id' in values)) return;
  const type = 'component_type' in values ? values.component_type : (existing?.component_type ?? null);
  const id = 'component_id' in values ? values.component_id : (existing?.component_id ?? null);
  if ((type === null) !== (id === null)) (errors[type === null ? 'component_type' : 'component_id'] ??= []).push('This field is required when the other part of the component is set.');
}

/**
 * InventoryItem.clean(): a new item's component is on the item's device; an item moved to another device leaves its
 * component behind (the assignment is cleared in the values written).
 */
export async function checkInventoryComponentDevice(ctx: ReadCtx, values: Row, existing: Row | null, errors: Record<string, string[]>): Promise<void> {
  const pick = (c: string) => (c in values ? values[c] : (existing?.[c] ?? null));
  const type = pick('component_type');
  const id = pick('component_id');
  if (type === null || id === null) return;
  const m = modelForObjectType(String(type));
  const row = m ? await ctx.db.selectFrom(m.table).select('device_id').where('id', '=', Number(id)).executeTakeFirst() : undefined;
  if (!row || Number(row.device_id) === Number(pick('device_id'))) return;
  if (!existing) (errors.device ??= []).push('Cannot assign inventory item to component on another device');
  else Object.assign(values, { component_type: null, component_id: null });
}

/** Most levels followed up a tree (a cycle cannot be written, this only bounds the walk). */
export const MAX_DEPTH = 100;

/** Each node's number of ancestors (`parent_id` links), for a batch of ids. */
export async function treeDepths(db: any, table: string, ids: number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>(ids.map((id) => [id, 0]));
  // The current ancestor of each node, climbed one level per query for all nodes at once.
  let at = new Map<number, number>(ids.map((id) => [id, id]));
  for (let level = 0; at.size && level < MAX_DEPTH; level++) {
    const rows = await db.selectFrom(table).select(['id', 'parent_id']).where('id', 'in', [...new Set(at.values())]).execute();
    const parent = new Map<number, number | null>(rows.map((r: Row) => [Number(r.id), r.parent_id === null ? null : Number(r.parent_id)]));
    const next = new Map<number, number>();
    for (const [node, cur] of at) {
      const p = parent.get(cur);
      if (p === null || p === undefined) continue;
      out.set(node, out.get(node)! + 1);
      next.set(node, p);
    }
    at = next;
  }
  return out;
}
