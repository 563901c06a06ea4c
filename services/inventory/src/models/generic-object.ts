import { sql } from 'kysely';
import { fail } from './field-problem.ts';
import { APP_LABELS } from './lookup.ts';
import type { ExtraFilter, FieldDef, GenericRef, ModelDef, ReadCtx, Row } from './types.ts';

/**
 * A NetBox generic foreign key (`assigned_object_type` + `assigned_object_id`, `object_type` + `object_id`) to any
 * object of the allowed types: the type field's format and support, the object's existence, the nested `object`
 * brief of the representation and the `<type>` / `<id>` filters. Journal entries and contact assignments use it
 * (ModelDef.genericRef); validation and representation pass in the registry's lookups, so this module stays a leaf.
 */

/** The registry's object-type lookup and brief loader, as validate.ts and represent.ts hand them in. */
export type ModelLookup = (objectType: string) => ModelDef | undefined;
export type BriefLoader = (ctx: ReadCtx, m: ModelDef, ids: number[]) => Promise<Map<number, Record<string, unknown>>>;

/** How Django prints a content type: `DCIM | device`. */
export function contentTypeLabel(m: ModelDef): string {
  return `${APP_LABELS[m.app] ?? m.app} | ${m.verboseName}`;
}

/** DRF's ContentTypeField: `app_label.model`, lower case. */
function parseObjectType(v: unknown): string {
  if (typeof v !== 'string' || !/^[a-z_]{1,50}\.[a-z0-9_]{1,100}$/.test(v)) fail("Invalid value. Specify a content type as '<app_label>.<model_name>'.");
  return v as string;
}

export function genericFields(g: Pick<GenericRef, 'typeColumn' | 'idColumn'>): FieldDef[] {
  return [
    { name: g.typeColumn, column: g.typeColumn, kind: 'char', required: true, maxLength: 100, parse: parseObjectType },
    { name: g.idColumn, column: g.idColumn, kind: 'integer', required: true, min: 0, max: 2 ** 53 - 1 },
  ];
}

/** Checks the pair: the type takes part (else NetBox's message, or the type is unknown), then the object exists. */
export async function checkGeneric(ctx: ReadCtx, g: GenericRef, lookup: ModelLookup, values: Row, existing: Row | null, errors: Record<string, string[]>): Promise<void> {
  if (!(g.typeColumn in values) && !(g.idColumn in values)) return;
  const type = String(values[g.typeColumn] ?? existing?.[g.typeColumn]);
  const id = Number(values[g.idColumn] ?? existing?.[g.idColumn]);
  const m = lookup(type);
  if (!m || !g.supported(m)) {
    if (m) {
      const [field, message] = g.unsupported(m);
      (errors[field] ??= []).push(message);
    } else (errors[g.typeColumn] ??= []).push(`Invalid content type: ${type}`);
    return;
  }
  const row = await ctx.db.selectFrom(m.table).select('id').where('id', '=', id).executeTakeFirst();
  if (!row) {
    const [field, message] = g.missing(contentTypeLabel(m), id);
    (errors[field] ??= []).push(message);
  }
}

/** Adds the nested object (its brief) to each representation, right after the id field. */
export async function enrichGeneric(ctx: ReadCtx, g: GenericRef, lookup: ModelLookup, loadBriefs: BriefLoader, rows: Row[], out: Array<Record<string, unknown>>): Promise<void> {
  const byType = new Map<string, number[]>();
  for (const r of rows) byType.set(String(r[g.typeColumn]), [...(byType.get(String(r[g.typeColumn])) ?? []), Number(r[g.idColumn])]);
  const briefs = new Map<string, Record<string, unknown>>();
  for (const [type, ids] of byType) {
    const m = lookup(type);
    if (!m) continue;
    for (const [id, b] of await loadBriefs(ctx, m, ids)) briefs.set(`${type}:${id}`, b);
  }
  out.forEach((o, i) => {
    const r = rows[i]!;
    const nested = briefs.get(`${r[g.typeColumn]}:${r[g.idColumn]}`) ?? null;
    const copy: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) {
      copy[k] = v;
      if (k === g.idColumn) copy[g.objectName] = nested;
    }
    for (const k of Object.keys(o)) delete o[k];
    Object.assign(o, copy);
  });
}

/** `<type>` (`dcim.device`, several allowed) and `<id>` filters. */
export function genericFilters(table: string, g: Pick<GenericRef, 'typeColumn' | 'idColumn'>): ExtraFilter[] {
  const ref = (c: string) => sql.ref(`${table}.${c}`);
  return [
    {
      name: g.typeColumn,
      kind: 'custom',
      where: async (_ctx, vals) => sql`${ref(g.typeColumn)} in (${sql.join(vals.map((v) => v.trim().toLowerCase()))})`,
    },
    { name: g.idColumn, kind: 'int', column: g.idColumn },
  ];
}
