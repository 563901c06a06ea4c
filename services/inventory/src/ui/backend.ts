import type { FastifyInstance } from 'fastify';
import type { InventoryDeps } from '../deps.ts';
import type { TokenRow } from '../auth/store.ts';
import { createToken, deleteToken, tokensOfUser } from '../auth/tokens.ts';
import type { Viewer } from './layout.ts';
import { createTaskSource, type TaskSource } from './task-source.ts';

export type UiDeps = InventoryDeps;

export interface ApiResult {
  status: number;
  body: any;
  /** `Retry-After` of a throttled answer. */
  retryAfter?: string;
}

/**
 * Everything the UI needs from the rest of the service. Webhooks and event
 * rules go through the REST API in-process (same validation, permissions and
 * change log as any API client); background tasks use Part B's task domain.
 */
export interface UiBackend {
  verifyToken(key: string): Promise<Viewer | null>;
  /** `host`: the browser's Host, so URLs the API builds (`url`, `display_url`, webhook payloads) name this site. */
  api(token: string, method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, body?: unknown, host?: string): Promise<ApiResult>;
  tasks: TaskSource;
  /** The signed-in user's own API tokens (NetBox's /user/api-tokens/), acting as the user the session's token belongs to. */
  ownTokens?: OwnTokens;
  /** Counts a login attempt from a client address; seconds to wait when over budget, else 0. */
  throttleLogin?(address: string): number;
  /**
   * NetBox's username/password login: trades them for a new API token through the API's token provisioning
   * (same password check, throttling per client address and username, last_login), as the client at `address`.
   */
  passwordLogin?(username: string, password: string, address: string, host?: string): Promise<ApiResult>;
}

export interface OwnToken {
  id: number;
  /** `**********abcd`: the key's last four characters. */
  display: string;
  created: string;
  expires: string | null;
  lastUsed: string | null;
  writeEnabled: boolean;
  description: string;
}

export interface OwnTokens {
  /** The user's tokens and the id of the session's own; null when the session's token is no longer valid. */
  list(sessionToken: string): Promise<{ tokens: OwnToken[]; currentId: number } | null>;
  /** A new token of the user; the key is only in this answer. Refused when the session's token is read-only. */
  create(sessionToken: string, t: { writeEnabled: boolean; description: string; expires: Date | null }): Promise<{ key: string; token: OwnToken } | { refused: string }>;
  /** Revokes one of the user's tokens. */
  revoke(sessionToken: string, id: number): Promise<'revoked' | 'not-found' | { refused: string }>;
}

const READ_ONLY_SESSION = 'This session uses a read-only token: log in with a write-enabled token or your password to create or revoke tokens.';

function ownTokens(deps: UiDeps): OwnTokens {
  const d = deps.storage.dialect;
  const view = (t: TokenRow): OwnToken => ({
    id: Number(t.id),
    display: `**********${t.key_prefix}`,
    created: d.readTimestamp(t.created),
    expires: t.expires ? d.readTimestamp(t.expires) : null,
    lastUsed: t.last_used ? d.readTimestamp(t.last_used) : null,
    writeEnabled: d.readBool(t.write_enabled),
    description: t.description,
  });
  return {
    async list(sessionToken) {
      const p = await deps.auth.verifyToken(sessionToken);
      if (!p) return null;
      return { tokens: (await tokensOfUser(deps.storage, p.userId)).map(view), currentId: p.tokenId };
    },
    async create(sessionToken, t) {
      const p = await deps.auth.verifyToken(sessionToken);
      if (!p || !p.writeEnabled) return { refused: READ_ONLY_SESSION };
      const { row, key } = await createToken(deps.storage, { userId: p.userId, ...t });
      return { key, token: view(row) };
    },
    async revoke(sessionToken, id) {
      const p = await deps.auth.verifyToken(sessionToken);
      if (!p || !p.writeEnabled) return { refused: READ_ONLY_SESSION };
      return (await deleteToken(deps.storage, id, p.userId)) ? 'revoked' : 'not-found';
    },
  };
}

export function createBackend(app: FastifyInstance, deps: UiDeps): UiBackend {
  return {
    throttleLogin: (address) => deps.auth.throttle.attempt(address),
    async verifyToken(key) {
      const p = await deps.auth.verifyToken(key);
      // Admin pages act through the API, which wants a superuser with a write-enabled token.
      if (!p) return null;
      const grants = p.grants ? Object.fromEntries([...p.grants].map(([t, a]) => [t, [...a]])) : null;
      return { username: p.username, isSuperuser: p.isSuperuser, isAdmin: p.isSuperuser && p.writeEnabled, canWrite: p.writeEnabled && (p.isSuperuser || p.canWrite), writeEnabled: p.writeEnabled, grants };
    },
    async api(token, method, url, body, host) {
      const res = await app.inject({
        method,
        url,
        headers: { authorization: `Token ${token}`, accept: 'application/json', ...(host ? { host } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        payload: body === undefined ? undefined : JSON.stringify(body),
      });
      let parsed: unknown = res.body;
      try {
        parsed = res.body ? JSON.parse(res.body) : undefined;
      } catch {
        /* not JSON: keep the text */
      }
      return { status: res.statusCode, body: parsed };
    },
    async passwordLogin(username, password, address, host) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/users/tokens/provision/',
        remoteAddress: address,
        headers: { accept: 'application/json', 'content-type': 'application/json', ...(host ? { host } : {}) },
        payload: JSON.stringify({ username, password, description: 'Web UI login' }),
      });
      let parsed: unknown = res.body;
      try {
        parsed = res.body ? JSON.parse(res.body) : undefined;
      } catch {
        /* not JSON: keep the text */
      }
      return { status: res.statusCode, body: parsed, retryAfter: res.headers['retry-after'] === undefined ? undefined : String(res.headers['retry-after']) };
    },
    tasks: createTaskSource(deps),
    ownTokens: ownTokens(deps),
  };
}
