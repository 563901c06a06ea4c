import { sql } from 'kysely';
import { fail } from './field-problem.ts';
import { BASE_CHOICE_SETS, baseChoices, NOT_SHIPPED } from './base-choices.ts';
import { APP_LABELS, modelForObjectType } from './lookup.ts';
import type { ModelDef, ReadCtx, Row } from './types.ts';

/**
 * NetBox's custom field choice sets (`/api/extras/custom-field-choice-sets/`): the values a select or multiselect
 * custom field takes: the pairs of a predefined `base_choices` list (IATA airport codes, ISO 3166 country codes; see
 * base-choices.ts) followed by `extra_choices`, a list of `[value, label]` pairs, as NetBox's CustomFieldChoiceSet.choices.
 */

const MAX_CHOICES = 10_000;

function parseExtraChoices(v: unknown): unknown {
  if (!Array.isArray(v)) fail(`Expected a list of items but got type "${v === null ? 'NoneType' : typeof v === 'string' ? 'str' : typeof v === 'object' ? 'dict' : typeof v}".`);
  const list = v as unknown[];
  if (list.length > MAX_CHOICES) fail(`Ensure this field has no more than ${MAX_CHOICES} elements.`);
  const seen = new Set<string>();
  return list.map((pair) => {
    if (!Array.isArray(pair)) fail(`Expected a list of items but got type "${typeof pair === 'string' ? 'str' : pair === null ? 'NoneType' : typeof pair === 'object' ? 'dict' : typeof pair}".`);
    const p = pair as unknown[];
    if (p.length < 2) fail('Ensure this field has at least 2 elements.');
    if (p.length > 2) fail('Ensure this field has no more than 2 elements.');
    const [value, label] = p.map((x) => {
      if (typeof x !== 'string' && typeof x !== 'number') fail('Not a valid string.');
      const s = String(x);
      if (s.trim() === '') fail('This field may not be blank.');
      if (s.length > 100) fail('Ensure this field has no more than 100 characters.');
      return s;
    }) as [string, string];
    if (seen.has(value)) fail(`Duplicate value "${value.slice(0, 100)}" found in extra choices.`);
    seen.add(value);
    return [value, label];
  });
}

/**
 * The choices of a set as `[value, label]` pairs: its base list, then its extra choices, sorted by value when the set
 * is ordered alphabetically (NetBox's CustomFieldChoiceSet.choices).
 */
export function choicesOf(row: Row): Array<[string, string]> {
  const extra = (Array.isArray(row.extra_choices) ? row.extra_choices : []) as Array<[string, string]>;
  const out = [...baseChoices(row.base_choices), ...extra.map(([v, l]) => [String(v), String(l)] as const)] as Array<[string, string]>;
  if (row.order_alphabetically) out.sort(byValue);
  return out;
}

/** How many choices a set has, without building the list. */
export function choicesCount(row: Row): number {
  return baseChoices(row.base_choices).length + (Array.isArray(row.extra_choices) ? row.extra_choices.length : 0);
}

/** Django's ContentType string (`DCIM | site`): the app's verbose name and the model's. */

/**
 * NetBox's CustomFieldChoiceSet.clean(): an extra choice may not be removed while an object's custom field data still
 * holds it (a select field's value, or one of a multiselect field's values), checked per field of the set and per object
 * type of the field. The message of the first such choice, else undefined.
 */
async function removedChoiceInUse(ctx: ReadCtx, existing: Row, next: unknown): Promise<string | undefined> {
  const valuesOf = (v: unknown) => {
    const list = typeof v === 'string' ? (ctx.dialect.parseJson<unknown[]>(v) ?? []) : v;
    return new Set((Array.isArray(list) ? list : []).map((p) => String(Array.isArray(p) ? p[0] : p)));
  };
  const now = valuesOf(next);
  const removed = [...valuesOf(existing.extra_choices)].filter((v) => !now.has(v));
  if (!removed.length) return undefined;
  const fields = await ctx.db
    .selectFrom('extras_customfield')
    .select(['name', 'type', 'object_types'])
    .where('choice_set_id', '=', Number(existing.id))
    .orderBy('group_name')
    .orderBy('weight')
    .orderBy('name')
    .execute();
  const pg = ctx.dialect.kind === 'postgres';
  for (const f of fields) {
    const types = (Array.isArray(f.object_types) ? f.object_types : (ctx.dialect.parseJson<string[]>(f.object_types) ?? [])) as string[];
    for (const type of types) {
      const m = modelForObjectType(type);
      if (!m?.taggable) continue;
      const data = sql.ref(`${m.table}.custom_fields`);
      const name = String(f.name);
      for (const choice of removed) {
        const cond: ReturnType<typeof sql<boolean>> =
          f.type === 'multiselect'
            ? pg
              ? sql`coalesce((${data} -> ${name}) @> to_jsonb(cast(${choice} as text)), false)`
              : sql`exists (select 1 from json_each(${data}, ${`$."${name}"`}) where value = ${choice})`
            : pg
              ? sql`(${data} ->> ${name}) = ${choice}`
              : sql`cast(json_extract(${data}, ${`$."${name}"`}) as text) = ${choice}`;
        const hit = await ctx.db.selectFrom(m.table).select(sql`1`.as('x')).where(cond).limit(1).executeTakeFirst();
        if (hit) return `Cannot remove choice ${choice} as there are ${APP_LABELS[m.app] ?? m.app} | ${m.verboseName} objects which reference it.`;
      }
    }
  }
  return undefined;
}

const byValue = (a: [string, string], b: [string, string]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

export const customFieldChoiceSet: ModelDef = {
  key: 'customfieldchoiceset',
  app: 'extras',
  path: 'custom-field-choice-sets',
  table: 'extras_customfieldchoiceset',
  objectType: 'extras.customfieldchoiceset',
  verboseName: 'custom field choice set',
  title: 'CustomFieldChoiceSet',
  fields: [
    { name: 'name', column: 'name', kind: 'char', required: true, maxLength: 100, unique: true, filter: true },
    { name: 'description', column: 'description', kind: 'char', blank: true, maxLength: 200, default: '', filter: true },
    {
      name: 'base_choices',
      column: 'base_choices',
      kind: 'choice',
      choices: BASE_CHOICE_SETS,
      nullable: true,
      default: null,
      filter: true,
    },
    { name: 'extra_choices', column: 'extra_choices', kind: 'json', nullable: true, default: null, parse: parseExtraChoices },
    { name: 'order_alphabetically', column: 'order_alphabetically', kind: 'boolean', default: false, filter: true },
  ],
  ordering: ['name'],
  search: ['name', 'description'],
  brief: ['name', 'description', 'choices_count'],
  briefValues: { choices_count: (r) => choicesCount(r) },
  taggable: false,
  display: (r) => r.name,
  protectedBy: [{ model: 'customfield', column: 'choice_set_id' }],
  extraFilters: [
    {
      // A set offering any of the values (NetBox's `choice` filter over extra_choices).
      name: 'choice',
      kind: 'custom',
      where: async (ctx, vals) => {
        const text = ctx.dialect.kind === 'postgres' ? sql`(extras_customfieldchoiceset.extra_choices)::text` : sql`extras_customfieldchoiceset.extra_choices`;
        const like = (v: string) => `%[${JSON.stringify(v).replace(/[!%_]/g, (c) => `!${c}`)},%`;
        const compact = sql`replace(replace(${text}, ', ', ','), '[ ', '[')`;
        return sql`(${sql.join(vals.map((v) => sql`${compact} like ${like(v)} escape '!'`), sql` or `)})`;
      },
    },
  ],
  check: async (ctx, values, existing, errors) => {
    const merged = { ...(existing ?? {}), ...values };
    if (typeof values.base_choices === 'string' && NOT_SHIPPED.has(values.base_choices)) {
      return void (errors.base_choices ??= []).push(`This service does not ship the ${values.base_choices} list; choose IATA or ISO_3166, or give extra choices.`);
    }
    const extra = merged.extra_choices;
    if (!merged.base_choices && (!Array.isArray(extra) || extra.length === 0)) (errors.non_field_errors ??= []).push('Must define base or extra choices.');
    // NetBox's save(): a set ordered alphabetically stores its extra choices sorted by value.
    else if (merged.order_alphabetically && Array.isArray(extra)) values.extra_choices = [...(extra as Array<[string, string]>)].sort(byValue);
    if (existing && 'extra_choices' in values && !errors.non_field_errors) {
      const problem = await removedChoiceInUse(ctx, existing, values.extra_choices);
      if (problem) (errors.non_field_errors ??= []).push(problem);
    }
  },
  represent(row, out) {
    const { base_choices, extra_choices, order_alphabetically, created, last_updated, ...rest } = out;
    return { ...rest, base_choices, extra_choices: extra_choices ?? [], order_alphabetically, choices_count: choicesCount(row), created, last_updated };
  },
};
