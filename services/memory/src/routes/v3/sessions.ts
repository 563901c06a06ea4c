import { Type } from 'typebox';
import type { App } from '@svc/kernel';
import type { Ctx } from '../../domain/context.ts';
import {
  addSessionPeers,
  cloneSession,
  deleteSession,
  getOrCreateSession,
  getSessionPeerConfig,
  listSessionPeers,
  listSessions,
  removeSessionPeers,
  setSessionPeerConfig,
  setSessionPeers,
  updateSession,
} from '../../domain/v3/sessions.ts';
import {
  Accepted,
  ListBody,
  ListQuery,
  PagePeer,
  PageQuery,
  PageSession,
  PeerIds,
  Session,
  SessionCreate,
  SessionParams,
  SessionPeerConfig,
  SessionPeerParams,
  SessionPeers,
  SessionUpdate,
  WorkspaceParams,
} from '../../schemas/v3.ts';
import { checkOwnPeer, checkScopesOnCreate, checkSessionCreate } from '../../http/v3-auth.ts';
import { optionalBody, v3op, W } from './common.ts';

const S = `${W}/sessions/:session_id`;

export function v3SessionRoutes(app: App, ctx: Ctx): void {
  app.post(
    `${W}/sessions/list`,
    { preValidation: optionalBody, schema: { ...v3op('sessions', 'Get Sessions', PageSession, 200, 'Active Sessions of a Workspace, paginated, with optional filters.'), params: WorkspaceParams, querystring: ListQuery, body: ListBody('SessionGet') } },
    (req) => listSessions(ctx, req.params.workspace_id, req.body?.filters, req.query),
  );
  app.post(
    `${W}/sessions`,
    { schema: { ...v3op('sessions', 'Get Or Create Session', Session, 200, 'Get a Session by ID or create it (201 when created), adding the given peers.'), params: WorkspaceParams, body: SessionCreate } },
    async (req, reply) => {
      checkSessionCreate(req, req.params.workspace_id, req.body.id);
      checkScopesOnCreate(req, req.body.scopes);
      const r = await getOrCreateSession(ctx, req.params.workspace_id, req.body);
      return reply.code(r.created ? 201 : 200).send(r.session);
    },
  );
  app.put(
    S,
    { schema: { ...v3op('sessions', 'Update Session', Session, 200, "Update a Session's metadata (replaced) and/or configuration (merged)."), params: SessionParams, body: SessionUpdate } },
    (req) => updateSession(ctx, req.params.workspace_id, req.params.session_id, req.body),
  );
  app.delete(
    S,
    { schema: { ...v3op('sessions', 'Delete Session', Accepted, 202, 'Mark a Session inactive and delete its data in the background.'), params: SessionParams } },
    async (req, reply) => reply.code(202).send(await deleteSession(ctx, req.params.workspace_id, req.params.session_id)),
  );
  app.post(
    `${S}/clone`,
    {
      schema: {
        ...v3op('sessions', 'Clone Session', Session, 201, 'Clone a Session, optionally up to a specific message ID.'),
        params: SessionParams,
        querystring: Type.Object({ message_id: Type.Optional(nullable(Type.String())) }),
      },
    },
    async (req, reply) => reply.code(201).send(await cloneSession(ctx, req.params.workspace_id, req.params.session_id, req.query.message_id ?? undefined)),
  );
  app.post(
    `${S}/peers`,
    { schema: { ...v3op('sessions', 'Add Peers To Session', Session, 200, 'Add Peers (created if needed) with session-level configuration.'), params: SessionParams, body: SessionPeers } },
    (req) => addSessionPeers(ctx, req.params.workspace_id, req.params.session_id, req.body),
  );
  app.put(
    `${S}/peers`,
    { schema: { ...v3op('sessions', 'Set Session Peers', Session, 200, "Set the Session's Peers: the given ones, no others."), params: SessionParams, body: SessionPeers } },
    (req) => setSessionPeers(ctx, req.params.workspace_id, req.params.session_id, req.body),
  );
  app.delete(
    `${S}/peers`,
    { schema: { ...v3op('sessions', 'Remove Peers From Session', Session, 200, 'Remove Peers by ID from a Session.'), params: SessionParams, body: PeerIds } },
    (req) => removeSessionPeers(ctx, req.params.workspace_id, req.params.session_id, req.body),
  );
  app.get(
    `${S}/peers`,
    { schema: { ...v3op('sessions', 'Get Session Peers', PagePeer, 200, 'The Peers currently in a Session, paginated.'), params: SessionParams, querystring: PageQuery } },
    (req) => listSessionPeers(ctx, req.params.workspace_id, req.params.session_id, req.query),
  );
  app.get(
    `${S}/peers/:peer_id/config`,
    { schema: { ...v3op('sessions', 'Get Peer Config', SessionPeerConfig, 200, "A Peer's configuration in a Session."), params: SessionPeerParams } },
    (req) => {
      checkOwnPeer(req, req.params.peer_id);
      return getSessionPeerConfig(ctx, req.params.workspace_id, req.params.session_id, req.params.peer_id);
    },
  );
  app.put(
    `${S}/peers/:peer_id/config`,
    { schema: { ...v3op('sessions', 'Set Peer Config', undefined, 204, "Set a Peer's configuration in a Session."), params: SessionPeerParams, body: SessionPeerConfig } },
    async (req, reply) => {
      await setSessionPeerConfig(ctx, req.params.workspace_id, req.params.session_id, req.params.peer_id, req.body);
      return reply.code(204).send();
    },
  );
}

function nullable<T extends import('typebox').TSchema>(s: T) {
  return Type.Union([s, Type.Null()]);
}
