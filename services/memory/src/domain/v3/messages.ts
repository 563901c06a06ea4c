import { sql, type Kysely } from 'kysely';
import type { Ctx } from '../context.ts';
import { nextSeq, type Meta } from '../values.ts';
import { compileFilter, MESSAGE_FILTER } from './filter.ts';
import { pageQuery, pagingOf, type V3Paging } from './paging.ts';
import { insertRows, primeColumnTypes, rowsThenStatement, type RowSet } from './bulk.ts';
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
  /** The batch's rows and its ingest job's payload, numbered after the session's last message. */
  const build = (state: EnqueueState & { last: number }) => {
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
    return { messageRows, work, sets: [{ table: 'v3_messages', columns: MESSAGE_COLUMNS, rows: messageRows }, work.rows] };
  };
  const opts = { maxAttempts: 25, queueName: `v3-ingest:${workspace}` };
  const out =
    (d.kind === 'postgres' && ctx.queue.addSql && ctx.storage.pgPool ? await createOnPg(ctx, workspace, session, senders, build, opts) : undefined) ??
    (await db.transaction().execute(async (trx) => {
      let state = await readBatchState(trx, ctx, workspace, session);
      if (!state || senders.some((p) => !state!.members.has(p))) {
        const peers: Record<string, null> = {};
        for (const p of senders) peers[p] = null;
        await ensureSession(trx, ctx, workspace, { id: session, peers });
        state = (await readBatchState(trx, ctx, workspace, session))!;
      }
      const { messageRows, work, sets } = build(state);
      // PostgreSQL: the rows and the job in one statement (one round trip); the job without NOTIFY, which would serialise
      // the commits of concurrent batches (@svc/queue SqlJobOptions.quiet): the workers are notified after the commit.
      if (ctx.queue.addSql && d.kind === 'postgres') await insertRows(trx, ctx.storage, sets, ctx.queue.addSql(INGEST_TASK, work.payload, { ...opts, quiet: true }));
      else {
        await insertRows(trx, ctx.storage, sets);
        await ctx.queue.add(INGEST_TASK, work.payload, opts, trx);
      }
      return messageRows;
    }));
  ctx.queue.wake();
  ctx.queue.notifyAdded?.();
  // The stored values, without reading them back (metadata as given: the stored JSON is its serialisation).
  // A batch's messages share their time unless the client gave theirs: formatted once.
  let lastTime: unknown, lastText = '';
  const time = (v: unknown) => (v === lastTime ? lastText : ((lastTime = v), (lastText = ts(v))));
  return out.map((r, i) => ({
    id: r[0] as string,
    content: messages[i]!.content,
    peer_id: messages[i]!.peer_id,
    session_id: session,
    metadata: messages[i]!.metadata ?? {},
    created_at: time(r[7]),
    workspace_id: workspace,
    token_count: r[6] as number,
  }));
}

const MESSAGE_COLUMNS = ['id', 'workspace', 'session', 'peer', 'content', 'metadata', 'token_count', 'created_at', 'seq', 'seq_in_session'] as const;

/**
 * PostgreSQL, a session whose senders are all active members (every batch but a session's first): the same
 * transaction in three round trips on a pooled connection of its own instead of five — BEGIN, the session
 * row's lock and the state read after it go as one simple query (three statements, each with its own
 * snapshot, as when sent one by one: the members and last number are read after the lock is held), then the
 * rows and the job in one statement, then COMMIT. Undefined (nothing written) when the session is missing or
 * inactive or a sender is not a member: the caller then takes the general path (get-or-create, join).
 */
async function createOnPg(
  ctx: Ctx,
  workspace: string,
  session: string,
  senders: string[],
  build: (state: EnqueueState & { last: number }) => { messageRows: unknown[][]; work: { payload: unknown }; sets: RowSet[] },
  opts: { maxAttempts: number; queueName: string },
): Promise<unknown[][] | undefined> {
  await primeColumnTypes(ctx.storage.db, ['v3_messages', 'v3_work']);
  const client = await ctx.storage.pgPool!.connect();
  let failed: Error | undefined;
  try {
    const w = client.escapeLiteral(workspace);
    const s = client.escapeLiteral(session);
    // The two reads are prepared once per connection (PREPARE in the same simple query, first time), so the
    // server plans them once instead of per batch.
    const fresh = !preparedOn.has(client);
    const prepare = fresh ? `prepare ${LOCK_STMT}(text, text) as ${sessionStateSql('$1', '$2', true)}; prepare ${STATE_STMT}(text, text) as ${membersStateSql('$1', '$2')}; ` : '';
    let results: Array<{ rows: any[] }>;
    try {
      results = (await client.query(`${prepare}begin; execute ${LOCK_STMT}(${w}, ${s}); execute ${STATE_STMT}(${w}, ${s})`)) as unknown as Array<{ rows: any[] }>;
    } catch (err) {
      // Prepared before another process changed a table they read (0A000, "cached plan must not change result
      // type") or gone (26000): dropped, and this batch goes the general way. PREPARE outlives a rolled-back
      // transaction, so a failed first use drops what it may have prepared too.
      const code = (err as { code?: string }).code;
      const stale = code === '0A000' || code === '26000';
      if (fresh || stale) {
        await client.query('rollback');
        for (const name of [LOCK_STMT, STATE_STMT]) await client.query(`deallocate ${name}`).catch(() => {});
        preparedOn.delete(client);
      }
      if (stale) return undefined;
      throw err;
    }
    if (fresh) preparedOn.add(client);
    const state = batchStateOf(results[results.length - 2]!.rows[0], results[results.length - 1]!.rows);
    if (!state || senders.some((p) => !state.members.has(p))) {
      await client.query('rollback');
      return undefined;
    }
    const { messageRows, work, sets } = build(state);
    const q = await rowsThenStatement(ctx.storage.db, sets, ctx.queue.addSql!(INGEST_TASK, work.payload, { ...opts, quiet: true }));
    await client.query(q.text, q.params);
    await client.query('commit');
    return messageRows;
  } catch (err) {
    // The connection goes back to the pool only once it is out of the transaction.
    await client.query('rollback').catch((e: Error) => (failed = e));
    throw err;
  } finally {
    client.release(failed);
  }
}

/** Connections holding createOnPg's prepared reads. */
const preparedOn = new WeakSet<object>();
const LOCK_STMT = 'v3_batch_session_lock';
const STATE_STMT = 'v3_batch_session_state';

/** The session row (locked with `lock`) with the workspace's configuration; literals already quoted. */
const sessionStateSql = (w: string, s: string, lock: boolean) => `select s.is_active, s.configuration as s_conf, w.configuration as w_conf
    from v3_sessions s join v3_workspaces w on w.name = s.workspace
    where s.workspace = ${w} and s.name = ${s}${lock ? ' for update of s' : ''}`;
/** The session's last `seq_in_session` and its active members with their session and peer configuration (a row with a null peer when none). */
const membersStateSql = (w: string, s: string) => `select
      (select max(seq_in_session) from v3_messages where workspace = ${w} and session = ${s}) as last,
      sp.peer, sp.configuration as m_conf, p.configuration as p_conf
    from (select 1 as one) x
    left join v3_session_peers sp on sp.workspace = ${w} and sp.session = ${s} and sp.left_at is null
    left join v3_peers p on p.workspace = sp.workspace and p.name = sp.peer`;

function batchStateOf(row: { is_active: unknown; s_conf: unknown; w_conf: unknown } | undefined, memberRows: Array<{ last: unknown; peer: string | null; m_conf: unknown; p_conf: unknown }>) {
  if (!row || !(row.is_active === true || row.is_active === 1)) return undefined;
  const members = new Map<string, Record<string, any>>();
  const peerConfs = new Map<string, Record<string, any>>();
  for (const m of memberRows) {
    if (m.peer == null) continue;
    members.set(m.peer, meta(m.m_conf));
    peerConfs.set(m.peer, meta(m.p_conf));
  }
  return { wsConf: meta(row.w_conf), sConf: meta(row.s_conf), members, peerConfs, last: Number(memberRows[0]?.last ?? 0) };
}

/**
 * The session row (locked until the transaction ends, on PostgreSQL) and, read after the lock, its active
 * members with their session and peer configuration and its last `seq_in_session`. Undefined when the session
 * is missing or inactive.
 */
async function readBatchState(trx: Kysely<any>, ctx: Ctx, workspace: string, session: string): Promise<(EnqueueState & { last: number }) | undefined> {
  const pg = ctx.storage.dialect.kind === 'postgres';
  const row = (await sql<{ is_active: unknown; s_conf: unknown; w_conf: unknown }>`select s.is_active, s.configuration as s_conf, w.configuration as w_conf
    from v3_sessions s join v3_workspaces w on w.name = s.workspace
    where s.workspace = ${workspace} and s.name = ${session}${pg ? sql` for update of s` : sql``}`.execute(trx)).rows[0];
  if (!row || !(row.is_active === true || row.is_active === 1)) return undefined;
  const r = await sql<{ last: unknown; peer: string | null; m_conf: unknown; p_conf: unknown }>`select
      (select max(seq_in_session) from v3_messages where workspace = ${workspace} and session = ${session}) as last,
      sp.peer, sp.configuration as m_conf, p.configuration as p_conf
    from (select 1 as one) x
    left join v3_session_peers sp on sp.workspace = ${workspace} and sp.session = ${session} and sp.left_at is null
    left join v3_peers p on p.workspace = sp.workspace and p.name = sp.peer`.execute(trx);
  return batchStateOf(row, r.rows);
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
