// Caching behaviour from the reference's test_lazy_cache_keys.py, test_subgraph_cache.py and
// test_executed_node_ids.py, plus signature hits across node ids, over HTTP and the WebSocket.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { ComfyClient, GraphBuilder, startEngineServer, type CacheMode, type Server } from './engine-client.ts';

const S = 32;

function useServer(storage: 'sqlite' | 'postgres', cache: CacheMode, flags: Record<string, string | boolean> = {}) {
  const ctx = {} as { srv: Server; client: ComfyClient };
  before(async () => {
    ctx.srv = await startEngineServer(storage, cache, flags);
    ctx.client = await new ComfyClient(ctx.srv).open();
  });
  after(async () => {
    ctx.client.close();
    await ctx.srv.close();
  });
  beforeEach(async () => {
    await ctx.srv.http.post('/free', { free_memory: true });
  });
  return ctx;
}

forEachStorage('engine: caching', (storage) => {
  describe('lazy inputs and cache keys (test_lazy_cache_keys)', () => {
    const ctx = useServer(storage, 'classic');

    function graph(producerValue: number, maskValue: number) {
      const g = new GraphBuilder('lk_');
      const black = g.node('StubImage', 'black', { content: 'BLACK', height: S, width: S, batch_size: 1 });
      const producer = g.node('StubConstantImage', 'producer', { value: producerValue, height: S, width: S, batch_size: 1 });
      const mask = g.node('StubMask', 'mask', { value: maskValue, height: S, width: S, batch_size: 1 });
      const consumer = g.node('TestLazyMixImages', 'consumer', { image1: black.out(0), image2: producer.out(0), mask: mask.out(0) });
      const out = g.node('PreviewImage', 'out', { images: consumer.out(0) });
      return { g, producer, consumer, out };
    }

    test('churn behind a lazy input the node never evaluated does not invalidate it', async () => {
      const { client } = ctx;
      let x = graph(0.2, 0.0);
      let r = await client.run(x.g);
      assert.ok(r.didRun(x.consumer.id) && !r.didRun(x.producer.id));
      // The first run had no evidence yet, so its key included the producer: the second run keys
      // the consumer without it (a miss), and from then on producer churn leaves it cached.
      x = graph(0.7, 0.0);
      r = await client.run(x.g);
      assert.ok(!r.didRun(x.producer.id));
      x = graph(0.9, 0.0);
      r = await client.run(x.g);
      assert.ok(!r.didRun(x.consumer.id), 'the unevaluated lazy input is not part of the key');
      assert.ok(r.wasCached(x.consumer.id) && r.wasCached(x.out.id));
      assert.ok(!r.didRun(x.producer.id));
    });

    test('a consumed lazy input still invalidates, and the evidence does not flip back', async () => {
      const { client } = ctx;
      let x = graph(0.2, 0.5);
      let r = await client.run(x.g);
      assert.ok(r.didRun(x.consumer.id) && r.didRun(x.producer.id), 'mask 0.5 needs both images');
      x = graph(0.7, 0.5);
      r = await client.run(x.g);
      assert.ok(r.didRun(x.producer.id) && r.didRun(x.consumer.id));
      // The same node with a mask that skips image2 now: evidence stays "evaluated", so producer churn re-runs it.
      x = graph(0.7, 0.0);
      r = await client.run(x.g);
      assert.ok(r.didRun(x.consumer.id));
      x = graph(0.3, 0.0);
      r = await client.run(x.g);
      assert.ok(r.didRun(x.consumer.id), 'evidence is monotonic: the key includes the producer again');
    });

    test('an eager link always invalidates', async () => {
      const { client } = ctx;
      const run = async (v: number) => {
        const g = new GraphBuilder('eager_');
        const p = g.node('StubConstantImage', 'p', { value: v, height: S, width: S, batch_size: 1 });
        const c = g.node('TestVariadicAverage', 'c', { input1: p.out(0) });
        g.node('PreviewImage', 'o', { images: c.out(0) });
        return [await client.run(g), c.id] as const;
      };
      await run(0.1);
      const [r, c] = await run(0.9);
      assert.ok(r.didRun(c));
    });

    test('/free forgets the evidence with the cache', async () => {
      const { client, srv } = ctx;
      let x = graph(0.2, 0.0);
      await client.run(x.g);
      await srv.http.post('/free', { free_memory: true });
      x = graph(0.7, 0.0);
      const r = await client.run(x.g);
      assert.ok(r.didRun(x.consumer.id));
    });
  });

  for (const cache of ['classic', 'lru'] as CacheMode[]) {
    describe(`--disable-subgraph-caching and no_cache (test_subgraph_cache), cache ${cache}`, () => {
      const ctx = useServer(storage, cache, { disableSubgraphCaching: true });

      function chain() {
        const g = new GraphBuilder('');
        const src = g.node('StubImage', 'src', { content: 'BLACK', height: S, width: S, batch_size: 1 });
        const white = g.node('StubImage', 'white', { content: 'WHITE', height: S, width: S, batch_size: 1 });
        const stage1Mask = g.node('StubMask', 'sg:stage1_mask', { value: 0.5, height: S, width: S, batch_size: 1 });
        const boundaryMask = g.node('StubMask', 'sg:boundary_mask', { value: 0.5, height: S, width: S, batch_size: 1 });
        const stage1 = g.node('TestLazyMixImages', 'sg:stage1', { image1: src.out(0), image2: white.out(0), mask: stage1Mask.out(0) });
        const boundary = g.node('TestLazyMixImages', 'sg:boundary', { image1: stage1.out(0), image2: white.out(0), mask: boundaryMask.out(0) });
        const top = g.node('PreviewImage', 'top_preview', { images: boundary.out(0) });
        return { g, src, white, stage1Mask, boundaryMask, stage1, boundary, top };
      }

      test('an unchanged re-queue is a no-op without caching subgraph internals', async () => {
        const c = chain();
        await ctx.client.run(c.g);
        const r = await ctx.client.run(c.g);
        for (const n of [c.src, c.white, c.stage1Mask, c.boundaryMask, c.stage1, c.boundary, c.top]) assert.ok(!r.didRun(n.id), `${n.id} should not re-run`);
        assert.ok(r.wasCached(c.boundary.id), "the boundary node's value leaves the subgraph");
        assert.ok(r.wasCached(c.src.id) && r.wasCached(c.white.id));
        assert.ok(!r.wasCached(c.stage1.id) && !r.wasCached(c.stage1Mask.id), 'subgraph internals are not kept');
      });

      test('an output node inside a subgraph stays cached and does not drag its ancestors in', async () => {
        const c = chain();
        const inner = c.g.node('PreviewImage', 'sg:preview', { images: c.stage1.out(0) });
        await ctx.client.run(c.g);
        const r = await ctx.client.run(c.g);
        assert.ok(r.wasCached(inner.id) && !r.didRun(inner.id));
        assert.ok(!r.didRun(c.stage1.id) && !r.wasCached(c.stage1.id));
        assert.ok(r.outputs[inner.id]?.images?.length === 1, 'its cached UI output is reported');
      });

      test('an edit inside re-runs the chain from there', async () => {
        const c = chain();
        await ctx.client.run(c.g);
        c.stage1Mask.inputs.value = 0.7;
        const r = await ctx.client.run(c.g);
        for (const n of [c.stage1Mask, c.stage1, c.boundary, c.top]) assert.ok(r.didRun(n.id), n.id);
        assert.ok(r.wasCached(c.src.id) && r.wasCached(c.white.id));
      });

      test('an uncached internal is recomputed when a node after it is invalidated', async () => {
        const c = chain();
        await ctx.client.run(c.g);
        c.boundaryMask.inputs.value = 0.9;
        const r = await ctx.client.run(c.g);
        assert.ok(r.didRun(c.boundary.id) && r.didRun(c.stage1.id));
        assert.ok(r.wasCached(c.src.id) && r.wasCached(c.white.id));
      });

      test('a node marked no_cache in the prompt is never kept', async () => {
        const g = new GraphBuilder('');
        const src = g.node('StubImage', 'src', { content: 'BLACK', height: S, width: S, batch_size: 1 });
        const white = g.node('StubImage', 'white', { content: 'WHITE', height: S, width: S, batch_size: 1 });
        const mask = g.node('StubMask', 'mask', { value: 0.5, height: S, width: S, batch_size: 1 });
        const middle = g.node('TestLazyMixImages', 'middle', { image1: src.out(0), image2: white.out(0), mask: mask.out(0) });
        const final = g.node('TestLazyMixImages', 'final', { image1: middle.out(0), image2: white.out(0), mask: mask.out(0) });
        const preview = g.node('PreviewImage', 'preview', { images: final.out(0) });
        const prompt = g.finalize() as Record<string, any>;
        prompt[middle.id].no_cache = true;
        await ctx.client.run(prompt);
        const r = await ctx.client.run(prompt);
        for (const n of [src, white, mask, middle, final, preview]) assert.ok(!r.didRun(n.id), `${n.id} should not re-run`);
        assert.ok(!r.wasCached(middle.id));
        assert.ok(r.wasCached(final.id));
      });
    });
  }

  for (const cache of ['classic', 'lru', 'none'] as CacheMode[]) {
    describe(`executed node ids of expansions (test_executed_node_ids), cache ${cache}`, () => {
      const ctx = useServer(storage, cache);
      const prompt = () => ({ expand: { class_type: 'TestExecutedNodeIdsExpander', inputs: { value: 'stable-child' } } });

      test('the expanded child is reported, and runs again only without a cache', async () => {
        const r1 = await ctx.client.run(prompt());
        assert.deepEqual(Object.keys(r1.outputs), ['expand.0.0.child']);
        assert.ok(r1.didRun('expand.0.0.child'));
        assert.deepEqual(r1.outputs['expand.0.0.child'], { text: ['stable-child'] });
        const r2 = await ctx.client.run(prompt());
        assert.deepEqual(Object.keys(r2.outputs), ['expand.0.0.child'], 'a cached expansion still reports its child');
        assert.equal(r2.didRun('expand.0.0.child'), cache === 'none');
        const h = await ctx.srv.http.get(`/history/${r2.promptId}`);
        assert.deepEqual(h.body[r2.promptId].meta['expand.0.0.child'], { node_id: 'expand.0.0.child', display_node: 'expand', parent_node: 'expand', real_node_id: 'expand' });
      });

      test("a new prompt's executed list starts empty", async () => {
        await ctx.client.run(prompt());
        const { prompt_id } = await ctx.client.queue({ block: { class_type: 'TestExecutedNodeIdsBlocking', inputs: {} } });
        await ctx.client.ws.until((ms) => ms.some((m) => m.type === 'executing' && m.data.prompt_id === prompt_id && m.data.node === 'block'));
        await ctx.srv.http.post('/interrupt', { prompt_id });
        const msgs = await ctx.client.wait(prompt_id);
        const interrupted = msgs.find((m) => m.type === 'execution_interrupted')!;
        assert.deepEqual(interrupted.data.executed, []);
        assert.equal(interrupted.data.node_id, 'block');
      });
    });
  }

  describe('signatures, not ids, key the cache', () => {
    const ctx = useServer(storage, 'classic');

    test('identical subgraphs under other ids hit one entry; UNIQUE_ID nodes do not share', async () => {
      const build = (p: string) => {
        const g = new GraphBuilder(p);
        const a = g.node('StubImage', 'a', { content: 'WHITE', height: S, width: S, batch_size: 1 });
        const b = g.node('StubImage', 'b', { content: 'WHITE', height: S, width: S, batch_size: 1 });
        const sa = g.node('TestSleep', 'sa', { value: a.out(0), seconds: 0.01 });
        const sb = g.node('TestSleep', 'sb', { value: b.out(0), seconds: 0.01 });
        g.node('PreviewAny', 'oa', { source: 'x' });
        g.node('PreviewImage', 'pa', { images: sa.out(0) });
        g.node('PreviewImage', 'pb', { images: sb.out(0) });
        return g;
      };
      const r1 = await ctx.client.run(build('p1_'));
      const stubRuns = ['p1_a', 'p1_b'].filter((id) => r1.didRun(id));
      assert.equal(stubRuns.length, 1, 'two equal StubImage nodes compute once');
      assert.ok(r1.didRun('p1_sa') && r1.didRun('p1_sb'), 'a UNIQUE_ID input puts the node id in the key');
      // The same graph under new ids: everything but the UNIQUE_ID nodes (and what follows them) is cached.
      const r2 = await ctx.client.run(build('p2_'));
      assert.ok(r2.wasCached('p2_a') && r2.wasCached('p2_b') && r2.wasCached('p2_oa'));
      assert.ok(!r2.didRun('p2_a') && !r2.didRun('p2_b'));
      assert.ok(r2.didRun('p2_sa') && r2.didRun('p2_sb'));
      // The same ids again: all cached.
      const r3 = await ctx.client.run(build('p2_'));
      assert.deepEqual([...r3.runs], []);
    });

    test('expansions that embed values as constants are never served stale', async () => {
      // The while loop copies its body with the current values as constants; a different
      // start image must not hit an entry made with another image of the same size.
      for (const [content, expected] of [
        ['WHITE', 63],
        ['BLACK', 0],
      ] as const) {
        const g = new GraphBuilder('loop_');
        const input1 = g.node('StubImage', 'i1', { content: 'BLACK', height: S, width: S, batch_size: 1 });
        const input2 = g.node('StubImage', 'i2', { content, height: S, width: S, batch_size: 1 });
        const forOpen = g.node('TestForLoopOpen', 'open', { remaining: 2, initial_value1: input2.out(0) });
        const average = g.node('TestVariadicAverage', 'avg', { input1: input1.out(0), input2: forOpen.out(2) });
        const forClose = g.node('TestForLoopClose', 'close', { flow_control: forOpen.out(0), initial_value1: average.out(0) });
        const output = g.node('PreviewImage', 'out', { images: forClose.out(0) });
        const r = await ctx.client.run(g);
        const [img] = await r.images(output.id);
        assert.equal(img!.max, expected, content);
      }
    });
  });

  describe('--cache-lru 0, as the reference\'s suite starts it, is the classic cache', () => {
    // The reference's --cache-lru defaults to 0 and turns LRU on only above it; its own
    // tests/execution start servers with `--cache-lru 0`.
    const ctx = useServer(storage, 'classic', { cacheLru: '0' });
    const graph = (content: string) => {
      const g = new GraphBuilder(`l0_${content}_`);
      const img = g.node('StubImage', 'img', { content, height: S, width: S, batch_size: 1 });
      g.node('PreviewImage', 'out', { images: img.out(0) });
      return g;
    };

    test('a re-queue is served from the cache, and what the next prompt does not use is dropped', async () => {
      const { client } = ctx;
      const r1 = await client.run(graph('BLACK'));
      assert.ok(r1.didRun('l0_BLACK_img'));
      const r2 = await client.run(graph('BLACK'));
      assert.deepEqual([...r2.runs], [], 'an unchanged re-queue runs nothing');
      assert.ok(r2.wasCached('l0_BLACK_img') && r2.wasCached('l0_BLACK_out'));
      await client.run(graph('WHITE'));
      const r3 = await client.run(graph('BLACK'));
      assert.ok(r3.didRun('l0_BLACK_img'), 'classic keeps only what the last prompt used (an LRU would still hold it)');
    });
  });
});
