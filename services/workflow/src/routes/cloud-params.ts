import type { FastifyRequest } from 'fastify';
import { cloudError } from '../identity/errors.ts';

/** Query and path values of the hosted routes, checked by hand so every refusal is a CloudError. */
export type Query = Record<string, unknown>;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** No control characters and no lone surrogates (which no database column stores faithfully). */
export function wellFormed(v: string): boolean {
  return !LONE_SURROGATE.test(v) && !/[\u0000-\u001f\u007f]/.test(v);
}

export function query(req: FastifyRequest): Query {
  return (req.query ?? {}) as Query;
}

/** One string value (a repeated parameter is refused); control characters and lone surrogates are refused too. */
export function qString(q: Query, name: string, maxLength = 2048): string | undefined {
  const v = q[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw cloudError(400, 'invalid_request', `${name} must be given once`, { field: name });
  if (v.length > maxLength) throw cloudError(400, 'invalid_request', `${name} is longer than ${maxLength} characters`, { field: name });
  if (!wellFormed(v)) throw cloudError(400, 'invalid_request', `${name} contains control characters or invalid Unicode`, { field: name });
  return v;
}

export function qInt(q: Query, name: string, dflt: number, min: number, max: number, status = 400): number {
  const v = qString(q, name, 32);
  if (v === undefined || v === '') return dflt;
  if (!/^\d{1,12}$/.test(v.trim())) throw cloudError(status, 'invalid_request', `${name} must be an integer between ${min} and ${max}`, { field: name });
  const n = Number(v.trim());
  if (n < min || n > max) throw cloudError(status, 'invalid_request', `${name} must be an integer between ${min} and ${max}`, { field: name });
  return n;
}

export function param(req: FastifyRequest, name: string): string {
  const v = (req.params as Record<string, unknown>)[name];
  return typeof v === 'string' ? v : '';
}

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function notFound(what: string): never {
  throw cloudError(404, 'not_found', `${what} not found`);
}

/** `[cloud-only] Deprecated. …` with the successor named, as the deprecation convention asks. */
export function deprecatedDoc(successor: string, rest = ''): string {
  return `Deprecated. This endpoint is superseded by ${successor}.${rest ? ` ${rest}` : ''}`;
}
