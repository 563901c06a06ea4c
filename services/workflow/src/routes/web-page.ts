import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { webBundle } from '../web/build.ts';

const WEB_DIR = path.join(import.meta.dirname, '..', 'web');

/** Scripts, styles, images and sockets only from this origin; no inline code; never framed. */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "connect-src 'self' ws: wss:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The built-in page at `/` when no `--front-end-root` is given: a node-graph
 * editor (src/web, README "Built-in page"). index.html and the script and
 * style sheet esbuild bundles from src/web/editor (built when stale), read
 * once at start. In the hosted runtime (`--runtime cloud`) the same page
 * signs in (a session cookie) and offers the user's workspaces.
 */
export function webPageRoutes(app: FastifyInstance, opts: { runtime: 'local' | 'cloud' } = { runtime: 'local' }): void {
  const bundle = webBundle();
  // The page learns the runtime from its body: in the hosted one it signs in before anything else.
  const index = fs.readFileSync(path.join(WEB_DIR, 'index.html'), 'utf8').replace('<body ', `<body data-runtime="${opts.runtime}" `);
  const files: Array<[url: string, body: Buffer, type: string]> = [
    ['/', Buffer.from(index), 'text/html; charset=utf-8'],
    ['/web/app.js', bundle.js, 'text/javascript; charset=utf-8'],
    ['/web/app.css', bundle.css, 'text/css; charset=utf-8'],
  ];
  for (const [url, body, type] of files) {
    const html = url === '/' ? body.toString('utf8') : undefined;
    app.get(url, { schema: { hide: true } }, (req, reply) => {
      let out: Buffer | string = body;
      // With --api-key, a page opened as /?token=… (the request passed the guard) loads its own files with the same token.
      const token = (req.query as Record<string, unknown>).token;
      if (html !== undefined && typeof token === 'string' && token !== '') {
        const q = `?token=${encodeURIComponent(token)}`;
        out = html.replace('href="web/app.css"', `href="web/app.css${q}"`).replace('src="web/app.js"', `src="web/app.js${q}"`);
      }
      return reply
        .header('Content-Type', type)
        .header('Cache-Control', 'no-cache')
        .header('Content-Security-Policy', CSP)
        .header('X-Content-Type-Options', 'nosniff')
        .header('Referrer-Policy', 'no-referrer')
        .send(out);
    });
  }
}
