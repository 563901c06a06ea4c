/** jose is loaded by the hosted runtime only (the local runtime never signs or verifies a token). */
const jose = () => import('jose');
import { JWT_ALG, type SigningKeys } from './keys.ts';
import { newId } from './secrets.ts';

/** Audience of every access token: this service's API. */
export const AUDIENCE = 'workflow-api';

export interface AccessClaims {
  /** User id. */
  sub: string;
  /** The workspace the token acts in. */
  wid: string;
  /** Token family (login or OAuth grant): revoking it kills every token of it. */
  fid: string;
  scope: string;
  /** OAuth client id; absent for first-party logins. */
  cid?: string;
  exp: number;
}

const CACHE_MAX = 10_000;

/**
 * Signs and verifies access JWTs (RS256 only: `alg: none`, HS256 made with
 * the public key, or any other algorithm is refused before a key is even
 * looked up). A verified token is remembered (bounded) so that a client
 * calling many times pays the signature check once; expiry and revocation
 * are still checked on every request by the caller.
 */
export class AccessTokens {
  private readonly verified = new Map<string, AccessClaims>();

  constructor(
    private readonly keys: SigningKeys,
    readonly issuer: string,
    readonly ttlSeconds: number,
  ) {}

  async mint(c: Omit<AccessClaims, 'exp'>): Promise<{ token: string; expiresIn: number; exp: number }> {
    const { kid, key } = await this.keys.current();
    const now = Math.floor(Date.now() / 1000);
    const exp = now + this.ttlSeconds;
    const claims: Record<string, unknown> = { wid: c.wid, fid: c.fid, scope: c.scope };
    if (c.cid) claims.client_id = c.cid;
    const { SignJWT } = await jose();
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: JWT_ALG, kid, typ: 'at+jwt' })
      .setIssuer(this.issuer)
      .setAudience(AUDIENCE)
      .setSubject(c.sub)
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .setJti(newId())
      .sign(key);
    return { token, expiresIn: this.ttlSeconds, exp };
  }

  /** The claims of a valid, unexpired token of ours, or null. */
  async verify(token: string): Promise<AccessClaims | null> {
    const now = Date.now() / 1000;
    const hit = this.verified.get(token);
    if (hit) return hit.exp > now ? hit : null;
    if (token.length > 8192) return null;
    const { decodeProtectedHeader, jwtVerify } = await jose();
    let header;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      return null;
    }
    if (header.alg !== JWT_ALG) return null;
    const key = await this.keys.verifyKey(header.kid);
    if (!key) return null;
    try {
      const { payload } = await jwtVerify(token, key, { algorithms: [JWT_ALG], issuer: this.issuer, audience: AUDIENCE, typ: 'at+jwt', requiredClaims: ['sub', 'exp', 'iat', 'jti'] });
      const p = payload as Record<string, unknown>;
      if (typeof p.sub !== 'string' || typeof p.wid !== 'string' || typeof p.fid !== 'string' || typeof p.scope !== 'string' || typeof p.exp !== 'number') return null;
      const claims: AccessClaims = { sub: p.sub, wid: p.wid, fid: p.fid, scope: p.scope, exp: p.exp, cid: typeof p.client_id === 'string' ? p.client_id : undefined };
      if (this.verified.size >= CACHE_MAX) this.verified.clear();
      this.verified.set(token, claims);
      return claims;
    } catch {
      return null;
    }
  }
}
