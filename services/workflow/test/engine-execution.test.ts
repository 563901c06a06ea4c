// The reference's tests/execution/test_execution.py over HTTP and the WebSocket, per storage and cache policy.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { byte, ComfyClient, ExecutionError, GraphBuilder, HttpError, pyFloat, startEngineServer, type CacheMode, type Server } from './engine-client.ts';
import { waitJob } from './helpers.ts';

const S = 64;
const image = (g: GraphBuilder, content: string, id?: string, size = S) => g.node('StubImage', id, { content, height: size, width: size, batch_size: 1 });
const mask = (g: GraphBuilder, value: unknown, id?: string) => g.node('StubMask', id, { value, height: S, width: S, batch_size: 1 });

async function rejects(p: Promise<unknown>): Promise<HttpError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof HttpError) return err;
    throw err;
  }
  assert.fail('the prompt should have been refused');
}

async function fails(p: Promise<unknown>): Promise<ExecutionError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ExecutionError) return err;
    throw err;
  }
  assert.fail('the prompt should have failed');
}

forEachStorage('engine: test_execution', (storage) => {
  for (const cache of ['classic', 'lru', 'none'] as CacheMode[]) {
    const shouldCache = cache !== 'none';
    describe(`cache ${cache}`, () => {
      let srv: Server;
      let client: ComfyClient;
      let n = 0;
      const builder = () => new GraphBuilder(`t${++n}_`);
      before(async () => {
        srv = await startEngineServer(storage, cache);
        client = await new ComfyClient(srv).open();
      });
      after(async () => {
        client.close();
        await srv.close();
      });
      // The reference resets the server's cache between passes with /free.
      beforeEach(async () => {
        await srv.http.post('/free', { free_memory: true });
      });

      test('lazy input: only the needed branch runs', async () => {
        const g = builder();
        const input1 = image(g, 'BLACK');
        const input2 = image(g, 'WHITE');
        const m = mask(g, 0.0);
        const mix = g.node('TestLazyMixImages', undefined, { image1: input1.out(0), image2: input2.out(0), mask: m.out(0) });
        const output = g.node('SaveImage', undefined, { images: mix.out(0) });
        const r = await client.run(g);
        const [img] = await r.images(output.id);
        assert.equal(img!.max, 0, 'image should be black');
        assert.ok(r.didRun(input1.id));
        assert.ok(!r.didRun(input2.id));
        assert.ok(r.didRun(m.id));
        assert.ok(r.didRun(mix.id));
      });

      test('full cache: an unchanged re-queue runs nothing', async () => {
        const g = builder();
        const input1 = image(g, 'BLACK');
        const input2 = image(g, 'NOISE');
        const m = mask(g, 0.5);
        const mix = g.node('TestLazyMixImages', undefined, { image1: input1.out(0), image2: input2.out(0), mask: m.out(0) });
        g.node('SaveImage', undefined, { images: mix.out(0) });
        await client.run(g);
        const r2 = await client.run(g);
        for (const id of Object.keys(g.finalize())) {
          if (shouldCache) {
            assert.ok(!r2.didRun(id), `${id} ran, but should have been cached`);
            assert.ok(r2.wasCached(id), `${id} should be listed in execution_cached`);
          } else assert.ok(r2.didRun(id), `${id} was cached, but should have run`);
        }
      });

      test('partial cache: a changed mask re-runs only what depends on it', async () => {
        const g = builder();
        const input1 = image(g, 'BLACK');
        const input2 = image(g, 'NOISE');
        const m = mask(g, 0.5);
        const mix = g.node('TestLazyMixImages', undefined, { image1: input1.out(0), image2: input2.out(0), mask: m.out(0) });
        g.node('SaveImage', undefined, { images: mix.out(0) });
        await client.run(g);
        m.inputs.value = 0.4;
        const r2 = await client.run(g);
        assert.equal(r2.didRun(input1.id), !shouldCache);
        assert.equal(r2.didRun(input2.id), !shouldCache);
        assert.ok(r2.didRun(m.id) && r2.didRun(mix.id));
      });

      test('error: a node failure is an execution_error with the reference fields', async () => {
        const g = builder();
        const input1 = image(g, 'BLACK');
        const input2 = image(g, 'NOISE', undefined, S / 2);
        const m = mask(g, 0.5);
        const mix = g.node('TestLazyMixImages', undefined, { image1: input1.out(0), image2: input2.out(0), mask: m.out(0) });
        g.node('SaveImage', undefined, { images: mix.out(0) });
        const err = await fails(client.run(g));
        const d = err.data;
        assert.ok('prompt_id' in d);
        assert.equal(d.node_id, mix.id);
        assert.equal(d.node_type, 'TestLazyMixImages');
        assert.equal(d.exception_type, 'RuntimeError');
        assert.equal(d.exception_message, `The size of tensor a (${S / 2}) must match the size of tensor b (${S}) at non-singleton dimension 2\n`);
        assert.ok(Array.isArray(d.traceback) && d.traceback.length > 0);
        assert.deepEqual(Object.keys(d.current_inputs).sort(), ['image1', 'image2', 'mask']);
        assert.match(d.current_inputs.image1[0], /IMAGE/);
        assert.ok(Array.isArray(d.executed) && d.executed.includes(input1.id));
        assert.ok(Array.isArray(d.current_outputs));
        // The worker keeps going.
        const g2 = builder();
        g2.node('SaveImage', undefined, { images: image(g2, 'WHITE').out(0) });
        await client.run(g2);
      });

      test('validation of literals: a string is refused, a float accepted', async () => {
        for (const [value, ok] of [
          ['foo', false],
          [true, false],
          [pyFloat(5), true],
        ] as const) {
          const g = builder();
          const v = g.node('TestCustomValidation1', undefined, { input1: value, input2: pyFloat(3) });
          g.node('SaveImage', undefined, { images: v.out(0) });
          if (ok) {
            const r = await client.run(g);
            const [img] = await r.images(Object.keys(r.outputs)[0]!);
            assert.equal(img!.min, 255, '5 × 3 clips to white');
          } else {
            const e = await rejects(client.run(g));
            assert.equal(e.status, 400);
            assert.equal(e.body.error.type, 'prompt_outputs_failed_validation');
            const errs = e.body.node_errors[v.id].errors;
            assert.equal(errs[0].type, 'custom_validation_failed');
            assert.equal(errs[0].details, `input1 - Invalid type of input1: <class '${value === 'foo' ? 'str' : 'bool'}'>`);
          }
        }
      });

      test('validation edge cases: linked types against custom validators', async () => {
        const cases: Array<[string, string, unknown, boolean, string?]> = [
          ['TestCustomValidation1', 'StubInt', 5, false, 'return_type_mismatch'],
          ['TestCustomValidation1', 'StubMask', pyFloat(5), false, 'return_type_mismatch'],
          ['TestCustomValidation2', 'StubInt', 5, false, 'custom_validation_failed'],
          ['TestCustomValidation2', 'StubFloat', pyFloat(5), true],
          ['TestCustomValidation3', 'StubInt', 5, false, 'custom_validation_failed'],
          ['TestCustomValidation3', 'StubFloat', pyFloat(5), true],
          ['TestCustomValidation4', 'StubInt', 5, false, 'return_type_mismatch'],
          ['TestCustomValidation4', 'StubFloat', pyFloat(5), true],
        ];
        for (const [cls, stubType, value, ok, errType] of cases) {
          const g = builder();
          const stub = g.node(stubType, undefined, { value });
          const v = g.node(cls, undefined, { input1: stub.out(0), input2: pyFloat(3) });
          g.node('SaveImage', undefined, { images: v.out(0) });
          if (ok) {
            await client.run(g);
            continue;
          }
          const e = await rejects(client.run(g));
          assert.equal(e.status, 400, `${cls} ← ${stubType}`);
          const types = Object.values(e.body.node_errors).flatMap((ne: any) => ne.errors.map((x: any) => x.type));
          assert.ok(types.includes(errType), `${cls} ← ${stubType}: ${JSON.stringify(e.body.node_errors)}`);
          if (cls === 'TestCustomValidation2') assert.equal(e.body.node_errors[v.id].errors[0].details, 'input1 - Invalid type of input1: INT');
          if (cls === 'TestCustomValidation3') assert.equal(e.body.node_errors[v.id].errors[0].details, 'input_types - Invalid type of input1: INT (expected IMAGE,FLOAT)');
        }
      });

      test('validation with **kwargs: built-in range checks are skipped, the custom one decides', async () => {
        for (const [a, b, ok] of [
          [0.0, 0.5, true],
          [0.0, 5.0, true],
          [0.0, 7.0, false],
        ] as const) {
          const g = builder();
          const v = g.node('TestCustomValidation5', undefined, { input1: a, input2: b });
          g.node('SaveImage', undefined, { images: v.out(0) });
          if (ok) await client.run(g);
          else {
            const e = await rejects(client.run(g));
            const errs = e.body.node_errors[v.id].errors;
            assert.ok(errs.every((x: any) => x.type === 'custom_validation_failed'));
            assert.ok(errs.some((x: any) => x.details === "input2 - 7s are not allowed. I've never liked 7s."));
          }
        }
      });

      test('a static cycle is refused at validation', async () => {
        const g = builder();
        const input1 = image(g, 'BLACK');
        const input2 = image(g, 'WHITE');
        const m = mask(g, 0.5);
        const mix1 = g.node('TestLazyMixImages', undefined, { image1: input1.out(0), mask: m.out(0) });
        const mix2 = g.node('TestLazyMixImages', undefined, { image1: mix1.out(0), image2: input2.out(0), mask: m.out(0) });
        mix1.setInput('image2', mix2.out(0));
        g.node('SaveImage', undefined, { images: mix2.out(0) });
        const e = await rejects(client.run(g));
        assert.equal(e.status, 400);
        const cyc = Object.values(e.body.node_errors).flatMap((ne: any) => ne.errors).find((x: any) => x.type === 'dependency_cycle');
        assert.ok(cyc, JSON.stringify(e.body));
        assert.equal(cyc.message, 'Dependency cycle detected');
        assert.match(cyc.details, / \(TestLazyMixImages\) -> .* \(TestLazyMixImages\) -> /);
      });

      test('a cycle created by an expansion is an execution error blamed on the expanding node', async () => {
        const g = builder();
        const input1 = image(g, 'BLACK');
        const input2 = image(g, 'WHITE');
        const generator = g.node('TestDynamicDependencyCycle', undefined, { input1: input1.out(0), input2: input2.out(0) });
        g.node('SaveImage', undefined, { images: generator.out(0) });
        const err = await fails(client.run(g));
        assert.equal(err.data.node_id, generator.id);
        assert.equal(err.data.exception_type, 'graph.DependencyCycleError');
        assert.equal(err.data.exception_message, 'Dependency cycle detected');
      });

      test('a missing node fails only its own output; the server keeps working', async () => {
        const g = builder();
        const input1 = image(g, 'BLACK');
        const input3 = image(g, 'WHITE');
        const m = mask(g, 0.5);
        const mix1 = g.node('TestLazyMixImages', undefined, { image1: input1.out(0), image2: [`${g.prefix}removeme`, 0], mask: m.out(0) });
        const mix2 = g.node('TestLazyMixImages', undefined, { image1: input1.out(0), image2: input3.out(0), mask: m.out(0) });
        const save1 = g.node('SaveImage', undefined, { images: mix1.out(0) });
        const save2 = g.node('SaveImage', undefined, { images: mix2.out(0) });
        const prompt = g.finalize();
        for (const node of Object.values(prompt)) if (node.class_type === 'SaveImage') node.inputs.filename_prefix = 'missing';
        const q = await client.queue(prompt);
        assert.deepEqual(Object.keys(q.node_errors), [mix1.id]);
        const inner = q.node_errors[mix1.id];
        assert.deepEqual(inner.dependent_outputs, [save1.id]);
        assert.equal(inner.errors[0].type, 'exception_during_inner_validation');
        assert.equal(inner.errors[0].extra_info.input_name, 'images');
        const r = await client.result(q.prompt_id);
        assert.ok(r.didRun(save2.id) && !r.didRun(save1.id));
        // Adding the node back makes both outputs run.
        image(g, 'WHITE', 'removeme');
        const r2 = await client.run(g);
        assert.ok(r2.wasExecuted(save1.id) && r2.wasExecuted(save2.id));
      });

      test('IS_CHANGED: NaN always re-runs, a constant value caches', async () => {
        const g = builder();
        const save = g.node('SaveImage');
        const isChanged = g.node('TestCustomIsChanged', undefined, { should_change: false });
        const input1 = image(g, 'BLACK');
        save.setInput('images', isChanged.out(0));
        isChanged.setInput('image', input1.out(0));
        const r1 = await client.run(g);
        const r2 = await client.run(g);
        isChanged.setInput('should_change', true);
        const r3 = await client.run(g);
        const r4 = await client.run(g);
        assert.ok(r1.didRun(isChanged.id));
        assert.equal(r2.didRun(isChanged.id), !shouldCache);
        assert.ok(r3.didRun(isChanged.id));
        assert.ok(r4.didRun(isChanged.id), 'NaN must never be cached');
      });

      test('undeclared inputs reach the node as keyword arguments', async () => {
        const g = builder();
        const ins = ['BLACK', 'WHITE', 'BLACK', 'BLACK'].map((c) => image(g, c));
        const average = g.node('TestVariadicAverage', undefined, Object.fromEntries(ins.map((n, i) => [`input${i + 1}`, n.out(0)])));
        const output = g.node('SaveImage', undefined, { images: average.out(0) });
        const r = await client.run(g);
        const [img] = await r.images(output.id);
        assert.equal(img!.min, Math.floor(255 / 4));
        assert.equal(img!.max, Math.floor(255 / 4));
      });

      test('for loop: expansion re-expands itself until the count runs out', async () => {
        const g = builder();
        const input1 = image(g, 'BLACK');
        const input2 = image(g, 'WHITE');
        const isChanged = g.node('TestCustomIsChanged', undefined, { should_change: true, image: input2.out(0) });
        const forOpen = g.node('TestForLoopOpen', undefined, { remaining: 4, initial_value1: isChanged.out(0) });
        const average = g.node('TestVariadicAverage', undefined, { input1: input1.out(0), input2: forOpen.out(2) });
        const forClose = g.node('TestForLoopClose', undefined, { flow_control: forOpen.out(0), initial_value1: average.out(0) });
        const output = g.node('SaveImage', undefined, { images: forClose.out(0) });
        for (let iterations = 1; iterations < 5; iterations++) {
          forOpen.setInput('remaining', iterations);
          const r = await client.run(g);
          const [img] = await r.images(output.id);
          const expected = Math.floor(255 / 2 ** iterations);
          assert.equal(img!.min, expected, `${iterations} iterations`);
          assert.equal(img!.max, expected, `${iterations} iterations`);
          assert.ok(r.didRun(isChanged.id));
          // Expanded nodes carry the "{node}.{call}.{graph}." prefix and are shown as the node that made them.
          const executing = r.messages.filter((m) => m.type === 'executing' && m.data.node !== null);
          const expanded = executing.filter((m) => m.data.node.startsWith(`${forClose.id}.0.0.`));
          assert.ok(expanded.length > 0, 'the for-close expansion ran');
          for (const m of expanded) assert.ok([forClose.id, forOpen.id, average.id].includes(m.data.display_node), JSON.stringify(m.data));
        }
      });

      test('mixed expansion returns: plain, result-only and expanding calls of one list-mapped node', async () => {
        const g = builder();
        const valList = g.node('TestMakeListNode', undefined, { value1: 0.1, value2: 0.2, value3: 0.3 });
        const mixed = g.node('TestMixedExpansionReturns', undefined, { input1: valList.out(0) });
        const outDynamic = g.node('SaveImage', undefined, { images: mixed.out(0) });
        const outLiteral = g.node('SaveImage', undefined, { images: mixed.out(1) });
        const r = await client.run(g);
        const dyn = await r.images(outDynamic.id);
        assert.deepEqual(
          dyn.map((i) => [i.min, i.max]),
          [
            [25, 25],
            [51, 51],
            [76, 76],
          ],
        );
        const lit = await r.images(outLiteral.id);
        assert.equal(lit.length, 3);
        for (const i of lit) assert.deepEqual([i.min, i.max], [255, 255]);
        // The third call expanded with the "{node}.{call}.{graph}." prefix.
        assert.ok([...r.runs].some((id) => id.startsWith(`${mixed.id}.2.0.`)), JSON.stringify([...r.runs]));
      });

      test('mixed lazy results: a list-mapped lazy node asks per item', async () => {
        const g = builder();
        const valList = g.node('TestMakeListNode', undefined, { value1: 0.0, value2: 0.5, value3: 1.0 });
        const m = mask(g, valList.out(0));
        const input1 = image(g, 'BLACK');
        const input2 = image(g, 'WHITE');
        const mix = g.node('TestLazyMixImages', undefined, { image1: input1.out(0), image2: input2.out(0), mask: m.out(0) });
        const output = g.node('SaveImage', undefined, { images: mix.out(0) });
        const r = await client.run(g);
        const imgs = await r.images(output.id);
        assert.deepEqual(
          imgs.map((i) => [i.min, i.max]),
          [
            [0, 0],
            [127, 127],
            [255, 255],
          ],
        );
      });

      test('one output feeding two outputs', async () => {
        const g = builder();
        const input1 = image(g, 'BLACK');
        const o1 = g.node('SaveImage', undefined, { images: input1.out(0) });
        const o2 = g.node('SaveImage', undefined, { images: input1.out(0) });
        const r = await client.run(g);
        assert.equal((await r.images(o1.id)).length, 1);
        assert.equal((await r.images(o2.id)).length, 1);
      });

      test('IS_CHANGED gets constant inputs only', async () => {
        const g = builder();
        const input1 = g.node('StubConstantImage', undefined, { value: 0.5, height: S, width: S, batch_size: 1 });
        const node = g.node('TestIsChangedWithConstants', undefined, { image: input1.out(0), value: 0.5 });
        const output = g.node('PreviewImage', undefined, { images: node.out(0) });
        for (let i = 0; i < 2; i++) {
          const r = await client.run(g);
          const imgs = await r.images(output.id);
          assert.equal(imgs.length, 1);
          assert.deepEqual([imgs[0]!.min, imgs[0]!.max], [63, 63]);
          if (i === 1) assert.equal(r.didRun(node.id), !shouldCache);
        }
      });

      test('async sleep nodes run concurrently', async () => {
        const g = builder();
        const img = image(g, 'BLACK');
        const sleeps = [0.3, 0.4, 0.35].map((s) => g.node('TestSleep', undefined, { value: img.out(0), seconds: s }));
        const previews = sleeps.map((s) => g.node('PreviewImage', undefined, { images: s.out(0) }));
        const r = await client.run(g);
        for (const s of sleeps) assert.ok(r.didRun(s.id));
        // Every sleep started before any preview ran: none waited for another to finish.
        const order = r.messages.filter((m) => m.type === 'executing' && m.data.node !== null).map((m) => m.data.node);
        const firstPreview = Math.min(...previews.map((p) => order.indexOf(p.id)));
        for (const s of sleeps) assert.ok(order.indexOf(s.id) < firstPreview, order.join(','));
      });

      test('async sleep nodes from an expansion run concurrently and blend', async () => {
        const g = builder();
        const i1 = image(g, 'BLACK');
        const i2 = image(g, 'WHITE');
        const i3 = image(g, 'WHITE');
        const ps = g.node('TestParallelSleep', undefined, { image1: i1.out(0), image2: i2.out(0), image3: i3.out(0), sleep1: 0.2, sleep2: 0.25, sleep3: 0.3 });
        const output = g.node('SaveImage', undefined, { images: ps.out(0) });
        const r = await client.run(g);
        assert.ok(r.didRun(ps.id));
        const imgs = await r.images(output.id);
        assert.equal(imgs.length, 1);
        assert.equal(imgs[0]!.mean, 170);
        const executing = r.messages.filter((m) => m.type === 'executing' && m.data.node?.startsWith(`${ps.id}.0.0.`));
        assert.equal(executing.length, 4, 'three sleeps and the average');
        for (const m of executing) assert.equal(m.data.display_node, ps.id);
      });

      test('an OUTPUT_IS_LIST node passes blockers through; only the blocked item is dropped', async () => {
        const g = builder();
        const imgs = ['BLACK', 'WHITE', 'BLACK'].map((c) => image(g, c));
        const imageList = g.node('TestMakeListNode', undefined, { value1: imgs[0]!.out(0), value2: imgs[1]!.out(0), value3: imgs[2]!.out(0) });
        const ints = [1, 2, 3].map((v) => g.node('StubInt', undefined, { value: v }));
        const intList = g.node('TestMakeListNode', undefined, { value1: ints[0]!.out(0), value2: ints[1]!.out(0), value3: ints[2]!.out(0) });
        const compare = g.node('TestIntConditions', undefined, { a: intList.out(0), b: 2, operation: '==' });
        const blocker = g.node('TestExecutionBlocker', undefined, { input: imageList.out(0), block: compare.out(0), verbose: false });
        const listOutput = g.node('TestMakeListNode', undefined, { value1: blocker.out(0) });
        const output = g.node('PreviewImage', undefined, { images: listOutput.out(0) });
        const r = await client.run(g);
        assert.ok(r.didRun(output.id));
        const out = await r.images(output.id);
        assert.equal(out.length, 2);
        for (const i of out) assert.deepEqual([i.min, i.max], [0, 0]);
      });

      test('a verbose blocker reports an execution_error and the prompt still succeeds', async () => {
        const g = builder();
        const img = image(g, 'WHITE');
        const blocker = g.node('TestExecutionBlocker', undefined, { input: img.out(0), block: true, verbose: true });
        const output = g.node('PreviewImage', undefined, { images: blocker.out(0) });
        const { prompt_id } = await client.queue(g.finalize());
        const r = await client.result(prompt_id, { throwOnError: false });
        const err = r.messages.find((m) => m.type === 'execution_error')!;
        assert.equal(err.data.exception_type, 'ExecutionBlocked');
        assert.equal(err.data.exception_message, 'Execution Blocked: Blocked Execution');
        assert.equal(err.data.node_id, output.id);
        assert.ok(r.messages.some((m) => m.type === 'execution_success'));
        assert.deepEqual(r.outputs[output.id], undefined);
      });

      test('partial execution: only the targeted outputs run', async () => {
        let g = builder();
        let input1 = image(g, 'BLACK');
        let input2 = image(g, 'WHITE');
        let output1 = g.node('SaveImage', undefined, { images: input1.out(0) });
        let output2 = g.node('SaveImage', undefined, { images: input2.out(0) });
        let r = await client.run(g, [output1.id]);
        assert.ok(r.wasExecuted(input1.id) && r.wasExecuted(output1.id));
        assert.ok(!r.didRun(input2.id) && !r.didRun(output2.id));
        assert.equal((await r.images(output1.id)).length, 1);
        assert.equal((await r.images(output2.id)).length, 0);

        g = builder();
        input1 = image(g, 'BLACK');
        input2 = image(g, 'WHITE');
        const input3 = image(g, 'NOISE');
        output1 = g.node('SaveImage', undefined, { images: input1.out(0) });
        output2 = g.node('SaveImage', undefined, { images: input2.out(0) });
        const output3 = g.node('SaveImage', undefined, { images: input3.out(0) });
        r = await client.run(g, [output1.id, output3.id]);
        assert.ok(r.wasExecuted(input1.id) && r.wasExecuted(input3.id) && r.wasExecuted(output1.id) && r.wasExecuted(output3.id));
        assert.ok(!r.didRun(input2.id) && !r.didRun(output2.id));
      });

      test('partial execution: untargeted output nodes run when a target needs them', async () => {
        let g = builder();
        const input1 = image(g, 'BLACK');
        const withSocket = g.node('TestOutputNodeWithSocketOutput', undefined, { image: input1.out(0), value: 2.0 });
        const dependent = g.node('TestLazyMixImages', undefined, { image1: withSocket.out(0), image2: input1.out(0), mask: mask(g, 0.5).out(0) });
        const final = g.node('SaveImage', undefined, { images: dependent.out(0) });
        let r = await client.run(g, [final.id]);
        for (const id of [input1.id, withSocket.id, dependent.id, final.id]) assert.ok(r.wasExecuted(id), id);

        g = builder();
        const a = image(g, 'BLACK');
        const b = image(g, 'WHITE');
        const on1 = g.node('TestOutputNodeWithSocketOutput', undefined, { image: a.out(0), value: 1.5 });
        const on2 = g.node('TestOutputNodeWithSocketOutput', undefined, { image: on1.out(0), value: 2.0 });
        const save1 = g.node('SaveImage', undefined, { images: on1.out(0) });
        const save2 = g.node('SaveImage', undefined, { images: on2.out(0) });
        const save3 = g.node('SaveImage', undefined, { images: b.out(0) });
        r = await client.run(g, [save2.id]);
        for (const id of [a.id, on1.id, on2.id, save2.id]) assert.ok(r.wasExecuted(id), id);
        for (const id of [b.id, save1.id, save3.id]) assert.ok(!r.didRun(id), id);
      });

      test('partial execution with lazy nodes', async () => {
        const g = builder();
        const input1 = image(g, 'BLACK');
        const input2 = image(g, 'WHITE');
        const input3 = image(g, 'NOISE');
        const mask1 = mask(g, 0.0);
        const mask2 = mask(g, 0.5);
        const mix1 = g.node('TestLazyMixImages', undefined, { image1: input1.out(0), image2: input2.out(0), mask: mask1.out(0) });
        const mix2 = g.node('TestLazyMixImages', undefined, { image1: input2.out(0), image2: input3.out(0), mask: mask2.out(0) });
        const output1 = g.node('SaveImage', undefined, { images: mix1.out(0) });
        const output2 = g.node('SaveImage', undefined, { images: mix2.out(0) });
        const r = await client.run(g, [output1.id]);
        for (const id of [input1.id, mask1.id, mix1.id, output1.id]) assert.ok(r.wasExecuted(id), id);
        for (const id of [input2.id, input3.id, mask2.id, mix2.id, output2.id]) assert.ok(!r.didRun(id), id);
      });

      test('partial execution with an empty target list is refused', async () => {
        const g = builder();
        g.node('SaveImage', undefined, { images: image(g, 'BLACK').out(0) });
        const e = await rejects(client.run(g, []));
        assert.equal(e.status, 400);
        assert.equal(e.body.error.type, 'prompt_no_outputs');
      });

      test('cached outputs appear in the job of a prompt queued without a client_id', async () => {
        const g = builder();
        const output = g.node('SaveImage', undefined, { images: image(g, 'BLACK', undefined, 32).out(0) });
        const prompt = g.finalize();
        await client.run(prompt);
        const r = await srv.http.post('/prompt', { prompt });
        assert.equal(r.status, 200);
        const job = await waitJob(srv.http, r.body.prompt_id);
        assert.equal(job.status, 'completed');
        assert.ok(output.id in job.outputs, 'cached outputs must appear in job outputs without a client_id');
      });
    });
  }
});
