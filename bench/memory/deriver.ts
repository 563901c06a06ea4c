/**
 * Deriver throughput: jobs/s of the fact derivation queue (rule-based
 * extractor, no LLM) over many users, with per-user ordering kept (each
 * user's facts must come out in the order of their messages), on embedded
 * SQLite or (with DATABASE_URL) PostgreSQL + graphile-worker. Messages are
 * queued with workers off, then one process with workers on drains them.
 *
 *   npx tsx bench/memory/deriver.ts [--users 50] [--messages 20]
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/memory/deriver.ts
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { ServiceConfig } from '@svc/kernel';
import { dropPgSchema } from '@svc/storage';
import { buildApp } from '../../services/memory/src/app.ts';

const { values } = parseArgs({ options: { users: { type: 'string', default: '50' }, messages: { type: 'string', default: '20' } } });
const USERS = Number(values.users);
const PER_USER = Number(values.messages);
const DATABASE_URL = process.env.DATABASE_URL;
process.env.LOG_REQUESTS = '0';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memory-bench-deriver-'));
const pgSchema = `bench_deriver_${process.pid}`;
const cfg = (runWorkers: boolean): ServiceConfig => ({ port: 0, host: '127.0.0.1', dataDir, databaseUrl: DATABASE_URL, pgSchema, logLevel: 'silent', runWorkers, flags: {} });

async function json(base: string, method: string, p: string, body?: unknown): Promise<any> {
  const r = await fetch(base + p, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined });
  if (r.status !== 200) throw new Error(`${method} ${p}: ${r.status} ${await r.text()}`);
  return r.json();
}

const CITIES = ['Lisbon', 'Oslo', 'Quito', 'Hanoi', 'Accra', 'Perth', 'Turin', 'Cork', 'Kyoto', 'Lima'];
try {
  // Queue the work with no worker running.
  let app = await buildApp(cfg(false));
  let base = await app.listen({ port: 0, host: '127.0.0.1' });
  const a = await json(base, 'POST', '/apps', { name: 'bench' });
  const users: Array<{ id: string; U: string }> = [];
  for (let u = 0; u < USERS; u++) {
    const user = await json(base, 'POST', `/apps/${a.id}/users`, { name: `user${u}` });
    const U = `/apps/${a.id}/users/${user.id}`;
    const s = await json(base, 'POST', `${U}/sessions`, { location_id: 'bench' });
    // Distinct facts per message ("The user has visited <city> <n> times"), in order.
    const messages = Array.from({ length: PER_USER }, (_, m) => ({ content: `I have visited ${CITIES[m % CITIES.length]} ${m + 1} times`, is_user: true }));
    await json(base, 'POST', `${U}/sessions/${s.id}/messages/batch`, { messages });
    users.push({ id: user.id, U });
  }
  const queued = (await json(base, 'GET', '/health')).queue_depth as number;
  await app.close();

  // Drain with one worker process (this one).
  const t0 = performance.now();
  app = await buildApp(cfg(true));
  base = await app.listen({ port: 0, host: '127.0.0.1' });
  for (;;) {
    const depth = (await json(base, 'GET', '/health')).queue_depth as number;
    if (depth === 0) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const seconds = (performance.now() - t0) / 1000;

  // Per-user order: facts (documents of the user's "honcho" collection, in insertion order) follow the messages.
  let inOrder = 0;
  let facts = 0;
  for (const u of users) {
    const honcho = await json(base, 'GET', `${u.U}/collections/honcho`);
    const docs = await json(base, 'GET', `${u.U}/collections/${honcho.id}/documents?size=100`);
    const ns = (docs.items as Array<{ content: string }>).map((d) => Number(/(\d+) times/.exec(d.content)?.[1] ?? NaN));
    facts += ns.length;
    if (ns.every((n, i) => i === 0 || n > ns[i - 1]!)) inOrder++;
  }
  await app.close();
  console.log(`deriver bench: ${DATABASE_URL ? 'PostgreSQL + graphile-worker' : 'embedded SQLite queue'}, ${USERS} users × ${PER_USER} user messages, load ${os.loadavg()[0]!.toFixed(1)}`);
  console.log(`jobs queued ${queued}; drained in ${seconds.toFixed(2)} s (including worker start) → ${(queued / seconds).toFixed(1)} jobs/s`);
  console.log(`facts stored ${facts}; users whose facts follow their message order: ${inOrder}/${USERS}`);
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
  if (DATABASE_URL) {
    await dropPgSchema(DATABASE_URL, pgSchema);
    await dropPgSchema(DATABASE_URL, `${pgSchema}_worker`);
  }
}
