import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticate, mayWrite } from '../auth/index.ts';
import { requireRead, requireReadOrLoginNotRequired } from './guards.ts';
import { baseUrl } from './pagination.ts';

/** The REST API version NetBox clients read from every response (pynetbox parses it as a version). */
export const API_VERSION = '4.3';
/** The NetBox release whose REST API this service speaks (clients parse `netbox-version` as a version). */
export const NETBOX_VERSION = '4.3.0';

/** DRF's SimpleMetadata description of one writable field. */
export interface FieldInfo {
  type: string;
  required: boolean;
  read_only: boolean;
  label: string;
  max_length?: number;
  min_value?: number;
  max_value?: number;
  choices?: Array<{ value: string | number; display_name: string }>;
  [k: string]: unknown;
}

/** What OPTIONS tells about one endpoint. */
export interface EndpointMeta {
  /** DRF's view name, e.g. "Device" (its list is "Device List"). */
  name: string;
  description?: string;
  /** Writable fields: POST on the list, PUT on a member. */
  fields?: () => Record<string, FieldInfo>;
}

/** The media type an OPTIONS request's body is read as: whatever was sent is drained and dropped. */
const IGNORED_BODY = 'application/x-inventory-ignored-body';

const METHOD_ORDER = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];

interface Pattern {
  url: string;
  /** Built when first needed (a 405, OPTIONS): a start registers thousands of routes. */
  re?: RegExp;
  methods: Set<string>;
}

function patternOf(url: string): RegExp {
  return new RegExp('^' + url.split('/').map((seg) => seg.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+')).join('/') + '$');
}

/**
 * NetBox's wire conventions for everything under /api/: the `API-Version` header, `Allow` on 405s,
 * OPTIONS metadata on every list and detail URL, and the app roots built from the routes that exist.
 * `install` runs before the routes are registered (it watches them); `finish` after (it adds OPTIONS).
 */
export class ApiConventions {
  #patterns = new Map<string, Pattern>();
  #meta = new Map<string, EndpointMeta>();

  /** Describes the endpoint at a list URL (`/api/dcim/devices/`); its detail URL is `<list>:id/`. */
  describe(listUrl: string, meta: EndpointMeta): void {
    this.#meta.set(listUrl, meta);
  }

  install(app: FastifyInstance): void {
    app.addHook('onRoute', (route) => {
      if (!route.url.startsWith('/api/')) return;
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      let p = this.#patterns.get(route.url);
      if (!p) this.#patterns.set(route.url, (p = { url: route.url, methods: new Set() }));
      for (const m of methods) p.methods.add(m.toUpperCase());
    });
    app.addHook('onRequest', async (req, reply) => {
      if (!req.url.startsWith('/api/')) return;
      reply.header('API-Version', API_VERSION);
      // OPTIONS never reads a body (DRF does not parse one for metadata): drop the type so none is parsed.
      if (req.method === 'OPTIONS' && (req.headers['content-type'] !== undefined || req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined)) {
        req.headers['content-type'] = IGNORED_BODY;
      }
    });
    app.addContentTypeParser(IGNORED_BODY, { parseAs: 'buffer', bodyLimit: 1024 * 1024 }, (_req, _body, done) => done(null, undefined));
    app.addHook('onSend', async (req, reply, payload) => {
      if (reply.statusCode === 405 && !reply.hasHeader('allow')) {
        const allow = this.allowFor(req.url.split('?')[0]!);
        if (allow) reply.header('Allow', allow);
      }
      return payload;
    });
  }

  /** The `Allow` value of a concrete path, or undefined when no API route matches it. */
  allowFor(path: string): string | undefined {
    const methods = new Set<string>();
    for (const p of this.#patterns.values()) if ((p.re ??= patternOf(p.url)).test(path)) for (const m of p.methods) methods.add(m);
    if (!methods.size) return undefined;
    if (methods.has('GET')) methods.add('HEAD');
    methods.add('OPTIONS');
    return METHOD_ORDER.filter((m) => methods.has(m)).join(', ');
  }

  /** Collection URLs under one app (`/api/dcim/` → {sites: …}) from the routes registered. */
  appEndpoints(appName: string): string[] {
    const prefix = `/api/${appName}/`;
    const out: string[] = [];
    for (const p of this.#patterns.values()) {
      if (!p.url.startsWith(prefix) || !p.methods.has('GET')) continue;
      const rest = p.url.slice(prefix.length);
      if (/^[a-z0-9-]+\/$/.test(rest)) out.push(rest.slice(0, -1));
    }
    return out.sort();
  }

  /** OPTIONS on every list and detail URL (and any other API URL): DRF's metadata, `Allow` as on a 405. */
  finish(app: FastifyInstance): void {
    const urls = [...this.#patterns.values()].filter((p) => !p.methods.has('OPTIONS')).map((p) => p.url);
    for (const url of urls) {
      app.route({
        method: 'OPTIONS',
        url,
        preHandler: requireRead,
        schema: { hide: true },
        handler: async (req, reply) => this.#options(req, reply, url),
      });
    }
  }

  async #options(req: FastifyRequest, reply: FastifyReply, url: string) {
    const allow = this.allowFor(url)!;
    reply.header('Allow', allow);
    const isDetail = /\/:[A-Za-z0-9_]+\/$/.test(url);
    const listUrl = isDetail ? url.replace(/:[A-Za-z0-9_]+\/$/, '') : url;
    const meta = this.#meta.get(listUrl);
    const name = meta ? (isDetail ? meta.name : `${meta.name} List`) : viewName(url);
    const out: Record<string, unknown> = {
      name,
      description: meta?.description ?? '',
      renders: ['application/json', 'text/html'],
      parses: ['application/json', 'multipart/form-data', 'application/x-www-form-urlencoded'],
    };
    const principal = await authenticate(req);
    const methods = new Set(allow.split(', '));
    if (meta?.fields && principal && mayWrite(principal)) {
      const actions: Record<string, unknown> = {};
      const action = isDetail ? 'PUT' : 'POST';
      if (methods.has(action)) actions[action] = meta.fields();
      if (Object.keys(actions).length) out.actions = actions;
    }
    return out;
  }

  /** `GET /api/`, `/api/<app>/` for every app with routes, `/api/plugins/` (none installed). */
  registerRoots(app: FastifyInstance, apps: string[]): void {
    app.get('/api/', { preHandler: requireReadOrLoginNotRequired, schema: { tags: ['status'], summary: 'API root' } }, async (req) => {
      const base = baseUrl(req);
      const out: Record<string, string> = {};
      for (const a of [...apps, 'plugins', 'status'].sort()) out[a] = `${base}/api/${a}/`;
      return out;
    });
    for (const a of apps) {
      app.get(`/api/${a}/`, { preHandler: requireReadOrLoginNotRequired, schema: { tags: ['status'], summary: `${a} endpoints` } }, async (req) => {
        const base = baseUrl(req);
        return Object.fromEntries(this.appEndpoints(a).map((p) => [p, `${base}/api/${a}/${p}/`]));
      });
    }
    app.get('/api/plugins/', { preHandler: requireReadOrLoginNotRequired, schema: { tags: ['status'], summary: 'Installed plugins (none)' } }, async () => ({}));
  }
}

/** DRF's default view name from a URL: `/api/extras/event-rules/` → "Event Rule List". */
function viewName(url: string): string {
  const parts = url.split('/').filter(Boolean);
  const detail = parts.length && parts[parts.length - 1]!.startsWith(':');
  const segs = parts.filter((s) => !s.startsWith(':'));
  if (segs.length <= 1) return 'Api Root';
  let last = segs[segs.length - 1]!;
  if (segs.length === 2) return `${title(last)} Root`;
  const singular = last.endsWith('ies') ? last.slice(0, -3) + 'y' : last.endsWith('ses') ? last.slice(0, -2) : last.replace(/s$/, '');
  last = title(singular);
  return detail ? last : segs.length === 3 ? `${last} List` : last;
}

function title(s: string): string {
  return s.split(/[-_]/).map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(' ');
}
