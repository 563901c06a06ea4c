import path from 'node:path';
import { parseArgs } from 'node:util';
import { httpTimeoutsFrom, type HttpTimeouts } from './http-timeouts.ts';

export interface ServiceConfig {
  port: number;
  host: string;
  dataDir: string;
  /** `postgres://…` selects PostgreSQL; unset means SQLite under dataDir. */
  databaseUrl?: string;
  /** PostgreSQL schema for this service's tables (graphile-worker uses `<schema>_worker`). */
  pgSchema: string;
  logLevel: string;
  /** Whether this process runs the queue's workers (separate worker processes set it false on the API). */
  runWorkers: boolean;
  /** Service-specific flags, as given on the command line (`--admin-token x` → adminToken). */
  flags: Record<string, string | boolean | undefined>;
  /** Slow-client limits of the HTTP server (flags or HTTP_*_TIMEOUT_MS); runService applies them. */
  httpTimeouts?: HttpTimeouts;
}

/** `--flag value` → `--flag=value`: parseArgs without declared options would read the value as a positional. */
function joinFlagValues(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = argv[i + 1];
    if (a.startsWith('--') && !a.includes('=') && next !== undefined && !next.startsWith('--')) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

function camel(s: string): string {
  return s.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/**
 * Reads `--port`, `--host`, `--data-dir`, `--database-url` and any other
 * `--flag value` pairs, falling back to env (PORT, HOST, DATA_DIR,
 * DATABASE_URL, LOG_LEVEL) and then to the service defaults.
 */
export function loadConfig(name: string, defaults: { port: number }, argv = process.argv.slice(2), env = process.env): ServiceConfig {
  const { values } = parseArgs({ args: joinFlagValues(argv), strict: false, allowPositionals: true });
  const flags: Record<string, string | boolean | undefined> = {};
  for (const [k, v] of Object.entries(values)) flags[camel(k)] = v as string | boolean | undefined;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const port = Number(str(flags.port) ?? env.PORT ?? defaults.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid port: ${flags.port ?? env.PORT}`);
  return {
    port,
    host: str(flags.host) ?? env.HOST ?? '127.0.0.1',
    dataDir: path.resolve(str(flags.dataDir) ?? env.DATA_DIR ?? 'data'),
    databaseUrl: str(flags.databaseUrl) ?? env.DATABASE_URL ?? undefined,
    pgSchema: str(flags.pgSchema) ?? env.PG_SCHEMA ?? name,
    logLevel: str(flags.logLevel) ?? env.LOG_LEVEL ?? 'info',
    runWorkers: flags.noWorkers !== true && env.RUN_WORKERS !== '0',
    flags,
    httpTimeouts: httpTimeoutsFrom(flags, env),
  };
}
