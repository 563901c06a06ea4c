import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { ObjectEvent } from '../changes/types.ts';
import type { InventoryDeps } from '../deps.ts';
import { evaluateConditions, InvalidCondition } from './conditions.ts';
import { pythonJsonDumps } from './python-json.ts';
import { compiledFor, readRule, type EventRuleRow } from './rules.ts';

export const DELIVER_TASK = 'inventory.deliver_webhooks';
/** One pending "drain now" job is enough however many deliveries wait; a running one gets a successor. */
export const DRAIN_NOW_KEY = 'inventory.deliver:now';

/**
 * The template context and default body, in NetBox 3.7–4.3 key order:
 * event, timestamp, model, username, request_id, data, snapshots.
 */
export function buildContext(e: ObjectEvent, rule: EventRuleRow): Record<string, unknown> {
  const actionData = rule.action_data && typeof rule.action_data === 'object' && !Array.isArray(rule.action_data) ? rule.action_data : {};
  return {
    event: e.event,
    timestamp: e.timestamp,
    model: e.model,
    username: e.username,
    request_id: e.requestId,
    data: { ...actionData, ...e.data },
    snapshots: { prechange: e.snapshots.prechange, postchange: e.snapshots.postchange },
  };
}

/**
 * The outbox: inside the request's transaction, every (event, matching rule)
 * becomes a queued delivery row, plus one queue job to drain them. If the
 * transaction rolls back, neither exists; once it commits, the job survives a
 * crash and some worker sends the rows.
 */
export async function enqueueObjectEvents(trx: Kysely<any>, deps: InventoryDeps, events: ObjectEvent[]): Promise<void> {
  if (events.length === 0) return;
  const d = deps.storage.dialect;
  const rules = (await trx.selectFrom('extras_eventrule').selectAll().where('enabled', '=', d.bool(true)).orderBy('name').execute()).map((r) => readRule(r, d));
  if (rules.length === 0) return;
  const webhookIds = [...new Set(rules.map((r) => r.action_object_id).filter((x): x is number => x !== null))];
  const webhooks = new Map<number, string>();
  if (webhookIds.length) {
    for (const w of await trx.selectFrom('extras_webhook').select(['id', 'name']).where('id', 'in', webhookIds).execute()) webhooks.set(Number(w.id), w.name);
  }
  const now = Date.now();
  const rows: Record<string, unknown>[] = [];
  for (const e of events) {
    const eventType = `object_${e.event}`;
    for (const rule of rules) {
      if (!rule.object_types.includes(e.objectType) || !rule.event_types.includes(eventType)) continue;
      if (rule.action_type !== 'webhook' || rule.action_object_id === null) continue;
      const webhookName = webhooks.get(rule.action_object_id);
      if (webhookName === undefined) continue;
      const compiled = compiledFor(rule);
      let matched = false;
      try {
        if (compiled instanceof Error) throw new InvalidCondition(compiled.message);
        matched = evaluateConditions(compiled, e.data);
      } catch (err) {
        // Fail closed, as NetBox: the rule is skipped and the reason logged.
        deps.log.error({ rule: rule.name, objectType: e.objectType, objectId: e.objectId }, `${rule.name}: Evaluation failed. ${(err as Error).message}`);
        continue;
      }
      if (!matched) continue;
      rows.push({
        message_id: `msg_${randomUUID().replace(/-/g, '')}`,
        webhook_id: rule.action_object_id,
        event_rule_id: rule.id,
        webhook_name: webhookName,
        event_rule_name: rule.name,
        object_type: e.objectType,
        object_id: e.objectId,
        event: e.event,
        request_id: e.requestId,
        // Stored as json.dumps prints it: valid JSON for every reader, and the default body as it is.
        context: pythonJsonDumps(buildContext(e, rule)),
        status: 'queued',
        attempts: 0,
        retry_base: 0,
        next_attempt_at: now,
        created_at: now,
        enqueued_at: now,
      });
    }
  }
  if (rows.length === 0) return;
  for (let i = 0; i < rows.length; i += 200) {
    const chunk = rows.slice(i, i + 200);
    const contexts = new Map<unknown, unknown>();
    for (const r of chunk) {
      contexts.set(r.message_id, r.context);
      delete r.context;
    }
    const ids = await trx.insertInto('events_delivery').values(chunk).returning(['id', 'message_id']).execute();
    await trx
      .insertInto('events_delivery_context')
      .values(ids.map((x) => ({ delivery_id: x.id, context: contexts.get(x.message_id) })))
      .execute();
  }
  await deps.queue.add(DELIVER_TASK, {}, { jobKey: DRAIN_NOW_KEY, maxAttempts: 25 }, trx);
}
