import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { UiBackend } from '../backend.ts';
import { authed, flash, parseId, redirectTo, sendError, sendPage } from '../context.ts';
import { checkbox, checkboxGroup, errorList, formCheckbox, formList, formString, select, splitApiErrors, textInput, type FieldErrors, type FormBody } from '../forms.ts';
import { html } from '../html.ts';
import { csrfField } from '../layout.ts';
import { objectTypeLabel } from '../../models/lookup.ts';
import { PERMISSION_OBJECT_TYPES } from '../../routes/users-permissions.ts';

/**
 * NetBox's permission pages (`/users/permissions/`): administrators list, view, add, edit and delete object permissions
 * (name, enabled, object types, actions, users), through `/api/users/permissions/` with the session's token. Superusers
 * see them; changing them needs a write-enabled token, as the API demands.
 */

const HIDE = { schema: { hide: true } };
const BASE = '/users/permissions/';
const ACTIONS = ['view', 'add', 'change', 'delete'];
const FIELDS = ['name', 'description', 'enabled', 'object_types', 'actions', 'users', 'constraints'];

function api(req: FastifyRequest, backend: UiBackend, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) {
  const host = typeof req.headers.host === 'string' ? req.headers.host : undefined;
  return backend.api(authed(req).apiToken, method, url, body, host);
}

function onlyAdmins(req: FastifyRequest, reply: FastifyReply, write: boolean): boolean {
  const v = authed(req).viewer;
  if (v.isSuperuser && (!write || v.isAdmin)) return true;
  sendError(req, reply, 403, 'Forbidden', v.isSuperuser ? 'Your token is read-only: log in with a write-enabled token to change permissions.' : 'Only administrators manage permissions.');
  return false;
}

const label = (t: string) => (t === 'core.objectchange' ? 'Core > Object change' : objectTypeLabel(t));
const typeLabel = (t: string) => `${label(t)} (${t})`;

export function registerPermissionPages(app: FastifyInstance, backend: UiBackend): void {
  app.get('/permissions/', HIDE, async (req, reply) => {
    if (!onlyAdmins(req, reply, false)) return reply;
    const r = await api(req, backend, 'GET', '/api/users/permissions/?limit=1000');
    const rows: any[] = r.status === 200 ? r.body.results : [];
    const admin = authed(req).viewer.isAdmin;
    const body = html`${admin ? html`<div class="actions"><a class="button" href="${BASE}add/" data-testid="add-permission">Add</a></div>` : ''}
<table class="objects" data-testid="permissions"><thead><tr><th>Name</th><th>Enabled</th><th>Object types</th><th>Actions</th><th>Users</th><th>Description</th></tr></thead><tbody>
${rows.map(
  (p) => html`<tr data-id="${p.id}"><td><a href="${BASE}${p.id}/">${p.name}</a></td><td>${p.enabled ? 'Yes' : 'No'}</td><td>${(p.object_types as string[]).map(label).join(', ')}</td><td>${(p.actions as string[]).join(', ')}</td><td>${(p.users as any[]).map((u) => u.username).join(', ') || '—'}</td><td>${p.description}</td></tr>`,
)}</tbody></table>${rows.length ? '' : html`<p class="muted">No permissions.</p>`}`;
    return sendPage(req, reply, { title: 'Permissions', section: 'permissions', body });
  });

  app.get('/permissions/:id/', HIDE, async (req, reply) => {
    if (!onlyAdmins(req, reply, false)) return reply;
    const id = parseId((req.params as Record<string, string>).id);
    const r = id ? await api(req, backend, 'GET', `/api/users/permissions/${id}/`) : { status: 404, body: null };
    if (r.status !== 200) return sendError(req, reply, 404, 'Not found', `No permission with ID ${id ?? '?'} exists.`);
    const p = r.body;
    const admin = authed(req).viewer.isAdmin;
    const body = html`${admin ? html`<div class="actions"><a class="button" href="${BASE}${p.id}/edit/" data-testid="edit">Edit</a> <a class="button danger" href="${BASE}${p.id}/delete/" data-testid="delete">Delete</a></div>` : ''}
<table class="kv" data-testid="attributes"><tbody>
<tr><th>Name</th><td>${p.name}</td></tr><tr><th>Description</th><td>${p.description || '—'}</td></tr><tr><th>Enabled</th><td>${p.enabled ? 'Yes' : 'No'}</td></tr>
<tr><th>Actions</th><td>${(p.actions as string[]).join(', ')}</td></tr>
<tr><th>Object types</th><td><ul>${(p.object_types as string[]).map((t) => html`<li>${typeLabel(t)}</li>`)}</ul></td></tr>
<tr><th>Users</th><td>${(p.users as any[]).map((u) => u.username).join(', ') || '—'}</td></tr>
</tbody></table>`;
    return sendPage(req, reply, { title: String(p.name), section: 'permissions', body });
  });

  const form = async (req: FastifyRequest, reply: FastifyReply, id: number | null, values: FormBody, errors: FieldErrors, general: string[] = [], status = 200) => {
    const { session } = authed(req);
    const users = await api(req, backend, 'GET', '/api/users/users/?limit=1000');
    const userOptions = users.status === 200 ? (users.body.results as any[]).map((u) => ({ value: String(u.id), label: String(u.username) })) : [];
    const actions = formList(values, 'actions');
    const extra = formString(values, 'additional_actions') || actions.filter((a) => !ACTIONS.includes(a)).join(', ');
    const action = id === null ? `${BASE}add/` : `${BASE}${id}/edit/`;
    const body = html`${errorList(general)}
<form method="post" action="${action}" class="edit-form" data-testid="permission-form">${csrfField(session.csrfToken)}<input type="hidden" name="_submitted" value="1">
${textInput({ name: 'name', label: 'Name', errors, value: formString(values, 'name'), maxLength: 100, required: true })}
${textInput({ name: 'description', label: 'Description', errors, value: formString(values, 'description'), maxLength: 200 })}
${checkbox({ name: 'enabled', label: 'Enabled', errors, checked: formString(values, '_submitted') ? formCheckbox(values, 'enabled') : true })}
${checkboxGroup({ name: 'actions', label: 'Actions', errors, values: actions, options: ACTIONS.map((a) => ({ value: a, label: a.charAt(0).toUpperCase() + a.slice(1) })), required: true })}
${textInput({ name: 'additional_actions', label: 'Additional actions', errors, value: extra, help: 'Actions granted in addition to those listed above (comma-separated)' })}
${select({ name: 'object_types', label: 'Object types', errors, value: formList(values, 'object_types'), options: PERMISSION_OBJECT_TYPES.map((t) => ({ value: t, label: typeLabel(t) })), multiple: true, required: true })}
${select({ name: 'users', label: 'Users', errors, value: formList(values, 'users'), options: userOptions, multiple: true })}
<div class="actions"><button type="submit" data-testid="save">${id === null ? 'Create' : 'Save'}</button> <a class="button secondary" href="${id === null ? BASE : `${BASE}${id}/`}">Cancel</a></div></form>`;
    return sendPage(req, reply, { title: id === null ? 'Add a new permission' : 'Editing permission', section: 'permissions', body }, status);
  };

  const save = async (req: FastifyRequest, reply: FastifyReply, id: number | null) => {
    if (!onlyAdmins(req, reply, true)) return reply;
    const values = (req.body ?? {}) as FormBody;
    const actions = [...formList(values, 'actions').filter((a) => ACTIONS.includes(a)), ...formString(values, 'additional_actions').split(',').map((a) => a.trim()).filter(Boolean)];
    const payload = {
      name: formString(values, 'name'),
      description: formString(values, 'description'),
      enabled: formCheckbox(values, 'enabled'),
      actions,
      object_types: formList(values, 'object_types'),
      users: formList(values, 'users').filter((u) => /^\d{1,15}$/.test(u)).map(Number),
    };
    const r = await api(req, backend, id === null ? 'POST' : 'PATCH', id === null ? '/api/users/permissions/' : `/api/users/permissions/${id}/`, payload);
    if (r.status === 200 || r.status === 201) {
      flash(req, 'success', `${id === null ? 'Created' : 'Modified'} permission ${r.body.name}`);
      return redirectTo(reply, `${BASE}${r.body.id}/`);
    }
    if (r.status === 404) return sendError(req, reply, 404, 'Not found', `No permission with ID ${id} exists.`);
    const split = splitApiErrors(r.body, FIELDS);
    return form(req, reply, id, { ...values, actions }, split.fields, split.general, r.status >= 400 && r.status < 500 ? r.status : 400);
  };

  app.get('/permissions/add/', HIDE, async (req, reply) => (onlyAdmins(req, reply, true) ? form(req, reply, null, {}, {}) : reply));
  app.post('/permissions/add/', HIDE, (req, reply) => save(req, reply, null));
  app.get('/permissions/:id/edit/', HIDE, async (req, reply) => {
    if (!onlyAdmins(req, reply, true)) return reply;
    const id = parseId((req.params as Record<string, string>).id);
    const r = id ? await api(req, backend, 'GET', `/api/users/permissions/${id}/`) : { status: 404, body: null };
    if (r.status !== 200 || !id) return sendError(req, reply, 404, 'Not found', `No permission with ID ${id ?? '?'} exists.`);
    const p = r.body;
    return form(req, reply, id, { _submitted: '1', name: p.name, description: p.description, enabled: p.enabled ? 'on' : '', actions: p.actions, object_types: p.object_types, users: (p.users as any[]).map((u) => String(u.id)) }, {});
  });
  app.post('/permissions/:id/edit/', HIDE, (req, reply) => {
    const id = parseId((req.params as Record<string, string>).id);
    return id ? save(req, reply, id) : sendError(req, reply, 404, 'Not found', 'There is no page at this address.');
  });
  app.get('/permissions/:id/delete/', HIDE, async (req, reply) => {
    if (!onlyAdmins(req, reply, true)) return reply;
    const id = parseId((req.params as Record<string, string>).id);
    const r = id ? await api(req, backend, 'GET', `/api/users/permissions/${id}/`) : { status: 404, body: null };
    if (r.status !== 200) return sendError(req, reply, 404, 'Not found', `No permission with ID ${id ?? '?'} exists.`);
    const body = html`<p data-testid="confirm-text">Are you sure you want to delete permission <strong>${r.body.name}</strong>?</p>
<form method="post" action="${BASE}${id}/delete/">${csrfField(authed(req).session.csrfToken)}<input type="hidden" name="confirm" value="true">
<div class="actions"><button type="submit" class="danger" data-testid="confirm-delete">Delete</button> <a class="button secondary" href="${BASE}${id}/">Cancel</a></div></form>`;
    return sendPage(req, reply, { title: 'Delete permission?', section: 'permissions', body });
  });
  app.post('/permissions/:id/delete/', HIDE, async (req, reply) => {
    if (!onlyAdmins(req, reply, true)) return reply;
    const id = parseId((req.params as Record<string, string>).id);
    if (!id) return sendError(req, reply, 404, 'Not found', 'There is no page at this address.');
    if (formString((req.body ?? {}) as FormBody, 'confirm') !== 'true') return redirectTo(reply, `${BASE}${id}/delete/`);
    const r = await api(req, backend, 'DELETE', `/api/users/permissions/${id}/`);
    if (r.status === 404) return sendError(req, reply, 404, 'Not found', `No permission with ID ${id} exists.`);
    flash(req, r.status === 204 ? 'success' : 'error', r.status === 204 ? `Deleted permission ${id}` : 'The permission could not be deleted.');
    return redirectTo(reply, BASE);
  });
}
