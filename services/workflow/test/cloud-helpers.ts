import { client } from '@svc/testkit';
import type { StorageKind } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';

export type Http = ReturnType<typeof client>;

/** Generous limits: tests sign up many users from one address; the rate-limit test sets its own. */
export const TEST_LIMITS = 'login=100000,login_account=100000,signup=100000,token=100000,register=100000';

export async function startCloud(storage: StorageKind, flags: Record<string, string | boolean> = {}) {
  const srv = await startWorkflow(storage, { runtime: 'cloud', authRateLimits: TEST_LIMITS, ...flags });
  return srv;
}

let seq = 0;

export interface TestUser {
  id: string;
  email: string;
  password: string;
  workspaceId: string;
  token: string;
  refreshToken: string;
  /** A client sending this user's access token. */
  http: Http;
}

/** Signs a fresh user up through the API. */
export async function signupUser(url: string, name = 'user'): Promise<TestUser> {
  const email = `${name}-${process.pid}-${++seq}-${Math.random().toString(36).slice(2, 8)}@example.test`;
  const password = 'correct horse battery staple';
  const r = await client(url).post('/api/auth/signup', { email, password, display_name: name });
  if (r.status !== 201) throw new Error(`signup failed: ${r.status} ${r.text}`);
  return { id: r.body.user.id, email, password, workspaceId: r.body.workspace.id, token: r.body.access_token, refreshToken: r.body.refresh_token, http: client(url, { authorization: `Bearer ${r.body.access_token}` }) };
}

export function bearer(url: string, token: string): Http {
  return client(url, { authorization: `Bearer ${token}` });
}

/** CloudError shape check: `{error: string, code?: string, details?: object}`. */
export function isCloudError(body: any, code?: string): boolean {
  return !!body && typeof body.error === 'string' && (code === undefined || body.code === code) && (body.details === undefined || (typeof body.details === 'object' && body.details !== null));
}
