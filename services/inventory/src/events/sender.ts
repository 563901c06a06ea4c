import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { DestinationGuard } from './guard.ts';

export interface OutgoingRequest {
  method: string;
  url: string;
  headers: Array<[string, string]>;
  body: Buffer;
  timeoutMs: number;
  sslVerification: boolean;
  caFilePath: string | null;
  signal?: AbortSignal;
}

export interface SendOutcome {
  status?: number;
  /** First 2 KB of the response body. */
  body?: string;
  /** The response's Retry-After, in milliseconds from now. */
  retryAfterMs?: number;
  error?: string;
  durationMs: number;
}

const EXCERPT = 2048;
const MAX_READ = 1024 * 1024;

/**
 * One HTTP request, never following redirects (a 3xx is the outcome), with
 * a hard timeout covering connect, send and the response. Connections go to
 * the address the guard approved, while Host and TLS SNI/verification use the
 * URL's host name.
 */
export class HttpSender {
  #agents = new Map<string, http.Agent>();
  #caCache = new Map<string, Buffer>();

  constructor(private readonly guard: DestinationGuard) {}

  #agent(https_: boolean, verify: boolean, ca: string | null): http.Agent {
    const key = `${https_}|${verify}|${ca ?? ''}`;
    let a = this.#agents.get(key);
    if (!a) {
      const opts = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64, scheduling: 'lifo' as const };
      if (https_) {
        let caBuf: Buffer | undefined;
        if (ca) {
          caBuf = this.#caCache.get(ca) ?? fs.readFileSync(ca);
          this.#caCache.set(ca, caBuf);
        }
        a = new https.Agent({ ...opts, rejectUnauthorized: verify, ca: caBuf });
      } else {
        a = new http.Agent(opts);
      }
      this.#agents.set(key, a);
    }
    return a;
  }

  close(): void {
    for (const a of this.#agents.values()) a.destroy();
    this.#agents.clear();
  }

  async send(r: OutgoingRequest): Promise<SendOutcome> {
    const started = performance.now();
    const done = (o: Omit<SendOutcome, 'durationMs'>): SendOutcome => ({ ...o, durationMs: performance.now() - started });
    let url: URL;
    try {
      url = new URL(r.url);
    } catch {
      return done({ error: `Error forming HTTP request: invalid URL ${JSON.stringify(r.url.slice(0, 500))}` });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return done({ error: `Error forming HTTP request: unsupported URL scheme ${url.protocol}` });
    }
    // One timer for the whole exchange (DNS, connect, request, response); cheaper than AbortSignal.timeout per request.
    let timedOut = false;
    let abortReq: ((why: string) => void) | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      abortReq?.(`Request to ${r.url} timed out after ${r.timeoutMs / 1000} seconds`);
    }, r.timeoutMs);
    const onStop = () => abortReq?.(`Request to ${r.url} was stopped`);
    r.signal?.addEventListener('abort', onStop, { once: true });
    const cleanup = () => {
      clearTimeout(timer);
      r.signal?.removeEventListener('abort', onStop);
    };
    let target: { address: string; family: 4 | 6 };
    try {
      target = await Promise.race([
        this.guard.resolve(url.hostname),
        new Promise<never>((_, rej) => {
          abortReq = (why) => rej(new Error(why));
        }),
      ]);
    } catch (err) {
      cleanup();
      return done({ error: (err as Error).message });
    }
    if (timedOut || r.signal?.aborted) {
      cleanup();
      return done({ error: timedOut ? `Request to ${r.url} timed out after ${r.timeoutMs / 1000} seconds` : `Request to ${r.url} was stopped` });
    }
    const lookup: LookupFunction = (_host, opts, cb) => {
      if ((opts as { all?: boolean }).all) (cb as any)(null, [{ address: target.address, family: target.family }]);
      else cb(null, target.address, target.family);
    };
    const isHttps = url.protocol === 'https:';
    let agent: http.Agent;
    try {
      agent = this.#agent(isHttps, r.sslVerification, r.caFilePath);
    } catch (err) {
      return done({ error: `Error reading ca_file_path: ${(err as Error).message}` });
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of r.headers) headers[k] = v;
    headers['Content-Length'] = String(r.body.length);

    return new Promise<SendOutcome>((resolve) => {
      let settled = false;
      const finish = (o: Omit<SendOutcome, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        cleanup();
        resolve(done(o));
      };
      let req: http.ClientRequest | undefined;
      abortReq = (why) => {
        req?.destroy();
        finish({ error: why });
      };
      try {
        req = (isHttps ? https : http).request(
          {
            protocol: url.protocol,
            hostname: url.hostname.replace(/^\[|\]$/g, ''),
            port: url.port || (isHttps ? 443 : 80),
            path: url.pathname + url.search,
            method: r.method,
            headers,
            agent,
            lookup,
            servername: isHttps && !/^\[|^\d+\.\d+\.\d+\.\d+$/.test(url.hostname) ? url.hostname : undefined,
          },
          (res) => {
            const chunks: Buffer[] = [];
            let kept = 0;
            let read = 0;
            res.on('data', (c: Buffer) => {
              read += c.length;
              if (kept < EXCERPT) {
                chunks.push(c.subarray(0, EXCERPT - kept));
                kept += Math.min(c.length, EXCERPT - kept);
              }
              if (read > MAX_READ) res.destroy();
            });
            const end = () => finish({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8'), retryAfterMs: parseRetryAfter(res.headers['retry-after']) });
            res.on('end', end);
            res.on('close', end);
            res.on('error', end);
          },
        );
      } catch (err) {
        finish({ error: `Error forming HTTP request: ${(err as Error).message}` });
        return;
      }
      req.on('error', (err) => finish({ error: describeError(err) }));
      req.end(r.body);
    });
  }
}

function describeError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return `${e?.code ? e.code + ': ' : ''}${e?.message ?? String(err)}`;
}

/** Retry-After as seconds or an HTTP date. */
export function parseRetryAfter(v: string | undefined): number | undefined {
  if (!v) return undefined;
  if (/^\d{1,9}$/.test(v.trim())) return Number(v.trim()) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - Date.now());
}
