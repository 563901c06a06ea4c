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
