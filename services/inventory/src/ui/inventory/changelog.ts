import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { objectTypeLabel } from '../../models/lookup.ts';
import { MODELS } from '../../models/registry.ts';
import { parseId, sendError, sendPage } from '../context.ts';
import { html, type SafeHtml } from '../html.ts';
import { formatTime } from '../layout.ts';
import { pageOf } from './render.ts';

/**
 * NetBox's change log pages (`/core/changelog/`, each change's `display_url`): the list of every object change with the
 * API's filters (`q`, `user_name`, `action`, `changed_object_type`, `time_after`, `time_before`, `request_id`, and any other
 * filter of `/api/core/object-changes/` in the URL), newest first, paged; a change's page with its pre- and post-change
 * data side by side and the changed keys marked. Read through the REST API with the user's token.
 */

type Get = (req: FastifyRequest, url: string) => Promise<{ status: number; body: any }>;
type Q = Record<string, string | string[] | undefined>;

const PER_PAGE = 50;
const MAX_PER_PAGE = 1000;
const ACTIONS = [
  ['create', 'Created'],
  ['update', 'Updated'],
  ['delete', 'Deleted'],
] as const;
const PAGE_PARAMS = new Set(['page', 'per_page']);

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));

/** Keys whose values differ between the two snapshots. */
export function changedKeys(pre: Record<string, unknown> | null, post: Record<string, unknown> | null): Set<string> {
  const keys = new Set([...Object.keys(pre ?? {}), ...Object.keys(post ?? {})]);
  return new Set([...keys].filter((k) => JSON.stringify(pre?.[k] ?? null) !== JSON.stringify(post?.[k] ?? null)));
}

/** The admin pages of the event pipeline's objects, which are no model of the registry. */
const ADMIN_PAGES: Record<string, string> = { 'extras.eventrule': '/ui/event-rules/', 'extras.webhook': '/ui/webhooks/' };

function objectCell(c: any): SafeHtml {
  const admin = ADMIN_PAGES[String(c.changed_object_type)];
  const href = c.changed_object ? pageOf(c.changed_object) : admin && c.action?.value !== 'delete' && c.action !== 'delete' ? `${admin}${Number(c.changed_object_id)}/` : undefined;
  return href ? html`<a href="${href}">${c.object_repr}</a>` : html`${c.object_repr}`;
}

export function registerChangelogPages(app: FastifyInstance, get: Get): void {
  app.get('/changelog/', { schema: { hide: true } }, (req, reply) => listPage(req, reply, get));
  app.get('/changelog/:id/', { schema: { hide: true } }, (req, reply) => detailPage(req, reply, get));
}

async function listPage(req: FastifyRequest, reply: FastifyReply, get: Get) {
  const q = req.query as Q;
  const num = (v: string, dflt: number, max: number) => (/^\d{1,9}$/.test(v) ? Math.min(max, Math.max(1, Number(v))) : dflt);
  const perPage = num(one(q.per_page), PER_PAGE, MAX_PER_PAGE);
  const pageNo = num(one(q.page), 1, 1_000_000);
  const filters = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) {
    if (PAGE_PARAMS.has(k) || v === undefined) continue;
    for (const x of Array.isArray(v) ? v : [v]) if (x !== '') filters.append(k, x);
  }
  const api = new URLSearchParams(filters);
  api.set('limit', String(perPage));
  api.set('offset', String((pageNo - 1) * perPage));
  if (!api.has('ordering')) api.set('ordering', '-time');
  const r = await get(req, `/api/core/object-changes/?${api.toString()}`);
  const ok = r.status === 200;
  const changes: any[] = ok ? r.body.results : [];
  const count = ok ? Number(r.body.count) : 0;
  const pages = Math.max(1, Math.ceil(count / perPage));
  const problem = ok ? [] : r.body && typeof r.body === 'object' && !Array.isArray(r.body) ? Object.entries(r.body).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(' ') : String(v)}`) : ['The change log could not be read.'];
  const link = (p: number) => {
    const s = new URLSearchParams(filters);
    s.set('page', String(p));
    if (perPage !== PER_PAGE) s.set('per_page', String(perPage));
    return `/core/changelog/?${s.toString()}`;
  };
  const types = [...new Set([...MODELS.map((m) => m.objectType), ...Object.keys(ADMIN_PAGES)])].sort();
  const body = html`<form method="get" action="/core/changelog/" class="filters" data-testid="filter-form">
<label>Search <input type="search" name="q" value="${one(q.q)}" data-testid="quick-search"></label>
<label>User <input type="text" name="user_name" value="${one(q.user_name)}" size="10"></label>
<label>Action <select name="action"><option value="">Any</option>${ACTIONS.map(([v, l]) => html`<option value="${v}"${one(q.action) === v ? html` selected` : ''}>${l}</option>`)}</select></label>
<label>Object type <select name="changed_object_type"><option value="">Any</option>${types.map((t) => html`<option value="${t}"${one(q.changed_object_type) === t ? html` selected` : ''}>${objectTypeLabel(t)}</option>`)}</select></label>
<label>After <input type="text" name="time_after" value="${one(q.time_after)}" size="16" placeholder="YYYY-MM-DD hh:mm"></label>
<label>Before <input type="text" name="time_before" value="${one(q.time_before)}" size="16" placeholder="YYYY-MM-DD hh:mm"></label>
<button type="submit">Apply</button> <a href="/core/changelog/">Reset</a>
</form>
${problem.length ? html`<ul class="errors" role="alert" data-testid="filter-errors">${problem.map((p) => html`<li>${p}</li>`)}</ul>` : ''}
<table data-testid="changelog-list"><thead><tr><th>ID</th><th>Time</th><th>User</th><th>Action</th><th>Type</th><th>Object</th><th>Request ID</th></tr></thead><tbody>
${changes.map(
  (c) => html`<tr><td><a href="/core/changelog/${c.id}/">${c.id}</a></td><td>${formatTime(c.time)}</td><td>${c.user_name}</td><td>${c.action?.label ?? c.action}</td><td>${objectTypeLabel(String(c.changed_object_type))}</td><td>${objectCell(c)}</td><td><a href="/core/changelog/?request_id=${encodeURIComponent(String(c.request_id))}">${String(c.request_id).slice(0, 8)}</a></td></tr>`,
)}
</tbody></table>
${ok && !changes.length ? html`<p class="muted">No changes recorded.</p>` : ''}
<p class="pager">${pageNo > 1 ? html`<a href="${link(pageNo - 1)}">« Previous</a> ` : ''}<span class="muted">Page ${pageNo} of ${pages} · ${count} changes</span>${pageNo < pages ? html` <a href="${link(pageNo + 1)}">Next »</a>` : ''}</p>`;
  return sendPage(req, reply, { title: 'Change log', section: 'changelog', body }, ok ? 200 : r.status >= 400 && r.status < 500 ? r.status : 400);
}

function dataTable(data: Record<string, unknown> | null, changed: Set<string>, kind: 'pre' | 'post'): SafeHtml {
  if (!data) return html`<p class="muted">None</p>`;
  return html`<table class="change-data" data-testid="${kind}change-data"><tbody>${Object.keys(data)
    .sort()
    .map((k) => html`<tr${changed.has(k) ? html` class="changed"` : ''}><th>${k}</th><td>${changed.has(k) ? (kind === 'pre' ? html`<del>${JSON.stringify(data[k])}</del>` : html`<ins>${JSON.stringify(data[k])}</ins>`) : JSON.stringify(data[k])}</td></tr>`)}</tbody></table>`;
}

async function detailPage(req: FastifyRequest, reply: FastifyReply, get: Get) {
  const id = parseId((req.params as Record<string, string>).id);
  const r = id === null ? { status: 404, body: null } : await get(req, `/api/core/object-changes/${id}/`);
  if (r.status !== 200) return sendError(req, reply, 404, 'Not found', `No object change with ID ${id ?? '?'} exists.`);
  const c = r.body;
  const changed = changedKeys(c.prechange_data, c.postchange_data);
  const related = await get(req, `/api/core/object-changes/?request_id=${encodeURIComponent(String(c.request_id))}&limit=50&ordering=time`);
  const others: any[] = related.status === 200 ? (related.body.results as any[]).filter((x) => x.id !== c.id) : [];
  const body = html`<table class="attrs" data-testid="change"><tbody>
<tr><th>Time</th><td>${formatTime(c.time)}</td></tr>
<tr><th>User</th><td>${c.user_name}</td></tr>
<tr><th>Action</th><td>${c.action?.label ?? c.action}</td></tr>
<tr><th>Object type</th><td>${objectTypeLabel(String(c.changed_object_type))}</td></tr>
<tr><th>Object</th><td>${objectCell(c)} <a href="/core/changelog/?changed_object_type=${encodeURIComponent(String(c.changed_object_type))}&amp;changed_object_id=${c.changed_object_id}">(its changes)</a></td></tr>
<tr><th>Request ID</th><td><a href="/core/changelog/?request_id=${encodeURIComponent(String(c.request_id))}">${c.request_id}</a></td></tr>
</tbody></table>
<div class="change-columns"><div><h2>Pre-change data</h2>${dataTable(c.prechange_data, changed, 'pre')}</div><div><h2>Post-change data</h2>${dataTable(c.postchange_data, changed, 'post')}</div></div>
${others.length ? html`<h2>Related changes</h2><ul data-testid="related-changes">${others.map((o) => html`<li><a href="/core/changelog/${o.id}/">${o.action?.label ?? o.action} ${objectTypeLabel(String(o.changed_object_type))} ${o.object_repr}</a></li>`)}</ul>` : ''}`;
  return sendPage(req, reply, { title: `${c.object_repr} · ${c.action?.label ?? c.action}`, section: 'changelog', body });
}
