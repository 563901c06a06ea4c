import type { App } from '@svc/kernel';
import type { Ctx } from '../../domain/context.ts';
import { createMessages, getMessage, listMessages, updateMessage } from '../../domain/v3/messages.ts';
import { uploadMessages } from '../../domain/v3/upload.ts';
import { ListBody, ListQuery, Message, MessageBatchCreate, MessageParams, MessageUpdate, PageMessage, SessionParams } from '../../schemas/v3.ts';
import { Type } from 'typebox';
import { optionalBody, v3op, W } from './common.ts';

const M = `${W}/sessions/:session_id/messages`;

export function v3MessageRoutes(app: App, ctx: Ctx): void {
  app.post(
    M,
    { schema: { ...v3op('messages', 'Create Messages For Session', Type.Array(Message), 201, 'Add 1-100 messages to a Session (created if needed), in order.'), params: SessionParams, body: MessageBatchCreate } },
    async (req, reply) => reply.code(201).send(await createMessages(ctx, req.params.workspace_id, req.params.session_id, req.body.messages)),
  );
  app.post(
    `${M}/list`,
    { preValidation: optionalBody, schema: { ...v3op('messages', 'Get Messages', PageMessage, 200, 'Messages of a Session, paginated, with optional filters.'), params: SessionParams, querystring: ListQuery, body: ListBody('MessageGet') } },
    (req) => listMessages(ctx, req.params.workspace_id, req.params.session_id, req.body?.filters, req.query),
  );
  app.get(
    `${M}/:message_id`,
    { schema: { ...v3op('messages', 'Get Message', Message, 200, 'One message of a Session.'), params: MessageParams } },
    (req) => getMessage(ctx, req.params.workspace_id, req.params.session_id, req.params.message_id),
  );
  app.put(
    `${M}/:message_id`,
    { schema: { ...v3op('messages', 'Update Message', Message, 200, "Replace a message's metadata."), params: MessageParams, body: MessageUpdate } },
    (req) => updateMessage(ctx, req.params.workspace_id, req.params.session_id, req.params.message_id, req.body),
  );
}

/** `messages/upload`: a multipart form (`file`, `peer_id`, optional `metadata`, `configuration`, `created_at`). */
export function v3UploadRoute(app: App, ctx: Ctx): void {
  app.post(
    `${M}/upload`,
    {
      schema: {
        ...v3op('messages', 'Create Messages With File', Type.Array(Message), 201, 'Turn a PDF, text or JSON file (multipart field `file`, at most 5 MiB) into messages of `peer_id`, split at 25,000 characters.'),
        params: SessionParams,
        consumes: ['multipart/form-data'],
      },
    },
    async (req, reply) => reply.code(201).send(await uploadMessages(ctx, req, req.params.workspace_id, req.params.session_id)),
  );
}
