import type { FastifyRequest } from 'fastify';

/**
 * The origin clients reach this service at, for the OAuth metadata, the
 * issuer and every absolute URL the service hands out. It is chosen from
 * origins the operator configured (`--public-url`, several separated by
 * commas, the first canonical) or, without them, from the address and port
 * the request's connection actually came in on (loopback also under its
 * names `localhost`, `127.0.0.1` and `[::1]`). The Host header only picks
 * among those: a Host no origin matches gets the first one, never an echo,
 * so a forged Host cannot put another server into a document a cache keeps.
 */
export function publicOrigin(req: FastifyRequest, configured: readonly string[]): string {
  const candidates = configured.length > 0 ? configured : listeningOrigins(req);
  const host = typeof req.headers.host === 'string' ? hostOf(`${req.protocol}://${req.headers.host}`) : undefined;
  if (host !== undefined) for (const o of candidates) if (hostOf(o) === host) return o;
  return candidates[0]!;
}

/** Whether the answer may differ by Host (it then carries `Vary: Host`). */
export function originVariesByHost(req: FastifyRequest, configured: readonly string[]): boolean {
  return (configured.length > 0 ? configured : listeningOrigins(req)).length > 1;
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    return undefined;
  }
}

function listeningOrigins(req: FastifyRequest): string[] {
  const scheme = req.protocol === 'https' ? 'https' : 'http';
  const port = req.socket.localPort;
  let addr = req.socket.localAddress ?? '127.0.0.1';
  if (addr.startsWith('::ffff:')) addr = addr.slice(7);
  const loopback = addr === '::1' || addr.startsWith('127.');
  const names = loopback ? [addr.includes(':') ? `[${addr}]` : addr, 'localhost', '127.0.0.1', '[::1]'] : [addr.includes(':') ? `[${addr}]` : addr];
  const out: string[] = [];
  for (const n of names) {
    const o = new URL(`${scheme}://${n}${port ? `:${port}` : ''}`).origin;
    if (!out.includes(o)) out.push(o);
  }
  return out;
}

/** `--public-url` / `WORKFLOW_PUBLIC_URL`: comma-separated origins (scheme, host, port; no path), the first canonical. */
export function parsePublicUrls(v: string | undefined): string[] {
  if (!v) return [];
  return v
    .split(',')
    .map((s) => s.trim().replace(/\/+$/, ''))
    .filter(Boolean)
    .map((s) => {
      let u: URL;
      try {
        u = new URL(s);
      } catch {
        throw new Error(`--public-url: ${s} is not a URL`);
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`--public-url: ${s} must be http(s)`);
      // A path prefix (a service mounted below a proxy path) is kept; query and fragment are not meaningful here.
      return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
    });
}
