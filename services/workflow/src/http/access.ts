import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

const LOOPBACK_HOST = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\]|::1)(:\d+)?$/i;

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The key a request carries: `Authorization: Bearer <key>` or `?token=<key>` (what ComfyUI-Login clients send). */
export function presentedKey(req: FastifyRequest): string | undefined {
  const h = req.headers.authorization;
  if (typeof h === 'string' && /^Bearer /i.test(h)) return h.slice(7).trim();
  const q = req.query as Record<string, unknown> | undefined;
  return typeof q?.token === 'string' ? q.token : undefined;
}

/** `--api-key`: every route and the WebSocket need it, except /health. */
export function apiKeyGuard(key: string) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.url === '/health') return;
    const got = presentedKey(req);
    if (got !== undefined && sameSecret(got, key)) return;
    reply.code(401).header('WWW-Authenticate', 'Bearer').type('application/json').send(JSON.stringify({ error: 'Unauthorized: a valid API key is required' }));
  };
}

/**
 * The reference's origin guard: a request to a loopback Host whose Origin
 * names another host is refused, so a web page cannot drive the local server
 * from the user's browser (DNS rebinding, cross-site POSTs).
 */
export async function originGuard(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const host = req.headers.host;
  const origin = req.headers.origin;
  if (typeof host !== 'string' || typeof origin !== 'string' || !LOOPBACK_HOST.test(host)) return;
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    originHost = '';
  }
  if (originHost.toLowerCase() !== host.toLowerCase()) {
    reply.code(403).type('text/plain; charset=utf-8').send('403: Forbidden');
  }
}

export function corsHook(origin: string) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    reply.header('Access-Control-Allow-Origin', origin);
    reply.header('Access-Control-Allow-Methods', 'POST, GET, DELETE, PUT, OPTIONS, PATCH');
    // The hosted runtime's credential and workspace headers too, so a browser client on another origin can send them.
    reply.header('Access-Control-Allow-Headers', 'Content-Type, Authorization, Comfy-User, X-API-Key, X-CSRF-Token, X-Workspace-Id');
    reply.header('Access-Control-Expose-Headers', 'ETag, Retry-After, WWW-Authenticate, Content-Disposition');
    reply.header('Access-Control-Allow-Credentials', 'true');
    if (req.method === 'OPTIONS') reply.code(200).send();
  };
}
