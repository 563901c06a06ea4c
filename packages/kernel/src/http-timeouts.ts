import type http from 'node:http';

/**
 * Time limits for slow or idle clients, so a socket that trickles its
 * headers or body (or just sits open) cannot hold a connection for ever.
 * Each comes from `--flag` (camelCase in ServiceConfig.flags) or the env.
 */
export interface HttpTimeouts {
  /** The whole header block must arrive within this (HTTP_HEADERS_TIMEOUT_MS, --headers-timeout-ms). */
  headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this (HTTP_REQUEST_TIMEOUT_MS, --request-timeout-ms). */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this (HTTP_KEEP_ALIVE_TIMEOUT_MS, --keep-alive-timeout-ms). */
  keepAliveTimeoutMs: number;
  /** A socket with no traffic at all for this long is closed; 0 = off (HTTP_IDLE_TIMEOUT_MS, --idle-timeout-ms). */
  idleTimeoutMs: number;
}

export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = { headersTimeoutMs: 15_000, requestTimeoutMs: 60_000, keepAliveTimeoutMs: 10_000, idleTimeoutMs: 0 };

const SOURCES: Array<[keyof HttpTimeouts, string, string]> = [
  ['headersTimeoutMs', 'headersTimeoutMs', 'HTTP_HEADERS_TIMEOUT_MS'],
  ['requestTimeoutMs', 'requestTimeoutMs', 'HTTP_REQUEST_TIMEOUT_MS'],
  ['keepAliveTimeoutMs', 'keepAliveTimeoutMs', 'HTTP_KEEP_ALIVE_TIMEOUT_MS'],
  ['idleTimeoutMs', 'idleTimeoutMs', 'HTTP_IDLE_TIMEOUT_MS'],
];

/** Reads the time-outs from flags (first) and env; refuses values that are not whole milliseconds. */
export function httpTimeoutsFrom(flags: Record<string, string | boolean | undefined> = {}, env: NodeJS.ProcessEnv = process.env): HttpTimeouts {
  const out = { ...DEFAULT_HTTP_TIMEOUTS };
  for (const [key, flag, envName] of SOURCES) {
    const raw = typeof flags[flag] === 'string' ? (flags[flag] as string) : env[envName];
    if (raw === undefined || raw === '') continue;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0 || n > 86_400_000) throw new Error(`invalid ${envName} / --${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: ${raw} (milliseconds)`);
    out[key] = n;
  }
  // Node refuses a headers time-out longer than the request time-out.
  if (out.requestTimeoutMs > 0 && out.headersTimeoutMs > out.requestTimeoutMs) out.headersTimeoutMs = out.requestTimeoutMs;
  return out;
}

/**
 * How often Node looks for expired headers/requests (its default, 30 s, would
 * let a 1 s limit run for 31 s): a tenth of the shortest limit, 100 ms..5 s.
 */
export function checkingIntervalMs(t: HttpTimeouts): number {
  const shortest = Math.min(...[t.headersTimeoutMs, t.requestTimeoutMs].filter((x) => x > 0));
  return Number.isFinite(shortest) ? Math.min(5_000, Math.max(100, Math.floor(shortest / 10))) : 30_000;
}

/** Applies the time-outs to a Node HTTP server; must run before `listen` (the checking interval starts there). */
export function applyHttpTimeouts(server: http.Server, t: HttpTimeouts): void {
  server.headersTimeout = t.headersTimeoutMs;
  server.requestTimeout = t.requestTimeoutMs;
  server.keepAliveTimeout = t.keepAliveTimeoutMs;
  server.setTimeout(t.idleTimeoutMs);
  (server as { connectionsCheckingInterval?: number }).connectionsCheckingInterval = checkingIntervalMs(t);
}
