import { html, type SafeHtml } from './html.ts';
import type { Flash } from './session.ts';

export interface Viewer {
  username: string;
  /** May see System → Background Tasks and deliveries (superusers, as NetBox). */
  isSuperuser: boolean;
  /** May change webhooks, event rules and tasks: a superuser with a write-enabled token (what the API demands). */
  isAdmin: boolean;
  /** May add, change and delete inventory objects: a write-enabled token of a superuser or a user with write permission. */
  canWrite: boolean;
  /** The session's token may write (absent: what canWrite says). */
  writeEnabled?: boolean;
  /**
   * The user's object permissions (object type → actions), as the API enforces them; null or absent: none assigned,
   * so the earlier rules apply (everyone views, canWrite changes).
   */
  grants?: Record<string, string[]> | null;
}

/** Whether the viewer may `action` (view, add, change, delete) objects of `objectType`: NetBox's object permissions. */
export function viewerMay(v: Viewer, objectType: string, action: string): boolean {
  const write = action !== 'view';
  if (v.isSuperuser || !v.grants) return !write || v.canWrite;
  if (write && !(v.writeEnabled ?? v.canWrite)) return false;
  return v.grants[objectType]?.includes(action) ?? false;
}

export interface PageOptions {
  title: string;
  viewer?: Viewer;
  csrfToken: string;
  flashes?: Flash[];
  body: SafeHtml;
  /** Active top-level section, highlighted in the nav. */
  section?: 'webhooks' | 'event-rules' | 'tasks' | 'home' | 'inventory' | 'search' | 'changelog' | 'tokens' | 'permissions';
}

export function page(o: PageOptions): string {
  const nav = o.viewer
    ? html`<nav>
  <a class="brand" href="/ui/">Inventory admin</a>
  <a href="/dcim/sites/" class="${o.section === 'inventory' ? 'active' : ''}">Inventory</a>
  <a href="/search/" class="${o.section === 'search' ? 'active' : ''}">Search</a>
  ${viewerMay(o.viewer, 'core.objectchange', 'view') ? html`<a href="/core/changelog/" class="${o.section === 'changelog' ? 'active' : ''}">Change log</a>` : ''}
  <a href="/user/api-tokens/" class="${o.section === 'tokens' ? 'active' : ''}">API tokens</a>
  <a href="/ui/webhooks/" class="${o.section === 'webhooks' ? 'active' : ''}">Webhooks</a>
  <a href="/ui/event-rules/" class="${o.section === 'event-rules' ? 'active' : ''}">Event rules</a>
  ${o.viewer.isSuperuser ? html`<span class="menu-group">System</span>
  <a href="/ui/background-queues/" class="${o.section === 'tasks' ? 'active' : ''}">Background Tasks</a>
  <a href="/users/permissions/" class="${o.section === 'permissions' ? 'active' : ''}">Permissions</a>` : ''}
  <span class="spacer"></span>
  <span class="who" data-testid="who">${o.viewer.username}${o.viewer.isAdmin ? ' (admin)' : o.viewer.isSuperuser ? ' (admin, read-only token)' : ''}</span>
  <form method="post" action="/ui/logout" class="inline">${csrfField(o.csrfToken)}<button type="submit" class="link">Log out</button></form>
</nav>`
    : html`<nav><a class="brand" href="/ui/">Inventory admin</a></nav>`;
  const flashes = (o.flashes ?? []).map((f) => html`<div class="flash flash-${f.kind}" role="status">${f.text}</div>`);
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · Inventory</title>
<link rel="stylesheet" href="/ui/static/admin.css">
</head>
<body>
${nav}
<main>
${flashes}
<h1>${o.title}</h1>
${o.body}
</main>
</body>
</html>
`.value;
}

export function csrfField(token: string): SafeHtml {
  return html`<input type="hidden" name="csrf_token" value="${token}">`;
}

const BADGES: Record<string, string> = {
  queued: 'cyan',
  scheduled: 'purple',
  started: 'blue',
  sent: 'blue',
  successful: 'green',
  finished: 'green',
  failed: 'red',
  stopped: 'orange',
  deferred: 'gray',
  cancelled: 'yellow',
};

export function statusBadge(status: string): SafeHtml {
  return html`<span class="badge badge-${BADGES[status] ?? 'gray'}" data-status="${status}">${status}</span>`;
}

export function formatTime(value: unknown): string {
  if (value === null || value === undefined || value === '') return '—';
  const d = value instanceof Date ? value : new Date(String(value));
  if (Number.isNaN(d.getTime())) return String(value);
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}
