import type { FieldInfo } from '../api/conventions.ts';
import type { FieldDef, ModelDef } from './types.ts';

const TYPES: Record<string, string> = {
  char: 'string',
  text: 'string',
  slug: 'slug',
  integer: 'integer',
  decimal: 'decimal',
  boolean: 'boolean',
  choice: 'choice',
  fk: 'field',
  color: 'string',
  mac: 'string',
  ipaddress: 'string',
  dnsname: 'string',
  objecttype: 'field',
  json: 'json',
  m2m: 'field',
};

/** DRF's label: the verbose name with its first letter capitalised ("Device type", "ID"). */
export function fieldLabel(name: string): string {
  if (name === 'id') return 'ID';
  const words = name.replace(/_id$/, '_ID').split('_');
  const s = words.join(' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function info(f: FieldDef): FieldInfo {
  const out: FieldInfo = { type: TYPES[f.kind] ?? 'string', required: !!f.required, read_only: false, label: f.label ?? fieldLabel(f.name) };
  if (f.maxLength && ['char', 'slug', 'dnsname', 'text'].includes(f.kind) && f.kind !== 'text') out.max_length = f.maxLength;
  if (f.kind === 'integer' || f.kind === 'decimal') {
    if (f.min !== undefined) out.min_value = f.min;
    if (f.max !== undefined) out.max_value = f.max;
  }
  if (f.choices) out.choices = f.choices.map((c) => ({ value: c.value, display_name: c.label }));
  return out;
}

const ro = (type: string, label: string): FieldInfo => ({ type, required: false, read_only: true, label });

/** `actions.POST` / `actions.PUT` of OPTIONS: every serializer field, writable ones with their constraints and choices. */
export function modelFieldInfo(m: ModelDef): Record<string, FieldInfo> {
  const out: Record<string, FieldInfo> = { id: ro('integer', 'ID'), url: ro('field', 'Url'), display_url: ro('field', 'Display url'), display: ro('field', 'Display') };
  for (const f of m.fields) out[f.name] = info(f);
  if (m.taggable) {
    out.tags = { type: 'list', required: false, read_only: false, label: 'Tags', child: { type: 'nested object', required: false, read_only: false, label: 'Tag' } };
    out.custom_fields = { type: 'field', required: false, read_only: false, label: 'Custom fields' };
  }
  out.created = ro('datetime', 'Created');
  out.last_updated = ro('datetime', 'Last updated');
  return out;
}
