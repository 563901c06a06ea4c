import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import formbody from '@fastify/formbody';
import { ADMIN_CSS } from './style.ts';
import { SESSION_COOKIE, SessionStore, csrfMatches, readCookie } from './session.ts';
import { authed, sendError, uiState } from './context.ts';
import { formString, type FormBody } from './forms.ts';
import { createBackend, type UiBackend, type UiDeps } from './backend.ts';
import { registerLoginRoutes } from './pages/login.ts';
import { registerWebhookRoutes } from './pages/webhooks.ts';
import { registerEventRuleRoutes } from './pages/event-rules.ts';
import { registerTaskRoutes } from './pages/tasks.ts';
import { INVENTORY_PREFIXES, registerInventoryPages } from './inventory/index.ts';
import { registerApiTokenPages } from './pages/api-tokens.ts';
import { registerPermissionPages } from './pages/permissions.ts';

const FORM_BODY_LIMIT = 1024 * 1024;

// No scripts at all: the UI works with plain forms, so the policy can forbid them outright.
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

declare module 'fastify' {
  interface FastifyContextConfig {
    /** UI routes reachable without logging in (login page, stylesheet). */
    uiPublic?: boolean;
  }
}

/**
 * The admin web UI under /ui/: server-rendered pages, login by API token with
 * a server-side session, CSRF tokens on every form. Registered by app.ts.
 */
export async function uiRoutes(app: FastifyInstance, deps: UiDeps): Promise<void> {
  const backend = createBackend(app, deps);
  await registerUi(app, backend);
}

/** Split from uiRoutes so tests and tools can mount the UI over any backend. */
export async function registerUi(app: FastifyInstance, backend: UiBackend, sessions = new SessionStore()): Promise<void> {
  app.get('/', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/ui/'));
  // Its own encapsulated context: the hooks, error pages and form parser below touch no API route.
  await app.register(async (ui) => uiPlugin(ui, backend, sessions), { prefix: '/ui' });
  // NetBox's login page URL (`/login/`, which NetBox's clients and health checks use), same form and session.
  await app.register(
    async (ui) => {
      await installUiGuards(ui, backend, sessions);
      registerLoginRoutes(ui, sessions, backend, '/');
    },
    { prefix: '/login' },
  );
  // The user's own API tokens at NetBox's `/user/api-tokens/`, same session and guards.
  await app.register(
    async (ui) => {
      await installUiGuards(ui, backend, sessions);
      registerApiTokenPages(ui, backend);
    },
    { prefix: '/user' },
  );
  // NetBox's permission pages (`/users/permissions/`), administrators only.
  await app.register(
    async (ui) => {
      await installUiGuards(ui, backend, sessions);
      registerPermissionPages(ui, backend);
    },
    { prefix: '/users' },
  );
  // The inventory's own pages at NetBox's URLs (`display_url`), one context per app, sharing the session.
  for (const prefix of INVENTORY_PREFIXES) {
    await app.register(
      async (ui) => {
        await installUiGuards(ui, backend, sessions);
        registerInventoryPages(ui, backend, prefix);
      },
      { prefix },
    );
  }
}

async function uiPlugin(app: FastifyInstance, backend: UiBackend, sessions: SessionStore): Promise<void> {
  await installUiGuards(app, backend, sessions);
  app.get('/', { schema: { hide: true } }, async (req, reply) => reply.redirect(authed(req).viewer.isSuperuser ? '/ui/background-queues/' : '/ui/webhooks/'));
  app.get('/static/admin.css', { schema: { hide: true }, config: { uiPublic: true } }, async (_req, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(ADMIN_CSS),
  );

  registerLoginRoutes(app, sessions, backend);
  registerTaskRoutes(app, backend);
  registerWebhookRoutes(app, backend);
  registerEventRuleRoutes(app, backend);
}

/**
 * What every UI context has: the form parser, security headers, the session and CSRF check on every POST,
 * the login guard (except `uiPublic` routes), HTML error and 404 pages. Used by /ui and the inventory pages.
 */
export async function installUiGuards(app: FastifyInstance, backend: UiBackend, sessions: SessionStore): Promise<void> {
  if (!app.hasContentTypeParser('application/x-www-form-urlencoded')) {
    await app.register(formbody, { bodyLimit: FORM_BODY_LIMIT });
  }

  app.addHook('onRequest', async (_req, reply) => {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) reply.header(k, v);
  });

  app.addHook('preHandler', async (req, reply) => {
    const state = uiState(req);
    state.session = sessions.get(readCookie(req.headers.cookie, SESSION_COOKIE));
    if (req.method === 'POST') {
      const rejected = checkCsrf(req, state.session?.csrfToken);
      if (rejected) return sendError(req, reply, 403, 'Forbidden', rejected);
    }
    if (req.routeOptions.config?.uiPublic) return;
    const token = state.session?.apiToken;
    const viewer = token ? await backend.verifyToken(token) : null;
    if (!viewer || !token) {
      if (state.session && token) state.session.apiToken = undefined; // the token was revoked
      return loginRedirect(req, reply);
    }
    state.viewer = viewer;
    state.apiToken = token;
  });

  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
    if (status === 500) req.log.error({ err }, 'admin UI error');
    const message = status === 500 ? 'Something went wrong while building this page; the error was logged.' : err.message;
    return sendError(req, reply, status, status === 500 ? 'Server error' : status === 503 ? 'Unavailable' : 'Bad request', message);
  });

  app.setNotFoundHandler((req, reply) => sendError(req, reply, 404, 'Not found', 'There is no page at this address.'));
}

/** A reason to refuse a POST, or null. Cross-origin posts are refused even with a valid token. */
function checkCsrf(req: FastifyRequest, expected: string | undefined): string | null {
  const origin = req.headers.origin;
  if (typeof origin === 'string' && origin !== 'null') {
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      host = undefined;
    }
    if (host !== req.headers.host) return 'CSRF verification failed: the form was posted from another site.';
  }
  if (!expected) return 'CSRF verification failed: your session has expired. Reload the page and try again.';
  const body = (req.body && typeof req.body === 'object' ? req.body : {}) as FormBody;
  if (!csrfMatches(expected, formString(body, 'csrf_token'))) return 'CSRF verification failed: the form token is missing or wrong. Reload the page and try again.';
  return null;
}

function loginRedirect(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const next = req.method === 'GET' ? req.url : '/ui/';
  return reply.code(303).header('location', `/ui/login?next=${encodeURIComponent(next)}`).send();
}
