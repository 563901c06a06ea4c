import type { FastifyReply, FastifyRequest } from 'fastify';
import { authOf, may, mayWrite, type Principal } from '../auth/index.ts';
import { actionOf } from '../auth/permissions.ts';
import { forbidden, notFound, NOT_AUTHENTICATED } from './errors.ts';

// The routes' preHandlers: who may call what, refused with DRF's error bodies. They live with the API, not in
// auth/, which knows callers and their permissions but no HTTP answer (and so stands below api/).

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
