import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { forEachStorage } from '@svc/testkit';
import { parsePythonJson, pythonJsonDumps } from '../../src/events/python-json.ts';
import { deviceEvent, emit, FAST_RETRIES, startInventory, startReceiver, until } from './helpers.ts';

forEachStorage('webhook delivery', (kind) => {
  let inv: Awaited<ReturnType<typeof startInventory>>;
  let rx: Awaited<ReturnType<typeof startReceiver>>;

  before(async () => {
    inv = await startInventory(kind, { ...FAST_RETRIES, webhookRetries: '2' });
    rx = await startReceiver();
  });
  after(async () => {
    await inv.server.close();
    await rx.close();
  });

  async function hookAndRule(hook: Record<string, unknown>, rule: Record<string, unknown> = {}) {
    const w = await inv.api.post('/api/extras/webhooks/', { name: `hook-${Math.random().toString(36).slice(2)}`, payload_url: `${rx.url}/hook`, ...hook });
    assert.equal(w.status, 201, JSON.stringify(w.body));
    const r = await inv.api.post('/api/extras/event-rules/', {
      name: `rule-${Math.random().toString(36).slice(2)}`,
      object_types: ['dcim.device'],
      event_types: ['object_created', 'object_updated'],
      action_object_type: 'extras.webhook',
      action_object_id: w.body.id,
      ...rule,
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return { webhook: w.body, rule: r.body };
  }

  async function cleanup(ids: { webhook: { id: number } }) {
    await inv.api.delete(`/api/extras/webhooks/${ids.webhook.id}/`);
  }

  it('sends the default body byte for byte with both signatures', async () => {
    const h = await hookAndRule({ secret: 's3cret', additional_headers: 'X-Foo: Bar' });
    const before = rx.received.length;
    const sentAfter = Math.floor(Date.now() / 1000);
    const ev = deviceEvent({ data: { id: 1, name: 'café ☃', n: 1.5, tags: [{ slug: 'a' }] } as any });
    await emit(inv.deps, [ev]);
    await rx.waitFor(before + 1);
    const got = rx.received[before]!;
    const expected = pythonJsonDumps(
      parsePythonJson(
        JSON.stringify({ event: 'created', timestamp: ev.timestamp, model: 'device', username: 'admin', request_id: ev.requestId, data: ev.data, snapshots: ev.snapshots }),
      ),
    );
    assert.equal(got.body.toString('utf8'), expected);
    assert.ok(got.body.toString().includes('"caf\\u00e9 \\u2603"'));
    assert.equal(got.method, 'POST');
    assert.equal(got.url, '/hook');
    assert.equal(got.headers['content-type'], 'application/json');
    assert.equal(got.headers['x-foo'], 'Bar');
    assert.equal(got.headers['x-hook-signature'], createHmac('sha512', 's3cret').update(got.body).digest('hex'));
    const id = got.headers['webhook-id'] as string;
    const ts = got.headers['webhook-timestamp'] as string;
    assert.match(id, /^msg_[0-9a-f]{32}$/);
    // the attempt's own time: between the emit and the arrival (an order, not a limit)
    assert.ok(Number(ts) >= sentAfter && Number(ts) <= Math.ceil(got.at / 1000), `webhook-timestamp ${ts}`);
    const sig = createHmac('sha256', 's3cret').update(`${id}.${ts}.`).update(got.body).digest('base64');
    assert.equal(got.headers['webhook-signature'], `v1,${sig}`);
    const task = await until(async () => {
      const l = await inv.api.get(`/api/core/background-tasks/?webhook=${h.webhook.id}`);
      return l.body.results[0]?.status === 'successful' && l.body.results[0];
    });
    const detail = await inv.api.get(`/api/core/background-tasks/${task.id}/`);
    assert.equal(detail.status, 200);
    assert.equal(detail.body.attempt_log.length, 1);
    assert.equal(detail.body.attempt_log[0].response_status, 200);
    assert.equal(detail.body.attempt_log[0].request.headers['X-Hook-Signature'], '********');
    // The logged headers, in their order, are those sent (the signatures masked); on PostgreSQL the server pieces them together.
    assert.deepEqual(Object.entries(detail.body.attempt_log[0].request.headers), [
      ['Content-Type', 'application/json'], ['User-Agent', got.headers['user-agent']], ['X-Foo', 'Bar'], ['webhook-id', id],
      ['webhook-timestamp', ts], ['webhook-signature', '********'], ['X-Hook-Signature', '********'],
    ]);
    assert.equal(detail.body.kwargs.data.name, 'café ☃');
    await cleanup(h);
  });

  it('retries with backoff, records each failure, then fails; manual requeue succeeds', async () => {
    const h = await hookAndRule({ payload_url: `${rx.url}/flaky` });
    let fail = true;
    rx.setResponder((r, res) => {
      if (r.url === '/flaky' && fail) res.writeHead(503).end('down for maintenance');
      else res.writeHead(200).end('ok');
    });
    const before = rx.received.length;
    await emit(inv.deps, [deviceEvent()]);
    const failed = await until(async () => {
      const l = await inv.api.get(`/api/core/background-tasks/?webhook=${h.webhook.id}&status=failed`);
      return l.body.results[0];
    }, 15_000, 'failed task');
    const flaky = rx.received.slice(before).filter((r) => r.url === '/flaky');
    assert.equal(flaky.length, 3, 'first try + 2 retries');
    assert.equal(new Set(flaky.map((r) => r.headers['webhook-id'])).size, 1, 'webhook-id stable across retries');
    assert.ok(flaky[1]!.at - flaky[0]!.at >= 90, 'first retry after ~100 ms');
    assert.ok(flaky[2]!.at - flaky[1]!.at >= 190, 'second retry after ~200 ms');
    const detail = await inv.api.get(`/api/core/background-tasks/${failed.id}/`);
    assert.equal(detail.body.attempt_log.length, 3);
    assert.match(detail.body.exc_info, /Status 503 returned with content 'down for maintenance'/);
    assert.equal(detail.body.attempt_log[0].response_body, 'down for maintenance');

    fail = false;
    const rq = await inv.api.post(`/api/core/background-tasks/${failed.id}/requeue/`);
    assert.equal(rq.status, 200);
    await until(async () => (await inv.api.get(`/api/core/background-tasks/${failed.id}/`)).body.status === 'successful', 10_000, 'requeued success');
    // The requeued delivery is the same message: its webhook-id too (admin.browser.test.ts requeues from the UI).
    const resent = rx.received.slice(before).filter((r) => r.url === '/flaky');
    assert.equal(resent.length, 4);
    assert.equal(resent[3]!.headers['webhook-id'], resent[0]!.headers['webhook-id'], 'webhook-id stable across a manual requeue');
    const again = await inv.api.post(`/api/core/background-tasks/${failed.id}/requeue/`);
    assert.equal(again.status, 400);
    rx.setResponder((_r, res) => res.writeHead(200).end('ok'));
    await cleanup(h);
  });

  it('honours Retry-After when scheduling the next try', async () => {
    const h = await hookAndRule({ payload_url: `${rx.url}/throttled`, max_retries: 1 });
    let first = true;
    rx.setResponder((r, res) => {
      if (r.url === '/throttled' && first) {
        first = false;
        res.writeHead(429, { 'retry-after': '1' }).end('slow down');
      } else res.writeHead(200).end('ok');
    });
    const before = rx.received.length;
    await emit(inv.deps, [deviceEvent()]);
    await until(async () => (await inv.api.get(`/api/core/background-tasks/?webhook=${h.webhook.id}&status=successful`)).body.results[0], 10_000);
    const hits = rx.received.slice(before).filter((r) => r.url === '/throttled');
    assert.equal(hits.length, 2);
    assert.ok(hits[1]!.at - hits[0]!.at >= 950, `waited ${hits[1]!.at - hits[0]!.at} ms`);
    rx.setResponder((_r, res) => res.writeHead(200).end('ok'));
    await cleanup(h);
  });

  it('treats redirects as failures and does not follow them', async () => {
    const h = await hookAndRule({ payload_url: `${rx.url}/redirect`, max_retries: 0 });
    rx.setResponder((r, res) => {
      if (r.url === '/redirect') res.writeHead(302, { location: '/elsewhere' }).end();
      else res.writeHead(200).end('ok');
    });
    const before = rx.received.length;
    await emit(inv.deps, [deviceEvent()]);
    const t = await until(async () => (await inv.api.get(`/api/core/background-tasks/?webhook=${h.webhook.id}&status=failed`)).body.results[0], 10_000);
    assert.equal(t.last_response_status, 302);
    assert.ok(!rx.received.slice(before).some((r) => r.url === '/elsewhere'));
    rx.setResponder((_r, res) => res.writeHead(200).end('ok'));
    await cleanup(h);
  });

  it('times out a hanging receiver per the webhook timeout', async () => {
    const h = await hookAndRule({ payload_url: `${rx.url}/hang`, timeout: 1, max_retries: 0 });
    // The receiver never answers until the test lets it: the delivery can only end by its own time-out.
    const held: Array<import('node:http').ServerResponse> = [];
    rx.setResponder((r, res) => {
      if (r.url !== '/hang') res.writeHead(200).end('ok');
      else held.push(res);
    });
    await emit(inv.deps, [deviceEvent()]);
    const t = await until(async () => (await inv.api.get(`/api/core/background-tasks/?webhook=${h.webhook.id}&status=failed`)).body.results[0], 10_000);
    assert.match(t.last_error, /timed out after 1 seconds/);
    assert.equal(held.length, 1, 'the request reached the receiver');
    assert.equal(held[0]!.headersSent, false, 'the receiver had not answered: the time-out ended the attempt');
    const detail = await inv.api.get(`/api/core/background-tasks/${t.id}/`);
    assert.equal(detail.body.attempt_log.length, 1);
    assert.equal(detail.body.attempt_log[0].response_status, null);
    for (const res of held) res.writeHead(200).end('late');
    rx.setResponder((_r, res) => res.writeHead(200).end('ok'));
    await cleanup(h);
  });

  // The guard decides in the sender, before anything is stored; a failed task's record is the retry test's, on both storages.
  it('refuses destinations its guard denies, and sends them nothing', { skip: kind !== 'sqlite' && 'the destination guard: checked on SQLite' }, async () => {
    // The guard denies loopback here, and the destination is a loopback listener that must receive nothing:
    // no test ever points a webhook off this machine (link-local and metadata addresses are covered by transport.test.ts).
    for (const flags of [{ webhookDeny: '127.0.0.0/8,::1/128' }, { webhookAllow: '10.0.0.0/8' }] as Array<Record<string, string>>) {
      const guarded = await startInventory(kind, { ...FAST_RETRIES, ...flags });
      const listener = await startReceiver();
      try {
        const w = await guarded.api.post('/api/extras/webhooks/', { name: 'guarded', payload_url: `${listener.url}/guarded`, max_retries: 0 });
        await guarded.api.post('/api/extras/event-rules/', { name: 'guarded', object_types: ['dcim.device'], event_types: ['object_created'], action_object_type: 'extras.webhook', action_object_id: w.body.id });
        await emit(guarded.deps, [deviceEvent()]);
        const t = await until(async () => (await guarded.api.get(`/api/core/background-tasks/?webhook=${w.body.id}&status=failed`)).body.results[0], 10_000);
        assert.match(t.last_error, flags.webhookDeny ? /Destination refused: 127\.0\.0\.1 .*INVENTORY_WEBHOOK_DENY/ : /Destination refused: 127\.0\.0\.1 .*not in INVENTORY_WEBHOOK_ALLOW/);
        assert.equal(listener.received.length, 0);
      } finally {
        await guarded.server.close();
        await listener.close();
      }
    }
  });

  it('sends nothing for a rolled-back change (outbox atomicity)', async () => {
    const h = await hookAndRule({ payload_url: `${rx.url}/atomic` });
    const before = rx.received.length;
    const { enqueueObjectEvents } = await import('../../src/events/index.ts');
    await assert.rejects(
      inv.deps.storage.db.transaction().execute(async (trx) => {
        await enqueueObjectEvents(trx, inv.deps, [deviceEvent()]);
        throw new Error('request failed after the change');
      }),
    );
    inv.deps.queue.wake();
    // The outbox is written in the request's transaction: after the rollback no delivery exists to send, ever.
    assert.equal((await inv.api.get(`/api/core/background-tasks/?webhook=${h.webhook.id}`)).body.count, 0);
    // A committed change afterwards is delivered, and it is the only one that arrives.
    const committed = deviceEvent();
    await emit(inv.deps, [committed]);
    await until(async () => (await inv.api.get(`/api/core/background-tasks/?webhook=${h.webhook.id}&status=successful`)).body.count === 1, 10_000, 'the committed delivery');
    const l = await inv.api.get(`/api/core/background-tasks/?webhook=${h.webhook.id}`);
    assert.equal(l.body.count, 1);
    assert.equal(l.body.results[0].object_id, committed.objectId);
    const got = rx.received.slice(before).filter((r) => r.url === '/atomic');
    assert.equal(got.length, 1);
    assert.equal(JSON.parse(got[0]!.body.toString()).data.id, committed.objectId);
    await cleanup(h);
  });

  it('stops a scheduled task and deletes tasks', async () => {
    const h = await hookAndRule({ payload_url: `${rx.url}/stop`, max_retries: 5 });
    rx.setResponder((r, res) => (r.url === '/stop' ? res.writeHead(500).end('no') : res.writeHead(200).end('ok')));
    await emit(inv.deps, [deviceEvent()]);
    const t = await until(async () => (await inv.api.get(`/api/core/background-tasks/?webhook=${h.webhook.id}&status=scheduled`)).body.results[0], 10_000);
    const s = await inv.api.post(`/api/core/background-tasks/${t.id}/stop/`);
    assert.equal(s.status, 200);
    assert.equal(s.body.status, 'stopped');
    const attempts = async () =>
      Number((await inv.deps.storage.db.selectFrom('events_delivery_attempt').select((eb) => eb.fn.countAll().as('n')).where('delivery_id', '=', t.id).executeTakeFirst())?.n);
    assert.ok((await attempts()) >= 1, 'the failed try left an attempt row');
    const del = await inv.api.delete(`/api/core/background-tasks/${t.id}/`);
    assert.equal(del.status, 204);
    assert.equal((await inv.api.get(`/api/core/background-tasks/${t.id}/`)).status, 404);
    // The task's attempt log goes with it (a foreign key's cascade on SQLite; the delete itself on PostgreSQL).
    assert.equal(await attempts(), 0);
    rx.setResponder((_r, res) => res.writeHead(200).end('ok'));
    await cleanup(h);
  });
});
