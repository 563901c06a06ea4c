import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { html, prettyJson, urlPart, type SafeHtml } from '../html.ts';
import { csrfField, formatTime } from '../layout.ts';
import { authed, flash, parseId, redirectTo, sendError, sendPage } from '../context.ts';
import { checkbox, checkboxGroup, errorList, formCheckbox, formList, formString, parseJsonField, select, splitApiErrors, submitToApi, textArea, textInput, type FieldErrors, type FormBody } from '../forms.ts';
import type { UiBackend } from '../backend.ts';
import { pager, pageParams } from './paging.ts';
import { EVENT_OBJECT_TYPES, EVENT_TYPES } from '../../events/rules.ts';
import { objectTypeLabel } from '../../models/registry.ts';

/** The models the event pipeline supports (its list, so a new model shows up here too). */
const OBJECT_TYPES = EVENT_OBJECT_TYPES.map((t) => ({ value: t as string, label: objectTypeLabel(t) }));

const EVENT_TYPE_OPTIONS = EVENT_TYPES.map((t) => ({ value: t as string, label: t.replace('object_', 'Object ') }));

/** Event types as the form names them ("Object created"), unknown values as they are. */
const eventTypeLabels = (types: unknown): string => (Array.isArray(types) ? types : []).map((t) => EVENT_TYPE_OPTIONS.find((o) => o.value === t)?.label ?? String(t)).join(', ');

const FIELDS = ['name', 'description', 'object_types', 'event_types', 'enabled', 'conditions', 'action_type', 'action_object_type', 'action_object_id', 'action_data'] as const;
const MAX_JSON_CHARS = 64 * 1024;

interface RuleForm {
  name: string;
  description: string;
  object_types: string[];
  event_types: string[];
  enabled: boolean;
  conditions: string;
  action_object_id: string;
  action_data: string;
}

function blankForm(): RuleForm {
  return { name: '', description: '', object_types: [], event_types: [], enabled: true, conditions: '', action_object_id: '', action_data: '' };
}

function jsonText(v: unknown): string {
  return v === null || v === undefined ? '' : prettyJson(v);
}

function formFromApi(r: any): RuleForm {
  return {
    name: String(r.name ?? ''),
    description: String(r.description ?? ''),
    object_types: Array.isArray(r.object_types) ? r.object_types.map(String) : [],
    event_types: Array.isArray(r.event_types) ? r.event_types.map(String) : [],
    enabled: r.enabled !== false,
    conditions: jsonText(r.conditions),
    action_object_id: r.action_object_id === null || r.action_object_id === undefined ? '' : String(r.action_object_id),
    action_data: jsonText(r.action_data),
  };
}

function formFromBody(body: FormBody): RuleForm {
  return {
    name: formString(body, 'name'),
    description: formString(body, 'description'),
    object_types: formList(body, 'object_types'),
    event_types: formList(body, 'event_types'),
    enabled: formCheckbox(body, 'enabled'),
    conditions: formString(body, 'conditions'),
    action_object_id: formString(body, 'action_object_id'),
    action_data: formString(body, 'action_data'),
  };
}

/** Local checks (JSON syntax, shapes the API cannot see in a form); the condition language itself is checked by the API. */
function payloadOf(f: RuleForm): { payload: Record<string, unknown>; errors: FieldErrors } {
  const errors: FieldErrors = {};
  for (const field of ['conditions', 'action_data'] as const) {
    if (f[field].length > MAX_JSON_CHARS) errors[field] = [`Keep this under ${MAX_JSON_CHARS} characters.`];
  }
  const conditions = errors.conditions ? undefined : parseJsonField(f.conditions, 'conditions', errors);
  const actionData = errors.action_data ? undefined : parseJsonField(f.action_data, 'action_data', errors);
  if (actionData !== undefined && actionData !== null && (typeof actionData !== 'object' || Array.isArray(actionData))) {
    errors.action_data = ['Action data must be a JSON object.'];
  }
  let webhookId: number | null = null;
  if (f.action_object_id === '') errors.action_object_id = ['Select a webhook.'];
  else if (!/^\d{1,12}$/.test(f.action_object_id)) errors.action_object_id = ['Select a valid webhook.'];
  else webhookId = Number(f.action_object_id);
  return {
    payload: {
      name: f.name,
      description: f.description,
      object_types: f.object_types,
      event_types: f.event_types,
      enabled: f.enabled,
      conditions,
      action_type: 'webhook',
      action_object_type: 'extras.webhook',
      action_object_id: webhookId,
      action_data: actionData,
    },
    errors,
  };
}

function ruleForm(o: { action: string; csrf: string; form: RuleForm; errors: FieldErrors; general: string[]; webhooks: { value: string; label: string }[]; editing: boolean; cancel: string }): SafeHtml {
  const f = o.form;
  const e = o.errors;
  const known = new Set(OBJECT_TYPES.map((t) => t.value));
  // Keep types the rule already has even if this UI does not list them.
  const objectTypes = [...OBJECT_TYPES, ...f.object_types.filter((t) => !known.has(t)).map((t) => ({ value: t, label: t }))];
  return html`<form method="post" action="${o.action}" class="edit-form" novalidate>
${csrfField(o.csrf)}
${o.general.length ? html`<div class="flash flash-error" role="alert" data-testid="form-errors">${errorList(o.general)}</div>` : ''}
${textInput({ name: 'name', label: 'Name', value: f.name, errors: e, required: true, maxLength: 150, help: 'Rules are evaluated in name order.' })}
${textInput({ name: 'description', label: 'Description', value: f.description, errors: e, maxLength: 200 })}
${select({ name: 'object_types', label: 'Object types', value: f.object_types, errors: e, options: objectTypes, multiple: true, required: true })}
${checkboxGroup({ name: 'event_types', label: 'Event types', values: f.event_types, errors: e, options: EVENT_TYPE_OPTIONS, required: true })}
${checkbox({ name: 'enabled', label: 'Enabled', checked: f.enabled, errors: e })}
${textArea({ name: 'conditions', label: 'Conditions', value: f.conditions, errors: e, rows: 6, help: 'JSON, NetBox\'s conditions language, e.g. {"and": [{"attr": "status.value", "value": "active"}]}. Blank: always matches.' })}
${select({ name: 'action_object_id', label: 'Webhook', value: f.action_object_id, errors: e, options: o.webhooks, blank: '— select a webhook —', required: true })}
${textArea({ name: 'action_data', label: 'Action data', value: f.action_data, errors: e, rows: 4, help: 'JSON object merged into the payload\'s data (object values win). Blank: none.' })}
${errorList([...(e.action_type ?? []), ...(e.action_object_type ?? [])])}
<div class="actions"><button type="submit">${o.editing ? 'Save' : 'Create'}</button><a class="button secondary" href="${o.cancel}">Cancel</a></div>
</form>`;
}

export function registerEventRuleRoutes(app: FastifyInstance, backend: UiBackend): void {
  async function webhookOptions(token: string): Promise<{ value: string; label: string }[]> {
    const r = await backend.api(token, 'GET', '/api/extras/webhooks/?limit=1000');
    const rows = r.status === 200 && Array.isArray(r.body?.results) ? r.body.results : [];
    return rows.map((w: any) => ({ value: String(w.id), label: String(w.name) }));
  }

  async function load(req: FastifyRequest, reply: FastifyReply, id: number | null): Promise<any | null> {
    if (id !== null) {
      const r = await backend.api(authed(req).apiToken, 'GET', `/api/extras/event-rules/${id}/`);
      if (r.status === 200) return r.body;
      if (r.status === 403) {
        sendError(req, reply, 403, 'Forbidden', 'You do not have permission to view event rules.');
        return null;
      }
    }
    sendError(req, reply, 404, 'Not found', 'No event rule matches the given query.');
    return null;
  }

  app.get('/event-rules/', async (req, reply) => {
    const { viewer, apiToken } = authed(req);
    const { limit, offset } = pageParams(req.query);
    const r = await backend.api(apiToken, 'GET', `/api/extras/event-rules/?limit=${limit}&offset=${offset}`);
    if (r.status !== 200) return sendError(req, reply, r.status === 403 ? 403 : 502, 'Event rules', 'The event rule list could not be loaded.');
    const rows = (r.body.results ?? []) as any[];
    const body = html`${viewer.isAdmin ? html`<div class="actions"><a class="button" href="/ui/event-rules/add" data-testid="add-rule">Add an event rule</a></div>` : ''}
<table class="list" data-testid="event-rules">
<thead><tr><th>Name</th><th>Enabled</th><th>Object types</th><th>Event types</th><th>Action</th><th>Description</th></tr></thead>
<tbody>${rows.length === 0 ? html`<tr><td colspan="6" class="muted">No event rules yet.</td></tr>` : rows.map(
      (rule) => html`<tr><td><a href="/ui/event-rules/${urlPart(rule.id)}/">${rule.name}</a></td><td>${rule.enabled ? 'yes' : 'no'}</td><td>${(rule.object_types ?? []).map(objectTypeLabel).join(', ')}</td><td>${eventTypeLabels(rule.event_types)}</td><td>${actionLabel(rule)}</td><td>${rule.description}</td></tr>`,
    )}</tbody></table>
${pager('/ui/event-rules/', r.body.count ?? rows.length, limit, offset)}`;
    return sendPage(req, reply, { title: 'Event rules', section: 'event-rules', body });
  });

  app.get('/event-rules/add', async (req, reply) => {
    const { viewer, session, apiToken } = authed(req);
    if (!viewer.isAdmin) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may create event rules.');
    const webhooks = await webhookOptions(apiToken);
    return sendPage(req, reply, { title: 'Add an event rule', section: 'event-rules', body: ruleForm({ action: '/ui/event-rules/add', csrf: session.csrfToken, form: blankForm(), errors: {}, general: [], webhooks, editing: false, cancel: '/ui/event-rules/' }) });
  });

  app.post('/event-rules/add', async (req, reply) => {
    const { viewer, session, apiToken } = authed(req);
    if (!viewer.isAdmin) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may create event rules.');
    const form = formFromBody((req.body ?? {}) as FormBody);
    const { saved, errors, general } = await submitToApi(backend, apiToken, 'POST', '/api/extras/event-rules/', payloadOf(form), FIELDS);
    if (saved) {
      flash(req, 'success', `Created event rule ${saved.name}.`);
      return redirectTo(reply, `/ui/event-rules/${urlPart(saved.id)}/`);
    }
    const webhooks = await webhookOptions(apiToken);
    return sendPage(req, reply, { title: 'Add an event rule', section: 'event-rules', body: ruleForm({ action: '/ui/event-rules/add', csrf: session.csrfToken, form, errors, general, webhooks, editing: false, cancel: '/ui/event-rules/' }) }, 400);
  });

  app.get('/event-rules/:id/', async (req, reply) => {
    const { viewer, session } = authed(req);
    const id = parseId((req.params as any).id);
    const rule = await load(req, reply, id);
    if (!rule) return reply;
    const row = (label: string, value: SafeHtml | string) => html`<tr><th>${label}</th><td>${value === '' ? '—' : value}</td></tr>`;
    const body = html`${viewer.isAdmin ? html`<div class="actions"><a class="button" href="/ui/event-rules/${id!}/edit" data-testid="edit-rule">Edit</a>
<a class="button danger" href="/ui/event-rules/${id!}/delete" data-testid="delete">Delete</a></div>` : ''}
<table class="kv" data-testid="rule-detail">
${row('Name', String(rule.name ?? ''))}${row('Description', String(rule.description ?? ''))}${row('Enabled', rule.enabled ? 'yes' : 'no')}
${row('Object types', (rule.object_types ?? []).map(objectTypeLabel).join(', '))}${row('Event types', eventTypeLabels(rule.event_types))}
${row('Conditions', html`<pre>${rule.conditions === null || rule.conditions === undefined ? '—' : prettyJson(rule.conditions)}</pre>`)}
${row('Action', actionLabel(rule))}
${row('Action data', html`<pre>${rule.action_data === null || rule.action_data === undefined ? '—' : prettyJson(rule.action_data)}</pre>`)}
${row('Created', formatTime(rule.created))}${row('Last updated', formatTime(rule.last_updated))}
</table>`;
    return sendPage(req, reply, { title: `Event rule ${rule.name}`, section: 'event-rules', body });
  });

  app.get('/event-rules/:id/edit', async (req, reply) => {
    const { viewer, session, apiToken } = authed(req);
    if (!viewer.isAdmin) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may change event rules.');
    const id = parseId((req.params as any).id);
    const rule = await load(req, reply, id);
    if (!rule) return reply;
    const webhooks = await webhookOptions(apiToken);
    return sendPage(req, reply, { title: `Edit event rule ${rule.name}`, section: 'event-rules', body: ruleForm({ action: `/ui/event-rules/${id}/edit`, csrf: session.csrfToken, form: formFromApi(rule), errors: {}, general: [], webhooks, editing: true, cancel: `/ui/event-rules/${id}/` }) });
  });

  app.post('/event-rules/:id/edit', async (req, reply) => {
    const { viewer, session, apiToken } = authed(req);
    if (!viewer.isAdmin) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may change event rules.');
    const id = parseId((req.params as any).id);
    const rule = await load(req, reply, id);
    if (!rule) return reply;
    const form = formFromBody((req.body ?? {}) as FormBody);
    const { saved, errors, general } = await submitToApi(backend, apiToken, 'PATCH', `/api/extras/event-rules/${id}/`, payloadOf(form), FIELDS);
    if (saved) {
      flash(req, 'success', `Saved event rule ${saved.name}.`);
      return redirectTo(reply, `/ui/event-rules/${id}/`);
    }
    const webhooks = await webhookOptions(apiToken);
    return sendPage(req, reply, { title: `Edit event rule ${rule.name}`, section: 'event-rules', body: ruleForm({ action: `/ui/event-rules/${id}/edit`, csrf: session.csrfToken, form, errors, general, webhooks, editing: true, cancel: `/ui/event-rules/${id}/` }) }, 400);
  });

  app.get('/event-rules/:id/delete', async (req, reply) => {
    const { viewer, session } = authed(req);
    if (!viewer.isAdmin) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may delete event rules.');
    const id = parseId((req.params as any).id);
    const rule = await load(req, reply, id);
    if (!rule) return reply;
    return confirmDelete(req, reply, id!, rule.name, session.csrfToken);
  });

  app.post('/event-rules/:id/delete', async (req, reply) => {
    const { viewer, apiToken } = authed(req);
    if (!viewer.isAdmin) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may delete event rules.');
    const id = parseId((req.params as any).id);
    const rule = await load(req, reply, id);
    if (!rule) return reply;
    // Only the confirmation page's form deletes (NetBox asks first).
    if (formString((req.body ?? {}) as FormBody, 'confirm') !== 'true') return confirmDelete(req, reply, id!, rule.name, authed(req).session.csrfToken);
    const r = await backend.api(apiToken, 'DELETE', `/api/extras/event-rules/${id}/`);
    if (r.status === 204 || r.status === 200) {
      flash(req, 'success', `Deleted event rule ${rule.name}.`);
      return redirectTo(reply, '/ui/event-rules/');
    }
    flash(req, 'error', `Event rule ${rule.name} could not be deleted: ${splitApiErrors(r.body, []).general.join(' ')}`);
    return redirectTo(reply, `/ui/event-rules/${id}/`);
  });
}

function actionLabel(rule: any): SafeHtml {
  const target = rule.action_object;
  const name = target && typeof target === 'object' ? (target.name ?? target.display) : undefined;
  // The API gives the action type as a choice ({value, label}); older rows may hold a plain value.
  const t = rule.action_type;
  const type = t && typeof t === 'object' ? String(t.label ?? t.value ?? 'Webhook') : String(t ?? 'webhook');
  if (rule.action_object_id === null || rule.action_object_id === undefined) return html`${type}`;
  return html`${type}: <a href="/ui/webhooks/${urlPart(rule.action_object_id)}/">${name ?? `#${rule.action_object_id}`}</a>`;
}

function confirmDelete(req: FastifyRequest, reply: FastifyReply, id: number, name: string, csrf: string) {
  const body = html`<p data-testid="confirm-text">Are you sure you want to delete event rule <strong>${name}</strong>?</p>
<form method="post" action="/ui/event-rules/${id}/delete">${csrfField(csrf)}<input type="hidden" name="confirm" value="true">
<div class="actions"><button type="submit" class="danger" data-testid="confirm-delete">Delete</button> <a class="button secondary" href="/ui/event-rules/${id}/">Cancel</a></div></form>`;
  return sendPage(req, reply, { title: `Delete event rule ${name}?`, section: 'event-rules', body });
}
