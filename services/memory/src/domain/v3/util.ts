import { randomFillSync } from 'node:crypto';
import { detailError, HttpError } from '@svc/kernel';
import type { SqlDialect } from '@svc/storage';
import { formatTimestamp, readJson, type Meta } from '../values.ts';

/** The reference's resource name rule (workspace, peer and session ids). */
export const NAME_PATTERN = '^[a-zA-Z0-9_-]+$';
const NAME_RE = /^[a-zA-Z0-9_-]+$/;
export const NAME_MAX_LENGTH = 512;

// The reference's HonchoException family: `{"detail": "<text>"}` with these statuses.
export const notFound = (detail: string): HttpError => detailError(404, detail);
export const validation = (detail: string): HttpError => detailError(422, detail);
export const conflict = (detail: string): HttpError => detailError(409, detail);
export const badRequest = (detail: string): HttpError => detailError(400, detail);

/**
 * A name a resource may be created under. Implicit creation (a message from a
 * new peer, a PUT on a missing session) checks here what the create bodies'
 * schemas check, so an impossible name is a 422, never a stored oddity.
 */
export function checkNewName(kind: 'Workspace' | 'Peer' | 'Session', names: string[]): void {
  const long = names.filter((n) => n.length > NAME_MAX_LENGTH);
  if (long.length) throw validation(`${kind} name(s) ${pyList(long)} must be at most ${NAME_MAX_LENGTH} characters`);
  const bad = names.filter((n) => !NAME_RE.test(n));
  if (bad.length) throw validation(`${kind} name(s) ${pyList(bad)} must match pattern ${NAME_PATTERN}`);
}

/** Scopes (SDK 2.5) are not served: a `scope`/`scopes` option is a clear 422, never silently ignored. */
export function refuseScope(v: unknown, field = 'scope'): void {
  if (v !== undefined && v !== null) throw validation(`${field} is not supported by this server (scopes are not implemented)`);
}

/** Python's repr of a list of strings, as the reference's messages print them. */
export function pyList(items: string[]): string {
  return `[${items.map((s) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`).join(', ')}]`;
}

const ALPHABET = 'useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict';

/** A 21-character URL-safe id (nanoid's alphabet and length, as the reference's public ids). */
export function nanoid(): string {
  // Random bytes come from a pooled buffer: one getrandom call per 195 ids instead of one each.
  if (poolAt + 21 > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  let id = '';
  for (let i = poolAt, end = poolAt + 21; i < end; i++) id += ALPHABET[POOL[i]! & 63];
  poolAt += 21;
  return id;
}
const POOL = Buffer.alloc(21 * 195);
let poolAt = POOL.length;

/**
 * Token estimate for `token_count` and context budgets. The reference counts
 * with tiktoken's o200k_base; without its 200k-entry vocabulary this
 * approximates it from word and punctuation pieces (English prose lands within
 * a few percent; long unbroken strings count one token per 4 characters).
 */
export function estimateTokens(text: string): number {
  if (!text) return 0;
  let n = 0;
  const re = /[A-Za-z]+|\d{1,3}|[^\sA-Za-z\d]|\s+/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    const piece = m[0];
    const c = piece.charCodeAt(0);
    if (c <= 32) continue; // whitespace joins the following word's token
    if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122)) n += piece.length <= 8 ? 1 : Math.ceil(piece.length / 5);
    else if (c > 127) n += Math.max(1, Math.ceil(piece.length / 2));
    else n += 1;
  }
  return n;
}

export const json = (d: SqlDialect, v: unknown) => d.json(v);
export const meta = (v: unknown): Meta => readJson(v);
export const ts = (v: unknown): string => formatTimestamp(v);

/** A `created_at` the client gave, as a Date, or a 422 naming it. */
export function parseClientTime(v: string, loc: string): Date {
  const d = parseIsoTime(v);
  if (!d) throw validation(`Invalid datetime value for ${loc}: ${v}`);
  return d;
}

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|z|[+-]\d{2}:?\d{2})?)?$/;

/** ISO 8601 date or date-time; a time without an offset is UTC (as the reference stores it). */
export function parseIsoTime(v: string): Date | undefined {
  const m = ISO_RE.exec(v.trim());
  if (!m) return undefined;
  const [, y, mo, da, h, mi, s, frac, off] = m;
  let iso = `${y}-${mo}-${da}T${h ?? '00'}:${mi ?? '00'}:${s ?? '00'}${frac ? frac.slice(0, 4).padEnd(4, '0') : '.000'}`;
  iso += !off || off === 'z' ? 'Z' : off.length === 5 ? `${off.slice(0, 3)}:${off.slice(3)}` : off;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return undefined;
  // Date rolls 2024-02-31 over into March; the reference refuses it.
  if (!off || off === 'Z' || off === 'z') {
    if (d.getUTCDate() !== Number(da) || d.getUTCMonth() + 1 !== Number(mo)) return undefined;
  }
  const year = d.getUTCFullYear();
  if (year < 1 || year > 9999) return undefined;
  return d;
}
