import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { cleanupConfig, client, startTestServer, testConfig, type StorageKind, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import type { ObjectEvent } from '../../src/changes/types.ts';

export const ADMIN_TOKEN = '0123456789abcdef0123456789abcdef01234567';

export interface Api {
  server: TestServer;
  http: ReturnType<typeof client>;
  anon: ReturnType<typeof client>;
  /** Coalesced events handed to the event pipeline, per write request. */
  events: ObjectEvent[][];
  as(token: string): ReturnType<typeof client>;
  close(): Promise<void>;
}

/** Webhooks in tests may only reach this machine, whatever a test (or the fuzzer) saves as a payload URL. */
export const LOOPBACK_ONLY = { webhookAllow: '127.0.0.0/8,::1/128' };

export async function startApi(storage: StorageKind, flags: Record<string, string> = {}): Promise<Api> {
  const events: ObjectEvent[][] = [];
  const server = await startTestServer('inventory', storage, (cfg) => buildApp(cfg, { onObjectEvents: (e) => events.push(e) }), {
    flags: { adminToken: ADMIN_TOKEN, ...LOOPBACK_ONLY, ...flags },
  });
  return {
    server,
    events,
    http: client(server.url, { authorization: `Token ${ADMIN_TOKEN}` }),
    anon: client(server.url),
    as: (token) => client(server.url, { authorization: `Token ${token}` }),
    close: () => server.close(),
  };
}

/** A site, manufacturer, device type and role: what a device needs. */
export async function seedBasics(api: Api, suffix = '') {
  const h = api.http;
  const site = (await h.post('/api/dcim/sites/', { name: `Site${suffix}`, slug: `site${suffix}` })).body;
  const mfr = (await h.post('/api/dcim/manufacturers/', { name: `Acme${suffix}`, slug: `acme${suffix}` })).body;
  const type = (await h.post('/api/dcim/device-types/', { manufacturer: mfr.id, model: `X${suffix}`, slug: `x${suffix}` })).body;
  const role = (await h.post('/api/dcim/device-roles/', { name: `Router${suffix}`, slug: `router${suffix}` })).body;
  return { site, mfr, type, role };
}

export interface RawResult {
  status: number;
  body: any;
  text: string;
  headers: http.IncomingHttpHeaders;
}

/** A request with the body as exact bytes (fetch cannot send invalid UTF-8 or an absent body with a JSON content type). */
export function rawRequest(base: string, method: string, path: string, body?: Buffer | string, headers: Record<string, string> = {}): Promise<RawResult> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: u.port, method, path, headers: { authorization: `Token ${ADMIN_TOKEN}`, ...(body !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}), ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: any;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = text;
          }
          resolve({ status: res.statusCode!, body: parsed, text, headers: res.headers });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export interface ApiProcess {
  url: string;
  http: ReturnType<typeof client>;
  child: ChildProcess;
}

/**
 * The node arguments that start a service entry as `npm run inventory` (`inventory:worker-main`: `npm run
 * inventory:worker`) does: scripts/run-service.mjs, which runs an esbuild bundle of the sources (built when older than
 * any source file). Plain node loads one module: a start costs about 2.5 s of CPU, against 5.5 s through tsx's loader.
 */
export function serviceArgs(entry: 'inventory' | 'inventory:worker-main'): string[] {
  return [path.resolve(import.meta.dirname, '../../../../scripts/run-service.mjs'), entry];
}

/**
 * `n` API processes (src/main.ts, as `npm run inventory` starts them: serviceArgs) on one
 * database: one SQLite file or one PostgreSQL schema. The first migrates
 * before the others start. `close()` stops them and removes the database.
 */
export async function startApiProcesses(storage: StorageKind, n: number, opts: { workers?: boolean; env?: Record<string, string> } = {}) {
  const cfg = testConfig('invproc', storage);
  const serviceDir = path.resolve(import.meta.dirname, '../..');
  const procs: ApiProcess[] = [];
  const startOne = () =>
    new Promise<ApiProcess>((resolve, reject) => {
      const args = [...serviceArgs('inventory'), '--port', '0', '--host', '127.0.0.1', '--data-dir', cfg.dataDir, '--admin-token', ADMIN_TOKEN, '--webhook-allow', LOOPBACK_ONLY.webhookAllow];
      if (cfg.databaseUrl) args.push('--database-url', cfg.databaseUrl, '--pg-schema', cfg.pgSchema);
      if (!opts.workers) args.push('--no-workers');
      const child = spawn(process.execPath, args, { cwd: serviceDir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'error', ...opts.env } });
      let out = '';
      const onData = (c: Buffer) => {
        out += c.toString();
        const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
        if (m) {
          child.stdout!.off('data', onData);
          child.stdout!.resume();
          resolve({ url: m[1]!, child, http: client(m[1]!, { authorization: `Token ${ADMIN_TOKEN}` }) });
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
      child.once('exit', (code) => reject(new Error(`API process exited (${code}) before listening: ${out}`)));
    });
  try {
    for (let i = 0; i < n; i++) procs.push(await startOne());
  } catch (err) {
    for (const p of procs) p.child.kill('SIGKILL');
    await cleanupConfig(cfg);
    throw err;
  }
  return {
    procs,
    cfg,
    async close() {
      await Promise.all(
        procs.map(
          (p) =>
            new Promise<void>((resolve) => {
              if (p.child.exitCode !== null || p.child.signalCode !== null) return resolve();
              p.child.once('exit', () => resolve());
              p.child.kill('SIGTERM');
            }),
        ),
      );
      await cleanupConfig(cfg);
    },
  };
}
