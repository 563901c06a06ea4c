import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { HttpError } from '@svc/kernel';
import type { Ctx } from '../domain/context.ts';
import { isActiveMember, activeSessionsOf } from '../domain/v3/sessions.ts';
import { OPEN } from './auth.ts';
import { KeyError, verifyKey, type KeyClaims } from '../domain/v3/keys.ts';

/**
 * Scoped keys on the v3 API (the reference's `AUTH_USE_AUTH` / `AUTH_JWT_SECRET`
 * and `require_auth`). With auth on, every v3 route needs `Authorization:
 * Bearer <key>`, where the key is a JWT signed with the secret (admin, or
 * scoped to a workspace, a peer or a session of a workspace) or one of the
 * service's `--api-keys` (which act as admin keys). A key is authorised by its
 * narrowest scope: a peer key reaches its own peer's routes (and reads of
 * sessions its peer is an active member of), a session key its own session's
 * routes, a workspace key everything in its workspace, and only admin keys
 * reach `POST /v3/workspaces/list` and `POST /v3/keys`. Refusals are the
 * reference's 401 `{"detail": …}` bodies. The seed's routes, with auth on,
 * take an admin JWT or an API key.
 */
export interface V3AuthConfig {
  secret: string;
  apiKeys?: string[];
}

/** What a route needs (the reference's `require_auth` arguments per route). */
export type RoutePolicy =
  | { admin: true }
  /** Verifies the key only; the handler compares it with ids in the body (`POST …/workspaces|peers|sessions`). */
  | { self: true }
  | { workspace: true; peer?: boolean; session?: boolean; memberRead?: boolean };

const Wk = { workspace: true } as const;
const Pe = { workspace: true, peer: true } as const;
const Se = { workspace: true, session: true } as const;
const SeRead = { workspace: true, session: true, memberRead: true } as const;

const W = '/v3/workspaces/:workspace_id';
const P = `${W}/peers/:peer_id`;
const S = `${W}/sessions/:session_id`;

/** Every v3 operation's policy, keyed `METHOD url-pattern`; a route missing here is refused to every non-admin key. */
export const V3_POLICIES: Record<string, RoutePolicy> = {
  'POST /v3/keys': { admin: true },
  'POST /v3/workspaces': { self: true },
  'POST /v3/workspaces/list': { admin: true },
  [`PUT ${W}`]: Wk,
  [`DELETE ${W}`]: Wk,
  [`POST ${W}/search`]: Wk,
  [`POST ${W}/chat`]: Wk,
  [`GET ${W}/queue/status`]: Wk,
  [`POST ${W}/schedule_dream`]: Wk,
  [`POST ${W}/peers/list`]: Wk,
  [`POST ${W}/peers`]: { self: true },
  [`PUT ${P}`]: Pe,
  [`POST ${P}/sessions`]: Pe,
  [`POST ${P}/chat`]: Pe,
  [`POST ${P}/representation`]: Pe,
  [`GET ${P}/card`]: Pe,
  [`PUT ${P}/card`]: Pe,
  [`GET ${P}/context`]: Pe,
  [`POST ${P}/search`]: Pe,
  [`POST ${W}/sessions/list`]: Wk,
  [`POST ${W}/sessions`]: { self: true },
  [`PUT ${S}`]: Se,
  [`DELETE ${S}`]: Se,
  [`POST ${S}/clone`]: Se,
  [`POST ${S}/peers`]: Se,
  [`PUT ${S}/peers`]: Se,
  [`DELETE ${S}/peers`]: Se,
  [`GET ${S}/peers`]: SeRead,
  [`GET ${S}/peers/:peer_id/config`]: SeRead,
  [`PUT ${S}/peers/:peer_id/config`]: Se,
  [`GET ${S}/context`]: SeRead,
  [`GET ${S}/summaries`]: SeRead,
  [`POST ${S}/search`]: SeRead,
  [`POST ${S}/messages`]: Se,
  [`POST ${S}/messages/upload`]: Se,
  [`POST ${S}/messages/list`]: SeRead,
  [`GET ${S}/messages/:message_id`]: SeRead,
  [`PUT ${S}/messages/:message_id`]: Se,
  [`POST ${W}/conclusions`]: Wk,
  [`POST ${W}/conclusions/list`]: Wk,
  [`POST ${W}/conclusions/query`]: Wk,
  [`GET ${W}/conclusions/:conclusion_id`]: Wk,
  [`DELETE ${W}/conclusions/:conclusion_id`]: Wk,
  // Scopes: an app-level admin surface, workspace and admin keys only (the reference's scopes router).
  [`POST ${W}/scopes`]: Wk,
  [`POST ${W}/scopes/list`]: Wk,
  [`GET ${W}/scopes/:scope_id`]: Wk,
  [`POST ${W}/scopes/:scope_id/sessions`]: Wk,
  [`DELETE ${W}/scopes/:scope_id/sessions/:session_id`]: Wk,
  [`POST ${W}/scopes/:scope_id/sessions/list`]: Wk,
  [`GET ${W}/scopes/:scope_id/status`]: Wk,
  [`POST ${W}/webhooks`]: Wk,
  [`GET ${W}/webhooks`]: Wk,
  [`DELETE ${W}/webhooks/:endpoint_id`]: Wk,
  [`GET ${W}/webhooks/test`]: Wk,
};

/** The claims of a request that passed the v3 check; absent when auth is off (every caller is admin then). */
const ADMIN: KeyClaims = { t: '', ad: true };

declare module 'fastify' {
  interface FastifyRequest {
    v3Key?: KeyClaims;
  }
}

export const unauthorized = (detail: string) => new HttpError(401, { detail });
const NOT_PERMITTED = 'JWT not permissioned for this resource';

const digest = (s: string) => createHash('sha256').update(s).digest();

function bearer(req: FastifyRequest): string | undefined {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^\s*Bearer\s+(\S.*?)\s*$/i.exec(h);
  return m ? m[1] : undefined;
}

/** The onRequest hook deciding every route's access when auth is on. */
export function v3AuthHook(ctx: Ctx, cfg: V3AuthConfig) {
  const known = (cfg.apiKeys ?? []).map(digest);
  const isApiKey = (token: string) => {
    if (!known.length) return false;
    const d = digest(token);
    return known.some((k) => timingSafeEqual(k, d));
  };
  return async (req: FastifyRequest): Promise<void> => {
    if (OPEN.test(req.url)) return;
    const url = req.routeOptions?.url;
    const token = bearer(req);
    const v3 = /^\/v3(\/|\?|$)/.test(req.url);
    if (!v3) {
      // The seed's API: an API key or an admin JWT, with the seed's bodies.
      if (token && (isApiKey(token) || isAdminJwt(token, cfg.secret))) return;
      throw new HttpError(401, { detail: token ? 'Invalid API key' : 'Not authenticated' }, { 'WWW-Authenticate': 'Bearer' });
    }
    if (!url) return; // unknown path: the 404 answers
    if (!token) throw unauthorized('No access token provided');
    let claims: KeyClaims;
    if (isApiKey(token)) claims = ADMIN;
    else {
      try {
        claims = verifyKey(token, cfg.secret);
      } catch (err) {
        if (err instanceof KeyError) throw unauthorized(err.message);
        throw err;
      }
    }
    req.v3Key = claims;
    if (claims.ad) return;
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    const policy = V3_POLICIES[`${method} ${url}`];
    if (!policy) throw unauthorized(NOT_PERMITTED);
    if ('admin' in policy) throw unauthorized('Resource requires admin privileges');
    if ('self' in policy) return;
    const params = req.params as Record<string, string>;
    const workspace = params.workspace_id;
    if (claims.w !== workspace) throw unauthorized(NOT_PERMITTED);
    const session = policy.session ? params.session_id : undefined;
    const peer = policy.peer ? params.peer_id : undefined;
    if (claims.s !== undefined) {
      if (!session || claims.s !== session) throw unauthorized(NOT_PERMITTED);
      return;
    }
    if (claims.p !== undefined) {
      if (peer && claims.p === peer) return;
      if (policy.memberRead && session && (await isActiveMember(ctx.storage.db, workspace, session, claims.p))) return;
      throw unauthorized(NOT_PERMITTED);
    }
  };
}

function isAdminJwt(token: string, secret: string): boolean {
  try {
    return verifyKey(token, secret).ad === true;
  } catch {
    return false;
  }
}

/** The request's key (admin when auth is off). */
export const keyOf = (req: FastifyRequest): KeyClaims => req.v3Key ?? ADMIN;

// Checks the reference makes inside its handlers, where the ids come from the body or query.

/** `POST /v3/workspaces`: a non-admin key creates or reads only its own workspace. */
export function checkWorkspaceCreate(req: FastifyRequest, id: string): void {
  const k = keyOf(req);
  if (!k.ad && k.w !== id) throw unauthorized('Unauthorized access to resource');
}

/** `POST …/peers`: the key's workspace, and a peer key only its own peer. */
export function checkPeerCreate(req: FastifyRequest, workspace: string, id: string): void {
  const k = keyOf(req);
  if (k.ad) return;
  if (k.w !== undefined && k.w !== workspace) throw unauthorized('Unauthorized access to resource');
  if (k.p !== undefined && k.p !== id) throw unauthorized('Unauthorized access to resource');
  if (k.w === undefined) throw unauthorized('Unauthorized access to resource');
}

/** `POST …/sessions`: the key's workspace, and a session key only its own session. */
export function checkSessionCreate(req: FastifyRequest, workspace: string, id: string): void {
  const k = keyOf(req);
  if (k.ad) return;
  if (k.w !== undefined && k.w !== workspace) throw unauthorized('Unauthorized access to resource');
  if (k.s !== undefined && k.s !== id) throw unauthorized('Unauthorized access to resource');
  if (k.w === undefined) throw unauthorized('Unauthorized access to resource');
}

/** The `scope` option of the read routes: a scope's sessions reach past a peer's or session's own, so only workspace and admin keys (401). */
export function checkWideKey(req: FastifyRequest): void {
  const k = keyOf(req);
  if (k.p !== undefined || k.s !== undefined) throw unauthorized('`scope` requires a workspace- or admin-level key');
}

/** `SessionCreate.scopes`: scope membership is a workspace-level change (401 for peer and session keys). */
export function checkScopesOnCreate(req: FastifyRequest, scopes: unknown): void {
  const k = keyOf(req);
  if (Array.isArray(scopes) && scopes.length && (k.p !== undefined || k.s !== undefined)) throw unauthorized('Scope membership requires a workspace-level key');
}

/** A peer key reading a session's peer config reads only its own. */
export function checkOwnPeer(req: FastifyRequest, peer: string): void {
  const k = keyOf(req);
  if (k.p !== undefined && k.p !== peer) throw unauthorized(NOT_PERMITTED);
}

/**
 * A peer key naming sessions in a body (`session_id`, a `filters.session_id`
 * allowlist) may name only sessions its peer is an active member of: the
 * dialectic reads their messages.
 */
export async function checkMemberSessions(ctx: Ctx, req: FastifyRequest, workspace: string, sessions: string[]): Promise<void> {
  const k = keyOf(req);
  if (k.p === undefined || !sessions.length) return;
  const mine = new Set(await activeSessionsOf(ctx.storage.db, workspace, k.p));
  if (!sessions.every((s) => mine.has(s))) throw unauthorized(NOT_PERMITTED);
}
