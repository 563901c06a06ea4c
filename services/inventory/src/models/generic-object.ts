import { sql } from 'kysely';
import { fail } from './field-problem.ts';
import type { ExtraFilter, FieldDef, ModelDef, ReadCtx, Row } from './types.ts';

/**
 * A NetBox generic foreign key (`assigned_object_type` + `assigned_object_id`, `object_type` + `object_id`) to any
 * object of the allowed types: the type field's format and support, the object's existence, the nested `object`
 * brief of the representation and the `<type>` / `<id>` filters. Journal entries and contact assignments use it.
 */

/** The registry, loaded when first needed (it imports the models that use this module). */
async function registry(): Promise<typeof import('./registry.ts')> {
  return import('./registry.ts');
}

const APP_VERBOSE: Record<string, string> = { dcim: 'DCIM', ipam: 'IPAM', extras: 'Extras', tenancy: 'Tenancy', virtualization: 'Virtualization', circuits: 'Circuits' };

/** How Django prints a content type: `DCIM | device`. */
export function contentTypeLabel(m: ModelDef): string {
  return `${APP_VERBOSE[m.app] ?? m.app} | ${m.verboseName}`;
}

/** DRF's ContentTypeField: `app_label.model`, lower case. */
function parseObjectType(v: unknown): string {
  if (typeof v !== 'string' || !/^[a-z_]{1,50}\.[a-z0-9_]{1,100}$/.test(v)) fail("Invalid value. Specify a content type as '<app_label>.<model_name>'.");
  return v as string;
}

export interface GenericRef {
  typeColumn: string;
  idColumn: string;
  /** API name of the nested object (`assigned_object`, `object`). */
  objectName: string;
}

export function genericFields(g: GenericRef): FieldDef[] {
  return [
    { name: g.typeColumn, column: g.typeColumn, kind: 'char', required: true, maxLength: 100, parse: parseObjectType },
    { name: g.idColumn, column: g.idColumn, kind: 'integer', required: true, min: 0, max: 2 ** 53 - 1 },
  ];
}

/**
 * Checks the pair: `supported(m)` says whether the type takes part (else `unsupported(m)` is NetBox's message, or the
 * type is unknown), then that the object exists (`missing(label, id)`).
 */
export async function checkGeneric(
  ctx: ReadCtx,
  g: GenericRef,
  values: Row,
  existing: Row | null,
  errors: Record<string, string[]>,
  opts: { supported: (m: ModelDef) => boolean; unsupported?: (m: ModelDef) => [field: string, message: string]; missing: (label: string, id: number) => [field: string, message: string] },
): Promise<void> {
  if (!(g.typeColumn in values) && !(g.idColumn in values)) return;
  const type = String(values[g.typeColumn] ?? existing?.[g.typeColumn]);
  const id = Number(values[g.idColumn] ?? existing?.[g.idColumn]);
  const { modelForObjectType } = await registry();
  const m = modelForObjectType(type);
  if (!m || !opts.supported(m)) {
    if (m && opts.unsupported) {
      const [field, message] = opts.unsupported(m);
      (errors[field] ??= []).push(message);
    } else (errors[g.typeColumn] ??= []).push(`Invalid content type: ${type}`);
    return;
  }
  const row = await ctx.db.selectFrom(m.table).select('id').where('id', '=', id).executeTakeFirst();
  if (!row) {
    const [field, message] = opts.missing(contentTypeLabel(m), id);
    (errors[field] ??= []).push(message);
  }
}

/** Adds the nested object (its brief) to each representation, right after the id field. */
export async function enrichGeneric(ctx: ReadCtx, g: GenericRef, rows: Row[], out: Array<Record<string, unknown>>): Promise<void> {
  const { modelForObjectType } = await registry();
  const { loadBriefs } = await import('./represent.ts');
  const byType = new Map<string, number[]>();
  for (const r of rows) byType.set(String(r[g.typeColumn]), [...(byType.get(String(r[g.typeColumn])) ?? []), Number(r[g.idColumn])]);
  const briefs = new Map<string, Record<string, unknown>>();
  for (const [type, ids] of byType) {
    const m = modelForObjectType(type);
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
export function genericFilters(table: string, g: GenericRef): ExtraFilter[] {
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

/** Objects of a type whose rows point at one object (journal entries, contact assignments), deleted with it. */
export const GENERIC_CHILDREN: Array<{ model: string; typeColumn: string; idColumn: string }> = [
  { model: 'journalentry', typeColumn: 'assigned_object_type', idColumn: 'assigned_object_id' },
  { model: 'contactassignment', typeColumn: 'object_type', idColumn: 'object_id' },
];
