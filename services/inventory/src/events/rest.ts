import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '@svc/kernel';
import { ValidationFailed } from './validate.ts';

/** NetBox pagination: limit (default 50, max 1000) / offset, absolute next/previous links. */
export function pageParams(req: FastifyRequest): { limit: number; offset: number } {
  const q = req.query as Record<string, unknown>;
  const num = (v: unknown, dflt: number) => {
    const s = Array.isArray(v) ? v[0] : v;
    if (s === undefined || s === '') return dflt;
    const n = Number(s);
    return Number.isInteger(n) && n >= 0 ? n : dflt;
  };
  let limit = num(q.limit, 50);
  if (limit === 0 || limit > 1000) limit = 1000;
  return { limit, offset: num(q.offset, 0) };
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
