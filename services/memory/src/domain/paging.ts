import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { SqlDialect } from '@svc/storage';
import type { ListQuery } from '../schemas/common.ts';
import { invalid } from './errors.ts';
import { findUnstorableText } from './values.ts';

export interface Paging {
  page: number;
  size: number;
  reverse: boolean;
  /** Parsed `filter`; undefined means no filter (absent, or JSON `null`). */
  filter: unknown;
}

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  size: number;
  pages: number;
}

const MAX_FILTER_DEPTH = 32;

function depth(v: unknown, limit: number): number {
  if (v === null || typeof v !== 'object') return 0;
  if (limit <= 0) return 1;
  let max = 0;
  for (const x of Array.isArray(v) ? v : Object.values(v)) max = Math.max(max, depth(x, limit - 1));
  return max + 1;
}

/** `filter` is a JSON document in the query string; bad JSON is a 422 (the reference answered 500 or 404). */
export function parseFilter(raw: string | null | undefined): unknown {
  if (raw === undefined || raw === null) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw invalid(['query', 'filter'], 'json_invalid', `Invalid JSON: ${reason}`, raw, { error: reason });
  }
  if (depth(value, MAX_FILTER_DEPTH + 1) > MAX_FILTER_DEPTH) {
    const reason = `nesting deeper than ${MAX_FILTER_DEPTH} levels`;
    throw invalid(['query', 'filter'], 'value_error', `Value error, ${reason}`, raw, { error: reason });
  }
  // An escaped NUL or lone surrogate (\u0000, \ud800) is plain ASCII in the query string; once
  // parsed, PostgreSQL's jsonb refuses it. No stored metadata can hold one, so say so on every storage.
  const bad = findUnstorableText(value);
  if (bad) {
    const reason = bad.why === 'nul' ? 'filter contains a NUL character (\\u0000)' : 'filter contains an unpaired surrogate';
    throw invalid(['query', 'filter'], 'value_error', `Value error, ${reason}`, raw, { error: reason });
  }
  return value === null ? undefined : value;
}

export function pagingFrom(q: ListQuery): Paging {
  return { page: q.page ?? 1, size: q.size ?? 50, reverse: q.reverse === true, filter: parseFilter(q.filter) };
}

export function pageOf<T>(items: T[], total: number, p: Paging): Page<T> {
  return { items, total, page: p.page, size: p.size, pages: total === 0 ? 0 : Math.ceil(total / p.size) };
}

/** Offset of a page, or undefined when the page is so far past the end that no database could seek there. */
export function offsetOf(p: Paging): number | undefined {
  const off = (p.page - 1) * p.size;
  return Number.isSafeInteger(off) && off <= 2 ** 62 ? off : undefined;
}

/**
 * One page of `table`, already narrowed by `scope`, ordered by created_at and
 * then insertion sequence, with the metadata containment filter applied.
 */
export async function listPage<T>(
  db: Kysely<any>,
  d: SqlDialect,
  table: string,
  scope: (qb: SelectQueryBuilder<any, any, {}>) => SelectQueryBuilder<any, any, {}>,
  p: Paging,
  map: (row: any) => T,
): Promise<Page<T>> {
  let base = scope(db.selectFrom(table) as SelectQueryBuilder<any, any, {}>);
  if (p.filter !== undefined) base = base.where(d.jsonContains(`${table}.metadata`, p.filter));
  const counted = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
  const total = Number(counted?.n ?? 0);
  const offset = offsetOf(p);
  if (total === 0 || offset === undefined || offset >= total) return pageOf([], total, p);
  const dir = p.reverse ? 'desc' : 'asc';
  const rows = await base
    .selectAll(table)
    .orderBy(`${table}.created_at`, dir)
    .orderBy(`${table}.seq`, dir)
    .limit(p.size)
    .offset(offset)
    .execute();
  return pageOf(rows.map(map), total, p);
}
