import { sql } from 'kysely';
import type { Page } from '../api/pagination.ts';
import { validationError } from '../api/errors.ts';
import { buildFilters, values, type Query } from './filters.ts';
import { fastRows, normaliseRow, type ReadCtx } from './read.ts';
import type { ModelDef, Row } from './types.ts';

function orderColumn(m: ModelDef, name: string): string | undefined {
  if (name === 'id' || name === 'created' || name === 'last_updated') return name;
  if (name === 'name' && m.naturalName) return '_name';
  const f = m.fields.find((x) => x.name === name);
  // Addresses and prefixes sort numerically through their fixed-width hex keys.
  if (f?.kind === 'ipaddress') return '_host';
  if (f?.kind === 'prefix') return '_first';
  return f?.kind === 'm2m' ? undefined : f?.column;
}

/** `ordering=a,-b`: fields DRF's OrderingFilter would accept; unknown ones are ignored. */
function ordering(m: ModelDef, q: Query): Array<[string, 'asc' | 'desc']> {
  const requested = values(q, 'ordering')[0];
  const names = requested ? requested.split(',').map((s) => s.trim()).filter(Boolean) : m.ordering;
  const out: Array<[string, 'asc' | 'desc']> = [];
  for (const n of names.slice(0, 10)) {
    const desc = n.startsWith('-');
    const column = orderColumn(m, desc ? n.slice(1) : n);
    if (column) out.push([column, desc ? 'desc' : 'asc']);
  }
  if (!out.some(([c]) => c === 'id')) out.push(['id', 'asc']);
  return out;
}

/** One page of filtered, ordered rows and the total count. */
export async function listRows(ctx: ReadCtx, m: ModelDef, q: Query, page: Page): Promise<{ count: number; rows: Row[] }> {
  const { conds, errors } = await buildFilters(ctx, m, q);
  if (Object.keys(errors).length) throw validationError(errors);
  let base = ctx.db.selectFrom(m.table);
  for (const c of conds) base = base.where(c as any);
  const counted = await base.select(sql<number>`count(*)`.as('n')).executeTakeFirst();
  let rows = base.selectAll(m.table);
  for (const [column, dir] of ordering(m, q)) {
    // Nulls last in both dialects (SQLite sorts them first by default).
    rows = rows.orderBy(sql`${sql.ref(`${m.table}.${column}`)} is null`).orderBy(sql.ref(`${m.table}.${column}`), dir);
  }
  const found = await rows.limit(page.limit).offset(page.offset).execute();
  return { count: Number(counted?.n ?? 0), rows: fastRows(found).map((r) => normaliseRow(ctx.dialect, m, r)) };
}
