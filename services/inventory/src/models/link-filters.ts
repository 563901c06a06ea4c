import { sql } from 'kysely';
import type { ExtraFilter, ReadCtx } from './types.ts';

/**
 * django-filter's ModelMultipleChoiceFilter across a many-to-many link table (`asns`, `import_targets`, `sites__group`):
 * each value names an existing object (by id, or by `attribute`), `null` matches objects without a link; with `via`,
 * the linked rows' `via.column` is matched instead (a tree's subtree when `via.tree` is set).
 */
export interface LinkFilterSpec {
  name: string;
  /** This model's table. */
  table: string;
  /** The link table, its column holding this object's id and the one holding the other's. */
  link: string;
  self: string;
  other: string;
  /** The table the values name (the linked model, or the one `via` reaches). */
  target: string;
  /** Values name objects by this attribute instead of their id; `numeric` when it is a number column. */
  attribute?: string;
  numeric?: boolean;
  /** Match the linked rows' `column` (in `table`, joined by its `key`, default id) instead of the linked ids; `tree`: that column points into a tree. */
  via?: { table: string; column: string; tree?: boolean; key?: string };
  /** The values name nodes of a tree (`target` by `parent_id`) that stand for their subtree. */
  tree?: boolean;
}

const invalid = (v: string) => `Select a valid choice. ${v} is not one of the available choices.`;

export function linkFilter(spec: LinkFilterSpec): ExtraFilter {
  return {
    name: spec.name,
    kind: 'custom',
    where: async (ctx, vals, errors) => {
      const withNull = vals.includes('null');
      const given = vals.filter((v) => v !== 'null').map((v) => v.trim());
      const byId = !spec.attribute;
      const bad = given.find((v) => (byId || spec.numeric ? !/^\d{1,16}$/.test(v) : v.length > 200));
      if (bad !== undefined) return void (errors[spec.name] = [invalid(bad)]);
      let ids: number[] = [];
      if (given.length) {
        const col = spec.attribute ?? 'id';
        const rows = await ctx.db.selectFrom(spec.target).select(['id', `${col} as v`]).where(col, 'in', byId || spec.numeric ? given.map(Number) : given).execute();
        const found = new Set(rows.map((r) => String(r.v)));
        const missing = given.find((v) => !found.has(byId || spec.numeric ? String(Number(v)) : v));
        if (missing !== undefined) return void (errors[spec.name] = [invalid(missing)]);
        ids = rows.map((r) => Number(r.id));
        if (spec.via?.tree || spec.tree) ids = await subtree(ctx, spec.target, ids);
      }
      const me = sql.ref(`${spec.table}.id`);
      const linked = (cond: ReturnType<typeof sql>) =>
        spec.via
          ? sql`${me} in (select l.${sql.ref(spec.self)} from ${sql.table(spec.link)} l join ${sql.table(spec.via.table)} o on o.${sql.ref(spec.via.key ?? 'id')} = l.${sql.ref(spec.other)} where ${cond})`
          : sql`${me} in (select l.${sql.ref(spec.self)} from ${sql.table(spec.link)} l where ${cond})`;
      const target = spec.via ? sql`o.${sql.ref(spec.via.column)}` : sql`l.${sql.ref(spec.other)}`;
      const parts = [];
      if (ids.length) parts.push(linked(sql`${target} in (${sql.join(ids)})`));
      if (given.length && !ids.length) parts.push(sql`1 = 0`);
      if (withNull) {
        // Django's `a__isnull=True` (outer join): no link at all, or (through `via`, or a link row's own column) a row without the value.
        parts.push(sql`not exists (select 1 from ${sql.table(spec.link)} l where l.${sql.ref(spec.self)} = ${me})`);
        if (spec.via || spec.tree) parts.push(linked(sql`${target} is null`));
        if (spec.via) {
          const key = sql.ref(spec.via.key ?? 'id');
          parts.push(sql`${me} in (select l.${sql.ref(spec.self)} from ${sql.table(spec.link)} l where not exists (select 1 from ${sql.table(spec.via.table)} o where o.${key} = l.${sql.ref(spec.other)}))`);
        }
      }
      return parts.length ? sql`(${sql.join(parts, sql` or `)})` : undefined;
    },
  };
}

/** The id and slug (or `attribute`) filters of one link. */
export function linkFilters(name: string, spec: Omit<LinkFilterSpec, 'name' | 'attribute' | 'numeric'>, attribute = 'slug', numeric = false): ExtraFilter[] {
  return [linkFilter({ ...spec, name: `${name}_id` }), linkFilter({ ...spec, name, attribute, numeric })];
}

async function subtree(ctx: ReadCtx, table: string, roots: number[]): Promise<number[]> {
  const all = new Set(roots);
  let frontier = roots;
  for (let depth = 0; frontier.length && depth < 100; depth++) {
    const rows = await ctx.db.selectFrom(table).select('id').where('parent_id', 'in', frontier).execute();
    frontier = rows.map((r) => Number(r.id)).filter((id) => !all.has(id));
    frontier.forEach((id) => all.add(id));
  }
  return [...all];
}
