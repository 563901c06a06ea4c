import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { client, startTestServer, type StorageKind, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import type { ObjectEvent } from '../../src/changes/types.ts';
import type { InventoryDeps } from '../../src/deps.ts';
import { enqueueObjectEvents } from '../../src/events/index.ts';

export const ADMIN_TOKEN = '0123456789abcdef0123456789abcdef01234567';

export interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
  at: number;
}

type Responder = (r: Received, res: http.ServerResponse) => void;

/** A local webhook receiver whose answer each test can change. */
export async function startReceiver() {
  const received: Received[] = [];
  const waiters: Array<() => void> = [];
  let respond: Responder = (_r, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.concat(chunks), at: Date.now() };
      received.push(r);
      for (const w of waiters.splice(0)) w();
      respond(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    received,
    setResponder(fn: Responder) {
      respond = fn;
    },
    async waitFor(n: number, ms = 10_000): Promise<void> {
      const end = Date.now() + deadline(ms);
      while (received.length < n) {
        if (Date.now() > end) throw new Error(`receiver got ${received.length} of ${n} requests`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 50);
        });
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Fast retry schedule for tests (ms). */
export const FAST_RETRIES = { webhookRetryBaseMs: '100', webhookRetryFactor: '2', webhookRetryJitter: '0' };

export async function startInventory(kind: StorageKind, flags: Record<string, string> = {}) {
  // Loopback only unless a test sets its own guard lists: no test may send a webhook off this machine.
  const guard = flags.webhookAllow || flags.webhookDeny ? {} : { webhookAllow: '127.0.0.0/8,::1/128' };
  const server: TestServer = await startTestServer('invev', kind, (cfg) => buildApp(cfg), { flags: { adminToken: ADMIN_TOKEN, ...guard, ...flags } });
  const api = client(server.url, { authorization: `Token ${ADMIN_TOKEN}` });
  const deps = (server.app as unknown as { inventoryDeps: InventoryDeps }).inventoryDeps;
  return { server, api, deps };
}

let seq = 0;
export function deviceEvent(over: Partial<ObjectEvent> = {}): ObjectEvent {
  const id = over.objectId ?? ++seq;
  return {
    event: 'created',
    objectType: 'dcim.device',
    model: 'device',
    objectId: id,
    data: { id, url: `/api/dcim/devices/${id}/`, display: `dev${id}`, name: `dev${id}`, status: { value: 'active', label: 'Active' }, tags: [] },
    snapshots: { prechange: null, postchange: { name: `dev${id}`, status: 'active', tags: [] } },
    username: 'admin',
    requestId: '9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d',
    timestamp: '2026-11-21T08:00:00.123456+00:00',
    ...over,
  };
}

/** Emits events as a committed write request would. */
export async function emit(deps: InventoryDeps, events: ObjectEvent[]): Promise<void> {
  await deps.storage.db.transaction().execute((trx) => enqueueObjectEvents(trx, deps, events));
  deps.queue.wake();
}

/**
 * How long a wait may take before the test gives up. Waits only detect a failure (a correct service ends
 * them by itself), so on a loaded CI machine they get at least a minute: a short deadline would turn a slow
 * machine into a failure, and how fast things happen is measured by the benches, not asserted here.
 */
function deadline(ms: number): number {
  return Math.max(ms, 60_000);
}

export async function until<T>(fn: () => Promise<T | undefined | false>, ms = 10_000, what = 'condition'): Promise<T> {
  const end = Date.now() + deadline(ms);
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 30));
  }
}
