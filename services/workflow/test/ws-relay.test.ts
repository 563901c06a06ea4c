import assert from 'node:assert/strict';
import { test } from 'node:test';
import { client } from '@svc/testkit';
import { buildApp } from '../src/app.ts';
import { startWorkflow, textPrompt, waitJob, WsClient } from './helpers.ts';

test('PostgreSQL, two API processes: a prompt queued on one reaches the socket held by the other, once per message', async () => {
  const a = await startWorkflow('postgres');
  const bApp = await buildApp(a.cfg);
  try {
    const bUrl = await bApp.listen({ port: 0, host: '127.0.0.1' });
    const ws = new WsClient(bUrl, 'relay-client');
    await ws.opened;
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await a.http.post('/prompt', { prompt: textPrompt(`relay-${i}-${Math.random()}`), client_id: 'relay-client' });
      assert.equal(r.status, 200, r.text);
      ids.push(r.body.prompt_id);
    }
    for (const id of ids) {
      await ws.until((m) => m.find((x) => x.type === 'executing' && x.data.node === null && x.data.prompt_id === id));
    }
    for (const id of ids) {
      const mine = ws.messages.filter((x) => x.data?.prompt_id === id).map((x) => x.type);
      assert.equal(mine.filter((t) => t === 'execution_start').length, 1, `${id}: ${mine}`);
      assert.equal(mine.filter((t) => t === 'execution_success').length, 1, `${id}: ${mine}`);
      assert.ok(mine.indexOf('execution_start') < mine.indexOf('execution_success'), `${id}: ${mine}`);
      assert.equal(mine.at(-1), 'executing', 'executing with node null ends each prompt');
    }
    // Broadcasts too: B's socket sees the queue drain to 0 (status of prompts held by A's runner or B's).
    await ws.until((m) => m.find((x) => x.type === 'status' && x.data.status.exec_info.queue_remaining === 0));

    // A client that connects to B only after its prompt was queued on A still sees it finish (frames parked on B).
    const late = await a.http.post('/prompt', { prompt: textPrompt(`relay-late-${Math.random()}`), client_id: 'relay-late' });
    await waitJob(client(bUrl), late.body.prompt_id);
    const ws2 = new WsClient(bUrl, 'relay-late');
    await ws2.until((m) => m.find((x) => x.type === 'executing' && x.data.node === null && x.data.prompt_id === late.body.prompt_id));
    ws.close();
    ws2.close();
  } finally {
    await bApp.close();
    await a.close();
  }
});

test('PostgreSQL, two API processes: frames too large for one notification (and the batches around them) reach the other process whole and in order', async () => {
  const a = await startWorkflow('postgres');
  const bApp = await buildApp(a.cfg);
  try {
    const bUrl = await bApp.listen({ port: 0, host: '127.0.0.1' });
    const ws = new WsClient(bUrl, 'relay-big');
    await ws.opened;
    const big = `big-${Math.random()}-${'x'.repeat(20_000)}`;
    const prompts = [
      { '1': { class_type: 'PrimitiveString', inputs: { value: big } }, '2': { class_type: 'PreviewAny', inputs: { source: ['1', 0] } } },
      textPrompt(`small-${Math.random()}`),
      { '1': { class_type: 'PrimitiveString', inputs: { value: `${big}-2` } }, '2': { class_type: 'PreviewAny', inputs: { source: ['1', 0] } } },
    ];
    const ids = await Promise.all(prompts.map(async (prompt) => (await a.http.post('/prompt', { prompt, client_id: 'relay-big' })).body.prompt_id as string));
    for (const id of ids) await ws.until((m) => m.find((x) => x.type === 'executing' && x.data.node === null && x.data.prompt_id === id));
    for (const [i, id] of ids.entries()) {
      const mine = ws.messages.filter((x) => x.data?.prompt_id === id);
      const types = mine.map((x) => x.type);
      assert.equal(types.filter((t) => t === 'execution_start').length, 1, `${id}: ${types}`);
      assert.ok(types.indexOf('execution_start') < types.indexOf('executed') && types.indexOf('executed') < types.indexOf('execution_success'), `${id}: ${types}`);
      assert.equal(types.at(-1), 'executing');
      if (i !== 1) assert.equal(mine.find((x) => x.type === 'executed')!.data.output.text[0], i === 0 ? big : `${big}-2`);
    }
    ws.close();
  } finally {
    await bApp.close();
    await a.close();
  }
});

test('PostgreSQL relay: a process without client sockets (a worker) hears cancels but never the socket frames; API processes hear both', async () => {
  const { PgRelay } = await import('../src/ws/relay.ts');
  const { TEST_DATABASE_URL } = await import('@svc/testkit');
  const schema = `relay_split_${process.pid}`;
  const quiet = { warn() {} };
  const api = new PgRelay(TEST_DATABASE_URL, schema, quiet);
  const api2 = new PgRelay(TEST_DATABASE_URL, schema, quiet);
  const worker = new PgRelay(TEST_DATABASE_URL, schema, quiet, false);
  const got = { api2: [] as unknown[], worker: [] as unknown[], api: [] as unknown[] };
  let wake = () => {};
  try {
    await api.start((f) => (got.api.push(...f), wake()));
    await api2.start((f) => (got.api2.push(...f), wake()));
    await worker.start((f) => (got.worker.push(...f), wake()));
    // A socket frame and a cancel published together, then a cancel from the worker (its own are skipped).
    api.publish({ to: 'c1', text: 'frame-1' });
    api.publish({ to: null, cancel: 'p-1' });
    api.publish({ to: null, owner: 'w', text: 'frame-2' });
    while (got.api2.length < 3 || got.worker.length < 1) await new Promise<void>((r) => (wake = r));
    worker.publish({ to: null, cancel: 'p-2' });
    while (got.api.length < 1 || got.api2.length < 4) await new Promise<void>((r) => (wake = r));
    // Everything sent so far has arrived; one more frame from the API proves nothing else is on its way to the worker.
    api.publish({ to: 'c1', text: 'frame-3' });
    api.publish({ to: null, cancel: 'p-3' });
    while (got.worker.length < 2 || got.api2.length < 6) await new Promise<void>((r) => (wake = r));
    assert.deepEqual(got.worker, [{ to: null, cancel: 'p-1' }, { to: null, cancel: 'p-3' }]);
    assert.deepEqual(
      got.api2.filter((f: any) => f.text),
      [{ to: 'c1', text: 'frame-1' }, { to: null, owner: 'w', text: 'frame-2' }, { to: 'c1', text: 'frame-3' }],
    );
    assert.deepEqual(got.api2.filter((f: any) => f.cancel).map((f: any) => f.cancel), ['p-1', 'p-2', 'p-3']);
    assert.deepEqual(got.api, [{ to: null, cancel: 'p-2' }]);
  } finally {
    await Promise.all([api.close(), api2.close(), worker.close()]);
  }
});
