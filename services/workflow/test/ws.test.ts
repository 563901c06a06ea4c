import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow, waitJob, WsClient } from './helpers.ts';

forEachStorage('workflow WebSocket delivery', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  before(async () => {
    srv = await startWorkflow(storage, {}, { packs: ['progress-pack.mjs'] });
  });
  after(async () => {
    await srv.close();
  });

  test('preview frames: type 1 (u32 event, u32 image type, bytes) by default, type 4 with metadata for clients that ask', async () => {
    for (const withMeta of [false, true]) {
      const id = `pv-${randomUUID()}`;
      const ws = new WsClient(srv.url, id);
      await ws.opened;
      if (withMeta) {
        ws.send({ type: 'feature_flags', data: { supports_preview_metadata: true } });
        await ws.until((ms) => ms.find((m) => m.type === 'feature_flags'));
      }
      const r = await srv.http.post('/prompt', { prompt: { p: { class_type: 'TestPreview', inputs: { tag: id } } }, client_id: id });
      await ws.promptDone(r.body.prompt_id);
      assert.equal(ws.binary.length, 1);
      const frame = ws.binary[0]!;
      if (!withMeta) {
        assert.equal(frame.readUInt32BE(0), 1);
        assert.equal(frame.readUInt32BE(4), 2);
        assert.equal(frame.subarray(8, 12).toString('latin1'), '\x89PNG');
      } else {
        assert.equal(frame.readUInt32BE(0), 4);
        const len = frame.readUInt32BE(4);
        const meta = JSON.parse(frame.subarray(8, 8 + len).toString('utf8'));
        assert.deepEqual(meta, { node_id: 'p', prompt_id: r.body.prompt_id, display_node_id: 'p', parent_node_id: null, real_node_id: 'p', image_type: 'image/png' });
        assert.equal(frame.subarray(8 + len, 12 + len).toString('latin1'), '\x89PNG');
      }
      ws.close();
    }
  });

  test('progress is coalesced: a node reporting 200,000 steps does not flood the client, and the last value arrives', async () => {
    const id = `pg-${randomUUID()}`;
    const ws = new WsClient(srv.url, id);
    await ws.opened;
    const r = await srv.http.post('/prompt', { prompt: { p: { class_type: 'TestProgress', inputs: { steps: 200_000, tag: id } } }, client_id: id });
    const msgs = await ws.promptDone(r.body.prompt_id);
    const progress = msgs.filter((m) => m.type === 'progress');
    assert.ok(progress.length >= 1 && progress.length < 1000, `got ${progress.length} progress messages`);
    assert.deepEqual(progress.at(-1)!.data, { value: 200_000, max: 200_000, prompt_id: r.body.prompt_id, node: 'p' });
    const states = msgs.filter((m) => m.type === 'progress_state');
    assert.ok(states.length < 1000, `got ${states.length} progress_state messages`);
    assert.equal(states.at(-1)!.data.nodes.p.state, 'finished');
    ws.close();
  });

  test('a 3,000-node prompt with a listening client sends progress_state a bounded number of times', async () => {
    const id = `big-${randomUUID()}`;
    const ws = new WsClient(srv.url, id);
    await ws.opened;
    const p: Record<string, any> = { '0': { class_type: 'PrimitiveString', inputs: { value: id } } };
    for (let i = 1; i < 3000; i++) p[String(i)] = { class_type: 'StringTrim', inputs: { string: [String(i - 1), 0], mode: 'Both' } };
    p.out = { class_type: 'PreviewAny', inputs: { source: ['2999', 0] } };
    const r = await srv.http.post('/prompt', { prompt: p, client_id: id });
    const msgs = await ws.promptDone(r.body.prompt_id);
    assert.equal(msgs.filter((m) => m.type === 'executing' && m.data.node !== null).length, 3001);
    const states = msgs.filter((m) => m.type === 'progress_state');
    assert.ok(states.length >= 1 && states.length < 300, `got ${states.length} progress_state messages`);
    assert.equal(Object.keys(states.at(-1)!.data.nodes).length, 3001);
    assert.ok(Object.values<any>(states.at(-1)!.data.nodes).every((n) => n.state === 'finished'));
    ws.close();
  });

  test('a socket that stops reading never stalls execution', async () => {
    const id = `slow-${randomUUID()}`;
    const ws = new WsClient(srv.url, id);
    await ws.opened;
    const raw = (ws.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    raw.pause();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await srv.http.post('/prompt', { prompt: { p: { class_type: 'TestProgress', inputs: { steps: 50_000, tag: `${id}-${i}` } } }, client_id: id });
      ids.push(r.body.prompt_id);
    }
    for (const pid of ids) assert.equal((await waitJob(srv.http, pid)).status, 'completed');
    raw.resume();
    const msgs = await ws.promptDone(ids.at(-1)!);
    assert.ok(msgs.some((m) => m.type === 'execution_success'));
    ws.close();
  });

  test('a prompt without client_id sends no execution messages; status broadcasts reach every socket', async () => {
    const a = new WsClient(srv.url, `a-${randomUUID()}`);
    await a.opened;
    const r = await srv.http.post('/prompt', { prompt: { p: { class_type: 'TestProgress', inputs: { steps: 3, tag: 'quiet' } } } });
    await waitJob(srv.http, r.body.prompt_id);
    await a.until((ms) => ms.filter((m) => m.type === 'status').length >= 2);
    assert.equal(a.messages.filter((m) => m.data?.prompt_id === r.body.prompt_id).length, 0);
    a.close();
  });
});
