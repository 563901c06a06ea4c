// Webhook requests sent from a thread of their own: the delivery worker's thread claims, renders
// (through the render pool) and records, while this thread signs, sends and reads responses, so a
// machine with a second core runs both halves of a delivery at once. If the thread dies, the
// batches it held fail (their deliveries are retried, same webhook-id) and a new one starts.

import { Worker } from 'node:worker_threads';
import type { Cidr } from './guard.ts';
import type { SendOutcome } from './sender.ts';
import type { RequestHead, SendJob } from './send-job.ts';

/** @internal messages between the delivery worker and its send thread */
export interface SendThreadRequest {
  batch?: number;
  /**
   * The batch's distinct request heads as JSON text (the thread keeps them compiled by their text, so a webhook's
   * unchanged head is compiled once), and per job `id, head index, webhook-id, timestamp, body bytes` flat:
   * strings and numbers cross the thread boundary far cheaper than a cloned object graph, without JSON escaping.
   */
  heads?: string[];
  jobs?: Array<string | number>;
  /**
   * The jobs' bodies as UTF-8, one after another, in an ArrayBuffer that is transferred, not copied: the thread sends
   * and signs views of it. As strings each body was copied by the message's clone and encoded again by the thread.
   */
  bodies?: ArrayBuffer;
  stop?: number;
}
/** @internal */
export interface SendThreadResponse {
  ready?: boolean;
  batch?: number;
  /** SendOutcome[] as JSON text. */
  outcomes?: string;
}

/** A thread that could not start is tried again after this long (meanwhile requests go out in-process). */
const RESTART_AFTER_FAILURE_MS = 30_000;
const YOUNG_GENERATION_MB = 48;
const BOOT = new URL('./send-boot.mjs', import.meta.url);
const ENTRY = new URL(import.meta.url.endsWith('.ts') ? './send-worker.ts' : './send-worker.js', import.meta.url).href;

/** Heads' JSON text, computed once per head object (a webhook's head is reused while the webhook is unchanged). */
const headText = new WeakMap<RequestHead, string>();

export class SendThread {
  #worker: Worker | undefined;
  #ready = false;
  #closed = false;
  #next = 1;
  #pending = new Map<number, { count: number; resolve(o: SendOutcome[]): void }>();
  /** When a thread last ended before it was ready (it cannot start here): no new one for a while. */
  #failedAt = -Infinity;

  constructor(private readonly guard: { allow: Cidr[]; deny: Cidr[] }) {}

  /** Whether batches can go to the thread now; starts it if it is not running (the caller sends in-process meanwhile). */
  ready(): boolean {
    if (!this.#worker && !this.#closed && performance.now() - this.#failedAt > RESTART_AFTER_FAILURE_MS) this.#start();
    return this.#ready;
  }

  /** Resolves once the thread is ready (true) or could not start (false). */
  whenReady(): Promise<boolean> {
    if (this.ready()) return Promise.resolve(true);
    const w = this.#worker;
    if (!w) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = () => {
        w.off('message', onMessage);
        w.off('exit', done);
        resolve(this.#ready);
      };
      const onMessage = (m: SendThreadResponse) => void (m.ready && done());
      w.on('message', onMessage);
      w.on('exit', done);
    });
  }

  #start(): void {
    const worker = new Worker(BOOT, {
      workerData: { entry: ENTRY, allow: this.guard.allow, deny: this.guard.deny },
      stdout: false,
      stderr: false,
      // Requests are short-lived garbage: a larger young generation collects them with fewer scavenges and promotes less.
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
    this.#worker = worker;
    worker.unref();
    worker.on('message', (m: SendThreadResponse) => {
      if (m.ready) {
        this.#ready = true;
        return;
      }
      const p = this.#pending.get(m.batch!);
      if (!p) return;
      this.#pending.delete(m.batch!);
      if (this.#pending.size === 0) worker.unref();
      p.resolve(JSON.parse(m.outcomes!) as SendOutcome[]);
    });
    let failure = 'exited';
    worker.on('error', (err) => void (failure = err.message));
    worker.on('exit', () => {
      if (this.#worker === worker) {
        if (!this.#ready) this.#failedAt = performance.now();
        this.#worker = undefined;
        this.#ready = false;
      }
      // The requests of these batches may or may not have gone out: they fail, and are retried with the same webhook-id.
      for (const p of this.#pending.values()) p.resolve(Array.from({ length: p.count }, () => ({ error: `the webhook send thread stopped: ${failure}`, durationMs: 0 })));
      this.#pending.clear();
    });
  }

  /** Sends a batch in the thread; resolves with one outcome per job, in order, once all have ended. */
  send(jobs: SendJob[]): Promise<SendOutcome[]> {
    const worker = this.#worker;
    if (!worker || !this.#ready) return Promise.resolve(jobs.map(() => ({ error: 'the webhook send thread is not running', durationMs: 0 })));
    const batch = this.#next++;
    return new Promise((resolve) => {
      if (this.#pending.size === 0) worker.ref();
      this.#pending.set(batch, { count: jobs.length, resolve });
      const heads: string[] = [];
      const index = new Map<RequestHead, number>();
      const flat: Array<string | number> = [];
      let total = 0;
      for (const j of jobs) {
        let h = index.get(j.head);
        if (h === undefined) {
          let text = headText.get(j.head);
          if (text === undefined) headText.set(j.head, (text = JSON.stringify(j.head)));
          h = heads.push(text) - 1;
          index.set(j.head, h);
        }
        const bytes = Buffer.byteLength(j.body, 'utf8');
        total += bytes;
        flat.push(j.id, h, j.messageId, j.timestamp, bytes);
      }
      // Unpooled, so that its ArrayBuffer holds exactly these bytes and can be handed over.
      const bodies = Buffer.allocUnsafeSlow(total);
      let at = 0;
      for (const j of jobs) at += bodies.write(j.body, at, 'utf8');
      worker.postMessage({ batch, heads, jobs: flat, bodies: bodies.buffer } satisfies SendThreadRequest, [bodies.buffer]);
    });
  }

  /** Ends the request for delivery `id` if the thread is sending it. */
  stop(id: number): void {
    this.#worker?.postMessage({ stop: id } satisfies SendThreadRequest);
  }

  close(): Promise<number | void> {
    this.#closed = true;
    const w = this.#worker;
    this.#worker = undefined;
    this.#ready = false;
    return w ? w.terminate() : Promise.resolve();
  }
}
