import type { FastifyInstance } from 'fastify';
import { html } from '../html.ts';
import { csrfField } from '../layout.ts';
import { redirectTo, sendPage, uiState } from '../context.ts';
import { clearedSessionCookie, sessionCookie, type SessionStore } from '../session.ts';
import { formString, type FormBody } from '../forms.ts';
import type { UiBackend } from '../backend.ts';
import { INVENTORY_PREFIXES } from '../inventory/prefixes.ts';

const MAX_TOKEN_LENGTH = 256;

/** Only same-site UI paths may be a post-login destination (no open redirects): the admin pages and the inventory's. */
export function safeNext(raw: unknown): string {
  if (typeof raw !== 'string') return '/ui/';
  const prefix = ['/ui', ...INVENTORY_PREFIXES].find((p) => raw.startsWith(`${p}/`));
  if (raw.length > 500 || !prefix || raw.startsWith(`${prefix}//`) || /[\\\s]/.test(raw) || raw.startsWith('/ui/login')) return '/ui/';
  return raw;
}

export function registerLoginRoutes(app: FastifyInstance, sessions: SessionStore, backend: UiBackend, path = '/login'): void {
  // Only the slashed form of a prefixed '/' (`/login/`); `/login` is Django's APPEND_SLASH redirect.
  app.get(path, { config: { uiPublic: true }, prefixTrailingSlash: 'slash' }, async (req, reply) => {
    const state = uiState(req);
    if (state.session?.apiToken && (await backend.verifyToken(state.session.apiToken))) return redirectTo(reply, '/ui/');
    if (!state.session) {
      state.session = sessions.create();
      reply.header('set-cookie', sessionCookie(state.session.id, req.protocol === 'https'));
    }
    const next = safeNext((req.query as Record<string, unknown>).next);
    return sendPage(req, reply, { title: 'Log in', body: loginForm(state.session.csrfToken, next, []) });
  });

  app.post(path, { config: { uiPublic: true }, prefixTrailingSlash: 'slash' }, async (req, reply) => {
    const state = uiState(req);
    const body = (req.body ?? {}) as FormBody;
    const next = safeNext(formString(body, 'next'));
    const token = formString(body, 'token').trim();
    const username = formString(body, 'username').trim();
    const session = state.session!; // the CSRF guard rejected requests without one
    const errors: string[] = [];
    // NetBox's login: username and password (a token of the user is made for the session, as the API's provisioning).
    if (username && backend.passwordLogin) {
      const password = formString(body, 'password');
      if (!password || username.length > 150 || password.length > 128) {
        return sendPage(req, reply, { title: 'Log in', body: loginForm(session.csrfToken, next, [password ? 'Invalid username/password.' : 'Enter your password.'], username) }, 400);
      }
      const r = await backend.passwordLogin(username, password, req.ip, req.headers.host);
      if (r.status === 429) {
        if (r.retryAfter) reply.header('Retry-After', r.retryAfter);
        return sendPage(req, reply, { title: 'Log in', body: loginForm(session.csrfToken, next, [`Too many login attempts. Try again in ${r.retryAfter ?? 'a few'} seconds.`], username) }, 429);
      }
      const key = r.status === 201 && r.body && typeof r.body.key === 'string' ? (r.body.key as string) : undefined;
      if (!key) return sendPage(req, reply, { title: 'Log in', body: loginForm(session.csrfToken, next, ['Invalid username/password.'], username) }, 400);
      const fresh = sessions.rotate(session, key);
      reply.header('set-cookie', sessionCookie(fresh.id, req.protocol === 'https'));
      return redirectTo(reply, next);
    }
    // Guessing tokens is throttled per client address, as token provisioning is.
    const wait = backend.throttleLogin?.(req.ip) ?? 0;
    if (wait > 0) {
      reply.header('Retry-After', String(wait));
      return sendPage(req, reply, { title: 'Log in', body: loginForm(session.csrfToken, next, [`Too many login attempts. Try again in ${wait} seconds.`]) }, 429);
    }
    if (!token) errors.push('Enter your username and password, or an API token.');
    else if (token.length > MAX_TOKEN_LENGTH) errors.push('Invalid token.');
    const viewer = errors.length === 0 ? await backend.verifyToken(token) : null;
    if (!viewer) {
      if (errors.length === 0) errors.push('Invalid token.');
      return sendPage(req, reply, { title: 'Log in', body: loginForm(session.csrfToken, next, errors) }, 400);
    }
    const fresh = sessions.rotate(session, token);
    reply.header('set-cookie', sessionCookie(fresh.id, req.protocol === 'https'));
    return redirectTo(reply, next);
  });

  if (path !== '/login') return;
  app.post('/logout', async (req, reply) => {
    const state = uiState(req);
    if (state.session) sessions.destroy(state.session.id);
    reply.header('set-cookie', clearedSessionCookie());
    return redirectTo(reply, '/ui/login');
  });
}

function loginForm(csrfToken: string, next: string, errors: string[], username = '') {
  return html`<form method="post" action="/ui/login" class="login" data-testid="login-form">
${csrfField(csrfToken)}
<input type="hidden" name="next" value="${next}">
${errors.length ? html`<div class="flash flash-error" role="alert">${errors.join(' ')}</div>` : ''}
<div class="field"><label for="f-username">Username</label>
<input id="f-username" name="username" type="text" autocomplete="username" maxlength="150" value="${username}"></div>
<div class="field"><label for="f-password">Password</label>
<input id="f-password" name="password" type="password" autocomplete="current-password" maxlength="128"></div>
<p class="help muted">or</p>
<div class="field"><label for="f-token">API token</label>
<input id="f-token" name="token" type="password" autocomplete="off" maxlength="${MAX_TOKEN_LENGTH}"></div>
<p class="help muted">Log in with your username and password, or with an API token (the admin token printed at first start, or one created under /api/users/tokens/).</p>
<button type="submit">Log in</button>
</form>`;
}
