import { Type } from 'typebox';
import { parseLaxBoolean, type App } from '@svc/kernel';
import type { Ctx } from '../domain/context.ts';
import { createMessage, createMessagesBatch, getMessage, listMessages, updateMessage } from '../domain/messages.ts';
import { pagingFrom } from '../domain/paging.ts';
import { listQuery } from '../schemas/common.ts';
import { Message, MessageCreate, MessageUpdate, PageMessage } from '../schemas/resources.ts';
import { MessageParams, S, S_NOSLASH, SessionParams } from '../schemas/params.ts';
import { op } from './common.ts';

export function messageRoutes(app: App, ctx: Ctx): void {
  app.post(`${S}/:session_id/messages`, { schema: { ...op('messages', 'Create Message For Session', Message), params: SessionParams, body: MessageCreate } }, (req) =>
    createMessage(ctx, req.params.app_id, req.params.user_id, req.params.session_id, req.body),
  );
  // Beyond the seed (Honcho 0.0.15): up to 100 messages in one transaction, returned in order.
  app.post(
    `${S}/:session_id/messages/batch`,
    {
      // The kernel's lax coercion covers top-level body fields; the batch's booleans are one level down.
      preValidation: async (req) => {
        const list = (req.body as { messages?: unknown } | undefined)?.messages;
        if (!Array.isArray(list)) return;
        for (const m of list) {
          if (m && typeof m === 'object') {
            const b = parseLaxBoolean((m as Record<string, unknown>).is_user);
            if (b !== undefined) (m as Record<string, unknown>).is_user = b;
          }
        }
      },
      schema: {
        ...op('messages', 'Create Messages In Batch', Type.Array(Message)),
        params: SessionParams,
        body: Type.Object({ messages: Type.Array(MessageCreate, { minItems: 1, maxItems: 100 }) }, { title: 'MessageBatchCreate' }),
      },
    },
    (req) => createMessagesBatch(ctx, req.params.app_id, req.params.user_id, req.params.session_id, req.body.messages),
  );
  app.get(`${S}/:session_id/messages`, { schema: { ...op('messages', 'Get Messages', PageMessage), params: SessionParams, querystring: listQuery() } }, (req) =>
    listMessages(ctx, req.params.app_id, req.params.user_id, req.params.session_id, pagingFrom(req.query)),
  );
  // Both the seed's `{user_id}sessions` form and the slash form every client sends.
  for (const prefix of [S_NOSLASH, S]) {
    app.get(`${prefix}/:session_id/messages/:message_id`, { schema: { ...op('messages', 'Get Message', Message), params: MessageParams } }, (req) =>
      getMessage(ctx, req.params.app_id, req.params.user_id, req.params.session_id, req.params.message_id),
    );
    app.put(`${prefix}/:session_id/messages/:message_id`, { schema: { ...op('messages', 'Update Message', Message), params: MessageParams, body: MessageUpdate } }, (req) =>
      updateMessage(ctx, req.params.app_id, req.params.user_id, req.params.session_id, req.params.message_id, req.body),
    );
  }
}
