import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Pool, buildConnector, type Dispatcher } from 'undici';
import type { DestinationGuard } from './guard.ts';

export interface OutgoingRequest {
  method: string;
  url: string;
  headers: Array<[string, string]>;
  /** Instead of `headers`: the complete header list flattened (name, value, …), Content-Length included (see send-job.ts). */
  flat?: string[];
  body: Buffer;
  timeoutMs: number;
  sslVerification: boolean;
  caFilePath: string | null;
  signal?: AbortSignal;
  /** A cheaper stop switch than an AbortSignal (one per delivery attempt): `stop()` ends the request. */
  stopper?: Stopper;
}

/** Stops one in-flight send (see OutgoingRequest.stopper). */
export class Stopper {
  stopped = false;
  #listener: { handleEvent(): void } | undefined;
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.#listener?.handleEvent();
  }
  /** @internal */
  listen(l: { handleEvent(): void } | undefined): void {
    this.#listener = l;
  }
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
  /** Parsed webhook URLs (a webhook's URL repeats for each of its deliveries); bounded. */
  #urls = new Map<string, URL | null>();
  /**
   * Addresses the guard approved, per host name, kept for one second: the guard's own answers are
   * cached for five, so this only saves its asynchronous round trip per request, not a policy check.
   */
  #targets = new Map<string, { at: number; target: { address: string; family: 4 | 6 } }>();

  /** undici connection pools per origin and TLS settings: the common path (about a third of node:http's CPU per request). */
  #pools = new Map<string, Pool>();

  constructor(private readonly guard: DestinationGuard) {}

  /** New connections go to the address the guard approves for the host name (checked again, from its cache). */
  readonly #lookup = ((host: string, opts: { all?: boolean }, cb: (...a: unknown[]) => void) => {
    this.guard.resolve(host).then(
      (t) => (opts.all ? cb(null, [{ address: t.address, family: t.family }]) : cb(null, t.address, t.family)),
      (err) => cb(err),
    );
  }) as LookupFunction;

  #ca(ca: string): Buffer {
    let caBuf = this.#caCache.get(ca);
    if (!caBuf) {
      caBuf = fs.readFileSync(ca);
      this.#caCache.set(ca, caBuf);
    }
    return caBuf;
  }

  #pool(url: URL, isHttps: boolean, verify: boolean, ca: string | null): Pool {
    const key = `${url.origin}|${verify}|${ca ?? ''}`;
    let p = this.#pools.get(key);
    if (!p) {
      const tls = isHttps ? { rejectUnauthorized: verify, ...(ca ? { ca: this.#ca(ca) } : {}) } : {};
      // The exchange's own timer bounds connect, send and response; undici's timeouts are off.
      const connect = buildConnector({ timeout: 0, lookup: this.#lookup, ...tls } as buildConnector.BuildOptions);
      p = new Pool(url.origin, { connections: 256, pipelining: 1, headersTimeout: 0, bodyTimeout: 0, connect });
      if (this.#pools.size >= 1000) {
        const [k, old] = this.#pools.entries().next().value!;
        this.#pools.delete(k);
        void old.close().catch(() => {});
      }
      this.#pools.set(key, p);
    }
    return p;
  }

  #agent(https_: boolean, verify: boolean, ca: string | null): http.Agent {
    const key = `${https_}|${verify}|${ca ?? ''}`;
    let a = this.#agents.get(key);
    if (!a) {
      // As many idle sockets kept as may be busy: a drain's next batch reuses them instead of reconnecting.
      const opts = { keepAlive: true, maxSockets: 256, maxFreeSockets: 256, scheduling: 'lifo' as const };
      if (https_) {
        let caBuf: Buffer | undefined;
        if (ca) caBuf = this.#ca(ca);
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
    for (const p of this.#pools.values()) void p.destroy().catch(() => {});
    this.#pools.clear();
  }

  async send(r: OutgoingRequest): Promise<SendOutcome> {
    const x = new Exchange(r);
    let url = this.#urls.get(r.url);
    if (url === undefined) {
      try {
        url = new URL(r.url);
      } catch {
        url = null;
      }
      if (this.#urls.size >= 1000) this.#urls.delete(this.#urls.keys().next().value!);
      this.#urls.set(r.url, url);
    }
    if (url === null) return x.outcome({ error: `Error forming HTTP request: invalid URL ${JSON.stringify(r.url.slice(0, 500))}` });
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return x.outcome({ error: `Error forming HTTP request: unsupported URL scheme ${url.protocol}` });
    }
    x.arm();
    const known = this.#targets.get(url.hostname);
    if (known && performance.now() - known.at < 1000) x.target = known.target;
    else {
      try {
        x.target = await Promise.race([this.guard.resolve(url.hostname), x.interrupted()]);
      } catch (err) {
        x.disarm();
        return x.outcome({ error: (err as Error).message });
      }
      if (this.#targets.size >= 1000) this.#targets.clear();
      this.#targets.set(url.hostname, { at: performance.now(), target: x.target });
    }
    if (x.timedOut || r.signal?.aborted || r.stopper?.stopped) {
      x.disarm();
      return x.outcome({ error: x.timedOut ? x.timeoutText() : `Request to ${r.url} was stopped` });
    }
    const isHttps = url.protocol === 'https:';
    // IPv6 literals take node:http, as does a request undici refuses to form (it throws before sending anything):
    // Expect, Transfer-Encoding, Keep-Alive or Upgrade headers, odd methods or paths; node:http sends or refuses those as before.
    if (url.hostname.startsWith('[')) return this.viaNodeHttp(x, url, isHttps);
    let pool: Pool;
    try {
      pool = this.#pool(url, isHttps, r.sslVerification, r.caFilePath);
    } catch (err) {
      x.disarm();
      return x.outcome({ error: `Error reading ca_file_path: ${(err as Error).message}` });
    }
    return x.dispatch(pool, url, this, isHttps);
  }

  /** @internal The exchange over node:http (a method, not a closure made per request: see Exchange). */
  viaNodeHttp(x: Exchange, url: URL, isHttps: boolean): Promise<SendOutcome> {
    const r = x.r;
    let agent: http.Agent;
    try {
      agent = this.#agent(isHttps, r.sslVerification, r.caFilePath);
    } catch (err) {
      x.disarm();
      return Promise.resolve(x.outcome({ error: `Error reading ca_file_path: ${(err as Error).message}` }));
    }
    return x.start(url, isHttps, agent);
  }
}

/**
 * One request's state and callbacks. A class rather than closures: the exchange runs once per
 * delivery, and each closure would cost an allocation (and, under tsx, a keep-names property write).
 */
class Exchange {
  readonly started = performance.now();
  timedOut = false;
  target: { address: string; family: 4 | 6 } = { address: '', family: 4 };
  #timer: NodeJS.Timeout | undefined;
  #settled = false;
  #resolve: ((o: SendOutcome) => void) | undefined;
  #reject: ((e: Error) => void) | undefined;
  #req: http.ClientRequest | undefined;
  #res: http.IncomingMessage | undefined;
  #chunks: Buffer[] = [];
  #kept = 0;
  #read = 0;
  /** undici path: the request's abort, its status once the head arrived, Retry-After, and the node:http fallback. */
  #abort: ((err?: Error) => void) | undefined;
  #status: number | undefined;
  #retryAfter: string | undefined;
  /** The sender and scheme to fall back to node:http with. */
  #fallback: HttpSender | undefined;
  #https = false;
  #url: URL | undefined;

  constructor(readonly r: OutgoingRequest) {}

  outcome(o: Omit<SendOutcome, 'durationMs'>): SendOutcome {
    // Fields written out (no spread), in one shape for every outcome: this runs once per request.
    return { status: o.status, body: o.body, retryAfterMs: o.retryAfterMs, error: o.error, durationMs: performance.now() - this.started };
  }

  timeoutText(): string {
    return `Request to ${this.r.url} timed out after ${this.r.timeoutMs / 1000} seconds`;
  }

  /** One timer for the whole exchange (DNS, connect, request, response); cheaper than AbortSignal.timeout per request. */
  arm(): void {
    this.#timer = setTimeout(() => {
      this.timedOut = true;
      this.#interrupt(this.timeoutText());
    }, this.r.timeoutMs);
    this.r.signal?.addEventListener('abort', this, { once: true });
    this.r.stopper?.listen(this);
  }

  /** The stop switch (AbortSignal event or Stopper): ends the exchange. */
  handleEvent(): void {
    this.#interrupt(`Request to ${this.r.url} was stopped`);
  }

  disarm(): void {
    clearTimeout(this.#timer);
    this.r.signal?.removeEventListener('abort', this);
    this.r.stopper?.listen(undefined);
  }

  /** Rejects when the timer fires or the send is stopped before the request starts (the host lookup). */
  interrupted(): Promise<never> {
    return new Promise<never>((_, reject) => void (this.#reject = reject));
  }

  #interrupt(why: string): void {
    if (this.#reject) {
      this.#reject(new Error(why));
      this.#reject = undefined;
    }
    if (this.#resolve) {
      this.#req?.destroy();
      this.#finish({ error: why });
      this.#abort?.(new Error(why));
    }
  }

  #finish(o: Omit<SendOutcome, 'durationMs'>): void {
    if (this.#settled) return;
    this.#settled = true;
    this.disarm();
    this.#resolve!(this.outcome(o));
  }

  start(url: URL, isHttps: boolean, agent: http.Agent): Promise<SendOutcome> {
    const r = this.r;
    this.#reject = undefined;
    const headers: Record<string, string> = {};
    if (r.flat) for (let i = 0; i < r.flat.length; i += 2) headers[r.flat[i]!] = r.flat[i + 1]!;
    else for (const [k, v] of r.headers) headers[k] = v;
    headers['Content-Length'] = String(r.body.length);
    return new Promise<SendOutcome>((resolve) => {
      this.#resolve = resolve;
      try {
        this.#req = (isHttps ? https : http).request(
          {
            protocol: url.protocol,
            hostname: url.hostname.replace(/^\[|\]$/g, ''),
            port: url.port || (isHttps ? 443 : 80),
            path: url.pathname + url.search,
            method: r.method,
            headers,
            agent,
            // Connect to the address the guard approved (only consulted for a new connection).
            lookup: ((_host: string, opts: { all?: boolean }, cb: (...a: unknown[]) => void) => {
              const t = this.target;
              if (opts.all) cb(null, [{ address: t.address, family: t.family }]);
              else cb(null, t.address, t.family);
            }) as LookupFunction,
            servername: isHttps && !/^\[|^\d+\.\d+\.\d+\.\d+$/.test(url.hostname) ? url.hostname : undefined,
          },
          (res) => this.#response(res),
        );
      } catch (err) {
        this.#finish({ error: `Error forming HTTP request: ${(err as Error).message}` });
        return;
      }
      this.#req.on('error', (err) => this.#finish({ error: describeError(err) }));
      this.#req.end(r.body);
    });
  }

  /** Sends through an undici pool; this object is the dispatch handler. */
  dispatch(pool: Pool, url: URL, fallback: HttpSender, isHttps: boolean): Promise<SendOutcome> {
    const r = this.r;
    this.#reject = undefined;
    this.#fallback = fallback;
    this.#https = isHttps;
    this.#url = url;
    // Content-Length last, replacing any the headers carried (node:http's case-insensitive setHeader did the same).
    let headers = r.flat;
    if (!headers) {
      headers = [];
      for (const [k, v] of r.headers) if (k.length !== 14 || k.toLowerCase() !== 'content-length') headers.push(k, v);
      headers.push('Content-Length', String(r.body.length));
    }
    return new Promise<SendOutcome>((resolve) => {
      this.#resolve = resolve;
      pool.dispatch({ path: url.pathname + url.search, method: r.method as Dispatcher.HttpMethod, headers, body: r.body }, this as unknown as Dispatcher.DispatchHandlers);
    });
  }

  onConnect(abort: (err?: Error) => void): void {
    this.#abort = abort;
    // Stopped or timed out while it waited for a connection.
    if (this.#settled) abort(new Error('stopped'));
  }

  onHeaders(status: number, raw: Buffer[]): boolean {
    this.#status = status;
    for (let i = 0; i < raw.length; i += 2) {
      const k = raw[i]!;
      if (k.length === 11 && k.toString('latin1').toLowerCase() === 'retry-after') this.#retryAfter = raw[i + 1]!.toString('latin1');
    }
    return true;
  }

  onData(c: Buffer): boolean {
    this.#read += c.length;
    if (this.#kept < EXCERPT) {
      this.#chunks.push(c.subarray(0, EXCERPT - this.#kept));
      this.#kept += Math.min(c.length, EXCERPT - this.#kept);
    }
    if (this.#read > MAX_READ) {
      this.#statusOutcome();
      this.#abort?.(new Error('response too large'));
    }
    return true;
  }

  onComplete(): void {
    this.#statusOutcome();
  }

  onError(err: Error & { code?: string }): void {
    if (this.#settled) return;
    if (this.#status === undefined && this.#abort === undefined && err.code === 'UND_ERR_INVALID_ARG' && this.#fallback) {
      const resolve = this.#resolve!;
      this.#resolve = undefined;
      void this.#fallback.viaNodeHttp(this, this.#url!, this.#https).then(resolve);
      return;
    }
    // A response cut short is still its status, as on node:http.
    if (this.#status !== undefined) this.#statusOutcome();
    else this.#finish({ error: describeError(err) });
  }

  #statusOutcome(): void {
    if (this.#settled) return;
    const body = this.#chunks.length === 1 ? this.#chunks[0]!.toString('utf8') : Buffer.concat(this.#chunks).toString('utf8');
    this.#finish({ status: this.#status, body, retryAfterMs: parseRetryAfter(this.#retryAfter) });
  }

  #response(res: http.IncomingMessage): void {
    this.#res = res;
    res.on('data', (c: Buffer) => this.#data(c));
    res.on('end', () => this.#ended());
    res.on('close', () => this.#ended());
    res.on('error', () => this.#ended());
  }

  #data(c: Buffer): void {
    this.#read += c.length;
    if (this.#kept < EXCERPT) {
      this.#chunks.push(c.subarray(0, EXCERPT - this.#kept));
      this.#kept += Math.min(c.length, EXCERPT - this.#kept);
    }
    if (this.#read > MAX_READ) this.#res!.destroy();
  }

  #ended(): void {
    if (this.#settled) return;
    const res = this.#res!;
    const body = this.#chunks.length === 1 ? this.#chunks[0]!.toString('utf8') : Buffer.concat(this.#chunks).toString('utf8');
    this.#finish({ status: res.statusCode, body, retryAfterMs: parseRetryAfter(res.headers['retry-after']) });
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
