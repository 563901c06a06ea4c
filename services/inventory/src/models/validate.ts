import { FieldProblem, fail } from './field-problem.ts';
import { fetchRowsByIds, type ReadCtx } from './read.ts';
import { model, modelForObjectType } from './lookup.ts';
import { checkGeneric } from './generic-object.ts';
import type { FieldDef, ModelDef, Row } from './types.ts';
import { netString, parseNet } from './ip.ts';
import { normaliseMac, parseIpInterface, pyRepr, pyType } from './values.ts';
import { cleanCustomFields, customFieldsFor, uniqueCustomFieldError } from './custom-fields.ts';

export type Errors = Record<string, string[]>;

export interface Validated {
  /** Column values to write. */
  values: Row;
  /** Tag ids when `tags` was given. */
  tags?: number[];
  customFields?: Record<string, unknown>;
  /** Ids of many-to-many fields that were given (`tagged_vlans`). */
  m2m?: Record<string, number[]>;
}

const TRUE = new Set(['t', 'y', 'yes', 'true', 'on', '1']);
const FALSE = new Set(['f', 'n', 'no', 'false', 'off', '0']);
const SLUG = /^[-a-zA-Z0-9_]+$/;
const DNS = /^([0-9A-Za-z_-]+|\*)(\.[0-9A-Za-z_-]+)*\.?$/;
const MAX_TAGS = 100;
const MAX_CUSTOM_FIELDS_BYTES = 32 * 1024;


function asString(f: FieldDef, v: unknown): string | null {
  if (typeof v === 'boolean' || typeof v === 'object' || v === undefined) fail('Not a valid string.');
  let s = String(v).trim();
  if (s.includes('\u0000')) fail('Null characters are not allowed.');
  if (s === '') {
    if (f.nullable && f.kind === 'char' && f.blank) return null;
    if (!f.blank) fail('This field may not be blank.');
    return '';
  }
  if (f.maxLength && s.length > f.maxLength) fail(`Ensure this field has no more than ${f.maxLength} characters.`);
  if (f.kind === 'slug' && !SLUG.test(s)) fail('Enter a valid “slug” consisting of letters, numbers, underscores or hyphens.');
  if (f.kind === 'dnsname' && !DNS.test(s)) fail('Only alphanumeric characters, asterisks, hyphens, periods, and underscores are allowed in DNS names');
  return s;
}

function asInteger(f: FieldDef, v: unknown): number {
  let n: number;
  if (typeof v === 'number' && Number.isInteger(v)) n = v;
  else if (typeof v === 'string' && v.length <= 50 && /^\s*-?\d+(\.0*)?\s*$/.test(v)) n = Number.parseInt(v, 10);
  else if (typeof v === 'string' && v.length > 1000) n = fail('String value too large.');
  else n = fail('A valid integer is required.');
  if (!Number.isSafeInteger(n)) fail('A valid integer is required.');
  if (f.min !== undefined && n < f.min) fail(`Ensure this value is greater than or equal to ${f.min}.`);
  if (f.max !== undefined && n > f.max) fail(`Ensure this value is less than or equal to ${f.max}.`);
  return n;
}

function asDecimal(f: FieldDef, v: unknown): number {
  let n: number;
  if (typeof v === 'number' && Number.isFinite(v)) n = v;
  else if (typeof v === 'string' && v.length <= 50 && /^\s*-?(\d+(\.\d*)?|\.\d+)\s*$/.test(v)) n = Number(v);
  else n = fail('A valid number is required.');
  if (f.min !== undefined && n < f.min) fail(`Ensure this value is greater than or equal to ${f.min}.`);
  if (f.max !== undefined && n > f.max) fail(`Ensure this value is less than or equal to ${f.max}.`);
  if (f.name === 'u_height' && Math.round(n * 2) !== n * 2) fail('U height must be in increments of 0.5 rack units.');
  const places = f.places ?? 1;
  const text = typeof v === 'string' ? v.trim() : String(v);
  const decimals = /\.(\d+)$/.exec(text)?.[1]?.replace(/0+$/, '').length ?? 0;
  if (decimals > places) fail(`Ensure that there are no more than ${places} decimal place${places === 1 ? '' : 's'}.`);
  return n;
}

function asBoolean(v: unknown): boolean {
  if (v === true || v === 1) return true;
  if (v === false || v === 0) return false;
  if (typeof v === 'string' && TRUE.has(v.toLowerCase())) return true;
  if (typeof v === 'string' && FALSE.has(v.toLowerCase())) return false;
  return fail('Must be a valid boolean.');
}

function asChoice(f: FieldDef, v: unknown): string {
  // GET returns {value, label}; accepting it back lets clients PUT what they read.
  if (v && typeof v === 'object' && !Array.isArray(v) && 'value' in v) v = (v as Record<string, unknown>).value;
  const s = typeof v === 'string' ? v : typeof v === 'number' ? String(v) : pyRepr(v);
  if (typeof v !== 'string' || !f.choices!.some((c) => c.value === v)) fail(`"${s.slice(0, 200)}" is not a valid choice.`);
  return v as string;
}

/** NetBox's related-object lookup: a numeric id or a dictionary of attributes. */
export async function resolveRelated(ctx: ReadCtx, target: ModelDef, v: unknown): Promise<number> {
  if (typeof v === 'number' || (typeof v === 'string' && /^\d{1,16}$/.test(v))) {
    const id = Number(v);
    const found = Number.isSafeInteger(id) && id > 0 && (await fetchRowsByIds(ctx, target, [id])).has(id);
    if (!found) fail(`Related object not found using the provided numeric ID: ${String(v)}`);
    return id;
  }
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const attrs = v as Record<string, unknown>;
    const notFound = `Related object not found using the provided attributes: ${pyRepr(attrs).slice(0, 500)}`;
    const entries = Object.entries(attrs);
    if (entries.length === 0 || entries.length > 10) fail(notFound);
    let q = ctx.db.selectFrom(target.table).select('id');
    for (const [k, val] of entries) {
      const f = k === 'id' ? ({ column: 'id', kind: 'integer' } as FieldDef) : target.fields.find((x) => x.name === k);
      if (!f || f.kind === 'fk') fail(notFound);
      if (val === null) {
        q = q.where(f!.column, 'is', null);
        continue;
      }
      // Compare with a value of the column's type: PostgreSQL refuses 'abc' for a bigint.
      if (f!.kind === 'integer' || f!.kind === 'decimal') {
        const n = typeof val === 'number' ? val : typeof val === 'string' && /^-?\d{1,15}(\.\d+)?$/.test(val.trim()) ? Number(val) : NaN;
        if (!Number.isFinite(n) || Math.abs(n) > Number.MAX_SAFE_INTEGER || (f!.kind === 'integer' && !Number.isInteger(n))) fail(notFound);
        q = q.where(f!.column, '=', n);
      } else if (f!.kind === 'boolean') {
        if (typeof val !== 'boolean') fail(notFound);
        q = q.where(f!.column, '=', ctx.dialect.bool(val as boolean));
      } else if (typeof val === 'string' || (typeof val === 'number' && Number.isFinite(val))) q = q.where(f!.column, '=', String(val));
      else fail(notFound);
    }
    const rows = await q.limit(2).execute();
    if (rows.length === 0) fail(notFound);
    if (rows.length > 1) fail(`Multiple objects match the provided attributes: ${pyRepr(attrs).slice(0, 500)}`);
    return Number(rows[0]!.id);
  }
  return fail(`Related objects must be referenced by numeric ID or by dictionary of attributes. Received an unrecognized value: ${(typeof v === 'string' ? v : pyRepr(v)).slice(0, 200)}`);
}

async function fieldValue(ctx: ReadCtx, f: FieldDef, v: unknown): Promise<unknown> {
  if (v === null) {
    if (f.nullable) return null;
    fail('This field may not be null.');
  }
  if (f.parse) return f.parse(v);
  switch (f.kind) {
    case 'char':
    case 'text':
    case 'slug':
    case 'dnsname':
      return asString(f, v);
    case 'integer':
      return asInteger(f, v);
    case 'decimal':
      return asDecimal(f, v);
    case 'boolean':
      return asBoolean(v);
    case 'choice':
    case 'objecttype':
      return asChoice(f, v);
    case 'color': {
      if (typeof v !== 'string' || !/^[0-9a-fA-F]{6}$/.test(v)) fail('Enter a valid hexadecimal RGB color code.');
      return (v as string).toLowerCase();
    }
    case 'mac': {
      if (typeof v !== 'string') fail('Not a valid string.');
      const s = v as string;
      if (s.trim() === '' && f.nullable) return null;
      const mac = normaliseMac(s);
      if (!mac) fail(`Invalid MAC address format: ${s.slice(0, 100)}`);
      return mac;
    }
    case 'ipaddress': {
      if (typeof v !== 'string') fail('Not a valid string.');
      const s = v as string;
      if (s.trim() === '') fail('This field may not be blank.');
      const ip = s.length <= 100 ? parseIpInterface(s) : undefined;
      if (!ip) fail(`Invalid IP address format: ${s.slice(0, 100)}`);
      if ('error' in ip!) fail(ip.error);
      return ip;
    }
    case 'fk':
      return resolveRelated(ctx, model(f.fk!), v);
    case 'json': {
      if (typeof v !== 'object' || Array.isArray(v)) fail('JSON data must be in object form. Example: {"foo": 123}');
      if (JSON.stringify(v).length > MAX_CUSTOM_FIELDS_BYTES * 4) fail(`Ensure this value has at most ${MAX_CUSTOM_FIELDS_BYTES * 4} characters.`);
      return v;
    }
    case 'prefix': {
      if (typeof v !== 'string') fail('Not a valid string.');
      const net = (v as string).length <= 100 ? parseNet(v as string) : undefined;
      if (!net) fail(`Invalid IP prefix format: ${String(v).slice(0, 100)}`);
      if (net!.len === 0) fail('Cannot create prefix with /0 mask.');
      return { prefix: netString(net!), family: net!.family };
    }
    case 'm2m': {
      if (!Array.isArray(v)) fail(`Expected a list of items but got type "${pyType(v)}".`);
      const list = v as unknown[];
      if (list.length > 4094) fail('Ensure this field has no more than 4094 elements.');
      const ids: number[] = [];
      for (const item of list) ids.push(await resolveRelated(ctx, model(f.fk!), f.itemAttribute && typeof item === 'string' ? { [f.itemAttribute]: item } : item));
      return [...new Set(ids)];
    }
  }
}

async function tagIds(ctx: ReadCtx, v: unknown): Promise<number[]> {
  if (!Array.isArray(v)) fail(`Expected a list of items but got type "${pyType(v)}".`);
  const list = v as unknown[];
  if (list.length > MAX_TAGS) fail(`Ensure this field has no more than ${MAX_TAGS} elements.`);
  const ids: number[] = [];
  for (const item of list) ids.push(await resolveRelated(ctx, model('tag'), item));
  return [...new Set(ids)];
}

function customFields(v: unknown, existing: Row | null): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(`Invalid data. Expected a dictionary, but got ${pyType(v)}.`);
  if (JSON.stringify(v).length > MAX_CUSTOM_FIELDS_BYTES) fail(`Custom field data may not exceed ${MAX_CUSTOM_FIELDS_BYTES} bytes.`);
  // NetBox merges a partial custom_fields update into the stored data.
  return { ...(existing?.custom_fields ?? {}), ...(v as Record<string, unknown>) };
}

/**
 * DRF-style validation of one object's input: unknown keys ignored, every
 * field's problems collected as `{"field": ["message"]}`.
 */
export async function validateInput(ctx: ReadCtx, m: ModelDef, data: unknown, existing: Row | null, partial: boolean): Promise<{ ok: true; value: Validated } | { ok: false; errors: Errors; values?: Row }> {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    return { ok: false, errors: { non_field_errors: [`Invalid data. Expected a dictionary, but got ${pyType(data)}.`] } };
  }
  const input = data as Record<string, unknown>;
  const errors: Errors = {};
  const values: Row = {};
  const out: Validated = { values };
  for (const f of m.fields) {
    if (!Object.prototype.hasOwnProperty.call(input, f.name)) {
      if (f.required && !partial) errors[f.name] = ['This field is required.'];
      else if (!existing && f.default !== undefined) values[f.column] = f.default;
      continue;
    }
    try {
      const v = await fieldValue(ctx, f, input[f.name]);
      if (f.kind === 'ipaddress' && v && typeof v === 'object') {
        values[f.column] = (v as { address: string }).address;
        values.family = (v as { family: number }).family;
      } else if (f.kind === 'prefix' && v && typeof v === 'object') {
        values[f.column] = (v as { prefix: string }).prefix;
        values.family = (v as { family: number }).family;
      } else if (f.kind === 'm2m') (out.m2m ??= {})[f.name] = v as number[];
      else values[f.column] = v;
    } catch (err) {
      if (!(err instanceof FieldProblem)) throw err;
      errors[f.name] = [err.message];
    }
  }
  if (m.taggable) {
    // Custom field definitions of this type: when there are any, the data is checked against them (NetBox's
    // CustomFieldsDataField); without any, custom_fields stays a free JSON object as before.
    const defs = await customFieldsFor(ctx, m.objectType);
    const cleanCf = (v: unknown) => {
      const merged = customFields(v, null);
      if (!defs.length) return customFields(v, existing);
      const r = cleanCustomFields(defs, merged, existing?.custom_fields ?? null, !existing);
      if ('error' in r) fail(r.error);
      return (r as { data: Record<string, unknown> }).data;
    };
    if (defs.length && !existing && !Object.prototype.hasOwnProperty.call(input, 'custom_fields')) {
      try {
        out.customFields = cleanCf({});
      } catch (err) {
        if (!(err instanceof FieldProblem)) throw err;
        errors.custom_fields = [err.message];
      }
    }
    for (const [key, run] of [
      ['tags', async () => (out.tags = await tagIds(ctx, input.tags))],
      ['custom_fields', async () => (out.customFields = cleanCf(input.custom_fields))],
    ] as const) {
      if (!Object.prototype.hasOwnProperty.call(input, key)) continue;
      try {
        await run();
      } catch (err) {
        if (!(err instanceof FieldProblem)) throw err;
        errors[key] = [err.message];
      }
    }
    if (out.customFields && !errors.custom_fields && defs.some((d) => d.unique)) {
      const clash = await uniqueCustomFieldError(ctx, m.objectType, defs, out.customFields, existing ? Number(existing.id) : null);
      if (clash) (errors.non_field_errors ??= []).push(clash);
    }
  }
  for (const [key, fixed] of Object.entries(m.unmodelled ?? {})) {
    if (Object.prototype.hasOwnProperty.call(input, key) && JSON.stringify(input[key]) !== JSON.stringify(fixed)) {
      errors[key] = [`This service does not model ${key}; only ${JSON.stringify(fixed)} is accepted.`];
    }
  }
  if (Object.keys(errors).length === 0) m.clean?.(values, existing, errors);
  if (Object.keys(errors).length === 0) await m.check?.(ctx, values, existing, errors, out.m2m);
  if (Object.keys(errors).length === 0 && m.genericRef) await checkGeneric(ctx, m.genericRef, modelForObjectType, values, existing, errors);
  return Object.keys(errors).length ? { ok: false, errors, values } : { ok: true, value: out };
}

export { FieldProblem };
