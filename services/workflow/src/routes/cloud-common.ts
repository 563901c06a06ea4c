import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { cloudError } from '../identity/errors.ts';
import type { Principal } from '../identity/index.ts';
import { BODY_LIMITS, type Handler } from './common.ts';

export type AuthMode = 'required' | 'public' | 'optional';

export interface CloudDoc {
  operationId: string;
  summary?: string;
  description: string;
  tags: string[];
  params?: Record<string, unknown>;
  querystring?: Record<string, unknown>;
  body?: Record<string, unknown>;
  response?: Record<string, unknown>;
  consumes?: string[];
  deprecated?: boolean;
  headers?: Record<string, unknown>;
}

const errorRef = { $ref: 'CloudError#' };

/**
 * Registers a hosted-runtime route at its canonical path (and a `/api/…` one at its bare path too), marked
 * `x-runtime: [cloud]` with a "[cloud-only] " description. Bodies are
 * checked by the handlers (CloudError or RFC shapes), so the schema is
 * documentation.
 */
export function cloudRoute(app: FastifyInstance, method: HTTPMethods, url: string, doc: CloudDoc, handler: Handler, auth: AuthMode = 'required', extra: { csrfExempt?: boolean; firstParty?: boolean; bodyLimit?: number } = {}): void {
  const { bodyLimit: limit, ...flags } = extra;
  // What anyone may post without credentials is read up to a form's size; an authenticated route's body is read only
  // after the credentials were checked (the onRequest hook), up to the service's JSON limit or the route's own.
  const bodyLimit = limit ?? (auth === 'required' ? undefined : BODY_LIMITS.form);
  const response = { ...(doc.response ?? {}) } as Record<string, unknown>;
  if (auth === 'required' && !response[401]) response[401] = { description: 'Unauthorized', ...errorRef };
  // Every /api route also answers at its bare path (hidden from the OpenAPI document), as the shared routes do.
  const urls: Array<[string, boolean]> = url.startsWith('/api/') ? [[url, false], [url.slice(4), true]] : [[url, false]];
  for (const [u, hide] of urls) {
    app.route({
      method,
      url: u,
      config: { auth, ...flags } as any,
      ...(bodyLimit ? { bodyLimit } : {}),
      schema: {
        operationId: doc.operationId,
        summary: doc.summary,
        description: `[cloud-only] ${doc.description}`,
        tags: doc.tags,
        'x-runtime': ['cloud'],
        ...(doc.params ? { params: doc.params } : {}),
        ...(doc.querystring ? { querystring: doc.querystring } : {}),
        ...(doc.body ? { body: doc.body } : {}),
        ...(doc.consumes ? { consumes: doc.consumes } : {}),
        ...(doc.deprecated ? { deprecated: true } : {}),
        ...(doc.headers ? { headers: doc.headers } : {}),
        response,
        ...(hide ? { hide: true } : {}),
      } as any,
      validatorCompiler: () => () => true,
      handler,
    });
  }
}

export function principal(req: FastifyRequest): Principal {
  const p = req.principal;
  if (!p) throw cloudError(401, 'unauthorized', 'Authentication required');
  return p;
}

/** A JSON object body or a 400 CloudError. */
export function objectBody(req: FastifyRequest): Record<string, unknown> {
  const b = req.body;
  if (!b || typeof b !== 'object' || Array.isArray(b)) throw cloudError(400, 'invalid_request', 'The request body must be a JSON object');
  return b as Record<string, unknown>;
}

export function badRequest(message: string, details: Record<string, unknown> = {}): never {
  throw cloudError(400, 'invalid_request', message, details);
}

export function noContent(reply: FastifyReply): FastifyReply {
  return reply.code(204).send();
}

/** Shared components of the hosted runtime's OpenAPI schemas (referenced by `Name#`). */
export const cloudSchemas: Record<string, Record<string, unknown>> = {
  CloudError: {
    $id: 'CloudError',
    type: 'object',
    'x-runtime': ['cloud'],
    description: '[cloud-only] Standard error response from cloud endpoints.',
    required: ['error'],
    properties: { error: { type: 'string' }, code: { type: 'string' }, details: { type: 'object', additionalProperties: true } },
  },
  CloudUser: {
    $id: 'CloudUser',
    type: 'object',
    'x-runtime': ['cloud'],
    description: '[cloud-only] A cloud-authenticated user profile.',
    required: ['id', 'email'],
    properties: { id: { type: 'string' }, email: { type: 'string', format: 'email' }, display_name: { type: 'string' }, avatar_url: { type: 'string', format: 'uri' }, created_at: { type: 'string', format: 'date-time' } },
  },
  Workspace: {
    $id: 'Workspace',
    type: 'object',
    'x-runtime': ['cloud'],
    description: '[cloud-only] A cloud workspace for team collaboration.',
    required: ['id', 'name'],
    properties: {
      id: { type: 'string' },
      name: { type: 'string' },
      type: { type: 'string', enum: ['personal', 'team'] },
      owner_id: { type: 'string' },
      member_count: { type: 'integer' },
      role: { type: 'string', enum: ['owner', 'admin', 'member'] },
      created_at: { type: 'string', format: 'date-time' },
      updated_at: { type: 'string', format: 'date-time' },
    },
  },
  WorkspaceMember: {
    $id: 'WorkspaceMember',
    type: 'object',
    'x-runtime': ['cloud'],
    description: '[cloud-only] A member of a cloud workspace.',
    required: ['user_id', 'role'],
    properties: { user_id: { type: 'string' }, email: { type: 'string', format: 'email' }, display_name: { type: 'string' }, avatar_url: { type: 'string', format: 'uri' }, role: { type: 'string', enum: ['owner', 'admin', 'member'] }, joined_at: { type: 'string', format: 'date-time' } },
  },
  WorkspaceInvite: {
    $id: 'WorkspaceInvite',
    type: 'object',
    'x-runtime': ['cloud'],
    description: '[cloud-only] A pending workspace invitation.',
    required: ['id', 'email', 'role'],
    properties: { id: { type: 'string' }, email: { type: 'string', format: 'email' }, role: { type: 'string', enum: ['admin', 'member'] }, invited_by: { type: 'string' }, created_at: { type: 'string', format: 'date-time' }, expires_at: { type: 'string', format: 'date-time' }, token: { type: 'string', description: 'The invite token (only in the create response; shown once).' } },
  },
  WorkspaceApiKey: {
    $id: 'WorkspaceApiKey',
    type: 'object',
    'x-runtime': ['cloud'],
    description: '[cloud-only] A workspace API key (secret value redacted).',
    required: ['id', 'name', 'description'],
    properties: { id: { type: 'string' }, name: { type: 'string' }, description: { type: 'string', maxLength: 5000 }, prefix: { type: 'string' }, created_at: { type: 'string', format: 'date-time' }, last_used_at: { type: ['string', 'null'], format: 'date-time' }, created_by: { type: 'string' } },
  },
  WorkspaceApiKeyCreated: {
    $id: 'WorkspaceApiKeyCreated',
    type: 'object',
    'x-runtime': ['cloud'],
    description: '[cloud-only] A newly created workspace API key, including the full secret value (shown only once).',
    required: ['id', 'name', 'description', 'key'],
    properties: { id: { type: 'string' }, name: { type: 'string' }, description: { type: 'string', maxLength: 5000 }, key: { type: 'string' }, prefix: { type: 'string' }, created_at: { type: 'string', format: 'date-time' } },
  },
};

export function ref(name: string, description = 'OK'): Record<string, unknown> {
  return { description, $ref: `${name}#` };
}

export function arrayOf(name: string, description = 'OK'): Record<string, unknown> {
  return { description, type: 'array', items: { $ref: `${name}#` } };
}

export function errors(...codes: number[]): Record<number, unknown> {
  return Object.fromEntries(codes.map((c) => [c, { description: String(c), ...errorRef }]));
}

export type { Handler };
