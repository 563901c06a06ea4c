import type { SelectQueryBuilder } from 'kysely';
import { offsetOf, pageOf, type Page, type Paging } from '../paging.ts';

export interface V3Paging {
  page?: number;
  size?: number;
  reverse?: boolean | null;
}

export const pagingOf = (q: V3Paging): Paging => ({ page: q.page ?? 1, size: q.size ?? 50, reverse: q.reverse === true, filter: undefined });

/**
 * One page (fastapi-pagination's `{items,total,page,size,pages}`) of an
 * already filtered query, ordered by the given columns (ascending, or all
 * descending when `reverse`).
 */
export async function pageQuery<T>(
  base: SelectQueryBuilder<any, any, {}>,
  table: string,
  order: string[],
  p: Paging,
  map: (row: any) => T,
): Promise<Page<T>> {
  const counted = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
  const total = Number(counted?.n ?? 0);
  const offset = offsetOf(p);
  if (total === 0 || offset === undefined || offset >= total) return pageOf([], total, p);
  let q = base.selectAll(table);
  for (const c of order) q = q.orderBy(c, p.reverse ? 'desc' : 'asc');
  const rows = await q.limit(p.size).offset(offset).execute();
  return pageOf(rows.map(map), total, p);
}
