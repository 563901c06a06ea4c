import type { FastifyReply, FastifyRequest } from 'fastify';
import type { UiSession } from './session.ts';
import type { Viewer } from './layout.ts';
import { page, type PageOptions } from './layout.ts';
import { html } from './html.ts';

/** What the UI's guard resolved for one request. */
export interface UiRequestState {
  session?: UiSession;
  viewer?: Viewer;
  /** The API token of the logged-in user (server-side only). */
  apiToken?: string;
}

const states = new WeakMap<FastifyRequest, UiRequestState>();

export function uiState(req: FastifyRequest): UiRequestState {
  let s = states.get(req);
  if (!s) {
    s = {};
    states.set(req, s);
  }
  return s;
}

/** The state of a request that passed the login guard. */
export interface AuthedState {
  session: UiSession;
  viewer: Viewer;
  apiToken: string;
}

export function authed(req: FastifyRequest): AuthedState {
  const s = uiState(req);
  if (!s.session || !s.viewer || !s.apiToken) throw new Error('UI route reached without a logged-in session');
  return s as AuthedState;
}

/** Renders a full page for the current viewer, consuming pending flash messages. */
export function sendPage(req: FastifyRequest, reply: FastifyReply, o: Omit<PageOptions, 'viewer' | 'csrfToken' | 'flashes'>, status = 200): FastifyReply {
  const s = uiState(req);
  const flashes = s.session ? s.session.flashes.splice(0) : [];
  const body = page({ ...o, viewer: s.viewer, csrfToken: s.session?.csrfToken ?? '', flashes });
  return reply.code(status).type('text/html; charset=utf-8').send(body);
}

export function sendError(req: FastifyRequest, reply: FastifyReply, status: number, title: string, message: string): FastifyReply {
  return sendPage(req, reply, { title, body: html`<p class="error-message">${message}</p><p><a href="/ui/">Back to the start page</a></p>` }, status);
}

/** Redirects after a POST (303 so the browser follows with GET). */
export function redirectTo(reply: FastifyReply, location: string): FastifyReply {
  return reply.code(303).header('location', location).send();
}

export function flash(req: FastifyRequest, kind: 'success' | 'error' | 'info', text: string): void {
  uiState(req).session?.flashes.push({ kind, text });
}

/** Positive integer ids from the path; anything else is treated as not found. */
export function parseId(raw: unknown): number | null {
  if (typeof raw !== 'string' || !/^[1-9][0-9]{0,14}$/.test(raw)) return null;
  return Number(raw);
}
