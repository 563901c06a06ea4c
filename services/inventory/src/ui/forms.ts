import { html, type SafeHtml } from './html.ts';
import type { UiBackend } from './backend.ts';

/** Field name → messages, as NetBox's REST API reports them (`{"field": ["message"]}`). */
export type FieldErrors = Record<string, string[]>;

/** A form body as @fastify/formbody parses it: repeated keys become arrays. */
export type FormBody = Record<string, string | string[] | undefined>;

export function formString(body: FormBody, name: string): string {
  const v = body[name];
  if (Array.isArray(v)) return v[v.length - 1] ?? '';
  return typeof v === 'string' ? v : '';
}

export function formList(body: FormBody, name: string): string[] {
  const v = body[name];
  if (Array.isArray(v)) return v;
  return typeof v === 'string' ? [v] : [];
}

export function formCheckbox(body: FormBody, name: string): boolean {
  const v = formString(body, name);
  return v === 'on' || v === 'true' || v === '1';
}

/**
 * Splits a REST 400 body into per-field messages (shown next to inputs) and
 * the rest (shown above the form). Anything unexpected becomes a general message.
 */
export function splitApiErrors(body: unknown, knownFields: readonly string[]): { fields: FieldErrors; general: string[] } {
  const fields: FieldErrors = {};
  const general: string[] = [];
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
      const messages = flattenMessages(value);
      if (knownFields.includes(key)) fields[key] = messages;
      else if (key === 'non_field_errors' || key === 'detail') general.push(...messages);
      else general.push(...messages.map((m) => `${key}: ${m}`));
    }
  } else if (typeof body === 'string' && body) {
    general.push(body.slice(0, 500));
  }
  if (Object.keys(fields).length === 0 && general.length === 0) general.push('The request was rejected.');
  return { fields, general };
}

/**
 * Sends a form that passed the page's own checks to the REST API. Answers the
 * saved object, or the form's errors with the API's rejection merged in.
 */
export async function submitToApi(
  backend: UiBackend,
  token: string,
  method: 'POST' | 'PATCH',
  url: string,
  checked: { payload: unknown; errors: FieldErrors },
  knownFields: readonly string[],
): Promise<{ saved?: any; errors: FieldErrors; general: string[] }> {
  const { payload, errors } = checked;
  if (Object.keys(errors).length > 0) return { errors, general: [] };
  const r = await backend.api(token, method, url, payload);
  if (r.status === 200 || (method === 'POST' && r.status === 201)) return { saved: r.body, errors, general: [] };
  const split = splitApiErrors(r.body, knownFields);
  return { errors: { ...errors, ...split.fields }, general: split.general };
}

function flattenMessages(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(flattenMessages);
  if (value && typeof value === 'object') {
    return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => flattenMessages(v).map((m) => `${k}: ${m}`));
  }
  return [String(value)];
}

export function errorList(messages: string[] | undefined): SafeHtml {
  if (!messages || messages.length === 0) return html``;
  return html`<ul class="errors">${messages.map((m) => html`<li>${m}</li>`)}</ul>`;
}

interface FieldOptions {
  name: string;
  label: string;
  errors: FieldErrors;
  help?: string;
  required?: boolean;
}

function wrap(o: FieldOptions, control: SafeHtml): SafeHtml {
  const errs = o.errors[o.name];
  return html`<div class="field${errs?.length ? ' has-error' : ''}" data-field="${o.name}">
<label for="f-${o.name}">${o.label}${o.required ? ' *' : ''}</label>
${control}
${o.help ? html`<div class="help">${o.help}</div>` : ''}
${errorList(errs)}
</div>`;
}

export function textInput(o: FieldOptions & { value: string; type?: 'text' | 'password' | 'number'; maxLength?: number; placeholder?: string }): SafeHtml {
  return wrap(
    o,
    html`<input id="f-${o.name}" name="${o.name}" type="${o.type ?? 'text'}" value="${o.value}"${o.maxLength ? html` maxlength="${o.maxLength}"` : ''}${o.placeholder ? html` placeholder="${o.placeholder}"` : ''}${o.required ? html` required` : ''}${o.type === 'password' ? html` autocomplete="new-password"` : ''}>`,
  );
}

export function textArea(o: FieldOptions & { value: string; rows?: number }): SafeHtml {
  return wrap(o, html`<textarea id="f-${o.name}" name="${o.name}" rows="${o.rows ?? 5}" spellcheck="false">${o.value}</textarea>`);
}

export function checkbox(o: FieldOptions & { checked: boolean }): SafeHtml {
  return wrap(o, html`<input id="f-${o.name}" name="${o.name}" type="checkbox"${o.checked ? html` checked` : ''}>`);
}

export function select(o: FieldOptions & { value: string | string[]; options: { value: string; label: string }[]; multiple?: boolean; blank?: string }): SafeHtml {
  const selected = new Set(Array.isArray(o.value) ? o.value : [o.value]);
  return wrap(
    o,
    html`<select id="f-${o.name}" name="${o.name}"${o.multiple ? html` multiple size="${Math.min(10, Math.max(3, o.options.length))}"` : ''}>
${o.blank !== undefined ? html`<option value="">${o.blank}</option>` : ''}
${o.options.map((opt) => html`<option value="${opt.value}"${selected.has(opt.value) ? html` selected` : ''}>${opt.label}</option>`)}
</select>`,
  );
}

export function checkboxGroup(o: FieldOptions & { values: string[]; options: { value: string; label: string }[] }): SafeHtml {
  const chosen = new Set(o.values);
  const errs = o.errors[o.name];
  return html`<div class="field${errs?.length ? ' has-error' : ''}" data-field="${o.name}">
<label>${o.label}${o.required ? ' *' : ''}</label>
${o.options.map((opt) => html`<label class="inline-check"><input type="checkbox" name="${o.name}" value="${opt.value}"${chosen.has(opt.value) ? html` checked` : ''}> ${opt.label}</label> `)}
${o.help ? html`<div class="help">${o.help}</div>` : ''}
${errorList(errs)}
</div>`;
}

/** Parses a JSON textarea: blank → null; syntax errors become a field message. */
export function parseJsonField(raw: string, name: string, errors: FieldErrors): unknown {
  const text = raw.trim();
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch (err) {
    errors[name] = [`Invalid JSON: ${err instanceof Error ? err.message : String(err)}`];
    return undefined;
  }
}
