// The reference's tests/execution/test_validation.py over HTTP, and the test pack's node schemas.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { ComfyClient, startEngineServer, type Server } from './engine-client.ts';
import { startWorkflow, waitJob } from './helpers.ts';

forEachStorage('engine: test_validation', (storage) => {
  describe('validation', () => {
    let srv: Server;
    let client: ComfyClient;
    before(async () => {
      srv = await startWorkflow(storage, { enableTestNodes: true }, { packs: ['validation-pack.mjs'] });
      client = await new ComfyClient(srv).open();
    });
    after(async () => {
      client.close();
      await srv.close();
    });

    test('a 2,000-node acyclic chain validates and runs without recursion', async () => {
      const size = 2_000;
      const prompt: Record<string, any> = { '0': { class_type: 'StubInt', inputs: { value: 0 } } };
      for (let i = 1; i < size; i++) prompt[String(i)] = { class_type: 'TestIntMathOperation', inputs: { a: [String(i - 1), 0], b: 1, operation: 'add' } };
      prompt.out = { class_type: 'PreviewAny', inputs: { source: [String(size - 1), 0] } };
      // Queued without a client: a socket would get a progress_state map per node (the reference's O(n²) stream).
      const q = await srv.http.post('/prompt', { prompt });
      assert.equal(q.status, 200);
      const job = await waitJob(srv.http, q.body.prompt_id);
      assert.equal(job.status, 'completed');
      assert.deepEqual(job.outputs.out, { text: [String(size - 1)] });
    });

    test('a dependency cycle names its path and leaves every node on it invalid', async () => {
      const prompt = {
        '0': { class_type: 'TestIntMathOperation', inputs: { a: ['1', 0], b: 1, operation: 'add' } },
        '1': { class_type: 'TestIntMathOperation', inputs: { a: ['0', 0], b: 1, operation: 'add' } },
        out: { class_type: 'PreviewAny', inputs: { source: ['0', 0] } },
      };
      const r = await srv.http.post('/prompt', { prompt });
      assert.equal(r.status, 400);
      assert.equal(r.body.error.type, 'prompt_outputs_failed_validation');
      const e = r.body.node_errors['0'];
      assert.equal(e.errors[0].type, 'dependency_cycle');
      assert.equal(e.errors[0].message, 'Dependency cycle detected');
      assert.equal(e.errors[0].details, '0 (TestIntMathOperation) -> 1 (TestIntMathOperation) -> 0 (TestIntMathOperation)');
      assert.deepEqual(e.dependent_outputs, ['out']);
      // As the reference, the summary lists only the output's own errors, and the output failed through its input.
      assert.equal(r.body.error.details, '');
      assert.equal(r.body.node_errors['1'], undefined);
    });

    test('an async custom validator is awaited', async () => {
      const ok = await srv.http.post('/prompt', {
        prompt: { v: { class_type: 'TestAsyncValidation', inputs: { value: 7.0, threshold: 10.0 } }, o: { class_type: 'PreviewImage', inputs: { images: ['v', 0] } } },
      });
      assert.equal(ok.status, 200);
      const bad = await srv.http.post('/prompt', {
        prompt: { v: { class_type: 'TestAsyncValidation', inputs: { value: 17.0, threshold: 10.0 } }, o: { class_type: 'PreviewImage', inputs: { images: ['v', 0] } } },
      });
      assert.equal(bad.status, 400);
      assert.deepEqual(
        bad.body.node_errors.v.errors.map((e: any) => [e.type, e.details]),
        [
          ['custom_validation_failed', 'value - Value 17.0 exceeds threshold 10.0'],
          ['custom_validation_failed', 'threshold - Value 17.0 exceeds threshold 10.0'],
        ],
      );
    });

    test('an exception while validating a dependency is recorded on that node', async () => {
      const prompt = {
        '0': { class_type: 'ExceptionValidationSource', inputs: {} },
        '1': { class_type: 'ExceptionValidationLink', inputs: { value: ['0', 0] } },
        '2': { class_type: 'ExceptionValidationConsumer', inputs: { value: ['1', 0] } },
      };
      const r = await srv.http.post('/prompt', { prompt });
      assert.equal(r.status, 400);
      assert.deepEqual(Object.keys(r.body.node_errors), ['1']);
      const err = r.body.node_errors['1'].errors[0];
      assert.equal(err.type, 'exception_during_inner_validation');
      assert.equal(err.message, 'Exception when validating inner node');
      assert.equal(err.details, 'validation failed');
      assert.equal(err.extra_info.exception_message, 'validation failed');
      assert.equal(err.extra_info.input_name, 'value');
      assert.deepEqual(err.extra_info.linked_node, ['1', 0]);
      assert.deepEqual(r.body.node_errors['1'].dependent_outputs, ['2']);
      // The same exception in the output node itself is exception_during_validation.
      const r2 = await srv.http.post('/prompt', {
        prompt: { '0': prompt['0'], x: { class_type: 'ExceptionValidationLink', inputs: { value: ['0', 0] } }, o: { class_type: 'ExceptionValidationConsumer', inputs: { value: 5 } } },
      });
      assert.equal(r2.status, 200, 'the unlinked failing node is not validated');
    });

    test('the test pack is in object_info with the reference schemas', async () => {
      const r = await srv.http.get('/object_info');
      assert.equal(r.status, 200);
      const info = r.body;
      assert.deepEqual(info.TestLazyMixImages.input.required, { image1: ['IMAGE', { lazy: true }], image2: ['IMAGE', { lazy: true }], mask: ['MASK'] });
      assert.equal(info.TestLazyMixImages.display_name, 'Lazy Mix Images');
      assert.equal(info.TestLazyMixImages.category, 'Testing/Nodes');
      assert.equal(info.TestLazyMixImages.python_module, 'custom_nodes.testing-pack');
      assert.deepEqual(info.TestForLoopOpen.input.hidden, { initial_value0: ['*'] });
      assert.deepEqual(info.TestForLoopOpen.output, ['FLOW_CONTROL', 'INT', '*', '*', '*', '*']);
      assert.deepEqual(info.TestForLoopOpen.output_name, ['flow_control', 'remaining', 'value1', 'value2', 'value3', 'value4']);
      assert.deepEqual(info.TestWhileLoopClose.input.required.flow_control, ['FLOW_CONTROL', { rawLink: true }]);
      assert.deepEqual(info.TestMakeListNode.output_is_list, [true]);
      assert.equal(info.TestListToAccumulationNode.is_input_list, true);
      assert.deepEqual(info.StubImage.input.required.content, [['WHITE', 'BLACK', 'NOISE']]);
      assert.deepEqual(info.TestSleep.input.hidden, { unique_id: 'UNIQUE_ID' });
      assert.equal(info.TestParallelSleep.output_node, true);
      for (const name of [
        'TestVariadicAverage',
        'TestCustomIsChanged',
        'TestIsChangedWithConstants',
        'TestCustomValidation1',
        'TestCustomValidation5',
        'TestDynamicDependencyCycle',
        'TestMixedExpansionReturns',
        'TestSamplingInExpansion',
        'TestOutputNodeWithSocketOutput',
        'TestWhileLoopOpen',
        'TestExecutionBlocker',
        'TestAccumulateNode',
        'TestAccumulationHeadNode',
        'TestAccumulationTailNode',
        'TestAccumulationToListNode',
        'TestAccumulationGetLengthNode',
        'TestAccumulationGetItemNode',
        'TestAccumulationSetItemNode',
        'TestForLoopClose',
        'TestIntMathOperation',
        'TestIntConditions',
        'TestFloatConditions',
        'TestStringConditions',
        'TestToBoolNode',
        'TestBoolOperationNode',
        'StubConstantImage',
        'StubMask',
        'StubInt',
        'StubFloat',
        'StubStringOutput',
        'StubStringWithLength',
        'StubStringWithLengthNoFlag',
        'StubIntWithBounds',
        'StubComboWithOptions',
        'TestAsyncValidation',
        'TestAsyncError',
        'TestAsyncValidationError',
        'TestAsyncTimeout',
        'TestSyncError',
        'TestAsyncLazyCheck',
        'TestDynamicAsyncGeneration',
        'TestAsyncResourceUser',
        'TestAsyncBatchProcessing',
        'TestAsyncConcurrentLimit',
        'TestAsyncProgressUpdate',
        'TestSyncProgressUpdate',
      ]) {
        assert.ok(info[name], `${name} is registered`);
      }
      // Packs from custom_nodes load beside it.
      assert.equal(info.ExceptionValidationLink.python_module, 'custom_nodes.validation-pack');
    });

    test('accumulations, conditions and list nodes compute as the reference', async () => {
      const prompt = {
        a1: { class_type: 'TestAccumulateNode', inputs: { to_add: 1 } },
        a2: { class_type: 'TestAccumulateNode', inputs: { to_add: 2, accumulation: ['a1', 0] } },
        a3: { class_type: 'TestAccumulateNode', inputs: { to_add: 3, accumulation: ['a2', 0] } },
        head: { class_type: 'TestAccumulationHeadNode', inputs: { accumulation: ['a3', 0] } },
        tail: { class_type: 'TestAccumulationTailNode', inputs: { accumulation: ['a3', 0] } },
        len: { class_type: 'TestAccumulationGetLengthNode', inputs: { accumulation: ['a3', 0] } },
        item: { class_type: 'TestAccumulationGetItemNode', inputs: { accumulation: ['a3', 0], index: -1 } },
        set: { class_type: 'TestAccumulationSetItemNode', inputs: { accumulation: ['a3', 0], index: 0, value: 9 } },
        list: { class_type: 'TestAccumulationToListNode', inputs: { accumulation: ['set', 0] } },
        back: { class_type: 'TestListToAccumulationNode', inputs: { list: ['list', 0] } },
        div: { class_type: 'TestIntMathOperation', inputs: { a: -7, b: 2, operation: 'divide' } },
        mod: { class_type: 'TestIntMathOperation', inputs: { a: -7, b: 2, operation: 'modulo' } },
        re: { class_type: 'TestStringConditions', inputs: { a: 'Hello world', b: 'h.llo', operation: 'a MATCH REGEX(b)', case_sensitive: false } },
        bool: { class_type: 'TestToBoolNode', inputs: { value: ['len', 0], invert: true } },
        o1: { class_type: 'PreviewAny', inputs: { source: ['head', 1] } },
        o2: { class_type: 'PreviewAny', inputs: { source: ['tail', 1] } },
        o3: { class_type: 'PreviewAny', inputs: { source: ['len', 0] } },
        o4: { class_type: 'PreviewAny', inputs: { source: ['item', 0] } },
        o5: { class_type: 'PreviewAny', inputs: { source: ['back', 0] } },
        o6: { class_type: 'PreviewAny', inputs: { source: ['div', 0] } },
        o7: { class_type: 'PreviewAny', inputs: { source: ['mod', 0] } },
        o8: { class_type: 'PreviewAny', inputs: { source: ['re', 0] } },
        o9: { class_type: 'PreviewAny', inputs: { source: ['bool', 0] } },
      };
      const r = await client.run(prompt);
      const text = (id: string) => r.outputs[id].text[0];
      assert.equal(text('o1'), '1');
      assert.equal(text('o2'), '3');
      assert.equal(text('o3'), '3');
      assert.equal(text('o4'), '3');
      assert.equal(text('o5'), JSON.stringify({ accum: [9, 2, 3] }));
      assert.equal(text('o6'), '-4');
      assert.equal(text('o7'), '1');
      assert.equal(text('o8'), 'True');
      assert.equal(text('o9'), 'False');
    });
  });

  describe('without --enable-test-nodes', () => {
    let srv: Server;
    before(async () => {
      srv = await startEngineServer(storage, 'classic', { enableTestNodes: false });
    });
    after(async () => {
      await srv.close();
    });

    test('the test pack is not loaded', async () => {
      const r = await srv.http.get('/object_info');
      assert.equal(r.body.StubImage, undefined);
      const p = await srv.http.post('/prompt', { prompt: { 1: { class_type: 'StubInt', inputs: { value: 1 } } } });
      assert.equal(p.status, 400);
      assert.equal(p.body.error.type, 'missing_node_type');
    });
  });
});
