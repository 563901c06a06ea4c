/**
 * Requests go out from the send thread (INVENTORY_WEBHOOK_SEND_THREAD=1, the default with more
 * than one core) or from the delivery worker's own thread (=0): both send the same bytes with
 * both signatures, a stop ends an in-flight request, and the attempt log shows the body sent
 * (for the default body, rebuilt from the stored context instead of a copy per attempt).
 */
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { forEachStorage } from '@svc/testkit';
import { deviceEvent, emit, startInventory, startReceiver, until } from './helpers.ts';

for (const thread of ['1', '0']) {
  forEachStorage(`webhook requests sent ${thread === '1' ? 'from the send thread' : 'in-process'}`, (kind) => {
    let inv: Awaited<ReturnType<typeof startInventory>>;
    let rx: Awaited<ReturnType<typeof startReceiver>>;

    before(async () => {
      inv = await startInventory(kind, { webhookSendThread: thread, webhookRetries: '0' });
      rx = await startReceiver();
    });
    after(async () => {
      await inv.server.close();
      await rx.close();
    });

    // Each test's hook has a path of its own; the earlier tests' hooks stay and fire too.
    async function hook(path: string, extra: Record<string, unknown> = {}) {
      const w = await inv.api.post('/api/extras/webhooks/', { name: `hook-${Math.random().toString(36).slice(2)}`, payload_url: `${rx.url}${path}`, secret: 'k3y', ...extra });
      assert.equal(w.status, 201, JSON.stringify(w.body));
      const r = await inv.api.post('/api/extras/event-rules/', {
        name: `rule-${Math.random().toString(36).slice(2)}`, object_types: ['dcim.device'], event_types: ['object_created'],
        action_object_type: 'extras.webhook', action_object_id: w.body.id,
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return w.body as { id: number };
    }

    it('signs and sends the batch; the attempt log holds the body that was sent', async () => {
      const w = await hook('/signed', { additional_headers: 'X-Hook-Signature: forged\nX-Extra: 1' });
      const before = rx.received.length;
      await emit(inv.deps, [deviceEvent({ objectId: 1 }), deviceEvent({ objectId: 2 }), deviceEvent({ objectId: 3 })]);
      await rx.waitFor(before + 3);
      for (const got of rx.received.slice(before)) {
        assert.equal(got.headers['x-hook-signature'], createHmac('sha512', 'k3y').update(got.body).digest('hex'), 'the signature replaces a header of the same name');
        const id = got.headers['webhook-id'] as string;
        const ts = got.headers['webhook-timestamp'] as string;
        assert.equal(got.headers['webhook-signature'], `v1,${createHmac('sha256', 'k3y').update(`${id}.${ts}.`).update(got.body).digest('base64')}`);
        assert.equal(got.headers['x-extra'], '1');
      }
      const tasks = await until(async () => {
        const l = await inv.api.get(`/api/core/background-tasks/?webhook=${w.id}&status=successful`);
        return l.body.results.length === 3 && l.body.results;
      });
      for (const t of tasks as Array<{ id: string }>) {
        const d = await inv.api.get(`/api/core/background-tasks/${t.id}/`);
        const attempt = d.body.attempt_log[0];
        const sent = rx.received.slice(before).find((r) => r.headers['webhook-id'] === attempt.request.headers['webhook-id']);
        assert.ok(sent, 'the logged attempt is one of the requests received');
        assert.equal(attempt.request.body, sent.body.toString('utf8'));
        assert.equal(attempt.request.headers['X-Hook-Signature'], '********');
        assert.equal(attempt.request.headers['webhook-signature'], '********');
      }
    });

    it('a templated body is logged as rendered', async () => {
      const w = await hook('/templated', { body_template: '{"name": "{{ data.name }}"}' });
      await emit(inv.deps, [deviceEvent({ objectId: 9 })]);
      const got = await until(async () => rx.received.find((r) => r.url === '/templated'), 10_000, 'templated request');
      const t = await until(async () => (await inv.api.get(`/api/core/background-tasks/?webhook=${w.id}&status=successful`)).body.results[0]);
      const d = await inv.api.get(`/api/core/background-tasks/${t.id}/`);
      assert.equal(d.body.attempt_log[0].request.body, got.body.toString('utf8'));
      assert.match(d.body.attempt_log[0].request.body, /^\{"name": "/);
    });

    it('stopping a task ends its in-flight request', async () => {
      const w = await hook('/stall', { timeout: 60 });
      rx.setResponder((r, res) => {
        if (r.url !== '/stall') res.writeHead(200).end('ok');
        // else: never answers
      });
      await emit(inv.deps, [deviceEvent({ objectId: 5 })]);
      const t = await until(async () => (await inv.api.get(`/api/core/background-tasks/?webhook=${w.id}&status=sent`)).body.results[0], 10_000, 'request in flight');
      await until(async () => rx.received.some((r) => r.url === '/stall'), 10_000, 'request at the receiver');
      const stop = await inv.api.post(`/api/core/background-tasks/${t.id}/stop/`);
      assert.equal(stop.status, 200, JSON.stringify(stop.body));
      const d = await until(async () => {
        const r = await inv.api.get(`/api/core/background-tasks/${t.id}/`);
        return r.body.attempt_log.length === 1 && r.body;
      }, 10_000, 'the stopped attempt recorded');
      assert.equal(d.status, 'stopped');
      assert.match(d.attempt_log[0].error, /was stopped/);
      rx.setResponder((_r, res) => res.writeHead(200).end('ok'));
    });
  });
}
