import { sql } from 'kysely';
import { fail } from './field-problem.ts';
import type { Choice, ExtraFilter, FieldDef, ModelDef, Row } from './types.ts';

/**
 * NetBox's core data sources and data files (`/api/core/data-sources/`, `/api/core/data-files/`). A data source names
 * a backend and a URL; syncing it (routes/core-data-sources.ts, models/data-sync.ts) copies the files it holds into data
 * files. Config contexts and templates may take their data from one (NetBox's SyncedDataMixin: `syncedDataFields`).
 */

/** NetBox's registered data backends. Only `local` can sync here (the server has no network): see data-sync.ts. */
export const DATA_BACKENDS: Choice[] = [
  { value: 'local', label: 'Local' },
  { value: 'git', label: 'Git' },
  { value: 'amazon-s3', label: 'Amazon S3' },
];

export const DATA_SOURCE_STATUS: Choice[] = [
  { value: 'new', label: 'New' },
  { value: 'queued', label: 'Queued' },
  { value: 'syncing', label: 'Syncing' },
  { value: 'completed', label: 'Completed' },
  { value: 'failed', label: 'Failed' },
];

/** NetBox's JobIntervalChoices (minutes), the values of `sync_interval`. */
const SYNC_INTERVALS: Array<[number, string]> = [
  [60, 'Hourly'],
  [720, '12 hours'],
  [1440, 'Daily'],
  [10080, 'Weekly'],
  [43200, '30 days'],
];

function parseSyncInterval(v: unknown): number {
  if (typeof v === 'boolean' || !SYNC_INTERVALS.some(([n]) => String(n) === String(v).trim())) fail(`"${String(v).slice(0, 100)}" is not a valid choice.`);
  return Number(v);
}

/** Each backend's parameters that hold credentials (NetBox's DataBackend.sensitive_parameters). */
const SENSITIVE_PARAMETERS: Record<string, string[]> = { git: ['password'], 'amazon-s3': ['aws_secret_access_key'] };
/** NetBox's CENSOR_TOKEN and CENSOR_TOKEN_CHANGED. */
const CENSORED = '********';
const CENSORED_CHANGED = '***CHANGED***';

/**
 * A data source's credentials never reach the change log or an event payload: a value becomes NetBox's token, and a
 * changed one says so without showing either value (NetBox's DataSource.to_objectchange()).
 */
function censorParameters(prechange: Record<string, unknown> | null, postchange: Record<string, unknown> | null) {
  const type = String((postchange ?? prechange)?.type ?? '');
  const params = (snap: Record<string, unknown> | null) => (snap && snap.parameters && typeof snap.parameters === 'object' && !Array.isArray(snap.parameters) ? (snap.parameters as Record<string, unknown>) : {});
  const pre = { ...params(prechange) };
  const post = { ...params(postchange) };
  for (const name of SENSITIVE_PARAMETERS[type] ?? []) {
    if (post[name]) post[name] = post[name] !== pre[name] ? CENSORED_CHANGED : CENSORED;
    if (pre[name]) pre[name] = CENSORED;
  }
  return {
    prechange: prechange && Object.keys(params(prechange)).length ? { ...prechange, parameters: pre } : prechange,
    postchange: postchange && Object.keys(params(postchange)).length ? { ...postchange, parameters: post } : postchange,
  };
}

const choiceOf = (list: Choice[], v: unknown) => (v === null || v === undefined ? null : { value: v, label: list.find((c) => c.value === v)?.label ?? String(v) });

/** Filters on a read-only timestamp column stored as ISO text (`last_synced`, `data_synced`): exact and the comparisons. */
export function timestampFilters(table: string, name: string): ExtraFilter[] {
  const ops: Array<[string, string]> = [['', '='], ['__gt', '>'], ['__gte', '>='], ['__lt', '<'], ['__lte', '<=']];
  return ops.map(([suffix, op]) => ({
    name: `${name}${suffix}`,
    kind: 'custom' as const,
    where: async (_ctx, vals, errors) => {
      const isos: string[] = [];
      for (const v of vals) {
        const t = v.trim();
        const d = /^\d{4}-\d{2}-\d{2}([T ][\d:.]{5,15}(Z|[+-]\d{2}:?\d{2})?)?$/.test(t) ? new Date(/[T ]/.test(t) && !/(Z|[+-]\d{2}:?\d{2})$/.test(t) ? `${t.replace(' ', 'T')}Z` : t.replace(' ', 'T')) : null;
        if (!d || Number.isNaN(d.getTime())) return void (errors[`${name}${suffix}`] = ['Enter a valid date/time.']);
        isos.push(d.toISOString());
      }
      return sql`(${sql.join(isos.map((iso) => sql`${sql.ref(`${table}.${name}`)} ${sql.raw(op)} ${iso}`), sql` or `)})`;
    },
  }));
}

export const dataSource: ModelDef = {
  key: 'datasource',
  app: 'core',
  path: 'data-sources',
  table: 'core_datasource',
  objectType: 'core.datasource',
  verboseName: 'data source',
  title: 'DataSource',
  fields: [
    { name: 'name', column: 'name', kind: 'char', required: true, maxLength: 100, unique: true, filter: true },
    { name: 'type', column: 'type', kind: 'choice', required: true, choices: DATA_BACKENDS, filter: true },
    { name: 'source_url', column: 'source_url', kind: 'char', required: true, maxLength: 200, filter: true, label: 'URL' },
    { name: 'enabled', column: 'enabled', kind: 'boolean', default: true, filter: true },
    { name: 'description', column: 'description', kind: 'char', blank: true, maxLength: 200, default: '', filter: true },
    { name: 'sync_interval', column: 'sync_interval', kind: 'integer', nullable: true, default: null, parse: parseSyncInterval },
    {
      name: 'parameters',
      column: 'parameters',
      kind: 'json',
      nullable: true,
      default: null,
      parse: (v) => {
        if (JSON.stringify(v).length > 10_000) fail('Ensure this value has at most 10000 characters.');
        return v;
      },
    },
    { name: 'ignore_rules', column: 'ignore_rules', kind: 'text', blank: true, maxLength: 10_000, default: '' },
    { name: 'comments', column: 'comments', kind: 'text', blank: true, maxLength: 100_000, default: '' },
  ],
  ordering: ['name'],
  search: ['name', 'description', 'comments'],
  brief: ['name', 'description'],
  taggable: true,
  display: (r) => r.name,
  // `status` between `enabled` and `description` (computed values go before the field named; read-only: syncing sets it).
  computed: { description: [['status', (row) => choiceOf(DATA_SOURCE_STATUS, row.status ?? 'new')]] },
  counts: { file_count: { model: 'datafile', column: 'source_id' } },
  cascade: [{ model: 'datafile', column: 'source_id' }],
  censorSnapshots: censorParameters,
  protectedBy: [
    { model: 'configcontext', column: 'data_source_id' },
    { model: 'configtemplate', column: 'data_source_id' },
  ],
  // DataSource.clean(): a local source's URL is a path or a file:// URL.
  clean(values, existing, errors) {
    const at = (c: string) => (c in values ? values[c] : existing?.[c]);
    if (at('type') === 'local' && ('source_url' in values || 'type' in values)) {
      const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(String(at('source_url') ?? ''))?.[1]?.toLowerCase() ?? '';
      if (scheme !== '' && scheme !== 'file') (errors.source_url ??= []).push('URLs for local sources must start with file:// (or specify no scheme)');
    }
  },
  represent(row, out) {
    // NetBox's order: sync_interval as its choice, then last_synced before file_count.
    const { file_count, sync_interval, ...rest } = out;
    const si = SYNC_INTERVALS.find(([n]) => n === Number(sync_interval));
    return { ...insertAfter(rest, 'description', 'sync_interval', si ? { value: si[0], label: si[1] } : null), last_synced: row.last_synced ?? null, file_count };
  },
  extraFilters: [
    {
      name: 'status',
      kind: 'custom',
      where: async (_ctx, vals, errors) => {
        const bad = vals.find((v) => !DATA_SOURCE_STATUS.some((c) => c.value === v));
        if (bad !== undefined) return void (errors.status = [`Select a valid choice. ${bad} is not one of the available choices.`]);
        return sql`core_datasource.status in (${sql.join(vals)})`;
      },
    },
    {
      name: 'sync_interval',
      kind: 'custom',
      where: async (_ctx, vals, errors) => {
        const bad = vals.find((v) => !SYNC_INTERVALS.some(([n]) => String(n) === v.trim()));
        if (bad !== undefined) return void (errors.sync_interval = [`Select a valid choice. ${bad} is not one of the available choices.`]);
        return sql`core_datasource.sync_interval in (${sql.join(vals.map(Number))})`;
      },
    },
    ...timestampFilters('core_datasource', 'last_synced'),
  ],
};

/** A copy of `o` with `key: value` placed right after `after`. */
function insertAfter(o: Record<string, unknown>, after: string, key: string, value: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    out[k] = v;
    if (k === after) out[key] = value;
  }
  return out;
}

/**
 * A file a sync copied from its data source. Read-only through the API (NetBox's NetBoxReadOnlyModelViewSet): the
 * write routes of the registry answer 405 for it (routes/core-data-sources.ts registers only reads).
 */
export const dataFile: ModelDef = {
  key: 'datafile',
  app: 'core',
  path: 'data-files',
  table: 'core_datafile',
  objectType: 'core.datafile',
  verboseName: 'data file',
  title: 'DataFile',
  fields: [
    { name: 'source', column: 'source_id', kind: 'fk', fk: 'datasource', required: true },
    { name: 'path', column: 'path', kind: 'char', required: true, maxLength: 1000, filter: true },
    { name: 'size', column: 'size', kind: 'integer', required: true, min: 0, filter: true },
    { name: 'hash', column: 'hash', kind: 'char', required: true, maxLength: 64, filter: true },
  ],
  ordering: ['source', 'path'],
  search: ['path'],
  brief: ['path'],
  taggable: false,
  display: (r) => r.path,
  readOnly: true,
  uniqueTogether: [['source', 'path']],
  setNull: [
    { model: 'configcontext', column: 'data_file_id' },
    { model: 'configtemplate', column: 'data_file_id' },
  ],
  represent(_row, out) {
    // NetBox's DataFileSerializer: no `created`; last_updated is the file's.
    const { created: _c, last_updated, ...rest } = out;
    return { ...rest, last_updated };
  },
  extraFilters: [
    { name: 'source_id', kind: 'fk_id', column: 'source_id', model: 'datasource' },
    { name: 'source', kind: 'fk_slug', column: 'source_id', model: 'datasource', attribute: 'name' },
  ],
};

export const DATA_SOURCE_MODELS: ModelDef[] = [dataSource, dataFile];

/** SyncedDataMixin's writable fields on config contexts and templates (data_file and data_synced are read-only). */
export const syncedDataFields: FieldDef[] = [
  { name: 'data_source', column: 'data_source_id', kind: 'fk', fk: 'datasource', nullable: true, default: null },
  { name: 'data_path', column: 'data_path', kind: 'char', blank: true, maxLength: 1000, default: '', label: 'Data path' },
  { name: 'auto_sync_enabled', column: 'auto_sync_enabled', kind: 'boolean', default: false, filter: true },
];

/** Filters of a synced model (ConfigContextFilterSet, ConfigTemplateFilterSet). */
export function syncedDataFilters(table: string): ExtraFilter[] {
  return [
    { name: 'data_source_id', kind: 'fk_id', column: 'data_source_id', model: 'datasource' },
    { name: 'data_file_id', kind: 'fk_id', column: 'data_file_id', model: 'datafile' },
    ...timestampFilters(table, 'data_synced'),
  ];
}

/** The read-only synced-data keys of a representation (`data_file` brief from the refs, `data_synced`). */
export function syncedDataValues(row: Row, refs: Record<string, unknown>): { data_file: unknown; data_synced: unknown } {
  return { data_file: refs.data_file ?? null, data_synced: row.data_synced ?? null };
}
