import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { JOURNAL_KINDS, takesJournal } from '../../models/journal.ts';
import type { ModelDef } from '../../models/types.ts';
import type { UiBackend } from '../backend.ts';
import { authed, flash, parseId, redirectTo, sendError, sendPage } from '../context.ts';
import { formString, type FormBody } from '../forms.ts';
import { html, urlPart, type SafeHtml } from '../html.ts';
import { csrfField, formatTime, viewerMay, type Viewer } from '../layout.ts';

/** What the journal pages borrow from the object pages: the menu, the tab bar and a way to call the API. */
export interface JournalPageParts {
  menu(m: ModelDef, viewer?: Viewer): SafeHtml;
  tabs(m: ModelDef, id: number, active: 'journal'): SafeHtml;
  api(req: FastifyRequest, method: 'GET' | 'POST', url: string, body?: unknown): Promise<{ status: number; body: any }>;
  message(body: unknown): string;
}

const MAX_COMMENTS = 100_000;

/** NetBox's JournalEntryKindChoices colours. */
const KIND_COLOURS: Record<string, string> = { info: 'cyan', success: 'green', warning: 'yellow', danger: 'red' };

/**
 * Usernames of the entries' authors (`created_by` is a user id in the API, as NetBox's). Only administrators may read
 * users through the API, so others see `user #<id>`.
 */
async function authorNames(req: FastifyRequest, parts: JournalPageParts, entries: any[]): Promise<Map<number, string>> {
  const ids = [...new Set(entries.map((e) => e.created_by).filter((v): v is number => typeof v === 'number'))].slice(0, 20);
  if (!ids.length || !authed(req).viewer.isSuperuser) return new Map();
  const found = await Promise.all(ids.map(async (id) => [id, await parts.api(req, 'GET', `/api/users/users/${id}/`)] as const));
  return new Map(found.filter(([, r]) => r.status === 200).map(([id, r]) => [id, String(r.body.username)]));
}

/** The object's journal tab (NetBox's `/<app>/<model>/<id>/journal/`): its entries, newest first, and a form to add one. */
export function registerJournalPages(app: FastifyInstance, _backend: UiBackend, m: ModelDef, parts: JournalPageParts): void {
  if (!takesJournal(m)) return;
  app.get(`/${m.path}/:id/journal/`, { schema: { hide: true } }, (req, reply) => journalPage(req, reply, m, parts));
  app.post(`/${m.path}/:id/journal/`, { schema: { hide: true } }, (req, reply) => addEntry(req, reply, m, parts));
}

const pageUrl = (m: ModelDef, id: number) => `/${m.app}/${m.path}/${id}/journal/`;

async function journalPage(req: FastifyRequest, reply: FastifyReply, m: ModelDef, parts: JournalPageParts, form: { kind?: string; comments?: string; error?: string } = {}, status = 200) {
  const { viewer, session } = authed(req);
  const id = parseId((req.params as Record<string, string>).id) ?? -1;
  const obj = id > 0 ? await parts.api(req, 'GET', `/api/${m.app}/${m.path}/${id}/?brief=1`) : { status: 404, body: null };
  if (obj.status !== 200) return sendError(req, reply, 404, 'Not found', `No ${m.verboseName} with ID ${id} exists.`);
  const r = await parts.api(req, 'GET', `/api/extras/journal-entries/?assigned_object_type=${urlPart(m.objectType)}&assigned_object_id=${id}&limit=200`);
  const entries: any[] = r.status === 200 ? r.body.results : [];
  const authors = await authorNames(req, parts, entries);
  const kind = form.kind ?? 'info';
  const body = html`${parts.menu(m, viewer)}${parts.tabs(m, id, 'journal')}
${
  viewerMay(viewer, 'extras.journalentry', 'add')
    ? html`<form method="post" action="${pageUrl(m, id)}" class="edit-form" data-testid="journal-form">${csrfField(session.csrfToken)}
${form.error ? html`<p class="error" data-testid="journal-error">${form.error}</p>` : ''}
<label>Kind <select name="kind">${JOURNAL_KINDS.map((k) => html`<option value="${k.value}"${k.value === kind ? html` selected` : ''}>${k.label}</option>`)}</select></label>
<label>Comments <textarea name="comments" rows="4" required>${form.comments ?? ''}</textarea></label>
<button type="submit">Add entry</button></form>`
    : ''
}
<table data-testid="journal"><thead><tr><th>Created</th><th>Created by</th><th>Kind</th><th>Comments</th></tr></thead><tbody>
${entries.map((e) => html`<tr><td>${formatTime(e.created)}</td><td>${e.created_by === null || e.created_by === undefined ? '—' : authors.get(Number(e.created_by)) ?? `user #${e.created_by}`}</td><td><span class="badge badge-${KIND_COLOURS[e.kind?.value ?? e.kind] ?? 'gray'}">${e.kind?.label ?? e.kind}</span></td><td class="pre">${e.comments}</td></tr>`)}
</tbody></table>${entries.length === 0 ? html`<p class="muted">No journal entries.</p>` : ''}`;
  return sendPage(req, reply, { title: `${String(obj.body.display)} · Journal`, section: 'inventory', body }, status);
}

async function addEntry(req: FastifyRequest, reply: FastifyReply, m: ModelDef, parts: JournalPageParts) {
  if (!viewerMay(authed(req).viewer, 'extras.journalentry', 'add')) return sendError(req, reply, 403, 'Forbidden', 'You do not have permission to add journal entries (or your token is read-only).');
  const id = parseId((req.params as Record<string, string>).id) ?? -1;
  const form = (req.body ?? {}) as FormBody;
  const kind = formString(form, 'kind') || 'info';
  const comments = formString(form, 'comments').slice(0, MAX_COMMENTS + 1);
  const r = await parts.api(req, 'POST', '/api/extras/journal-entries/', { assigned_object_type: m.objectType, assigned_object_id: id, kind, comments });
  if (r.status === 201) {
    flash(req, 'success', 'Added a journal entry.');
    return redirectTo(reply, pageUrl(m, id));
  }
  return journalPage(req, reply, m, parts, { kind, comments, error: parts.message(r.body) }, 400);
}
