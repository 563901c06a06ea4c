import type { FastifyError, FastifyRequest } from 'fastify';
import type { FastifySchemaValidationError } from 'fastify/types/schema.js';
import { locPrefix, toFastApiErrors, type ValidationEntry } from './fastapi-validation.ts';

type Part = 'params' | 'querystring' | 'headers' | 'body';
const PARTS: Part[] = ['params', 'querystring', 'headers', 'body'];

function partData(req: FastifyRequest, part: Part): unknown {
  return part === 'params' ? req.params : part === 'querystring' ? req.query : part === 'headers' ? req.headers : req.body;
}

export interface ErrorReply {
  statusCode: number;
  body: unknown;
  contentType?: string;
}

/** How a service shapes the errors the framework produces (validation, unknown routes, crashes). */
export interface ErrorStyle {
  validation(err: FastifyError, req: FastifyRequest): ErrorReply;
  invalidBody(err: FastifyError, req: FastifyRequest): ErrorReply;
  notFound(req: FastifyRequest, methodNotAllowed: boolean): ErrorReply;
  internal(req: FastifyRequest): ErrorReply;
  /** A transient storage conflict (lock, deadlock, serialisation) escaped a handler: 503, the client should retry. Defaults to `{"detail": …}`. */
  unavailable?(req: FastifyRequest): ErrorReply;
}

function rawQuery(req: FastifyRequest): Record<string, string> {
  const i = req.url.indexOf('?');
  if (i < 0) return {};
  return Object.fromEntries(new URLSearchParams(req.url.slice(i + 1)));
}

/** FastAPI 0.109 / pydantic 2 shapes. */
export const fastApiErrorStyle: ErrorStyle = {
  validation(err, req) {
    return { statusCode: 422, body: { detail: collectErrors(req, err) } };
  },
  invalidBody(err, req) {
    // FastAPI routes before it reads the body: an unknown path is a 404 whatever the body.
    if (req.is404) return fastApiErrorStyle.notFound(req, false);
    // FastAPI reads an empty body as no body: a "missing" error next to any path/query errors.
    if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
      (req as { body?: unknown }).body = undefined;
      return { statusCode: 422, body: { detail: collectErrors(req) } };
    }
    const pos = /position (\d+)/.exec(err.message);
    return {
      statusCode: 422,
      body: {
        detail: [{ type: 'json_invalid', loc: ['body', pos ? Number(pos[1]) : 0], msg: 'JSON decode error', input: {}, ctx: { error: pythonJsonError(err.message) } }],
      },
    };
  },
  notFound(_req, methodNotAllowed) {
    return methodNotAllowed
      ? { statusCode: 405, body: { detail: 'Method Not Allowed' } }
      : { statusCode: 404, body: { detail: 'Not Found' } };
  },
  internal() {
    return { statusCode: 500, body: 'Internal Server Error', contentType: 'text/plain; charset=utf-8' };
  },
};

/** Fastify stops at the first failing part; FastAPI reports every part, path first. */
function collectErrors(req: FastifyRequest, err?: FastifyError): ValidationEntry[] {
  const detail: ValidationEntry[] = [];
  for (const part of PARTS) {
    const where = locPrefix(part);
    if (part === 'body' && req.routeOptions.schema?.body && (req.body === undefined || req.body === null)) {
      detail.push({ type: 'missing', loc: ['body'], msg: 'Field required', input: null });
      continue;
    }
    let errors: FastifySchemaValidationError[] | null | undefined;
    if (err && part === err.validationContext) errors = err.validation;
    else {
      const fn = req.getValidationFunction(part);
      if (!fn) continue;
      errors = fn(partData(req, part)) ? null : (fn.errors as FastifySchemaValidationError[]);
    }
    if (errors?.length) detail.push(...toFastApiErrors(errors, where, partData(req, part), part === 'querystring' ? rawQuery(req) : undefined));
  }
  return detail;
}

/** Python's json.JSONDecodeError wording for V8's JSON.parse messages (FastAPI puts it in ctx.error). */
function pythonJsonError(message: string): string {
  if (/property name/i.test(message)) return 'Expecting property name enclosed in double quotes';
  if (/after property name/i.test(message)) return "Expecting ':' delimiter";
  if (/Expected ',' or/i.test(message)) return "Expecting ',' delimiter";
  if (/non-whitespace character after JSON/i.test(message)) return 'Extra data';
  if (/Unterminated string/i.test(message)) return 'Unterminated string starting at';
  if (/control character/i.test(message)) return 'Invalid control character at';
  return 'Expecting value';
}
