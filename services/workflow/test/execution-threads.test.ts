import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { forEachStorage, type StorageKind } from '@svc/testkit';
import { TEST_LIMITS, signupUser } from './cloud-helpers.ts';
import { gateEntered, gatePrompt, releaseGate, startWorkflow, textPrompt, waitJob, WsClient, type Msg } from './helpers.ts';

/**
 * Prompts execute in execution threads (src/threads): node code that
 * computes without yielding, throws, loops forever, exhausts its heap or
 * expands without end ends its prompt with an execution_error or an
 * interrupt, never the service, and the API keeps answering meanwhile.
 */

// The threads start from the TypeScript sources here (src/threads/source-entry.mjs), as under `tsx src/main.ts`; the
// other files start them from the bundle npm start runs (helpers.ts, bundledThreads). This file's packs
// (hostile-pack.mjs, native-pack.mjs) import the service's TypeScript sources, which a bundled thread cannot load:
// from the bundle its prompts never started.
process.env.WORKFLOW_TEST_THREADS = 'source';

type Server = Awaited<ReturnType<typeof startWorkflow>>;

const spin = (ms: number, checked = false) => ({ s: { class_type: 'TestSpin', inputs: { ms, checked } } });

async function queue(srv: Server, prompt: Record<string, unknown>, clientId: string): Promise<string> {
  const r = await srv.http.post('/prompt', { prompt, client_id: clientId });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.prompt_id as string;
}

function ending(msgs: Msg[], id: string): Msg | undefined {
  return msgs.find((m) => ['execution_success', 'execution_error', 'execution_interrupted'].includes(m.type) && m.data.prompt_id === id);
}

async function started(ws: WsClient, id: string, node: string): Promise<void> {
  await ws.until((ms) => ms.some((m) => m.type === 'executing' && m.data.prompt_id === id && m.data.node === node));
}

/** A trivial prompt runs to success: the slot is usable after whatever came before. */
async function stillRuns(srv: Server, _ws: WsClient, tag: string): Promise<void> {
  const id = await queue(srv, textPrompt(`after ${tag}`), 'after');
  const job = await waitJob(srv.http, id);
  assert.equal(job.status, 'completed', JSON.stringify(job));
}

forEachStorage('execution threads', (storage: StorageKind) => {
  let srv: Server;
  let ws: WsClient;

  before(async () => {
    srv = await startWorkflow(storage, {}, { packs: ['hostile-pack.mjs', 'native-pack.mjs'] });
    ws = new WsClient(srv.url, 'threads');
    await ws.opened;
  });
  after(async () => {
    ws.close();
    await srv.close();
  });

  test('execution threads run nicer than the thread that answers requests (Linux)', { skip: process.platform !== 'linux' }, async () => {
    await stillRuns(srv, ws, 'nice');
    const niceOf = (task: string) => Number(fs.readFileSync(`/proc/self/task/${task}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]);
    const base = niceOf(String(process.pid));
    const tasks = fs.readdirSync('/proc/self/task').map((t) => ({ t, nice: niceOf(t) }));
    assert.ok(tasks.some((x) => x.nice === Math.min(19, base + 5)), JSON.stringify(tasks));
  });

  test('the API and WebSockets answer while a node computes for seconds without yielding', async () => {
    const id = await queue(srv, spin(60_000), 'threads');
    await started(ws, id, 's');
    // Requests made while the node is known to be running: each must be answered while it still runs.
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      const r = await srv.http.get('/api/system_stats');
      latencies.push(performance.now() - t);
      assert.equal(r.status, 200);
    }
    // A WebSocket round trip: a new socket gets its status greeting.
    const other = new WsClient(srv.url, 'other');
    await other.until((ms) => ms.some((m) => m.type === 'status'));
    other.close();
    // Another client can queue meanwhile (it waits for the slot).
    const queued = await queue(srv, textPrompt('queued behind'), 'threads');
    assert.equal(ending(ws.messages, id), undefined, 'the spinning prompt is still running');
    latencies.sort((a, b) => a - b);
    assert.ok(latencies[Math.floor(latencies.length / 2)]! < 500, `median ${latencies[10]} ms`);
    // The node never checks for interrupts: its thread is terminated and replaced.
    const t = performance.now();
    assert.equal((await srv.http.post('/interrupt', { prompt_id: id })).status, 200);
    await ws.until((ms) => ending(ms, id));
    const took = performance.now() - t;
    const end = ending(ws.messages, id)!;
    assert.equal(end.type, 'execution_interrupted');
    assert.equal(end.data.node_id, 's');
    assert.equal(end.data.node_type, 'TestSpin');
    assert.ok(took < 5_000, `interrupt took ${took} ms`);
    const job = await waitJob(srv.http, id);
    assert.equal(job.status, 'cancelled');
    // The prompt queued behind it runs on the fresh thread.
    assert.equal((await waitJob(srv.http, queued)).status, 'completed');
  });

  test('a node that checks for interrupts stops at its next check', async () => {
    const id = await queue(srv, spin(60_000, true), 'threads');
    await started(ws, id, 's');
    await srv.http.post('/interrupt', {});
    await ws.until((ms) => ending(ms, id));
    assert.equal(ending(ws.messages, id)!.type, 'execution_interrupted');
    await stillRuns(srv, ws, 'checked interrupt');
  });

  test('an interrupt while a node is inside a long ONNX Runtime call (a model step) ends the prompt at once; the service lives on', async () => {
    // The thread cannot take the interrupt until the call returns; it is replaced now and terminated only once the
    // call has returned (terminated inside it, the whole process would abort).
    const id = await queue(srv, { n: { class_type: 'TestNativeSpin', inputs: { size: 800, count: 40, name: 'native-interrupt' } } }, 'threads');
    await gateEntered('native-interrupt');
    await srv.http.post('/interrupt', {});
    await ws.until((ms) => ending(ms, id));
    assert.equal(ending(ws.messages, id)!.type, 'execution_interrupted');
    await stillRuns(srv, ws, 'native interrupt');
  });

  test('the prompt after an interrupted model step waits until the replaced thread has left its step', { skip: storage === 'postgres' && 'the same on both storages' }, async () => {
    // Otherwise it could load the same model in the new thread while the old one still holds it (two copies). The
    // step outlasts a new thread's start from the sources (seconds under tsx), so an early start would be seen.
    const dir = fs.mkdtempSync(path.join(srv.cfg.dataDir, 'hold-'));
    const mark = path.join(dir, 'step');
    const id = await queue(srv, { n: { class_type: 'TestNativeSpin', inputs: { size: 800, count: 150, name: mark } } }, 'threads');
    while (!fs.existsSync(mark)) await new Promise((res) => setTimeout(res, 10));
    await srv.http.post('/interrupt', {});
    await ws.until((ms) => ending(ms, id));
    assert.equal(ending(ws.messages, id)!.type, 'execution_interrupted');
    const next = await queue(srv, textPrompt('after the held step'), 'threads');
    await ws.until((ms) => ms.some((m) => m.type === 'execution_start' && m.data.prompt_id === next));
    assert.ok(fs.existsSync(`${mark}.returned`), 'the next prompt started while the replaced thread was still inside its step');
    assert.equal((await waitJob(srv.http, next)).status, 'completed');
  });

  test("a thread terminated while its node runs a child process: the child is killed with it", async () => {
    const dir = fs.mkdtempSync(path.join(srv.cfg.dataDir, 'child-'));
    const pidFile = path.join(dir, 'pid');
    const bin = path.join(dir, 'child.sh');
    fs.writeFileSync(bin, `#!/bin/sh\necho $$ > '${pidFile}'\nexec sleep 120\n`, { mode: 0o755 });
    const id = await queue(srv, { c: { class_type: 'TestChildThenSpin', inputs: { bin, pid_file: pidFile } } }, 'threads');
    while (!fs.existsSync(pidFile) || fs.readFileSync(pidFile, 'utf8').trim() === '') await new Promise((res) => setTimeout(res, 10));
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    await srv.http.post('/interrupt', {});
    await ws.until((ms) => ending(ms, id));
    assert.equal(ending(ws.messages, id)!.type, 'execution_interrupted');
    // Killed: gone, or a zombie (its thread, which would have reaped it, was terminated).
    const running = () => {
      try {
        return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
      } catch {
        return false;
      }
    };
    while (running()) await new Promise((res) => setTimeout(res, 10));
    await stillRuns(srv, ws, 'child process');
  });

  test('a node that throws fails its prompt with the reference fields', async () => {
    const id = await queue(srv, { t: { class_type: 'TestThrow', inputs: { message: 'kaboom' } } }, 'threads');
    await ws.until((ms) => ending(ms, id));
    const end = ending(ws.messages, id)!;
    assert.equal(end.type, 'execution_error');
    assert.equal(end.data.node_id, 't');
    assert.equal(end.data.node_type, 'TestThrow');
    assert.equal(end.data.exception_message, 'kaboom\n');
    assert.equal(end.data.exception_type, 'Error');
    assert.ok(Array.isArray(end.data.traceback));
    assert.deepEqual(end.data.current_inputs, { message: ['kaboom'] });
    await stillRuns(srv, ws, 'throw');
  });

  test('UI outputs are what JSON keeps: a function is dropped, a BigInt fails the node', async () => {
    const fn = await queue(srv, { u: { class_type: 'TestOddUi', inputs: { kind: 'function' } } }, 'threads');
    await ws.until((ms) => ending(ms, fn));
    assert.equal(ending(ws.messages, fn)!.type, 'execution_success');
    const executed = ws.messages.find((m) => m.type === 'executed' && m.data.prompt_id === fn)!;
    assert.deepEqual(executed.data.output, { text: ['kept', null], self: [{ nested: { ok: true } }] });
    // History is written before `executing` with node null (as the reference's); execution_success comes earlier.
    await ws.until((ms) => ms.some((m) => m.type === 'executing' && m.data.node === null && m.data.prompt_id === fn));
    const h = await srv.http.get(`/history/${fn}`);
    assert.deepEqual(h.body[fn].outputs.u, { text: ['kept', null], self: [{ nested: { ok: true } }] });
    const big = await queue(srv, { u: { class_type: 'TestOddUi', inputs: { kind: 'bigint' } } }, 'threads');
    await ws.until((ms) => ending(ms, big));
    const end = ending(ws.messages, big)!;
    assert.equal(end.type, 'execution_error');
    assert.equal(end.data.exception_type, 'TypeError');
    assert.match(end.data.exception_message, /UI output is not JSON/);
    await stillRuns(srv, ws, 'odd ui');
  });

  test('outputs past their bound fail the prompt, which is recorded as ended', async () => {
    // 70 outputs of 1 MB each: past the default 64 MB.
    const id = await queue(srv, { b: { class_type: 'TestBigText', inputs: { chars: 1_000_000, copies: 70 } } }, 'threads');
    await ws.until((ms) => ending(ms, id));
    const end = ending(ws.messages, id)!;
    assert.equal(end.type, 'execution_error');
    assert.equal(end.data.exception_type, 'PromptLimitExceeded');
    assert.match(end.data.exception_message, /max_output_bytes/);
    const job = await waitJob(srv.http, id);
    assert.equal(job.status, 'failed');
    await stillRuns(srv, ws, 'outputs');
  });
});

forEachStorage('execution thread limits', (storage: StorageKind) => {
  let srv: Server;
  let ws: WsClient;

  before(async () => {
    srv = await startWorkflow(storage, { promptMemoryLimit: '96', maxExpandedNodes: '500', maxExpansionDepth: '50', maxOutputItems: '10' }, { packs: ['hostile-pack.mjs'] });
    ws = new WsClient(srv.url, 'limits');
    await ws.opened;
  });
  after(async () => {
    ws.close();
    await srv.close();
  });

  test('a node that exhausts its heap ends with MemoryError; the service lives on', async () => {
    const id = await queue(srv, { h: { class_type: 'TestHog', inputs: {} } }, 'limits');
    await ws.until((ms) => ending(ms, id));
    const end = ending(ws.messages, id)!;
    assert.equal(end.type, 'execution_error');
    assert.equal(end.data.exception_type, 'MemoryError');
    assert.equal(end.data.node_id, 'h');
    assert.equal((await srv.http.get('/api/system_stats')).status, 200);
    await stillRuns(srv, ws, 'memory');
  });

  test('a node that expands into itself ends at the expansion bounds', async () => {
    const deep = await queue(srv, { e: { class_type: 'TestSelfExpand', inputs: { n: 0 } } }, 'limits');
    await ws.until((ms) => ending(ms, deep));
    let end = ending(ws.messages, deep)!;
    assert.equal(end.type, 'execution_error', JSON.stringify(end));
    assert.equal(end.data.exception_type, 'PromptLimitExceeded');
    assert.equal(end.data.node_id, 'e');
    assert.equal(end.data.exception_message, 'Node expansion nested deeper than 50 levels (max_expansion_depth)\n');
    assert.equal((await waitJob(srv.http, deep)).status, 'failed');
    const wide = await queue(srv, { e: { class_type: 'TestSelfExpand', inputs: { n: 0, width: 100 } } }, 'limits');
    await ws.until((ms) => ending(ms, wide));
    end = ending(ws.messages, wide)!;
    assert.equal(end.data.exception_type, 'PromptLimitExceeded');
    assert.equal(end.data.exception_message, 'Node expansions added more than 500 nodes to the prompt (max_expanded_nodes)\n');
    await stillRuns(srv, ws, 'expansion');
  });

  test('configured bounds: output items', async () => {
    const o = await queue(srv, { b: { class_type: 'TestBigText', inputs: { chars: 1, copies: 11 } } }, 'limits');
    await ws.until((ms) => ending(ms, o));
    assert.match(ending(ws.messages, o)!.data.exception_message, /exceed 10 items \(max_output_items\)/);
  });
});

forEachStorage('execution time limit', (storage: StorageKind) => {
  let srv: Server;
  let ws: WsClient;
  before(async () => {
    srv = await startWorkflow(storage, { promptTimeLimit: '1' }, { packs: ['hostile-pack.mjs'] });
    ws = new WsClient(srv.url, 'timed');
    await ws.opened;
  });
  after(async () => {
    ws.close();
    await srv.close();
  });

  test('a prompt that runs past --prompt-time-limit ends with an execution_error', async () => {
    const id = await queue(srv, spin(600_000), 'timed');
    await ws.until((ms) => ending(ms, id));
    const end = ending(ws.messages, id)!;
    assert.equal(end.type, 'execution_error');
    assert.equal(end.data.exception_type, 'TimeoutError');
    assert.equal(end.data.node_id, 's');
    assert.match(end.data.exception_message, /time limit of 1 s/);
    assert.equal((await waitJob(srv.http, id)).status, 'failed');
    await stillRuns(srv, ws, 'time limit');
  });

});

forEachStorage('execution slots', (storage: StorageKind) => {
  test('with two execution threads a trivial prompt finishes while a long one runs; the cache is kept per owner', async () => {
    const srv = await startWorkflow(storage, { executionThreads: '2' }, { packs: ['hostile-pack.mjs'] });
    const ws = new WsClient(srv.url, 'slots');
    try {
      await ws.opened;
      const long = await queue(srv, spin(60_000, true), 'slots');
      await started(ws, long, 's');
      const quick = await queue(srv, textPrompt('quick'), 'slots');
      await ws.until((ms) => ending(ms, quick));
      assert.equal(ending(ws.messages, quick)!.type, 'execution_success');
      assert.equal(ending(ws.messages, long), undefined, 'the long prompt still runs');
      // The same prompt again: served from the cache of the slot that ran it.
      const again = await queue(srv, textPrompt('quick'), 'slots');
      await ws.until((ms) => ending(ms, again));
      const cached = ws.messages.find((m) => m.type === 'execution_cached' && m.data.prompt_id === again)!;
      assert.deepEqual(cached.data.nodes.sort(), ['1', '2']);
      await srv.http.post('/interrupt', { prompt_id: long });
      await ws.until((ms) => ending(ms, long));
    } finally {
      ws.close();
      await srv.close();
    }
  });
});

forEachStorage('execution slots in the hosted runtime', (storage: StorageKind) => {
  test("one workspace's long prompt does not hold another's; max_concurrent_jobs holds the workspace's next", async () => {
    const srv = await startWorkflow(storage, { runtime: 'cloud', authRateLimits: TEST_LIMITS, executionThreads: '2', maxConcurrentJobs: '1' }, { packs: ['gate-pack.mjs'] });
    const gate = `fair-${storage}-${process.pid}`;
    try {
      const a = await signupUser(srv.url, 'fair-a');
      const b = await signupUser(srv.url, 'fair-b');
      const long = (await a.http.post('/api/prompt', { prompt: gatePrompt(gate) })).body.prompt_id;
      await gateEntered(gate);
      const aNext = (await a.http.post('/api/prompt', { prompt: textPrompt('a waits its turn') })).body.prompt_id;
      const bQuick = (await b.http.post('/api/prompt', { prompt: textPrompt('b runs now') })).body.prompt_id;
      assert.equal((await waitJob(b.http, bQuick)).status, 'completed');
      // A's second prompt is still queued: its one slot is A's long prompt.
      assert.equal((await a.http.get(`/api/jobs/${aNext}`)).body.status, 'pending');
      assert.equal((await a.http.get(`/api/jobs/${long}`)).body.status, 'in_progress');
      releaseGate(gate);
      assert.equal((await waitJob(a.http, long)).status, 'completed');
      assert.equal((await waitJob(a.http, aNext)).status, 'completed');
    } finally {
      releaseGate(gate);
      await srv.close();
    }
  });
});

forEachStorage('an execution thread that cannot start', (storage: StorageKind) => {
  test('a node whose pack loads in the server but not in the execution thread fails its prompt with a clear error', { skip: storage === 'postgres' && 'the same on both storages' }, async () => {
    const srv = await startWorkflow(storage, {}, { packs: ['thread-refused-pack.mjs'] });
    const ws = new WsClient(srv.url, 'refused');
    try {
      await ws.opened;
      const id = await queue(srv, { n: { class_type: 'ThreadRefusedNode', inputs: { v: 3 } } }, 'refused');
      await ws.until((ms) => ending(ms, id));
      const end = ending(ws.messages, id)!;
      assert.equal(end.type, 'execution_error');
      assert.equal(end.data.node_id, 'n');
      assert.equal(end.data.node_type, 'ThreadRefusedNode');
      assert.equal(end.data.exception_type, 'RuntimeError');
      assert.match(end.data.exception_message, /node type ThreadRefusedNode is not loaded where prompts run \(its pack failed to load in the execution thread/);
      await stillRuns(srv, ws, 'refused');
    } finally {
      ws.close();
      await srv.close();
    }
  });

  test('prompts fail with ExecutionThreadDied, the API answers, and the next prompt tries a new thread', async () => {
    const srv = await startWorkflow(storage, {}, { packs: ['thread-exit-pack.mjs'] });
    const ws = new WsClient(srv.url, 'dead');
    try {
      await ws.opened;
      for (const tag of ['first', 'second']) {
        const id = await queue(srv, textPrompt(tag), 'dead');
        await ws.until((ms) => ending(ms, id));
        const end = ending(ws.messages, id)!;
        assert.equal(end.type, 'execution_error');
        assert.equal(end.data.exception_type, 'ExecutionThreadDied');
        assert.match(end.data.exception_message, /could not start|exited/);
        assert.equal((await waitJob(srv.http, id)).status, 'failed');
        assert.equal((await srv.http.get('/api/system_stats')).status, 200);
      }
    } finally {
      ws.close();
      await srv.close();
    }
  });
});
