import type { App } from '@svc/kernel';
import type { Ctx } from '../../domain/context.ts';
import { getOrCreatePeer, listPeers, listPeerSessions, updatePeer } from '../../domain/v3/peers.ts';
import { ListBody, ListQuery, PagePeer, PeerListBody, PageSession, Peer, PeerCreate, PeerParams, PeerUpdate, WorkspaceParams } from '../../schemas/v3.ts';
import { checkPeerCreate } from '../../http/v3-auth.ts';
import { optionalBody, v3op, W } from './common.ts';

export function v3PeerRoutes(app: App, ctx: Ctx): void {
  app.post(
    `${W}/peers/list`,
    { preValidation: optionalBody, schema: { ...v3op('peers', 'Get Peers', PagePeer, 200, 'All Peers of a Workspace, paginated, with optional filters.'), params: WorkspaceParams, querystring: ListQuery, body: PeerListBody } },
    (req) => listPeers(ctx, req.params.workspace_id, req.body?.filters, req.query, req.body?.kind),
  );
  app.post(
    `${W}/peers`,
    { schema: { ...v3op('peers', 'Get Or Create Peer', Peer, 200, 'Get a Peer by ID or create it (201 when created); metadata/configuration given replace those of an existing peer.'), params: WorkspaceParams, body: PeerCreate } },
    async (req, reply) => {
      checkPeerCreate(req, req.params.workspace_id, req.body.id);
      const r = await getOrCreatePeer(ctx, req.params.workspace_id, req.body);
      return reply.code(r.created ? 201 : 200).send(r.peer);
    },
  );
  app.put(
    `${W}/peers/:peer_id`,
    { schema: { ...v3op('peers', 'Update Peer', Peer, 200, "Update a Peer's metadata and/or configuration (created if missing)."), params: PeerParams, body: PeerUpdate } },
    (req) => updatePeer(ctx, req.params.workspace_id, req.params.peer_id, req.body),
  );
  app.post(
    `${W}/peers/:peer_id/sessions`,
    { preValidation: optionalBody, schema: { ...v3op('peers', 'Get Sessions For Peer', PageSession, 200, 'Sessions the Peer has joined, paginated, with optional filters.'), params: PeerParams, querystring: ListQuery, body: ListBody('SessionGet') } },
    (req) => listPeerSessions(ctx, req.params.workspace_id, req.params.peer_id, req.body?.filters, req.query),
  );
}
