import type { FastifyInstance } from 'fastify';
import { HttpError } from '@svc/kernel';
import { PromptRejected, type PromptRunner } from '../runtime/prompt-runner.ts';
import { PromptInfo, PromptRequest, PromptResponse } from '../schemas/prompt.ts';
import { dual } from './common.ts';
import type { RouteCtx } from './context.ts';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../http/json-body.ts';
import { markFloatLiterals } from '../nodes/json-floats.ts';

/** The error body of POST /prompt, documented loosely: every field the validator adds must reach the client as it is. */
const promptError = (description: string) => ({
  description,
  type: 'object',
  additionalProperties: true,
  properties: { error: { type: 'object', additionalProperties: true, properties: { type: { type: 'string' }, message: { type: 'string' }, details: { type: 'string' }, extra_info: { type: 'object', additionalProperties: true } } }, node_errors: { type: 'object', additionalProperties: true } },
});

/** A JSON body as the service's parser reads it (empty: none; invalid UTF-8, too deep or malformed: an error), float literals marked. */
function parsePromptJson(bytes: Buffer): { value: unknown } | Error {
  if (bytes.length === 0) return { value: undefined };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return new SyntaxError('body is not valid UTF-8');
  }
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) return new SyntaxError(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    const value: unknown = JSON.parse(text);
    markFloatLiterals(value, text);
    return { value };
  } catch (err) {
    return err as Error;
  }
}

/** `bodyLimit`: a prompt's largest body (the reference takes up to its upload size, `client_max_size`). */
export function promptRoutes(app: FastifyInstance, ctx: RouteCtx, runner: PromptRunner, opts: { cloud?: boolean; bodyLimit?: number } = {}): void {
  dual(app, 'GET', '/prompt', { operationId: 'getPromptInfo', tags: ['prompt'], response: { 200: PromptInfo } }, async (req) => ({
    exec_info: { queue_remaining: await runner.queueRemainingNow(ctx.owner(req)) },
  }));

  // The prompt's JSON is parsed by its own parser, which also remembers which integral numbers were written as
  // floats (`5.0`): the reference's nodes tell them from ints, and JSON.parse alone loses it.
  app.register(async (child) => {
    child.removeAllContentTypeParsers();
    child.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, buf, done) => {
      const r = parsePromptJson(buf as Buffer);
      if (r instanceof Error) done(r, undefined);
      else done(null, r.value);
    });
    dual(
      child,
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
  });
}
