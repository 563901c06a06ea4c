import { sql, type RawBuilder } from 'kysely';
import { registeredModels } from './lookup.ts';
import type { ReadCtx } from './types.ts';

/**
 * NetBox's numbered object types (Django's ContentType rows, `/api/extras/object-types/`): the `*_type_id` filters
 * take these ids. The service stores types as `app.model` strings everywhere; `core_objecttype` (migration 033) gives
 * each a stable id. Rows are added when first needed, so a model added later gets the next id and no id ever changes.
 */
export interface ObjectTypeRow {
  id: number;
  app_label: string;
  model: string;
}

/** Object types of the change log that are no model of the registry (the event pipeline's own). */
const OTHER_TYPES = ['extras.eventrule', 'extras.webhook'];

function knownTypes(): string[] {
  return [...new Set([...registeredModels().map((m) => m.objectType), ...OTHER_TYPES])].sort();
}

/** Every object type with its id, adding the rows of types not numbered yet (idempotent under concurrent callers). */
export async function objectTypeRows(ctx: ReadCtx): Promise<ObjectTypeRow[]> {
  const read = async () => (await ctx.db.selectFrom('core_objecttype').select(['id', 'app_label', 'model']).orderBy('id').execute()).map((r) => ({ id: Number(r.id), app_label: String(r.app_label), model: String(r.model) }));
  let rows = await read();
  const have = new Set(rows.map((r) => `${r.app_label}.${r.model}`));
  const missing = knownTypes().filter((t) => !have.has(t));
  if (missing.length) {
    const values = missing.map((t) => ({ app_label: t.split('.')[0]!, model: t.split('.')[1]! }));
    await ctx.db
      .insertInto('core_objecttype')
      .values(values)
      .onConflict((oc) => oc.columns(['app_label', 'model']).doNothing())
      .execute();
    rows = await read();
  }
  return rows;
}

export const typeName = (r: ObjectTypeRow) => `${r.app_label}.${r.model}`;

/**
 * The `app.model` names of the given object type ids, as django-filter's ModelMultipleChoiceFilter checks them:
 * a value that is no id of an object type is `Select a valid choice. <v> is not one of the available choices.`
 * (recorded under `key`; undefined is returned then).
 */
export async function objectTypesOfIds(ctx: ReadCtx, vals: string[], key: string, errors: Record<string, string[]>): Promise<string[] | undefined> {
  const byId = new Map((await objectTypeRows(ctx)).map((r) => [r.id, typeName(r)]));
  const out: string[] = [];
  for (const v of vals) {
    const t = v.trim();
    const name = /^\d{1,16}$/.test(t) ? byId.get(Number(t)) : undefined;
    if (name === undefined) {
      (errors[key] ??= []).push(`Select a valid choice. ${v} is not one of the available choices.`);
      return undefined;
    }
    out.push(name);
  }
  return out;
}

/** `column in (…types)`, or nothing matched for an empty list. */
export function typeIn(column: RawBuilder<unknown> | ReturnType<typeof sql.ref>, types: string[]): RawBuilder<unknown> {
  return types.length ? sql`${column} in (${sql.join(types)})` : sql`1 = 0`;
}

/** A JSON list column (`object_types`) that holds one of the types: its quoted element is matched in the stored text. */
export function jsonListHasAny(column: ReturnType<typeof sql.ref>, types: string[]): RawBuilder<unknown> {
  if (!types.length) return sql`1 = 0`;
  return sql`(${sql.join(
    types.map((t) => sql`cast(${column} as text) like ${`%${JSON.stringify(t).replace(/[!%_]/g, (c) => `!${c}`)}%`} escape '!'`),
    sql` or `,
  )})`;
}
