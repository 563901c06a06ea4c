import { formList, formString, select, textArea, textInput, type FieldErrors, type FormBody } from '../forms.ts';
import { html, type SafeHtml } from '../html.ts';

/**
 * The custom fields of an object's add and edit forms, as NetBox's forms add them after the model's own fields: one
 * control per field definition of the object type that the UI may edit (`ui_editable` yes), named `cf_<name>`, its
 * value sent as the API's `custom_fields` (typed by the field's type; blank is null), the API's message shown at the
 * field it names. Definitions and choice sets are read through the REST API with the user's token.
 */

type Get = (url: string) => Promise<{ status: number; body: any }>;

export interface FormCustomField {
  name: string;
  label: string;
  type: string;
  required: boolean;
  description: string;
  /** A selection field's choices (its set's extra choices); none for a set of base choices, typed as values instead. */
  choices?: Array<{ value: string; label: string }>;
  /** `ui_editable`: yes (in forms), no (shown, not edited), hidden. */
  editable: string;
  /** `ui_visible`: always, if-set, hidden (on the object's page). */
  visible: string;
  /** `is_cloneable`: a clone of an object starts with its value. */
  cloneable?: boolean;
}

const valueOf = (v: unknown) => (v && typeof v === 'object' && 'value' in v ? String((v as { value: unknown }).value) : String(v ?? ''));

/** The editable custom fields of an object type, in NetBox's order (weight, then name). */
export async function formCustomFields(get: Get, objectType: string): Promise<FormCustomField[]> {
  return (await customFieldDefs(get, objectType)).filter((f) => f.editable === 'yes');
}

/** Every custom field of an object type, in NetBox's order (weight, then name). */
export async function customFieldDefs(get: Get, objectType: string): Promise<FormCustomField[]> {
  const r = await get(`/api/extras/custom-fields/?object_type=${encodeURIComponent(objectType)}&limit=1000`);
  if (r.status !== 200 || !Array.isArray(r.body?.results)) return [];
  const defs = (r.body.results as any[])
    .sort((a, b) => Number(a.weight ?? 100) - Number(b.weight ?? 100) || String(a.name).localeCompare(String(b.name)));
  return Promise.all(
    defs.map(async (f) => {
      const out: FormCustomField = {
        name: String(f.name),
        label: String(f.label || f.name),
        type: valueOf(f.type),
        required: !!f.required,
        description: String(f.description ?? ''),
        editable: f.ui_editable === undefined ? 'yes' : valueOf(f.ui_editable),
        visible: f.ui_visible === undefined ? 'always' : valueOf(f.ui_visible),
        cloneable: !!f.is_cloneable,
      };
      if ((out.type === 'select' || out.type === 'multiselect') && f.choice_set?.id) {
        const set = await get(`/api/extras/custom-field-choice-sets/${Number(f.choice_set.id)}/`);
        if (set.status === 200 && !set.body.base_choices && Array.isArray(set.body.extra_choices)) {
          out.choices = (set.body.extra_choices as unknown[]).map((c) => (Array.isArray(c) ? { value: String(c[0]), label: String(c[1] ?? c[0]) } : { value: String(c), label: String(c) }));
        }
      }
      return out;
    }),
  );
}

/** The custom fields an object's page shows (NetBox's `ui_visible`), each with its label and value (choices by label). */
export function shownCustomFields(defs: FormCustomField[], data: Record<string, unknown>): Array<{ label: string; value: unknown }> {
  const label = (f: FormCustomField, v: unknown) => f.choices?.find((c) => c.value === String(v))?.label ?? v;
  return defs
    .filter((f) => f.visible !== 'hidden' && !(f.visible === 'if-set' && (data[f.name] === null || data[f.name] === undefined)))
    .map((f) => {
      const v = data[f.name];
      return { label: f.label, value: Array.isArray(v) && f.choices ? v.map((x) => label(f, x)) : f.choices ? label(f, v) : v };
    });
}

/** The form's text for a stored custom field value. */
export function customFieldText(f: FormCustomField, v: unknown): string | string[] {
  if (v === null || v === undefined) return f.type === 'multiselect' || f.type === 'multiobject' ? [] : '';
  if (f.type === 'multiselect') return Array.isArray(v) ? v.map(String) : [String(v)];
  if (f.type === 'boolean') return v ? 'true' : 'false';
  if (f.type === 'json') return JSON.stringify(v, null, 2);
  if (f.type === 'object') return String(typeof v === 'object' ? (v as any).id ?? '' : v);
  if (f.type === 'multiobject') return Array.isArray(v) ? v.map((x) => String(typeof x === 'object' && x ? (x as any).id : x)) : [];
  return String(v);
}

/** The form's custom field texts by field name (`cf_<name>` in the posted form). */
export function customFieldTexts(fields: FormCustomField[], form: FormBody): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const f of fields) out[f.name] = f.type === 'multiselect' || f.type === 'multiobject' ? formList(form, `cf_${f.name}`) : formString(form, `cf_${f.name}`);
  return out;
}

/** The API's `custom_fields` from the form's texts: typed by the field's type, blank as null; errors keyed `cf_<name>`. */
export function customFieldData(fields: FormCustomField[], texts: Record<string, string | string[]>, errors: FieldErrors): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const f of fields) {
    const raw = texts[f.name] ?? '';
    const list = (Array.isArray(raw) ? raw : raw.split(',')).map((s) => s.trim()).filter(Boolean);
    const one = Array.isArray(raw) ? raw[0] ?? '' : raw.trim();
    const fail = (msg: string) => ((errors[`cf_${f.name}`] ??= []).push(msg), undefined);
    let v: unknown;
    switch (f.type) {
      case 'integer':
        v = one === '' ? null : /^-?\d{1,15}$/.test(one) ? Number(one) : fail('Enter a whole number.');
        break;
      case 'decimal':
        v = one === '' ? null : /^-?\d{1,15}(\.\d+)?$/.test(one) ? Number(one) : fail('Enter a number.');
        break;
      case 'boolean':
        v = one === 'true' ? true : one === 'false' ? false : null;
        break;
      case 'json':
        if (one === '') v = null;
        else
          try {
            v = JSON.parse(one);
          } catch {
            v = fail('Enter valid JSON.');
          }
        break;
      case 'multiselect':
        v = list.length ? list : null;
        break;
      case 'object':
        v = one === '' ? null : /^\d{1,15}$/.test(one) ? Number(one) : fail('Enter the ID of the object.');
        break;
      case 'multiobject':
        v = list.length ? (list.every((x) => /^\d{1,15}$/.test(x)) ? list.map(Number) : fail('Enter IDs, comma-separated.')) : null;
        break;
      default:
        v = one === '' ? null : one;
    }
    if (v !== undefined) data[f.name] = v;
  }
  return data;
}

/** The API's message about the custom field data, at the field it names (`cf_<name>`), else as it is. */
export function customFieldErrors(fields: FormCustomField[], messages: string[]): FieldErrors {
  const out: FieldErrors = {};
  for (const msg of messages) {
    const named = /custom field '([^']+)'|Required field "([^"]+)"|field name '([^']+)'/.exec(msg);
    const name = named?.[1] ?? named?.[2] ?? named?.[3];
    const key = name && fields.some((f) => f.name === name) ? `cf_${name}` : 'custom_fields';
    (out[key] ??= []).push(msg);
  }
  return out;
}

/**
 * The query string values (`cf_<name>`) a clone of an object starts with: NetBox's clone copies the custom fields marked
 * `is_cloneable`, as the add form's initial values.
 */
export function cloneCustomFields(fields: FormCustomField[], data: Record<string, unknown> | undefined): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const f of fields) {
    const v = data?.[f.name];
    if (!f.cloneable || v === null || v === undefined) continue;
    const text = customFieldText(f, v);
    if (Array.isArray(text) ? text.length : text !== '') out[`cf_${f.name}`] = text;
  }
  return out;
}

/**
 * The custom fields of a bulk edit (NetBox's bulk edit form): the given ones are set, a ticked "Set null" (`_nullify_cf_<name>`)
 * clears one (not offered for required fields); blank ones stay as they are. Errors keyed `cf_<name>`.
 */
export function bulkCustomFieldData(fields: FormCustomField[], form: FormBody, errors: FieldErrors): Record<string, unknown> {
  const texts = customFieldTexts(fields, form);
  const given = fields.filter((f) => {
    const t = texts[f.name]!;
    return Array.isArray(t) ? t.length > 0 : t.trim() !== '';
  });
  const data = customFieldData(given, texts, errors);
  for (const f of fields) {
    if (f.required || !(form[`_nullify_cf_${f.name}`] === 'on' || form[`_nullify_cf_${f.name}`] === 'true')) continue;
    if (f.name in data) (errors[`cf_${f.name}`] ??= []).push('Either set a value or tick "Set null", not both.');
    else data[f.name] = null;
  }
  return data;
}

/** The controls of the custom fields (NetBox's "Custom Fields" section of a form); `bulk`: none required, each nullable one with "Set null". */
export function customFieldControls(fields: FormCustomField[], texts: Record<string, string | string[]>, errors: FieldErrors, bulk = false): SafeHtml | string {
  if (!fields.length) return '';
  if (bulk) {
    return html`<fieldset class="custom-fields" data-testid="custom-fields"><legend>Custom fields</legend>
${fields.map(
  (f) => html`${controlOf({ ...f, required: false }, texts, errors)}${f.required ? '' : html`<label class="inline-check"><input type="checkbox" name="_nullify_cf_${f.name}" data-testid="nullify-cf_${f.name}"> Set null</label>`}`,
)}</fieldset>`;
  }
  return html`<fieldset class="custom-fields" data-testid="custom-fields"><legend>Custom fields</legend>
${fields.map((f) => controlOf(f, texts, errors))}</fieldset>`;
}

function controlOf(f: FormCustomField, texts: Record<string, string | string[]>, errors: FieldErrors): SafeHtml {
  const value = texts[f.name] ?? (f.type === 'multiselect' ? [] : '');
  const one = Array.isArray(value) ? value[0] ?? '' : value;
  const o = { name: `cf_${f.name}`, label: f.label, errors, required: f.required, help: f.description || undefined };
  if (f.type === 'boolean') return select({ ...o, value: one, options: [{ value: 'true', label: 'Yes' }, { value: 'false', label: 'No' }], blank: '———' });
  if ((f.type === 'select' || f.type === 'multiselect') && f.choices) return select({ ...o, value, options: f.choices, multiple: f.type === 'multiselect', blank: f.type === 'select' ? '———' : undefined });
  if (f.type === 'longtext' || f.type === 'json') return textArea({ ...o, value: one, rows: 4, help: f.type === 'json' ? 'JSON' : o.help });
  const hint = f.type === 'multiselect' || f.type === 'multiobject' ? 'Comma-separated' : f.type === 'object' ? 'ID of the object' : f.type === 'date' ? 'YYYY-MM-DD' : f.type === 'datetime' ? 'YYYY-MM-DD hh:mm:ss' : undefined;
  return textInput({ ...o, value: Array.isArray(value) ? value.join(', ') : one, help: [o.help, hint].filter(Boolean).join(' · ') || undefined });
}

