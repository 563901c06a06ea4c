import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import type http from 'node:http';
import path from 'node:path';
import { sql } from 'kysely';
import { client, forEachStorage, startTestServer, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import type { InventoryDeps } from '../../src/deps.ts';
import { serviceArgs } from '../api/helpers.ts';
import { ADMIN_TOKEN, deviceEvent, emit, startReceiver, until } from './helpers.ts';

const serviceDir = path.resolve(import.meta.dirname, '../..');
const LEASE_MS = 1500;

/** A delivery worker process (`npm run inventory:worker`, as that starts it: serviceArgs) on the test server's database. */
function startWorker(server: TestServer, leaseMs = LEASE_MS): Promise<ChildProcess> {
  const cfg = server.cfg;
  const args = [...serviceArgs('inventory:worker-main'), '--data-dir', cfg.dataDir, '--webhook-allow', '127.0.0.0/8,::1/128'];
  if (cfg.databaseUrl) args.push('--database-url', cfg.databaseUrl, '--pg-schema', cfg.pgSchema);
  const child = spawn(process.execPath, args, { cwd: serviceDir, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, LOG_LEVEL: 'error', INVENTORY_WEBHOOK_LEASE_MS: String(leaseMs), INVENTORY_WEBHOOK_RETRY_BASE_MS: '200', INVENTORY_WEBHOOK_RETRY_JITTER: '0' } });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('worker started')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`worker exited (${code}): ${out}`)));
  });
}

const stopped = (c: ChildProcess) => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => c.once('exit', () => r())));

/**
 * Claims carry a short lease renewed by a heartbeat while the claimer sends:
 * a claimer that dies or freezes loses its deliveries to another worker within
 * seconds, while a send that outlasts the lease is not sent twice.
 */
forEachStorage('delivery leases and heartbeats across worker processes', (kind) => {
  let server: TestServer;
  let deps: InventoryDeps;
  let api: ReturnType<typeof client>;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  const workers: ChildProcess[] = [];
  const held: http.ServerResponse[] = [];
  let hold = false;

  before(async () => {
    rx = await startReceiver();
    rx.setResponder((_r, res) => (hold ? held.push(res) : res.writeHead(200).end('ok')));
    // The API without workers: deliveries are made only by the worker processes.
    server = await startTestServer('invlease', kind, (cfg) => buildApp(cfg), { runWorkers: false, flags: { adminToken: ADMIN_TOKEN, webhookAllow: '127.0.0.0/8,::1/128' } });
    deps = (server.app as unknown as { inventoryDeps: InventoryDeps }).inventoryDeps;
    api = client(server.url, { authorization: `Token ${ADMIN_TOKEN}` });
  });
  after(async () => {
    for (const w of workers) {
      w.kill('SIGKILL');
      await stopped(w);
    }
    for (const res of held.splice(0)) res.destroy();
    await server.close();
    await rx.close();
  });

  // The webhook's request time-out is an hour: a claim freed before that was freed by its lease, not by the time-out.
  async function hookAndRule(name: string, timeout = 3600) {
    // A retry or two (200 ms apart) absorbs a keep-alive socket the receiver closed just as it was reused.
    const w = await api.post('/api/extras/webhooks/', { name, payload_url: `${rx.url}/${name}`, timeout, max_retries: 2 });
    assert.equal(w.status, 201, w.text);
    await api.post('/api/extras/event-rules/', { name, object_types: ['dcim.device'], event_types: ['object_created'], action_object_type: 'extras.webhook', action_object_id: w.body.id });
    return w.body.id as number;
  }
  const claimers = async () => (await deps.storage.db.selectFrom('events_delivery').select('claimed_by').distinct().where('status', '=', 'sent').execute()).map((r) => String(r.claimed_by));
  const pidOf = (claimer: string) => Number(claimer.split(':')[1]);
  const successful = async (hook: number) => (await api.get(`/api/core/background-tasks/?webhook=${hook}&status=successful&limit=1`)).body.count as number;
  /** The workers that recorded a successful attempt of the hook's deliveries. */
  const successfulWorkers = async (hook: number) =>
    (
      await deps.storage.db
        .selectFrom('events_delivery_attempt as a')
        .innerJoin('events_delivery as d', 'd.id', 'a.delivery_id')
        .select('a.worker')
        .distinct()
        .where('d.webhook_id', '=', hook)
        .where('a.success', '=', deps.storage.dialect.bool(true) as any)
        .execute()
    ).map((r) => String(r.worker));

  for (const [how, signal] of [
    ['killed', 'SIGKILL'],
    ['frozen (alive but silent, as a partitioned host)', 'SIGSTOP'],
  ] as const) {
    // SQLite is one host's file: a frozen process there could hold the write lock, and a dead one is found by its pid.
    it(`another worker re-sends the deliveries of a claimer that was ${how} (freed by the lease, not the hour-long request time-out)`, { timeout: 90_000, skip: signal === 'SIGSTOP' && kind === 'sqlite' && 'PostgreSQL only' }, async () => {
      while (workers.filter((w) => w.exitCode === null && w.signalCode === null).length < 2) workers.push(await startWorker(server));
      const hook = await hookAndRule(`lease-${signal}`);
      hold = true;
      const N = 6;
      await emit(deps, Array.from({ length: N }, () => deviceEvent()));
      const [claimer] = await until(async () => {
        const c = await claimers();
        return c.length > 0 && rx.received.some((r) => r.url === `/lease-${signal}`) && c;
      }, 30_000, 'a worker to claim and send');
      const victim = workers.find((w) => w.pid === pidOf(claimer!))!;
      assert.ok(victim, `claimer ${claimer} is one of the worker processes`);
      process.kill(victim.pid!, signal);
      hold = false;
      for (const res of held.splice(0)) res.writeHead(200).end('ok');
      await until(async () => (await successful(hook)) === N, 30_000, 'all deliveries re-sent and recorded by the other worker').catch(async (err) => {
        const rows = await deps.storage.db.selectFrom('events_delivery').select(['id', 'status', 'claimed_by', 'attempts', 'last_error']).where('webhook_id', '=', hook).execute();
        throw new Error(`${(err as Error).message}; now ${Date.now()} victim ${claimer}; deliveries ${JSON.stringify(rows)}`);
      });
      // Before leases had heartbeats a claim lasted the request time-out plus 30 s: with the hour-long time-out
      // set here, that the other worker re-sent them at all (within the test's time-out) shows the lease freed
      // them. How many seconds it takes is reported by scripts/crash-test.ts, not asserted on this loaded machine.
      assert.ok(!(await successfulWorkers(hook)).includes(claimer!), 'the re-sends were recorded by the surviving worker');
      victim.kill('SIGKILL');
      await stopped(victim);
    });
  }

  // A stop between two statements of a transaction is rare by chance (the test above), so it is made certain here: the
  // test holds the lowest claimed row's lock until the claimer's lease renewal waits on it (before locking any other
  // row: the renewal walks the primary key in order), then stops the claimer. The other worker takes the rest when the
  // claimer's recovery job runs, but not that row; once the test lets the renewal through, the frozen claimer sits in
  // its transaction holding the row's lock, after the recovery job has been and gone.
  it('a claimer frozen inside its transaction, holding a row\'s lock past its recovery job, loses it one lease later', { timeout: 90_000, skip: kind === 'sqlite' && 'PostgreSQL only' }, async () => {
    while (workers.filter((w) => w.exitCode === null && w.signalCode === null).length < 2) workers.push(await startWorker(server));
    const hook = await hookAndRule('lease-in-transaction');
    hold = true;
    const N = 4;
    await emit(deps, Array.from({ length: N }, () => deviceEvent()));
    const [claimer] = await until(async () => {
      const c = await claimers();
      return c.length > 0 && rx.received.some((r) => r.url === '/lease-in-transaction') && c;
    }, 30_000, 'a worker to claim and send');
    const victim = workers.find((w) => w.pid === pidOf(claimer!))!;
    assert.ok(victim, `claimer ${claimer} is one of the worker processes`);
    const claimedBy = async (who: string) =>
      (await deps.storage.db.selectFrom('events_delivery').select('id').where('webhook_id', '=', hook).where('status', '=', 'sent').where('claimed_by', '=', who).orderBy('id').execute()).map((r) => Number(r.id));
    const [first] = await until(async () => {
      const ids = await claimedBy(claimer!);
      return ids.length > 0 && ids;
    }, 30_000, 'the claimed deliveries');
    const waitingRenewals = async () =>
      Number((await sql<{ n: string }>`select count(*) as n from pg_stat_activity where datname = current_database() and state = 'active'
        and wait_event_type = 'Lock' and query like 'update events_delivery set claim_expires_at%'`.execute(deps.storage.db)).rows[0]!.n);
    let unlock!: () => void;
    const unlocked = new Promise<void>((r) => (unlock = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = deps.storage.db.transaction().execute(async (trx) => {
      await sql`select id from events_delivery where id = ${first} for update`.execute(trx);
      locked();
      await unlocked;
    });
    try {
      await isLocked;
      await until(async () => (await waitingRenewals()) > 0, 30_000, "the claimer's lease renewal waiting on the row lock");
      process.kill(victim.pid!, 'SIGSTOP');
      hold = false;
      for (const res of held.splice(0)) res.writeHead(200).end('ok');
      await until(async () => (await successful(hook)) === N - 1 && (await claimedBy(claimer!)).join() === String(first), 30_000, 'the other worker to take every claim but the locked one');
      // And until the other worker's own recovery job (which would drain once more by chance) has been and gone too.
      const [other] = await successfulWorkers(hook);
      const jobs = sql.table(`${server.cfg.pgSchema}_worker._private_jobs`);
      await until(async () => Number((await sql<{ n: string }>`select count(*) as n from ${jobs} where key = ${`inventory.deliver:recover:${other}`}`.execute(deps.storage.db)).rows[0]!.n) === 0, 30_000, "the other worker's recovery job to have run");
    } finally {
      unlock();
      await holder;
    }
    await until(async () => (await successful(hook)) === N, 30_000, 'all deliveries re-sent and recorded by the other worker');
    assert.ok(!(await successfulWorkers(hook)).includes(claimer!), 'the re-sends were recorded by the surviving worker');
    victim.kill('SIGKILL');
    await stopped(victim);
  });

  it('a send that outlasts the lease is not sent twice (the claimer renews it)', { timeout: 120_000 }, async () => {
    // Fresh workers with a longer lease: a claimer starved by the loaded machine for a whole lease may
    // rightly lose its claim (at-least-once); this is about a claimer that is alive and renewing.
    for (const w of workers.splice(0)) {
      w.kill('SIGKILL');
      await stopped(w);
    }
    const lease = 4000;
    while (workers.length < 2) workers.push(await startWorker(server, lease));
    const hook = await hookAndRule('slow');
    const slow: http.ServerResponse[] = [];
    rx.setResponder((r, res) => {
      if (r.url === '/slow') slow.push(res);
      else if (hold) held.push(res);
      else res.writeHead(200).end('ok');
    });
    await emit(deps, [deviceEvent(), deviceEvent()]);
    // The receiver answers only once the claims' first lease has run out and the heartbeat has pushed it on.
    const leaseOf = async () =>
      (await deps.storage.db.selectFrom('events_delivery').select('claim_expires_at').where('webhook_id', '=', hook).where('status', '=', 'sent').execute()).map((r) => Number(r.claim_expires_at));
    const [first] = await until(async () => {
      const l = await leaseOf();
      return slow.length >= 1 && l.length > 0 && l;
    }, 60_000, 'a slow delivery claimed and sent');
    await until(async () => Date.now() > first! + 500 && (await leaseOf()).some((e) => e > first!), 60_000, 'the lease renewed past its first end');
    await until(async () => {
      for (const res of slow.splice(0)) res.writeHead(200).end('ok');
      return (await successful(hook)) === 2;
    }, 60_000, 'both slow deliveries recorded');
    const ids = rx.received.filter((r) => r.url === '/slow').map((r) => r.headers['webhook-id']);
    assert.equal(ids.length, 2, `sent ${ids.length} times: ${ids.join(', ')}`);
    assert.equal(new Set(ids).size, 2);
  });
});
