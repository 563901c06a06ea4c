import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { isTransientStorageError } from '@svc/storage/transient';
import { HttpError } from './http-error.ts';
import { applyHttpTimeouts, httpTimeoutsFrom, type HttpTimeouts } from './http-timeouts.ts';
import type { ErrorStyle } from './error-style.ts';
import { addLaxCoercion } from './lax-coercion.ts';
import { MethodIndex } from './method-index.ts';
import { gzipSync } from 'node:zlib';
import { shareComponents, shareParameters, splitByTag, toOpenApi30 } from './openapi-components.ts';

export type App = FastifyInstance<any, any, any, any, TypeBoxTypeProvider>;

export interface HttpServerOptions {
  /** Service name, shown in logs, /health and the OpenAPI title. */
  name: string;
  title?: string;
  version: string;
  description?: string;
  logLevel?: string;
  errorStyle: ErrorStyle;
  /** Extra facts for GET /health (e.g. queue depth). Throwing makes /health answer 503. */
  health?: () => Promise<Record<string, unknown>>;
  /** pydantic-style lax booleans/UUIDs in path, query and body. */
  laxCoercion?: boolean;
  bodyLimit?: number;
  /** Extra Fastify options (e.g. a custom querystring parser). */
  fastify?: Partial<FastifyServerOptions>;
  openapiComponents?: Record<string, unknown>;
  /** How the OpenAPI document describes authentication and which routes it leaves out. */
  openapi?: OpenApiOptions;
  /** Slow-client limits; by default from the env (HTTP_*_TIMEOUT_MS). runService applies the command line's on top. */
  timeouts?: HttpTimeouts;
}

export interface OpenApiOptions {
  /** components.securitySchemes: what Swagger UI's Authorize offers. */
  securitySchemes?: Record<string, unknown>;
  /** The document's security requirement: what every operation needs unless securityFor says otherwise. */
  security?: Array<Record<string, string[]>>;
  /** An operation's own requirement where it differs ([] = open); undefined: the document's. */
  securityFor?: (route: { method: string; url: string; config: Record<string, unknown> }) => Array<Record<string, string[]>> | undefined;
  /** Routes that are not API operations (HTML pages, form posts): left out of the document. */
  hide?: (url: string) => boolean;
  /** A service's own rewrite of the built document, before shared parts become components. */
  shape?: (doc: any) => void;
  /** A further rewrite of the copy Swagger UI shows at /docs only (shorter for a person, not for clients). */
  docsShape?: (doc: any) => void;
  /** Swagger UI settings at /docs (e.g. docExpansion 'none' for a document with hundreds of operations). */
  ui?: Record<string, unknown>;
  /**
   * /docs offers the API one tag at a time (Swagger UI's definition selector,
   * `primary` first, then the others, then the whole document as "all"): for
   * an API whose single document takes Swagger UI seconds to draw.
   */
  docsSections?: { primary: string; ui?: Record<string, unknown> };
  /**
   * Error responses an operation can give that its route schema does not declare (status → description),
   * documented with `errorSchema`. Only the document changes: route schemas also drive serialization.
   */
  errors?: (op: { method: string; url: string; secured: boolean; hasInput: boolean }) => Record<string, string>;
  errorSchema?: Record<string, unknown>;
}

export const STORAGE_BUSY = 'The service is busy (database locked); retry the request.';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const SECRET_PARAM = /([?&](?:token|api_key|apikey|key|access_token|password|secret)=)[^&#]*/gi;

/** A URL with the values of credential-like query parameters replaced. */
export function redactQuery(url: string): string {
  return url.includes('?') ? url.replace(SECRET_PARAM, '$1[redacted]') : url;
}

/**
 * A Fastify 5 instance with everything every service shares: TypeBox
 * validation in FastAPI-like lax mode, request ids (X-Request-Id in and out),
 * OpenAPI 3.1 at /openapi.json, docs at /docs, /health, and the service's
 * error shapes for validation errors, unknown routes and crashes.
 */
export async function createHttpServer(opts: HttpServerOptions): Promise<App> {
  const app = Fastify({
    logger: {
      level: opts.logLevel ?? process.env.LOG_LEVEL ?? 'info',
      base: { service: opts.name },
      serializers: {
        // Credentials that clients put in query strings (?token=, ?api_key=) never reach the logs.
        req: (req: { method?: string; url?: string; host?: string; ip?: string; socket?: { remotePort?: number } }) => ({
          method: req.method,
          url: redactQuery(req.url ?? ''),
          host: req.host,
          remoteAddress: req.ip,
          remotePort: req.socket?.remotePort,
        }),
      },
    },
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: process.env.LOG_REQUESTS === '0' }),
    genReqId: (req) => {
      const h = req.headers['x-request-id'];
      return typeof h === 'string' && REQUEST_ID.test(h) ? h : randomUUID();
    },
    bodyLimit: opts.bodyLimit ?? 8 * 1024 * 1024,
    ajv: {
      customOptions: { allErrors: true, removeAdditional: false, coerceTypes: true, useDefaults: true, verbose: true },
    },
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 2048 },
    ...opts.fastify,
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Fastify disables Node's request time-out by default: a client trickling a body would hold its socket for ever.
  applyHttpTimeouts(app.server, opts.timeouts ?? httpTimeoutsFrom({}));

  const methods = new MethodIndex();
  app.addHook('onRoute', (route) => {
    methods.add(route.method, route.url);
    if (opts.laxCoercion) addLaxCoercion(route);
  });

  app.addHook('onRequest', async (req, reply) => {
    reply.header('X-Request-Id', req.id);
  });

  const doc = opts.openapi ?? {};
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: opts.title ?? opts.name, version: opts.version, description: opts.description },
      components: { ...(opts.openapiComponents as any), ...(doc.securitySchemes ? { securitySchemes: doc.securitySchemes } : {}) },
    },
    transform: ({ schema, url, route }: { schema: any; url: string; route: any }) => {
      if (doc.hide?.(url)) return { schema: { ...schema, hide: true }, url };
      const methods: string[] = Array.isArray(route.method) ? route.method : [route.method];
      const security = schema?.security === undefined ? doc.securityFor?.({ method: methods.find((m) => m !== 'HEAD') ?? methods[0]!, url, config: route.config ?? {} }) : undefined;
      return { schema: security ? { ...schema, security } : schema, url };
    },
    // Built once and cached by @fastify/swagger: shared schemas as components, each operation's security.
    transformObject: (built: any) => finishDocument(built.openapiObject, doc),
  });
  // The token typed into Authorize survives a reload; the search box filters by tag.
  // Swagger UI reads its own copy of the document (/docs/json), made once: parameters shared
  // too, and written as OpenAPI 3.0 (Swagger UI's 3.1 path walks every node through ApiDOM).
  let forDocs: Record<string, any> | undefined;
  const docsCopy = (spec: unknown): Record<string, any> => {
    if (forDocs === undefined) {
      const copy = structuredClone(spec) as Record<string, any>;
      doc.docsShape?.(copy);
      forDocs = toOpenApi30(shareParameters(copy));
    }
    return forDocs;
  };
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: false,
    uiConfig: {
      persistAuthorization: true,
      filter: true,
      displayRequestDuration: true,
      ...doc.ui,
      ...(doc.docsSections ? { configUrl: '/docs/sections.json', ...doc.docsSections.ui } : {}),
    },
    transformSpecificationClone: false,
    transformSpecification: (spec: any) => docsCopy(spec),
  });

  // The documents never change once built: each is serialized (and gzipped) once.
  const cache = new Map<string, CachedJson>();
  const cached = (key: string, build: () => unknown) => {
    let hit = cache.get(key);
    if (!hit) cache.set(key, (hit = new CachedJson(JSON.stringify(build()))));
    return hit;
  };
  app.get('/openapi.json', { schema: { hide: true } }, async (req, reply) => cached('openapi', () => app.swagger()).send(req, reply, 'application/json; charset=utf-8'));
  if (doc.docsSections) {
    const primary = doc.docsSections.primary;
    let sections: Map<string, Record<string, any>> | undefined;
    const sectionsOf = () => (sections ??= splitByTag(docsCopy(app.swagger())));
    app.get('/docs/sections.json', { schema: { hide: true } }, async (req, reply) =>
      cached('sections', () => {
        const names = [...sectionsOf().keys()].sort((a, b) => (a === primary ? -1 : b === primary ? 1 : 0));
        return { urls: [...names.map((name) => ({ name, url: `/docs/sections/${encodeURIComponent(name)}.json` })), { name: 'all', url: '/docs/json' }], 'urls.primaryName': primary };
      }).send(req, reply, 'application/json; charset=utf-8'),
    );
    app.get('/docs/sections/:file', { schema: { hide: true } }, async (req, reply) => {
      const name = /^(.+)\.json$/.exec((req.params as { file: string }).file)?.[1];
      const section = name === undefined ? undefined : sectionsOf().get(name);
      if (!section) return send(reply, opts.errorStyle.notFound(req, false));
      return cached(`section:${name}`, () => section).send(req, reply, 'application/json; charset=utf-8');
    });
  }

  app.get('/health', { schema: { hide: true } }, async (_req, reply) => {
    try {
      const extra = (await opts.health?.()) ?? {};
      return { status: 'ok', service: opts.name, version: opts.version, ...extra };
    } catch (err) {
      reply.code(503);
      return { status: 'unavailable', service: opts.name, error: err instanceof Error ? err.message : String(err) };
    }
  });

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0]!;
    const r = opts.errorStyle.notFound(req, methods.otherMethodMatches(req.method, path));
    send(reply, r);
  });

  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof HttpError) {
      reply.code(err.statusCode).headers(err.headers);
      if (typeof err.body === 'string') return reply.type('text/plain; charset=utf-8').send(err.body);
      return reply.type('application/json').send(JSON.stringify(err.body));
    }
    if (err.validation) return send(reply, opts.errorStyle.validation(err, req));
    const code = err.code ?? '';
    if (
      code === 'FST_ERR_CTP_INVALID_JSON_BODY' ||
      code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ||
      code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' ||
      err instanceof SyntaxError
    ) {
      return send(reply, opts.errorStyle.invalidBody(err, req));
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // Framework-level client errors (media type, body too large, …) keep their status.
      return reply.code(status).type('application/json').send(JSON.stringify({ detail: err.message }));
    }
    if (isTransientStorageError(err)) {
      // Lock contention, not a bug: the request was rolled back and may simply be sent again.
      req.log.warn({ err }, 'storage busy; answered 503');
      reply.header('Retry-After', '1');
      return send(reply, opts.errorStyle.unavailable?.(req) ?? { statusCode: 503, body: { detail: STORAGE_BUSY } });
    }
    req.log.error({ err }, 'unhandled error');
    return send(reply, opts.errorStyle.internal(req));
  });

  return app;
}

/** A serialized document, sent gzipped to clients that accept it (the inventory's is hundreds of KB). */
export class CachedJson {
  private gz?: Buffer;
  constructor(readonly text: string) {}
  send(req: { headers: Record<string, string | string[] | undefined> }, reply: any, type: string) {
    const vary = reply.getHeader('Vary');
    reply.type(type).header('Vary', vary ? `${String(vary)}, Accept-Encoding` : 'Accept-Encoding');
    if (/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? '')) && this.text.length > 1024) {
      this.gz ??= gzipSync(this.text);
      return reply.header('Content-Encoding', 'gzip').send(this.gz);
    }
    return reply.send(this.text);
  }
}

function finishDocument(openapiObject: any, doc: OpenApiOptions) {
  if (doc.security) openapiObject.security = doc.security;
  if (doc.errors) addErrorResponses(openapiObject, doc);
  doc.shape?.(openapiObject);
  return shareComponents(openapiObject);
}

function addErrorResponses(openapiObject: any, doc: OpenApiOptions) {
  const schema = doc.errorSchema ?? { type: 'object', additionalProperties: true };
  for (const [url, item] of Object.entries<any>(openapiObject.paths ?? {})) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!op || typeof op !== 'object') continue;
      const security: Array<Record<string, string[]>> = op.security ?? openapiObject.security ?? [];
      const secured = security.length > 0 && security.every((r) => Object.keys(r).length > 0);
      const hasInput = op.requestBody !== undefined || (op.parameters ?? []).some((p: any) => p.in === 'query' || p.in === 'path');
      op.responses ??= {};
      for (const [status, description] of Object.entries(doc.errors!({ method: method.toUpperCase(), url, secured, hasInput }))) {
        op.responses[status] ??= { description, content: { 'application/json': { schema } } };
      }
    }
  }
}

function send(reply: any, r: { statusCode: number; body: unknown; contentType?: string }) {
  reply.code(r.statusCode);
  if (r.contentType) return reply.type(r.contentType).send(typeof r.body === 'string' ? r.body : JSON.stringify(r.body));
  return reply.type('application/json').send(JSON.stringify(r.body));
}
