/**
 * The main thread's side of execution threads. Each `ExecutionThread` is one
 * execution slot: a worker thread with its own registry and output cache that
 * runs one prompt at a time. Its sink calls come back as batched events and
 * are replayed on the run's sink here, so clients see what they saw when
 * prompts ran on the main thread.
 *
 * A thread stuck in synchronous code cannot take a message: an interrupt sets
 * a shared flag (seen by `checkInterrupt()` inside the node) and, if the
 * thread has not answered within the grace period, the thread is terminated
 * and replaced (its cache goes with it) and the run ends interrupted. The
 * same happens at a run's time limit, and when the thread dies (its heap
 * limit, an error thrown outside the engine): the run ends with an
 * execution_error and the next one gets a fresh thread.
 */
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { WorkflowConfig } from '../config.ts';
import type { ExecutorLimits, PromptRun, RunResult } from '../engine/executor.ts';
import { ProgressMirror } from '../engine/progress.ts';
import type { NodeRegistry } from '../engine/registry.ts';
import { closeNativeCalls } from '../models/native-calls.ts';
import { killChildren, newChildList } from '../processes/child-processes.ts';
import { raiseThreadHeapFloor } from '../heap/thread-heap.ts';
import type { LoadedModel } from '../models/sd1.ts';
import type { EnvCall, FromThread, ThreadInit, ToThread } from './protocol.ts';

type Log = { warn(o: object, m: string): void; error(o: object, m: string): void };

/** What the prompt runner needs of an engine: the main thread's Executor, or the pool of execution threads. */
export interface Engine {
  readonly registry: NodeRegistry;
  /** Prompts run outside the main thread: the runner may record one prompt's end while the next already runs. */
  readonly offThread?: boolean;
  /** Runs one prompt; `affinity` (the owner) prefers the slot that ran that owner's last prompt, whose cache holds its values. */
  run(spec: PromptRun, affinity?: string): Promise<RunResult>;
  /** POST /free: `freeMemory` empties the output cache; `unloadModels` (or `freeMemory`, as the reference) unloads the loaded models. */
  freeMemory(opts?: FreeOptions): void;
  /** The models loaded now, in every thread. */
  loadedModels?(): EngineModel[];
  close?(): Promise<void>;
}

/** A model an engine holds, and in which execution thread (/system_stats). */
export type EngineModel = LoadedModel & { thread: number | null };

export interface FreeOptions {
  unloadModels?: boolean;
  freeMemory?: boolean;
}

export interface PoolOptions {
  config: WorkflowConfig;
  registry: NodeRegistry;
  threads: number;
  limits: ExecutorLimits;
  /** Milliseconds an interrupted thread has to answer before it is terminated. */
  interruptGraceMs: number;
  /** A run's wall-clock limit in ms (0: none). */
  timeLimitMs: number;
  /** Heap limit of each thread in MB (0: V8's default, which still ends only the thread). */
  memoryLimitMb: number;
  /** Start the threads now (a process that runs prompts), or at their first prompt (an API process with --no-workers never does). */
  eager: boolean;
  log: Log;
}

/** The module an execution thread starts from: the bundle's own (scripts/run-service.mjs names it) or the TypeScript source under tsx. */
function threadEntry(): URL {
  const bundled = (globalThis as { __workflowExecutionThread?: string }).__workflowExecutionThread;
  return bundled ? pathToFileURL(bundled) : new URL('./source-entry.mjs', import.meta.url);
}

interface ActiveRun {
  seq: number;
  spec: PromptRun;
  mirror: ProgressMirror;
  messages: Array<[string, Record<string, unknown>]>;
  executed: string[];
  executedSet: Set<string>;
  outputs: RunResult['outputs'];
  meta: RunResult['meta'];
  lastNode: string | null;
  resolve(r: RunResult): void;
  reject(e: Error): void;
  timers: NodeJS.Timeout[];
  /** Removes the run's interrupt listener. */
  offInterrupt: () => void;
  /** Whether the thread has been given the run (before that it waits for a thread to be ready). */
  dispatched: boolean;
}

class ExecutionThread {
  private worker: Worker | undefined;
  /** Each thread's count of native calls in progress (models/native-calls.ts). */
  private readonly nativeCalls = new WeakMap<Worker, Int32Array>();
  /** Each thread's running child processes (processes/child-processes.ts). */
  private readonly childPids = new WeakMap<Worker, Int32Array>();
  /** Threads being stopped (replaced ones may still be finishing a native call). */
  private readonly stopping = new Set<Promise<void>>();
  private ready!: Promise<void>;
  /** Whether `ready` has settled fulfilled for the current thread. */
  private isReady = false;
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  /** A held run's go (its seq) or drop (-seq): see ThreadInit.holdFlag. */
  private readonly hold = new Int32Array(new SharedArrayBuffer(4));
  private seq = 0;
  private active: ActiveRun | null = null;
  private closed = false;
  /** The owner whose prompt ran here last (the cache holds its values). */
  lastOwner: string | undefined;
  /** The models the thread reported last (none once it is gone). */
  models: LoadedModel[] = [];

  constructor(
    private readonly o: PoolOptions,
    eager: boolean,
  ) {
    if (eager) this.spawn();
  }

  get busy(): boolean {
    return this.active !== null;
  }

  /** Whether a thread is started (or starting): a run here does not wait for one. */
  get started(): boolean {
    return this.worker !== undefined;
  }

  /** Whether a replaced thread is still being stopped here (a prompt given to this slot waits for it). */
  get draining(): boolean {
    return this.stopping.size > 0;
  }

  private spawn(): void {
    // Each thread its own count: a replaced thread may still be inside a model step when its successor starts.
    const nativeCalls = new Int32Array(new SharedArrayBuffer(4));
    const childPids = newChildList();
    const init: ThreadInit = {
      config: this.o.config,
      limits: this.o.limits,
      interruptFlag: this.flag.buffer as SharedArrayBuffer,
      holdFlag: this.hold.buffer as SharedArrayBuffer,
      nativeCalls: nativeCalls.buffer as SharedArrayBuffer,
      childPids: childPids.buffer as SharedArrayBuffer,
    };
    raiseThreadHeapFloor();
    const worker: Worker = new Worker(threadEntry(), {
      workerData: init,
      resourceLimits: this.o.memoryLimitMb > 0 ? { maxOldGenerationSizeMb: this.o.memoryLimitMb } : undefined,
      // Not the process's flags: under tsx they name a loader that does not work in a thread (source-entry.mjs registers it).
      execArgv: [],
    });
    this.worker = worker;
    this.nativeCalls.set(worker, nativeCalls);
    this.childPids.set(worker, childPids);
    this.isReady = false;
    this.models = [];
    this.ready = new Promise<void>((resolve, reject) => {
      const onReady = (m: FromThread) => {
        if (m.t !== 'ready') return;
        worker.off('message', onReady);
        if (this.worker === worker) this.isReady = true;
        resolve();
      };
      worker.on('message', onReady);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`execution thread exited (${code}) before it was ready`)));
    });
    this.ready.catch(() => {});
    worker.on('message', (m: FromThread) => this.onMessage(worker, m));
    worker.on('error', (err) => this.onDeath(worker, err));
    worker.on('exit', (code) => this.onDeath(worker, new Error(`execution thread exited with code ${code}`)));
  }

  private post(m: ToThread): void {
    this.worker?.postMessage(m);
  }

  run(spec: PromptRun): Promise<RunResult> {
    if (this.active) return Promise.reject(new Error('execution slot busy'));
    if (!this.worker) this.spawn();
    const seq = ++this.seq;
    return new Promise<RunResult>((resolve, reject) => {
      const run: ActiveRun = {
        seq,
        spec,
        mirror: new ProgressMirror(spec.promptId),
        messages: [],
        executed: [],
        executedSet: new Set(),
        outputs: {},
        meta: {},
        lastNode: null,
        resolve,
        reject,
        timers: [],
        offInterrupt: () => {},
        dispatched: false,
      };
      this.active = run;
      run.offInterrupt = spec.interrupt.onInterrupt(() => this.interrupt(run));
      // A thread already up gets the prompt now, not a microtask later: the POST answer is written meanwhile.
      if (this.isReady && this.stopping.size === 0) this.dispatch(run);
      // A replaced thread still inside a model step holds the slot's next prompt, as the reference starts nothing
      // while its step finishes: that prompt loading the same model now would hold two copies in memory meanwhile.
      else void Promise.all([...this.stopping]).then(() => this.ready).then(
        () => this.dispatch(run),
        (err) => {
          // The thread could not start (a pack that throws in it, an exhausted heap): the run fails, the next one tries a new thread.
          if (this.active !== run) return;
          this.finish(run);
          run.resolve(this.endedHere(run, 'error', { type: 'ExecutionThreadDied', message: `The execution thread could not start: ${err instanceof Error ? err.message : String(err)}` }));
        },
      );
    });
  }

  /** Hands the run to the thread (once it is ready) and arms its interrupt and time limit. */
  private dispatch(run: ActiveRun): void {
    const { spec, seq } = run;
    if (this.active !== run) return;
    run.dispatched = true;
    const env = spec.env;
    const calls: EnvCall[] = [];
    if (env.canRead) calls.push('canRead');
    if (env.fileWritten) calls.push('fileWritten');
    if (env.secret) calls.push('secret');
    this.post({
      t: 'run',
      seq,
      promptId: spec.promptId,
      prompt: spec.prompt,
      outputs: spec.outputs,
      extraData: spec.extraData,
      dirs: env.dirs,
      calls,
      client: typeof spec.extraData.client_id === 'string',
      held: spec.stored !== undefined,
    });
    // The thread wakes and takes the prompt while its row is stored here; it starts once told.
    void spec.stored?.then((ok) => {
      Atomics.store(this.hold, 0, ok ? seq : -seq);
      Atomics.notify(this.hold, 0);
    });
    if (this.o.timeLimitMs > 0) {
      run.timers.push(
        setTimeout(() => {
          const s = this.o.timeLimitMs / 1000;
          this.kill(run, 'error', { type: 'TimeoutError', message: `The prompt ran longer than its time limit of ${s} s (--prompt-time-limit)` });
        }, this.o.timeLimitMs),
      );
    }
  }

  private interrupt(run: ActiveRun): void {
    if (this.active !== run) return;
    if (!run.dispatched) {
      // Still held (a thread starting, or a replaced one finishing its step): nothing ran, no thread to replace.
      this.finish(run);
      run.resolve(this.endedHere(run, 'interrupted'));
      return;
    }
    Atomics.store(this.flag, 0, run.seq);
    this.post({ t: 'interrupt', seq: run.seq });
    // Answered by the thread's loop: the run ends by itself (nodes see the flag or the abort).
    run.timers.push(setTimeout(() => this.kill(run, 'interrupted'), this.o.interruptGraceMs));
  }

  free(opts: FreeOptions = { freeMemory: true }): void {
    this.post({ t: 'free', unloadModels: opts.unloadModels === true || opts.freeMemory === true, freeMemory: opts.freeMemory === true });
  }

  private onMessage(worker: Worker, m: FromThread): void {
    if (worker !== this.worker) return;
    if (m.t === 'log') {
      this.o.log[m.level](m.data, m.msg);
      return;
    }
    if (m.t === 'models') {
      this.models = m.models;
      return;
    }
    const run = this.active;
    if (!run || (m.t !== 'ready' && m.seq !== run.seq)) return;
    switch (m.t) {
      case 'events':
        for (const e of m.events) {
          // A sink that throws must not take the process down (this runs in a worker's message listener).
          try {
            this.replay(run, e);
          } catch (err) {
            this.o.log.error({ err, prompt_id: run.spec.promptId }, 'a run event could not be delivered');
          }
        }
        if (m.end) {
          this.finish(run);
          run.resolve({ status: m.end.status, interrupted: m.end.interrupted, messages: run.messages, outputs: run.outputs, meta: run.meta, executed: run.executed });
        }
        break;
      case 'call':
        void this.serveCall(run, m.id, m.fn, m.args);
        break;
      case 'ack':
        // The thread's loop turned after the interrupt: it is not stuck, the run ends by itself.
        for (const t of run.timers.splice(0)) clearTimeout(t);
        if (this.o.timeLimitMs > 0) this.rearmTimeLimit(run);
        break;
      case 'crashed':
        // The engine threw outside a node (a bug): the prompt fails with what it said, the thread stays.
        this.o.log.error({ err: m.error, prompt_id: run.spec.promptId }, 'the engine failed outside a node');
        this.finish(run);
        run.resolve(this.endedHere(run, 'error', { type: 'Exception', message: m.error.split('\n')[0] ?? 'engine error' }));
        break;
    }
  }

  private rearmTimeLimit(run: ActiveRun): void {
    // The ack cleared every timer of the run; the time limit keeps counting from the run's start.
    const started = run.messages[0]?.[1].timestamp as number | undefined;
    const left = Math.max(0, (started ?? Date.now()) + this.o.timeLimitMs - Date.now());
    run.timers.push(
      setTimeout(() => {
        this.kill(run, 'error', { type: 'TimeoutError', message: `The prompt ran longer than its time limit of ${this.o.timeLimitMs / 1000} s (--prompt-time-limit)` });
      }, left),
    );
  }

  private replay(run: ActiveRun, e: import('./protocol.ts').RunEvent): void {
    const sink = run.spec.sink;
    switch (e[0]) {
      case 'send': {
        const [, type, data, broadcast, history] = e;
        if (history) run.messages.push([type, data]);
        if (type === 'executing') run.lastNode = (data.node as string | null) ?? null;
        sink.send(type, data, broadcast);
        break;
      }
      case 'progress':
        sink.progress(e[1]);
        break;
      case 'state':
        run.mirror.apply(e[1]);
        sink.progressState(run.mirror);
        break;
      case 'preview':
        sink.preview(Buffer.from(e[1].buffer, e[1].byteOffset, e[1].byteLength), e[2], e[3]);
        break;
      case 'recorded': {
        const [, id, executed, ui] = e;
        if (executed && !run.executedSet.has(id)) {
          run.executedSet.add(id);
          run.executed.push(id);
        }
        if (ui) {
          // Node ids are the client's strings ('__proto__' included): own properties, never the prototype.
          Object.defineProperty(run.outputs, id, { value: ui.output, enumerable: true, writable: true, configurable: true });
          Object.defineProperty(run.meta, id, { value: ui.meta, enumerable: true, writable: true, configurable: true });
        }
        break;
      }
    }
  }

  private async serveCall(run: ActiveRun, id: number, fn: EnvCall, args: unknown[]): Promise<void> {
    const worker = this.worker;
    let reply: ToThread;
    try {
      const f = run.spec.env[fn] as ((...a: unknown[]) => Promise<unknown>) | undefined;
      if (!f) throw new Error(`${fn} is not available to this prompt`);
      reply = { t: 'reply', id, ok: true, value: await f(...args) };
    } catch (err) {
      reply = { t: 'reply', id, ok: false, error: err instanceof Error ? err.message : String(err) };
    }
    if (worker !== undefined && worker === this.worker && this.active === run) worker.postMessage(reply);
  }

  private finish(run: ActiveRun): void {
    for (const t of run.timers.splice(0)) clearTimeout(t);
    run.offInterrupt();
    if (this.active === run) this.active = null;
  }

  /** Ends the active run from here: the thread is terminated and replaced, and the run reports what it got to. */
  private kill(run: ActiveRun, how: 'interrupted' | 'error', error?: { type: string; message: string }): void {
    if (this.active !== run) return;
    this.finish(run);
    const old = this.worker;
    if (!this.closed) this.spawn();
    void this.stop(old);
    run.resolve(this.endedHere(run, how, error));
  }

  /** The RunResult of a run ended by this side, as the engine would have reported it. */
  private endedHere(run: ActiveRun, how: 'interrupted' | 'error', error?: { type: string; message: string }): RunResult {
    const { spec } = run;
    const prompt = spec.prompt as Record<string, { class_type?: string } | undefined>;
    const node = run.lastNode;
    const realId = node === null ? null : (run.mirror.snapshot().nodes[node]?.real_node_id ?? node);
    const nodeType = realId !== null && Object.hasOwn(prompt, realId) ? (prompt[realId]?.class_type ?? null) : null;
    const base = { prompt_id: spec.promptId, node_id: realId, node_type: nodeType, executed: [...run.executed] };
    let type: string;
    let data: Record<string, unknown>;
    let broadcast = false;
    if (how === 'interrupted') {
      type = 'execution_interrupted';
      data = { ...base, timestamp: Date.now() };
      broadcast = true;
    } else {
      type = 'execution_error';
      data = {
        ...base,
        exception_message: `${error!.message}\n`,
        exception_type: error!.type,
        traceback: [],
        current_inputs: {},
        current_outputs: [],
        timestamp: Date.now(),
      };
    }
    run.messages.push([type, data]);
    spec.sink.send(type, data, broadcast);
    return { status: 'error', interrupted: how === 'interrupted', messages: run.messages, outputs: run.outputs, meta: run.meta, executed: run.executed };
  }

  private onDeath(worker: Worker, err: Error): void {
    if (worker !== this.worker || this.closed) return;
    const run = this.active;
    const oom = (err as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY';
    this.o.log.error({ err }, oom ? 'an execution thread ran out of memory' : 'an execution thread died');
    // Started again by the next run, not now: a thread that dies as it starts must not be restarted in a loop.
    this.worker = undefined;
    this.models = [];
    this.isReady = false;
    if (run) {
      this.finish(run);
      const limit = this.o.memoryLimitMb > 0 ? `its memory limit of ${this.o.memoryLimitMb} MB (--prompt-memory-limit)` : 'the memory an execution thread may use';
      run.resolve(this.endedHere(run, 'error', oom ? { type: 'MemoryError', message: `The prompt exceeded ${limit}` } : { type: 'ExecutionThreadDied', message: err.message }));
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const run = this.active;
    if (run) {
      this.finish(run);
      run.resolve(this.endedHere(run, 'interrupted'));
    }
    await this.stop(this.worker);
    await Promise.all([...this.stopping]);
  }

  /**
   * Terminates a thread once it is outside ONNX Runtime's native code (models/native-calls.ts): terminated inside a
   * model step it would abort the whole process. The run it had has already ended; only the thread lingers.
   */
  private stop(worker: Worker | undefined): Promise<void> {
    if (!worker) return Promise.resolve();
    const cell = this.nativeCalls.get(worker);
    // Its children first: the run they worked for has ended, and the thread will not be there to end them.
    const children = this.childPids.get(worker);
    if (children) killChildren(children);
    const stopped = (async () => {
      // A worker's threadId is -1 once it has exited.
      if (cell) await closeNativeCalls(cell, () => worker.threadId < 0);
      await worker.terminate();
    })();
    // close() waits for these too: the process must not exit while a replaced thread is still inside native code.
    this.stopping.add(stopped);
    void stopped.finally(() => this.stopping.delete(stopped));
    return stopped;
  }
}

/** Execution slots: one thread each; a prompt goes to a free one, preferably the one that last ran its owner's prompt. */
export class ExecutionPool implements Engine {
  readonly registry: NodeRegistry;
  readonly offThread = true;
  private readonly threads: ExecutionThread[];

  constructor(o: PoolOptions) {
    this.registry = o.registry;
    // From the bundle the first thread starts now, so the first prompt does not wait for it; the others start when
    // prompts first run side by side. From the sources (tsx: seconds per thread) every thread waits for a prompt.
    const bundled = (globalThis as { __workflowExecutionThread?: string }).__workflowExecutionThread !== undefined;
    this.threads = Array.from({ length: Math.max(1, o.threads) }, (_, i) => new ExecutionThread(o, o.eager && bundled && i === 0));
  }

  get size(): number {
    return this.threads.length;
  }

  run(spec: PromptRun, affinity?: string): Promise<RunResult> {
    const free = this.threads.filter((t) => !t.busy);
    if (free.length === 0) return Promise.reject(new Error('every execution slot is busy'));
    const pick = (xs: ExecutionThread[]) =>
      xs.find((x) => x.started && affinity !== undefined && x.lastOwner === affinity) ??
      xs.find((x) => x.started && x.lastOwner === undefined) ??
      xs.find((x) => x.started) ??
      xs[0];
    // A slot whose replaced thread is still finishing a step would hold the prompt: another free slot takes it first.
    const t = pick(free.filter((x) => !x.draining)) ?? pick(free)!;
    t.lastOwner = affinity;
    return t.run(spec);
  }

  freeMemory(opts?: FreeOptions): void {
    for (const t of this.threads) t.free(opts);
  }

  loadedModels(): EngineModel[] {
    return this.threads.flatMap((t, i) => t.models.map((m) => ({ ...m, thread: i })));
  }

  async close(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.close()));
  }
}
