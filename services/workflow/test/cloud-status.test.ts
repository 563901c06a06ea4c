import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { signupUser, TEST_LIMITS, type TestUser } from './cloud-helpers.ts';
import { gateEntered, gatePrompt, releaseGate, startWorkflow, textPrompt, waitJob, WsClient } from './helpers.ts';

type Srv = Awaited<ReturnType<typeof startWorkflow>>;

forEachStorage('workflow hosted runtime: queue_remaining counts the caller’s workspace only', (storage) => {
  let srv: Srv;
  let a: TestUser;
  let b: TestUser;

  before(async () => {
    srv = await startWorkflow(storage, { runtime: 'cloud', authRateLimits: TEST_LIMITS }, { packs: ['gate-pack.mjs'] });
    a = await signupUser(srv.url, 'status-a');
    b = await signupUser(srv.url, 'status-b');
  });
  after(async () => srv?.close());

  test('GET /api/prompt and the status messages show a workspace its own queue; another workspace’s queue never reaches it', async () => {
    const gate = `status-${storage}-${process.pid}`;
    const wsA = new WsClient(srv.url, 'a-socket', { headers: { authorization: `Bearer ${a.token}` } });
    const wsB = new WsClient(srv.url, 'b-socket', { headers: { authorization: `Bearer ${b.token}` } });
    await Promise.all([wsA.opened, wsB.opened]);
    await wsB.until((m) => m.find((x) => x.type === 'status'));

    const running = await a.http.post('/api/prompt', { prompt: gatePrompt(gate), client_id: 'a-socket' });
    assert.equal(running.status, 200, running.text);
    await gateEntered(gate);
    const queued = [];
    for (let i = 0; i < 3; i++) queued.push((await a.http.post('/api/prompt', { prompt: textPrompt(`a-${i}`), client_id: 'a-socket' })).body.prompt_id);

    assert.equal((await a.http.get('/api/prompt')).body.exec_info.queue_remaining, 4);
    assert.equal((await b.http.get('/api/prompt')).body.exec_info.queue_remaining, 0);
    await wsA.until((m) => m.find((x) => x.type === 'status' && x.data.status.exec_info.queue_remaining === 4));

    // B queues one of its own: its count is 1, A's stays 4.
    const own = await b.http.post('/api/prompt', { prompt: textPrompt('b-0'), client_id: 'b-socket' });
    assert.equal((await b.http.get('/api/prompt')).body.exec_info.queue_remaining, 1);
    assert.equal((await a.http.get('/api/prompt')).body.exec_info.queue_remaining, 4);

    releaseGate(gate);
    for (const id of [running.body.prompt_id, ...queued]) assert.equal((await waitJob(a.http, id)).status, 'completed');
    assert.equal((await waitJob(b.http, own.body.prompt_id)).status, 'completed');
    await wsA.until((m) => m.find((x) => x.type === 'status' && x.data.status.exec_info.queue_remaining === 0));
    await wsB.until((m) => m.find((x) => x.type === 'status' && x.data.status.exec_info.queue_remaining === 0));
    // B's socket never saw a count that included A's prompts.
    const bCounts = wsB.messages.filter((x) => x.type === 'status').map((x) => x.data.status.exec_info.queue_remaining);
    assert.ok(bCounts.every((n) => n <= 1), `B saw ${bCounts.join(',')}`);
    wsA.close();
    wsB.close();
  });
});
