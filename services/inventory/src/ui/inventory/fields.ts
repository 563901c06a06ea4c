import { model, MODELS } from '../../models/registry.ts';
import { objectTypeLabel } from '../../models/lookup.ts';
import type { FieldDef, ModelDef } from '../../models/types.ts';
import { checkbox, errorList, formCheckbox, formList, formString, select, textArea, textInput, type FieldErrors, type FormBody } from '../forms.ts';
import { html, type SafeHtml } from '../html.ts';
import { labelOf } from './render.ts';

/** Options of a related-object picker; past this many the form asks for the id instead. */
export const MAX_OPTIONS = 500;

export type Options = Map<string, Array<{ value: string; label: string }> | null>;

/** A field holding a list of object types (a custom field's `object_types`): a picker of labelled types, not JSON. */
const isObjectTypeList = (f: FieldDef) => f.kind === 'json' && f.name === 'object_types';

/** The object types a custom field may apply to (the models with tags and custom fields), by label. */
let objectTypeOptions: Array<{ value: string; label: string }> | undefined;
function objectTypeChoices(): Array<{ value: string; label: string }> {
  objectTypeOptions ??= MODELS.filter((m) => m.taggable)
    .map((m) => ({ value: m.objectType, label: objectTypeLabel(m.objectType) }))
    .sort((a, b) => a.label.localeCompare(b.label));
  return objectTypeOptions;
}

/** The fields a form edits: every writable field of the model; `tags` where the model has them. */
export function editableFields(m: ModelDef): FieldDef[] {
  return m.fields;
}

/** The model a related-object field points at (fk and m2m fields; tags). */
export function targetOf(f: FieldDef): ModelDef | undefined {
  return f.kind === 'fk' || f.kind === 'm2m' ? model(f.fk!) : undefined;
}

/** A form's text for a value of the REST representation (ids of related objects, choice values, JSON). */
export function formValue(f: FieldDef, v: unknown): string | string[] {
  if (v === null || v === undefined) return f.kind === 'm2m' ? [] : '';
  if (f.kind === 'm2m') return Array.isArray(v) ? v.map((x) => String(typeof x === 'object' && x ? (x as any).id : x)) : [];
  if (f.kind === 'fk') return String(typeof v === 'object' ? (v as any).id ?? '' : v);
  if (f.kind === 'choice' || f.kind === 'objecttype') return String(typeof v === 'object' ? (v as any).value ?? '' : v);
  if (f.kind === 'boolean') return v ? 'on' : '';
  if (isObjectTypeList(f)) return Array.isArray(v) ? v.map(String) : [];
  if (f.kind === 'json') return f.name === 'ports' && Array.isArray(v) ? v.join(', ') : JSON.stringify(v, null, 2);
  return String(v);
}

/** One form control for a field, with its current text and errors. */
export function control(f: FieldDef, value: string | string[], errors: FieldErrors, options: Options, prefix = ''): SafeHtml {
  const name = prefix + f.name;
  const o = { name, label: f.label ?? labelOf(f.name), errors, required: !!f.required && !prefix };
  const one = Array.isArray(value) ? value[0] ?? '' : value;
  switch (f.kind) {
    case 'boolean':
      return checkbox({ ...o, checked: one === 'on' || one === 'true' });
    case 'choice':
    case 'objecttype':
      return select({ ...o, value: one, options: f.choices!.map((c) => ({ value: c.value, label: c.label })), blank: '———' });
    case 'fk':
    case 'm2m': {
      const opts = options.get(f.name);
      if (!opts) return textInput({ ...o, value: Array.isArray(value) ? value.join(', ') : one, help: `${f.kind === 'm2m' ? 'IDs, comma-separated' : 'ID'} of the ${targetOf(f)!.verboseName}` });
      return select({ ...o, value, options: opts, multiple: f.kind === 'm2m', blank: f.kind === 'fk' ? '———' : undefined });
    }
    case 'text':
      return textArea({ ...o, value: one, rows: 4 });
    case 'json':
      if (isObjectTypeList(f)) {
        const chosen = Array.isArray(value) ? value : value ? [value] : [];
        const known = new Set(objectTypeChoices().map((c) => c.value));
        return select({ ...o, value: chosen, options: [...objectTypeChoices(), ...chosen.filter((t) => !known.has(t)).map((t) => ({ value: t, label: t }))], multiple: true });
      }
      return f.name === 'ports' ? textInput({ ...o, value: one, help: 'Port numbers, comma-separated' }) : textArea({ ...o, value: one, rows: 4, help: 'JSON' });
    default: {
      // A generic reference's object type (a contact assignment's, a journal entry's): a picker when the form offers choices.
      const opts = options.get(f.name);
      if (opts) {
        const known = opts.some((c) => c.value === one);
        return select({ ...o, value: one, options: known || !one ? opts : [...opts, { value: one, label: one }], blank: '———' });
      }
      return textInput({ ...o, value: one, maxLength: f.maxLength });
    }
  }
}

const NUMBER = /^-?\d+(\.\d+)?$/;

/**
 * A REST body from a submitted form: only the fields given (bulk edit leaves blanks alone), converted to the
 * API's types. What cannot be converted is passed as typed, so the API's own message reaches the user.
 */
export function bodyFromForm(m: ModelDef, form: FormBody, opts: { prefix?: string; partial?: boolean } = {}): { body: Record<string, unknown>; errors: FieldErrors } {
  const body: Record<string, unknown> = {};
  const errors: FieldErrors = {};
  const prefix = opts.prefix ?? '';
  for (const f of editableFields(m)) {
    const key = prefix + f.name;
    const setNull = opts.partial && formCheckbox(form, `_nullify_${f.name}`);
    if (setNull) {
      body[f.name] = f.kind === 'm2m' ? [] : null;
      continue;
    }
    if (f.kind === 'boolean') {
      if (opts.partial) {
        const v = formString(form, key);
        if (v === 'true' || v === 'false') body[f.name] = v === 'true';
      } else body[f.name] = formCheckbox(form, key);
      continue;
    }
    if (isObjectTypeList(f)) {
      const chosen = formList(form, key).map((v) => v.trim()).filter(Boolean);
      if (!chosen.length && opts.partial) continue;
      body[f.name] = chosen;
      continue;
    }
    if (f.kind === 'm2m') {
      const raw = formList(form, key).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
      if (!raw.length && opts.partial) continue;
      body[f.name] = raw.map((v) => (/^\d+$/.test(v) ? Number(v) : v));
      continue;
    }
    const text = formString(form, key);
    if (text.trim() === '') {
      if (opts.partial) continue;
      if (f.nullable) body[f.name] = null;
      else if (f.blank) body[f.name] = '';
      continue;
    }
    switch (f.kind) {
      case 'integer':
      case 'decimal':
        body[f.name] = NUMBER.test(text.trim()) ? Number(text.trim()) : text;
        break;
      case 'fk':
        body[f.name] = /^\d+$/.test(text.trim()) ? Number(text.trim()) : text;
        break;
      case 'json':
        if (f.name === 'ports') body[f.name] = text.split(',').map((p) => p.trim()).filter(Boolean).map((p) => (/^\d+$/.test(p) ? Number(p) : p));
        else {
          try {
            body[f.name] = JSON.parse(text);
          } catch (err) {
            errors[f.name] = [`Invalid JSON: ${err instanceof Error ? err.message : String(err)}`];
          }
        }
        break;
      default:
        body[f.name] = text;
    }
  }
  return { body, errors };
}

/** The attribute a CSV import names a related object by, as NetBox's import forms (`to_field_name`). */
const IMPORT_ATTRIBUTE: Record<string, string> = { devicetype: 'model', ipaddress: 'address', prefix: 'prefix', vlan: 'vid' };

/** One CSV record as a REST body: related objects by id or by name, tags by slug, lists comma-separated. */
export function bodyFromCsv(m: ModelDef, header: string[], record: string[]): { body: Record<string, unknown>; errors: string[] } {
  const body: Record<string, unknown> = {};
  const errors: string[] = [];
  header.forEach((name, i) => {
    const raw = record[i]!;
    const text = raw.trim();
    if (text === '') return;
    if (name === 'tags' && m.taggable) {
      body.tags = text.split(',').map((s) => s.trim()).filter(Boolean).map((slug) => ({ slug }));
      return;
    }
    if (name === 'id') {
      body.id = /^\d+$/.test(text) ? Number(text) : text;
      return;
    }
    const f = m.fields.find((x) => x.name === name);
    if (!f) {
      errors.push(`${name}: unknown field`);
      return;
    }
    const ref = (v: string) => {
      if (/^\d+$/.test(v)) return Number(v);
      const target = model(f.fk!);
      const attr = IMPORT_ATTRIBUTE[target.key] ?? (target.fields.some((x) => x.name === 'name') ? 'name' : 'slug');
      return { [attr]: v };
    };
    switch (f.kind) {
      case 'boolean': {
        const l = text.toLowerCase();
        body[name] = ['true', 'yes', '1', 'on'].includes(l) ? true : ['false', 'no', '0', 'off'].includes(l) ? false : text;
        break;
      }
      case 'integer':
      case 'decimal':
        body[name] = NUMBER.test(text) ? Number(text) : text;
        break;
      case 'fk':
        body[name] = ref(text);
        break;
      case 'm2m':
        body[name] = text.split(',').map((s) => s.trim()).filter(Boolean).map(ref);
        break;
      case 'json':
        // NetBox's import takes object types comma-separated (`dcim.device,dcim.site`).
        if (name === 'object_types' && !text.startsWith('[')) body[name] = text.split(',').map((s) => s.trim()).filter(Boolean);
        else if (name === 'ports') body[name] = text.split(',').map((p) => p.trim()).filter(Boolean).map((p) => (/^\d+$/.test(p) ? Number(p) : p));
        else {
          try {
            body[name] = JSON.parse(text);
          } catch {
            errors.push(`${name}: invalid JSON`);
          }
        }
        break;
      default:
        body[name] = raw;
    }
  });
  return { body, errors };
}

/** Non-field errors and errors of fields the form does not show, above a form. */
export function generalErrors(errors: FieldErrors, shown: string[]): SafeHtml {
  const rest = Object.entries(errors).filter(([k]) => !shown.includes(k));
  if (!rest.length) return html``;
  return errorList(rest.flatMap(([k, v]) => v.map((msg) => (k === 'non_field_errors' || k === '__all__' ? msg : `${labelOf(k)}: ${msg}`))));
}
