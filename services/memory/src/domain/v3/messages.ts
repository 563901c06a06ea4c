import { sql, type Kysely } from 'kysely';
import type { Ctx } from '../context.ts';
import { nextSeq, type Meta } from '../values.ts';
import { compileFilter, MESSAGE_FILTER } from './filter.ts';
import { pageQuery, pagingOf, type V3Paging } from './paging.ts';
import { insertRows } from './bulk.ts';
import { INGEST_TASK, planMessageWork, queuedWork, type EnqueueState } from './reasoning.ts';
import { ensureSession } from './sessions.ts';
import { refuseScopePeers } from './scopes.ts';
import { estimateTokens, meta, nanoid, notFound, parseClientTime, ts } from './util.ts';
import { messageToJson } from './wire.ts';

export interface MessageInput {
  content: string;
  peer_id: string;
  metadata?: Meta | null;
  configuration?: Meta | null;
  created_at?: string | null;
}

/**
 * A batch of messages, in order, in one transaction: the session (and
 * workspace) is got or created, the authors are created and joined, and
 * `seq_in_session` continues the session's numbering under the session row's
 * lock (PostgreSQL `for update`; SQLite write transactions are serial), so
 * concurrent batches interleave whole and never share a number.
 *
 * Statements (both storages): the session row (locked) with the workspace's
 * configuration; the active members with their configurations and the last
 * `seq_in_session`; the messages and one `queued` work row per kind of unit
 * (one statement on PostgreSQL, prepared inserts on SQLite); the batch's
 * ingest job, which later embeds the messages and writes each work unit and
 * its job (reasoning.ts, INGEST_TASK). A missing or inactive session, or a
 * sender that is not an active member, goes through `ensureSession` first
 * (get-or-create, join).
 */
export async function createMessages(ctx: Ctx, workspace: string, session: string, messages: MessageInput[]) {
  const { db, dialect: d } = ctx.storage;
  // Client timestamps are checked before anything is written.
  const times = messages.map((m, i) => (m.created_at == null ? undefined : parseClientTime(m.created_at, `messages.${i}.created_at`)));
  const senders = [...new Set(messages.map((m) => m.peer_id))];
  // A scope's peer observes and never speaks (scopes.ts).
  if (senders.some((p) => p.startsWith('scope.'))) refuseScopePeers(senders, 'A scope never sends messages.');
  const out = await db.transaction().execute(async (trx) => {
    let state = await readBatchState(trx, ctx, workspace, session);
    if (!state || senders.some((p) => !state!.members.has(p))) {
      const peers: Record<string, null> = {};
      for (const p of senders) peers[p] = null;
      await ensureSession(trx, ctx, workspace, { id: session, peers });
      state = (await readBatchState(trx, ctx, workspace, session))!;
    }
    let n = state.last;
    const now = new Date();
    const rows = messages.map((m, i) => ({
      id: nanoid(),
      peer: m.peer_id,
      created_at: d.timestamp(times[i] ?? now),
      seq_in_session: ++n,
    }));
    const messageRows = rows.map((r, i) => {
      const m = messages[i]!;
      return [r.id, workspace, session, r.peer, m.content, d.json(m.metadata ?? {}), estimateTokens(m.content), r.created_at, nextSeq(), r.seq_in_session];
    });
    const work = queuedWork(ctx, workspace, session, rows.map((r) => r.id), planMessageWork(state, workspace, session, rows, messages.map((m) => m.configuration)));
    const sets = [{ table: 'v3_messages', columns: MESSAGE_COLUMNS, rows: messageRows }, work.rows];
    const opts = { maxAttempts: 25, queueName: `v3-ingest:${workspace}` };
    // PostgreSQL: the rows and the job in one statement (one round trip); the job without NOTIFY, which would serialise
    // the commits of concurrent batches (@svc/queue SqlJobOptions.quiet): the workers are notified after the commit.
    if (ctx.queue.addSql && d.kind === 'postgres') await insertRows(trx, ctx.storage, sets, ctx.queue.addSql(INGEST_TASK, work.payload, { ...opts, quiet: true }));
    else {
      await insertRows(trx, ctx.storage, sets);
      await ctx.queue.add(INGEST_TASK, work.payload, opts, trx);
    }
    return messageRows;
  });
  ctx.queue.wake();
  ctx.queue.notifyAdded?.();
  // The stored values, without reading them back (metadata as given: the stored JSON is its serialisation).
  return out.map((r, i) => ({
    id: r[0] as string,
    content: messages[i]!.content,
    peer_id: messages[i]!.peer_id,
    session_id: session,
    metadata: messages[i]!.metadata ?? {},
    created_at: ts(r[7]),
    workspace_id: workspace,
    token_count: r[6] as number,
  }));
}

const MESSAGE_COLUMNS = ['id', 'workspace', 'session', 'peer', 'content', 'metadata', 'token_count', 'created_at', 'seq', 'seq_in_session'] as const;

/**
 * The session row (locked until the transaction ends, on PostgreSQL) and, read after the lock, its active
 * members with their session and peer configuration and its last `seq_in_session`. Undefined when the session
 * is missing or inactive.
 */
async function readBatchState(trx: Kysely<any>, ctx: Ctx, workspace: string, session: string): Promise<(EnqueueState & { last: number }) | undefined> {
  const pg = ctx.storage.dialect.kind === 'postgres';
  const s = await sql<{ is_active: unknown; s_conf: unknown; w_conf: unknown }>`select s.is_active, s.configuration as s_conf, w.configuration as w_conf
    from v3_sessions s join v3_workspaces w on w.name = s.workspace
    where s.workspace = ${workspace} and s.name = ${session}${pg ? sql` for update of s` : sql``}`.execute(trx);
  const row = s.rows[0];
  if (!row || !(row.is_active === true || row.is_active === 1)) return undefined;
  const r = await sql<{ last: unknown; peer: string | null; m_conf: unknown; p_conf: unknown }>`select
      (select max(seq_in_session) from v3_messages where workspace = ${workspace} and session = ${session}) as last,
      sp.peer, sp.configuration as m_conf, p.configuration as p_conf
    from (select 1 as one) x
    left join v3_session_peers sp on sp.workspace = ${workspace} and sp.session = ${session} and sp.left_at is null
    left join v3_peers p on p.workspace = sp.workspace and p.name = sp.peer`.execute(trx);
  const members = new Map<string, Record<string, any>>();
  const peerConfs = new Map<string, Record<string, any>>();
  for (const m of r.rows) {
    if (m.peer == null) continue;
    members.set(m.peer, meta(m.m_conf));
    peerConfs.set(m.peer, meta(m.p_conf));
  }
  return { wsConf: meta(row.w_conf), sConf: meta(row.s_conf), members, peerConfs, last: Number(r.rows[0]?.last ?? 0) };
}

export async function listMessages(ctx: Ctx, workspace: string, session: string, filters: unknown, q: V3Paging) {
  const cond = compileFilter(filters, MESSAGE_FILTER, ctx.storage.dialect);
  let base = ctx.storage.db.selectFrom('v3_messages').where('v3_messages.workspace', '=', workspace).where('v3_messages.session', '=', session) as any;
  if (cond) base = base.where(cond);
  return pageQuery(base, 'v3_messages', ['v3_messages.seq'], pagingOf(q), messageToJson);
}

async function findMessage(db: Kysely<any>, workspace: string, session: string, id: string) {
  return db.selectFrom('v3_messages').selectAll().where('id', '=', id).where('workspace', '=', workspace).where('session', '=', session).executeTakeFirst();
}

export async function getMessage(ctx: Ctx, workspace: string, session: string, id: string) {
  const r = await findMessage(ctx.storage.db, workspace, session, id);
  if (!r) throw notFound(`Message with ID ${id} not found`);
  return messageToJson(r);
}

/** Metadata is replaced when given (null leaves it as it is). */
export async function updateMessage(ctx: Ctx, workspace: string, session: string, id: string, input: { metadata?: Meta | null }) {
  const { db, dialect: d } = ctx.storage;
  const r = await findMessage(db, workspace, session, id);
  if (!r) throw notFound('Message not found');
  if (input.metadata == null) return messageToJson(r);
  await db.updateTable('v3_messages').set({ metadata: d.json(input.metadata) }).where('id', '=', id).execute();
  return messageToJson({ ...r, metadata: input.metadata });
}
