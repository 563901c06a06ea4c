import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { SqlDialect } from '@svc/storage';
import { authenticate } from '../auth/index.ts';
import { writeChangelog } from '../changes/changelog.ts';
import type { EventRuleRow } from './rules.ts';
import type { WebhookRow } from './webhooks.ts';

/** Webhook snapshot for the change log (NetBox's serialize_object), with the secret masked: the change log is readable by more people. */
export function webhookSnapshot(w: WebhookRow): Record<string, unknown> {
  const { id: _id, last_updated: _lu, secret, ...rest } = w;
  return { ...rest, secret: secret ? '********' : '' };
}

export function ruleSnapshot(r: EventRuleRow): Record<string, unknown> {
  const { id: _id, last_updated: _lu, ...rest } = r;
  return rest;
}

/** One object_changes row for a webhook or event-rule write, in the write's transaction. */
export async function logChange(
  trx: Kysely<any>,
  d: SqlDialect,
  req: FastifyRequest,
  action: 'create' | 'update' | 'delete',
  kind: 'webhook' | 'eventrule',
  before: { id: number; name: string; snap: Record<string, unknown> } | null,
  after: { id: number; name: string; snap: Record<string, unknown> } | null,
): Promise<void> {
  const p = await authenticate(req);
  const obj = (after ?? before)!;
  await writeChangelog(trx, d, { userId: p?.userId ?? null, username: p?.username ?? '', requestId: String(req.id) }, new Date(), [
    { action, objectType: `extras.${kind}`, model: kind, objectId: obj.id, objectRepr: obj.name, prechange: before?.snap ?? null, postchange: after?.snap ?? null },
  ]);
}
