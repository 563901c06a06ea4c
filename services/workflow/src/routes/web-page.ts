import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';

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

const FILES: Array<[url: string, file: string, type: string]> = [
  ['/', 'index.html', 'text/html; charset=utf-8'],
  ['/web/app.js', 'app.js', 'text/javascript; charset=utf-8'],
  ['/web/style.css', 'style.css', 'text/css; charset=utf-8'],
];

/**
 * The built-in page at `/` when no `--front-end-root` is given: the queue,
 * running progress over the WebSocket, jobs with thumbnails, image upload and
 * prompt queueing. Three static files (src/web), read once at start.
 */
export function webPageRoutes(app: FastifyInstance): void {
  for (const [url, file, type] of FILES) {
    const body = fs.readFileSync(path.join(WEB_DIR, file));
    const html = file.endsWith('.html') ? body.toString('utf8') : undefined;
    app.get(url, { schema: { hide: true } }, (req, reply) => {
      let out: Buffer | string = body;
      // With --api-key, a page opened as /?token=… (the request passed the guard) loads its own files with the same token.
      const token = (req.query as Record<string, unknown>).token;
      if (html !== undefined && typeof token === 'string' && token !== '') {
        const q = `?token=${encodeURIComponent(token)}`;
        out = html.replace('href="web/style.css"', `href="web/style.css${q}"`).replace('src="web/app.js"', `src="web/app.js${q}"`);
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
