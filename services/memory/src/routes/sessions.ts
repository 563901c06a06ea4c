import { Type } from 'typebox';
import type { App } from '@svc/kernel';
import type { Ctx } from '../domain/context.ts';
import { createSession, deleteSession, getSession, listSessions, updateSession } from '../domain/sessions.ts';
import { pagingFrom } from '../domain/paging.ts';
import { DetailMessage, listQuery, NAME_MAX } from '../schemas/common.ts';
import { PageSession, Session, SessionCreate, SessionUpdate } from '../schemas/resources.ts';
import { S, SessionParams, UserParams } from '../schemas/params.ts';
import { op } from './common.ts';

const SessionListQuery = listQuery({
  location_id: Type.Optional(Type.Union([Type.String({ maxLength: NAME_MAX }), Type.Null()])),
  is_active: Type.Optional(Type.Union([Type.Boolean(), Type.Null()], { default: false })),
});

export function sessionRoutes(app: App, ctx: Ctx): void {
  app.get(S, { schema: { ...op('sessions', 'Get Sessions', PageSession), params: UserParams, querystring: SessionListQuery } }, (req) =>
    listSessions(ctx, req.params.app_id, req.params.user_id, { location_id: req.query.location_id, is_active: req.query.is_active }, pagingFrom(req.query)),
  );
  app.post(S, { schema: { ...op('sessions', 'Create Session', Session), params: UserParams, body: SessionCreate } }, (req) =>
    createSession(ctx, req.params.app_id, req.params.user_id, req.body),
  );
  app.get(`${S}/:session_id`, { schema: { ...op('sessions', 'Get Session', Session), params: SessionParams } }, (req) =>
    getSession(ctx, req.params.app_id, req.params.user_id, req.params.session_id),
  );
  app.put(`${S}/:session_id`, { schema: { ...op('sessions', 'Update Session', Session), params: SessionParams, body: SessionUpdate } }, (req) =>
    updateSession(ctx, req.params.app_id, req.params.user_id, req.params.session_id, req.body),
  );
  app.delete(`${S}/:session_id`, { schema: { ...op('sessions', 'Delete Session', DetailMessage), params: SessionParams } }, (req) =>
    deleteSession(ctx, req.params.app_id, req.params.user_id, req.params.session_id),
  );
}
