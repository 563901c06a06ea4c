import { Type } from 'typebox';
import type { App } from '@svc/kernel';
import type { Ctx } from '../../domain/context.ts';
import type { MemoryConfig } from '../../config.ts';
import { deleteWebhook, getOrCreateWebhook, listWebhooks, publishEvent } from '../../domain/v3/webhooks.ts';
import { page } from '../../schemas/common.ts';
import { PageQuery, WorkspaceParams } from '../../schemas/v3.ts';
import { v3op, W } from './common.ts';

const WebhookEndpoint = Type.Object(
  { id: Type.String(), workspace_id: Type.Union([Type.String(), Type.Null()]), url: Type.String(), created_at: Type.String({ format: 'date-time' }) },
  { title: 'WebhookEndpoint' },
);
const WebhookEndpointCreate = Type.Object({ url: Type.String({ maxLength: 2048 }) }, { title: 'WebhookEndpointCreate' });
const EndpointParams = Type.Object({ workspace_id: Type.String(), endpoint_id: Type.String() });

export function v3WebhookRoutes(app: App, ctx: Ctx, config: MemoryConfig): void {
  const s = { secret: config.webhookSecret, allowPrivate: config.webhookAllowPrivate };
  app.post(
    `${W}/webhooks`,
    { schema: { ...v3op('webhooks', 'Get Or Create Webhook Endpoint', WebhookEndpoint, 200, 'Register a webhook URL (201 when new); at most 10 per workspace.'), params: WorkspaceParams, body: WebhookEndpointCreate } },
    async (req, reply) => {
      const r = await getOrCreateWebhook(ctx, s, req.params.workspace_id, req.body.url);
      return reply.code(r.created ? 201 : 200).send(r.webhook);
    },
  );
  app.get(
    `${W}/webhooks`,
    { schema: { ...v3op('webhooks', 'List Webhook Endpoints', page('Page_WebhookEndpoint_', WebhookEndpoint), 200, 'The webhook endpoints of a workspace, paginated.'), params: WorkspaceParams, querystring: PageQuery } },
    (req) => listWebhooks(ctx, req.params.workspace_id, req.query),
  );
  app.delete(
    `${W}/webhooks/:endpoint_id`,
    { schema: { ...v3op('webhooks', 'Delete Webhook Endpoint', undefined, 204, 'Delete a webhook endpoint.'), params: EndpointParams } },
    async (req, reply) => {
      await deleteWebhook(ctx, req.params.workspace_id, req.params.endpoint_id);
      return reply.code(204).send();
    },
  );
  app.get(
    `${W}/webhooks/test`,
    { schema: { ...v3op('webhooks', 'Test Emit', Type.Null(), 200, 'Send a `test.event` to every endpoint of the workspace.'), params: WorkspaceParams } },
    async (req, reply) => {
      await publishEvent(ctx, s, req.params.workspace_id, 'test.event', { workspace_id: req.params.workspace_id });
      return reply.type('application/json').send('null');
    },
  );
}
