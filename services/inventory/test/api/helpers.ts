import http from 'node:http';
import { client, startTestServer, type StorageKind, type TestServer } from '@svc/testkit';
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

export async function startApi(storage: StorageKind): Promise<Api> {
  const events: ObjectEvent[][] = [];
  const server = await startTestServer('inventory', storage, (cfg) => buildApp(cfg, { onObjectEvents: (e) => events.push(e) }), {
    flags: { adminToken: ADMIN_TOKEN },
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
