import type { FastifyRequest } from 'fastify';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 1000;

export interface Page {
  limit: number;
  offset: number;
}

/** Offsets beyond this match nothing anyway; larger ones would overflow the databases' 64-bit OFFSET. */
export const MAX_OFFSET = 1e15;

/** DRF's _positive_int: a non-negative integer, else the default; a huge one is capped instead of overflowing SQL. */
function positiveInt(v: unknown, fallback: number, cap: number): number {
  const s = Array.isArray(v) ? v[v.length - 1] : v;
  if (typeof s !== 'string') return fallback;
  const t = s.trim();
  if (!/^\+?\d{1,1000}$/.test(t)) return fallback;
  const digits = t.replace(/^\+?0*/, '');
  return digits.length > 15 ? cap : Math.min(Number(digits || '0'), cap);
}

/** NetBox's OptionalLimitOffsetPagination: limit=0 means "as many as allowed", over-large limits are capped. */
export function pageOf(query: Record<string, unknown>): Page {
  let limit = positiveInt(query.limit, DEFAULT_PAGE_SIZE, Number.MAX_SAFE_INTEGER);
  if (limit === 0 || limit > MAX_PAGE_SIZE) limit = MAX_PAGE_SIZE;
  return { limit, offset: positiveInt(query.offset, 0, MAX_OFFSET) };
}

/** `http://host:port` of the request, for absolute URLs as DRF's build_absolute_uri. */
export function baseUrl(req: FastifyRequest): string {
  const host = typeof req.headers.host === 'string' && /^[A-Za-z0-9.\-:[\]]{1,300}$/.test(req.headers.host) ? req.headers.host : `${req.hostname}`;
  return `${req.protocol}://${host}`;
}

function withParams(req: FastifyRequest, set: Record<string, string | undefined>): string {
  const url = new URL(req.url, 'http://x');
  const params = new URLSearchParams(url.search);
  for (const [k, v] of Object.entries(set)) {
    params.delete(k);
    if (v !== undefined) params.set(k, v);
  }
  // DRF's replace_query_param re-encodes the query sorted by key.
  const sorted = [...params.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const qs = new URLSearchParams(sorted).toString();
  return `${baseUrl(req)}${url.pathname}${qs ? `?${qs}` : ''}`;
}

/** `{count, next, previous, results}` with absolute links, as DRF's LimitOffsetPagination. */
export function paginated(req: FastifyRequest, page: Page, count: number, results: unknown[]) {
  const next = page.offset + page.limit < count ? withParams(req, { limit: String(page.limit), offset: String(page.offset + page.limit) }) : null;
  let previous: string | null = null;
  if (page.offset > 0) {
    previous =
      page.offset - page.limit <= 0
        ? withParams(req, { limit: String(page.limit), offset: undefined })
        : withParams(req, { limit: String(page.limit), offset: String(page.offset - page.limit) });
  }
  return { count, next, previous, results };
}
