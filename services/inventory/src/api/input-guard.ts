import type { FastifyRequest } from 'fastify';
import { HttpError } from '@svc/kernel';

/**
 * Input no storage can keep faithfully, refused on every storage alike with
 * DRF's 400 shape before any handler runs: NUL characters (PostgreSQL text
 * and jsonb cannot hold them), unpaired UTF-16 surrogates (not encodable as
 * UTF-8: SQLite would store U+FFFD, PostgreSQL refuses them), numbers JSON
 * cannot represent (1e999 parses to Infinity), and JSON nested so deep that
 * serialising, comparing or storing it recurses without bound.
 */
export const MAX_JSON_DEPTH = 64;

export const NUL_MESSAGE = 'Null characters are not allowed.';
export const SURROGATE_MESSAGE = 'Unpaired surrogate characters are not allowed.';
export const DEPTH_MESSAGE = `JSON nested deeper than ${MAX_JSON_DEPTH} levels is not allowed.`;
export const FLOAT_MESSAGE = 'Out of range float values are not JSON compliant.';

const SUSPECT = /[\u0000\uD800-\uDFFF]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function stringProblem(s: string): string | undefined {
  if (!SUSPECT.test(s)) return undefined;
  if (s.includes('\u0000')) return NUL_MESSAGE;
  if (LONE_SURROGATE.test(s)) return SURROGATE_MESSAGE;
  return undefined;
}

/** The first problem inside one JSON value (keys included), or undefined. */
export function jsonProblem(v: unknown, depth = 0): string | undefined {
  if (typeof v === 'string') return stringProblem(v);
  if (typeof v === 'number') return Number.isFinite(v) ? undefined : FLOAT_MESSAGE;
  if (v === null || typeof v !== 'object') return undefined;
  if (depth >= MAX_JSON_DEPTH) return DEPTH_MESSAGE;
  if (Array.isArray(v)) {
    for (const x of v) {
      const p = jsonProblem(x, depth + 1);
      if (p) return p;
    }
    return undefined;
  }
  for (const k in v) {
    const p = stringProblem(k) ?? jsonProblem((v as Record<string, unknown>)[k], depth + 1);
    if (p) return p;
  }
  return undefined;
}

/** `{"field": ["message"]}` per offending top-level key of one object (DRF's field errors). */
function objectErrors(obj: Record<string, unknown>): Record<string, string[]> | undefined {
  let out: Record<string, string[]> | undefined;
  for (const k in obj) {
    const p = stringProblem(k) ?? jsonProblem(obj[k], 1);
    if (p) (out ??= {})[stringProblem(k) ? 'non_field_errors' : k] = [p];
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The DRF-shaped error body for a request body, or undefined when it is clean. */
export function bodyErrors(body: unknown): unknown {
  if (isObject(body)) return objectErrors(body);
  if (Array.isArray(body)) {
    // Bulk requests: one error object per item, `{}` for clean ones, as DRF's ListSerializer.
    let bad = false;
    const items = body.map((item) => {
      const e = isObject(item) ? objectErrors(item) : (() => {
        const p = jsonProblem(item, 1);
        return p ? { non_field_errors: [p] } : undefined;
      })();
      if (e) bad = true;
      return e ?? {};
    });
    return bad ? items : undefined;
  }
  const p = jsonProblem(body);
  return p ? { non_field_errors: [p] } : undefined;
}

/** django-filter's form errors for query parameters: `{"name": ["Null characters are not allowed."]}`. */
export function queryErrors(query: unknown): Record<string, string[]> | undefined {
  if (!isObject(query)) return undefined;
  let out: Record<string, string[]> | undefined;
  for (const k in query) {
    const v = query[k];
    for (const s of Array.isArray(v) ? v : [v]) {
      const p = typeof s === 'string' ? stringProblem(s) : undefined;
      if (p) {
        (out ??= {})[stringProblem(k) ? 'non_field_errors' : k] = [p];
        break;
      }
    }
  }
  return out;
}

/** A route preHandler (after authentication, as DRF checks permissions before it reads the data). */
export async function inputGuard(req: FastifyRequest): Promise<void> {
  const q = queryErrors(req.query);
  if (q) throw new HttpError(400, q);
  if (req.body === undefined || typeof req.body !== 'object' || req.body === null) {
    if (typeof req.body === 'string') {
      const p = stringProblem(req.body);
      if (p) throw new HttpError(400, { non_field_errors: [p] });
    }
    return;
  }
  const b = bodyErrors(req.body);
  if (b) throw new HttpError(400, b);
}
