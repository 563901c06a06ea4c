import { createHmac } from 'node:crypto';
import { isIP } from 'node:net';
import type { Kysely } from 'kysely';
import type { TaskHandler } from '@svc/queue';
import type { Ctx } from '../context.ts';
import { nextSeq } from '../values.ts';
import { pageQuery, pagingOf, type V3Paging } from './paging.ts';
import { conflict, nanoid, notFound, ts, validation } from './util.ts';
import { ensureWorkspace } from './workspaces.ts';

export const WEBHOOK_TASK = 'memory_v3_webhook';
/** The reference's WEBHOOK_MAX_WORKSPACE_LIMIT. */
export const MAX_ENDPOINTS = 10;
/** Delivery tries per endpoint and event (the durable queue retries with exponential backoff). */
export const DELIVERY_ATTEMPTS = 5;

export interface WebhookSettings {
  secret?: string;
  allowPrivate?: boolean;
}

export function webhookToJson(r: any) {
  return { id: r.id, workspace_id: r.workspace, url: r.url, created_at: ts(r.created_at) };
}

/** Private, loopback, link-local, reserved, multicast or unspecified IP literals (Python's ipaddress flags). */
export function isInternalIp(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  const kind = isIP(h);
  if (kind === 4) {
    const [a, b] = h.split('.').map(Number) as [number, number];
    return a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b <= 127) || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 192 && b === 0) || (a === 198 && (b === 18 || b === 19)) || a >= 224;
  }
  if (kind === 6) {
    const l = h.toLowerCase();
    if (l === '::' || l === '::1') return true;
    if (l.startsWith('::ffff:')) return isInternalIp(l.slice(7)) || /^::ffff:[0-9a-f]/.test(l);
    return /^(fc|fd|fe8|fe9|fea|feb|ff)/.test(l) || l.startsWith('2001:db8') || l.startsWith('64:ff9b') || l.startsWith('100::');
  }
  return false;
}

function checkUrl(raw: string, s: WebhookSettings): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw validation('Invalid URL format');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw validation('Only HTTP and HTTPS URLs are allowed');
  if (!u.hostname) throw validation('Invalid URL format');
  if (!s.allowPrivate && isInternalIp(u.hostname)) throw validation('Private/internal IP addresses are not allowed');
  return raw;
}

/** Get-or-create by URL (201 when created); at most MAX_ENDPOINTS per workspace (409). */
export async function getOrCreateWebhook(ctx: Ctx, s: WebhookSettings, workspace: string, url: string) {
  checkUrl(url, s);
  const { db, dialect: d } = ctx.storage;
  return db.transaction().execute(async (trx) => {
    await ensureWorkspace(trx, ctx, workspace);
    // The workspace row serialises registrations, so the limit holds under concurrency.
    await d.forUpdate(trx.selectFrom('v3_workspaces').select('name').where('name', '=', workspace)).execute();
    const existing = await trx.selectFrom('v3_webhooks').selectAll().where('workspace', '=', workspace).where('url', '=', url).executeTakeFirst();
    if (existing) return { created: false, webhook: webhookToJson(existing) };
    const n = await trx.selectFrom('v3_webhooks').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace', '=', workspace).executeTakeFirst();
    if (Number(n?.n ?? 0) >= MAX_ENDPOINTS) throw conflict(`Maximum number of webhook endpoints (${MAX_ENDPOINTS}) reached for this workspace.`);
    const row = { id: nanoid(), workspace, url, created_at: d.timestamp(new Date()), seq: nextSeq() };
    await trx.insertInto('v3_webhooks').values(row).execute();
    return { created: true, webhook: webhookToJson(row) };
  });
}

export async function listWebhooks(ctx: Ctx, workspace: string, q: V3Paging) {
  const base = ctx.storage.db.selectFrom('v3_webhooks').where('v3_webhooks.workspace', '=', workspace) as any;
  return pageQuery(base, 'v3_webhooks', ['v3_webhooks.created_at', 'v3_webhooks.seq'], pagingOf({ ...q, reverse: false }), webhookToJson);
}

export async function deleteWebhook(ctx: Ctx, workspace: string, id: string) {
  const r = await ctx.storage.db.deleteFrom('v3_webhooks').where('workspace', '=', workspace).where('id', '=', id).executeTakeFirst();
  if (Number(r.numDeletedRows) === 0) throw notFound('Webhook endpoint not found');
}

/** Python's `json.dumps(v, separators=(",", ":"), sort_keys=True)` (ASCII only, keys sorted), the bytes the reference signs. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') {
    const s = JSON.stringify(v ?? null);
    return typeof v === 'string' ? s.replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')) : s;
  }
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${canonicalJson(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
}

export const sign = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex');

/**
 * Queues one signed delivery per endpoint of the workspace (in the caller's
 * transaction when given). Without a secret the event is dropped, as the reference does.
 */
export async function publishEvent(ctx: Ctx, s: WebhookSettings, workspace: string, type: string, data: Record<string, unknown>, trx?: Kysely<any>): Promise<number> {
  if (!s.secret) return 0;
  const db = trx ?? ctx.storage.db;
  const urls = (await db.selectFrom('v3_webhooks').select('url').where('workspace', '=', workspace).execute()).map((r: any) => r.url as string);
  if (!urls.length) return 0;
  const now = new Date().toISOString();
  const body = canonicalJson({ type, data, timestamp: `${now.slice(0, 23)}000Z` });
  const signature = sign(s.secret, body);
  for (const url of urls) await ctx.queue.add(WEBHOOK_TASK, { url, body, signature }, { maxAttempts: DELIVERY_ATTEMPTS }, trx);
  ctx.queue.wake();
  return urls.length;
}

/** The delivery job: a POST of the signed bytes; anything but 2xx (or no answer in 30 s) is retried by the queue. */
export function webhookTasks(): Record<string, TaskHandler> {
  return {
    [WEBHOOK_TASK]: async (p: { url: string; body: string; signature: string }) => {
      const res = await fetch(p.url, {
        method: 'POST',
        body: p.body,
        headers: { 'content-type': 'application/json', 'x-honcho-signature': p.signature },
        redirect: 'manual',
        signal: AbortSignal.timeout(30_000),
      });
      await res.body?.cancel().catch(() => {});
      if (res.status < 200 || res.status >= 300) throw new Error(`webhook ${p.url} answered ${res.status}`);
    },
  };
}
