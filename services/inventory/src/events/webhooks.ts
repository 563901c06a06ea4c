import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '@svc/storage';
import { djangoIso } from '../models/values.ts';
import { Fields, ValidationFailed } from './validate.ts';
import { TemplateCompileError } from './templates.ts';

/** Compiles a template where it cannot hurt the API (a render worker thread); throws TemplateCompileError. */
export interface TemplateChecker {
  check(source: string, kind: 'headers' | 'other'): Promise<void>;
}

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

export interface WebhookRow {
  id: number;
  name: string;
  description: string;
  payload_url: string;
  http_method: string;
  http_content_type: string;
  additional_headers: string;
  body_template: string;
  secret: string;
  ssl_verification: boolean;
  ca_file_path: string | null;
  timeout: number | null;
  max_retries: number | null;
  custom_fields: Record<string, unknown>;
  created: string;
  last_updated: string;
}

export function readWebhook(r: Record<string, any>, d: SqlDialect): WebhookRow {
  return {
    id: Number(r.id),
    name: r.name,
    description: r.description,
    payload_url: r.payload_url,
    http_method: r.http_method,
    http_content_type: r.http_content_type,
    additional_headers: r.additional_headers,
    body_template: r.body_template,
    secret: r.secret,
    ssl_verification: d.readBool(r.ssl_verification),
    ca_file_path: r.ca_file_path ?? null,
    timeout: r.timeout === null || r.timeout === undefined ? null : Number(r.timeout),
    max_retries: r.max_retries === null || r.max_retries === undefined ? null : Number(r.max_retries),
    custom_fields: d.parseJson(r.custom_fields) ?? {},
    created: d.readTimestamp(r.created),
    last_updated: d.readTimestamp(r.last_updated),
  };
}

/** `{id, url, display, name, description}` as NetBox's brief webhook. */
export function briefWebhook(w: { id: number; name: string; description?: string }) {
  return { id: w.id, url: `/api/extras/webhooks/${w.id}/`, display: w.name, name: w.name, description: w.description ?? '' };
}

/** REST representation; the secret is write-only (only whether one is set is shown). */
export function serializeWebhook(w: WebhookRow) {
  return {
    id: w.id,
    url: `/api/extras/webhooks/${w.id}/`,
    display_url: `/extras/webhooks/${w.id}/`,
    display: w.name,
    name: w.name,
    description: w.description,
    payload_url: w.payload_url,
    http_method: w.http_method,
    http_content_type: w.http_content_type,
    additional_headers: w.additional_headers,
    body_template: w.body_template,
    secret_set: w.secret !== '',
    ssl_verification: w.ssl_verification,
    ca_file_path: w.ca_file_path,
    timeout: w.timeout,
    max_retries: w.max_retries,
    custom_fields: w.custom_fields,
    tags: [],
    created: djangoIso(w.created),
    last_updated: djangoIso(w.last_updated),
  };
}

const TEMPLATE_MARK = /\{\{|\{%|\{#/;

/** NetBox 4.6.8 Webhook.clean() for payload_url: templates compiled, literal URLs http(s) with a host. */
async function checkPayloadUrl(f: Fields, url: string, engine: TemplateChecker): Promise<void> {
  if (TEMPLATE_MARK.test(url)) {
    const scheme = /^\s*([A-Za-z][A-Za-z0-9+.-]*):/.exec(url);
    if (scheme && !TEMPLATE_MARK.test(scheme[0]) && !['http', 'https'].includes(scheme[1]!.toLowerCase())) {
      f.add('payload_url', `Unsupported URL scheme "${scheme[1]}": only http and https are allowed.`);
      return;
    }
    await checkTemplate(f, 'payload_url', url, engine, 'other');
    return;
  }
  let u: URL | undefined;
  try {
    u = new URL(url.trim());
  } catch {
    /* reported below */
  }
  if (!u || !['http:', 'https:'].includes(u.protocol) || !u.host) f.add('payload_url', 'Enter a valid URL (http or https, with a host).');
}

async function checkTemplate(f: Fields, field: string, source: string, engine: TemplateChecker, kind: 'headers' | 'other'): Promise<void> {
  try {
    await engine.check(source, kind);
  } catch (err) {
    if (err instanceof TemplateCompileError) f.add(field, `Invalid template: ${err.message}`);
    else f.add(field, `Invalid template: ${(err as Error).message}`);
  }
}

/**
 * Compiles the templates of a webhook body (or of each item of a bulk body) ahead of the write
 * transaction, so the checks inside it are answered from the checker's cache instead of holding
 * the database's write lock while a render worker is busy.
 */
export async function precheckTemplates(body: unknown, engine: TemplateChecker): Promise<void> {
  const items = Array.isArray(body) ? body.slice(0, 1000) : [body];
  const checks: Promise<void>[] = [];
  for (const it of items) {
    if (typeof it !== 'object' || it === null) continue;
    const o = it as Record<string, unknown>;
    if (typeof o.payload_url === 'string' && o.payload_url.length <= 500) checks.push(engine.check(o.payload_url, 'other'));
    if (typeof o.additional_headers === 'string' && o.additional_headers.length <= 65_536) checks.push(engine.check(o.additional_headers, 'headers'));
    if (typeof o.body_template === 'string' && o.body_template.length <= 1_048_576) checks.push(engine.check(o.body_template, 'other'));
  }
  await Promise.all(checks.map((c) => c.catch(() => {})));
}

export type WebhookValues = Partial<Omit<WebhookRow, 'id' | 'created' | 'last_updated'>>;

/** Validates a create (partial=false), PUT (partial=false) or PATCH body against the current row. */
export async function validateWebhook(input: unknown, current: WebhookRow | undefined, partial: boolean, engine: TemplateChecker): Promise<WebhookValues> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ValidationFailed({ non_field_errors: ['Invalid data. Expected a dictionary, but got ' + (Array.isArray(input) ? 'list' : typeof input) + '.'] });
  }
  const f = new Fields(input as Record<string, unknown>, partial);
  const v: WebhookValues = {};
  const set = <K extends keyof WebhookValues>(k: K, x: WebhookValues[K] | undefined) => {
    if (x !== undefined) v[k] = x;
  };
  set('name', f.str('name', { required: true, max: 150 }) ?? undefined);
  set('description', f.str('description', { max: 200, blank: true }) ?? undefined);
  const url = f.str('payload_url', { required: true, max: 500 });
  if (typeof url === 'string') {
    await checkPayloadUrl(f, url, engine);
    v.payload_url = url;
  }
  set('http_method', f.choice('http_method', HTTP_METHODS));
  set('http_content_type', f.str('http_content_type', { max: 100 }) ?? undefined);
  const headers = f.str('additional_headers', { blank: true, max: 65_536 });
  if (typeof headers === 'string') {
    await checkTemplate(f, 'additional_headers', headers, engine, 'headers');
    v.additional_headers = headers;
  }
  const body = f.str('body_template', { blank: true, max: 1_048_576 });
  if (typeof body === 'string') {
    await checkTemplate(f, 'body_template', body, engine, 'other');
    v.body_template = body;
  }
  set('secret', f.str('secret', { blank: true, max: 255 }) ?? undefined);
  set('ssl_verification', f.bool('ssl_verification'));
  const ca = f.str('ca_file_path', { max: 4096, nullable: true });
  if (ca !== undefined) v.ca_file_path = ca;
  const timeout = f.int('timeout', { min: 1, max: 3600, nullable: true });
  if (timeout !== undefined) v.timeout = timeout;
  const retries = f.int('max_retries', { min: 0, max: 100, nullable: true });
  if (retries !== undefined) v.max_retries = retries;
  const cf = f.object('custom_fields');
  if (cf) v.custom_fields = cf;
  const ssl = v.ssl_verification ?? current?.ssl_verification ?? true;
  const caPath = v.ca_file_path !== undefined ? v.ca_file_path : current?.ca_file_path ?? null;
  if (caPath && !ssl) f.add('ca_file_path', 'Do not specify a CA certificate file if SSL verification is disabled.');
  f.throwIfAny();
  return v;
}

/** `lock`: for a read-modify-write inside a transaction (row lock until it ends). */
export async function getWebhook(db: Kysely<any>, d: SqlDialect, id: number, lock = false): Promise<WebhookRow | undefined> {
  const q = db.selectFrom('extras_webhook').selectAll().where('id', '=', id);
  const r = await (lock ? d.forUpdate(q) : q).executeTakeFirst();
  return r ? readWebhook(r, d) : undefined;
}

async function nameTaken(db: Kysely<any>, name: string, exceptId?: number): Promise<boolean> {
  let q = db.selectFrom('extras_webhook').select('id').where('name', '=', name);
  if (exceptId !== undefined) q = q.where('id', '!=', exceptId);
  return !!(await q.executeTakeFirst());
}

export async function createWebhook(db: Kysely<any>, d: SqlDialect, v: WebhookValues): Promise<WebhookRow> {
  if (await nameTaken(db, v.name!)) throw new ValidationFailed({ name: ['webhook with this name already exists.'] });
  const now = d.timestamp(new Date());
  const row = {
    name: v.name,
    description: v.description ?? '',
    payload_url: v.payload_url,
    http_method: v.http_method ?? 'POST',
    http_content_type: v.http_content_type ?? 'application/json',
    additional_headers: v.additional_headers ?? '',
    body_template: v.body_template ?? '',
    secret: v.secret ?? '',
    ssl_verification: d.bool(v.ssl_verification ?? true),
    ca_file_path: v.ca_file_path ?? null,
    timeout: v.timeout ?? null,
    max_retries: v.max_retries ?? null,
    custom_fields: d.json(v.custom_fields ?? {}),
    created: now,
    last_updated: now,
  };
  const r = await db.insertInto('extras_webhook').values(row).returningAll().executeTakeFirstOrThrow();
  return readWebhook(r, d);
}

export async function updateWebhook(db: Kysely<any>, d: SqlDialect, id: number, v: WebhookValues): Promise<WebhookRow> {
  if (v.name !== undefined && (await nameTaken(db, v.name, id))) throw new ValidationFailed({ name: ['webhook with this name already exists.'] });
  const patch: Record<string, unknown> = { ...v, last_updated: d.timestamp(new Date()) };
  if (v.ssl_verification !== undefined) patch.ssl_verification = d.bool(v.ssl_verification);
  if (v.custom_fields !== undefined) patch.custom_fields = d.json(v.custom_fields);
  const r = await db.updateTable('extras_webhook').set(patch).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
  return readWebhook(r, d);
}

/** Deleting a webhook deletes the event rules that call it (NetBox's GenericRelation cascade). */
export async function deleteWebhook(db: Kysely<any>, id: number): Promise<void> {
  await db.deleteFrom('extras_eventrule').where('action_object_type', '=', 'extras.webhook').where('action_object_id', '=', id).execute();
  await db.deleteFrom('extras_webhook').where('id', '=', id).execute();
}

export async function listWebhooks(
  db: Kysely<any>,
  d: SqlDialect,
  filter: { id?: number[]; name?: string[]; q?: string; limit: number; offset: number },
): Promise<{ count: number; rows: WebhookRow[] }> {
  let q = db.selectFrom('extras_webhook');
  if (filter.id?.length) q = q.where('id', 'in', filter.id);
  if (filter.name?.length) q = q.where('name', 'in', filter.name);
  if (filter.q) {
    const like = `%${filter.q.toLowerCase().replace(/[\\%_]/g, (c) => '\\' + c)}%`;
    q = q.where((eb) => eb.or([sql<boolean>`lower(name) like ${like} escape '\\'`, sql<boolean>`lower(payload_url) like ${like} escape '\\'`, sql<boolean>`lower(description) like ${like} escape '\\'`]));
  }
  const count = Number((await q.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst())?.n ?? 0);
  const rows = await q.selectAll().orderBy('name').orderBy('id').limit(filter.limit).offset(filter.offset).execute();
  return { count, rows: rows.map((r) => readWebhook(r, d)) };
}
