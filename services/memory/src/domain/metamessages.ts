import type { Ctx } from './context.ts';
import { badRequest, D, notFound } from './errors.ts';
import { listPage, type Paging } from './paging.ts';
import { requireSession } from './sessions.ts';
import { formatTimestamp, newId, nextSeq, readJson, type Meta } from './values.ts';

export function metamessageToJson(r: any) {
  const m = readJson(r.metadata);
  return {
    metamessage_type: r.metamessage_type,
    content: r.content,
    id: r.id,
    message_id: r.message_id,
    h_metadata: m,
    metadata: m,
    created_at: formatTimestamp(r.created_at),
  };
}

async function messageInSession(ctx: Ctx, sessionId: string, messageId: string): Promise<boolean> {
  return !!(await ctx.storage.db.selectFrom('messages').select('id').where('id', '=', messageId).where('session_id', '=', sessionId).executeTakeFirst());
}

/** The message must be in the session (the reference accepted any message id, or crashed on a missing one). */
export async function createMetamessage(
  ctx: Ctx,
  appId: string,
  userId: string,
  sessionId: string,
  input: { metamessage_type: string; content: string; message_id: string; metadata?: Meta | null },
) {
  const { db, dialect: d } = ctx.storage;
  await requireSession(db, appId, userId, sessionId);
  if (!(await messageInSession(ctx, sessionId, input.message_id))) throw notFound(D.session);
  const row = {
    id: newId(),
    message_id: input.message_id,
    metamessage_type: input.metamessage_type,
    content: input.content,
    metadata: d.json(input.metadata ?? {}),
    created_at: d.timestamp(new Date()),
    seq: nextSeq(),
  };
  await db.insertInto('metamessages').values(row).execute();
  return metamessageToJson(row);
}

export async function listMetamessages(
  ctx: Ctx,
  appId: string,
  userId: string,
  sessionId: string,
  f: { message_id?: string | null; metamessage_type?: string | null },
  p: Paging,
) {
  const { db, dialect: d } = ctx.storage;
  await requireSession(db, appId, userId, sessionId);
  return listPage(
    db,
    d,
    'metamessages',
    (qb) => {
      let q = qb.innerJoin('messages', 'messages.id', 'metamessages.message_id').where('messages.session_id', '=', sessionId);
      if (f.message_id) q = q.where('metamessages.message_id', '=', f.message_id);
      if (f.metamessage_type !== undefined && f.metamessage_type !== null) q = q.where('metamessages.metamessage_type', '=', f.metamessage_type);
      return q;
    },
    p,
    metamessageToJson,
  );
}

async function findMetamessage(ctx: Ctx, appId: string, userId: string, sessionId: string, messageId: string, metamessageId: string) {
  const { db } = ctx.storage;
  return db
    .selectFrom('metamessages')
    .innerJoin('messages', 'messages.id', 'metamessages.message_id')
    .innerJoin('sessions', 'sessions.id', 'messages.session_id')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .selectAll('metamessages')
    .where('metamessages.id', '=', metamessageId)
    .where('metamessages.message_id', '=', messageId)
    .where('messages.session_id', '=', sessionId)
    .where('sessions.user_id', '=', userId)
    .where('users.app_id', '=', appId)
    .executeTakeFirst();
}

/** Not found (or a message_id that is not its message) is "Session not found", as in the reference. */
export async function getMetamessage(ctx: Ctx, appId: string, userId: string, sessionId: string, metamessageId: string, messageId: string) {
  const r = await findMetamessage(ctx, appId, userId, sessionId, messageId, metamessageId);
  if (!r) throw notFound(D.session);
  return metamessageToJson(r);
}

export async function updateMetamessage(
  ctx: Ctx,
  appId: string,
  userId: string,
  sessionId: string,
  metamessageId: string,
  input: { message_id: string; metamessage_type?: string | null; metadata?: Meta | null },
) {
  if (input.metadata === undefined || input.metadata === null) throw badRequest(D.metamessageMetaEmpty);
  const r = await findMetamessage(ctx, appId, userId, sessionId, input.message_id, metamessageId);
  if (!r) throw notFound(D.session);
  const { db, dialect: d } = ctx.storage;
  const set: Record<string, unknown> = { metadata: d.json(input.metadata) };
  if (input.metamessage_type !== undefined && input.metamessage_type !== null) set.metamessage_type = input.metamessage_type;
  await db.updateTable('metamessages').set(set).where('id', '=', metamessageId).execute();
  return metamessageToJson({ ...r, ...set, metadata: input.metadata });
}
