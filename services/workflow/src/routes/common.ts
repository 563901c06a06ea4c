import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, HTTPMethods } from 'fastify';
import { HttpError } from '@svc/kernel';
import { SUMMARIES } from './summaries.ts';

export type Handler = (req: FastifyRequest<any>, reply: FastifyReply) => unknown;

export interface RouteDoc extends FastifySchema {
  operationId?: string;
  deprecated?: boolean;
  'x-runtime'?: string[];
}

/**
 * Request body limits, sized to what routes need: a body is buffered whole
 * before its route runs, so the limit bounds what one unauthenticated
 * request can make the server hold. JSON routes default to `json`; the
 * forms anyone may post (sign-up, login, OAuth) to `form`; uploads and
 * prompts take their own (`--max-upload-size`).
 */
export const BODY_LIMITS = { json: 1024 * 1024, form: 64 * 1024, settings: 4 * 1024 * 1024 } as const;

/** Routes whose body is checked by hand (the reference's own error bodies) keep the schema for OpenAPI only. */
const noValidation = () => () => true;

/**
 * Registers a route at `/api<path>` (canonical, in the OpenAPI document) and
 * at its bare path (hidden), as the reference serves both.
 */
export function dual(app: FastifyInstance, method: HTTPMethods, path: string, schema: RouteDoc, handler: Handler, opts: { validate?: boolean; config?: Record<string, unknown>; bodyLimit?: number } = {}): void {
  // The bare /assets/* twins do not shadow a frontend build's /assets/<file>: routes/frontend.ts serves the build's files first.
  const urls: Array<readonly [string, boolean]> = [[`/api${path}`, false], [path, true]];
  for (const [url, hide] of urls) {
    app.route({
      method,
      url,
      schema: { summary: schema.operationId ? SUMMARIES[schema.operationId] : undefined, ...schema, hide: hide || schema.hide },
      ...(opts.validate === false ? { validatorCompiler: noValidation } : {}),
      ...(opts.config ? { config: opts.config } : {}),
      ...(opts.bodyLimit ? { bodyLimit: opts.bodyLimit } : {}),
      handler,
    });
  }
}

export function jsonError(status: number, error: unknown): HttpError {
  return new HttpError(status, { error });
}

/** Query values arrive as strings; an int parameter that is not one is a 400 in the `{error}` shape. */
export function intParam(v: unknown, name: string, opts: { min?: number } = {}): number | undefined {
  if (v === undefined || v === '') return undefined;
  const s = String(v);
  if (!/^-?\d{1,15}$/.test(s)) throw jsonError(400, `Invalid ${name}: must be an integer`);
  const n = Number(s);
  if (opts.min !== undefined && n < opts.min) throw jsonError(400, `Invalid ${name}: must be >= ${opts.min}`);
  return n;
}
