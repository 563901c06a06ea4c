import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { detailError, type App } from '@svc/kernel';
import { D, notFound } from '../domain/errors.ts';
import { findSession } from '../domain/sessions.ts';
import { CONTENT_MAX } from '../schemas/common.ts';
import { S, SessionParams } from '../schemas/params.ts';
import { createSearch, type MemoryDeps } from '../search/index.ts';
import { dialecticMessages, extractiveAnswer, gatherContext } from '../domain/dialectic.ts';
import { createLlm, llmSettings, LlmError } from '../chat/llm.ts';
import { op } from './common.ts';

const ChatQuery = Type.Object({ query: Type.String({ maxLength: CONTENT_MAX }) });
const AgentChat = Type.Object({ content: Type.String() }, { title: 'AgentChat' });

const LLM_FAILED = 'LLM request failed';

function sse(reply: FastifyReply, event: string | undefined, data: unknown): void {
  reply.raw.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
}

/**
 * GET S/{session_id}/chat and /chat/stream: the dialectic agent. Answers from
 * the user's "honcho" facts and the session's recent messages, through the
 * configured OpenAI-compatible model or, without one, extractively.
 */
export async function chatRoutes(fastify: FastifyInstance, deps: MemoryDeps): Promise<void> {
  const app = fastify as unknown as App;
  const search = createSearch(deps);
  const llm = createLlm(llmSettings(deps.config));

  async function prepare(params: { app_id: string; user_id: string; session_id: string }, query: string) {
    const session = await findSession(deps.storage.db, params.app_id, params.user_id, params.session_id);
    if (!session) throw notFound(D.session);
    return gatherContext(deps.storage, search, { id: session.id, user_id: session.user_id }, query);
  }

  app.get(
    `${S}/:session_id/chat`,
    { schema: { ...op('sessions', 'Get Chat', AgentChat), params: SessionParams, querystring: ChatQuery } },
    async (req) => {
      const ctx = await prepare(req.params, req.query.query);
      if (!llm) return { content: extractiveAnswer(req.query.query, ctx) };
      try {
        return { content: await llm.complete(dialecticMessages(req.query.query, ctx)) };
      } catch (err) {
        if (err instanceof LlmError) {
          req.log.warn({ err }, 'chat model failed');
          throw detailError(502, LLM_FAILED);
        }
        throw err;
      }
    },
  );

  app.get(
    `${S}/:session_id/chat/stream`,
    {
      schema: {
        ...op('sessions', 'Get Chat Stream', Type.String(), {
          description:
            'Server-sent events: `data: {"content": "<chunk>"}` frames as the answer is produced, then `event: done` with the whole answer (`event: error` if the model fails mid-way).',
        }),
        params: SessionParams,
        querystring: ChatQuery,
        produces: ['text/event-stream'],
      },
    },
    async (req, reply) => {
      // Errors up to here (404, 422) are ordinary JSON responses.
      const ctx = await prepare(req.params, req.query.query);
      reply.hijack();
      reply.raw.writeHead(200, {
        ...(reply.getHeaders() as Record<string, string>),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      const abort = new AbortController();
      reply.raw.on('close', () => abort.abort());
      let full = '';
      try {
        if (llm) {
          for await (const piece of llm.stream(dialecticMessages(req.query.query, ctx), abort.signal)) {
            full += piece;
            sse(reply, undefined, { content: piece });
          }
        } else {
          full = extractiveAnswer(req.query.query, ctx);
          // One frame per sentence: the extractive answer is ready at once, but clients read it like a model's.
          for (const piece of full.match(/[^.!?]+[.!?]*\s*/g) ?? [full]) sse(reply, undefined, { content: piece });
        }
        sse(reply, 'done', { content: full });
      } catch (err) {
        if (!abort.signal.aborted) {
          req.log.warn({ err }, 'chat stream failed');
          sse(reply, 'error', { detail: err instanceof LlmError ? LLM_FAILED : 'Internal Server Error' });
        }
      }
      reply.raw.end();
    },
  );
}
