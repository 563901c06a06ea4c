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

function fail(status: number, message: string, field: string): never {
  throw cloudError(status, status === 422 ? 'validation_error' : 'invalid_request', message, { field });
}

/** One string value (a repeated parameter is refused); control characters and lone surrogates are refused too. */
export function qString(q: Query, name: string, maxLength = 2048, status = 400): string | undefined {
  const v = q[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') fail(status, `${name} must be given once`, name);
  if (v.length > maxLength) fail(status, `${name} is longer than ${maxLength} characters`, name);
  if (!wellFormed(v)) fail(status, `${name} contains control characters or invalid Unicode`, name);
  return v;
}

export function qInt(q: Query, name: string, dflt: number, min: number, max: number, status = 400): number {
  const v = qString(q, name, 32, status);
  if (v === undefined || v === '') return dflt;
  const n = /^\s*\d{1,13}\s*$/.test(v) ? Number(v.trim()) : NaN;
  if (!(n >= min && n <= max)) fail(status, `${name} must be an integer between ${min} and ${max}`, name);
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
