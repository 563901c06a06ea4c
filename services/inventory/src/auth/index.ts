import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Storage } from '@svc/storage';
import { forbidden, notFound, NOT_AUTHENTICATED } from '../api/errors.ts';
import { may, mayWrite, type Principal } from './principal.ts';
import { actionOf } from './permissions.ts';
import { principalForKey } from './store.ts';
import { LoginThrottle, type LoginThrottleSettings } from './throttle.ts';

export type { Principal } from './principal.ts';
export { may, mayWrite } from './principal.ts';

export interface Auth {
  /** The caller of this request (cached per request); null when no or a bad token was sent. */
  authenticate(req: FastifyRequest): Promise<Principal | null>;
  /** Resolves a raw key (the UI's login form). */
  verifyToken(key: string): Promise<Principal | null>;
  /** The principal plus why presented credentials were refused, to tell "none" from "bad". */
  resolve(req: FastifyRequest): Promise<Resolved>;
  /** Budget of unauthenticated credential checks per client address and username. */
  throttle: LoginThrottle;
  /** NetBox's LOGIN_REQUIRED: false lets callers without credentials read the API roots and the status. */
  loginRequired: boolean;
}

export interface Resolved {
  principal: Principal | null;
  /** Why the presented credentials were refused (none presented: undefined). */
  reason?: string;
}

const cache = new WeakMap<FastifyRequest, Promise<Resolved>>();

/** `Authorization: Token <key>` or `Bearer <key>`. */
export function presentedKey(req: FastifyRequest): string | undefined {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return undefined;
  // Another scheme (Basic, …) is "no credentials" for DRF's TokenAuthentication; a bare or split keyword is a bad header.
  if (!/^(?:Token|Bearer)(\s|$)/i.test(h)) return undefined;
  const m = /^(?:Token|Bearer)\s+(\S+)\s*$/i.exec(h);
  return m ? m[1] : '';
}

export function createAuth(storage: Storage, throttle?: LoginThrottleSettings, opts: { loginRequired?: boolean } = {}): Auth {
  const resolve = (req: FastifyRequest): Promise<Resolved> => {
    let p = cache.get(req);
    if (!p) {
      const key = presentedKey(req);
      p = key === undefined ? Promise.resolve({ principal: null }) : key === '' ? Promise.resolve({ principal: null, reason: 'Invalid token header. No credentials provided.' }) : principalForKey(storage, key.slice(0, 512));
      cache.set(req, p);
    }
    return p;
  };
  return {
    resolve,
    throttle: new LoginThrottle(throttle),
    loginRequired: opts.loginRequired ?? true,
    async authenticate(req) {
      return (await resolve(req)).principal;
    },
    async verifyToken(key) {
      if (!key || key.length > 512) return null;
      return (await principalForKey(storage, key)).principal;
    },
  };
}

function authOf(req: FastifyRequest): Auth {
  const a = (req.server as unknown as { inventoryAuth?: Auth }).inventoryAuth;
  if (!a) throw new Error('inventory auth is not installed on this Fastify instance');
  return a;
}

/** The caller of this request, through the app's installed Auth. */
export async function authenticate(req: FastifyRequest): Promise<Principal | null> {
  return (await authOf(req).resolve(req)).principal;
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

async function requirePrincipal(req: FastifyRequest): Promise<Principal> {
  const r = await authOf(req).resolve(req);
  // NetBox answers 403 (not 401) for missing and bad tokens: SessionAuthentication comes first in DRF's list.
  if (!r.principal) throw forbidden(r.reason ?? NOT_AUTHENTICATED);
  return r.principal;
}

/** Any authenticated caller. */
export async function requireRead(req: FastifyRequest, _reply?: FastifyReply): Promise<void> {
  await requirePrincipal(req);
}

/**
 * NetBox's IsAuthenticatedOrLoginNotRequired (the API roots, `/api/status/`): any authenticated caller, or with
 * LOGIN_REQUIRED false also a caller who presents no credentials (a bad token is still refused).
 */
export async function requireReadOrLoginNotRequired(req: FastifyRequest, _reply?: FastifyReply): Promise<void> {
  const auth = authOf(req);
  const r = await auth.resolve(req);
  if (r.principal || (!auth.loginRequired && r.reason === undefined)) return;
  throw forbidden(r.reason ?? NOT_AUTHENTICATED);
}

/** Authenticated; for unsafe methods also a write-enabled token of a user who may write. */
export async function requireWrite(req: FastifyRequest, _reply?: FastifyReply): Promise<void> {
  const p = await requirePrincipal(req);
  if (!SAFE.has(req.method) && !mayWrite(p)) throw forbidden();
}

/** Superusers only; for unsafe methods the token must also be write-enabled. */
export async function requireAdmin(req: FastifyRequest, _reply?: FastifyReply): Promise<void> {
  const p = await requirePrincipal(req);
  if (!p.isSuperuser) throw forbidden();
  if (!SAFE.has(req.method) && !p.writeEnabled) throw forbidden();
}

/**
 * NetBox's TokenPermissions for one object type: the request's method names the action (GET/HEAD view, POST add,
 * PUT/PATCH change, DELETE delete; `action` overrides it), which the caller's user must hold; unsafe methods also need a
 * write-enabled token. Refused: 403 "You do not have permission to perform this action." as DRF answers.
 */
export function requirePermission(objectType: string, action?: string) {
  return async function permissionCheck(req: FastifyRequest, _reply?: FastifyReply): Promise<void> {
    const p = await requirePrincipal(req);
    if (!SAFE.has(req.method) && !p.writeEnabled) throw forbidden();
    if (req.method === 'OPTIONS') return;
    if (!may(p, objectType, action ?? actionOf(req.method))) throw forbidden();
  };
}

/**
 * NetBox's `Model.objects.restrict(user, 'view')` on a parent object (a prefix's available IPs, a rack's elevation):
 * a caller who may not view `objectType` finds no such object (404).
 */
export function requireViewOr404(objectType: string) {
  return async function parentViewCheck(req: FastifyRequest, _reply?: FastifyReply): Promise<void> {
    const p = await requirePrincipal(req);
    if (!may(p, objectType, 'view')) throw notFound();
  };
}
