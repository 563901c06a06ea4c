import type { Ctx } from './context.ts';
import { enqueueDerivation } from './derivation-jobs.ts';
import { badRequest, D, notFound } from './errors.ts';
import { listPage, offsetOf, pageOf, type Page, type Paging } from './paging.ts';
import { findSession, requireSession } from './sessions.ts';
import { preparedCache, withRaw } from './sqlite-fast.ts';
import { createMessagePg, listMessagesPg } from './pg-fast.ts';
import { formatTimestamp, newId, nextSeq, readBool, readJson, type Meta } from './values.ts';

export function messageToJson(r: any) {
  const m = readJson(r.metadata);
  return {
    content: r.content,
    is_user: readBool(r.is_user),
    session_id: r.session_id,
    id: r.id,
    h_metadata: m,
    metadata: m,
    created_at: formatTimestamp(r.created_at),
  };
}

// SQLite hot paths (message create/list) through prepared statements on the raw handle.
const SESSION_SCOPED = `select s.id, s.metadata from sessions s join users u on u.id = s.user_id
  where s.id = ? and s.user_id = ? and u.app_id = ?`;
const stmts = preparedCache({
  session: SESSION_SCOPED,
  insert: `insert into messages (id, session_id, is_user, content, metadata, created_at, seq) values (?, ?, ?, ?, ?, ?, ?)`,
  count: `select count(*) as n from messages where session_id = ?`,
  countFiltered: `select count(*) as n from messages where session_id = ? and json_contains(metadata, ?)`,
  pageAsc: `select * from messages where session_id = ? order by created_at, seq limit ? offset ?`,
  pageDesc: `select * from messages where session_id = ? order by created_at desc, seq desc limit ? offset ?`,
  pageAscFiltered: `select * from messages where session_id = ? and json_contains(metadata, ?) order by created_at, seq limit ? offset ?`,
  pageDescFiltered: `select * from messages where session_id = ? and json_contains(metadata, ?) order by created_at desc, seq desc limit ? offset ?`,
});

export interface MessageInput {
  content: string;
  is_user: boolean;
  metadata?: Meta | null;
}

/**
 * Stores a message in a session of the user of the app (404 otherwise). A
 * user message also enqueues fact derivation in the same transaction, so a
 * stored message always gets its job.
 */
export async function createMessage(ctx: Ctx, appId: string, userId: string, sessionId: string, input: MessageInput) {
  const { storage } = ctx;
  const d = storage.dialect;
  const meta = input.metadata ?? {};
  const now = new Date();
  const row = {
    id: newId(),
    session_id: sessionId,
    is_user: d.bool(input.is_user),
    content: input.content,
    metadata: d.json(meta),
    created_at: d.timestamp(now),
    seq: nextSeq(),
  };
  const json = {
    content: input.content,
    is_user: input.is_user,
    session_id: sessionId,
    id: row.id,
    h_metadata: meta,
    metadata: meta,
    created_at: formatTimestamp(now),
  };
  if (!input.is_user && storage.sqlite) {
    return withRaw(storage, (raw) => {
      const s = stmts(raw);
      if (!s.session.get(sessionId, userId, appId)) throw notFound(D.session);
      s.insert.run(row.id, row.session_id, row.is_user, row.content, row.metadata, row.created_at, row.seq);
      return json;
    });
  }
  if (storage.pgPool) {
    const created = await createMessagePg(storage, ctx.queue, { appId, userId, sessionId }, row as any);
    if (!created) throw notFound(D.session);
    return json;
  }
  await storage.db.transaction().execute(async (trx) => {
    const session = await findSession(trx, appId, userId, sessionId);
    if (!session) throw notFound(D.session);
    await trx.insertInto('messages').values(row).execute();
    if (input.is_user) {
      await enqueueDerivation(trx, ctx.queue, { id: row.id, session_id: sessionId, user_id: userId, content: input.content, is_user: true }, readJson(session.metadata));
    }
  });
  if (input.is_user) ctx.queue.wake();
  return json;
}

export async function listMessages(ctx: Ctx, appId: string, userId: string, sessionId: string, p: Paging): Promise<Page<ReturnType<typeof messageToJson>>> {
  const { storage } = ctx;
  if (storage.sqlite) {
    return withRaw(storage, (raw) => {
      const s = stmts(raw);
      if (!s.session.get(sessionId, userId, appId)) throw notFound(D.session);
      const f = p.filter === undefined ? undefined : JSON.stringify(p.filter);
      const counted = (f === undefined ? s.count.get(sessionId) : s.countFiltered.get(sessionId, f)) as { n: number } | undefined;
      const total = Number(counted?.n ?? 0);
      const offset = offsetOf(p);
      if (total === 0 || offset === undefined || offset >= total) return pageOf([], total, p);
      const rows =
        f === undefined
          ? (p.reverse ? s.pageDesc : s.pageAsc).all(sessionId, p.size, offset)
          : (p.reverse ? s.pageDescFiltered : s.pageAscFiltered).all(sessionId, f, p.size, offset);
      return pageOf(rows.map(messageToJson), total, p);
    });
  }
  const offset = offsetOf(p);
  if (storage.pgPool && offset !== undefined) {
    const r = await listMessagesPg(storage, { appId, userId, sessionId }, { size: p.size, offset, reverse: p.reverse, filter: p.filter === undefined ? undefined : JSON.stringify(p.filter) });
    if (!r.found) throw notFound(D.session);
    return pageOf(r.rows.map(messageToJson), r.total, p);
  }
  await requireSession(storage.db, appId, userId, sessionId);
  return listPage(storage.db, storage.dialect, 'messages', (qb) => qb.where('messages.session_id', '=', sessionId), p, messageToJson);
}

async function findMessage(ctx: Ctx, appId: string, userId: string, sessionId: string, messageId: string) {
  if (!(await findSession(ctx.storage.db, appId, userId, sessionId))) return undefined;
  return ctx.storage.db.selectFrom('messages').selectAll().where('id', '=', messageId).where('session_id', '=', sessionId).executeTakeFirst();
}

/** A missing message is reported as "Session not found", exactly as the reference does. */
export async function getMessage(ctx: Ctx, appId: string, userId: string, sessionId: string, messageId: string) {
  const r = await findMessage(ctx, appId, userId, sessionId, messageId);
  if (!r) throw notFound(D.session);
  return messageToJson(r);
}

export async function updateMessage(ctx: Ctx, appId: string, userId: string, sessionId: string, messageId: string, input: { metadata?: Meta | null }) {
  if (input.metadata === undefined || input.metadata === null) throw badRequest(D.messageMetaEmpty);
  const r = await findMessage(ctx, appId, userId, sessionId, messageId);
  if (!r) throw notFound(D.session);
  await ctx.storage.db.updateTable('messages').set({ metadata: ctx.storage.dialect.json(input.metadata) }).where('id', '=', messageId).execute();
  return messageToJson({ ...r, metadata: input.metadata });
}

/**
 * Stores many messages of one session in one transaction (bulk import, and
 * the RSS benchmark). Same rules as createMessage: scoped session lookup,
 * and derivation jobs for user messages in the same transaction.
 */
export async function createMessagesBatch(ctx: Ctx, appId: string, userId: string, sessionId: string, inputs: MessageInput[]) {
  const { storage } = ctx;
  const d = storage.dialect;
  const now = new Date();
  const rows = inputs.map((input) => ({
    id: newId(),
    session_id: sessionId,
    is_user: d.bool(input.is_user),
    content: input.content,
    metadata: d.json(input.metadata ?? {}),
    created_at: d.timestamp(now),
    seq: nextSeq(),
  }));
  const anyUser = inputs.some((i) => i.is_user);
  if (!anyUser && storage.sqlite) {
    await withRaw(storage, (raw) => {
      const s = stmts(raw);
      if (!s.session.get(sessionId, userId, appId)) throw notFound(D.session);
      raw.transaction(() => {
        for (const r of rows) s.insert.run(r.id, r.session_id, r.is_user, r.content, r.metadata, r.created_at, r.seq);
      })();
    });
  } else {
    await storage.db.transaction().execute(async (trx) => {
      const session = await findSession(trx, appId, userId, sessionId);
      if (!session) throw notFound(D.session);
      // Bounded statement size: PostgreSQL allows 65535 parameters per statement.
      for (let i = 0; i < rows.length; i += 500) await trx.insertInto('messages').values(rows.slice(i, i + 500)).execute();
      const meta = readJson(session.metadata);
      for (let i = 0; i < rows.length; i++) {
        if (inputs[i]!.is_user) await enqueueDerivation(trx, ctx.queue, { id: rows[i]!.id, session_id: sessionId, user_id: userId, content: inputs[i]!.content, is_user: true }, meta);
      }
    });
    if (anyUser) ctx.queue.wake();
  }
  return rows.map((r, i) => ({
    content: r.content,
    is_user: inputs[i]!.is_user,
    session_id: sessionId,
    id: r.id,
    h_metadata: inputs[i]!.metadata ?? {},
    metadata: inputs[i]!.metadata ?? {},
    created_at: formatTimestamp(now),
  }));
}
