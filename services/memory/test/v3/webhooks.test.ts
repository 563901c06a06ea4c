import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { forEachStorage } from '@svc/testkit';
import { uniq, useServer } from '../helpers.ts';

const SECRET = 'test-webhook-secret';
const wsName = (p: string) => uniq(p).replace(/[^a-zA-Z0-9_-]/g, '_');

interface Delivery {
  path: string;
  body: string;
  signature: string | undefined;
}

/** A loopback receiver: records deliveries; `/flaky/*` paths fail their first request. */
function receiver() {
  const got: Delivery[] = [];
  const seen = new Set<string>();
  const waiters: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const path = req.url ?? '';
      if (path.startsWith('/flaky') && !seen.has(path)) {
        seen.add(path);
        res.writeHead(500).end();
        return;
      }
      got.push({ path, body, signature: req.headers['x-honcho-signature'] as string | undefined });
      res.writeHead(200).end('ok');
      waiters.splice(0).forEach((w) => w());
    });
  });
  return {
    got,
    server,
    url: () => `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async until(pred: () => boolean, ms = 20_000) {
      const end = Date.now() + ms;
      while (!pred()) {
        if (Date.now() > end) throw new Error(`no matching delivery; got ${JSON.stringify(got)}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200);
        });
      }
    },
  };
}

forEachStorage('memory v3 webhooks', (storage) => {
  const s = useServer(storage, { webhookSecret: SECRET, webhookAllowPrivate: true } as any);
  const rx = receiver();
  before(() => new Promise<void>((r) => rx.server.listen(0, '127.0.0.1', r)));
  after(() => new Promise<void>((r) => rx.server.close(() => r())));

  it('registers endpoints (get-or-create, limit, URL rules), lists and deletes them', async () => {
    const w = wsName('w');
    const W = `/v3/workspaces/${w}/webhooks`;
    let r = await s.http.post(W, { url: `${rx.url()}/a` });
    assert.equal(r.status, 201);
    assert.deepEqual(Object.keys(r.body), ['id', 'workspace_id', 'url', 'created_at']);
    const id = r.body.id;
    r = await s.http.post(W, { url: `${rx.url()}/a` });
    assert.deepEqual([r.status, r.body.id], [200, id]);
    for (const bad of ['not a url', 'ftp://example.com/x', 'file:///etc/passwd']) {
      r = await s.http.post(W, { url: bad });
      assert.equal(r.status, 422, `${bad}: ${r.text}`);
    }
    for (let i = 1; i < 10; i++) assert.equal((await s.http.post(W, { url: `${rx.url()}/n${i}` })).status, 201);
    r = await s.http.post(W, { url: `${rx.url()}/eleven` });
    assert.deepEqual([r.status, r.body], [409, { detail: 'Maximum number of webhook endpoints (10) reached for this workspace.' }]);
    r = await s.http.get(`${W}?size=3`);
    assert.deepEqual([r.body.total, r.body.items.length, r.body.pages], [10, 3, 4]);
    assert.equal((await s.http.delete(`${W}/${id}`)).status, 204);
    r = await s.http.delete(`${W}/${id}`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'Webhook endpoint not found' }]);
  });

  it('delivers test.event and queue.empty signed as the reference, retrying failed deliveries', async () => {
    const w = wsName('w');
    const W = `/v3/workspaces/${w}`;
    const path = `/flaky/${w}`;
    assert.equal((await s.http.post(`${W}/webhooks`, { url: `${rx.url()}${path}` })).status, 201);
    const r = await s.http.get(`${W}/webhooks/test`);
    assert.deepEqual([r.status, r.text], [200, 'null']);
    // The first attempt gets a 500; the queue tries again.
    await rx.until(() => rx.got.some((d) => d.path === path && d.body.includes('"test.event"')));
    const test = rx.got.find((d) => d.path === path)!;
    assert.equal(test.signature, createHmac('sha256', SECRET).update(test.body).digest('hex'));
    assert.match(test.body, /^\{"data":\{"workspace_id":"[^"]+"\},"timestamp":"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z","type":"test\.event"\}$/);

    await s.http.post(`${W}/sessions`, { id: 's1', peers: { alice: {} } });
    await s.http.post(`${W}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I am a teacher.' }] });
    await rx.until(() => rx.got.some((d) => d.path === path && d.body.includes('"queue.empty"')));
    const empty = JSON.parse(rx.got.find((d) => d.path === path && d.body.includes('"queue.empty"'))!.body);
    assert.deepEqual(empty.data, { observed: 'alice', observer: 'alice', queue_type: 'representation', session_id: 's1', workspace_id: w });
  });
});
