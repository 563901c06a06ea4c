import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { client } from '@svc/testkit';
import { buildApp } from '../src/app.ts';
import { redisChannel, RedisRelay } from '../src/ws/redis-relay.ts';
import { createRelay } from '../src/ws/relay-factory.ts';
import type { RelayFrame } from '../src/ws/relay.ts';
import { startWorkflow, textPrompt, waitJob, WsClient } from './helpers.ts';

const REDIS_URL = 'redis://127.0.0.1:6379';
const quiet = { warn() {} };

/** Whether the machine's Redis answers (the tests skip cleanly when it does not). */
async function redisUp(): Promise<boolean> {
  const r = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 2000, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

const up = await redisUp();
const skip = up ? false : `Redis is not reachable at ${REDIS_URL}`;

/** A subscriber on a channel that records every message (to prove the frames went through Redis). */
async function tap(channel: string): Promise<{ messages: string[]; close(): void }> {
  const r = new Redis(REDIS_URL);
  const messages: string[] = [];
  r.on('message', (_c: string, m: string) => messages.push(m));
  await r.subscribe(channel);
  return { messages, close: () => r.disconnect() };
}

test('RedisRelay: batches per tick in order, skips its own messages, passes frames (extra fields too) through unchanged, large ones as well', { skip }, async () => {
  const channel = `wf:ws:test:${randomUUID()}`;
  const a = new RedisRelay(REDIS_URL, channel, quiet);
  const b = new RedisRelay(REDIS_URL, channel, quiet);
  const gotA: RelayFrame[][] = [];
  const gotB: RelayFrame[][] = [];
  let wake: () => void = () => undefined;
  await a.start((f) => (gotA.push(f), wake()));
  await b.start((f) => (gotB.push(f), wake()));
  const seen = await tap(channel);
  try {
    const big = 'x'.repeat(3 * 1024 * 1024);
    const sent: RelayFrame[] = [];
    for (let turn = 0; turn < 20; turn++) {
      for (let i = 0; i < 50; i++) {
        const f: RelayFrame & Record<string, unknown> = { to: `c${i % 3}`, text: `${turn}:${i}` };
        if (i === 7) Object.assign(f, { ctl: { kind: 'lease', n: turn }, owner: 'w1', key: 'k' });
        if (turn === 10 && i === 0) f.text = big;
        if (i === 9) f.bin = Buffer.from([turn, i, 255]).toString('base64');
        a.publish(f);
        sent.push(f);
      }
      await new Promise((r) => setImmediate(r));
    }
    const flat = () => gotB.flat();
    while (flat().length < sent.length) await new Promise<void>((r) => (wake = r));
    assert.deepEqual(flat(), sent, 'every frame, in order, unchanged');
    assert.equal(gotB.length, 20, 'one message per turn of the event loop');
    assert.equal(gotA.length, 0, 'a process ignores its own messages');
    // The other direction reaches A, and B skips its own.
    b.publish({ to: null, text: 'back' });
    while (gotA.length === 0) await new Promise<void>((r) => (wake = r));
    assert.deepEqual(gotA, [[{ to: null, text: 'back' }]]);
    assert.equal(gotB.length, 20);
    while (seen.messages.length < 21) await new Promise((r) => setImmediate(r));
    assert.equal(seen.messages.length, 21, 'one Redis message per batch');
  } finally {
    seen.close();
    await a.close();
    await b.close();
  }
});

test('RedisRelay: close sends what was published before it; publish after close is dropped', { skip }, async () => {
  const channel = `wf:ws:test:${randomUUID()}`;
  const a = new RedisRelay(REDIS_URL, channel, quiet);
  await a.start(() => undefined);
  const seen = await tap(channel);
  try {
    a.publish({ to: 'c', text: 'last' });
    await a.close();
    a.publish({ to: 'c', text: 'dropped' });
    // A PING on the tap's own connection round-trips after any message Redis already pushed to it.
    const probe = new Redis(REDIS_URL);
    await probe.publish(channel, 'probe');
    while (!seen.messages.includes('probe')) await new Promise((r) => setImmediate(r));
    probe.disconnect();
    assert.equal(seen.messages.length, 2);
    assert.ok(seen.messages[0]!.includes('"last"'));
  } finally {
    seen.close();
  }
});

test('relay factory: Redis with REDIS_URL or --redis-url on PostgreSQL, LISTEN/NOTIFY without, none on SQLite; a bad URL is refused', () => {
  const pg = { dialect: { kind: 'postgres' }, databaseUrl: 'postgres://u:secret@127.0.0.1:5432/test', pgSchema: 's1' } as any;
  const lite = { dialect: { kind: 'sqlite' } } as any;
  assert.ok(createRelay(pg, {}, quiet, { REDIS_URL: REDIS_URL }) instanceof RedisRelay);
  assert.ok(createRelay(pg, { redisUrl: REDIS_URL }, quiet, {}) instanceof RedisRelay);
  assert.equal(createRelay(pg, {}, quiet, {})?.constructor.name, 'PgRelay');
  assert.equal(createRelay(lite, { redisUrl: REDIS_URL }, quiet, {}), undefined);
  assert.equal(createRelay(pg, { wsRelay: false }, quiet, { REDIS_URL }), undefined);
  assert.throws(() => createRelay(pg, {}, quiet, { REDIS_URL: 'http://u:secret@127.0.0.1' }), (e: Error) => /REDIS_URL/.test(e.message) && !e.message.includes('secret'));
  // One channel per database and schema; the password is not part of it.
  assert.equal(redisChannel('postgres://u:a@127.0.0.1:5432/test', 's1'), redisChannel('postgres://u:b@127.0.0.1/test', 's1'));
  assert.notEqual(redisChannel('postgres://127.0.0.1/test', 's1'), redisChannel('postgres://127.0.0.1/test', 's2'));
  assert.notEqual(redisChannel('postgres://127.0.0.1/test', 's1'), redisChannel('postgres://127.0.0.1/other', 's1'));
});

test('PostgreSQL + Redis, two API processes: prompts queued on one reach the socket held by the other through Redis, in order, large frames too', { skip }, async () => {
  const a = await startWorkflow('postgres', { redisUrl: REDIS_URL });
  // B holds the socket and runs no prompts: every prompt runs in A, in queue order (two running processes would each
  // take the next prompt, and their execution threads start at different times).
  const bApp = await buildApp({ ...a.cfg, runWorkers: false });
  const seen = await tap(redisChannel(a.cfg.databaseUrl!, a.cfg.pgSchema));
  try {
    const bUrl = await bApp.listen({ port: 0, host: '127.0.0.1' });
    const ws = new WsClient(bUrl, 'redis-relay-client');
    await ws.opened;
    const ids: string[] = [];
    const values = new Map<string, string>();
    for (let i = 0; i < 6; i++) {
      // Every other prompt's output is far beyond a NOTIFY payload.
      const value = `redis-${i}-${Math.random()}-` + (i % 2 ? 'y'.repeat(200_000) : '');
      const r = await a.http.post('/prompt', { prompt: textPrompt(value), client_id: 'redis-relay-client' });
      assert.equal(r.status, 200, r.text);
      ids.push(r.body.prompt_id);
      values.set(r.body.prompt_id, value);
    }
    for (const id of ids) await ws.promptDone(id);
    for (const id of ids) {
      const mine = ws.messages.filter((x) => x.data?.prompt_id === id).map((x) => x.type);
      assert.equal(mine.filter((t) => t === 'execution_start').length, 1, `${id}: ${mine}`);
      assert.equal(mine.filter((t) => t === 'execution_success').length, 1, `${id}: ${mine}`);
      assert.ok(mine.indexOf('execution_start') < mine.indexOf('executed'), `${id}: ${mine}`);
      assert.ok(mine.indexOf('executed') < mine.indexOf('execution_success'), `${id}: ${mine}`);
      assert.equal(mine.at(-1), 'executing', 'executing with node null ends each prompt');
      const executed = ws.messages.find((x) => x.type === 'executed' && x.data.prompt_id === id)!;
      assert.ok(JSON.stringify(executed.data.output).includes(values.get(id)!), 'the output arrives whole');
    }
    // Prompts ran in the order they were queued, and their frames arrived in that order.
    const starts = ws.messages.filter((x) => x.type === 'execution_start').map((x) => x.data.prompt_id);
    assert.deepEqual(starts, ids);
    await ws.until((m) => m.find((x) => x.type === 'status' && x.data.status.exec_info.queue_remaining === 0));
    assert.ok(seen.messages.some((m) => m.includes(ids[0]!)), 'the frames went through Redis');

    // A client that connects to B only after its prompt was queued on A still sees it finish (frames parked on B).
    const late = await a.http.post('/prompt', { prompt: textPrompt(`redis-late-${Math.random()}`), client_id: 'redis-late' });
    await waitJob(client(bUrl), late.body.prompt_id);
    const ws2 = new WsClient(bUrl, 'redis-late');
    await ws2.promptDone(late.body.prompt_id);
    ws.close();
    ws2.close();
  } finally {
    seen.close();
    await bApp.close();
    await a.close();
  }
});

test('RedisRelay: a process without client sockets (a worker) hears cancels but never the socket frames; API processes hear both', { skip }, async () => {
  const channel = `wf:ws:test:${randomUUID()}`;
  const api = new RedisRelay(REDIS_URL, channel, quiet);
  const api2 = new RedisRelay(REDIS_URL, channel, quiet);
  const worker = new RedisRelay(REDIS_URL, channel, quiet, false);
  const got = { api: [] as RelayFrame[], api2: [] as RelayFrame[], worker: [] as RelayFrame[] };
  let wake = () => {};
  try {
    await api.start((f) => (got.api.push(...f), wake()));
    await api2.start((f) => (got.api2.push(...f), wake()));
    await worker.start((f) => (got.worker.push(...f), wake()));
    api.publish({ to: 'c1', text: 'frame-1' });
    api.publish({ to: null, cancel: 'p-1' });
    while (got.api2.length < 2 || got.worker.length < 1) await new Promise<void>((r) => (wake = r));
    worker.publish({ to: null, cancel: 'p-2' });
    while (got.api.length < 1 || got.api2.length < 3) await new Promise<void>((r) => (wake = r));
    api.publish({ to: 'c1', text: 'frame-2' });
    api.publish({ to: null, cancel: 'p-3' });
    while (got.worker.length < 2 || got.api2.length < 5) await new Promise<void>((r) => (wake = r));
    assert.deepEqual(got.worker, [{ to: null, cancel: 'p-1' }, { to: null, cancel: 'p-3' }]);
    assert.deepEqual(got.api2.filter((f) => f.text), [{ to: 'c1', text: 'frame-1' }, { to: 'c1', text: 'frame-2' }]);
    assert.deepEqual(got.api2.filter((f) => f.cancel).map((f) => f.cancel), ['p-1', 'p-2', 'p-3']);
    assert.deepEqual(got.api, [{ to: null, cancel: 'p-2' }]);
  } finally {
    await Promise.all([api.close(), api2.close(), worker.close()]);
  }
});
