import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '@svc/kernel';
import { pageOf } from '../api/pagination.ts';
import { ValidationFailed } from './validate.ts';

/** NetBox pagination: limit (default 50, max 1000) / offset; huge numbers are capped, not passed to SQL. */
export function pageParams(req: FastifyRequest): { limit: number; offset: number } {
  return pageOf(req.query as Record<string, unknown>);
}

export function paginated<T>(req: FastifyRequest, count: number, results: T[], page: { limit: number; offset: number }) {
  const base = `${req.protocol}://${req.headers.host ?? 'localhost'}${req.url.split('?')[0]}`;
  const params = new URLSearchParams(req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '');
  const link = (offset: number) => {
    const p = new URLSearchParams(params);
    p.set('limit', String(page.limit));
    if (offset > 0) p.set('offset', String(offset));
    else p.delete('offset');
    return `${base}?${p.toString()}`;
  };
  return {
    count,
    next: page.offset + page.limit < count ? link(page.offset + page.limit) : null,
    previous: page.offset > 0 ? link(Math.max(0, page.offset - page.limit)) : null,
    results,
  };
}

/** Repeated or comma-less query values as a list. */
export function queryList(req: FastifyRequest, name: string): string[] {
  const v = (req.query as Record<string, unknown>)[name];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).map(String).filter((s) => s !== '');
}

export function queryIds(req: FastifyRequest, name: string): number[] {
  const out: number[] = [];
  for (const s of queryList(req, name)) {
    if (!/^\d{1,15}$/.test(s)) throw new HttpError(400, { [name]: [`“${s.slice(0, 50)}” is not a valid value.`] });
    out.push(Number(s));
  }
  return out;
}

export function pathId(req: FastifyRequest, what: string): number {
  const raw = (req.params as { id?: string }).id ?? '';
  if (!/^\d{1,15}$/.test(raw)) throw new HttpError(404, { detail: `No ${what} matches the given query.` });
  return Number(raw);
}

export function notFound(what: string): HttpError {
  return new HttpError(404, { detail: `No ${what} matches the given query.` });
}

/** Turns domain validation failures into NetBox's 400 body. */
export async function withValidation<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ValidationFailed) throw new HttpError(400, err.errors);
    throw err;
  }
}

export function noContent(reply: FastifyReply): FastifyReply {
  return reply.code(204).send();
}

/**
 * NetBox bulk operations on a list URL: the body is a list, every item is
 * processed in one transaction, and any failure rolls all back with the
 * per-item errors as a list (`[{}, {"name": ["…"]}]`).
 */
export async function bulk<T>(items: unknown, fn: (item: Record<string, unknown>, index: number) => Promise<T>): Promise<T[]> {
  if (!Array.isArray(items) || items.length === 0) throw new HttpError(400, { non_field_errors: ['Expected a non-empty list of items.'] });
  if (items.length > 1000) throw new HttpError(400, { non_field_errors: ['At most 1000 items per request.'] });
  const out: T[] = [];
  const errors: unknown[] = [];
  let failed = false;
  for (const [i, item] of items.entries()) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      errors.push({ non_field_errors: ['Invalid data. Expected a dictionary.'] });
      failed = true;
      continue;
    }
    try {
      out.push(await fn(item as Record<string, unknown>, i));
      errors.push({});
    } catch (err) {
      if (err instanceof ValidationFailed) errors.push(err.errors);
      else if (err instanceof HttpError && err.statusCode === 400) errors.push(err.body);
      else throw err;
      failed = true;
    }
  }
  if (failed) throw new HttpError(400, errors);
  return out;
}

/** The `id` of a bulk update/delete item. */
export function bulkId(item: Record<string, unknown>): number {
  const id = item.id;
  if (typeof id === 'number' && Number.isSafeInteger(id) && id > 0) return id;
  if (typeof id === 'string' && /^\d{1,15}$/.test(id)) return Number(id);
  throw new HttpError(400, { id: [id === undefined ? 'This field is required.' : 'A valid integer is required.'] });
}
