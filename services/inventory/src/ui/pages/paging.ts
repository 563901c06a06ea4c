import { html, type SafeHtml } from '../html.ts';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 500;

export function pageParams(query: unknown): { limit: number; offset: number } {
  const q = (query ?? {}) as Record<string, unknown>;
  const num = (v: unknown, dflt: number) => (typeof v === 'string' && /^\d{1,9}$/.test(v) ? Number(v) : dflt);
  return { limit: Math.min(MAX_LIMIT, Math.max(1, num(q.limit, DEFAULT_LIMIT))), offset: num(q.offset, 0) };
}

/** Previous/next links for a list page. `base` is a path without a query. */
export function pager(base: string, total: number, limit: number, offset: number): SafeHtml {
  if (total <= limit && offset === 0) return html`<p class="muted">${total} total</p>`;
  const prev = offset > 0 ? html`<a href="${base}?limit=${limit}&offset=${Math.max(0, offset - limit)}">« Previous</a>` : '';
  const next = offset + limit < total ? html`<a href="${base}?limit=${limit}&offset=${offset + limit}">Next »</a>` : '';
  return html`<p class="pager">${prev} <span class="muted">${offset + 1}–${Math.min(total, offset + limit)} of ${total}</span> ${next}</p>`;
}
