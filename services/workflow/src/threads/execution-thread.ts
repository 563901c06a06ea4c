/**
 * Entry of an execution thread: builds the node registry and an engine with
 * its own output cache, then runs the prompts the main thread sends, one at a
 * time. Node code runs here, so a node that computes for seconds never holds
 * the thread that answers HTTP and WebSockets.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { Executor, InterruptSignal, type ExecutionSink } from '../engine/executor.ts';
import type { ProgressRegistry } from '../engine/progress.ts';
import type { NodeEnv } from '../nodes/api.ts';
import { configurePreviews } from '../models/preview.ts';
import { configureModelMemory, configureRuntime, onLoadedModelsChange, unloadAll } from '../models/sd1.ts';
import { shareNativeCallCount } from '../models/native-calls.ts';
import { shareChildList } from '../processes/child-processes.ts';
import { configureDevice } from '../models/session.ts';
import { configurePrecision } from '../models/precision.ts';
import { simdKernels } from '../nodes/simd-kernels.ts';
import { retainFreedMemory } from '../heap/malloc-retain.ts';
import { collectYoungGeneration, externalMemory } from '../heap/young-gc.ts';
import { buildRegistry } from './node-registry.ts';
import type { EnvCall, FromThread, RunEnd, RunEvent, ThreadInit, ToThread } from './protocol.ts';

const port = parentPort!;
const init = workerData as ThreadInit;

lowerPriority(init.config.execution?.nice ?? 0);
if (init.config.preview) configurePreviews(init.config.preview);
configureModelMemory((init.config.maxModelMemoryMb ?? 0) * 2 ** 20);
// The main thread probed the device at start-up.
if (init.config.device) configureDevice(init.config.device);
if (init.config.precision) configurePrecision(init.config.precision);
// Sessions' folders and checkpoints' float32 copies: beside the models (a hard link must reach them), not in a RAM-backed /tmp.
configureRuntime({ workDir: path.join(init.config.dirs.temp, 'models') });
onLoadedModelsChange((models) => post({ t: 'models', models }));

/**
 * Makes this thread nicer than the process (Linux: setpriority on the thread's own id). Waking an idle thread
 * of equal priority lets it preempt the waker on a busy core: the main thread, in the middle of answering a
 * request, would wait for the prompt it has just handed over.
 */
function lowerPriority(nice: number): void {
  if (nice <= 0 || process.platform !== 'linux') return;
  try {
    const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) os.setPriority(tid, Math.min(19, os.getPriority(tid) + nice));
  } catch {
    // No /proc, or not allowed: the thread keeps the process's priority.
  }
}
const interruptFlag = new Int32Array(init.interruptFlag);
const holdFlag = new Int32Array(init.holdFlag);
shareNativeCallCount(init.nativeCalls);
shareChildList(init.childPids);

/** A run handed over while its prompt is being stored waits here (a fraction of a millisecond): true once stored, false if it never will be. */
function waitStored(seq: number): boolean {
  for (;;) {
    const v = Atomics.load(holdFlag, 0);
    if (v === seq) return true;
    if (v === -seq) return false;
    Atomics.wait(holdFlag, 0, v, 1_000);
  }
}

function post(m: FromThread): void {
  port.postMessage(m);
}

// The main thread logs what it loads itself; a pack that fails only here (its module refuses a worker thread) is
// reported to it, since its nodes validate there and then cannot run here.
const threadLog = {
  info() {},
  warn(data: object, msg: string) {
    post({ t: 'log', level: 'warn', msg: `${msg} in an execution thread`, data: data as Record<string, unknown> });
  },
};
const registry = await buildRegistry(init.config, threadLog);
// The image kernels' WebAssembly compiles now, while the thread is idle, not inside a prompt's first resize or blur.
simdKernels();
// Freed planes stay mapped for the next prompt (heap/malloc-retain.ts).
retainFreedMemory();
const executor = new Executor(registry, init.config.cache, init.limits);

/** Calls of env functions waiting for the main thread's reply. */
const calls = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
let nextCall = 1;
let running: { seq: number; interrupt: InterruptSignal } | null = null;

function callMain(seq: number, fn: EnvCall, args: unknown[]): Promise<unknown> {
  const id = nextCall++;
  return new Promise((resolve, reject) => {
    calls.set(id, { resolve, reject });
    post({ t: 'call', seq, id, fn, args });
  });
}

/** Progress is sent at most this often while a node runs (the main thread throttles what reaches sockets). */
const PROGRESS_GAP_MS = 20;

/**
 * A run's sink: events are batched and posted together, at the latest when
 * the thread next turns its event loop. A node's `executing` message, a
 * preview and progress due are posted at once, before a node that may
 * compute for a long time without letting the loop turn.
 */
/** How long each node class last took here (ms): the `executing` message of a class known to be quick may wait for the batch. */
const classMs = new Map<string, number>();
const QUICK_MS = 1;

function sinkFor(seq: number, client: boolean, prompt: Record<string, { class_type?: unknown } | undefined>): ExecutionSink & { flush(end?: RunEnd): void } {
  const startedAt = new Map<string, number>();
  const classOf = (id: string): string | undefined => {
    const c = Object.hasOwn(prompt, id) ? prompt[id]?.class_type : undefined;
    return typeof c === 'string' ? c : undefined;
  };
  let events: RunEvent[] = [];
  let state: ProgressRegistry | null = null;
  let scheduled = false;
  let lastFlush = 0;
  /** Posts what is pending; with `end`, the run's verdict goes in the same message (one crossing for a short prompt). */
  const flush = (end?: RunEnd) => {
    if (state) {
      const changes = state.takeChanges();
      if (changes.length) events.push(['state', changes]);
      state = null;
    }
    if (events.length === 0 && end === undefined) return;
    const batch = events;
    events = [];
    lastFlush = performance.now();
    port.postMessage({ t: 'events', seq, events: batch, end } satisfies FromThread);
  };
  const later = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      flush();
    });
  };
  return {
    flush: (end?: RunEnd) => flush(end),
    send(type, data, broadcast, history) {
      events.push(['send', type, data, broadcast === true, history === true]);
      if (type !== 'executing' || typeof data.node !== 'string') return later();
      startedAt.set(data.node, performance.now());
      const cls = classOf(data.node);
      // A node that may compute for long must have its `executing` out before it starts.
      if (cls === undefined || (classMs.get(cls) ?? Infinity) >= QUICK_MS) flush();
      else later();
    },
    progress(data) {
      if (!client) return;
      events.push(['progress', data]);
      if (performance.now() - lastFlush >= PROGRESS_GAP_MS) flush();
      else later();
    },
    progressState(reg) {
      if (!client) return;
      state = reg as ProgressRegistry;
      later();
    },
    preview(image, format, meta) {
      if (!client) return;
      // A copy of exactly its bytes (a clone of a view carries its whole buffer), cloned and not moved to the
      // main thread: moving detaches the buffer here, and a thread's first detach makes V8 drop every optimised
      // function that reads a typed array (nodes/simd-kernels.ts, INITIAL_PAGES). A preview is a small encoded picture.
      events.push(['preview', Uint8Array.prototype.slice.call(image), format, meta]);
      flush();
    },
    recorded(id, executed, ui) {
      events.push(['recorded', id, executed, ui]);
      const t = startedAt.get(id);
      const cls = classOf(id);
      if (executed && t !== undefined && cls !== undefined) classMs.set(cls, performance.now() - t);
      later();
    },
  };
}

async function run(m: Extract<ToThread, { t: 'run' }>): Promise<void> {
  if (m.held && !waitStored(m.seq)) {
    // Never stored (its POST failed): nothing runs; the main thread discards the run.
    post({ t: 'events', seq: m.seq, events: [], end: { status: 'error', interrupted: false } });
    return;
  }
  const interrupt = new InterruptSignal(() => Atomics.load(interruptFlag, 0) === m.seq);
  running = { seq: m.seq, interrupt };
  const sink = sinkFor(m.seq, m.client, m.prompt as Record<string, { class_type?: unknown } | undefined>);
  const env: Omit<NodeEnv, 'prompt' | 'extraData'> = {
    dirs: m.dirs,
    canRead: m.calls.includes('canRead') ? (ref) => callMain(m.seq, 'canRead', [ref]) as Promise<boolean> : undefined,
    fileWritten: m.calls.includes('fileWritten') ? (info) => callMain(m.seq, 'fileWritten', [info]) as Promise<Record<string, unknown> | void> : undefined,
    secret: m.calls.includes('secret') ? (name) => callMain(m.seq, 'secret', [name]) as Promise<string | undefined> : undefined,
  };
  try {
    const result = await executor.run({ promptId: m.promptId, prompt: m.prompt as never, outputs: m.outputs, extraData: m.extraData, sink, interrupt, env });
    sink.flush({ status: result.status, interrupted: result.interrupted });
  } catch (err) {
    sink.flush();
    post({ t: 'crashed', seq: m.seq, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  } finally {
    running = null;
    releasePromptBuffers();
  }
}

/** Native memory the thread's objects held after its last young-generation collection. */
let externalAfterCollection = 0;
/** A prompt that left this much more native memory behind is followed by a collection. */
const RELEASE_FROM_BYTES = 4 << 20;

/**
 * After a prompt whose nodes made large native buffers (frames of a few MB
 * each): a young-generation collection frees the dead ones at once, so the
 * next prompt reuses their memory instead of faulting in fresh pages
 * (heap/young-gc.ts). Its end has already been posted.
 */
function releasePromptBuffers(): void {
  const external = externalMemory();
  if (external < externalAfterCollection + RELEASE_FROM_BYTES) {
    // Freed by a collection of V8's own since: measure from there.
    externalAfterCollection = Math.min(externalAfterCollection, external);
    return;
  }
  collectYoungGeneration();
  externalAfterCollection = externalMemory();
}

port.on('message', (m: ToThread) => {
  switch (m.t) {
    case 'run':
      void run(m);
      break;
    case 'interrupt':
      // The loop turned: the run is not stuck in synchronous code, and async nodes see the abort now.
      if (running?.seq === m.seq) void running.interrupt.interrupted;
      post({ t: 'ack', seq: m.seq });
      break;
    case 'free':
      // The reference: unload_models (implied by free_memory) unloads the models, free_memory also empties the cache.
      if (m.freeMemory) executor.freeMemory();
      if (m.unloadModels) void unloadAll().catch(() => {});
      break;
    case 'reply': {
      const c = calls.get(m.id);
      if (!c) break;
      calls.delete(m.id);
      if (m.ok) c.resolve(m.value);
      else c.reject(new Error(m.error));
      break;
    }
  }
});

process.on('unhandledRejection', (err) => {
  post({ t: 'log', level: 'error', msg: 'unhandled rejection in an execution thread', data: { err: err instanceof Error ? err.stack : String(err) } });
});

post({ t: 'ready' });
