// The reference's tests/execution/test_async_nodes.py (and its api progress nodes) over HTTP and the WebSocket.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { ComfyClient, ExecutionError, GraphBuilder, HttpError, startEngineServer, type CacheMode, type Server } from './engine-client.ts';
import { waitJob, type Msg } from './helpers.ts';

const S = 32;
const image = (g: GraphBuilder, content: string) => g.node('StubImage', undefined, { content, height: S, width: S, batch_size: 1 });

async function fails(p: Promise<unknown>): Promise<ExecutionError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ExecutionError) return err;
    throw err;
  }
  assert.fail('the prompt should have failed');
}

/** The most nodes of `ids` that one progress_state message showed running at once. */
function maxRunningTogether(msgs: Msg[], ids: string[]): number {
  let best = 0;
  for (const m of msgs) {
    if (m.type !== 'progress_state') continue;
    const running = ids.filter((id) => m.data.nodes[id]?.state === 'running').length;
    best = Math.max(best, running);
  }
  return best;
}

forEachStorage('engine: test_async_nodes', (storage) => {
  for (const cache of ['classic', 'lru'] as CacheMode[]) {
    describe(`cache ${cache}`, () => {
      let srv: Server;
      let client: ComfyClient;
      let n = 0;
      const builder = () => new GraphBuilder(`a${++n}_`);
      before(async () => {
        srv = await startEngineServer(storage, cache);
        client = await new ComfyClient(srv).open();
      });
      after(async () => {
        client.close();
        await srv.close();
      });
      beforeEach(async () => {
        await srv.http.post('/free', { free_memory: true });
      });

      test('a basic async node runs and passes its value through', async () => {
        const g = builder();
        const img = image(g, 'BLACK');
        const sleep = g.node('TestSleep', undefined, { value: img.out(0), seconds: 0.05 });
        const output = g.node('SaveImage', undefined, { images: sleep.out(0) });
        const r = await client.run(g);
        assert.ok(r.didRun(sleep.id) && r.didRun(output.id));
        const imgs = await r.images(output.id);
        assert.equal(imgs.length, 1);
        assert.deepEqual([imgs[0]!.min, imgs[0]!.max], [0, 0]);
        // TestSleep reports its progress against the node's UNIQUE_ID.
        assert.ok(r.messages.some((m) => m.type === 'progress' && m.data.node === sleep.id && m.data.max === 0.05));
      });

      test('several async nodes are in flight at once', async () => {
        const g = builder();
        const img = image(g, 'BLACK');
        const sleeps = [0.3, 0.4, 0.5].map((s) => g.node('TestSleep', undefined, { value: img.out(0), seconds: s }));
        for (const s of sleeps) g.node('PreviewImage', undefined, { images: s.out(0) });
        const r = await client.run(g);
        for (const s of sleeps) assert.ok(r.didRun(s.id));
        assert.equal(maxRunningTogether(r.messages, sleeps.map((s) => s.id)), 3, 'all three sleeps ran at the same time');
      });

      test('async nodes with dependencies feed a sync node', async () => {
        const g = builder();
        const s1 = g.node('TestSleep', undefined, { value: image(g, 'BLACK').out(0), seconds: 0.1 });
        const s2 = g.node('TestSleep', undefined, { value: image(g, 'WHITE').out(0), seconds: 0.1 });
        const average = g.node('TestVariadicAverage', undefined, { input1: s1.out(0), input2: s2.out(0) });
        const output = g.node('SaveImage', undefined, { images: average.out(0) });
        const r = await client.run(g);
        assert.ok(r.didRun(s1.id) && r.didRun(s2.id) && r.didRun(average.id) && r.didRun(output.id));
        const [img] = await r.images(output.id);
        assert.ok(Math.abs(img!.mean - 127.5) < 1, String(img!.mean));
      });

      test('async VALIDATE_INPUTS passes and fails', async () => {
        const g = builder();
        const node = g.node('TestAsyncValidation', undefined, { value: 5.0, threshold: 10.0 });
        g.node('SaveImage', undefined, { images: node.out(0) });
        const r = await client.run(g);
        assert.ok(r.didRun(node.id));
        node.inputs.threshold = 3.0;
        await assert.rejects(client.run(g), (e: unknown) => {
          assert.ok(e instanceof HttpError && e.status === 400);
          assert.equal(e.body.node_errors[node.id].errors[0].details, 'value - Value 5.0 exceeds threshold 3.0');
          return true;
        });
      });

      test('an async validator that fails refuses the prompt', async () => {
        const g = builder();
        const node = g.node('TestAsyncValidationError', undefined, { value: 15.0, max_value: 10.0 });
        g.node('SaveImage', undefined, { images: node.out(0) });
        await assert.rejects(client.run(g), (e: unknown) => {
          assert.ok(e instanceof HttpError && e.status === 400);
          assert.equal(e.body.error.type, 'prompt_outputs_failed_validation');
          assert.ok(e.body.node_errors[node.id].errors.some((x: any) => x.details.endsWith('Async validation failed: 15.0 > 10.0')));
          return true;
        });
      });

      test('lazy evaluation skips an async branch that is not needed', async () => {
        const g = builder();
        const s1 = g.node('TestSleep', undefined, { value: image(g, 'BLACK').out(0), seconds: 0.1 });
        const s2 = g.node('TestSleep', undefined, { value: image(g, 'WHITE').out(0), seconds: 0.1 });
        const m = g.node('StubMask', undefined, { value: 0.0, height: S, width: S, batch_size: 1 });
        g.node('SaveImage', undefined, { images: g.node('TestLazyMixImages', undefined, { image1: s1.out(0), image2: s2.out(0), mask: m.out(0) }).out(0) });
        const r = await client.run(g);
        assert.ok(r.didRun(s1.id));
        assert.ok(!r.didRun(s2.id));
      });

      test('async check_lazy_status', async () => {
        const g = builder();
        const node = g.node('TestAsyncLazyCheck', undefined, { input1: 'value1', input2: 'value2', condition: true });
        g.node('SaveImage', undefined, { images: node.out(0) });
        const r = await client.run(g);
        assert.ok(r.didRun(node.id));
      });

      test('an async node that throws is an execution_error on that node; the next prompt runs', async () => {
        const g = builder();
        const img = image(g, 'BLACK');
        const errorNode = g.node('TestAsyncError', undefined, { value: img.out(0), error_after: 0.05 });
        g.node('SaveImage', undefined, { images: errorNode.out(0) });
        const err = await fails(client.run(g));
        assert.ok('prompt_id' in err.data);
        assert.equal(err.data.node_id, errorNode.id);
        assert.equal(err.data.exception_type, 'RuntimeError');
        assert.equal(err.data.exception_message, 'Intentional async execution error for testing\n');
        const g2 = builder();
        const sleep = g2.node('TestSleep', undefined, { value: image(g2, 'WHITE').out(0), seconds: 0.05 });
        g2.node('SaveImage', undefined, { images: sleep.out(0) });
        const r = await client.run(g2);
        assert.ok(r.didRun(sleep.id), 'should be able to run after an error');
      });

      test('an async time-out is reported as an error', async () => {
        const g = builder();
        const node = g.node('TestAsyncTimeout', undefined, { value: image(g, 'BLACK').out(0), timeout: 0.1, operation_time: 0.5 });
        g.node('SaveImage', undefined, { images: node.out(0) });
        const err = await fails(client.run(g));
        assert.match(err.data.exception_message.toLowerCase(), /timed out after 0\.1 seconds/);
      });

      test('a sync error while an async node is in flight ends the prompt with that error', async () => {
        const g = builder();
        const img = image(g, 'BLACK');
        const sleep = g.node('TestSleep', undefined, { value: img.out(0), seconds: 30 });
        const errorNode = g.node('TestSyncError', undefined, { value: img.out(0) });
        g.node('PreviewImage', undefined, { images: sleep.out(0) });
        g.node('PreviewImage', undefined, { images: errorNode.out(0) });
        const err = await fails(client.run(g));
        assert.equal(err.data.node_id, errorNode.id);
        assert.equal(err.data.exception_message, 'Intentional sync execution error for testing\n');
        // The half-done sleep is abandoned with its prompt: the next prompt runs at once.
        const g2 = builder();
        g2.node('PreviewImage', undefined, { images: image(g2, 'WHITE').out(0) });
        await client.run(g2);
      });

      test('async nodes with a list-mapped execution blocker', async () => {
        const g = builder();
        const s1 = g.node('TestSleep', undefined, { value: image(g, 'BLACK').out(0), seconds: 0.05 });
        const s2 = g.node('TestSleep', undefined, { value: image(g, 'WHITE').out(0), seconds: 0.05 });
        const list = g.node('TestMakeListNode', undefined, { value1: s1.out(0), value2: s2.out(0) });
        const ints = g.node('TestMakeListNode', undefined, { value1: g.node('StubInt', undefined, { value: 1 }).out(0), value2: g.node('StubInt', undefined, { value: 2 }).out(0) });
        const compare = g.node('TestIntConditions', undefined, { a: ints.out(0), b: 2, operation: '==' });
        const blocker = g.node('TestExecutionBlocker', undefined, { input: list.out(0), block: compare.out(0), verbose: false });
        const output = g.node('PreviewImage', undefined, { images: blocker.out(0) });
        const r = await client.run(g);
        assert.equal((await r.images(output.id)).length, 1, 'the second image is blocked');
      });

      test('async results are cached', async () => {
        const g = builder();
        const sleep = g.node('TestSleep', undefined, { value: image(g, 'BLACK').out(0), seconds: 0.1 });
        g.node('SaveImage', undefined, { images: sleep.out(0) });
        const r1 = await client.run(g);
        assert.ok(r1.didRun(sleep.id));
        const r2 = await client.run(g);
        assert.ok(!r2.didRun(sleep.id) && r2.wasCached(sleep.id));
      });

      test('an expansion into async nodes runs them together', async () => {
        const g = builder();
        const dyn = g.node('TestDynamicAsyncGeneration', undefined, { image1: image(g, 'BLACK').out(0), image2: image(g, 'WHITE').out(0), num_async_nodes: 5, sleep_duration: 0.3 });
        const output = g.node('SaveImage', undefined, { images: dyn.out(0) });
        const r = await client.run(g);
        assert.ok(r.didRun(dyn.id));
        const sleeps = [...r.runs].filter((id) => id.startsWith(`${dyn.id}.0.0.`) && id !== `${dyn.id}.0.0.6`);
        assert.equal(sleeps.length, 5, [...r.runs].join(','));
        assert.ok(maxRunningTogether(r.messages, sleeps) >= 2, 'the generated sleeps overlapped');
        const [img] = await r.images(output.id);
        assert.equal(img!.min, Math.floor((255 * 2) / 5));
      });

      test('async resources are released; a re-run is cached', async () => {
        const g = builder();
        const img = image(g, 'BLACK');
        const users = Array.from({ length: 5 }, (_, i) => g.node('TestAsyncResourceUser', undefined, { value: img.out(0), resource_id: `resource_${i}`, duration: 0.05 }));
        for (const u of users) g.node('PreviewImage', undefined, { images: u.out(0) });
        const r = await client.run(g);
        for (const u of users) assert.ok(r.didRun(u.id));
        const r2 = await client.run(g);
        for (const u of users) assert.ok(!r2.didRun(u.id), 'should be cached');
      });

      test('mixed sync and async nodes', async () => {
        const g = builder();
        const m = g.node('StubMask', undefined, { value: 0.5, height: S, width: S, batch_size: 1 });
        const sync1 = g.node('TestLazyMixImages', undefined, { image1: image(g, 'BLACK').out(0), image2: image(g, 'WHITE').out(0), mask: m.out(0) });
        const async1 = g.node('TestSleep', undefined, { value: sync1.out(0), seconds: 0.05 });
        const sync2 = g.node('TestCustomValidation1', undefined, { input1: async1.out(0), input2: 0.5 });
        const async2 = g.node('TestSleep', undefined, { value: sync2.out(0), seconds: 0.05 });
        const output = g.node('SaveImage', undefined, { images: async2.out(0) });
        const r = await client.run(g);
        for (const id of [sync1.id, async1.id, sync2.id, async2.id]) assert.ok(r.didRun(id), id);
        const [img] = await r.images(output.id);
        assert.ok(Math.abs(img!.mean - 63.75) < 5, String(img!.mean));
      });

      test('batch processing reports progress per item', async () => {
        const g = builder();
        const node = g.node('TestAsyncBatchProcessing', undefined, { images: g.node('StubImage', undefined, { content: 'BLACK', height: S, width: S, batch_size: 3 }).out(0), process_time_per_item: 0.01 });
        const output = g.node('SaveImage', undefined, { images: node.out(0) });
        const r = await client.run(g);
        const imgs = await r.images(output.id);
        assert.equal(imgs.length, 3);
        for (const i of imgs) assert.equal(i.min, 255, 'inverted black is white');
        const last = r.messages.filter((m) => m.type === 'progress' && m.data.node === node.id).at(-1);
        assert.deepEqual([last?.data.value, last?.data.max], [3, 3]);
      });

      test('a concurrency-limited async node finishes every call', async () => {
        const g = builder();
        const img = image(g, 'BLACK');
        const nodes = Array.from({ length: 4 }, (_, i) => g.node('TestAsyncConcurrentLimit', undefined, { value: img.out(0), duration: 0.1, node_id: i }));
        for (const x of nodes) g.node('PreviewImage', undefined, { images: x.out(0) });
        const r = await client.run(g);
        for (const x of nodes) assert.ok(r.didRun(x.id));
      });

      test('progress from async and plain node functions reaches the client', async () => {
        for (const cls of ['TestAsyncProgressUpdate', 'TestSyncProgressUpdate']) {
          const g = builder();
          const node = g.node(cls, undefined, { value: 'x', sleep_seconds: 0.1 });
          g.node('PreviewAny', undefined, { source: node.out(0) });
          const r = await client.run(g);
          const progress = r.messages.filter((m) => m.type === 'progress' && m.data.node === node.id);
          assert.ok(progress.length > 0, cls);
          for (const p of progress) {
            assert.equal(p.data.max, 1.0);
            assert.ok(p.data.value >= 0 && p.data.value <= 1);
          }
          assert.deepEqual(Object.keys(progress[0]!.data).sort(), ['max', 'node', 'prompt_id', 'value']);
        }
      });

      test('interrupting a sleeping node stops it at once and cancels the prompt', async () => {
        const g = builder();
        const outer = g.node('TestParallelSleep', undefined, {
          image1: image(g, 'BLACK').out(0),
          image2: image(g, 'WHITE').out(0),
          image3: image(g, 'WHITE').out(0),
          sleep1: 9.0,
          sleep2: 9.0,
          sleep3: 9.0,
        });
        g.node('PreviewImage', undefined, { images: outer.out(0) });
        const { prompt_id } = await client.queue(g.finalize());
        // Wait until a sleep inside the expansion reports progress, then interrupt.
        await client.ws.until((ms) => ms.some((m) => m.type === 'progress' && m.data.prompt_id === prompt_id && m.data.node.startsWith(`${outer.id}.0.0.`)));
        const i = await srv.http.post('/interrupt', { prompt_id });
        assert.equal(i.status, 200);
        const msgs = await client.wait(prompt_id);
        const interrupted = msgs.find((m) => m.type === 'execution_interrupted');
        assert.ok(interrupted, JSON.stringify(msgs.map((m) => m.type)));
        // The error names the real (prompt) node behind the expanded sleep.
        assert.equal(interrupted.data.node_id, outer.id);
        assert.equal(interrupted.data.node_type, 'TestParallelSleep');
        assert.ok(Array.isArray(interrupted.data.executed));
        assert.ok(!msgs.some((m) => m.type === 'execution_success' || m.type === 'execution_error'));
        const job = await waitJob(srv.http, prompt_id);
        assert.equal(job.status, 'cancelled');
        const h = await srv.http.get(`/history/${prompt_id}`);
        assert.equal(h.body[prompt_id].status.status_str, 'error');
        assert.ok(h.body[prompt_id].status.messages.some(([t]: [string]) => t === 'execution_interrupted'));
        // The worker goes on with the next prompt.
        const g2 = builder();
        g2.node('PreviewImage', undefined, { images: image(g2, 'WHITE').out(0) });
        await client.run(g2);
      });
    });
  }
});

test('TestSyncProgressUpdate is a plain synchronous node, as the reference (it returns its value, not a promise)', async () => {
  const { apiTestNodes } = await import('../src/nodes/testing-pack/async-nodes.ts');
  const def = apiTestNodes.find((d) => d.name === 'TestSyncProgressUpdate')!;
  const reports: number[] = [];
  const ctx = { checkInterrupt() {}, progress: (v: number) => void reports.push(v) } as any;
  const out = def.execute({ value: 'v', sleep_seconds: 0.05 }, ctx);
  assert.deepEqual(out, ['v']);
  assert.ok(reports.length > 1 && reports.every((v) => v >= 0 && v <= 1), String(reports));
  assert.equal(def.execute.constructor.name, 'Function');
});
