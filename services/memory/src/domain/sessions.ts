import type { Kysely } from 'kysely';
import type { Ctx } from './context.ts';
import { badRequest, D, notFound } from './errors.ts';
import { listPage, pageOf, type Paging } from './paging.ts';
import { userInApp, userOwnedRows } from './users.ts';
import { formatTimestamp, newId, nextSeq, readBool, readJson, type Meta } from './values.ts';

export function sessionToJson(r: any) {
  const m = readJson(r.metadata);
  return {
    id: r.id,
    is_active: readBool(r.is_active),
    user_id: r.user_id,
    location_id: r.location_id,
    h_metadata: m,
    metadata: m,
    created_at: formatTimestamp(r.created_at),
  };
}

/** The session row when it belongs to the user of the app, else undefined. */
export async function findSession(db: Kysely<any>, appId: string, userId: string, sessionId: string): Promise<any | undefined> {
  return userOwnedRows(db, 'sessions', appId, userId).where('sessions.id', '=', sessionId).executeTakeFirst();
}

export async function requireSession(db: Kysely<any>, appId: string, userId: string, sessionId: string): Promise<any> {
  const s = await findSession(db, appId, userId, sessionId);
  if (!s) throw notFound(D.session);
  return s;
}

export interface SessionFilters {
  location_id?: string | null;
  is_active?: boolean | null;
}

/** `is_active=true` keeps active sessions only; false or absent returns all (reference behaviour). */
export async function listSessions(ctx: Ctx, appId: string, userId: string, f: SessionFilters, p: Paging) {
  if (!(await userInApp(ctx, appId, userId))) return pageOf([], 0, p);
  const d = ctx.storage.dialect;
  return listPage(
    ctx.storage.db,
    d,
    'sessions',
    (qb) => {
      let q = qb.where('sessions.user_id', '=', userId);
      if (f.location_id !== undefined && f.location_id !== null) q = q.where('sessions.location_id', '=', f.location_id);
      if (f.is_active === true) q = q.where('sessions.is_active', '=', d.bool(true));
      return q;
    },
    p,
    sessionToJson,
  );
}

export async function createSession(ctx: Ctx, appId: string, userId: string, input: { location_id: string; metadata?: Meta | null }) {
  const { db, dialect: d } = ctx.storage;
  if (!(await userInApp(ctx, appId, userId))) throw notFound(D.user);
  const row = {
    id: newId(),
    user_id: userId,
    location_id: input.location_id,
    is_active: d.bool(true),
    metadata: d.json(input.metadata ?? {}),
    created_at: d.timestamp(new Date()),
    seq: nextSeq(),
  };
  await db.insertInto('sessions').values(row).execute();
  return sessionToJson(row);
}

export async function getSession(ctx: Ctx, appId: string, userId: string, sessionId: string) {
  return sessionToJson(await requireSession(ctx.storage.db, appId, userId, sessionId));
}

/** Metadata is replaced (`{}` clears it); null is a 400 as in the reference. */
export async function updateSession(ctx: Ctx, appId: string, userId: string, sessionId: string, input: { metadata?: Meta | null }) {
  if (input.metadata === undefined || input.metadata === null) throw badRequest(D.sessionMetaEmpty);
  const { db, dialect: d } = ctx.storage;
  const s = await requireSession(db, appId, userId, sessionId);
  await db.updateTable('sessions').set({ metadata: d.json(input.metadata) }).where('id', '=', sessionId).execute();
  return sessionToJson({ ...s, metadata: input.metadata });
}

/** Soft delete: the session stays readable with is_active=false; deleting twice is fine. */
export async function deleteSession(ctx: Ctx, appId: string, userId: string, sessionId: string) {
  const { db, dialect: d } = ctx.storage;
  await requireSession(db, appId, userId, sessionId);
  await db.updateTable('sessions').set({ is_active: d.bool(false) }).where('id', '=', sessionId).execute();
  return { message: 'Session deleted successfully' };
}
