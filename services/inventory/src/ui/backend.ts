import type { FastifyInstance } from 'fastify';
import type { InventoryDeps } from '../deps.ts';
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
  /** Counts a login attempt from a client address; seconds to wait when over budget, else 0. */
  throttleLogin?(address: string): number;
  /**
   * NetBox's username/password login: trades them for a new API token through the API's token provisioning
   * (same password check, throttling per client address and username, last_login), as the client at `address`.
   */
  passwordLogin?(username: string, password: string, address: string, host?: string): Promise<ApiResult>;
}

export function createBackend(app: FastifyInstance, deps: UiDeps): UiBackend {
  return {
    throttleLogin: (address) => deps.auth.throttle.attempt(address),
    async verifyToken(key) {
      const p = await deps.auth.verifyToken(key);
      // Admin pages act through the API, which wants a superuser with a write-enabled token.
      return p ? { username: p.username, isSuperuser: p.isSuperuser, isAdmin: p.isSuperuser && p.writeEnabled, canWrite: p.writeEnabled && (p.isSuperuser || p.canWrite) } : null;
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
  };
}
