import { Type, type TSchema } from 'typebox';
import { implementedFilters } from './filters.ts';
import type { FieldDef, ModelDef } from './types.ts';

/** Request schemas for the OpenAPI document (the handlers validate DRF-style themselves). */
function fieldSchema(f: FieldDef): TSchema {
  let s: TSchema;
  switch (f.kind) {
    case 'integer':
      s = Type.Integer({ minimum: f.min, maximum: f.max });
      break;
    case 'decimal':
      s = Type.Number({ minimum: f.min, maximum: f.max });
      break;
    case 'boolean':
      s = Type.Boolean();
      break;
    case 'choice':
    case 'objecttype':
      s = Type.Union(f.choices!.map((c) => Type.Literal(c.value)));
      break;
    case 'fk':
      s = Type.Union([Type.Integer({ minimum: 1, description: 'id' }), Type.Record(Type.String(), Type.Unknown(), { description: 'attributes' })]);
      break;
    case 'color':
      s = Type.String({ pattern: '^[0-9a-fA-F]{6}$' });
      break;
    case 'slug':
      s = Type.String({ pattern: '^[-a-zA-Z0-9_]+$', maxLength: f.maxLength, minLength: 1 });
      break;
    default:
      s = Type.String({ maxLength: f.maxLength, minLength: f.blank ? 0 : 1 });
  }
  return f.nullable ? Type.Union([s, Type.Null()]) : s;
}

export function writableSchema(m: ModelDef, partial: boolean) {
  const props: Record<string, TSchema> = {};
  for (const f of m.fields) props[f.name] = f.required && !partial ? fieldSchema(f) : Type.Optional(fieldSchema(f));
  if (m.taggable) {
    props.tags = Type.Optional(Type.Array(Type.Union([Type.Integer({ minimum: 1 }), Type.Object({ name: Type.Optional(Type.String()), slug: Type.Optional(Type.String()) })])));
    props.custom_fields = Type.Optional(Type.Record(Type.String(), Type.Unknown()));
  }
  return Type.Object(props, { additionalProperties: true, title: `Writable${m.title}Request` });
}

export function listQuerySchema(m: ModelDef) {
  const props: Record<string, TSchema> = {
    limit: Type.Optional(Type.Integer({ minimum: 0 })),
    offset: Type.Optional(Type.Integer({ minimum: 0 })),
    ordering: Type.Optional(Type.String()),
    brief: Type.Optional(Type.Boolean()),
    q: Type.Optional(Type.String()),
    id: Type.Optional(Type.Array(Type.Integer())),
    created__gte: Type.Optional(Type.String({ format: 'date-time' })),
    created__lte: Type.Optional(Type.String({ format: 'date-time' })),
    last_updated__gte: Type.Optional(Type.String({ format: 'date-time' })),
    last_updated__lte: Type.Optional(Type.String({ format: 'date-time' })),
  };
  // Every filter the list implements, lookups included, so clients can read them from the schema.
  for (const name of implementedFilters(m)) if (!(name in props)) props[name] = Type.Optional(Type.Array(Type.String()));
  props.fields = Type.Optional(Type.String({ description: 'Comma-separated fields to return' }));
  props.omit = Type.Optional(Type.String({ description: 'Comma-separated fields to leave out' }));
  return Type.Object(props);
}

export const idParams = Type.Object({ id: Type.Integer({ minimum: 1 }) });

const nullable = (s: TSchema) => Type.Union([s, Type.Null()]);
const choiceOut = (f: FieldDef) => Type.Object({ value: Type.Union(f.choices!.map((c) => Type.Literal(c.value))), label: Type.String() });

function outField(f: FieldDef, brief: (key: string) => TSchema): TSchema {
  let s: TSchema;
  switch (f.kind) {
    case 'fk':
      s = brief(f.fk!);
      break;
    case 'choice':
      s = choiceOut(f);
      break;
    case 'integer':
      s = Type.Integer();
      break;
    case 'decimal':
      s = Type.Number();
      break;
    case 'boolean':
      s = Type.Boolean();
      break;
    default:
      s = Type.String();
  }
  return f.nullable ? nullable(s) : s;
}

/** Response schemas for the OpenAPI document only (the routes serialise with JSON.stringify). */
export function responseSchemas(models: ModelDef[]) {
  const byKey = new Map(models.map((m) => [m.key, m]));
  const briefCache = new Map<string, TSchema>();
  const brief = (key: string): TSchema => {
    const cached = briefCache.get(key);
    if (cached) return cached;
    const m = byKey.get(key)!;
    const props: Record<string, TSchema> = { id: Type.Integer(), url: Type.String({ format: 'uri' }), display: Type.String() };
    for (const name of m.brief) {
      const f = m.fields.find((x) => x.name === name);
      if (name === 'family') props.family = Type.Object({ value: Type.Integer(), label: Type.String() });
      else if (f) props[name] = outField(f, brief);
      else props[name] = Type.Integer();
    }
    const s = Type.Object(props, { title: `Brief${m.title}` });
    briefCache.set(key, s);
    return s;
  };
  const nestedTag = Type.Object({ id: Type.Integer(), url: Type.String(), display: Type.String(), name: Type.String(), slug: Type.String(), color: Type.String() });
  const full = (m: ModelDef): TSchema => {
    const props: Record<string, TSchema> = { id: Type.Integer(), url: Type.String({ format: 'uri' }), display: Type.String() };
    if (m.key === 'ipaddress') props.family = Type.Object({ value: Type.Integer(), label: Type.String() });
    for (const f of m.fields) props[f.name] = outField(f, brief);
    for (const name of Object.keys(m.extraRefs ?? {})) props[name] = nullable(brief(m.extraRefs![name]!.model));
    if (m.taggable) {
      props.tags = Type.Array(nestedTag);
      props.custom_fields = Type.Record(Type.String(), Type.Unknown());
    }
    if (m.key === 'tag') {
      props.object_types = Type.Array(Type.String());
      props.tagged_items = Type.Integer();
    }
    props.created = Type.String({ format: 'date-time' });
    props.last_updated = Type.String({ format: 'date-time' });
    return Type.Object(props, { title: m.title });
  };
  return { brief, full };
}

export const errorBody = Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Array(Type.Record(Type.String(), Type.Unknown()))], {
  description: 'DRF error: {"field": ["message"]}, {"non_field_errors": [...]}, {"detail": "..."}, or one such object per item of a bulk request',
});

export function pageOf(item: TSchema) {
  return Type.Object({ count: Type.Integer(), next: nullable(Type.String({ format: 'uri' })), previous: nullable(Type.String({ format: 'uri' })), results: Type.Array(item) });
}
