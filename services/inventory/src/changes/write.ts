import type { FastifyRequest } from 'fastify';
import { HttpError } from '@svc/kernel';
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '@svc/storage';
import type { Principal } from '../auth/index.ts';
import type { InventoryDeps } from '../deps.ts';
import { writeTransaction } from '../write-transaction.ts';
import { coalesce, type RecordedChange } from './coalesce.ts';
import { writeChangelog } from './changelog.ts';
import { pythonIsoNow } from './time.ts';
import type { ObjectEvent } from './types.ts';
import type { WriteContext } from './write-context.ts';

export type { WriteContext } from './write-context.ts';

/**
 * Where a write request's changes go. Its builder (routes/index.ts) wires in the event pipeline,
 * which reads the models and so stands above changes/.
 */
export interface ChangeSink {
  deps: InventoryDeps;
  /** REST representations for event data (relative URLs) of objects of one type, read inside the transaction, by id. */
  representations(trx: Kysely<any>, objectType: string, ids: number[]): Promise<Map<number, Record<string, unknown>>>;
  /** The outbox (B's enqueueObjectEvents): queues the request's events inside its transaction. */
  enqueueEvents(trx: Kysely<any>, events: ObjectEvent[]): Promise<void>;
  /** Called after each commit, which may have queued deliveries. */
  wakeDelivery(): void;
  /** Test hook: sees the coalesced events of every committed-or-not request. */
  onObjectEvents?: (events: ObjectEvent[]) => void;
}

/**
 * Runs one write request in one transaction: the domain changes, their
 * changelog rows and the outbox (the sink's enqueueEvents) commit or roll back
 * together. A transaction that lost a unique-key race or deadlocked runs
 * again, so a concurrent clash answers as a sequential one.
 */
export async function runWrite<T>(sink: ChangeSink, req: FastifyRequest, principal: Principal, fn: (w: WriteContext) => Promise<T>): Promise<T> {
  const { storage } = sink.deps;
  const result =
    storage.dialect.kind === 'sqlite'
      ? await groupCommitter(sink).submit<T>({ req, principal, fn })
      : await writeTransaction(storage, (trx) => runOne(sink, trx, req, principal, fn));
  sink.wakeDelivery();
  return result;
}

async function runOne<T>(sink: ChangeSink, trx: Kysely<any>, req: FastifyRequest, principal: Principal, fn: (w: WriteContext) => Promise<T>): Promise<T> {
  const { storage } = sink.deps;
  const w: WriteContext = { trx, dialect: storage.dialect, principal, requestId: String(req.id), now: new Date(), changes: [], representations: new Map(), settings: { enforceGlobalUnique: sink.deps.config.enforceGlobalUnique } };
  const out = await fn(w);
  await flushChanges(sink, w);
  return out;
}

interface PendingWrite {
  req: FastifyRequest;
  principal: Principal;
  fn: (w: WriteContext) => Promise<any>;
  resolve(v: unknown): void;
  reject(err: unknown): void;
}

/** Most write requests one SQLite transaction carries (they wait for the connection meanwhile). */
const MAX_GROUP = 32;
const committers = new WeakMap<object, GroupCommitter>();

function groupCommitter(sink: ChangeSink): GroupCommitter {
  let g = committers.get(sink.deps.storage);
  if (!g) committers.set(sink.deps.storage, (g = new GroupCommitter(sink)));
  return g;
}

/**
 * SQLite group commit. SQLite has one writer and every commit waits for the disk (synchronous=FULL:
 * the outbox must survive power loss), so write requests that arrive while a transaction runs are
 * gathered and committed together, each inside its own savepoint: a request that fails rolls back
 * alone and gets its own error; the others commit in one fsync. Responses still go out only after
 * the commit. A batch whose commit fails is re-run one request per transaction.
 */
class GroupCommitter {
  #queue: PendingWrite[] = [];
  #running = false;
  constructor(private readonly sink: ChangeSink) {}

  submit<T>(p: Omit<PendingWrite, 'resolve' | 'reject'>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ ...p, resolve: resolve as (v: unknown) => void, reject });
      if (!this.#running) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#running = true;
    try {
      while (this.#queue.length) {
        // Let requests that are still reading (auth, lookups) reach the queue while the connection is free.
        for (let i = 0, seen = -1; i < 4 && this.#queue.length < MAX_GROUP && this.#queue.length !== seen; i++) {
          seen = this.#queue.length;
          await new Promise((r) => setImmediate(r));
        }
        const batch = this.#queue.splice(0, MAX_GROUP);
        if (batch.length === 1) await this.#single(batch[0]!);
        else await this.#group(batch);
      }
    } finally {
      this.#running = false;
    }
  }

  async #single(p: PendingWrite): Promise<void> {
    try {
      p.resolve(await writeTransaction(this.sink.deps.storage, (trx) => runOne(this.sink, trx, p.req, p.principal, p.fn)));
    } catch (err) {
      p.reject(err);
    }
  }

  async #group(batch: PendingWrite[]): Promise<void> {
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; err: unknown }> = [];
    try {
      await this.sink.deps.storage.db.transaction().execute(async (trx) => {
        outcomes.length = 0;
        for (const p of batch) {
          await sql.raw('savepoint inv_write').execute(trx);
          try {
            const value = await runOne(this.sink, trx, p.req, p.principal, p.fn);
            await sql.raw('release savepoint inv_write').execute(trx);
            outcomes.push({ ok: true, value });
          } catch (err) {
            await sql.raw('rollback to savepoint inv_write').execute(trx);
            await sql.raw('release savepoint inv_write').execute(trx);
            outcomes.push({ ok: false, err });
          }
        }
      });
    } catch {
      // The shared commit failed (busy database, disk error): each request gets its own try.
      for (const p of batch) await this.#single(p);
      return;
    }
    for (const [i, p] of batch.entries()) {
      const o = outcomes[i]!;
      if (o.ok) p.resolve(o.value);
      // A database error (a unique key another process just took, a busy lock) gets the retries a lone request would.
      else if (!(o.err instanceof HttpError)) await this.#single(p);
      else p.reject(o.err);
    }
  }
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
  await sink.enqueueEvents(w.trx, events);
  sink.onObjectEvents?.(events);
}
