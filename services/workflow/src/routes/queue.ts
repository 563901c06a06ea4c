import type { FastifyInstance } from 'fastify';
import { queueTuple } from '../domain/jobs.ts';
import { queueState } from '../domain/prompts.ts';
import type { PromptRunner } from '../runtime/prompt-runner.ts';
import { FreeRequest, InterruptRequest, QueueInfo, QueueManageRequest } from '../schemas/prompt.ts';
import { dual, jsonError } from './common.ts';
import type { RouteCtx } from './context.ts';

function bodyObject(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw jsonError(400, 'The request body must be a JSON object');
  return body as Record<string, unknown>;
}

function idList(v: unknown, name: string): string[] {
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw jsonError(400, `${name} must be a list of prompt ids`);
  return v as string[];
}

export function queueRoutes(app: FastifyInstance, ctx: RouteCtx, runner: PromptRunner): void {
  dual(app, 'GET', '/queue', { operationId: 'getQueue', tags: ['queue'], response: { 200: QueueInfo } }, async (req) => {
    const { running, pending } = await queueState(ctx.storageDb(), ctx.scope(req));
    return { queue_running: running.map(queueTuple), queue_pending: pending.map(queueTuple) };
  });

  dual(
    app,
    'POST',
    '/queue',
    { operationId: 'manageQueue', tags: ['queue'], body: QueueManageRequest },
    async (req, reply) => {
      const body = bodyObject(req.body);
      if (body.clear === true) await runner.deletePending('all', ctx.scope(req));
      if ('delete' in body) await runner.deletePending(idList(body.delete, 'delete'), ctx.scope(req));
      return reply.code(200).send();
    },
    { validate: false },
  );

  dual(
    app,
    'POST',
    '/interrupt',
    { operationId: 'interruptExecution', tags: ['queue'], body: InterruptRequest },
    async (req, reply) => {
      const body = bodyObject(req.body);
      const id = body.prompt_id;
      if (id !== undefined && id !== null && typeof id !== 'string') throw jsonError(400, 'prompt_id must be a string');
      // Shared queue: the prompt may run in another process; the interrupt reaches it there.
      if (runner.isShared) {
        await runner.interruptShared(ctx.scope(req), typeof id === 'string' ? id : undefined);
        return reply.code(200).send();
      }
      // Another user's prompt is not theirs to stop (with several slots, each running prompt is checked).
      for (const running of runner.runningAll()) {
        if (typeof id === 'string' && running.promptId !== id) continue;
        if (ctx.scope(req) !== undefined && !(await ctx.ownsPrompt(req, running.promptId))) continue;
        runner.interrupt(running.promptId);
      }
      return reply.code(200).send();
    },
    { validate: false },
  );

  dual(
    app,
    'POST',
    '/free',
    { operationId: 'freeMemory', tags: ['queue'], body: FreeRequest },
    async (req, reply) => {
      const body = bodyObject(req.body);
      runner.free({ freeMemory: body.free_memory === true, unloadModels: body.unload_models === true });
      return reply.code(200).send();
    },
    { validate: false },
  );
}
