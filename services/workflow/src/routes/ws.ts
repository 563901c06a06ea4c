import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { PromptRunner } from '../runtime/prompt-runner.ts';
import type { WsHub } from '../ws/hub.ts';
import type { RouteCtx } from './context.ts';

const MAX_CLIENT_MESSAGE = 64 * 1024;

/** GET /ws?clientId=: status on connect, then execution messages for this client and broadcasts. */
export function wsRoutes(app: FastifyInstance, ctx: RouteCtx, hub: WsHub, runner: PromptRunner, serverFeatures: Record<string, unknown>): void {
  const handler = (socket: WebSocket, req: FastifyRequest) => {
    const q = req.query as Record<string, unknown>;
    const requested = typeof q.clientId === 'string' && q.clientId !== '' ? q.clientId : undefined;
    const client = hub.connect(socket, requested, ctx.owner(req), (c) => {
      const greet = () => {
        hub.send('status', runner.statusMessage(c.clientId, c.owner), c.clientId, c.owner);
        const running = runner.runningAll().find((r) => r.clientId === c.clientId && r.owner === c.owner);
        if (running) hub.send('executing', { node: running.lastNode }, c.clientId, c.owner);
      };
      // Shared queue: other processes change the count, so it is read before it is sent.
      if (runner.isShared) void runner.queueRemainingNow(c.owner).then(greet, greet);
      else greet();
    });
    let first = true;
    socket.on('message', (data, isBinary) => {
      const wasFirst = first;
      first = false;
      if (isBinary || !wasFirst) return;
      const buf = data as Buffer;
      if (buf.length > MAX_CLIENT_MESSAGE) return;
      try {
        const msg = JSON.parse(buf.toString('utf8'));
        if (msg && msg.type === 'feature_flags' && msg.data && typeof msg.data === 'object' && !Array.isArray(msg.data)) {
          Object.assign(client.features, msg.data);
          hub.send('feature_flags', serverFeatures, client.clientId, client.owner);
        }
      } catch {
        /* not JSON: ignored, as the reference does */
      }
    });
  };
  app.get('/ws', { websocket: true, schema: { hide: true } }, handler);
  app.get('/api/ws', { websocket: true, schema: { hide: true } }, handler);
}
