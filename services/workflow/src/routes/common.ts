import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, HTTPMethods } from 'fastify';
import { HttpError } from '@svc/kernel';

export type Handler = (req: FastifyRequest<any>, reply: FastifyReply) => unknown;

export interface RouteDoc extends FastifySchema {
  operationId?: string;
  deprecated?: boolean;
  'x-runtime'?: string[];
}

/** Routes whose body is checked by hand (the reference's own error bodies) keep the schema for OpenAPI only. */
const noValidation = () => () => true;

/**
 * Registers a route at `/api<path>` (canonical, in the OpenAPI document) and
 * at its bare path (hidden), as the reference serves both.
 */
export function dual(app: FastifyInstance, method: HTTPMethods, path: string, schema: RouteDoc, handler: Handler, opts: { validate?: boolean; apiOnly?: boolean; config?: Record<string, unknown> } = {}): void {
  const urls: Array<readonly [string, boolean]> = [[`/api${path}`, false]];
  // The assets API exists only under /api in the reference; its bare twins would shadow a frontend's /assets/* files.
  if (!opts.apiOnly) urls.push([path, true]);
  for (const [url, hide] of urls) {
    app.route({
      method,
      url,
      schema: { ...schema, hide: hide || schema.hide },
      ...(opts.validate === false ? { validatorCompiler: noValidation } : {}),
      ...(opts.config ? { config: opts.config } : {}),
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
