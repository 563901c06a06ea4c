import { createHmac, timingSafeEqual } from 'node:crypto';
import { detailError } from '@svc/kernel';
import { parseIsoTime, validation } from './util.ts';

/**
 * The v3 API's scoped keys: HS256 JSON Web Tokens with the reference's claims
 * (Honcho's `JWTParams`, names kept short as the reference keeps them):
 * `t` creation time, `exp` expiry (ISO 8601 string, as the reference writes
 * it; a numeric NumericDate is read too), `ad` admin, `w` workspace, `p`
 * peer, `s` session. Claims are written in that order with compact JSON and a
 * `{"alg":"HS256","typ":"JWT"}` header, so a key minted here for the same
 * claims and secret is the string the reference mints, and keys minted by
 * the reference (its `scripts/generate_jwt.py`) work here.
 */
export interface KeyClaims {
  t: string;
  exp?: string | number;
  ad?: boolean;
  w?: string;
  p?: string;
  s?: string;
}

/** Why a bearer token was refused: the reference's 401 texts. */
export class KeyError extends Error {}

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');
const HEADER = b64url('{"alg":"HS256","typ":"JWT"}');
const MAX_TOKEN = 8192;

/** Python's `datetime.isoformat()` of a UTC time with a `Z`: microseconds only when non-zero. */
export function isoZ(d: Date): string {
  const s = d.toISOString();
  return s.endsWith('.000Z') ? `${s.slice(0, -5)}Z` : `${s.slice(0, -1)}000Z`;
}

export function signKey(claims: KeyClaims, secret: string): string {
  const ordered: Record<string, unknown> = {};
  for (const k of ['t', 'exp', 'ad', 'w', 'p', 's'] as const) if (claims[k] !== undefined && claims[k] !== null) ordered[k] = claims[k];
  const body = `${HEADER}.${b64url(JSON.stringify(ordered))}`;
  return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
}

/** The admin key of a secret: `{"t":"","ad":true}`, as the reference's `create_admin_jwt()`. */
export function adminKey(secret: string): string {
  return signKey({ t: '', ad: true }, secret);
}

function parseJson(part: string): any {
  if (!/^[A-Za-z0-9_-]*$/.test(part)) throw new KeyError('Invalid JWT');
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    throw new KeyError('Invalid JWT');
  }
}

const optString = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * Verifies a token's signature (HS256 only) and reads its claims; throws
 * KeyError with the reference's texts: `Invalid JWT` (malformed, wrong
 * algorithm or signature, claims of the wrong type), `JWT expired`, and
 * `Invalid JWT scope: peer/session token missing workspace`. Empty scope
 * claims count as absent, as the reference normalises them.
 */
export function verifyKey(token: string, secret: string): KeyClaims {
  if (token.length > MAX_TOKEN) throw new KeyError('Invalid JWT');
  const parts = token.split('.');
  if (parts.length !== 3) throw new KeyError('Invalid JWT');
  const header = parseJson(parts[0]!);
  if (!header || typeof header !== 'object' || header.alg !== 'HS256') throw new KeyError('Invalid JWT');
  if (!/^[A-Za-z0-9_-]+$/.test(parts[2]!)) throw new KeyError('Invalid JWT');
  const want = createHmac('sha256', secret).update(`${parts[0]}.${parts[1]}`).digest();
  const got = Buffer.from(parts[2]!, 'base64url');
  if (got.length !== want.length || !timingSafeEqual(got, want)) throw new KeyError('Invalid JWT');
  const c = parseJson(parts[1]!);
  if (!c || typeof c !== 'object' || Array.isArray(c)) throw new KeyError('Invalid JWT');
  for (const k of ['w', 'p', 's']) if (c[k] !== undefined && c[k] !== null && typeof c[k] !== 'string') throw new KeyError('Invalid JWT');
  const claims: KeyClaims = { t: typeof c.t === 'string' ? c.t : '' };
  if (c.exp !== undefined && c.exp !== null && c.exp !== '') {
    let at: number;
    if (typeof c.exp === 'number') at = c.exp * 1000;
    else if (typeof c.exp === 'string') at = parseIsoTime(c.exp)?.getTime() ?? NaN;
    else throw new KeyError('Invalid JWT');
    if (!Number.isFinite(at)) throw new KeyError('Invalid JWT');
    if (at < Date.now()) throw new KeyError('JWT expired');
    claims.exp = c.exp;
  }
  if (c.ad === true) claims.ad = true;
  const w = optString(c.w);
  const p = optString(c.p);
  const s = optString(c.s);
  if (w) claims.w = w;
  if (p) claims.p = p;
  if (s) claims.s = s;
  if ((p || s) && !w) throw new KeyError('Invalid JWT scope: peer/session token missing workspace');
  return claims;
}

/** The query of `POST /v3/keys`. */
export interface KeyRequest {
  workspace_id?: string | null;
  peer_id?: string | null;
  session_id?: string | null;
  expires_at?: string | null;
}

/**
 * `POST /v3/keys` (admin only): a key scoped to a workspace, a peer or a
 * session of it, optionally expiring; the reference's checks and texts (405
 * when auth is off, 422 without a scope or with a peer/session but no
 * workspace).
 */
export function mintKey(secret: string | undefined, q: KeyRequest): { key: string } {
  let exp: string | undefined;
  if (q.expires_at != null) {
    const at = parseIsoTime(q.expires_at);
    if (!at) {
      throw detailError(422, [{ type: 'datetime_from_date_parsing', loc: ['query', 'expires_at'], msg: 'Input should be a valid datetime or date, invalid character in year', input: q.expires_at }]);
    }
    exp = isoZ(at);
  }
  if (!secret) throw detailError(405, 'Feature is disabled');
  if (!q.workspace_id && !q.peer_id && !q.session_id) throw validation('At least one of workspace_id, peer_id, or session_id must be provided');
  if ((q.peer_id || q.session_id) && !q.workspace_id) throw validation('workspace_id is required when scoping a key to a peer or session');
  const claims: KeyClaims = { t: new Date().toISOString(), exp, w: q.workspace_id || undefined, p: q.peer_id || undefined, s: q.session_id || undefined };
  return { key: signKey(claims, secret) };
}
