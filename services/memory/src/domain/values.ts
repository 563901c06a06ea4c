import { randomUUID } from 'node:crypto';

export type Meta = Record<string, unknown>;

export const newId = (): string => randomUUID();

let lastSeq = 0;
/**
 * Insertion sequence for tie-breaking equal created_at values. Derived from
 * the clock (microsecond scale) and strictly increasing in this process, so
 * rows keep creation order even across restarts and processes sharing a DB.
 */
export function nextSeq(): number {
  const t = Date.now() * 1000;
  lastSeq = t > lastSeq ? t : lastSeq + 1;
  return lastSeq;
}

/** A JSON column value as a JS object (SQLite returns text, PostgreSQL parsed jsonb). */
export function readJson(v: unknown): Meta {
  if (typeof v === 'string') return JSON.parse(v) as Meta;
  return (v ?? {}) as Meta;
}

export function readBool(v: unknown): boolean {
  return v === true || v === 1 || v === '1' || v === 't';
}

/**
 * pydantic v2's datetime format for the reference's microsecond timestamps:
 * six fractional digits, none at all when the fraction is zero, and `Z`.
 * Our clock has millisecond precision, so the last three digits are zeros.
 */
export function formatTimestamp(v: unknown): string {
  let iso: string;
  if (v instanceof Date) iso = v.toISOString();
  else if (typeof v === 'string' && v.length === 24 && v.endsWith('Z')) iso = v;
  else {
    const s = String(v);
    const d = new Date(s.includes('T') || s.endsWith('Z') ? s : s.replace(' ', 'T') + 'Z');
    iso = Number.isNaN(d.getTime()) ? s : d.toISOString();
  }
  if (iso.length !== 24) return iso;
  const ms = iso.slice(20, 23);
  return ms === '000' ? iso.slice(0, 19) + 'Z' : `${iso.slice(0, 19)}.${ms}000Z`;
}

/** Driver errors for unique-key violations (SQLite and PostgreSQL). */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Driver errors for foreign-key violations (SQLite and PostgreSQL). */
export function isForeignKeyViolation(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

const SUSPECT = /[\u0000\uD800-\uDFFF]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Why PostgreSQL text/jsonb cannot hold this string (NUL, or an unpaired
 * surrogate), or undefined when it can. Such text is refused on every
 * storage alike, so no stored value contains it.
 */
export function unstorableText(s: string): 'nul' | 'surrogate' | undefined {
  if (!SUSPECT.test(s)) return undefined;
  if (s.includes('\u0000')) return 'nul';
  if (LONE_SURROGATE.test(s)) return 'surrogate';
  return undefined;
}

/** The first key or string value in a JSON value that unstorableText refuses. */
export function findUnstorableText(v: unknown): { text: string; why: 'nul' | 'surrogate' } | undefined {
  if (typeof v === 'string') {
    const why = unstorableText(v);
    return why ? { text: v, why } : undefined;
  }
  if (v === null || typeof v !== 'object') return undefined;
  if (Array.isArray(v)) {
    for (const x of v) {
      const f = findUnstorableText(x);
      if (f) return f;
    }
    return undefined;
  }
  for (const [k, x] of Object.entries(v)) {
    const f = findUnstorableText(k) ?? findUnstorableText(x);
    if (f) return f;
  }
  return undefined;
}
