import type { FastifyInstance } from 'fastify';
import type { ServiceConfig } from '@svc/kernel';
import { client, startTestServer, type StorageKind, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';

export type Http = ReturnType<typeof client>;

/** Starts the memory service; `extra` carries memory settings (embedding, llm) beyond ServiceConfig. */
export async function startMemory(kind: StorageKind, extra: Record<string, unknown> = {}): Promise<{ server: TestServer; http: Http }> {
  const server = await startTestServer('memory', kind, buildApp as (cfg: ServiceConfig) => Promise<FastifyInstance>, extra as Partial<ServiceConfig>);
  return { server, http: client(server.url) };
}

let counter = 0;

/** A fresh app and user; returns their ids and the S / C path prefixes. */
export async function newUser(http: Http) {
  const n = `${Date.now().toString(36)}-${++counter}-${Math.random().toString(36).slice(2, 7)}`;
  const app = await http.post('/apps', { name: `app-${n}` });
  if (app.status !== 200) throw new Error(`create app: ${app.status} ${app.text}`);
  const user = await http.post(`/apps/${app.body.id}/users`, { name: `user-${n}` });
  if (user.status !== 200) throw new Error(`create user: ${user.status} ${user.text}`);
  const U = `/apps/${app.body.id}/users/${user.body.id}`;
  return { appId: app.body.id as string, userId: user.body.id as string, U, S: `${U}/sessions`, C: `${U}/collections` };
}

export async function newCollection(http: Http, C: string, name = 'notes') {
  const r = await http.post(C, { name });
  if (r.status !== 200) throw new Error(`create collection: ${r.status} ${r.text}`);
  return { id: r.body.id as string, path: `${C}/${r.body.id}` };
}

export async function addDocument(http: Http, collectionPath: string, content: string, metadata: Record<string, unknown> = {}) {
  const r = await http.post(`${collectionPath}/documents`, { content, metadata });
  if (r.status !== 200) throw new Error(`create document: ${r.status} ${r.text}`);
  return r.body as { id: string; content: string };
}

export const q = (s: string) => encodeURIComponent(s);

export async function waitFor<T>(fn: () => Promise<T | undefined | false>, ms = 15_000, step = 50): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, step));
  }
}
