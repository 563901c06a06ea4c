import type { WriteContext } from '../changes/write-context.ts';
import { conflict } from '../api/errors.ts';
import { chunks, fastRows, fetchRow, fetchRowsByIds, normaliseRow, type ReadCtx } from './read.ts';
import { model, registeredModels } from './lookup.ts';
import { syncUniqueCustomFields } from './custom-fields.ts';
import { represent, snapshot } from './represent.ts';
import type { ModelDef, Row } from './types.ts';
import type { Errors, Validated } from './validate.ts';
import { naturalize } from './values.ts';
import { resolveRelated, FieldProblem } from './validate.ts';
import { checkTagAssignment } from './tag-rules.ts';

export function readCtxOf(w: WriteContext): ReadCtx {
  return { db: w.trx, dialect: w.dialect, base: '', settings: w.settings, userId: w.principal?.userId };
}

/**
 * Objects read for a read-modify-write, locked until the request's
 * transaction ends (SELECT … FOR UPDATE on PostgreSQL; SQLite's write
 * transaction already excludes other writers). A concurrent writer of the
 * same object waits, then reads what this one committed, so updates are never
 * lost and each change-log record's prechange is the previous postchange.
 */
export async function lockRows(w: WriteContext, m: ModelDef, ids: number[]): Promise<Map<number, Row>> {
  const out = new Map<number, Row>();
  // Ascending id order: two requests locking overlapping sets cannot deadlock on each other.
  const unique = [...new Set(ids)].sort((a, b) => a - b);
  for (const part of chunks(unique)) {
    if (!part.length) continue;
    const rows = await w.dialect.forUpdate(w.trx.selectFrom(m.table).selectAll().where('id', 'in', part).orderBy('id')).execute();
    for (const r of fastRows(rows)) out.set(Number(r.id), normaliseRow(w.dialect, m, r));
  }
  // The request's clock starts once it holds its first lock, so change-log times follow the order the locks were granted.
  if (w.changes.length === 0) w.now = new Date();
  return out;
}

export async function lockRow(w: WriteContext, m: ModelDef, id: number): Promise<Row | undefined> {
  return (await lockRows(w, m, [id])).get(id);
}

function label(_m: ModelDef, name: string): string {
  return name.replace(/_/g, ' ');
}

/** DRF's uniqueness validators, run against the merged (existing + new) values. */
export async function uniquenessErrors(w: WriteContext, m: ModelDef, values: Row, existing: Row | null, errors: Errors, fieldOnly = false): Promise<void> {
  const merged: Row = { ...(existing ?? {}), ...values };
  const others = (q: any) => (existing ? q.where('id', '!=', existing.id) : q);
  // One statement for all unique fields: it sees one snapshot, so a concurrent writer's row is reported on every field it clashes on, as a sequential clash would be.
  const unique = m.fields.filter((f) => f.unique && f.column in values && merged[f.column] !== null);
  if (unique.length) {
    const q = w.trx
      .selectFrom(m.table)
      .select(['id', ...unique.map((f) => f.column)])
      .where((eb: any) => eb.or(unique.map((f) => eb(f.column, '=', merged[f.column]))));
    const hits = await others(q).limit(unique.length * 2).execute();
    for (const f of unique) {
      if (hits.some((h: Row) => String(h[f.column]) === String(merged[f.column]))) (errors[f.name] ??= []).push(`${m.verboseName} with this ${label(m, f.name)} already exists.`);
    }
  }
  // DRF runs UniqueValidator with the field, but unique-together and relation checks only on fully valid data.
  if (fieldOnly) return;
  for (const set of m.uniqueTogether ?? []) {
    const fields = set.map((n) => m.fields.find((f) => f.name === n)!);
    if (!fields.some((f) => f.column in values)) continue;
    if (fields.some((f) => merged[f.column] === null || merged[f.column] === undefined)) continue;
    let q = w.trx.selectFrom(m.table).select('id');
    for (const f of fields) q = q.where(f.column, '=', merged[f.column]);
    if (await others(q).executeTakeFirst()) (errors.non_field_errors ??= []).push(`The fields ${set.join(', ')} must make a unique set.`);
  }
  if (m.extraRefs) {
    for (const ref of Object.values(m.extraRefs)) {
      const id = merged[ref.column];
      if (id === null || id === undefined || !(ref.column in values)) continue;
      if (ref.typeColumn && merged[ref.typeColumn] !== ref.type) continue;
      try {
        await resolveRelated(readCtxOf(w), model(ref.model), id);
      } catch (err) {
        if (!(err instanceof FieldProblem)) throw err;
        (errors[ref.column] ??= []).push(err.message);
      }
    }
  }
}

async function setTags(w: WriteContext, m: ModelDef, id: number, tagIds: number[]): Promise<void> {
  await checkTagAssignment(w.trx, w.dialect, m, id, tagIds);
  await w.trx.deleteFrom('extras_taggeditem').where('object_type', '=', m.objectType).where('object_id', '=', id).execute();
  if (tagIds.length) {
    await w.trx
      .insertInto('extras_taggeditem')
      .values(tagIds.map((tag_id) => ({ tag_id, object_type: m.objectType, object_id: id })))
      .execute();
  }
}

function toDb(w: WriteContext, m: ModelDef, values: Row, existing: Row | null = null): Row {
  const out: Row = {};
  const json = new Set(m.fields.filter((f) => f.kind === 'json').map((f) => f.column));
  for (const [k, v] of Object.entries(values)) out[k] = typeof v === 'boolean' ? w.dialect.bool(v) : json.has(k) && v !== null ? w.dialect.json(v) : v;
  if (m.naturalName && 'name' in values) out._name = naturalize(values.name);
  if (m.derived) Object.assign(out, m.derived({ ...(existing ?? {}), ...values }));
  return out;
}

async function setLinks(w: WriteContext, m: ModelDef, id: number, m2m: Record<string, number[]> | undefined): Promise<void> {
  for (const [name, ids] of Object.entries(m2m ?? {})) {
    const t = m.fields.find((f) => f.name === name)!.through!;
    await w.trx.deleteFrom(t.table).where(t.column, '=', id).execute();
    for (const part of chunks(ids)) if (part.length) await w.trx.insertInto(t.table).values(part.map((x) => ({ [t.column]: id, [t.target]: x }))).execute();
  }
}

/** Inserts a validated object and records its change. */
export async function createObject(w: WriteContext, m: ModelDef, v: Validated): Promise<number> {
  const now = w.dialect.timestamp(w.now);
  const row = {
    ...toDb(w, m, v.values),
    custom_fields: w.dialect.json(v.customFields ?? {}),
    created: now,
    last_updated: now,
  };
  // The inserted row as stored (defaults included) comes back with the insert: no read after it.
  const inserted = await w.trx.insertInto(m.table).values(row).returningAll().executeTakeFirstOrThrow();
  const id = Number(inserted.id);
  if (m.taggable && v.tags?.length) await setTags(w, m, id, v.tags);
  await setLinks(w, m, id, v.m2m);
  const after = normaliseRow(w.dialect, m, fastRows([inserted])[0]!);
  if (m.taggable && v.customFields && Object.keys(v.customFields).length) await syncUniqueCustomFields(readCtxOf(w), m.objectType, id, v.customFields);
  if (m.afterSave) await m.afterSave(w, id, after, null);
  w.changes.push({
    action: 'create',
    objectType: m.objectType,
    model: m.key,
    objectId: id,
    // A new object without tags has none to read.
    ...censored(m, null, await snapshot(readCtxOf(w), m, after, m.taggable && !v.tags?.length ? [] : undefined)),
  });
  return id;
}

/** The change's snapshots with the model's secrets replaced (ModelDef.censorSnapshots). */
function censored(m: ModelDef, prechange: Row | null, postchange: Row | null): { prechange: Row | null; postchange: Row | null } {
  return m.censorSnapshots ? m.censorSnapshots(prechange, postchange) : { prechange, postchange };
}

/** Applies validated changes to an existing object and records the change (also when nothing changed, as NetBox's event). */
export async function updateObject(w: WriteContext, m: ModelDef, existing: Row, v: Validated): Promise<void> {
  const ctx = readCtxOf(w);
  const before = await snapshot(ctx, m, existing);
  const set: Row = { ...toDb(w, m, v.values, existing), last_updated: w.dialect.timestamp(w.now) };
  if (m.taggable && v.customFields) set.custom_fields = w.dialect.json(v.customFields);
  await w.trx.updateTable(m.table).set(set).where('id', '=', existing.id).execute();
  if (m.taggable && v.tags) await setTags(w, m, existing.id, v.tags);
  if (m.taggable && v.customFields) await syncUniqueCustomFields(ctx, m.objectType, existing.id, v.customFields);
  await setLinks(w, m, existing.id, v.m2m);
  let after = (await fetchRow(ctx, m, existing.id))!;
  if (m.afterSave) {
    await m.afterSave(w, existing.id, after, existing);
    after = (await fetchRow(ctx, m, existing.id))!;
  }
  w.changes.push({
    action: 'update',
    objectType: m.objectType,
    model: m.key,
    objectId: existing.id,
    ...censored(m, before, await snapshot(ctx, m, after)),
  });
}

/** Deletes an object: refuses when protected children exist, deletes cascaded children first (each change-logged). */
export async function deleteObject(w: WriteContext, m: ModelDef, existing: Row): Promise<void> {
  const ctx = readCtxOf(w);
  for (const p of m.protectedBy ?? []) {
    const child = model(p.model);
    const rows = await w.trx.selectFrom(child.table).selectAll().where(p.column, '=', existing.id).limit(1000).execute();
    if (rows.length) {
      const found = [...(await fetchRowsByIds(ctx, child, rows.map((r) => Number(r.id)))).values()];
      const names = (await represent(ctx, child, found, true)).map((r) => String(r.display));
      throw conflict(`Unable to delete object. ${names.length} dependent objects were found: ${names.join(', ')}`);
    }
  }
  for (const c of m.cascade ?? []) {
    const child = model(c.model);
    let q = w.trx.selectFrom(child.table).select('id').where(c.column, '=', existing.id);
    if (c.typeColumn) q = q.where(c.typeColumn, '=', m.objectType);
    const ids = (await q.execute()).map((r) => Number(r.id));
    for (const row of (await lockRows(w, child, ids)).values()) await deleteObject(w, child, row);
  }
  // Journal entries and contact assignments go with their object (NetBox's GenericRelation), each change-logged.
  for (const child of registeredModels()) {
    const g = child.genericRef;
    if (!g || child === m || !g.supported(m)) continue;
    const ids = (await w.trx.selectFrom(child.table).select('id').where(g.typeColumn, '=', m.objectType).where(g.idColumn, '=', existing.id).execute()).map((r) => Number(r.id));
    for (const row of (await lockRows(w, child, ids)).values()) await deleteObject(w, child, row);
  }
  for (const s of m.setNull ?? []) {
    const child = model(s.model);
    await w.trx.updateTable(child.table).set({ [s.column]: null }).where(s.column, '=', existing.id).execute();
  }
  if (m.beforeDelete) await m.beforeDelete(w, existing);
  const before = await snapshot(ctx, m, existing);
  const [data] = await represent(ctx, m, [existing]);
  for (const f of m.fields) if (f.kind === 'm2m') await w.trx.deleteFrom(f.through!.table).where(f.through!.column, '=', existing.id).execute();
  if (m.taggable) await w.trx.deleteFrom('extras_taggeditem').where('object_type', '=', m.objectType).where('object_id', '=', existing.id).execute();
  if (m.taggable) await syncUniqueCustomFields(ctx, m.objectType, existing.id, null);
  await w.trx.deleteFrom(m.table).where('id', '=', existing.id).execute();
  w.changes.push({
    action: 'delete',
    objectType: m.objectType,
    model: m.key,
    objectId: existing.id,
    objectRepr: String(data?.display ?? existing.id),
    ...censored(m, before, null),
    deletedData: data,
  });
}
