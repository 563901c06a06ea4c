import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { SqlDialect } from '@svc/storage';
import type { Principal } from '../auth/index.ts';
import type { InventoryDeps } from '../deps.ts';
import { enqueueObjectEvents } from '../events/index.ts';
import { writeTransaction } from '../storage.ts';
import { wakeDelivery } from '../events/registry.ts';
import { coalesce, type RecordedChange } from './coalesce.ts';
import { writeChangelog } from './changelog.ts';
import { pythonIsoNow } from './time.ts';
import type { ObjectEvent } from './types.ts';

/** What a domain write function gets: the request's transaction and its change list. */
export interface WriteContext {
  trx: Kysely<any>;
  dialect: SqlDialect;
  principal: Principal;
  requestId: string;
  /** One clock reading per request: created/last_updated and the changelog agree. */
  now: Date;
  changes: RecordedChange[];
  settings?: import('../models/read.ts').ModelSettings;
  /** Final REST representations (relative URLs) of the changed objects, by `type:id`, filled when the request's changes are flushed. */
  representations: Map<string, Record<string, unknown>>;
}

export interface ChangeSink {
  deps: InventoryDeps;
  /** REST representations for event data (relative URLs) of objects of one type, read inside the transaction, by id. */
  representations(trx: Kysely<any>, objectType: string, ids: number[]): Promise<Map<number, Record<string, unknown>>>;
  /** Test hook: sees the coalesced events of every committed-or-not request. */
  onObjectEvents?: (events: ObjectEvent[]) => void;
}

/**
 * Runs one write request in one transaction: the domain changes, their
 * changelog rows and the outbox (B's enqueueObjectEvents) commit or roll back
 * together. A transaction that lost a unique-key race or deadlocked runs
 * again, so a concurrent clash answers as a sequential one.
 */
export async function runWrite<T>(sink: ChangeSink, req: FastifyRequest, principal: Principal, fn: (w: WriteContext) => Promise<T>): Promise<T> {
  const { storage } = sink.deps;
  const result = await writeTransaction(storage, async (trx) => {
    const w: WriteContext = { trx, dialect: storage.dialect, principal, requestId: String(req.id), now: new Date(), changes: [], representations: new Map(), settings: { enforceGlobalUnique: sink.deps.config.enforceGlobalUnique } };
    const out = await fn(w);
    await flushChanges(sink, w);
    return out;
  });
  wakeDelivery(sink.deps);
  return result;
}

async function flushChanges(sink: ChangeSink, w: WriteContext): Promise<void> {
  if (w.changes.length === 0) return;
  const pending = coalesce(w.changes);
  // One representation per surviving object serves the changelog's object_repr, the event data and the response.
  const byType = new Map<string, number[]>();
  for (const p of pending) if (p.event !== 'deleted') byType.set(p.objectType, [...(byType.get(p.objectType) ?? []), p.objectId]);
  for (const [objectType, ids] of byType) {
    for (const [id, data] of await sink.representations(w.trx, objectType, ids)) w.representations.set(`${objectType}:${id}`, data);
  }
  for (const c of w.changes) c.objectRepr ??= String(w.representations.get(`${c.objectType}:${c.objectId}`)?.display ?? c.objectId);
  // CHANGELOG_SKIP_EMPTY_CHANGES (NetBox's default): an update that changed nothing leaves no changelog row, but still fires its event.
  const logged = w.changes.filter((c) => c.action !== 'update' || JSON.stringify(c.prechange) !== JSON.stringify(c.postchange));
  await writeChangelog(w.trx, w.dialect, { userId: w.principal.userId, username: w.principal.username, requestId: w.requestId }, w.now, logged);
  const timestamp = pythonIsoNow();
  const events: ObjectEvent[] = [];
  for (const p of pending) {
    const data = p.event === 'deleted' ? p.deletedData : w.representations.get(`${p.objectType}:${p.objectId}`);
    if (!data) continue;
    events.push({
      event: p.event,
      objectType: p.objectType,
      model: p.model,
      objectId: p.objectId,
      data,
      snapshots: { prechange: p.prechange, postchange: p.postchange },
      username: w.principal.username,
      requestId: w.requestId,
      timestamp,
    });
  }
  await enqueueObjectEvents(w.trx, sink.deps, events);
  sink.onObjectEvents?.(events);
}
