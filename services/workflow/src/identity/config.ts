import { parsePublicUrls } from './origins.ts';
import { parseRateLimits, type RateLimits } from './rate-limit.ts';

export interface IdentityConfig {
  /** Rate-limit windows in the database, shared by every API process (PostgreSQL); else in memory. */
  sharedRateLimits?: boolean;
  /** The externally visible base URL (issuer, metadata): the first of `publicUrls`. */
  publicUrl?: string;
  /** Every origin the service is reached at (`--public-url a,b`); without any, the address a connection came in on. */
  publicUrls: string[];
  accessTtlSec: number;
  refreshTtlMs: number;
  sessionTtlMs: number;
  codeTtlMs: number;
  requestTtlMs: number;
  inviteTtlMs: number;
  keyRotateMs: number;
  /** How long an authentication fact (membership, revocation, API key) may be served from memory. */
  cacheTtlMs: number;
  rateLimits: RateLimits;
  signup: boolean;
  /** Hosts web (https) OAuth clients may redirect to. */
  oauthWebHosts: string[];
  /** Where GET /oauth/authorize sends a browser that has no session (with ?oauth_request_id=). */
  loginUrl: string;
  hashConcurrency: number;
  hashQueue: number;
}

type Flags = Record<string, string | boolean | undefined>;

function num(v: string | boolean | undefined, name: string, fallback: number): number {
  if (typeof v !== 'string') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got ${v}`);
  return n;
}

/** Flags (and env) of the hosted runtime's identity; every duration has a safe default. */
export function identityConfig(f: Flags, env: NodeJS.ProcessEnv = process.env): IdentityConfig {
  const s = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return {
    publicUrl: parsePublicUrls(s(f.publicUrl) ?? env.WORKFLOW_PUBLIC_URL)[0],
    publicUrls: parsePublicUrls(s(f.publicUrl) ?? env.WORKFLOW_PUBLIC_URL),
    accessTtlSec: Math.floor(num(f.accessTokenTtl ?? env.WORKFLOW_ACCESS_TOKEN_TTL, 'access-token-ttl', 900)),
    refreshTtlMs: num(f.refreshTokenTtl, 'refresh-token-ttl', 30 * 86400) * 1000,
    sessionTtlMs: num(f.sessionTtl, 'session-ttl', 7 * 86400) * 1000,
    codeTtlMs: num(f.authCodeTtl, 'auth-code-ttl', 60) * 1000,
    requestTtlMs: 10 * 60_000,
    inviteTtlMs: 7 * 86400_000,
    keyRotateMs: num(f.signingKeyRotation ?? env.WORKFLOW_SIGNING_KEY_ROTATION, 'signing-key-rotation', 86400) * 1000,
    cacheTtlMs: num(f.authCacheTtlMs, 'auth-cache-ttl-ms', 5000),
    rateLimits: parseRateLimits(s(f.authRateLimits) ?? env.WORKFLOW_AUTH_RATE_LIMITS),
    signup: f.disableSignup !== true && env.WORKFLOW_DISABLE_SIGNUP !== '1',
    oauthWebHosts: (s(f.oauthWebHosts) ?? env.WORKFLOW_OAUTH_WEB_HOSTS ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
    loginUrl: s(f.oauthLoginUrl) ?? env.WORKFLOW_OAUTH_LOGIN_URL ?? '/login',
    hashConcurrency: Math.floor(num(f.passwordHashConcurrency, 'password-hash-concurrency', 2)),
    hashQueue: Math.floor(num(f.passwordHashQueue, 'password-hash-queue', 4)),
  };
}
