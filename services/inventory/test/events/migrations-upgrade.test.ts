// Upgrade path of migrations 103 (contexts in events_delivery_context) and 104 (attempt rows' default-body mark):
// a database the pre-103 code left with deliveries in every state and a drain job queued is migrated by starting
// the current service on it; the data survives and the deliveries in flight are delivered with their stored bodies.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { migrate, openStorage, type Storage } from '@svc/storage';
import { createQueue } from '@svc/queue';
import { cleanupConfig, client, postgresAvailable, testConfig, type StorageKind } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { coreMigrations } from '../../src/migrations.ts';
import { eventMigrations } from '../../src/events/schema.ts';
import { DELIVER_TASK, DRAIN_NOW_KEY } from '../../src/events/enqueue.ts';
import { pythonJsonDumps } from '../../src/events/python-json.ts';
import { ADMIN_TOKEN, startReceiver, until } from './helpers.ts';

const BEFORE_103 = [...coreMigrations, ...eventMigrations.filter((m) => m.name < '103')];

function context(i: number): string {
  // Key order and a non-ASCII name as json.dumps writes them: the default body must come out byte for byte.
  return pythonJsonDumps({
    event: 'updated',
    timestamp: '2026-11-20T08:00:00.123456+00:00',
    model: 'device',
    username: 'admin',
    request_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    data: { id: i, name: `dev-${i}-café`, status: { value: 'active', label: 'Active' } },
    snapshots: { prechange: { name: `dev-${i}` }, postchange: { name: `dev-${i}-café` } },
  });
}

async function openOld(cfg: ReturnType<typeof testConfig>): Promise<Storage> {
  return openStorage({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir, sqliteFile: 'inventory.sqlite', pgSchema: cfg.pgSchema });
}

for (const kind of ['sqlite', 'postgres'] as StorageKind[]) {
  describe(`migrations 103/104 upgrade on ${kind}`, { skip: kind === 'postgres' && !(await postgresAvailable()) && 'PostgreSQL unavailable' }, () => {
    const cfg = testConfig('invmig', kind, { flags: { adminToken: ADMIN_TOKEN, webhookAllow: '127.0.0.0/8,::1/128' } });
    let rx: Awaited<ReturnType<typeof startReceiver>>;
    let app: Awaited<ReturnType<typeof buildApp>> | undefined;
    const now = Date.now();
    const ids: Record<string, number> = {};
    const msg = (name: string) => `msg_upgrade${name.padEnd(21, '0')}`;

    before(async () => {
      rx = await startReceiver();
      // The database as the pre-103 code left it.
      const old = await openOld(cfg);
      try {
        const d = old.dialect;
        await migrate(old.db, d, BEFORE_103);
        const ts = new Date().toISOString();
        const w = await old.db
          .insertInto('extras_webhook')
          .values({
            name: 'old hook', description: '', payload_url: `${rx.url}/old`, http_method: 'POST', http_content_type: 'application/json',
            additional_headers: '', body_template: '', secret: 'old-secret', ssl_verification: d.bool(true), ca_file_path: null,
            timeout: null, max_retries: null, custom_fields: d.json({}), created: ts, last_updated: ts,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        const webhookId = Number(w.id);
        const delivery = (name: string, i: number, row: Record<string, unknown>) => ({
          message_id: msg(name), webhook_id: webhookId, event_rule_id: null, webhook_name: 'old hook', event_rule_name: 'old rule',
          object_type: 'dcim.device', object_id: i, event: 'updated', request_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
          context: context(i), attempts: 0, retry_base: 0, next_attempt_at: now - 60_000, created_at: now - 60_000, enqueued_at: now - 60_000,
          ...row,
        });
        const rows = {
          successful: delivery('successful', 1, { status: 'successful', attempts: 1, started_at: now - 50_000, ended_at: now - 50_000, last_status_code: 200 }),
          queued: delivery('queued', 2, { status: 'queued' }),
          // Claimed by a worker on another host that died: its lease ran out.
          sent: delivery('sent', 3, { status: 'sent', attempts: 1, claimed_by: 'gone-host:4242:abcdef', claim_expires_at: now - 30_000, started_at: now - 40_000 }),
          scheduled: delivery('scheduled', 4, { status: 'scheduled', attempts: 1, next_attempt_at: now - 1000, last_status_code: 503, last_error: 'Status 503 …' }),
          failed: delivery('failed', 5, { status: 'failed', attempts: 1, ended_at: now - 45_000, last_status_code: 500, last_error: 'Status 500 …' }),
        };
        for (const [name, row] of Object.entries(rows)) {
          ids[name] = Number((await old.db.insertInto('events_delivery').values(row).returning('id').executeTakeFirstOrThrow()).id);
        }
        const attempt = (name: string, ok: boolean, status: number) => ({
          delivery_id: ids[name], attempt: 1, worker: 'old-worker', started_at: now - 50_000, duration_ms: 1.5, request_method: 'POST',
          request_url: `${rx.url}/old`, request_headers: JSON.stringify([['Content-Type', 'application/json'], ['X-Hook-Signature', '********']]),
          request_body: rows[name as keyof typeof rows].context, response_status: status, response_body: ok ? 'ok' : 'no', error: ok ? null : `Status ${status}`,
          success: d.bool(ok),
        });
        await old.db.insertInto('events_delivery_attempt').values([attempt('successful', true, 200), attempt('scheduled', false, 503), attempt('failed', false, 500)]).execute();
        // The drain job the old code queued with the outbox rows.
        const queue = await createQueue(old, { tasks: {} });
        await queue.add(DELIVER_TASK, {}, { jobKey: DRAIN_NOW_KEY, maxAttempts: 25 });
        await queue.stop();
      } finally {
        await old.close();
      }
      app = await buildApp(cfg);
      await app.listen({ port: 0, host: '127.0.0.1' });
    });
    after(async () => {
      await app?.close();
      await rx.close();
      await cleanupConfig(cfg);
    });

    it('moves every context to events_delivery_context and marks old attempts as carrying their own body', async () => {
      const { db } = app!.inventoryDeps.storage;
      const contexts = await db.selectFrom('events_delivery_context').selectAll().orderBy('delivery_id').execute();
      assert.deepEqual(
        contexts.map((c) => [Number(c.delivery_id), c.context]),
        Object.values(ids).map((id, k) => [id, context(k + 1)]),
      );
      const columns = Object.keys((await db.selectFrom('events_delivery').selectAll().executeTakeFirstOrThrow()) as object);
      assert.ok(!columns.includes('context'), 'events_delivery no longer has the context column');
      const attempts = await db.selectFrom('events_delivery_attempt').selectAll().where('worker', '=', 'old-worker').orderBy('delivery_id').execute();
      assert.equal(attempts.length, 3);
      for (const a of attempts) {
        assert.equal(app!.inventoryDeps.storage.dialect.readBool(a.request_body_default), false);
        assert.equal(a.request_body, context(Object.values(ids).indexOf(Number(a.delivery_id)) + 1));
      }
    });

    it('delivers what was in flight (queued, a dead claimer’s, a due retry) with the stored body and webhook-id', async () => {
      await rx.waitFor(3, 20_000);
      const api = client(`http://127.0.0.1:${(app!.server.address() as { port: number }).port}`, { authorization: `Token ${ADMIN_TOKEN}` });
      for (const [name, i] of [['queued', 2], ['sent', 3], ['scheduled', 4]] as const) {
        const got = rx.received.filter((r) => r.headers['webhook-id'] === msg(name));
        assert.ok(got.length >= 1, `${name} delivered`);
        assert.equal(got[0]!.body.toString('utf8'), context(i));
        assert.match(String(got[0]!.headers['x-hook-signature']), /^[0-9a-f]{128}$/);
        const t = await until(async () => {
          const r = await api.get(`/api/core/background-tasks/${ids[name]}/`);
          return r.body.status === 'successful' ? r.body : undefined;
        }, 10_000, `${name} recorded`);
        assert.deepEqual(t.kwargs, JSON.parse(context(i)));
        const last = t.attempt_log[t.attempt_log.length - 1];
        assert.equal(last.request.body, context(i), 'the default-body mark reads back as the stored context');
      }
      assert.equal(rx.received.filter((r) => r.headers['webhook-id'] === msg('successful')).length, 0, 'a finished delivery is not sent again');
    });

    it('keeps finished and failed tasks readable, and a failed one requeued is delivered', async () => {
      const api = client(`http://127.0.0.1:${(app!.server.address() as { port: number }).port}`, { authorization: `Token ${ADMIN_TOKEN}` });
      const done = (await api.get(`/api/core/background-tasks/${ids.successful}/`)).body;
      assert.equal(done.status, 'successful');
      assert.deepEqual(done.kwargs, JSON.parse(context(1)));
      assert.equal(done.attempt_log.length, 1);
      assert.equal(done.attempt_log[0].request.body, context(1));
      const failed = (await api.get(`/api/core/background-tasks/${ids.failed}/`)).body;
      assert.equal(failed.status, 'failed');
      assert.equal(failed.attempt_log[0].request.body, context(5));
      const r = await api.post(`/api/core/background-tasks/${ids.failed}/requeue/`, {});
      assert.ok(r.status < 300, JSON.stringify(r.body));
      await until(async () => rx.received.some((x) => x.headers['webhook-id'] === msg('failed')), 10_000, 'requeued delivery');
      assert.equal(rx.received.find((x) => x.headers['webhook-id'] === msg('failed'))!.body.toString('utf8'), context(5));
    });
  });
}
