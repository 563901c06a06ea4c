import type { App } from '@svc/kernel';
import type { Ctx } from '../../domain/context.ts';
import { getPeerCard, getPeerContext, getRepresentation, getSessionContext, getSummaries, putPeerCard, queueStatus } from '../../domain/v3/memory.ts';
import { scheduleDream } from '../../domain/v3/dreams.ts';
import { searchMessages } from '../../domain/v3/recall.ts';
import { searchWorkspace } from '../../domain/v3/scopes.ts';
import {
  MessageList,
  MessageSearchOptions,
  WorkspaceMessageSearchOptions,
  PeerCardResponse,
  PeerCardSet,
  PeerContext,
  PeerContextQuery,
  PeerParams,
  PeerRepresentationGet,
  QueueStatus,
  QueueStatusQuery,
  RepresentationResponse,
  ScheduleDreamRequest,
  SessionContext,
  SessionContextQuery,
  SessionParams,
  SessionSummaries,
  TargetQuery,
  WorkspaceParams,
} from '../../schemas/v3.ts';
import { checkOwnPeer, checkWideKey } from '../../http/v3-auth.ts';
import { v3op, W } from './common.ts';

export function v3MemoryRoutes(app: App, ctx: Ctx): void {
  app.post(
    `${W}/search`,
    { schema: { ...v3op('workspaces', 'Search Workspace', MessageList, 200, 'Hybrid (full-text and semantic) search of the messages of a Workspace, with optional filters.'), params: WorkspaceParams, body: WorkspaceMessageSearchOptions } },
    (req) => searchWorkspace(ctx, req.params.workspace_id, req.body),
  );
  app.post(
    `${W}/peers/:peer_id/search`,
    { schema: { ...v3op('peers', 'Search Peer', MessageList, 200, 'Search the messages a Peer sent.'), params: PeerParams, body: MessageSearchOptions } },
    (req) => searchMessages(ctx, req.params.workspace_id, { peer: req.params.peer_id }, req.body.query, req.body.filters, req.body.limit ?? 10),
  );
  app.post(
    `${W}/sessions/:session_id/search`,
    { schema: { ...v3op('sessions', 'Search Session', MessageList, 200, 'Search the messages of a Session.'), params: SessionParams, body: MessageSearchOptions } },
    (req) => searchMessages(ctx, req.params.workspace_id, { session: req.params.session_id }, req.body.query, req.body.filters, req.body.limit ?? 10),
  );
  app.get(
    `${W}/sessions/:session_id/context`,
    { schema: { ...v3op('sessions', 'Get Session Context', SessionContext, 200, 'Summary, messages and (with peer_target) representation and peer card, within a token budget (40% summary, the rest recent messages).'), params: SessionParams, querystring: SessionContextQuery } },
    (req) => {
      if (req.query.peer_target) checkOwnPeer(req, req.query.peer_perspective ?? req.query.peer_target);
      if (req.query.scope != null) checkWideKey(req);
      return getSessionContext(ctx, req.params.workspace_id, req.params.session_id, req.query);
    },
  );
  app.get(
    `${W}/sessions/:session_id/summaries`,
    { schema: { ...v3op('sessions', 'Get Session Summaries', SessionSummaries, 200, 'The short and long summaries of a Session, when made.'), params: SessionParams } },
    (req) => getSummaries(ctx, req.params.workspace_id, req.params.session_id),
  );
  app.get(
    `${W}/queue/status`,
    { schema: { ...v3op('workspaces', 'Get Queue Status', QueueStatus, 200, 'Background work (representation, summary, dream) of a Workspace, optionally for an observer, sender and/or session.'), params: WorkspaceParams, querystring: QueueStatusQuery } },
    (req) => queueStatus(ctx, req.params.workspace_id, req.query),
  );
  app.post(
    `${W}/schedule_dream`,
    { schema: { ...v3op('workspaces', 'Schedule Dream', undefined, 204, "Consolidate a peer's conclusions (omni) or rebuild its peer card (card_refresh) in the background."), params: WorkspaceParams, body: ScheduleDreamRequest } },
    async (req, reply) => {
      await scheduleDream(ctx, req.params.workspace_id, req.body);
      return reply.code(204).send();
    },
  );
  app.post(
    `${W}/peers/:peer_id/representation`,
    { schema: { ...v3op('peers', 'Get Representation', RepresentationResponse, 200, "What a Peer knows of itself or of `target`, as the reference's markdown of conclusions."), params: PeerParams, body: PeerRepresentationGet } },
    (req) => {
      if ((req.body as { scope?: unknown }).scope != null) checkWideKey(req);
      return getRepresentation(ctx, req.params.workspace_id, req.params.peer_id, req.body);
    },
  );
  app.get(
    `${W}/peers/:peer_id/card`,
    { schema: { ...v3op('peers', 'Get Peer Card', PeerCardResponse, 200, "A Peer's card of itself or of `target`."), params: PeerParams, querystring: TargetQuery } },
    async (req) => ({ peer_card: await getPeerCard(ctx, req.params.workspace_id, req.params.peer_id, req.query.target) }),
  );
  app.put(
    `${W}/peers/:peer_id/card`,
    { schema: { ...v3op('peers', 'Set Peer Card', PeerCardResponse, 200, "Set a Peer's card of itself or of `target`."), params: PeerParams, querystring: TargetQuery, body: PeerCardSet } },
    (req) => putPeerCard(ctx, req.params.workspace_id, req.params.peer_id, req.query.target, req.body.peer_card),
  );
  app.get(
    `${W}/peers/:peer_id/context`,
    { schema: { ...v3op('peers', 'Get Peer Context', PeerContext, 200, "A Peer's representation and card of itself or of `target`."), params: PeerParams, querystring: PeerContextQuery } },
    (req) => getPeerContext(ctx, req.params.workspace_id, req.params.peer_id, req.query),
  );
}
