import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '@svc/kernel';
import type { Ctx } from '../../domain/context.ts';
import type { MemoryConfig } from '../../config.ts';
import { createLlm, llmSettings, type LlmClient } from '../../chat/llm.ts';
import { answer, prepareChat, prepareWorkspaceChat, type Prepared } from '../../domain/v3/dialectic.ts';
import { sessionAllowlist } from '../../domain/v3/memory.ts';
import { checkMemberSessions, checkWideKey } from '../../http/v3-auth.ts';
import { DialecticOptions, DialecticResponse, PeerParams, WorkspaceChatOptions, WorkspaceParams } from '../../schemas/v3.ts';
import { v3op, W } from './common.ts';

const frame = (reply: FastifyReply, data: unknown) => reply.raw.write(`data: ${JSON.stringify(data)}\n\n`);
const STREAM_DOC = 'With `stream`, server-sent events `data: {"delta": {"content": …}, "done": false}` and a last `data: {"done": true}` (with `evidence` when asked for).';

/** A prepared question answered as JSON, or streamed as the reference's SSE frames. */
async function respond(req: FastifyRequest, reply: FastifyReply, prepared: Prepared, body: any, llm: LlmClient | undefined) {
  const evidence = body.include_evidence ? { evidence: prepared.evidence } : {};
  if (!body.stream) return { content: await answer(prepared, body.query, llm), ...evidence };
  // Errors until here are JSON; once streaming, a failure ends the stream with an error frame.
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
  try {
    if (llm && !prepared.check) {
      for await (const piece of llm.stream(prepared.messages, abort.signal)) frame(reply, { delta: { content: piece }, done: false });
    } else {
      const text = await answer(prepared, body.query, llm);
      for (const piece of prepared.check ? [text] : (text.match(/[^.!?]+[.!?]*\s*/g) ?? [text])) frame(reply, { delta: { content: piece }, done: false });
    }
    frame(reply, { done: true, ...evidence });
  } catch (err) {
    if (!abort.signal.aborted) {
      req.log.warn({ err }, 'v3 chat stream failed');
      frame(reply, { error: (err as any)?.body?.detail ?? 'LLM request failed', done: true });
    }
  }
  reply.raw.end();
}

export function v3ChatRoutes(app: App, ctx: Ctx, config: MemoryConfig): void {
  const llm = createLlm(llmSettings(config));
  app.post(
    `${W}/peers/:peer_id/chat`,
    {
      schema: {
        ...v3op('peers', 'Chat', DialecticResponse, 200, `Ask what a Peer knows (of itself or of \`target\`). ${STREAM_DOC}`),
        params: PeerParams,
        body: DialecticOptions,
      },
    },
    async (req, reply) => {
      const body = req.body as any;
      if (body.scope != null) checkWideKey(req);
      if (body.session_id) await checkMemberSessions(ctx, req, req.params.workspace_id, [body.session_id]);
      const allow = sessionAllowlist(body.filters, body.session_id);
      if (allow) await checkMemberSessions(ctx, req, req.params.workspace_id, allow);
      const prepared = await prepareChat(ctx, req.params.workspace_id, req.params.peer_id, body);
      return respond(req, reply, prepared, body, llm);
    },
  );
  app.post(
    `${W}/chat`,
    {
      schema: {
        ...v3op('workspaces', 'Workspace Chat', DialecticResponse, 200, `Ask about the workspace as a whole: conclusions of every peer pair and the newest messages (of \`session_id\` when given). ${STREAM_DOC}`),
        params: WorkspaceParams,
        body: WorkspaceChatOptions,
      },
    },
    async (req, reply) => {
      const body = req.body as any;
      const prepared = await prepareWorkspaceChat(ctx, req.params.workspace_id, body);
      return respond(req, reply, prepared, body, llm);
    },
  );
}
