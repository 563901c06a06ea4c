import fs from 'node:fs';
import path from 'node:path';
import send from '@fastify/send';
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { FrontendAssets } from '../domain/frontend.ts';
import { LogBuffer, captureLogger } from '../domain/logs.ts';
import type { ModelFolders } from '../domain/models.ts';
import { hiddenOutputs } from '../domain/output-owners.ts';
import { checkRealPath, type FolderType } from '../files/paths.ts';
import type { WsHub } from '../ws/hub.ts';
import { dual, type Handler, type RouteDoc } from './common.ts';
import type { RouteCtx } from './context.ts';
import { sendError } from './replies.ts';
import { SUMMARIES } from './summaries.ts';

export interface FrontendOptions {
  dirs: Record<FolderType, string>;
  customNodesDir: string;
  models: ModelFolders;
  multiUser: boolean;
  /** `--front-end-root <dir>`: a web frontend build served at `/`. */
  frontEndRoot?: string;
  /** Where `/templates/*` (the workflow templates index and files) is served from. */
  templatesRoot?: string;
  hub: WsHub;
}

/**
 * `/templates/*` without installed templates: no templates (in any
 * language), no provider logos, and search options over the index's own fields (a client replaces
 * its search options with whatever this file holds, so it cannot be empty).
 */
const EMPTY_TEMPLATES = new Map<string, string>([
  ['index.json', '[]'],
  ['index_logo.json', '{}'],
  [
    'fuse_options.json',
    JSON.stringify({
      keys: [
        { name: 'name', weight: 0.3 },
        { name: 'title', weight: 0.3 },
        { name: 'description', weight: 0.1 },
        { name: 'tags', weight: 0.2 },
        { name: 'models', weight: 0.3 },
      ],
      threshold: 0.33,
      includeScore: true,
      includeMatches: true,
    }),
  ],
]);

/** `index.<locale>.json`, the templates index the frontend reads first in another language. */
const LOCALIZED_INDEX = /^index\.[a-z]{2,3}(-[A-Za-z0-9]{2,8})?\.json$/;

const IMAGE_PATH = /\.(jpe?g|png|ppm|bmp|pgm|tiff?|webp)$/i;

/** The reference's cache middleware: scripts, styles and index*.json revalidate; images are kept a day. */
function cacheHeader(urlPath: string): string | undefined {
  const last = urlPath.slice(urlPath.lastIndexOf('/') + 1);
  if (urlPath.endsWith('.js') || urlPath.endsWith('.css') || (last.startsWith('index') && last.endsWith('.json'))) return 'no-cache';
  if (IMAGE_PATH.test(urlPath)) return 'public, max-age=86400';
  return undefined;
}

/**
 * The reference's cache middleware for answers other than served files: a
 * path naming an image that is not there (404) is kept an hour, one that
 * redirects for now (302/303/307) is not kept, and any other success a day;
 * a header a route set stays. `/view` of an image file name gets the same
 * for its 404. An answer to a request with credentials is `private`: a shared
 * cache must not answer another caller with it.
 */
function imagePathCaching(req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void): void {
  if (!reply.hasHeader('cache-control')) {
    const q = req.url.indexOf('?');
    const urlPath = q < 0 ? req.url : req.url.slice(0, q);
    const status = reply.statusCode;
    let image = IMAGE_PATH.test(urlPath);
    if (!image && status === 404 && (urlPath === '/view' || urlPath === '/api/view')) {
      const name = (req.query as Record<string, unknown> | undefined)?.filename;
      image = typeof name === 'string' && IMAGE_PATH.test(name.replace(/\s*\[(input|output|temp)\]$/, ''));
    }
    if (image) {
      const scope = req.headers.authorization || req.headers.cookie || req.headers['x-api-key'] ? 'private' : 'public';
      if (status === 404) reply.header('Cache-Control', `${scope}, max-age=3600`);
      else if (status === 302 || status === 303 || status === 307) reply.header('Cache-Control', 'no-cache');
      else if ((status >= 200 && status <= 206) || status === 301 || status === 308) reply.header('Cache-Control', `${scope}, max-age=86400`);
    }
  }
  done(null, payload);
}

/** stat that answers undefined for any name the file system refuses (too long, NUL, below a file …). */
function statQuiet(p: string): fs.Stats | undefined {
  try {
    return fs.statSync(p, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** The plain 404 of unknown paths (callNotFound would see the HEAD twin of these wildcard routes and answer 405). */
function notFound(reply: FastifyReply): FastifyReply {
  return reply.code(404).type('text/plain; charset=utf-8').send('404: Not Found');
}

/**
 * Serves one file below `root` (dot files refused, links leaving the root
 * refused); answers through the not-found handler when there is none.
 */
async function serveStatic(req: FastifyRequest, reply: FastifyReply, root: string, rel: string, extraHeaders: Record<string, string> = {}): Promise<unknown> {
  const clean = rel.split('/').filter((p) => p !== '').join('/');
  let file: string;
  try {
    if (clean.split('/').some((p) => p === '..' || p.startsWith('.')) || clean.includes('\\') || clean.includes('\0')) return notFound(reply);
    file = path.join(root, clean);
    checkRealPath(root, file);
  } catch {
    return notFound(reply);
  }
  if (!statQuiet(file)?.isFile()) return notFound(reply);
  const r = await send(req.raw, '/' + clean.split('/').map(encodeURIComponent).join('/'), { root, dotfiles: 'deny', index: false, cacheControl: false });
  if (r.type !== 'file') {
    r.stream.destroy?.();
    return notFound(reply);
  }
  const headers: Record<string, string> = { ...r.headers, ...extraHeaders };
  const cache = cacheHeader(req.url.split('?')[0]!);
  if (cache) headers['Cache-Control'] = cache;
  return reply.code(r.statusCode).headers(headers).send(r.stream);
}

/** A route at its bare path only (the reference mounts /internal as a sub-application, without the /api twin). */
function bare(app: FastifyInstance, method: HTTPMethods, url: string, schema: RouteDoc, handler: Handler): void {
  app.route({ method, url, schema: { summary: schema.operationId ? SUMMARIES[schema.operationId] : undefined, ...schema }, validatorCompiler: () => () => true, handler });
}

/**
 * Routes the reference's web frontend calls besides the API proper:
 * extensions, translations, templates, subgraph blueprints, node
 * replacements, the internal log/folder routes, and, with
 * `--front-end-root`, the frontend build itself at `/`.
 */
export function frontendRoutes(app: FastifyInstance, ctx: RouteCtx, opts: FrontendOptions): void {
  const assets = new FrontendAssets(opts.customNodesDir, opts.frontEndRoot);
  app.addHook('onSend', imagePathCaching);
  const logs = new LogBuffer();
  logs.sink = {
    connected: (id) => opts.hub.get(id) !== undefined,
    send: (id, data) => opts.hub.send('logs', data, id),
  };
  captureLogger(app.log, logs);

  dual(app, 'GET', '/extensions', { operationId: 'getExtensions', tags: ['extensions'] }, () => assets.extensions());
  dual(app, 'GET', '/i18n', { operationId: 'getI18n', tags: ['extensions'] }, () => assets.i18n());
  dual(app, 'GET', '/workflow_templates', { operationId: 'getWorkflowTemplates', tags: ['extensions'] }, () => assets.workflowTemplates());
  dual(app, 'GET', '/global_subgraphs', { operationId: 'getGlobalSubgraphs', tags: ['subgraph'] }, () => assets.subgraphs());
  dual(
    app,
    'GET',
    '/global_subgraphs/:id',
    { operationId: 'getGlobalSubgraph', tags: ['subgraph'], params: { type: 'object', properties: { id: { type: 'string' } } } },
    (req, reply) => {
      const entry = assets.subgraph((req.params as { id: string }).id);
      if (!entry) return sendError(reply, 404, 'Subgraph not found');
      return entry;
    },
    { validate: false },
  );
  dual(app, 'GET', '/node_replacements', { operationId: 'getNodeReplacements', tags: ['node'] }, () => ({}));

  // Scripts of node packs, as the reference's static route per pack; the frontend build's own extensions otherwise.
  app.get('/extensions/:pack/*', { schema: { hide: true } }, async (req, reply) => {
    const p = req.params as { pack: string; '*': string };
    const web = assets.webDir(p.pack);
    if (web) return serveStatic(req, reply, web, p['*']);
    if (opts.frontEndRoot) return serveStatic(req, reply, opts.frontEndRoot, `extensions/${p.pack}/${p['*']}`);
    return notFound(reply);
  });
  for (const url of ['/api/workflow_templates/:pack/*', '/workflow_templates/:pack/*']) {
    app.get(url, { schema: { hide: true } }, async (req, reply) => {
      const p = req.params as { pack: string; '*': string };
      const hit = assets.templateFile(p.pack, p['*']);
      if (!hit) return notFound(reply);
      return serveStatic(req, reply, hit.root, hit.rel);
    });
  }

  // The workflow templates. The three files the frontend reads beside the index have empty stand-ins when no
  // templates are installed (the reference always has its templates package): the frontend then shows no
  // templates and logs no error, where a 404 of fuse_options.json is logged as an error on every start.
  app.get('/templates/*', { schema: { hide: true } }, async (req, reply) => {
    const rel = (req.params as { '*': string })['*'];
    const root = opts.templatesRoot;
    if (root && statQuiet(path.join(root, rel.split('/').filter(Boolean).join('/')))) return serveStatic(req, reply, root, rel);
    const standIn = EMPTY_TEMPLATES.get(LOCALIZED_INDEX.test(rel) ? 'index.json' : rel);
    if (standIn !== undefined) return reply.header('Cache-Control', 'no-cache').type('application/json').send(standIn);
    return notFound(reply);
  });

  bare(app, 'GET', '/internal/logs', { operationId: 'getInternalLogs', tags: ['internal'] } as RouteDoc, (_req, reply) =>
    reply.type('application/json').send(JSON.stringify(logs.all().map((l) => `${l.t} - ${l.m}`).join(''))),
  );
  bare(app, 'GET', '/internal/logs/raw', { operationId: 'getInternalLogsRaw', tags: ['internal'] } as RouteDoc, () => logs.rawView());
  bare(
    app,
    'PATCH',
    '/internal/logs/subscribe',
    {
      operationId: 'subscribeToLogs',
      tags: ['internal'],
      body: { type: 'object', required: ['clientId', 'enabled'], properties: { clientId: { type: 'string' }, enabled: { type: 'boolean' } } },
    } as RouteDoc,
    (req, reply) => {
      const b = req.body as Record<string, unknown> | undefined;
      if (!b || typeof b !== 'object' || Array.isArray(b) || typeof b.clientId !== 'string' || b.clientId === '' || b.clientId.length > 256) {
        return sendError(reply, 400, 'clientId (string) and enabled (boolean) are required');
      }
      if (typeof b.enabled !== 'boolean') return sendError(reply, 400, 'clientId (string) and enabled (boolean) are required');
      logs.subscribe(b.clientId, b.enabled);
      return reply.code(200).send();
    },
  );
  bare(app, 'GET', '/internal/folder_paths', { operationId: 'getInternalFolderPaths', tags: ['internal'] } as RouteDoc, () => {
    const out: Record<string, string[]> = {};
    for (const [name, f] of opts.models.folders()) out[name] = f.paths;
    return out;
  });
  bare(
    app,
    'GET',
    '/internal/files/:directory_type',
    { operationId: 'getInternalFiles', tags: ['internal'], params: { type: 'object', properties: { directory_type: { type: 'string' } } } } as RouteDoc,
    async (req, reply) => {
      const type = (req.params as { directory_type: string }).directory_type;
      if (type !== 'output' && type !== 'input' && type !== 'temp') return sendError(reply, 400, 'Invalid directory type');
      const dir = opts.dirs[type];
      const entries: Array<{ name: string; mtime: number }> = [];
      for (const e of await fs.promises.readdir(dir, { withFileTypes: true }).catch(() => [])) {
        const st = await fs.promises.stat(path.join(dir, e.name)).catch(() => undefined);
        if (st?.isFile() && (!e.isSymbolicLink() || (await insideRoot(dir, path.join(dir, e.name))))) entries.push({ name: e.name, mtime: st.mtimeMs });
      }
      let names = entries.sort((a, b) => b.mtime - a.mtime).map((e) => e.name);
      if (opts.multiUser && type !== 'input') {
        const hidden = await hiddenOutputs(ctx.storageDb(), ctx.owner(req));
        names = names.filter((n) => !hidden.has(`${type}//${n}`));
      }
      return names;
    },
  );

  if (opts.frontEndRoot) {
    const root = path.resolve(opts.frontEndRoot);
    const noCache = { 'Cache-Control': 'no-cache', Pragma: 'no-cache', Expires: '0' };
    app.get('/', { schema: { hide: true } }, (req, reply) => serveStatic(req, reply, root, 'index.html', noCache));
    app.get('/*', { schema: { hide: true } }, (req, reply) => {
      const rel = (req.params as { '*': string })['*'];
      // The frontend's router puts its own pages in the address bar (/user-select in multi-user mode), and a
      // browser reloading one asks the server for it. The app takes the path it is loaded at as its mount
      // point, so it is sent back to / (query kept), where it starts and routes there again.
      if (isClientRoute(req, rel) && !statQuiet(path.join(root, rel))) {
        const q = req.url.indexOf('?');
        return reply.code(302).header('Cache-Control', 'no-cache').redirect(q < 0 ? '/' : `/${req.url.slice(q)}`);
      }
      return serveStatic(req, reply, root, rel);
    });
    // The build keeps its bundles in /assets/; the reference serves its assets API only under /api, so a
    // bare /assets/<file> that the build has is the build's, whatever API route shares the bare prefix.
    app.addHook('onRequest', async (req, reply) => {
      if ((req.method !== 'GET' && req.method !== 'HEAD') || !req.url.startsWith('/assets/')) return;
      let rel: string;
      try {
        rel = decodeURIComponent(req.url.slice(1).split('?')[0]!);
      } catch {
        return;
      }
      if (rel.includes('\0') || rel.split('/').includes('..') || !statQuiet(path.join(root, rel))?.isFile()) return;
      await serveStatic(req, reply, root, rel);
      return reply;
    });
  }
}

/** Prefixes of the server's own paths: never the frontend's pages. */
const SERVER_PREFIXES = ['api/', 'internal/', 'extensions/', 'templates/', 'assets/', 'ws', 'view', 'docs'];

/** A browser navigating to a page of the frontend's router: an HTML request for a path without a file extension. */
function isClientRoute(req: FastifyRequest, rel: string): boolean {
  const accept = req.headers.accept ?? '';
  if (!accept.includes('text/html') || rel === '' || rel.length > 200) return false;
  if (SERVER_PREFIXES.some((p) => rel.startsWith(p))) return false;
  return /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*\/?$/.test(rel);
}

async function insideRoot(root: string, p: string): Promise<boolean> {
  try {
    checkRealPath(root, p);
    return true;
  } catch {
    return false;
  }
}
