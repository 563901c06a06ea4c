import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceConfig } from '@svc/kernel';
import { client, startTestServer, type StorageKind, type TestServer } from '@svc/testkit';
import { buildApp } from '../src/app.ts';

export type Http = ReturnType<typeof client>;

/** Starts the memory service for the enclosing describe block and closes it afterwards. */
export function useServer(storage: StorageKind, overrides: Partial<ServiceConfig> & Record<string, unknown> = {}) {
  const h = {} as { server: TestServer; http: Http; url: string };
  before(async () => {
    h.server = await startTestServer('memory', storage, buildApp, overrides);
    h.url = h.server.url;
    h.http = client(h.server.url);
  });
  after(async () => {
    await h.server?.close();
  });
  return h;
}

let counter = 0;
export const uniq = (p: string) => `${p}-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 7)}`;

export async function ok<T = any>(p: Promise<{ status: number; body: any; text: string }>): Promise<T> {
  const r = await p;
  assert.equal(r.status, 200, `expected 200, got ${r.status}: ${r.text}`);
  return r.body as T;
}

/** An app, a user of it and a session of that user. */
export async function fixture(http: Http) {
  const app = await ok(http.post('/apps', { name: uniq('app') }));
  const user = await ok(http.post(`/apps/${app.id}/users`, { name: uniq('user') }));
  const session = await ok(http.post(`/apps/${app.id}/users/${user.id}/sessions`, { location_id: 'default' }));
  const U = `/apps/${app.id}/users/${user.id}`;
  return { app, user, session, U, S: `${U}/sessions`, C: `${U}/collections` };
}

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const MISSING = '00000000-0000-4000-8000-000000000000';
