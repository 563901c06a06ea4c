import type { FastifyRequest } from 'fastify';
import type { Storage } from '@svc/storage';
import type { Principal } from './principal.ts';
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

/** The Auth that app.ts installed on the request's Fastify instance. */
export function authOf(req: FastifyRequest): Auth {
  const a = (req.server as unknown as { inventoryAuth?: Auth }).inventoryAuth;
  if (!a) throw new Error('inventory auth is not installed on this Fastify instance');
  return a;
}

/** The caller of this request, through the app's installed Auth. */
export async function authenticate(req: FastifyRequest): Promise<Principal | null> {
  return (await authOf(req).resolve(req)).principal;
}
