import type { Kysely } from 'kysely';
import { HttpError } from '@svc/kernel';
import type { SqlDialect } from '@svc/storage';
import { fail } from './field-problem.ts';
import { modelForObjectType } from './lookup.ts';
import type { ModelDef } from './types.ts';

/** Most object types one tag may list (NetBox has about a hundred taggable types). */
const MAX_TYPES = 500;

/**
 * A tag's `object_types` (NetBox's ContentTypeField, many=True, limited to types with tags): a list of
 * `app.model` names, each of a model that carries tags.
 */
export function parseTagObjectTypes(v: unknown): string[] {
  if (!Array.isArray(v)) fail(`Expected a list of items but got type "${v === null ? 'NoneType' : typeof v === 'string' ? 'str' : typeof v === 'object' ? 'dict' : typeof v === 'number' ? 'int' : typeof v}".`);
  const list = v as unknown[];
  if (list.length > MAX_TYPES) fail(`Ensure this field has no more than ${MAX_TYPES} elements.`);
  const out: string[] = [];
  for (const item of list) {
    if (typeof item !== 'string' || !/^[^.]{1,100}\.[^.]{1,100}$/.test(item)) fail("Invalid value. Specify a content type as '<app_label>.<model_name>'.");
    const m = modelForObjectType(item as string);
    if (!m || !m.taggable) fail(`Invalid content type: ${(item as string).slice(0, 210)}`);
    if (!out.includes(item as string)) out.push(item as string);
  }
  return out.sort();
}

/**
 * NetBox's validate_assigned_tags (an m2m pre_add signal): a tag newly given to an object whose type its
 * `object_types` does not list aborts the request with `400 {"detail": "Tag <name> cannot be assigned to <model> objects."}`.
 * Tags the object already carries are not checked again, as NetBox checks only the ones being added.
 */
export async function checkTagAssignment(db: Kysely<any>, dialect: SqlDialect, m: ModelDef, objectId: number, tagIds: number[]): Promise<void> {
  if (!tagIds.length) return;
  const current = new Set((await db.selectFrom('extras_taggeditem').select('tag_id').where('object_type', '=', m.objectType).where('object_id', '=', objectId).execute()).map((r) => Number(r.tag_id)));
  const added = tagIds.filter((id) => !current.has(id));
  if (!added.length) return;
  const rows = await db.selectFrom('extras_tag').select(['id', 'name', 'object_types']).where('id', 'in', added).orderBy('id').execute();
  for (const r of rows) {
    const types = dialect.parseJson<string[] | null>(r.object_types) ?? [];
    if (types.length && !types.includes(m.objectType)) throw new HttpError(400, { detail: `Tag ${r.name} cannot be assigned to ${m.objectType.split('.')[1]} objects.` });
  }
}
