import { RE2JS } from 're2js';

/**
 * NetBox's `__regex` / `__iregex` filter lookups (Django's regex lookups) on a linear-time engine. A pattern is
 * compiled with RE2 first: what RE2 cannot run in linear time (backreferences, lookarounds) is a 400, never a
 * slow query. SQLite matches with RE2 itself (a function registered on each connection); PostgreSQL with its
 * own `~` / `~*` on a pattern RE2 accepted (its engine has no backtracking blow-up without backreferences).
 */

const MAX_PATTERN = 500;
/** Compiled patterns, a few hundred kept (filters repeat). */
const cache = new Map<string, RE2JS | Error>();

export function compileLookup(pattern: string, insensitive: boolean): RE2JS | Error {
  const k = `${insensitive ? 'i' : 's'}:${pattern}`;
  let re = cache.get(k);
  if (re) return re;
  if (pattern.length > MAX_PATTERN) re = new Error(`Ensure this value has at most ${MAX_PATTERN} characters.`);
  else {
    try {
      re = RE2JS.compile(pattern, insensitive ? RE2JS.CASE_INSENSITIVE : 0);
    } catch (err) {
      re = new Error(`Invalid regular expression: ${String((err as Error).message ?? err).replace(/^error parsing regexp: /, '')}`);
    }
  }
  if (cache.size >= 500) cache.delete(cache.keys().next().value!);
  cache.set(k, re);
  return re;
}

/** Longest text matched on SQLite: longer column values do not match (bounds each call's work). */
const MAX_TEXT = 100_000;

/** `inventory_regexp(pattern, flags, text)`: 1 when RE2 finds the pattern in the text (Django's search semantics). */
export function sqliteRegexp(pattern: unknown, flags: unknown, text: unknown): number {
  if (typeof pattern !== 'string' || text === null || text === undefined) return 0;
  const re = compileLookup(pattern, flags === 'i');
  if (re instanceof Error) return 0;
  const s = String(text);
  if (s.length > MAX_TEXT) return 0;
  return re.matcher(s).find() ? 1 : 0;
}
