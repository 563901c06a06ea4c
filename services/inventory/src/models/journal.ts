import { sql } from 'kysely';
import { fail } from './field-problem.ts';
import { contentTypeLabel, genericFields, genericFilters } from './generic-object.ts';
import type { Choice, GenericRef, ModelDef, ReadCtx } from './types.ts';

/** NetBox's JournalEntryKindChoices. */
export const JOURNAL_KINDS: Choice[] = [
  { value: 'info', label: 'Info' },
  { value: 'success', label: 'Success' },
  { value: 'warning', label: 'Warning' },
  { value: 'danger', label: 'Danger' },
];

const ASSIGNED: GenericRef = {
  typeColumn: 'assigned_object_type',
  idColumn: 'assigned_object_id',
  objectName: 'assigned_object',
  supported: (m) => takesJournal(m),
  unsupported: (m) => ['non_field_errors', `Journaling is not supported for this object type (${contentTypeLabel(m)}).`],
  missing: (label, id) => ['non_field_errors', `Invalid assigned_object: ${label} ID ${id}`],
};

/** NetBox's SHORT_DATETIME_FORMAT (`Y-m-d H:i`) of a stored timestamp. */
function shortDateTime(v: unknown): string {
  const d = new Date(String(v));
  if (Number.isNaN(d.getTime())) return String(v ?? '');
  return d.toISOString().slice(0, 16).replace('T', ' ');
}

/** Objects with journals: NetBox's journaling feature is on every primary, organizational and nested-group model. */
export function takesJournal(m: ModelDef): boolean {
  return m.taggable && m.key !== 'journalentry' && m.key !== 'contactassignment';
}

/** `/api/extras/journal-entries/`: notes on any journaled object, with who wrote them and a kind. */
export const journalEntry: ModelDef = {
  key: 'journalentry',
  app: 'extras',
  path: 'journal-entries',
  table: 'extras_journalentry',
  objectType: 'extras.journalentry',
  verboseName: 'journal entry',
  title: 'JournalEntry',
  fields: [
    ...genericFields(ASSIGNED),
    {
      name: 'created_by',
      column: 'created_by_id',
      kind: 'integer',
      nullable: true,
      label: 'Created by',
      parse: (v) => {
        if (typeof v === 'boolean' || !(typeof v === 'number' || (typeof v === 'string' && /^\d{1,16}$/.test(v)))) fail(`Incorrect type. Expected pk value, received ${typeof v === 'string' ? 'str' : typeof v === 'object' ? (Array.isArray(v) ? 'list' : 'dict') : typeof v === 'boolean' ? 'bool' : typeof v}.`);
        return Number(v);
      },
    },
    { name: 'kind', column: 'kind', kind: 'choice', choices: JOURNAL_KINDS, default: 'info', filter: true },
    { name: 'comments', column: 'comments', kind: 'text', required: true, maxLength: 100_000 },
  ],
  ordering: ['-created'],
  search: ['comments'],
  brief: ['created'],
  taggable: true,
  display: (r) => `${shortDateTime(r.created)} (${JOURNAL_KINDS.find((k) => k.value === r.kind)?.label ?? r.kind})`,
  extraFilters: [
    ...genericFilters('extras_journalentry', ASSIGNED),
    {
      name: 'created_by_id',
      kind: 'custom',
      where: async (ctx, vals, errors) => {
        const bad = vals.find((v) => !/^\d{1,16}$/.test(v.trim()));
        if (bad !== undefined) return void (errors.created_by_id = [`Select a valid choice. ${bad} is not one of the available choices.`]);
        const ids = vals.map((v) => Number(v));
        const found = new Set((await ctx.db.selectFrom('users_user').select('id').where('id', 'in', ids).execute()).map((r) => Number(r.id)));
        const missing = ids.find((id) => !found.has(id));
        if (missing !== undefined) return void (errors.created_by_id = [`Select a valid choice. ${missing} is not one of the available choices.`]);
        return sql`extras_journalentry.created_by_id in (${sql.join(ids)})`;
      },
    },
    {
      name: 'created_by',
      kind: 'custom',
      where: async (ctx, vals, errors) => {
        const found = new Set((await ctx.db.selectFrom('users_user').select('username').where('username', 'in', vals).execute()).map((r) => String(r.username)));
        const missing = vals.find((v) => !found.has(v));
        if (missing !== undefined) return void (errors.created_by = [`Select a valid choice. ${missing} is not one of the available choices.`]);
        return sql`extras_journalentry.created_by_id in (select id from users_user where username in (${sql.join(vals)}))`;
      },
    },
    // DateTimeFromToRangeFilter on `created`: created_after / created_before.
    ...(['created_after', 'created_before'] as const).map((name) => ({
      name,
      kind: 'custom' as const,
      where: async (ctx: ReadCtx, vals: string[], errors: Record<string, string[]>) => {
        const t = vals[0]!.trim();
        const d = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(t) ? new Date(/[T ]/.test(t) && !/(Z|[+-]\d{2}:?\d{2})$/.test(t) ? t.replace(' ', 'T') + 'Z' : t.replace(' ', 'T')) : new Date(NaN);
        if (Number.isNaN(d.getTime())) return void (errors[name] = ['Enter a valid date/time.']);
        return sql`extras_journalentry.created ${sql.raw(name === 'created_after' ? '>=' : '<=')} ${ctx.dialect.timestamp(d.toISOString())}`;
      },
    })),
  ],
  async check(ctx, values, existing, errors) {
    // NetBox's CurrentUserDefault: an entry written without created_by is the writer's.
    if (!existing && !('created_by_id' in values)) values.created_by_id = ctx.userId ?? null;
    if (values.created_by_id !== null && values.created_by_id !== undefined) {
      const u = await ctx.db.selectFrom('users_user').select('id').where('id', '=', values.created_by_id).executeTakeFirst();
      if (!u) (errors.created_by ??= []).push(`Invalid pk "${values.created_by_id}" - object does not exist.`);
    }
  },
  genericRef: ASSIGNED,
  represent(_row, out) {
    // NetBox's field order: created and created_by before kind.
    const { id, url, display_url, display, assigned_object_type, assigned_object_id, created, created_by, kind, comments, tags, custom_fields, last_updated } = out;
    return { id, url, display_url, display, assigned_object_type, assigned_object_id, created, created_by, kind, comments, tags, custom_fields, last_updated };
  },
};
