import { choiceLabel } from './choices.ts';
import { chunks, fetchRowsByIds, type ReadCtx } from './read.ts';
import { displayUrl, model, modelForObjectType, objectUrl } from './lookup.ts';
import { enrichGeneric } from './generic-object.ts';
import type { FieldDef, ModelDef, Refs, Row } from './types.ts';
import { djangoIso } from './values.ts';
import { customFieldsFor } from './custom-fields.ts';
import { applyConfigContexts } from './config-contexts.ts';

type Obj = Record<string, unknown>;

export interface NestedTag {
  id: number;
  url: string;
  display: string;
  name: string;
  slug: string;
  color: string;
}

/**
 * Tags of many objects at once, each list sorted by name as NetBox orders tags. The links come from
 * the tagged-item index alone and the few distinct tags are read once, in the database's name order,
 * rather than joined and sorted per link; objects with the same tag share one nested object.
 */
export async function loadTags(ctx: ReadCtx, m: ModelDef, ids: number[]): Promise<Map<number, NestedTag[]>> {
  const out = new Map<number, NestedTag[]>();
  if (!m.taggable) return out;
  const links: Array<[number, number]> = [];
  for (const part of chunks([...new Set(ids)], 1000)) {
    if (part.length === 0) continue;
    const rows = await ctx.db.selectFrom('extras_taggeditem').select(['object_id', 'tag_id']).where('object_type', '=', m.objectType).where('object_id', 'in', part).execute();
    for (const r of rows) links.push([Number(r.object_id), Number(r.tag_id)]);
  }
  if (links.length === 0) return out;
  const tagModel = model('tag');
  const rank = new Map<number, number>();
  const nested = new Map<number, NestedTag>();
  for (const part of chunks([...new Set(links.map((l) => l[1]))], 1000)) {
    const rows = await ctx.db.selectFrom('extras_tag').select(['id', 'name', 'slug', 'color']).where('id', 'in', part).orderBy('name').orderBy('id').execute();
    for (const r of rows) nested.set(Number(r.id), { id: Number(r.id), url: objectUrl(ctx.base, tagModel, r.id), display: r.name, name: r.name, slug: r.slug, color: r.color });
  }
  // The database's collation decides name order: rank the tags in one ordered read (all of them when they came in parts).
  const ordered = nested.size <= 1000 ? [...nested.keys()] : (await ctx.db.selectFrom('extras_tag').select('id').orderBy('name').orderBy('id').execute()).map((r) => Number(r.id));
  ordered.forEach((id, i) => rank.set(id, i));
  for (const [objectId, tagId] of links) {
    const tag = nested.get(tagId);
    if (!tag) continue;
    const list = out.get(objectId);
    if (list) list.push(tag);
    else out.set(objectId, [tag]);
  }
  for (const list of out.values()) if (list.length > 1) list.sort((a, b) => rank.get(a.id)! - rank.get(b.id)!);
  return out;
}

/** Loads the briefs of the FK fields (and extra refs) the caller needs, for many rows at once. */
async function loadRefs(ctx: ReadCtx, m: ModelDef, rows: Row[], names: string[]): Promise<Map<number, Refs>> {
  const refs = new Map<number, Refs>(rows.map((r) => [r.id as number, {}]));
  for (const name of new Set(names)) {
    const f = m.fields.find((x) => x.name === name && x.kind === 'fk');
    const extra = m.extraRefs?.[name];
    if (!f && !extra) continue;
    const target = model(f ? f.fk! : extra!.model);
    const column = f ? f.column : extra!.column;
    const applies = (r: Row) => r[column] !== null && (!extra?.typeColumn || r[extra.typeColumn] === extra.type);
    const ids = rows.filter(applies).map((r) => r[column] as number);
    const briefs = await loadBriefs(ctx, target, ids);
    for (const r of rows) refs.get(r.id)![name] = applies(r) ? briefs.get(r[column]) ?? null : null;
  }
  return refs;
}

/** The raw rows of related objects display() needs (ModelDef.displayRows), as `refs['<field>:row']`. */
async function loadDisplayRows(ctx: ReadCtx, m: ModelDef, rows: Row[], refs: Map<number, Refs>): Promise<void> {
  for (const [name, needs] of Object.entries(m.displayRows ?? {})) {
    const f = m.fields.find((x) => x.name === name && x.kind === 'fk')!;
    const wanted = rows.filter((r) => r[f.column] !== null && r[f.column] !== undefined && needs(r));
    if (!wanted.length) continue;
    const found = await fetchRowsByIds(ctx, model(f.fk!), wanted.map((r) => Number(r[f.column])));
    for (const r of wanted) refs.get(r.id)![`${name}:row`] = found.get(Number(r[f.column])) ?? null;
  }
}

function apiValue(f: FieldDef, row: Row, refs: Refs): unknown {
  if (f.kind === 'm2m') return (refs[f.name] as unknown as unknown[]) ?? [];
  const v = row[f.column];
  if (f.kind === 'fk') return refs[f.name] ?? null;
  if (v === null || v === undefined) return null;
  if (f.kind === 'choice') return { value: v, label: choiceLabel(f.choices!, v) };
  return v;
}

function briefOf(ctx: ReadCtx, m: ModelDef, row: Row, refs: Refs, counts?: Map<string, Map<number, number>>): Obj {
  const out: Obj = { id: row.id, url: objectUrl(ctx.base, m, row.id), display: m.display(row, refs) };
  for (const name of m.brief) {
    if (name === 'family') out.family = { value: row.family, label: `IPv${row.family}` };
    // Change-logged timestamps as the full representation gives them (a journal entry's brief form has `created`).
    else if (name === 'created' || name === 'last_updated') out[name] = row[name] ?? null;
    else if (m.counts && name in m.counts) out[name] = counts?.get(name)?.get(row.id) ?? 0;
    else if (m.unmodelled && name in m.unmodelled) out[name] = m.unmodelled[name];
    else if (m.briefValues && name in m.briefValues) out[name] = m.briefValues[name]!(row, refs);
    else if (m.extraRefs && name in m.extraRefs) out[name] = refs[name] ?? null;
    else out[name] = apiValue(m.fields.find((f) => f.name === name)!, row, refs);
  }
  return out;
}

/** Counts a brief form shows (NetBox's brief_fields include some `*_count`). */
async function briefCounts(ctx: ReadCtx, m: ModelDef, rows: Row[]): Promise<Map<string, Map<number, number>> | undefined> {
  if (!m.counts || !m.brief.some((n) => n in m.counts!)) return undefined;
  const only = { ...m, counts: Object.fromEntries(Object.entries(m.counts).filter(([k]) => m.brief.includes(k))) };
  return loadCounts(ctx, only, rows.map((r) => r.id as number));
}

/** Brief (nested) representations by id. */
export async function loadBriefs(ctx: ReadCtx, m: ModelDef, ids: number[]): Promise<Map<number, Obj>> {
  const rows = [...(await fetchRowsByIds(ctx, m, ids)).values()];
  const refs = await loadRefs(ctx, m, rows, [...m.brief, ...(m.displayNeeds ?? [])]);
  await loadDisplayRows(ctx, m, rows, refs);
  const counts = await briefCounts(ctx, m, rows);
  return new Map(rows.map((r) => [r.id as number, briefOf(ctx, m, r, refs.get(r.id)!, counts)]));
}

async function tagUsage(ctx: ReadCtx, ids: number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const part of chunks(ids)) {
    if (part.length === 0) continue;
    const rows = await ctx.db.selectFrom('extras_taggeditem').select(['tag_id']).select((eb) => eb.fn.countAll().as('n')).where('tag_id', 'in', part).groupBy('tag_id').execute();
    for (const r of rows) out.set(Number(r.tag_id), Number(r.n));
  }
  return out;
}

/** Ids linked through a many-to-many table, per object. */
export async function loadLinks(ctx: ReadCtx, f: FieldDef, ids: number[]): Promise<Map<number, number[]>> {
  const out = new Map<number, number[]>();
  const t = f.through!;
  for (const part of chunks([...new Set(ids)])) {
    if (part.length === 0) continue;
    const rows = await ctx.db.selectFrom(t.table).select([`${t.column} as o`, `${t.target} as t`]).where(t.column, 'in', part).orderBy(t.target).execute();
    for (const r of rows) {
      const list = out.get(Number(r.o)) ?? [];
      list.push(Number(r.t));
      out.set(Number(r.o), list);
    }
  }
  return out;
}

/** Children per object for the `*_count` fields. */
async function loadCounts(ctx: ReadCtx, m: ModelDef, ids: number[]): Promise<Map<string, Map<number, number>>> {
  const out = new Map<string, Map<number, number>>();
  for (const [name, c] of Object.entries(m.counts ?? {})) {
    const per = new Map<number, number>();
    out.set(name, per);
    const custom = m.countsCustom?.[name];
    if (!c && custom) {
      for (const part of chunks(ids)) if (part.length) for (const [k, n] of await custom(ctx, part)) per.set(k, n);
      continue;
    }
    if (!c) continue;
    const child = model(c.model);
    for (const part of chunks(ids)) {
      if (part.length === 0) continue;
      let q = ctx.db
        .selectFrom(child.table)
        .select([`${c.column} as k`])
        .select((eb) => (c.sum ? eb.fn.sum(c.sum) : eb.fn.countAll()).as('n'))
        .where(c.column, 'in', part);
      if (c.typeColumn) q = q.where(c.typeColumn, '=', m.objectType);
      const rows = await q.groupBy(c.column).execute();
      for (const r of rows) if (r.n !== null) per.set(Number(r.k), Number(r.n));
    }
  }
  return out;
}

/** REST representations (full or brief) of already-fetched rows, in their order. */
export async function represent(ctx: ReadCtx, m: ModelDef, rows: Row[], brief = false): Promise<Obj[]> {
  if (rows.length === 0) return [];
  if (brief) {
    const refs = await loadRefs(ctx, m, rows, [...m.brief, ...(m.displayNeeds ?? [])]);
    await loadDisplayRows(ctx, m, rows, refs);
    const counts = await briefCounts(ctx, m, rows);
    return rows.map((r) => briefOf(ctx, m, r, refs.get(r.id)!, counts));
  }
  const fkNames = [...m.fields.filter((f) => f.kind === 'fk').map((f) => f.name), ...Object.keys(m.extraRefs ?? {}), ...(m.displayNeeds ?? [])];
  const refs = await loadRefs(ctx, m, rows, fkNames);
  await loadDisplayRows(ctx, m, rows, refs);
  const ids = rows.map((r) => r.id as number);
  for (const f of m.fields.filter((x) => x.kind === 'm2m')) {
    const links = await loadLinks(ctx, f, ids);
    const briefs = await loadBriefs(ctx, model(f.fk!), [...links.values()].flat());
    for (const r of rows) refs.get(r.id)![f.name] = (links.get(r.id) ?? []).map((id) => briefs.get(id)).filter(Boolean) as any;
  }
  const counts = m.counts ? await loadCounts(ctx, m, ids) : undefined;
  const tags = await loadTags(ctx, m, ids);
  const usage = m.key === 'tag' ? await tagUsage(ctx, ids) : undefined;
  const { fields, unmodelled, countNames, make } = fullPlan(m);
  // With custom fields defined for the type, each object shows every one of them (null when unset), as NetBox.
  const cfNames = m.taggable ? (await customFieldsFor(ctx, m.objectType)).map((d) => d.name) : [];
  const cfOf = (stored: Record<string, unknown> | null | undefined) => (cfNames.length ? Object.fromEntries(cfNames.map((n) => [n, stored?.[n] ?? null])) : (stored ?? {}));
  const outs = rows.map((r) => {
    const rr = refs.get(r.id)!;
    const v: unknown[] = [r.id, objectUrl(ctx.base, m, r.id), displayUrl(ctx.base, m, r.id), m.display(r, rr)];
    for (const [f, extra] of fields) {
      if (extra) for (const [, value] of extra) v.push(value(r, rr));
      v.push(apiValue(f, r, rr));
    }
    for (const [, x] of unmodelled) v.push(x === null ? null : Array.isArray(x) && x.length === 0 ? [] : typeof x !== 'object' ? x : structuredClone(x));
    if (m.taggable) v.push(tags.get(r.id) ?? [], cfOf(r.custom_fields));
    if (usage) v.push(Array.isArray(r.object_types) ? r.object_types : [], usage.get(r.id) ?? 0);
    v.push(r.created, r.last_updated);
    for (const name of countNames) v.push(counts!.get(name)!.get(r.id) ?? (m.counts![name]?.sum ? null : 0));
    const out = make(v);
    return m.represent ? m.represent(r, out, rr) : out;
  });
  if (m.enrich) await m.enrich(ctx, rows, outs);
  if (m.genericRef) await enrichGeneric(ctx, m.genericRef, modelForObjectType, loadBriefs, rows, outs);
  if (m.scopeRef) await enrichGeneric(ctx, m.scopeRef, modelForObjectType, loadBriefs, rows, outs);
  // Devices and VMs: config contexts merged under the local context data (`config_context`).
  if (m.fields.some((f) => f.name === 'local_context_data')) await applyConfigContexts(ctx, m, rows, outs);
  return outs;
}

interface FullPlan {
  fields: ReadonlyArray<readonly [FieldDef, Array<[string, (row: Row, refs: Refs) => unknown]> | undefined]>;
  unmodelled: Array<[string, unknown]>;
  countNames: string[];
  /** The representation from its values in key order, as one object literal. */
  make: (values: unknown[]) => Obj;
}
const fullPlans = new WeakMap<ModelDef, FullPlan>();

/**
 * A model's full representation is built as one object literal (a function generated once per model
 * from its key list). Adding its 40–70 keys one by one leaves V8 objects in dictionary mode, which
 * JSON.stringify writes about twice as slowly; a literal's object has fast properties.
 */
function fullPlan(m: ModelDef): FullPlan {
  let p = fullPlans.get(m);
  if (p) return p;
  const fields = m.fields.map((f) => [f, m.computed?.[f.name]] as const);
  const unmodelled = Object.entries(m.unmodelled ?? {});
  const countNames = Object.keys(m.counts ?? {});
  // The key order the representation has always had (a repeated key keeps its first place, as an assignment would).
  const keys = ['id', 'url', 'display_url', 'display'];
  for (const [f, extra] of fields) {
    for (const [name] of extra ?? []) keys.push(name);
    keys.push(f.name);
  }
  keys.push(...unmodelled.map(([k]) => k));
  if (m.taggable) keys.push('tags', 'custom_fields');
  if (m.key === 'tag') keys.push('object_types', 'tagged_items');
  keys.push('created', 'last_updated', ...countNames);
  let make: FullPlan['make'];
  if (keys.every((k) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && k !== '__proto__')) {
    make = new Function('v', `return {${keys.map((k, i) => `${JSON.stringify(k)}: v[${i}]`).join(', ')}};`) as FullPlan['make'];
  } else {
    make = (v) => {
      const out: Obj = {};
      keys.forEach((k, i) => (out[k] = v[i]));
      return out;
    };
  }
  p = { fields, unmodelled, countNames, make };
  fullPlans.set(m, p);
  return p;
}

/** A decimal as Django serialises it: the column's decimal places (u_height 1, coordinates 6, position 1). */
function decimalText(v: unknown, f: FieldDef): string {
  return Number(v).toFixed(f.places ?? 1);
}

/** One object's REST representation, or null when it does not exist. */
export async function representOne(ctx: ReadCtx, m: ModelDef, id: number): Promise<Obj | null> {
  const row = (await fetchRowsByIds(ctx, m, [id])).get(id);
  if (!row) return null;
  return (await represent(ctx, m, [row]))[0]!;
}

/**
 * NetBox's serialize_object: raw column values (FK ids, choice values,
 * decimals as strings), custom_fields, and tag names sorted; no last_updated.
 */
export async function snapshot(ctx: ReadCtx, m: ModelDef, row: Row, knownTagNames?: string[]): Promise<Obj> {
  const out: Obj = { created: djangoIso(row.created) };
  for (const f of m.fields) {
    if (f.kind === 'm2m') {
      out[f.name] = (await loadLinks(ctx, f, [row.id])).get(row.id) ?? [];
      continue;
    }
    const v = row[f.column];
    out[f.name] = f.kind === 'decimal' && v !== null ? decimalText(v, f) : v;
  }
  if (m.taggable) {
    out.custom_fields = row.custom_fields ?? {};
    out.tags = knownTagNames ? [...knownTagNames].sort() : ((await loadTags(ctx, m, [row.id])).get(row.id) ?? []).map((t) => t.name).sort();
  }
  return out;
}
