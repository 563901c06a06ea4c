import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '@svc/storage';
import { MODELS } from '../models/registry.ts';
import { djangoIso } from '../models/values.ts';
import { compileConditions, ConditionError, type CompiledConditions } from './conditions.ts';
import { Fields, ValidationFailed } from './validate.ts';
import { briefWebhook } from './webhooks.ts';

/** Models whose changes can fire event rules. */
export const EVENT_OBJECT_TYPES: readonly string[] = MODELS.map((m) => m.objectType);
export const EVENT_TYPES = ['object_created', 'object_updated', 'object_deleted'] as const;
export const ACTION_TYPES = ['webhook'] as const;

export interface EventRuleRow {
  id: number;
  name: string;
  description: string;
  enabled: boolean;
  object_types: string[];
  event_types: string[];
  conditions: unknown;
  action_type: string;
  action_object_type: string;
  action_object_id: number | null;
  action_data: Record<string, unknown> | null;
  comments: string;
  custom_fields: Record<string, unknown>;
  created: string;
  last_updated: string;
}

export function readRule(r: Record<string, any>, d: SqlDialect): EventRuleRow {
  return {
    id: Number(r.id),
    name: r.name,
    description: r.description,
    enabled: d.readBool(r.enabled),
    object_types: JSON.parse(r.object_types),
    event_types: JSON.parse(r.event_types),
    conditions: r.conditions === null ? null : JSON.parse(r.conditions),
    action_type: r.action_type,
    action_object_type: r.action_object_type,
    action_object_id: r.action_object_id === null ? null : Number(r.action_object_id),
    action_data: r.action_data === null ? null : JSON.parse(r.action_data),
    comments: r.comments,
    custom_fields: d.parseJson(r.custom_fields) ?? {},
    created: d.readTimestamp(r.created),
    last_updated: d.readTimestamp(r.last_updated),
  };
}

export function serializeRule(r: EventRuleRow, webhook: { id: number; name: string; description?: string } | undefined) {
  return {
    id: r.id,
    url: `/api/extras/event-rules/${r.id}/`,
    display_url: `/extras/event-rules/${r.id}/`,
    display: r.name,
    object_types: r.object_types,
    name: r.name,
    enabled: r.enabled,
    event_types: r.event_types,
    conditions: r.conditions,
    action_type: { value: r.action_type, label: 'Webhook' },
    action_object_type: r.action_object_type,
    action_object_id: r.action_object_id,
    action_object: webhook ? briefWebhook(webhook) : null,
    action_data: r.action_data,
    description: r.description,
    comments: r.comments,
    custom_fields: r.custom_fields,
    tags: [],
    created: djangoIso(r.created),
    last_updated: djangoIso(r.last_updated),
  };
}

export type RuleValues = Partial<Omit<EventRuleRow, 'id' | 'created' | 'last_updated'>>;

export async function validateRule(db: Kysely<any>, input: unknown, current: EventRuleRow | undefined, partial: boolean): Promise<RuleValues> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ValidationFailed({ non_field_errors: ['Invalid data. Expected a dictionary, but got ' + (Array.isArray(input) ? 'list' : typeof input) + '.'] });
  }
  const body = input as Record<string, unknown>;
  const f = new Fields(body, partial);
  const v: RuleValues = {};
  const name = f.str('name', { required: true, max: 150 });
  if (typeof name === 'string') v.name = name;
  const desc = f.str('description', { max: 200, blank: true });
  if (typeof desc === 'string') v.description = desc;
  const comments = f.str('comments', { blank: true, max: 65_536 });
  if (typeof comments === 'string') v.comments = comments;
  const enabled = f.bool('enabled');
  if (enabled !== undefined) v.enabled = enabled;
  const ot = f.stringList('object_types', EVENT_OBJECT_TYPES, { required: true });
  if (ot) v.object_types = ot;
  const et = f.stringList('event_types', EVENT_TYPES, { required: true });
  if (et) v.event_types = et;
  if (f.has('conditions')) {
    const raw = body.conditions;
    try {
      if (JSON.stringify(raw ?? null).length > 65_536) throw new ConditionError('Conditions are too large (at most 64 KiB).');
      compileConditions(raw);
      v.conditions = raw ?? null;
    } catch (err) {
      f.add('conditions', err instanceof ConditionError ? err.message : `Invalid conditions: ${(err as Error).message}`);
    }
  }
  const at = f.choice('action_type', ACTION_TYPES);
  if (at) v.action_type = at;
  if (f.has('action_object_type')) {
    if (body.action_object_type !== 'extras.webhook') f.add('action_object_type', `"${String(body.action_object_type).slice(0, 100)}" is not a valid choice; event rules send webhooks (extras.webhook).`);
    else v.action_object_type = 'extras.webhook';
  } else if (!partial && !current) {
    v.action_object_type = 'extras.webhook';
  }
  const aid = f.int('action_object_id', { min: 1, required: true });
  if (typeof aid === 'number') {
    const w = await db.selectFrom('extras_webhook').select('id').where('id', '=', aid).executeTakeFirst();
    if (!w) f.add('action_object_id', `Webhook with id ${aid} does not exist.`);
    else v.action_object_id = aid;
  }
  if (f.has('action_data')) {
    const ad = body.action_data;
    if (ad !== null && (typeof ad !== 'object' || Array.isArray(ad))) f.add('action_data', 'Action data must be a JSON object (dictionary) or null.');
    else if (JSON.stringify(ad).length > 65_536) f.add('action_data', 'Action data is too large (at most 64 KiB).');
    else v.action_data = ad as Record<string, unknown> | null;
  }
  const cf = f.object('custom_fields');
  if (cf) v.custom_fields = cf;
  f.throwIfAny();
  return v;
}

async function nameTaken(db: Kysely<any>, name: string, exceptId?: number): Promise<boolean> {
  let q = db.selectFrom('extras_eventrule').select('id').where('name', '=', name);
  if (exceptId !== undefined) q = q.where('id', '!=', exceptId);
  return !!(await q.executeTakeFirst());
}

function columns(v: RuleValues, d: SqlDialect): Record<string, unknown> {
  const c: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === 'object_types' || k === 'event_types') c[k] = JSON.stringify(x);
    else if (k === 'conditions' || k === 'action_data') c[k] = x === null ? null : JSON.stringify(x);
    else if (k === 'enabled') c[k] = d.bool(x as boolean);
    else if (k === 'custom_fields') c[k] = d.json(x);
    else c[k] = x;
  }
  return c;
}

export async function createRule(db: Kysely<any>, d: SqlDialect, v: RuleValues): Promise<EventRuleRow> {
  if (await nameTaken(db, v.name!)) throw new ValidationFailed({ name: ['event rule with this name already exists.'] });
  const now = d.timestamp(new Date());
  const full: RuleValues = {
    description: '',
    comments: '',
    enabled: true,
    conditions: null,
    action_type: 'webhook',
    action_object_type: 'extras.webhook',
    action_data: null,
    custom_fields: {},
    ...v,
  };
  const r = await db
    .insertInto('extras_eventrule')
    .values({ ...columns(full, d), created: now, last_updated: now })
    .returningAll()
    .executeTakeFirstOrThrow();
  return readRule(r, d);
}

export async function updateRule(db: Kysely<any>, d: SqlDialect, id: number, v: RuleValues): Promise<EventRuleRow> {
  if (v.name !== undefined && (await nameTaken(db, v.name, id))) throw new ValidationFailed({ name: ['event rule with this name already exists.'] });
  const r = await db
    .updateTable('extras_eventrule')
    .set({ ...columns(v, d), last_updated: d.timestamp(new Date()) })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return readRule(r, d);
}

/** `lock`: for a read-modify-write inside a transaction (row lock until it ends). */
export async function getRule(db: Kysely<any>, d: SqlDialect, id: number, lock = false): Promise<EventRuleRow | undefined> {
  const q = db.selectFrom('extras_eventrule').selectAll().where('id', '=', id);
  const r = await (lock ? d.forUpdate(q) : q).executeTakeFirst();
  return r ? readRule(r, d) : undefined;
}

export async function listRules(
  db: Kysely<any>,
  d: SqlDialect,
  filter: { id?: number[]; name?: string[]; q?: string; enabled?: boolean; actionObjectId?: number[]; limit: number; offset: number },
): Promise<{ count: number; rows: EventRuleRow[] }> {
  let q = db.selectFrom('extras_eventrule');
  if (filter.id?.length) q = q.where('id', 'in', filter.id);
  if (filter.name?.length) q = q.where('name', 'in', filter.name);
  if (filter.enabled !== undefined) q = q.where('enabled', '=', d.bool(filter.enabled));
  if (filter.actionObjectId?.length) q = q.where('action_object_id', 'in', filter.actionObjectId);
  if (filter.q) {
    const like = `%${filter.q.toLowerCase().replace(/[\\%_]/g, (c) => '\\' + c)}%`;
    q = q.where((eb) => eb.or([sql<boolean>`lower(name) like ${like} escape '\\'`, sql<boolean>`lower(description) like ${like} escape '\\'`]));
  }
  const count = Number((await q.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst())?.n ?? 0);
  const rows = await q.selectAll().orderBy('name').orderBy('id').limit(filter.limit).offset(filter.offset).execute();
  return { count, rows: rows.map((r) => readRule(r, d)) };
}

/** Enabled rules in name order with their compiled conditions, cached by (id, last_updated). */
const compiledCache = new Map<string, CompiledConditions | Error>();
export function compiledFor(rule: EventRuleRow): CompiledConditions | Error {
  const key = `${rule.id}|${rule.last_updated}|${JSON.stringify(rule.conditions)}`;
  let c = compiledCache.get(key);
  if (c === undefined) {
    try {
      c = compileConditions(rule.conditions);
    } catch (err) {
      c = err as Error;
    }
    if (compiledCache.size > 1000) compiledCache.clear();
    compiledCache.set(key, c);
  }
  return c;
}
