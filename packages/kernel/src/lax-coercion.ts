import type { FastifyRequest, RouteOptions } from 'fastify';

/** pydantic v2 lax booleans (case-insensitive). */
const TRUE = new Set(['1', 't', 'true', 'y', 'yes', 'on']);
const FALSE = new Set(['0', 'f', 'false', 'n', 'no', 'off']);

/** pydantic accepts hyphenated, 32-hex "simple", `urn:uuid:` and braced UUIDs; we store the canonical form. */
/** pydantic's lax boolean for a JSON value (true/false, 0/1, "yes"/"off"/…), or undefined when it is not one. */
export function parseLaxBoolean(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (v === 0 || v === 1) return v === 1;
  if (typeof v !== 'string') return undefined;
  const l = v.toLowerCase();
  return TRUE.has(l) ? true : FALSE.has(l) ? false : undefined;
}

const CANONICAL = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function canonicalUuid(value: string): string | undefined {
  if (CANONICAL.test(value)) return value;
  let v = value.trim();
  if (/^urn:uuid:/i.test(v)) v = v.slice(9);
  if (v.startsWith('{') && v.endsWith('}')) v = v.slice(1, -1);
  const hex = v.replace(/-/g, '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) return undefined;
  if (v.includes('-') && !/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(v)) return undefined;
  const h = hex.toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

type Kind = 'boolean' | 'uuid' | 'integer';

function kindOf(schema: any): Kind | undefined {
  if (!schema || typeof schema !== 'object') return undefined;
  if (schema.type === 'boolean' || (Array.isArray(schema.type) && schema.type.includes('boolean'))) return 'boolean';
  if (schema.format === 'uuid') return 'uuid';
  if (schema.type === 'integer') return 'integer';
  for (const alt of schema.anyOf ?? schema.oneOf ?? []) {
    const k = kindOf(alt);
    if (k) return k;
  }
  return undefined;
}

function fieldsOf(schema: any): Array<[string, Kind]> {
  const props = schema?.properties ?? {};
  const out: Array<[string, Kind]> = [];
  for (const [name, s] of Object.entries(props)) {
    const k = kindOf(s);
    if (k) out.push([name, k]);
  }
  return out;
}

/**
 * `json` (bodies): lax booleans become real booleans, including the numbers
 * 0 and 1, so bodies validate even without Ajv type coercion. Elsewhere they
 * become the strings Ajv's coercion understands.
 */
function normalise(target: Record<string, unknown> | undefined, fields: Array<[string, Kind]>, json = false): void {
  if (!target || typeof target !== 'object') return;
  for (const [name, kind] of fields) {
    const v = target[name];
    if (json && kind === 'boolean' && (v === 0 || v === 1)) {
      target[name] = v === 1;
      continue;
    }
    if (typeof v !== 'string') continue;
    if (!json && v === '' && kind !== 'integer') {
      // FastAPI validates `?flag=` as the empty string (an error for bool/UUID); Ajv would coerce it to null.
      target[name] = 'invalid-empty-value';
      continue;
    }
    if (kind === 'integer') {
      // pydantic parses only decimal digits; Ajv would also take "1e3", "0x10" or "1e309" (Infinity).
      if (!json && !/^\s*[+-]?\d+\s*$/.test(v)) target[name] = 'NaN';
      continue;
    }
    if (kind === 'boolean') {
      const l = v.toLowerCase();
      if (TRUE.has(l)) target[name] = json ? true : 'true';
      else if (FALSE.has(l)) target[name] = json ? false : 'false';
    } else {
      const c = canonicalUuid(v);
      if (c) target[name] = c;
    }
  }
}

/**
 * Adds a preValidation hook to routes whose path, query or top-level body
 * fields are booleans or UUIDs, rewriting pydantic's lax spellings into the
 * forms Ajv accepts. Runs before validation, so the schema stays the single
 * source of truth for what is valid.
 */
export function addLaxCoercion(route: RouteOptions): void {
  const schema: any = route.schema;
  if (!schema) return;
  const q = fieldsOf(schema.querystring);
  const p = fieldsOf(schema.params);
  const b = fieldsOf(schema.body);
  if (!q.length && !p.length && !b.length) return;
  const hook = async (req: FastifyRequest) => {
    if (q.length) normalise(req.query as any, q);
    if (p.length) normalise(req.params as any, p);
    if (b.length && !Array.isArray(req.body)) normalise(req.body as any, b, true);
  };
  const existing = route.preValidation;
  route.preValidation = existing ? [hook, ...(Array.isArray(existing) ? existing : [existing])] : [hook];
}
