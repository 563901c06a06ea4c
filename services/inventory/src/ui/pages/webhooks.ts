import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { html, urlPart, type SafeHtml } from '../html.ts';
import { csrfField, formatTime, statusBadge } from '../layout.ts';
import { authed, flash, parseId, redirectTo, sendError, sendPage } from '../context.ts';
import { checkbox, errorList, formCheckbox, formString, select, splitApiErrors, submitToApi, textArea, textInput, type FieldErrors, type FormBody } from '../forms.ts';
import type { UiBackend } from '../backend.ts';
import { HTTP_METHODS } from '../../events/webhooks.ts';
import { pager, pageParams } from './paging.ts';

const FIELDS = ['name', 'description', 'payload_url', 'http_method', 'http_content_type', 'additional_headers', 'body_template', 'secret', 'ssl_verification', 'ca_file_path', 'timeout', 'max_retries'] as const;

interface WebhookForm {
  name: string;
  description: string;
  payload_url: string;
  http_method: string;
  http_content_type: string;
  additional_headers: string;
  body_template: string;
  ssl_verification: boolean;
  ca_file_path: string;
  timeout: string;
  max_retries: string;
  /** Write-only: blank on edit keeps the stored secret. */
  secret: string;
  clear_secret: boolean;
}

function blankForm(): WebhookForm {
  return {
    name: '',
    description: '',
    payload_url: '',
    http_method: 'POST',
    http_content_type: 'application/json',
    additional_headers: '',
    body_template: '',
    ssl_verification: true,
    ca_file_path: '',
    timeout: '',
    max_retries: '',
    secret: '',
    clear_secret: false,
  };
}

function formFromApi(w: any): WebhookForm {
  const str = (v: unknown) => (v === null || v === undefined ? '' : String(v));
  return {
    name: str(w.name),
    description: str(w.description),
    payload_url: str(w.payload_url),
    http_method: str(w.http_method) || 'POST',
    http_content_type: str(w.http_content_type),
    additional_headers: str(w.additional_headers),
    body_template: str(w.body_template),
    ssl_verification: w.ssl_verification !== false,
    ca_file_path: str(w.ca_file_path),
    timeout: str(w.timeout),
    max_retries: str(w.max_retries),
    secret: '',
    clear_secret: false,
  };
}

function formFromBody(body: FormBody): WebhookForm {
  return {
    name: formString(body, 'name'),
    description: formString(body, 'description'),
    payload_url: formString(body, 'payload_url'),
    http_method: formString(body, 'http_method'),
    http_content_type: formString(body, 'http_content_type'),
    additional_headers: formString(body, 'additional_headers'),
    body_template: formString(body, 'body_template'),
    ssl_verification: formCheckbox(body, 'ssl_verification'),
    ca_file_path: formString(body, 'ca_file_path'),
    timeout: formString(body, 'timeout'),
    max_retries: formString(body, 'max_retries'),
    secret: formString(body, 'secret'),
    clear_secret: formCheckbox(body, 'clear_secret'),
  };
}

/** Optional whole numbers: blank → null, digits → number, else a field message. */
function optionalInt(raw: string, field: string, errors: FieldErrors): number | null | undefined {
  const t = raw.trim();
  if (t === '') return null;
  if (!/^\d{1,9}$/.test(t)) {
    errors[field] = ['Enter a whole number.'];
    return undefined;
  }
  return Number(t);
}

/** The REST payload for a form, or local errors. Template checks are the API's (it compiles them). */
function payloadOf(f: WebhookForm, editing: boolean): { payload: Record<string, unknown>; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const payload: Record<string, unknown> = {
    name: f.name,
    description: f.description,
    payload_url: f.payload_url,
    http_method: f.http_method,
    http_content_type: f.http_content_type,
    additional_headers: f.additional_headers.replace(/\r\n/g, '\n'),
    body_template: f.body_template.replace(/\r\n/g, '\n'),
    ssl_verification: f.ssl_verification,
    ca_file_path: f.ca_file_path.trim() === '' ? null : f.ca_file_path,
  };
  const timeout = optionalInt(f.timeout, 'timeout', errors);
  if (timeout !== undefined) payload.timeout = timeout;
  const retries = optionalInt(f.max_retries, 'max_retries', errors);
  if (retries !== undefined && (retries !== null || editing)) payload.max_retries = retries;
  if (f.clear_secret) payload.secret = '';
  else if (f.secret !== '' || !editing) payload.secret = f.secret;
  return { payload, errors };
}

function webhookForm(o: { action: string; csrf: string; form: WebhookForm; errors: FieldErrors; general: string[]; editing: boolean; hasSecret: boolean; cancel: string }): SafeHtml {
  const f = o.form;
  const e = o.errors;
  return html`<form method="post" action="${o.action}" class="edit-form" novalidate>
${csrfField(o.csrf)}
${o.general.length ? html`<div class="flash flash-error" role="alert" data-testid="form-errors">${errorList(o.general)}</div>` : ''}
${textInput({ name: 'name', label: 'Name', value: f.name, errors: e, required: true, maxLength: 150 })}
${textInput({ name: 'description', label: 'Description', value: f.description, errors: e, maxLength: 200 })}
${textInput({ name: 'payload_url', label: 'URL', value: f.payload_url, errors: e, required: true, maxLength: 500, help: 'Jinja2 template; rendered with the event context.' })}
${select({ name: 'http_method', label: 'HTTP method', value: f.http_method, errors: e, options: HTTP_METHODS.map((m) => ({ value: m, label: m })) })}
${textInput({ name: 'http_content_type', label: 'HTTP content type', value: f.http_content_type, errors: e, maxLength: 100 })}
${textArea({ name: 'additional_headers', label: 'Additional headers', value: f.additional_headers, errors: e, rows: 4, help: 'Jinja2 template; one "Name: Value" per line.' })}
${textArea({ name: 'body_template', label: 'Body template', value: f.body_template, errors: e, rows: 8, help: 'Jinja2 template; leave blank for the default JSON body (the whole event context).' })}
${textInput({ name: 'secret', label: 'Secret', value: '', type: 'password', errors: e, maxLength: 255, help: o.editing ? (o.hasSecret ? 'A secret is set. Leave blank to keep it.' : 'No secret is set.') : 'Signs the body (X-Hook-Signature and webhook-signature). Never shown again.' })}
${o.editing ? checkbox({ name: 'clear_secret', label: 'Remove the secret', checked: false, errors: e }) : ''}
${checkbox({ name: 'ssl_verification', label: 'SSL verification', checked: f.ssl_verification, errors: e })}
${textInput({ name: 'ca_file_path', label: 'CA file path', value: f.ca_file_path, errors: e, maxLength: 4096 })}
${textInput({ name: 'timeout', label: 'Timeout (seconds)', value: f.timeout, errors: e, type: 'number', help: 'Blank: the service default (15 s).' })}
${textInput({ name: 'max_retries', label: 'Automatic retries', value: f.max_retries, errors: e, type: 'number', help: 'Blank: the service default; 0 sends once, as NetBox does.' })}
<div class="actions"><button type="submit">${o.editing ? 'Save' : 'Create'}</button><a class="button secondary" href="${o.cancel}">Cancel</a></div>
</form>`;
}

function tabs(id: number, active: 'webhook' | 'deliveries', showDeliveries: boolean): SafeHtml {
  return html`<div class="tabs"><a href="/ui/webhooks/${id}/" class="${active === 'webhook' ? 'active' : ''}">Webhook</a>${showDeliveries ? html`<a href="/ui/webhooks/${id}/deliveries/" class="${active === 'deliveries' ? 'active' : ''}" data-testid="deliveries-tab">Deliveries</a>` : ''}</div>`;
}

export function registerWebhookRoutes(app: FastifyInstance, backend: UiBackend): void {
  async function load(req: FastifyRequest, reply: FastifyReply, id: number | null): Promise<any | null> {
    if (id === null) {
      sendError(req, reply, 404, 'Not found', 'No webhook matches the given query.');
      return null;
    }
    const r = await backend.api(authed(req).apiToken, 'GET', `/api/extras/webhooks/${id}/`);
    if (r.status === 200) return r.body;
    sendError(req, reply, r.status === 403 ? 403 : 404, r.status === 403 ? 'Forbidden' : 'Not found', r.status === 403 ? 'You do not have permission to view webhooks.' : 'No webhook matches the given query.');
    return null;
  }

  app.get('/webhooks/', async (req, reply) => {
    const { viewer, apiToken } = authed(req);
    const { limit, offset } = pageParams(req.query);
    const r = await backend.api(apiToken, 'GET', `/api/extras/webhooks/?limit=${limit}&offset=${offset}`);
    if (r.status !== 200) return sendError(req, reply, r.status === 403 ? 403 : 502, 'Webhooks', 'The webhook list could not be loaded.');
    const rows = (r.body.results ?? []) as any[];
    const body = html`${viewer.isAdmin ? html`<div class="actions"><a class="button" href="/ui/webhooks/add" data-testid="add-webhook">Add a webhook</a></div>` : ''}
<table class="list" data-testid="webhooks">
<thead><tr><th>Name</th><th>URL</th><th>Method</th><th>Content type</th><th>SSL verification</th><th>Description</th></tr></thead>
<tbody>${rows.length === 0 ? html`<tr><td colspan="6" class="muted">No webhooks yet.</td></tr>` : rows.map(
      (w) => html`<tr><td><a href="/ui/webhooks/${urlPart(w.id)}/">${w.name}</a></td><td><code>${w.payload_url}</code></td><td>${w.http_method}</td><td>${w.http_content_type}</td><td>${w.ssl_verification ? 'yes' : 'no'}</td><td>${w.description}</td></tr>`,
    )}</tbody></table>
${pager('/ui/webhooks/', r.body.count ?? rows.length, limit, offset)}`;
    return sendPage(req, reply, { title: 'Webhooks', section: 'webhooks', body });
  });

  app.get('/webhooks/add', async (req, reply) => {
    const { viewer, session } = authed(req);
    if (!viewer.isAdmin) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may create webhooks.');
    return sendPage(req, reply, { title: 'Add a webhook', section: 'webhooks', body: webhookForm({ action: '/ui/webhooks/add', csrf: session.csrfToken, form: blankForm(), errors: {}, general: [], editing: false, hasSecret: false, cancel: '/ui/webhooks/' }) });
  });

  app.post('/webhooks/add', async (req, reply) => {
    const { viewer, session, apiToken } = authed(req);
    if (!viewer.isAdmin) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may create webhooks.');
    const form = formFromBody((req.body ?? {}) as FormBody);
    const { saved, errors, general } = await submitToApi(backend, apiToken, 'POST', '/api/extras/webhooks/', payloadOf(form, false), FIELDS);
    if (saved) {
      flash(req, 'success', `Created webhook ${saved.name}.`);
      return redirectTo(reply, `/ui/webhooks/${urlPart(saved.id)}/`);
    }
    return sendPage(req, reply, { title: 'Add a webhook', section: 'webhooks', body: webhookForm({ action: '/ui/webhooks/add', csrf: session.csrfToken, form, errors, general, editing: false, hasSecret: false, cancel: '/ui/webhooks/' }) }, 400);
  });

  app.get('/webhooks/:id/', async (req, reply) => {
    const { viewer, session } = authed(req);
    const id = parseId((req.params as any).id);
    const w = await load(req, reply, id);
    if (!w) return reply;
    const row = (label: string, value: unknown, code = false) => html`<tr><th>${label}</th><td>${code ? html`<pre>${value === null || value === undefined || value === '' ? '—' : String(value)}</pre>` : value === null || value === undefined || value === '' ? '—' : String(value)}</td></tr>`;
    const body = html`${tabs(id!, 'webhook', viewer.isSuperuser)}
${viewer.isAdmin ? html`<div class="actions"><a class="button" href="/ui/webhooks/${id!}/edit" data-testid="edit-webhook">Edit</a>
<a class="button danger" href="/ui/webhooks/${id!}/delete" data-testid="delete">Delete</a></div>` : ''}
<table class="kv" data-testid="webhook-detail">
${row('Name', w.name)}${row('Description', w.description)}${row('URL', w.payload_url, true)}${row('HTTP method', w.http_method)}${row('HTTP content type', w.http_content_type)}
${row('Additional headers', w.additional_headers, true)}${row('Body template', w.body_template, true)}
${row('Secret', secretState(w))}${row('SSL verification', w.ssl_verification ? 'yes' : 'no')}${row('CA file path', w.ca_file_path)}
${row('Timeout (seconds)', w.timeout ?? 'default')}${w.max_retries !== undefined ? row('Automatic retries', w.max_retries ?? 'default') : ''}
${row('Created', formatTime(w.created))}${row('Last updated', formatTime(w.last_updated))}
</table>`;
    return sendPage(req, reply, { title: `Webhook ${w.name}`, section: 'webhooks', body });
  });

  app.get('/webhooks/:id/edit', async (req, reply) => {
    const { viewer, session } = authed(req);
    if (!viewer.isAdmin) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may change webhooks.');
    const id = parseId((req.params as any).id);
    const w = await load(req, reply, id);
    if (!w) return reply;
    return sendPage(req, reply, { title: `Edit webhook ${w.name}`, section: 'webhooks', body: webhookForm({ action: `/ui/webhooks/${id}/edit`, csrf: session.csrfToken, form: formFromApi(w), errors: {}, general: [], editing: true, hasSecret: hasSecret(w), cancel: `/ui/webhooks/${id}/` }) });
  });

  app.post('/webhooks/:id/edit', async (req, reply) => {
    const { viewer, session, apiToken } = authed(req);
    if (!viewer.isAdmin) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may change webhooks.');
    const id = parseId((req.params as any).id);
    const w = await load(req, reply, id);
    if (!w) return reply;
    const form = formFromBody((req.body ?? {}) as FormBody);
    const { saved, errors, general } = await submitToApi(backend, apiToken, 'PATCH', `/api/extras/webhooks/${id}/`, payloadOf(form, true), FIELDS);
    if (saved) {
      flash(req, 'success', `Saved webhook ${saved.name}.`);
      return redirectTo(reply, `/ui/webhooks/${id}/`);
    }
    return sendPage(req, reply, { title: `Edit webhook ${w.name}`, section: 'webhooks', body: webhookForm({ action: `/ui/webhooks/${id}/edit`, csrf: session.csrfToken, form, errors, general, editing: true, hasSecret: hasSecret(w), cancel: `/ui/webhooks/${id}/` }) }, 400);
  });

  app.get('/webhooks/:id/delete', async (req, reply) => {
    const { viewer, session } = authed(req);
    if (!viewer.isAdmin) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may delete webhooks.');
    const id = parseId((req.params as any).id);
    const w = await load(req, reply, id);
    if (!w) return reply;
    return confirmDelete(req, reply, id!, w.name, session.csrfToken);
  });

  app.post('/webhooks/:id/delete', async (req, reply) => {
    const { viewer, apiToken } = authed(req);
    if (!viewer.isAdmin) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may delete webhooks.');
    const id = parseId((req.params as any).id);
    const w = await load(req, reply, id);
    if (!w) return reply;
    // Only the confirmation page's form deletes (NetBox asks first).
    if (formString((req.body ?? {}) as FormBody, 'confirm') !== 'true') return confirmDelete(req, reply, id!, w.name, authed(req).session.csrfToken);
    const r = await backend.api(apiToken, 'DELETE', `/api/extras/webhooks/${id}/`);
    if (r.status === 204 || r.status === 200) {
      flash(req, 'success', `Deleted webhook ${w.name}.`);
      return redirectTo(reply, '/ui/webhooks/');
    }
    flash(req, 'error', `Webhook ${w.name} could not be deleted: ${splitApiErrors(r.body, []).general.join(' ')}`);
    return redirectTo(reply, `/ui/webhooks/${id}/`);
  });

  app.get('/webhooks/:id/deliveries/', async (req, reply) => {
    if (!authed(req).viewer.isSuperuser) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may see deliveries.');
    const id = parseId((req.params as any).id);
    const w = await load(req, reply, id);
    if (!w) return reply;
    const { limit, offset } = pageParams(req.query);
    const { items, total } = await backend.tasks.list({ webhookId: id!, limit, offset });
    const body = html`${tabs(id!, 'deliveries', true)}
<table class="list" data-testid="deliveries">
<thead><tr><th>ID</th><th>Status</th><th>Event</th><th>Object</th><th>Rule</th><th>Attempts</th><th>Response</th><th>Duration</th><th>Created</th><th>Ended</th></tr></thead>
<tbody>${items.length === 0 ? html`<tr><td colspan="10" class="muted">No deliveries yet.</td></tr>` : items.map(
      (t) => html`<tr data-task="${t.id}"><td><a href="/ui/background-tasks/${urlPart(t.id)}/">${t.id}</a></td><td>${statusBadge(t.status)}</td><td>${t.event}</td><td>${t.objectType} ${t.objectId ?? ''}</td><td>${t.eventRuleName ?? ''}</td><td>${t.attemptCount}</td><td>${t.lastResponseStatus ?? '—'}</td><td>${t.lastDurationMs === null || t.lastDurationMs === undefined ? '—' : `${t.lastDurationMs} ms`}</td><td>${formatTime(t.createdAt)}</td><td>${formatTime(t.endedAt)}</td></tr>`,
    )}</tbody></table>
${pager(`/ui/webhooks/${id}/deliveries/`, total, limit, offset)}`;
    return sendPage(req, reply, { title: `Webhook ${w.name}: deliveries`, section: 'webhooks', body });
  });
}

function hasSecret(w: any): boolean {
  return Boolean(w.secret_set ?? w.has_secret ?? (typeof w.secret === 'string' && w.secret !== ''));
}

function secretState(w: any): string {
  if ('secret_set' in w || 'has_secret' in w || typeof w.secret === 'string') return hasSecret(w) ? 'set (write-only)' : 'not set';
  return 'write-only';
}

function confirmDelete(req: FastifyRequest, reply: FastifyReply, id: number, name: string, csrf: string) {
  const body = html`<p data-testid="confirm-text">Are you sure you want to delete webhook <strong>${name}</strong>?</p>
<form method="post" action="/ui/webhooks/${id}/delete">${csrfField(csrf)}<input type="hidden" name="confirm" value="true">
<div class="actions"><button type="submit" class="danger" data-testid="confirm-delete">Delete</button> <a class="button secondary" href="/ui/webhooks/${id}/">Cancel</a></div></form>`;
  return sendPage(req, reply, { title: `Delete webhook ${name}?`, section: 'webhooks', body });
}
