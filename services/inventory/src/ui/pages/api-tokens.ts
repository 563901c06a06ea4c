import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { UiBackend } from '../backend.ts';
import { authed, flash, parseId, redirectTo, sendError, sendPage } from '../context.ts';
import { checkbox, errorList, formCheckbox, formString, textInput, type FieldErrors, type FormBody } from '../forms.ts';
import { html } from '../html.ts';
import { csrfField, formatTime } from '../layout.ts';

/**
 * NetBox's "API Tokens" pages of the signed-in user (`/user/api-tokens/`): the user's tokens (key shown by its last four
 * characters: only hashes are stored), a form to create one (write enabled, expiry, description; the key is shown once,
 * right after), and revoking one with confirmation. Any signed-in user manages their own tokens, as in NetBox; creating
 * and revoking need the session's token to be write-enabled (a read-only token must not mint a writing one).
 */

const HIDE = { schema: { hide: true } };
const BASE = '/user/api-tokens/';

export function registerApiTokenPages(app: FastifyInstance, backend: UiBackend): void {
  const tokens = backend.ownTokens;
  if (!tokens) return;
  app.get('/api-tokens/', HIDE, async (req, reply) => {
    const r = await tokens.list(authed(req).apiToken);
    if (!r) return redirectTo(reply, '/ui/login');
    const body = html`<p><a class="button" href="${BASE}add/" data-testid="add-token">Add a token</a></p>
<table data-testid="tokens"><thead><tr><th>Key</th><th>Write enabled</th><th>Created</th><th>Expires</th><th>Last used</th><th>Description</th><th></th></tr></thead><tbody>
${r.tokens.map(
  (t) => html`<tr data-token="${t.id}"><td><code>${t.display}</code>${t.id === r.currentId ? html` <span class="muted">(this session)</span>` : ''}</td><td>${t.writeEnabled ? 'Yes' : 'No'}</td><td>${formatTime(t.created)}</td><td>${t.expires ? formatTime(t.expires) : 'Never'}</td><td>${t.lastUsed ? formatTime(t.lastUsed) : 'Never'}</td><td>${t.description}</td><td><a href="${BASE}${t.id}/delete/" data-testid="revoke">Revoke</a></td></tr>`,
)}
</tbody></table>${r.tokens.length ? '' : html`<p class="muted">No tokens.</p>`}`;
    return sendPage(req, reply, { title: 'API Tokens', section: 'tokens', body });
  });

  const form = (req: FastifyRequest, reply: FastifyReply, values: FormBody, errors: FieldErrors, status = 200) => {
    const { session } = authed(req);
    const body = html`${errorList(errors.__all__)}
<form method="post" action="${BASE}add/" class="edit-form" data-testid="token-form">${csrfField(session.csrfToken)}
${checkbox({ name: 'write_enabled', label: 'Write enabled', errors, checked: formString(values, '_submitted') ? formCheckbox(values, 'write_enabled') : true, help: 'Permit create/update/delete operations using this key' })}
${textInput({ name: 'expires', label: 'Expires', errors, value: formString(values, 'expires'), placeholder: 'YYYY-MM-DD hh:mm (UTC)', help: 'Leave empty for a token that does not expire' })}
${textInput({ name: 'description', label: 'Description', errors, value: formString(values, 'description'), maxLength: 200 })}
<input type="hidden" name="_submitted" value="1">
<div class="actions"><button type="submit" data-testid="create-token">Create</button> <a class="button secondary" href="${BASE}">Cancel</a></div></form>`;
    return sendPage(req, reply, { title: 'Add a token', section: 'tokens', body }, status);
  };

  app.get('/api-tokens/add/', HIDE, (req, reply) => form(req, reply, {}, {}));
  app.post('/api-tokens/add/', HIDE, async (req, reply) => {
    const values = (req.body ?? {}) as FormBody;
    const errors: FieldErrors = {};
    const description = formString(values, 'description').trim();
    if (description.length > 200) errors.description = [`Ensure this value has at most 200 characters (it has ${description.length}).`];
    const raw = formString(values, 'expires').trim();
    let expires: Date | null = null;
    if (raw) {
      const t = raw.length <= 40 && /^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2})?)?(Z|[+-]\d{2}:?\d{2})?$/.test(raw) ? new Date(/Z|[+-]\d{2}:?\d{2}$/.test(raw) ? raw.replace(' ', 'T') : `${raw.replace(' ', 'T')}${raw.length === 10 ? 'T00:00' : ''}Z`) : new Date(NaN);
      if (Number.isNaN(t.getTime())) errors.expires = ['Enter a valid date/time.'];
      else if (t.getTime() <= Date.now()) errors.expires = ['The expiry must be in the future.'];
      else expires = t;
    }
    if (Object.keys(errors).length) return form(req, reply, values, errors, 400);
    const r = await tokens.create(authed(req).apiToken, { writeEnabled: formCheckbox(values, 'write_enabled'), description, expires });
    if ('refused' in r) return sendError(req, reply, 403, 'Forbidden', r.refused);
    const body = html`<p role="status">Your new token's key is shown <strong>only now</strong>; copy it before leaving this page.</p>
<p><code data-testid="new-key">${r.key}</code></p>
<p>${r.token.writeEnabled ? 'Write enabled' : 'Read only'}${r.token.expires ? html`, expires ${formatTime(r.token.expires)}` : ''}${r.token.description ? html` · ${r.token.description}` : ''}</p>
<p><a class="button" href="${BASE}">Back to your tokens</a></p>`;
    return sendPage(req, reply, { title: 'Token created', section: 'tokens', body }, 201);
  });

  const idOf = (req: FastifyRequest) => parseId((req.params as Record<string, string>).id);
  app.get('/api-tokens/:id/delete/', HIDE, async (req, reply) => {
    const id = idOf(req);
    const r = await tokens.list(authed(req).apiToken);
    const t = r?.tokens.find((x) => x.id === id);
    if (!r || !t) return sendError(req, reply, 404, 'Not found', 'You have no token with this ID.');
    const { session } = authed(req);
    const body = html`<p data-testid="confirm-text">Are you sure you want to revoke token <code>${t.display}</code>${t.description ? html` (${t.description})` : ''}?${t.id === r.currentId ? html` <strong>This session uses it: you will be logged out.</strong>` : ''}</p>
<form method="post" action="${BASE}${t.id}/delete/">${csrfField(session.csrfToken)}<input type="hidden" name="confirm" value="true">
<div class="actions"><button type="submit" class="danger" data-testid="confirm-delete">Revoke</button> <a class="button secondary" href="${BASE}">Cancel</a></div></form>`;
    return sendPage(req, reply, { title: 'Revoke token?', section: 'tokens', body });
  });
  app.post('/api-tokens/:id/delete/', HIDE, async (req, reply) => {
    const id = idOf(req);
    if (formString((req.body ?? {}) as FormBody, 'confirm') !== 'true') return redirectTo(reply, `${BASE}${id ?? 0}/delete/`);
    const r = id === null ? 'not-found' : await tokens.revoke(authed(req).apiToken, id);
    if (r === 'not-found') return sendError(req, reply, 404, 'Not found', 'You have no token with this ID.');
    if (typeof r === 'object') return sendError(req, reply, 403, 'Forbidden', r.refused);
    flash(req, 'success', 'Token revoked');
    return redirectTo(reply, BASE);
  });
}
