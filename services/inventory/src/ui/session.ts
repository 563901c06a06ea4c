import { randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Server-side sessions for the admin UI. The cookie carries only a random id;
 * the API token the user logged in with stays in this process's memory so
 * every request can be re-verified (a revoked token ends the session).
 */
export interface UiSession {
  id: string;
  csrfToken: string;
  /** Set after a successful login. */
  apiToken?: string;
  createdAt: number;
  lastSeen: number;
  flashes: Flash[];
  /** Columns chosen per inventory list (model key → column names), kept for the session. */
  columns?: Record<string, string[]>;
}

export interface Flash {
  kind: 'success' | 'error' | 'info';
  text: string;
}

export const SESSION_COOKIE = 'inventory_ui_session';
const IDLE_MS = 12 * 60 * 60 * 1000;
export const MAX_SESSIONS = 10_000;
const ANONYMOUS_IDLE_MS = 60 * 60 * 1000;
const ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

export class SessionStore {
  private sessions = new Map<string, UiSession>();

  constructor(private readonly now: () => number = Date.now) {}

  get(id: string | undefined): UiSession | undefined {
    if (!id || !ID_PATTERN.test(id)) return undefined;
    const s = this.sessions.get(id);
    if (!s) return undefined;
    if (this.now() - s.lastSeen > IDLE_MS) {
      this.sessions.delete(id);
      return undefined;
    }
    s.lastSeen = this.now();
    return s;
  }

  create(): UiSession {
    this.evict();
    const t = this.now();
    const s: UiSession = { id: newSecret(), csrfToken: newSecret(), createdAt: t, lastSeen: t, flashes: [] };
    this.sessions.set(s.id, s);
    return s;
  }

  /** A fresh id and CSRF token for a session whose privilege changes (login), so a planted id is useless. */
  rotate(old: UiSession, apiToken: string | undefined): UiSession {
    this.sessions.delete(old.id);
    const s = this.create();
    s.apiToken = apiToken;
    s.flashes = old.flashes;
    return s;
  }

  destroy(id: string): void {
    this.sessions.delete(id);
  }

  private evict(): void {
    if (this.sessions.size < MAX_SESSIONS) return;
    const t = this.now();
    for (const [id, s] of this.sessions) {
      if (t - s.lastSeen > IDLE_MS || (!s.apiToken && t - s.lastSeen > ANONYMOUS_IDLE_MS)) this.sessions.delete(id);
    }
    // Still full (someone is opening login pages in bulk): drop anonymous sessions first, oldest first,
    // so a flood of login-page visits cannot log real users out.
    for (const anonymousOnly of [true, false]) {
      for (const [id, s] of this.sessions) {
        if (this.sessions.size < MAX_SESSIONS) return;
        if (!anonymousOnly || !s.apiToken) this.sessions.delete(id);
      }
    }
  }

  get size(): number {
    return this.sessions.size;
  }
}

export function csrfMatches(expected: string, submitted: unknown): boolean {
  if (typeof submitted !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(submitted);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function sessionCookie(id: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

export function clearedSessionCookie(): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0`;
}
