import type { FastifyInstance } from 'fastify';
import { HttpError } from '@svc/kernel';
import { PromptRejected, type PromptRunner } from '../runtime/prompt-runner.ts';
import { PromptInfo, PromptRequest, PromptResponse } from '../schemas/prompt.ts';
import { dual } from './common.ts';
import type { RouteCtx } from './context.ts';

/** The error body of POST /prompt, documented loosely: every field the validator adds must reach the client as it is. */
const promptError = (description: string) => ({
  description,
  type: 'object',
  additionalProperties: true,
  properties: { error: { type: 'object', additionalProperties: true, properties: { type: { type: 'string' }, message: { type: 'string' }, details: { type: 'string' }, extra_info: { type: 'object', additionalProperties: true } } }, node_errors: { type: 'object', additionalProperties: true } },
});

/** `bodyLimit`: a prompt's largest body (the reference takes up to its upload size, `client_max_size`). */
export function promptRoutes(app: FastifyInstance, ctx: RouteCtx, runner: PromptRunner, opts: { cloud?: boolean; bodyLimit?: number } = {}): void {
  dual(app, 'GET', '/prompt', { operationId: 'getPromptInfo', tags: ['prompt'], response: { 200: PromptInfo } }, async (req) => ({
    exec_info: { queue_remaining: await runner.queueRemainingNow(ctx.owner(req)) },
  }));

  dual(
    app,
    'POST',
    '/prompt',
    {
      operationId: 'executePrompt',
      tags: ['prompt'],
      body: PromptRequest,
      response: {
        200: PromptResponse,
        400: promptError('Validation or node errors'),
        // The hosted runtime refuses new prompts of a workspace without credits (`insufficient_credits`).
        ...(opts.cloud ? { 402: promptError('[cloud-only] No credits left: top up or subscribe') } : {}),
      },
    },
    async (req, reply) => {
      const body = req.body;
      if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
        throw new HttpError(400, { error: { type: 'no_prompt', message: 'No prompt provided', details: 'No prompt provided', extra_info: {} }, node_errors: {} });
      }
      try {
        const usage = req.headers['comfy-usage-source'];
        const r = await runner.submit({ body: body as Record<string, unknown>, owner: ctx.owner(req), usageSource: typeof usage === 'string' ? usage : undefined });
        // The prompt's first WebSocket message waits until this answer is on the wire, plus two loop
        // turns, so a client that reads the answer before it listens is listening by then.
        const release = () => setImmediate(() => setImmediate(() => runner.releaseGate(r.prompt_id)));
        reply.raw.once('finish', release);
        reply.raw.once('close', release);
        return r;
      } catch (err) {
        if (err instanceof PromptRejected) throw new HttpError(400, err.body);
        throw err;
      }
    },
    { validate: false, bodyLimit: opts.bodyLimit },
  );
}
