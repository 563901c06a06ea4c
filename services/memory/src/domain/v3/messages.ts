import { sql, type Kysely } from 'kysely';
import type { Ctx } from '../context.ts';
import { nextSeq, type Meta } from '../values.ts';
import { compileFilter, MESSAGE_FILTER } from './filter.ts';
import { pageQuery, pagingOf, type V3Paging } from './paging.ts';
import { embedTexts, storeVectors } from './recall.ts';
import { enqueueForMessages } from './reasoning.ts';
import { ensureSession } from './sessions.ts';
import { estimateTokens, nanoid, notFound, parseClientTime } from './util.ts';
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
 * `seq_in_session` continues the session's numbering under a per-session lock
 * (PostgreSQL advisory lock; SQLite write transactions are serial), so
 * concurrent batches interleave whole and never share a number.
 */
export async function createMessages(ctx: Ctx, workspace: string, session: string, messages: MessageInput[]) {
  const { db, dialect: d } = ctx.storage;
  // Client timestamps are checked before anything is written.
  const times = messages.map((m, i) => (m.created_at == null ? undefined : parseClientTime(m.created_at, `messages.${i}.created_at`)));
  const vectors = await embedTexts(ctx, messages.map((m) => m.content));
  const rows = await db.transaction().execute(async (trx) => {
    const peers: Record<string, null> = {};
    for (const m of messages) peers[m.peer_id] = null;
    await ensureSession(trx, ctx, workspace, { id: session, peers });
    if (d.kind === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${workspace}), hashtext(${session}))`.execute(trx);
    const last = await trx
      .selectFrom('v3_messages')
      .select((eb) => eb.fn.max('seq_in_session').as('n'))
      .where('workspace', '=', workspace)
      .where('session', '=', session)
      .executeTakeFirst();
    let n = Number(last?.n ?? 0);
    const now = new Date();
    const out = messages.map((m, i) => ({
      id: nanoid(),
      workspace,
      session,
      peer: m.peer_id,
      content: m.content,
      metadata: d.json(m.metadata ?? {}),
      token_count: estimateTokens(m.content),
      created_at: d.timestamp(times[i] ?? now),
      seq: nextSeq(),
      seq_in_session: ++n,
    }));
    await trx.insertInto('v3_messages').values(out).execute();
    await storeVectors(trx, workspace, out.map((m, i) => ({ id: m.id, vector: m.content.trim() ? vectors[i] : undefined, content: m.content })));
    await enqueueForMessages(trx, ctx, workspace, session, out, messages.map((m) => m.configuration));
    return out;
  });
  ctx.queue.wake();
  return rows.map(messageToJson);
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
