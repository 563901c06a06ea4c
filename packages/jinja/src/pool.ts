// Renders templates off the caller's thread: a pool of worker threads, each with a V8 heap limit
// (resourceLimits) and watched against a hard time limit. The engine's own budgets stop almost
// every hostile template inside the worker with a clear error; the heap limit and the watchdog
// catch whatever gets past them. A worker that dies is replaced; the message it was working on
// fails after `maxStrikes` deaths, so a template that keeps killing workers cannot loop forever.

import os from 'node:os';
import { SHARE_ENV, Worker } from 'node:worker_threads';
import type { Environment } from './environment.js';

/** What a pool's setup module exports: the named environments (with host filters) renders use. */
export interface SetupModule {
  environments(data: unknown): Record<string, Environment> | Promise<Record<string, Environment>>;
  /** Optional: turns a parsed render context into what templates see (host objects such as query sets), in the worker. */
  prepareContext?(context: Record<string, unknown>): void;
}

export interface RenderPoolOptions {
  /** Module (file URL or specifier) exporting `environments(setupData)`; default: one plain `Environment` named `default`. */
  setup?: string;
  /** Structured-cloneable data passed to `environments()` in each worker. */
  setupData?: unknown;
  /** Worker threads (default: one; more only helps with more than two cores). */
  size?: number;
  /** V8 old-generation heap limit of each worker, in MB (default 256). */
  heapMb?: number;
  /** A message still running after this long stops its worker (default 5,000 ms: well past the engine's 1 s budget). */
  hardTimeoutMs?: number;
  /** Worker deaths a message may cause before it fails (default 2). */
  maxStrikes?: number;
  /** Nice value of the render threads (Linux: per thread), so the caller's thread gets the CPU first (default 10; 0 = unchanged). */
  nice?: number;
}

export interface RenderJob {
  /** Environment name (from the setup module). */
  env: string;
  source: string;
}

export interface RenderError {
  name: string;
  message: string;
  lineno?: number;
  /** LimitExceededError kind; `memory`/`time` also when the worker was stopped by the heap limit/watchdog. */
  kind?: string;
  pyClass?: string;
  /** The render stopped its worker (heap limit, hard time limit or crash). */
  killedWorker?: boolean;
}

export type RenderResult = { ok: true; out: string } | { ok: false; error: RenderError };

/** @internal messages between pool and worker */
export interface PoolRequest {
  id: number;
  jobs?: RenderJob[];
  context?: string | Record<string, unknown>;
  floats?: boolean;
  check?: RenderJob;
}
/** @internal */
export interface PoolResponse {
  id?: number;
  results?: RenderResult[];
  ready?: boolean;
}

interface Task {
  req: PoolRequest;
  strikes: number;
  resolve(r: RenderResult[]): void;
}

interface Slot {
  worker: Worker;
  status: Int32Array;
  ready: boolean;
  dead: boolean;
  inflight: Map<number, Task>;
  /** The message the worker was last seen working on, and since when. */
  seenId: number;
  seenAt: number;
  /** Set when the watchdog stopped the worker. */
  timedOut: boolean;
  error?: Error;
}

const BOOT = new URL('./pool-boot.mjs', import.meta.url);
const ENTRY = new URL(import.meta.url.endsWith('.ts') ? './pool-worker.ts' : './pool-worker.js', import.meta.url).href;
const MAX_INFLIGHT = 64;

export class RenderPool {
  readonly size: number;
  readonly heapMb: number;
  readonly hardTimeoutMs: number;
  readonly maxStrikes: number;
  #slots: Slot[] = [];
  #queue: Task[] = [];
  #nextId = 1;
  #watch: NodeJS.Timeout | undefined;
  #closed = false;
  /** Worker deaths so far (heap limit, watchdog or crash); for tests and metrics. */
  deaths = 0;

  constructor(private readonly opts: RenderPoolOptions = {}) {
    this.size = Math.max(1, Math.floor(opts.size ?? 1));
    this.heapMb = opts.heapMb ?? 256;
    this.hardTimeoutMs = opts.hardTimeoutMs ?? 5000;
    this.maxStrikes = Math.max(1, opts.maxStrikes ?? 2);
  }

  /** Renders each job against one context (JSON text, parsed in the worker, or a cloneable object). */
  render(jobs: RenderJob[], context: string | Record<string, unknown>, options: { floats?: boolean } = {}): Promise<RenderResult[]> {
    if (jobs.length === 0) return Promise.resolve([]);
    return this.#submit({ id: 0, jobs, context, floats: options.floats });
  }

  /** Compiles a template; resolves with its error (syntax error, unknown filter, …) or null. */
  async check(env: string, source: string): Promise<RenderError | null> {
    const [r] = await this.#submit({ id: 0, check: { env, source } });
    return r!.ok ? null : r!.error;
  }

  /** Starts the workers now instead of at the first render (a worker takes a few hundred ms to boot). */
  warm(): void {
    while (!this.#closed && this.#slots.length < this.size) this.#spawn();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#watch);
    const failure: RenderResult = { ok: false, error: { name: 'RenderAborted', message: 'the render pool was closed' } };
    for (const t of this.#queue.splice(0)) t.resolve(this.#failAll(t, failure));
    const slots = this.#slots.splice(0);
    for (const s of slots) {
      s.dead = true;
      for (const t of s.inflight.values()) t.resolve(this.#failAll(t, failure));
      s.inflight.clear();
    }
    await Promise.all(slots.map((s) => s.worker.terminate().catch(() => {})));
  }

  #failAll(t: Task, r: RenderResult): RenderResult[] {
    return t.req.check ? [r] : t.req.jobs!.map(() => r);
  }

  #submit(req: PoolRequest): Promise<RenderResult[]> {
    if (this.#closed) return Promise.reject(new Error('the render pool is closed'));
    return new Promise((resolve) => {
      req.id = this.#nextId;
      this.#nextId = this.#nextId >= 0x7fffffff ? 1 : this.#nextId + 1;
      this.#queue.push({ req, strikes: 0, resolve });
      this.#dispatch();
    });
  }

  #dispatch(): void {
    while (this.#queue.length) {
      let best: Slot | undefined;
      for (const s of this.#slots) if (!s.dead && s.inflight.size < MAX_INFLIGHT && (!best || s.inflight.size < best.inflight.size)) best = s;
      if ((!best || best.inflight.size > 0) && this.#slots.length < this.size) best = this.#spawn();
      if (!best) return;
      const t = this.#queue.shift()!;
      if (best.inflight.size === 0) best.worker.ref();
      best.inflight.set(t.req.id, t);
      best.worker.postMessage(t.req);
    }
    this.#watchdog();
  }

  #spawn(): Slot {
    const status = new Int32Array(new SharedArrayBuffer(4));
    const worker = new Worker(BOOT, {
      workerData: { entry: ENTRY, setup: this.opts.setup, setupData: this.opts.setupData, status, nice: this.opts.nice ?? 10 },
      resourceLimits: { maxOldGenerationSizeMb: this.heapMb, maxYoungGenerationSizeMb: Math.min(64, Math.max(8, this.heapMb >> 3)), stackSizeMb: 4 },
      // `env` filters read the variables as they are when rendering, as Python's os.environ
      env: SHARE_ENV,
      stdout: false,
      stderr: false,
    });
    const slot: Slot = { worker, status, ready: false, dead: false, inflight: new Map(), seenId: 0, seenAt: 0, timedOut: false };
    worker.unref();
    worker.on('message', (m: PoolResponse) => {
      if (m.ready) {
        slot.ready = true;
        return;
      }
      const t = slot.inflight.get(m.id!);
      if (!t) return;
      slot.inflight.delete(m.id!);
      if (slot.inflight.size === 0) worker.unref();
      t.resolve(m.results!);
      this.#dispatch();
    });
    worker.on('error', (err) => {
      slot.error = err;
    });
    worker.on('exit', () => this.#died(slot));
    this.#slots.push(slot);
    return slot;
  }

  /** A worker ended: its culprit message fails (after enough strikes), the others go to a new worker. */
  #died(slot: Slot): void {
    const wasDead = slot.dead;
    slot.dead = true;
    this.#slots = this.#slots.filter((s) => s !== slot);
    if (wasDead || this.#closed) return;
    this.deaths++;
    const culprit = Atomics.load(slot.status, 0);
    const requeue: Task[] = [];
    const err = slot.error as (Error & { code?: string }) | undefined;
    for (const t of slot.inflight.values()) {
      if (!slot.ready) {
        // the worker never started (setup failed): retrying would fail the same way
        t.resolve(this.#failAll(t, { ok: false, error: { name: 'RenderAborted', message: `the render worker failed to start: ${err?.message ?? 'exited'}`, killedWorker: true } }));
        continue;
      }
      if (t.req.id !== culprit) {
        requeue.push(t);
        continue;
      }
      if (++t.strikes < this.maxStrikes) {
        requeue.unshift(t);
        continue;
      }
      let error: RenderError;
      if (slot.timedOut) {
        error = { name: 'LimitExceededError', kind: 'time', message: `template render exceeded the hard time limit (${this.hardTimeoutMs} ms); its worker thread was stopped`, killedWorker: true };
      } else if (err?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        error = { name: 'LimitExceededError', kind: 'memory', message: `template render exceeded the memory limit of its worker thread (${this.heapMb} MB heap)`, killedWorker: true };
      } else {
        error = { name: 'RenderAborted', message: `template render crashed its worker thread: ${err?.message ?? 'exited'}`, killedWorker: true };
      }
      t.resolve(this.#failAll(t, { ok: false, error }));
    }
    slot.inflight.clear();
    this.#queue.unshift(...requeue);
    this.#dispatch();
  }

  /** Polls what each worker is working on; one that stays on a message past the hard limit is stopped. */
  #watchdog(): void {
    const busy = this.#slots.some((s) => s.inflight.size > 0);
    if (!busy) {
      clearInterval(this.#watch);
      this.#watch = undefined;
      return;
    }
    if (this.#watch) return;
    const every = Math.max(20, Math.min(250, this.hardTimeoutMs / 8));
    this.#watch = setInterval(() => {
      const now = Date.now();
      for (const s of this.#slots) {
        if (s.dead) continue;
        const cur = Atomics.load(s.status, 0);
        if (cur !== s.seenId) {
          s.seenId = cur;
          s.seenAt = now;
        } else if (cur !== 0 && now - s.seenAt > this.hardTimeoutMs && !s.timedOut) {
          s.timedOut = true;
          void s.worker.terminate();
        }
      }
      if (!this.#slots.some((s) => s.inflight.size > 0)) {
        clearInterval(this.#watch);
        this.#watch = undefined;
      }
    }, every);
    this.#watch.unref();
  }
}

/** Worker threads to use by default: one per core beyond the first (the API keeps one), at least one. */
export function defaultPoolSize(): number {
  return Math.max(1, Math.min(4, os.availableParallelism() - 1));
}
