import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { gateEntered, gatePrompt, releaseGate, startWorkflow, textPrompt, waitJob, WsClient } from './helpers.ts';

forEachStorage('workflow prompts', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  before(async () => {
    srv = await startWorkflow(storage, {}, { packs: ['gate-pack.mjs'] });
  });
  after(async () => {
    await srv.close();
  });

  test('both path forms answer; GET /prompt shows queue_remaining', async () => {
    for (const p of ['/prompt', '/api/prompt']) {
      const r = await srv.http.get(p);
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.body.exec_info), ['queue_remaining']);
    }
  });

  test('missing prompt, bad prompt ids, unknown classes and no outputs get the reference error objects', async () => {
    let r = await srv.http.post('/prompt', {});
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { error: { type: 'no_prompt', message: 'No prompt provided', details: 'No prompt provided', extra_info: {} }, node_errors: {} });
    for (const bad of ['not-a-uuid', 'ABCDEF00-0000-4000-8000-000000000000', 5]) {
      r = await srv.http.post('/prompt', { prompt: textPrompt('x'), prompt_id: bad });
      assert.equal(r.status, 400);
      assert.equal(r.body.error.type, 'invalid_prompt_id');
      assert.deepEqual(r.body.node_errors, {});
    }
    r = await srv.http.post('/api/prompt', { prompt: { 5: { class_type: 'NoSuchNode', inputs: {}, _meta: { title: 'T' } } } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.error, {
      type: 'missing_node_type',
      message: "Node 'NoSuchNode' not found. The custom node may not be installed.",
      details: "Node ID '#5'",
      extra_info: { node_id: '5', class_type: 'NoSuchNode', node_title: 'T' },
    });
    r = await srv.http.post('/prompt', { prompt: { 1: { inputs: {} } } });
    assert.equal(r.body.error.type, 'missing_node_type');
    assert.equal(r.body.error.message, 'Prompt has no properly formatted class_type');
    r = await srv.http.post('/prompt', { prompt: { 1: { class_type: 'PrimitiveString', inputs: { value: 'x' } } } });
    assert.deepEqual(r.body.error, { type: 'prompt_no_outputs', message: 'Prompt has no outputs', details: '', extra_info: {} });
  });

  test('a prompt_id already taken is refused: nothing of the refused prompt runs, is sent or is recorded, and the next prompt runs', async () => {
    const cid = `d-${randomUUID()}`;
    const ws = new WsClient(srv.url, cid);
    await ws.opened;
    const pid = randomUUID();
    let r = await srv.http.post('/prompt', { prompt: textPrompt('first'), prompt_id: pid, client_id: cid });
    assert.equal(r.status, 200);
    await ws.promptDone(pid);
    const seen = ws.messages.length;
    // The runner is idle again: the prompt is handed to the engine as its row is stored, and the store fails.
    r = await srv.http.post('/prompt', { prompt: textPrompt('second'), prompt_id: pid, client_id: cid });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.type, 'invalid_prompt_id');
    const next = await srv.http.post('/prompt', { prompt: textPrompt('third'), client_id: cid });
    assert.equal(next.status, 200);
    await ws.promptDone(next.body.prompt_id);
    const later = ws.messages.slice(seen).filter((m) => m.type !== 'status');
    assert.ok(later.length > 0 && later.every((m) => m.data.prompt_id === next.body.prompt_id), JSON.stringify(later.map((m) => [m.type, m.data.prompt_id])));
    const h = await srv.http.get(`/history/${pid}`);
    assert.deepEqual(h.body[pid].outputs['2'], { text: ['first'] });
    ws.close();
  });

  test('per-input validation errors name the node, the input and the dependent outputs', async () => {
    const r = await srv.http.post('/prompt', {
      prompt: {
        1: { class_type: 'EmptyImage', inputs: { width: 0, height: 'tall', batch_size: 99999, color: 0 } },
        2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'v' } },
        3: { class_type: 'CaseConverter', inputs: { string: 'a', mode: 'shout' } },
        4: { class_type: 'PreviewAny', inputs: { source: ['3', 0] } },
        5: { class_type: 'StringLength', inputs: { string: ['1', 0] } },
        6: { class_type: 'PreviewAny', inputs: { source: ['5', 0] } },
        7: { class_type: 'StringConcatenate', inputs: { string_a: ['1'], string_b: 'x', delimiter: '' } },
        8: { class_type: 'PreviewAny', inputs: { source: ['7', 0] } },
      },
    });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.type, 'prompt_outputs_failed_validation');
    const e1 = r.body.node_errors['1'];
    assert.equal(e1.class_type, 'EmptyImage');
    assert.deepEqual(e1.dependent_outputs, ['2', '6']);
    assert.deepEqual(
      e1.errors.map((e: any) => [e.type, e.extra_info.input_name]),
      [
        ['value_smaller_than_min', 'width'],
        ['invalid_input_type', 'height'],
        ['value_bigger_than_max', 'batch_size'],
      ],
    );
    assert.equal(e1.errors[0].message, 'Value 0 smaller than min of 1');
    assert.equal(e1.errors[1].details, "height, tall, invalid literal for int() with base 10: 'tall'");
    const e3 = r.body.node_errors['3'].errors[0];
    assert.equal(e3.type, 'value_not_in_list');
    assert.equal(e3.details, "mode: 'shout' not in ['UPPERCASE', 'lowercase', 'Capitalize', 'Title Case']");
    const e5 = r.body.node_errors['5'].errors[0];
    assert.equal(e5.type, 'return_type_mismatch');
    assert.equal(e5.details, 'string, received_type(IMAGE) mismatch input_type(STRING)');
    assert.equal(r.body.node_errors['7'].errors[0].type, 'bad_linked_input');
    // The SaveImage output fails only through its input: it has no errors of its own.
    assert.equal(r.body.node_errors['2'], undefined);
  });

  test('required inputs, cycles, missing link sources', async () => {
    let r = await srv.http.post('/prompt', { prompt: { 1: { class_type: 'StringLength', inputs: {} }, 2: { class_type: 'PreviewAny', inputs: { source: ['1', 0] } } } });
    assert.deepEqual(r.body.node_errors['1'].errors[0], { type: 'required_input_missing', message: 'Required input is missing', details: 'string', extra_info: { input_name: 'string' } });
    r = await srv.http.post('/prompt', {
      prompt: {
        1: { class_type: 'StringConcatenate', inputs: { string_a: ['2', 0], string_b: 'b', delimiter: '' } },
        2: { class_type: 'StringConcatenate', inputs: { string_a: ['1', 0], string_b: 'b', delimiter: '' } },
        3: { class_type: 'PreviewAny', inputs: { source: ['2', 0] } },
      },
    });
    assert.equal(r.status, 400);
    const all = Object.values(r.body.node_errors).flatMap((n: any) => n.errors.map((e: any) => e.type));
    assert.ok(all.includes('dependency_cycle'), JSON.stringify(r.body));
    r = await srv.http.post('/prompt', { prompt: { 3: { class_type: 'PreviewAny', inputs: { source: ['404', 0] } } } });
    assert.equal(r.status, 400);
    assert.equal(r.body.node_errors['3'].errors[0].type, 'exception_during_validation');
  });

  test('partial success: the valid output runs, the failed one is reported with 200', async () => {
    const ws = new WsClient(srv.url, `c-${randomUUID()}`);
    await ws.opened;
    const r = await srv.http.post('/prompt', {
      client_id: (ws as any).ws.url.split('clientId=')[1],
      prompt: {
        1: { class_type: 'PrimitiveString', inputs: { value: 'ok' } },
        2: { class_type: 'PreviewAny', inputs: { source: ['1', 0] } },
        3: { class_type: 'StringLength', inputs: {} },
        4: { class_type: 'PreviewAny', inputs: { source: ['3', 0] } },
      },
    });
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body.node_errors), ['3']);
    const msgs = await ws.promptDone(r.body.prompt_id);
    const executed = msgs.filter((m) => m.type === 'executed').map((m) => m.data.node);
    assert.deepEqual(executed, ['2']);
    ws.close();
  });

  test('WebSocket: status with sid on connect, execution messages in order to the client only', async () => {
    const id = `c-${randomUUID()}`;
    const ws = new WsClient(srv.url, id);
    const other = new WsClient(srv.url, `o-${randomUUID()}`);
    await Promise.all([ws.opened, other.opened]);
    const first = await ws.until((ms) => ms.find((m) => m.type === 'status'));
    assert.equal(first.data.sid, id);
    assert.equal(typeof first.data.status.exec_info.queue_remaining, 'number');
    const r = await srv.http.post('/prompt', { prompt: textPrompt(`hello ${id}`), client_id: id });
    const msgs = await ws.promptDone(r.body.prompt_id);
    const types = msgs.map((m) => m.type).filter((t) => t !== 'progress_state');
    assert.deepEqual(types, ['execution_start', 'execution_cached', 'executing', 'executing', 'executed', 'execution_success', 'executing']);
    const executed = msgs.find((m) => m.type === 'executed')!;
    assert.deepEqual(executed.data, { node: '2', display_node: '2', output: { text: [`hello ${id}`] }, prompt_id: r.body.prompt_id });
    assert.deepEqual(msgs.at(-1)!.data, { node: null, prompt_id: r.body.prompt_id });
    const ps = msgs.filter((m) => m.type === 'progress_state').at(-1)!;
    assert.equal(ps.data.nodes['2'].state, 'finished');
    // The other socket saw status broadcasts but none of this prompt's messages.
    await other.until((ms) => ms.filter((m) => m.type === 'status').length >= 2);
    assert.equal(other.messages.filter((m) => m.data?.prompt_id === r.body.prompt_id).length, 0);
    ws.close();
    other.close();
  });

  test('an SDK that subscribes only after POST /prompt answered still sees its prompt finish', async () => {
    for (let i = 0; i < 20; i++) {
      const id = `late-${randomUUID()}`;
      const ws = new WsClient(srv.url, id, { listen: false });
      await ws.opened;
      const res = await fetch(`${srv.url}/prompt`, { method: 'POST', body: JSON.stringify({ prompt: textPrompt(`late ${i} ${id}`), client_id: id }) });
      const { prompt_id } = (await res.json()) as { prompt_id: string };
      ws.listen();
      const msgs = await ws.promptDone(prompt_id);
      assert.equal(msgs[0]!.type, 'execution_start');
      assert.ok(msgs.some((m) => m.type === 'execution_success'));
      ws.close();
    }
  });

  test('a client that opens its socket after the prompt finished still gets its messages', async () => {
    const id = `after-${randomUUID()}`;
    const r = await srv.http.post('/prompt', { prompt: textPrompt(`after ${id}`), client_id: id });
    await waitJob(srv.http, r.body.prompt_id);
    const ws = new WsClient(srv.url, id);
    const msgs = await ws.promptDone(r.body.prompt_id);
    assert.ok(msgs.some((m) => m.type === 'execution_success'));
    ws.close();
  });

  test('feature_flags handshake; reconnecting with the same clientId replaces the old socket', async () => {
    const id = `ff-${randomUUID()}`;
    const a = new WsClient(srv.url, id);
    await a.opened;
    a.send({ type: 'feature_flags', data: { supports_preview_metadata: true } });
    const ff = await a.until((ms) => ms.find((m) => m.type === 'feature_flags'));
    assert.equal(ff.data.supports_preview_metadata, true);
    assert.equal(typeof ff.data.max_upload_size, 'number');
    const b = new WsClient(srv.url, id);
    await b.opened;
    await a.until(() => a.closed || undefined);
    const r = await srv.http.post('/prompt', { prompt: textPrompt(`re ${id}`), client_id: id });
    const msgs = await b.promptDone(r.body.prompt_id);
    assert.ok(msgs.some((m) => m.type === 'execution_success'));
    b.close();
  });

  test('queue: priority order, front, GET /queue tuples, delete and clear of pending items', async () => {
    const g = `gate-${randomUUID()}`;
    const blocker = await srv.http.post('/prompt', { prompt: gatePrompt(g) });
    await gateEntered(g);
    const a = await srv.http.post('/prompt', { prompt: textPrompt(`a ${g}`), number: 100 });
    const b = await srv.http.post('/prompt', { prompt: textPrompt(`b ${g}`), number: 50 });
    const c = await srv.http.post('/prompt', { prompt: textPrompt(`c ${g}`), front: true });
    assert.ok(c.body.number < 0);
    const q = await srv.http.get('/api/queue');
    assert.deepEqual(q.body.queue_running.map((t: any[]) => t[1]), [blocker.body.prompt_id]);
    assert.deepEqual(q.body.queue_pending.map((t: any[]) => t[1]), [c.body.prompt_id, b.body.prompt_id, a.body.prompt_id]);
    const tuple = q.body.queue_pending[1];
    assert.equal(tuple.length, 5);
    assert.equal(tuple[0], 50);
    assert.deepEqual(tuple[4], ['2']);
    assert.equal(typeof tuple[3].create_time, 'number');
    let r = await srv.http.post('/queue', { delete: [a.body.prompt_id] });
    assert.equal(r.status, 200);
    r = await srv.http.get('/queue');
    assert.deepEqual(r.body.queue_pending.map((t: any[]) => t[1]), [c.body.prompt_id, b.body.prompt_id]);
    await srv.http.post('/api/queue', { clear: true });
    r = await srv.http.get('/queue');
    assert.equal(r.body.queue_pending.length, 0);
    assert.equal(r.body.queue_running.length, 1);
    releaseGate(g);
    const job = await waitJob(srv.http, blocker.body.prompt_id);
    assert.equal(job.status, 'completed');
    assert.equal((await srv.http.get(`/api/jobs/${a.body.prompt_id}`)).status, 404);
  });

  test('interrupt: a prompt id that is not running does nothing; the running one ends cancelled with execution_interrupted to all', async () => {
    const g = `int-${randomUUID()}`;
    const id = `i-${randomUUID()}`;
    const ws = new WsClient(srv.url, id);
    const other = new WsClient(srv.url, `x-${randomUUID()}`);
    await Promise.all([ws.opened, other.opened]);
    const r = await srv.http.post('/prompt', { prompt: gatePrompt(g), client_id: id });
    await gateEntered(g);
    await srv.http.post('/interrupt', { prompt_id: randomUUID() });
    const q = await srv.http.get('/queue');
    assert.equal(q.body.queue_running.length, 1);
    await srv.http.post('/api/interrupt', { prompt_id: r.body.prompt_id });
    const msgs = await ws.promptDone(r.body.prompt_id);
    const intr = msgs.find((m) => m.type === 'execution_interrupted')!;
    assert.equal(intr.data.node_id, 'g');
    assert.equal(intr.data.node_type, 'TestGate');
    await other.until((ms) => ms.find((m) => m.type === 'execution_interrupted' && m.data.prompt_id === r.body.prompt_id));
    const job = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(job.status, 'cancelled');
    // A global interrupt with no body also stops the running prompt.
    const g2 = `int2-${randomUUID()}`;
    const r2 = await srv.http.post('/prompt', { prompt: gatePrompt(g2) });
    await gateEntered(g2);
    await srv.http.request('POST', '/interrupt');
    assert.equal((await waitJob(srv.http, r2.body.prompt_id)).status, 'cancelled');
    ws.close();
    other.close();
  });

  test('node errors become execution_error with the reference fields; the worker keeps going', async () => {
    const id = `e-${randomUUID()}`;
    const ws = new WsClient(srv.url, id);
    await ws.opened;
    const r = await srv.http.post('/prompt', {
      client_id: id,
      prompt: {
        1: { class_type: 'MathExpression', inputs: { expression: '1/0' } },
        2: { class_type: 'PreviewAny', inputs: { source: ['1', 0] } },
      },
    });
    const msgs = await ws.promptDone(r.body.prompt_id);
    const err = msgs.find((m) => m.type === 'execution_error')!;
    assert.equal(err.data.node_id, '1');
    assert.equal(err.data.node_type, 'MathExpression');
    assert.equal(err.data.exception_type, 'ValueError');
    assert.equal(err.data.exception_message, 'division by zero\n');
    assert.ok(Array.isArray(err.data.traceback));
    assert.deepEqual(err.data.current_inputs, { expression: ['1/0'] });
    assert.deepEqual(err.data.executed, []);
    const job = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(job.status, 'failed');
    assert.equal(job.execution_error.exception_type, 'ValueError');
    const ok = await srv.http.post('/prompt', { prompt: textPrompt(`after error ${id}`) });
    assert.equal((await waitJob(srv.http, ok.body.prompt_id)).status, 'completed');
    ws.close();
  });

  test('an unchanged re-queued prompt runs nothing and reports every node cached; /free empties the cache', async () => {
    const id = `cache-${randomUUID()}`;
    const ws = new WsClient(srv.url, id);
    await ws.opened;
    const prompt = textPrompt(`cached ${id}`);
    const r1 = await srv.http.post('/prompt', { prompt, client_id: id });
    await ws.promptDone(r1.body.prompt_id);
    const r2 = await srv.http.post('/prompt', { prompt, client_id: id });
    const m2 = await ws.promptDone(r2.body.prompt_id);
    assert.deepEqual(m2.find((m) => m.type === 'execution_cached')!.data.nodes.sort(), ['1', '2']);
    assert.equal(m2.filter((m) => m.type === 'executing' && m.data.node !== null).length, 0);
    assert.deepEqual(m2.find((m) => m.type === 'executed')!.data.output, { text: [`cached ${id}`] });
    // Same subgraph under other ids hits the same entries.
    const renamed = { a: { class_type: 'PrimitiveString', inputs: { value: `cached ${id}` } }, b: { class_type: 'PreviewAny', inputs: { source: ['a', 0] } } };
    const r3 = await srv.http.post('/prompt', { prompt: renamed, client_id: id });
    const m3 = await ws.promptDone(r3.body.prompt_id);
    assert.deepEqual(m3.find((m) => m.type === 'execution_cached')!.data.nodes.sort(), ['a', 'b']);
    await srv.http.post('/free', { free_memory: true });
    const r4 = await srv.http.post('/prompt', { prompt, client_id: id });
    const m4 = await ws.promptDone(r4.body.prompt_id);
    assert.deepEqual(m4.find((m) => m.type === 'execution_cached')!.data.nodes, []);
    ws.close();
  });

  test('history and jobs: shapes, filters, pagination, deletion, removed /api/job paths', async () => {
    const a = await srv.http.post('/prompt', { prompt: textPrompt(`h1 ${randomUUID()}`), extra_data: { extra_pnginfo: { workflow: { id: 'wf-1' } } } });
    const b = await srv.http.post('/prompt', { prompt: { 1: { class_type: 'MathExpression', inputs: { expression: 'nope(' } }, 2: { class_type: 'PreviewAny', inputs: { source: ['1', 0] } } } });
    await waitJob(srv.http, a.body.prompt_id);
    await waitJob(srv.http, b.body.prompt_id);
    let r = await srv.http.get(`/history/${a.body.prompt_id}`);
    const h = r.body[a.body.prompt_id];
    assert.equal(h.prompt[1], a.body.prompt_id);
    assert.deepEqual(h.outputs['2'].text.length, 1);
    assert.equal(h.status.status_str, 'success');
    assert.equal(h.status.completed, true);
    assert.deepEqual(h.status.messages.map((m: any[]) => m[0]), ['execution_start', 'execution_cached', 'execution_success']);
    assert.equal(h.meta['2'].display_node, '2');
    r = await srv.http.get(`/api/history/${randomUUID()}`);
    assert.deepEqual(r.body, {});
    r = await srv.http.get('/history?max_items=1');
    assert.deepEqual(Object.keys(r.body), [b.body.prompt_id]);
    r = await srv.http.get('/api/jobs?status=completed,failed&limit=1&offset=0&sort_order=desc');
    assert.equal(r.body.jobs.length, 1);
    assert.equal(r.body.pagination.limit, 1);
    assert.equal(r.body.pagination.has_more, true);
    r = await srv.http.get('/api/jobs?workflow_id=wf-1');
    assert.deepEqual(r.body.jobs.map((j: any) => j.id), [a.body.prompt_id]);
    assert.equal(r.body.jobs[0].workflow_id, 'wf-1');
    r = await srv.http.get('/api/jobs?status=done');
    assert.equal(r.status, 400);
    assert.match(r.body.error, /^Invalid status value/);
    r = await srv.http.get('/api/jobs?limit=abc');
    assert.equal(r.status, 400);
    r = await srv.http.get(`/api/jobs/${b.body.prompt_id}`);
    assert.equal(r.body.status, 'failed');
    assert.equal(r.body.execution_status.status_str, 'error');
    assert.ok(r.body.workflow.prompt['1']);
    r = await srv.http.get(`/api/jobs/${randomUUID()}`);
    assert.deepEqual([r.status, r.body], [404, { error: 'Job not found' }]);
    r = await srv.http.get(`/api/job/${a.body.prompt_id}/outputs`);
    assert.equal(r.status, 404);
    assert.match(r.body.error, /\/api\/jobs\/\{?/);
    await srv.http.post('/history', { delete: [a.body.prompt_id] });
    assert.deepEqual((await srv.http.get(`/history/${a.body.prompt_id}`)).body, {});
  });
});
