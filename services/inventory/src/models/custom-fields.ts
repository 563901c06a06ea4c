import { fail } from './field-problem.ts';
import { compileLookup } from './regex-lookup.ts';
import type { ReadCtx } from './read.ts';
import type { Choice, ModelDef, Row } from './types.ts';
import { choicesOf } from './choice-sets.ts';
import { modelForObjectType } from './lookup.ts';
import { createHash } from 'node:crypto';

/** A value as Python's str() shows it in NetBox's messages (strings bare, lists with quotes). */
function pyText(v: unknown): string {
  if (typeof v === 'string') return v.slice(0, 200);
  const repr = (x: unknown): string => (typeof x === 'string' ? `'${x.slice(0, 100)}'` : x === null ? 'None' : typeof x === 'boolean' ? (x ? 'True' : 'False') : Array.isArray(x) ? `[${x.slice(0, 50).map(repr).join(', ')}]` : typeof x === 'object' ? JSON.stringify(x).slice(0, 200) : String(x));
  return repr(v);
}

/**
 * NetBox's custom fields (`/api/extras/custom-fields/`): typed extra attributes of chosen object types.
 * Objects' `custom_fields` are validated against the definitions of their type (unknown names refused,
 * values of the field's type and limits, required ones present), defaults fill new objects, every defined
 * field reads back (null when unset), and `cf_<name>` filters the lists.
 */

const TYPES: Choice[] = [
  { value: 'text', label: 'Text' },
  { value: 'longtext', label: 'Text (long)' },
  { value: 'integer', label: 'Integer' },
  { value: 'decimal', label: 'Decimal' },
  { value: 'boolean', label: 'Boolean (true/false)' },
  { value: 'date', label: 'Date' },
  { value: 'datetime', label: 'Date & time' },
  { value: 'url', label: 'URL' },
  { value: 'json', label: 'JSON' },
  { value: 'select', label: 'Selection' },
  { value: 'multiselect', label: 'Multiple selection' },
];
const FILTER_LOGIC: Choice[] = [
  { value: 'disabled', label: 'Disabled' },
  { value: 'loose', label: 'Loose' },
  { value: 'exact', label: 'Exact' },
];
const UI_VISIBLE: Choice[] = [
  { value: 'always', label: 'Always' },
  { value: 'if-set', label: 'If set' },
  { value: 'hidden', label: 'Hidden' },
];
const UI_EDITABLE: Choice[] = [
  { value: 'yes', label: 'Yes' },
  { value: 'no', label: 'No' },
  { value: 'hidden', label: 'Hidden' },
];

const MAX_OBJECT_TYPES = 100;

function parseObjectTypes(v: unknown): string[] {
  if (!Array.isArray(v)) fail(`Expected a list of items but got type "${v === null ? 'NoneType' : typeof v === 'string' ? 'str' : typeof v}".`);
  const list = v as unknown[];
  if (list.length === 0) fail('This list may not be empty.');
  if (list.length > MAX_OBJECT_TYPES) fail(`Ensure this field has no more than ${MAX_OBJECT_TYPES} elements.`);
  const out: string[] = [];
  for (const t of list) {
    if (typeof t !== 'string' || !/^[a-z_]{1,50}\.[a-z0-9_]{1,100}$/.test(t)) fail(`Invalid content type: ${String(t).slice(0, 100)}`);
    if (!out.includes(t as string)) out.push(t as string);
  }
  return out;
}

export const customField: ModelDef = {
  key: 'customfield',
  app: 'extras',
  path: 'custom-fields',
  table: 'extras_customfield',
  objectType: 'extras.customfield',
  verboseName: 'custom field',
  title: 'CustomField',
  fields: [
    { name: 'object_types', column: 'object_types', kind: 'json', required: true, parse: parseObjectTypes },
    { name: 'type', column: 'type', kind: 'choice', choices: TYPES, default: 'text', filter: true },
    {
      name: 'name',
      column: 'name',
      kind: 'char',
      required: true,
      maxLength: 50,
      unique: true,
      filter: true,
      parse: (v) => {
        if (typeof v !== 'string' || !/^[a-z0-9_]{1,50}$/.test(v)) fail('Only alphanumeric characters and underscores are allowed.');
        if (/__/.test(v as string)) fail('Double underscores are not permitted in custom field names.');
        return v;
      },
    },
    { name: 'choice_set', column: 'choice_set_id', kind: 'fk', fk: 'customfieldchoiceset', nullable: true, default: null },
    { name: 'label', column: 'label', kind: 'char', blank: true, maxLength: 50, default: '', filter: true },
    { name: 'group_name', column: 'group_name', kind: 'char', blank: true, maxLength: 50, default: '', filter: true },
    { name: 'description', column: 'description', kind: 'char', blank: true, maxLength: 200, default: '', filter: true },
    { name: 'required', column: 'required', kind: 'boolean', default: false, filter: true },
    { name: 'unique', column: 'is_unique', kind: 'boolean', default: false, filter: true, label: 'Must be unique' },
    { name: 'search_weight', column: 'search_weight', kind: 'integer', default: 1000, min: 0, max: 32767, filter: true },
    { name: 'filter_logic', column: 'filter_logic', kind: 'choice', choices: FILTER_LOGIC, default: 'loose', filter: true },
    { name: 'ui_visible', column: 'ui_visible', kind: 'choice', choices: UI_VISIBLE, default: 'always', filter: true },
    { name: 'ui_editable', column: 'ui_editable', kind: 'choice', choices: UI_EDITABLE, default: 'yes', filter: true },
    { name: 'is_cloneable', column: 'is_cloneable', kind: 'boolean', default: false, filter: true },
    {
      name: 'default',
      column: 'default_value',
      kind: 'json',
      nullable: true,
      default: null,
      parse: (v) => {
        if (JSON.stringify(v).length > 10_000) fail('Ensure this value has at most 10000 characters.');
        return v;
      },
    },
    { name: 'weight', column: 'weight', kind: 'integer', default: 100, min: 0, max: 32767, filter: true },
    { name: 'validation_minimum', column: 'validation_minimum', kind: 'decimal', nullable: true, default: null, places: 4, min: -1e15, max: 1e15, filter: true },
    { name: 'validation_maximum', column: 'validation_maximum', kind: 'decimal', nullable: true, default: null, places: 4, min: -1e15, max: 1e15, filter: true },
    { name: 'validation_regex', column: 'validation_regex', kind: 'char', blank: true, maxLength: 500, default: '', filter: true },
    { name: 'comments', column: 'comments', kind: 'text', blank: true, maxLength: 100_000, default: '' },
  ],
  // Object-typed custom fields are not modelled.
  unmodelled: { related_object_type: null, related_object_filter: null },
  ordering: ['group_name', 'weight', 'name'],
  search: ['name', 'label', 'description'],
  brief: ['name', 'description'],
  taggable: false,
  display: (r) => r.label || r.name,
  extraFilters: [
    { name: 'object_type', kind: 'custom' },
    { name: 'choice_set_id', kind: 'fk_id', column: 'choice_set_id', model: 'customfieldchoiceset' },
    { name: 'choice_set', kind: 'fk_slug', column: 'choice_set_id', model: 'customfieldchoiceset', attribute: 'name' },
  ],
  afterSave: async (w, _id, row) => reindexUniqueField({ db: w.trx, dialect: w.dialect, base: '' }, row),
  beforeDelete: async (w, row) => {
    await w.trx.deleteFrom('extras_customfield_unique').where('field_name', '=', row.name).execute();
  },
  represent(row, out) {
    const t = String(row.type);
    return { ...out, data_type: t === 'integer' ? 'integer' : t === 'decimal' ? 'number' : t === 'boolean' ? 'boolean' : t === 'json' ? 'object' : 'string' };
  },
  check: async (ctx, values, existing, errors) => {
    const merged: Row = { ...(existing ?? {}), ...values };
    if ('name' in values && existing && values.name !== existing.name) (errors.name ??= []).push('The name of a custom field cannot be changed here (stored data uses it).');
    if (merged.validation_regex) {
      if (compileLookup(String(merged.validation_regex), false) instanceof Error) (errors.validation_regex ??= []).push('Invalid regular expression.');
    }
    const isSelect = merged.type === 'select' || merged.type === 'multiselect';
    if (isSelect && (merged.choice_set_id === null || merged.choice_set_id === undefined)) (errors.choice_set ??= []).push('Selection fields must specify a set of choices.');
    else if (!isSelect && merged.choice_set_id !== null && merged.choice_set_id !== undefined) (errors.choice_set ??= []).push('Choices may be set only on selection fields.');
    if (errors.choice_set) return;
    if (isSelect) {
      const set = await choiceSetOf(ctx, Number(merged.choice_set_id));
      merged.choices = set.values;
      merged.choice_set_name = set.name;
    }
    for (const t of (values.object_types ?? []) as string[]) {
      const m = modelForObjectType(t);
      if (!m || !m.taggable) (errors.object_types ??= []).push(`Invalid object type: ${t} does not take custom fields.`);
    }
    if (merged.default !== null && merged.default_value !== null && merged.default_value !== undefined && !errors.object_types) {
      try {
        cleanValue(definitionOf(merged), merged.default_value);
      } catch (err) {
        (errors.default ??= []).push(`Invalid default value "${JSON.stringify(merged.default_value).slice(0, 100)}": ${(err as Error).message}`);
      }
    }
    void ctx;
  },
};

export interface CustomFieldDef {
  name: string;
  type: string;
  required: boolean;
  defaultValue: unknown;
  min: number | null;
  max: number | null;
  regex: string;
  /** Values of the field's choice set (select and multiselect). */
  choices?: string[];
  /** The choice set's name, as NetBox's messages print it. */
  choiceSet?: string;
  /** NetBox's `unique`: no two objects of a type share a non-empty value. */
  unique?: boolean;
}

async function choiceSetOf(ctx: ReadCtx, setId: number): Promise<{ name: string; values: string[] }> {
  const row = await ctx.db.selectFrom('extras_customfieldchoiceset').select(['name', 'base_choices', 'extra_choices', 'order_alphabetically']).where('id', '=', setId).executeTakeFirst();
  if (!row) return { name: '', values: [] };
  return { name: String(row.name), values: choicesOf({ base_choices: row.base_choices, extra_choices: ctx.dialect.parseJson(row.extra_choices), order_alphabetically: ctx.dialect.readBool(row.order_alphabetically) }).map(([v]) => v) };
}

function definitionOf(r: Row): CustomFieldDef {
  return {
    name: String(r.name),
    type: String(r.type),
    required: !!r.required,
    defaultValue: r.default_value ?? null,
    min: r.validation_minimum === null || r.validation_minimum === undefined ? null : Number(r.validation_minimum),
    max: r.validation_maximum === null || r.validation_maximum === undefined ? null : Number(r.validation_maximum),
    regex: String(r.validation_regex ?? ''),
    choices: Array.isArray(r.choices) ? r.choices : undefined,
    choiceSet: typeof r.choice_set_name === 'string' ? r.choice_set_name : undefined,
    unique: !!r.is_unique,
  };
}

/** The custom fields defined for an object type, in NetBox's order. */
export async function customFieldsFor(ctx: ReadCtx, objectType: string): Promise<CustomFieldDef[]> {
  const rows = await ctx.db.selectFrom('extras_customfield').selectAll().orderBy('group_name').orderBy('weight').orderBy('name').execute();
  const out: CustomFieldDef[] = [];
  for (const r of rows) {
    if (!(ctx.dialect.parseJson<string[]>(r.object_types) ?? []).includes(objectType)) continue;
    const set = r.choice_set_id === null || r.choice_set_id === undefined ? undefined : await choiceSetOf(ctx, Number(r.choice_set_id));
    out.push(definitionOf({ ...r, choices: set?.values, choice_set_name: set?.name, required: ctx.dialect.readBool(r.required), is_unique: ctx.dialect.readBool(r.is_unique), default_value: r.default_value === null ? null : ctx.dialect.parseJson(r.default_value) }));
  }
  return out;
}

/** A value checked against its field's type and limits (NetBox's CustomField.validate()); throws with its message. */
export function cleanValue(f: CustomFieldDef, v: unknown): unknown {
  if (v === null || v === '') {
    if (f.required) throw new Error('Required field cannot be empty.');
    return null;
  }
  switch (f.type) {
    case 'text':
    case 'longtext':
    case 'url': {
      if (typeof v !== 'string') throw new Error('Value must be a string.');
      if (f.type === 'url' && !/^(https?|ftp|ftps|mailto|sftp|tftp|tel|xmpp):[^\s]*$/i.test(v) && !/^\/[^\s]*$/.test(v)) throw new Error('Enter a valid URL.');
      if (f.regex) {
        // Checked with RE2 (linear time), anchored as NetBox's validation_regex (re.match).
        const re = new RegExpLike(f.regex);
        if (!re.matches(v)) throw new Error(`Values must match this regex: '${f.regex}'`);
      }
      return v;
    }
    case 'integer': {
      if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new Error('Value must be an integer.');
      if (f.min !== null && v < f.min) throw new Error(`Value must be at least ${f.min}`);
      if (f.max !== null && v > f.max) throw new Error(`Value must not exceed ${f.max}`);
      return v;
    }
    case 'decimal': {
      const n = typeof v === 'number' ? v : typeof v === 'string' && /^-?\d{1,15}(\.\d{1,4})?$/.test(v) ? Number(v) : NaN;
      if (!Number.isFinite(n)) throw new Error('Value must be a decimal.');
      if (f.min !== null && n < f.min) throw new Error(`Value must be at least ${f.min}`);
      if (f.max !== null && n > f.max) throw new Error(`Value must not exceed ${f.max}`);
      return n;
    }
    case 'boolean':
      if (typeof v !== 'boolean') throw new Error('Value must be true or false.');
      return v;
    case 'date':
      if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(v) || Number.isNaN(Date.parse(`${v}T00:00:00Z`)) || new Date(`${v}T00:00:00Z`).toISOString().slice(0, 10) !== v) throw new Error('Date values must be in ISO 8601 format (YYYY-MM-DD).');
      return v;
    case 'datetime':
      if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?$/.test(v) || Number.isNaN(Date.parse(v.replace(' ', 'T')))) throw new Error('Date and time values must be in ISO 8601 format (YYYY-MM-DD HH:MM:SS).');
      return v;
    case 'json':
      return v;
    case 'select': {
      const choices = f.choices ?? [];
      if (typeof v !== 'string' || !choices.includes(v)) throw new Error(`Invalid choice (${pyText(v)}) for choice set ${f.choiceSet ?? ''}.`);
      return v;
    }
    case 'multiselect': {
      const choices = f.choices ?? [];
      if (!Array.isArray(v)) throw new Error(`Value must be a list.`);
      if (!v.every((x) => typeof x === 'string' && choices.includes(x))) throw new Error(`Invalid choice(s) (${pyText(v)}) for choice set ${f.choiceSet ?? ''}.`);
      return [...new Set(v as string[])];
    }
    default:
      throw new Error(`Unsupported custom field type: ${f.type}`);
  }
}

/** RE2 anchored at the start, as Python's re.match (validation_regex). */
class RegExpLike {
  private readonly re: ReturnType<typeof compileLookup>;
  constructor(pattern: string) {
    this.re = compileLookup(pattern, false);
  }
  matches(s: string): boolean {
    return !(this.re instanceof Error) && s.length <= 100_000 && this.re.matcher(s).lookingAt();
  }
}

/**
 * `custom_fields` input of an object checked against its type's definitions: unknown names refused, each
 * value cleaned, required ones present and defaults filled on create. Returns the data to store, or errors.
 */
export function cleanCustomFields(defs: CustomFieldDef[], input: Record<string, unknown>, existing: Record<string, unknown> | null, creating: boolean): { data: Record<string, unknown> } | { error: string } {
  const byName = new Map(defs.map((d) => [d.name, d]));
  for (const k of Object.keys(input)) if (!byName.has(k)) return { error: `Unknown field name '${k.slice(0, 100)}' in custom field data.` };
  const data: Record<string, unknown> = {};
  for (const d of defs) {
    const given = Object.prototype.hasOwnProperty.call(input, d.name);
    let v = given ? input[d.name] : existing && Object.prototype.hasOwnProperty.call(existing, d.name) ? existing[d.name] : creating ? d.defaultValue : null;
    if (v === undefined) v = null;
    if (v === null && d.required) return { error: `Required field "${d.name}" cannot be empty.` };
    if (given || (creating && v !== null)) {
      try {
        v = cleanValue(d, v);
      } catch (err) {
        return { error: `Invalid value for custom field '${d.name}': ${(err as Error).message}` };
      }
    }
    data[d.name] = v;
  }
  return { data };
}

const isEmpty = (v: unknown) => v === null || v === undefined || v === '' || (Array.isArray(v) && v.length === 0);

/** The stored key of a unique custom field's value (its JSON; long values by their SHA-256). */
function uniqueValueKey(v: unknown): string {
  const s = JSON.stringify(v);
  return s.length <= 400 ? s : `sha256:${createHash('sha256').update(s).digest('hex')}`;
}

/** NetBox's check of `unique` custom fields (CustomFieldsMixin.clean): another object of the type with the value. */
export async function uniqueCustomFieldError(ctx: ReadCtx, objectType: string, defs: CustomFieldDef[], data: Record<string, unknown>, objectId: number | null): Promise<string | undefined> {
  for (const d of defs) {
    if (!d.unique || isEmpty(data[d.name])) continue;
    let q = ctx.db.selectFrom('extras_customfield_unique').select('object_id').where('field_name', '=', d.name).where('object_type', '=', objectType).where('value_key', '=', uniqueValueKey(data[d.name]));
    if (objectId !== null) q = q.where('object_id', '<>', objectId);
    if (await q.executeTakeFirst()) return `Custom field '${d.name}' must have a unique value.`;
  }
  return undefined;
}

/**
 * Keeps the index of unique custom field values in step with an object's data, in its write transaction: the
 * table's unique key refuses the second of two racing writers (the write then runs again and answers as above).
 */
export async function syncUniqueCustomFields(ctx: ReadCtx, objectType: string, objectId: number, data: Record<string, unknown> | null): Promise<void> {
  await ctx.db.deleteFrom('extras_customfield_unique').where('object_type', '=', objectType).where('object_id', '=', objectId).execute();
  if (!data) return;
  const unique = (await ctx.db.selectFrom('extras_customfield').select(['name', 'object_types']).where('is_unique', '=', ctx.dialect.bool(true)).execute()).filter((r) =>
    (ctx.dialect.parseJson<string[]>(r.object_types) ?? []).includes(objectType),
  );
  const rows = unique.filter((r) => !isEmpty(data[r.name])).map((r) => ({ field_name: r.name, object_type: objectType, value_key: uniqueValueKey(data[r.name]), object_id: objectId }));
  if (rows.length) await ctx.db.insertInto('extras_customfield_unique').values(rows).execute();
}

/** After a custom field is saved: its index of values rebuilt from the objects (first object wins a clash). */
export async function reindexUniqueField(ctx: ReadCtx, row: Row): Promise<void> {
  await ctx.db.deleteFrom('extras_customfield_unique').where('field_name', '=', row.name).execute();
  if (!row.unique && !row.is_unique) return;
  for (const type of (Array.isArray(row.object_types) ? row.object_types : (ctx.dialect.parseJson<string[]>(row.object_types) ?? [])) as string[]) {
    const m = modelForObjectType(type);
    if (!m?.taggable) continue;
    const seen = new Set<string>();
    const objects = await ctx.db.selectFrom(m.table).select(['id', 'custom_fields']).orderBy('id').execute();
    const out: Row[] = [];
    for (const o of objects) {
      const v = (ctx.dialect.parseJson<Record<string, unknown>>(o.custom_fields) ?? {})[row.name];
      if (isEmpty(v)) continue;
      const key = uniqueValueKey(v);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ field_name: row.name, object_type: type, value_key: key, object_id: Number(o.id) });
    }
    for (let i = 0; i < out.length; i += 500) await ctx.db.insertInto('extras_customfield_unique').values(out.slice(i, i + 500)).execute();
  }
}
