import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Storage } from '@svc/storage';
import { InterruptSignal, type ExecutionSink, type RunResult } from '../engine/executor.ts';
import type { ProgressView } from '../engine/progress.ts';
import type { Engine, EngineModel } from '../threads/execution-pool.ts';
import { claimNextWithinLimit } from '../domain/claim-within-limit.ts';
import { validatePrompt, type PromptError } from '../engine/validate.ts';
import type { NodeEnv, NodeScope } from '../nodes/api.ts';
import {
  claimNext,
  completeAndClaimNext,
  ownerPendingCount,
  type HistoryTrim,
  deletePending,
  DuplicatePromptId,
  failOrphans,
  finishedCount,
  PromptInserter,
  maxNumber,
  releaseClaim,
  pendingCount,
  pendingCountsByOwner,
  runningIds,
  trimHistory,
  type JobStatus,
  type PromptRecord,
} from '../domain/prompts.ts';
import { previewFrame, type WsHub } from '../ws/hub.ts';
import { workflowLink } from '../domain/cloud/workflow-link.ts';
import { extractSecretInputs, NODE_SECRETS_KEY, scrubSecrets } from './secrets.ts';
import { LOST_MESSAGE, type ClaimHandler, type SharedQueue } from './shared-queue.ts';

/** Keys of extra_data that are secrets: kept out of the stored queue item and history (the reference's sixth tuple element). */
export const SENSITIVE_KEYS = ['auth_token_comfy_org', 'api_key_comfy_org', 'openai_api_key'];

/** How long a run's first messages may wait to share a socket write with the following ones. */
const HOLD_MS = 10;
/** Ends between two counts of the history (the in-memory count misses rows other paths finish or remove). */
const RECOUNT_EVERY = 256;

/** Bounds validation and execution state per prompt; ten times the largest graphs the engine is measured on. */
export const MAX_PROMPT_NODES = 100_000;

const UUID_CANONICAL = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Progress messages of one run: each key (a node's `progress`, the prompt's
 * `progress_state`) is sent at most once per `gapMs`, with the latest value,
 * and never in the middle of a synchronous burst. `progress_state` carries
 * every started node, so sending it per node start and finish (as the
 * reference does) is quadratic in the size of the graph.
 */
class ProgressThrottle {
  private readonly pending = new Map<string, { fn: () => void; timer: NodeJS.Timeout }>();
  private readonly last = new Map<string, number>();

  constructor(private readonly gapMs = 25) {}

  run(key: string, fn: () => void): void {
    const p = this.pending.get(key);
    if (p) {
      p.fn = fn;
      return;
    }
    const wait = Math.max(0, (this.last.get(key) ?? 0) + this.gapMs - Date.now());
    const entry = {
      fn,
      timer: setTimeout(() => {
        this.pending.delete(key);
        this.last.set(key, Date.now());
        entry.fn();
      }, wait),
    };
    this.pending.set(key, entry);
  }

  /** Sends what is pending now (before the run's last message). */
  flush(): void {
    for (const [key, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(key);
      p.fn();
    }
  }
}

/** A refused prompt: the 400 body `{error, node_errors}`. */
export class PromptRejected extends Error {
  constructor(readonly body: { error: PromptError; node_errors: Record<string, unknown> }) {
    super(body.error.message);
  }
}

function reject(type: string, message: string, details = message): never {
  throw new PromptRejected({ error: { type, message, details, extra_info: {} }, node_errors: {} });
}

/** A secret input fed by a link: its value would sit, unredacted, in the other node's stored inputs. */
function linkedSecretError(linked: Array<{ nodeId: string; input: string; classType: string }>): PromptRejected['body'] {
  // Keyed by client-chosen node ids ('__proto__', 'constructor'): a Map, made an object for the answer.
  const nodeErrors = new Map<string, { errors: unknown[]; dependent_outputs: string[]; class_type: string }>();
  for (const l of linked) {
    let e = nodeErrors.get(l.nodeId);
    if (!e) nodeErrors.set(l.nodeId, (e = { errors: [], dependent_outputs: [], class_type: l.classType }));
    e.errors.push({
      type: 'secret_input_linked',
      message: 'Secret input cannot be linked',
      details: `${l.input}: type the key into this node (or send extra_data.openai_api_key), so it can be kept out of history`,
      extra_info: { input_name: l.input },
    });
  }
  return { error: { type: 'prompt_outputs_failed_validation', message: 'Prompt outputs failed validation', details: '', extra_info: {} }, node_errors: Object.fromEntries(nodeErrors) };
}

export interface RunnerOptions {
  storage: Storage;
  /** Runs prompts: the execution threads, or the main thread's Executor. */
  executor: Engine;
  /** Prompts this process runs at once (local queue; the shared queue has its own count). Default 1. */
  slots?: number;
  /** With several slots: an owner's prompts running at once at most (the hosted runtime's max_concurrent_jobs). */
  maxPerOwner?: number;
  hub: WsHub;
  dirs: NodeEnv['dirs'];
  /** The folders an owner's prompts see (hosted runtime: the workspace's own input folder); default `dirs` for everyone. */
  scopeFor?: (owner: string) => NodeScope;
  /** Hosted runtime: queue_remaining (GET /prompt, status messages) counts the caller's own prompts, and status goes to their sockets only. */
  perOwnerStatus?: boolean;
  maxHistory: number;
  log: { info(o: object, m: string): void; warn(o: object, m: string): void; error(o: object, m: string): void };
  /**
   * Called with every file an output node writes, with the job that wrote it
   * (assets index them); what it returns joins the file's output entry.
   */
  fileWritten?: (info: Parameters<NonNullable<NodeEnv['fileWritten']>>[0], job: { promptId: string; owner: string }) => Promise<Record<string, unknown> | void>;
  /** A stored secret of the job's workspace, for nodes that ask by name (hosted runtime). */
  readSecret?: (owner: string, name: string) => Promise<string | undefined>;
  /**
   * Scale-out with a shared content store: brings the files a prompt names
   * onto this disk (uploaded through another process) before it is validated
   * here and before it runs here.
   */
  fetchInputs?: (prompt: Record<string, unknown>, dirs: NodeScope['dirs']) => Promise<unknown>;
  /**
   * A process whose clients' sockets are all elsewhere (an execution worker):
   * a prompt's messages wait up to this many ms, or until the prompt has
   * ended, and then cross the relay together — a short prompt's whole
   * message sequence as one notification instead of one per turn of the
   * loop. 0 (the default) sends them as they come.
   */
  relayCoalesceMs?: number;
  /** Called once a prompt's end is recorded (the hosted runtime charges its execution time). */
  onFinished?: (job: { promptId: string; owner: string; status: JobStatus; startTime: number; endTime: number }) => void;
  /**
   * Hosted runtime on PostgreSQL: the queue shared with every other process
   * (prompts run wherever a worker takes them; counts come from the database).
   */
  shared?: SharedQueue;
  /** Tells the other processes to interrupt a prompt if it runs there (shared queue). */
  broadcastCancel?: (promptId: string) => void;
}

export interface SubmitRequest {
  body: Record<string, unknown>;
  owner: string;
  usageSource?: string;
}

interface Current {
  record: PromptRecord;
  interrupt: InterruptSignal;
  clientId: string | null;
  lastNode: string | null;
  /** Messages waiting for the POST answer (null once released). */
  held: Array<() => void> | null;
}

/**
 * The local runtime's prompt worker: validates and stores prompts, runs them
 * one at a time in priority order, and turns engine events into WebSocket
 * messages. Queue and history live in the database, so they survive a
 * restart; a prompt that was running when the process died is reported
 * failed on the next start, never re-run.
 */
export class PromptRunner implements ClaimHandler {
  readonly workerId = `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private counter = 0;
  private remaining = 0;
  /** Pending and running prompts per owner (hosted runtime: a workspace's status counts its own queue only). */
  private readonly remainingBy = new Map<string, number>();
  private finished = 0;
  /** The prompts running now, one per busy slot. */
  private readonly currents = new Set<Current>();
  /** Per slot: settles when the slot's last started prompt's messages (its end's included) have all been sent. */
  private readonly lastSent = new Map<number, Promise<void>>();
  /** Slot numbers free for prompts the shared queue hands in (runClaimed). */
  private readonly claimSlots: number[] = [];
  private claimSlotCount = 0;
  private readonly gates = new Map<string, { promise: Promise<void>; release: () => void }>();
  /** Claims under a per-owner limit, one after the other. */
  private claimTurn: Promise<void> = Promise.resolve();
  /** Idle loops waiting for a prompt to be stored. */
  private readonly wakers = new Set<() => void>();
  private stopped = true;
  private loopDone: Promise<void> = Promise.resolve();
  /** Ends being recorded while the slot's next prompt already runs. */
  private readonly recordings = new Set<Promise<void>>();
  private pendingFree: { unloadModels: boolean; freeMemory: boolean } | false = false;
  private readonly inserter: PromptInserter;
  /**
   * A prompt stored already claimed for this idle runner (its insert may
   * still be committing): the loop takes it without a claim transaction, and
   * claims nothing else before it lands, so queue order holds.
   */
  private handoff: { record: PromptRecord; stored: Promise<boolean> } | null = null;
  /** Cancels of prompts claimed but not yet started here: applied when the run starts. */
  private readonly cancelRequested = new Set<string>();

  /** Completions recorded by this process (the shared queue trims history every so many). */
  private completions = 0;
  /** Per-owner status refreshes in flight: only the newest one's count is sent. */
  private readonly statusSeq = new Map<string, number>();

  constructor(private readonly o: RunnerOptions) {
    const shared = o.shared;
    this.inserter = new PromptInserter(o.storage.db, shared && ((rows) => shared.store(rows)), o.storage.sqlite);
  }

  /** True when prompts run in whichever process of the shared queue takes them. */
  get isShared(): boolean {
    return this.o.shared !== undefined;
  }

  async start(): Promise<void> {
    const db = this.o.storage.db;
    if (this.o.shared) {
      // Other processes' prompts may be running: nothing here is an orphan (the queue settles those of dead workers).
      this.stopped = false;
      await this.o.shared.start(this);
      return;
    }
    // A job that a crash ended is charged as every started job is (what it ran, up to the last sign of the old process).
    const orphans = await failOrphans(db, Date.now(), undefined, (job) => this.o.onFinished?.({ ...job, status: 'failed' }));
    if (orphans.length) this.o.log.warn({ prompts: orphans }, 'prompts that were running when the server stopped are marked failed');
    this.counter = Math.floor(await maxNumber(db)) + 1;
    this.remaining = await pendingCount(db);
    for (const { owner, n } of await pendingCountsByOwner(db)) this.remainingBy.set(owner, n);
    this.finished = await finishedCount(db);
    if (this.finished > this.o.maxHistory) this.finished -= await trimHistory(db, this.o.maxHistory);
    this.stopped = false;
    const slots = Math.max(1, this.o.slots ?? 1);
    this.loopDone = Promise.all(Array.from({ length: slots }, (_, i) => this.loop(i))).then(() => {});
  }

  private wakeAll(): void {
    for (const w of [...this.wakers]) w();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const c of this.currents) c.interrupt.interrupt();
    this.wakeAll();
    if (this.o.shared) await this.o.shared.stop();
    await this.loopDone;
    await Promise.all([...this.recordings]);
  }

  /** queue_remaining read from the database now (shared queue), else the kept count. */
  async queueRemainingNow(owner?: string): Promise<number> {
    if (!this.o.shared) return this.queueRemaining(owner);
    const n = this.o.perOwnerStatus && owner !== undefined ? await ownerPendingCount(this.o.storage, owner) : await pendingCount(this.o.storage.db);
    if (this.o.perOwnerStatus && owner !== undefined) this.setRemaining(owner, n);
    else this.remaining = n;
    return n;
  }

  private setRemaining(owner: string, n: number): void {
    if (n === 0) this.remainingBy.delete(owner);
    else if (this.remainingBy.size < 100_000 || this.remainingBy.has(owner)) this.remainingBy.set(owner, n);
  }

  /** queue_remaining: everyone's, or with per-owner status (hosted runtime) the owner's own. */
  queueRemaining(owner?: string): number {
    if (this.o.perOwnerStatus && owner !== undefined) return this.remainingBy.get(owner) ?? 0;
    return this.remaining;
  }

  private counted(owner: string, delta: number): void {
    // Shared queue: other processes change the counts too; they are read from the database when sent.
    if (this.o.shared) return;
    this.remaining = Math.max(0, this.remaining + delta);
    const n = Math.max(0, (this.remainingBy.get(owner) ?? 0) + delta);
    if (n === 0) this.remainingBy.delete(owner);
    else this.remainingBy.set(owner, n);
  }

  /** The prompt now running and its last node (for a socket that connects mid-run). */
  running(): { promptId: string; clientId: string | null; lastNode: string | null; owner: string } | null {
    const c = this.currents.values().next().value;
    return c ? this.describe(c) : null;
  }

  /** Every prompt running in this process. */
  runningAll(): Array<{ promptId: string; clientId: string | null; lastNode: string | null; owner: string }> {
    return [...this.currents].map((c) => this.describe(c));
  }

  private describe(c: Current): { promptId: string; clientId: string | null; lastNode: string | null; owner: string } {
    return { promptId: c.record.id, clientId: c.clientId, lastNode: c.lastNode, owner: c.record.owner };
  }

  statusMessage(sid?: string, owner?: string): Record<string, unknown> {
    const data: Record<string, unknown> = { status: { exec_info: { queue_remaining: this.queueRemaining(owner) } } };
    if (sid !== undefined) data.sid = sid;
    return data;
  }

  /** A status broadcast after `owner`'s queue changed: to everyone, or (per-owner status) to that owner's sockets. */
  broadcastStatus(owner?: string, known?: number): void {
    if (this.o.shared) {
      const key = owner ?? '';
      const seq = (this.statusSeq.get(key) ?? 0) + 1;
      this.statusSeq.set(key, seq);
      if (known !== undefined && owner !== undefined && this.o.perOwnerStatus) {
        // Read just now with a change of the queue: reads still on their way are older.
        this.statusSeq.delete(key);
        this.setRemaining(owner, known);
        this.sendStatus(owner);
        return;
      }
      void this.queueRemainingNow(owner)
        .then(() => {
          if (this.statusSeq.get(key) !== seq) return;
          this.statusSeq.delete(key);
          this.sendStatus(owner);
        })
        .catch((err) => this.o.log.warn({ err }, 'queue status could not be read'));
      return;
    }
    this.sendStatus(owner);
  }

  private sendStatus(owner?: string): void {
    if (this.o.perOwnerStatus && owner !== undefined) {
      this.o.hub.sendCoalesced(null, 'status', () => JSON.stringify({ type: 'status', data: this.statusMessage(undefined, owner) }), owner);
      return;
    }
    this.o.hub.sendCoalesced(null, 'status', () => JSON.stringify({ type: 'status', data: this.statusMessage() }));
  }

  /** POST /prompt: validates and queues; throws PromptRejected with the 400 body. */
  async submit(req: SubmitRequest): Promise<{ prompt_id: string; number: number; node_errors: Record<string, unknown> }> {
    const body = req.body;
    if (!('prompt' in body)) reject('no_prompt', 'No prompt provided');
    let promptId: string;
    const given = body.prompt_id;
    if (given === undefined || given === null) promptId = randomUUID();
    else if (typeof given === 'string' && UUID_CANONICAL.test(given)) promptId = given;
    else reject('invalid_prompt_id', 'Invalid prompt_id', `prompt_id must be a canonical lowercase UUID string, got ${JSON.stringify(given)?.slice(0, 100)}`);

    // null: numbered by the shared queue as it is stored (one sequence for every process).
    let number: number | null;
    let front = false;
    if ('number' in body && body.number !== null && body.number !== undefined) {
      number = typeof body.number === 'number' ? body.number : typeof body.number === 'string' ? Number(body.number) : NaN;
      if (!Number.isFinite(number)) reject('invalid_prompt', 'Invalid number', 'number must be a finite number');
    } else {
      front = body.front === true || body.front === 'true' || body.front === 1;
      number = this.o.shared ? null : front ? -this.counter++ : this.counter++;
    }

    const extra = body.extra_data;
    if (extra !== undefined && extra !== null && (typeof extra !== 'object' || Array.isArray(extra))) reject('invalid_prompt', 'Invalid extra_data', 'extra_data must be an object');
    const extraData: Record<string, unknown> = { ...((extra as Record<string, unknown>) ?? {}) };
    if ('client_id' in body) extraData.client_id = body.client_id;
    if (req.usageSource !== undefined) extraData.comfy_usage_source = req.usageSource;

    if (body.prompt && typeof body.prompt === 'object' && Object.keys(body.prompt).length > MAX_PROMPT_NODES) {
      reject('invalid_prompt', 'Prompt too large', `A prompt may have at most ${MAX_PROMPT_NODES} nodes`);
    }
    const scope = this.o.scopeFor?.(req.owner);
    if (this.o.fetchInputs && body.prompt && typeof body.prompt === 'object' && !Array.isArray(body.prompt)) await this.o.fetchInputs(body.prompt as Record<string, unknown>, scope?.dirs ?? this.o.dirs);
    const v = await validatePrompt(this.o.executor.registry, body.prompt, body.partial_execution_targets, scope);
    if (!v.ok) throw new PromptRejected({ error: v.error!, node_errors: v.nodeErrors });

    // Secret node inputs (API keys) leave the stored prompt; their values and every copy of them too.
    const secret = extractSecretInputs(this.o.executor.registry, body.prompt);
    if (secret.linked.length) throw new PromptRejected(linkedSecretError(secret.linked));
    const sensitive: Record<string, unknown> = {};
    delete extraData[NODE_SECRETS_KEY];
    for (const k of SENSITIVE_KEYS) {
      if (k in extraData) {
        sensitive[k] = extraData[k];
        delete extraData[k];
      }
    }
    const secretValues = Object.values(secret.secrets).flatMap((m) => Object.values(m));
    if (Object.keys(secret.secrets).length) sensitive[NODE_SECRETS_KEY] = secret.secrets;
    for (const v of Object.values(sensitive)) if (typeof v === 'string') secretValues.push(v);
    if (secretValues.length) scrubSecrets([secret.prompt, extraData], secretValues);
    extraData.create_time = Date.now();
    const { workflowId, workflowVersionId } = workflowLink(body, extraData);
    this.openGate(promptId);
    const createTime = extraData.create_time as number;
    const row = { id: promptId, owner: req.owner, number, front: number === null && front, prompt: secret.prompt, extraData, sensitive, outputsToExecute: v.outputs, workflowId, workflowVersionId, createTime };
    // An idle runner with nothing queued takes this prompt as it is stored: no claim transaction on the critical path.
    const claim = number !== null && this.wakers.size > 0 && this.handoff === null && this.remaining === 0 && !this.stopped;
    const inserted = this.inserter.insert(claim ? { ...row, claimedBy: { worker: this.workerId, startTime: createTime } } : row);
    if (claim) {
      // Handed to the engine now, while the row is stored: an execution thread wakes meanwhile and starts its
      // first node once the row is committed (never, if it is not).
      this.handoff = {
        record: { ...row, number: number!, status: 'in_progress', sensitive: Object.keys(sensitive).length ? sensitive : null, startTime: createTime, endTime: null, outputs: null, meta: null, statusMessages: null },
        stored: inserted.then(
          () => true,
          () => false,
        ),
      };
      this.wakeAll();
    }
    try {
      number = await inserted;
    } catch (err) {
      this.releaseGate(promptId);
      if (err instanceof DuplicatePromptId) reject('invalid_prompt_id', 'Prompt id already exists', `A prompt with id ${promptId} already exists`);
      throw err;
    }
    this.counted(req.owner, 1);
    // With the prompt's own messages once its answer is out: one socket write instead of two.
    const owner = req.owner;
    void this.gates.get(promptId)?.promise.then(() => this.broadcastStatus(owner));
    if (!claim) this.wakeAll();
    return { prompt_id: promptId, number, node_errors: v.nodeErrors };
  }

  /** Until the POST /prompt response is written, the prompt's first message waits (clients subscribe after the answer). */
  private openGate(id: string): void {
    let release!: () => void;
    const promise = new Promise<void>((r) => (release = r));
    this.gates.set(id, { promise, release });
  }

  releaseGate(id: string): void {
    const g = this.gates.get(id);
    if (!g) return;
    this.gates.delete(id);
    g.release();
  }

  private async waitGate(id: string): Promise<void> {
    const g = this.gates.get(id);
    if (!g) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([g.promise, new Promise<void>((r) => (timer = setTimeout(r, 5_000)))]);
    clearTimeout(timer);
    this.releaseGate(id);
  }

  /** POST /interrupt: the running prompt (or only the named one, when it is the one running). */
  interrupt(promptId?: string, owner?: string): boolean {
    let hit = false;
    for (const c of this.currents) {
      if (promptId !== undefined && c.record.id !== promptId) continue;
      if (owner !== undefined && c.record.owner !== owner) continue;
      c.interrupt.interrupt();
      hit = true;
    }
    return hit;
  }

  /** Cloud cancel of a claimed prompt: interrupted now, or as soon as its run starts (here or, with the shared queue, in any process). */
  cancelRunning(promptId: string): void {
    this.cancelHere(promptId);
    this.o.broadcastCancel?.(promptId);
  }

  /** A cancel for a prompt that may be claimed by this process. */
  cancelHere(promptId: string): void {
    for (const c of this.currents) if (c.record.id === promptId) return c.interrupt.interrupt();
    // Bounded: the oldest requests (long settled) make room.
    if (this.cancelRequested.size >= 10_000) this.cancelRequested.delete(this.cancelRequested.values().next().value!);
    this.cancelRequested.add(promptId);
  }

  /** POST /interrupt with the shared queue: the owner's running prompt(s) (or the named one), wherever they run. */
  async interruptShared(owner: string | undefined, promptId?: string): Promise<void> {
    for (const id of await runningIds(this.o.storage.db, owner)) if (promptId === undefined || id === promptId) this.cancelRunning(id);
  }

  /**
   * Shared queue: runs a prompt this process claimed. `engineFree` is called
   * once the engine is done with it, before its end is written (the next
   * prompt may start meanwhile; its messages wait for this one's last).
   */
  async runClaimed(record: PromptRecord, engineFree?: () => void): Promise<void> {
    const slot = this.claimSlots.pop() ?? this.claimSlotCount++;
    try {
      await this.runOne(record, slot, engineFree);
    } finally {
      this.claimSlots.push(slot);
    }
    if (this.pendingFree && this.currents.size === 0) {
      const free = this.pendingFree;
      this.pendingFree = false;
      this.o.executor.freeMemory(free);
    }
  }

  /** Shared queue: a prompt's worker died; its client hears of it as of any failure. */
  lost(record: PromptRecord, requeued: boolean): void {
    const clientId = typeof record.extraData.client_id === 'string' ? record.extraData.client_id : null;
    // Settled as failed (not run again): charged for the time it ran, as every started job (dedup per job: once).
    if (!requeued) this.o.onFinished?.({ promptId: record.id, owner: record.owner, status: 'failed', startTime: record.startTime ?? Date.now(), endTime: Date.now() });
    if (!requeued && clientId !== null) {
      const now = Date.now();
      this.o.hub.send('execution_error', { prompt_id: record.id, node_id: null, node_type: null, executed: [], exception_message: LOST_MESSAGE, exception_type: 'WorkerLost', traceback: [], current_inputs: {}, current_outputs: [], timestamp: now }, clientId, record.owner);
      this.o.hub.send('executing', { node: null, prompt_id: record.id }, clientId, record.owner);
    }
    this.broadcastStatus(record.owner);
  }

  /** A pending prompt was marked cancelled in the database (so no claim can take it). */
  pendingCancelled(promptId: string, owner = ''): void {
    this.releaseGate(promptId);
    this.counted(owner, -1);
    // It ended without running: one more row of history.
    if (!this.o.shared) this.finished += 1;
    this.broadcastStatus(owner);
  }

  /** The models the engine holds now (/system_stats). */
  loadedModels(): EngineModel[] {
    return this.o.executor.loadedModels?.() ?? [];
  }

  /** POST /free: free_memory empties the output cache (after the running prompt, as the reference). */
  free(opts: { freeMemory: boolean; unloadModels: boolean }): void {
    if (!opts.freeMemory && !opts.unloadModels) return;
    // Requests while a prompt runs add up and are applied after it.
    const prev = this.pendingFree || { unloadModels: false, freeMemory: false };
    const free = { unloadModels: prev.unloadModels || opts.unloadModels, freeMemory: prev.freeMemory || opts.freeMemory };
    if (this.currents.size > 0) this.pendingFree = free;
    else this.o.executor.freeMemory(free);
  }

  async deletePending(ids: string[] | 'all', owner?: string): Promise<void> {
    const removed = await deletePending(this.o.storage.db, ids, owner);
    for (const id of removed) this.releaseGate(id);
    if (removed.length) {
      this.counted(owner ?? '', -removed.length);
      this.broadcastStatus(owner ?? '');
    }
  }

  /**
   * How the end being recorded trims the history. Shared queue: every so many
   * ends, counted (every process adds to it). Otherwise this process owns the
   * table and keeps the count, so the common end (history full, one prompt
   * over) deletes one row found through the end_time index, with no count;
   * a recount every RECOUNT_EVERY ends takes in what the count cannot see.
   */
  private historyTrim(): HistoryTrim | undefined {
    const keep = this.o.maxHistory;
    if (this.o.shared) return ++this.completions % 20 === 0 ? { keep } : undefined;
    if (++this.completions % RECOUNT_EVERY === 0) return { keep };
    return this.finished + 1 > keep ? { keep, finished: this.finished + 1 } : undefined;
  }

  /** History rows were removed by a client. */
  historyRemoved(n: number): void {
    this.finished = Math.max(0, this.finished - n);
  }

  private async loop(slot: number): Promise<void> {
    let record: PromptRecord | null = null;
    /** Settles whether `record`, handed over as it is being stored, was stored. */
    let stored: Promise<boolean> | undefined;
    while (!this.stopped) {
      if (!record && this.handoff) {
        // Taken at once: another idle slot's loop must not take the same prompt.
        const handoff = this.handoff;
        this.handoff = null;
        if (this.stopped) {
          if (await handoff.stored) await releaseClaim(this.o.storage.db, handoff.record.id, this.workerId).catch((err) => this.o.log.error({ err }, 'returning a claimed prompt to the queue failed'));
          break;
        }
        record = handoff.record;
        stored = handoff.stored;
      }
      if (!record) {
        try {
          const limit = this.o.maxPerOwner;
          if ((this.o.slots ?? 1) > 1 && limit !== undefined && limit > 0) {
            // One claim at a time in this process: two slots must not both see an owner's last free place.
            const turn = this.claimTurn.then(() => claimNextWithinLimit(this.o.storage, this.workerId, Date.now(), limit));
            this.claimTurn = turn.then(
              () => {},
              () => {},
            );
            record = await turn;
          } else record = await claimNext(this.o.storage, this.workerId, Date.now());
        } catch (err) {
          this.o.log.error({ err }, 'claiming the next prompt failed');
        }
      }
      if (!record) {
        // stop() may have come while the claim was in flight: its wake-up found no sleeper.
        if (this.stopped) break;
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, this.o.storage.dialect.kind === 'postgres' ? 500 : 2_000);
          const w = () => {
            this.wakers.delete(w);
            clearTimeout(t);
            resolve();
          };
          this.wakers.add(w);
        });
        continue;
      }
      const running: PromptRecord = record;
      const runningStored = stored;
      stored = undefined;
      try {
        record = await this.runOne(running, slot, undefined, runningStored);
      } catch (err) {
        this.o.log.error({ err, prompt_id: running.id }, 'prompt failed outside the engine');
        record = null;
      }
      // Another slot's prompt ended while this one ran: that slot may take what it would have left queued.
      if ((this.o.slots ?? 1) > 1) this.wakeAll();
      if (this.pendingFree && this.currents.size === 0) {
        const free = this.pendingFree;
        this.pendingFree = false;
        this.o.executor.freeMemory(free);
      }
    }
  }

  /**
   * The run's messages. The prompt runs at once, but until its POST answer is
   * on the wire its messages are held (in order), then released together.
   */
  private sink(c: Current, held: Array<() => void> | null, throttle: ProgressThrottle): ExecutionSink & { out(f: () => void, key?: string): void } {
    const hub = this.o.hub;
    const client = c.clientId;
    const owner = c.record.owner;
    c.held = held;
    // While held, a coalescible message replaces its held predecessor, so holding stays bounded.
    const heldKeys = new Map<string, number>();
    const out = (f: () => void, key?: string) => {
      if (!c.held) return f();
      if (key !== undefined) {
        const at = heldKeys.get(key);
        if (at !== undefined) {
          c.held[at] = f;
          return;
        }
        heldKeys.set(key, c.held.length);
      }
      c.held.push(f);
    };
    return {
      out,
      send: (type, data, broadcast) => {
        if (type === 'executing') c.lastNode = (data.display_node as string) ?? (data.node as string);
        if (broadcast) out(() => hub.send(type, data, null, owner));
        else if (client !== null) out(() => hub.send(type, data, client, owner));
      },
      progress: (data) => {
        if (client === null) return;
        const text = JSON.stringify({ type: 'progress', data });
        const key = `progress:${data.prompt_id}:${data.node}`;
        throttle.run(key, () => out(() => hub.sendCoalesced(client, key, () => text, owner), key));
      },
      progressState: (reg: ProgressView) => {
        if (client === null) return;
        const key = `progress_state:${reg.promptId}`;
        throttle.run(key, () => out(() => hub.sendCoalesced(client, key, () => JSON.stringify({ type: 'progress_state', data: reg.snapshot() }), owner), key));
      },
      preview: (image, format, meta) => {
        if (client === null) return;
        const withMeta = hub.features(client, owner).supports_preview_metadata === true;
        out(() => hub.sendBinary(client, previewFrame(image, format, withMeta ? meta : null), owner));
      },
    };
  }

  private fileWrittenFor(record: PromptRecord): NodeEnv['fileWritten'] {
    const hook = this.o.fileWritten;
    if (!hook) return undefined;
    const job = { promptId: record.id, owner: record.owner };
    return (info) => hook(info, job);
  }

  /** Runs one prompt, records its end and returns the next claimed prompt (or null). */
  private async runOne(record: PromptRecord, slot: number, engineFree?: () => void, stored?: Promise<boolean>): Promise<PromptRecord | null> {
    const clientId = typeof record.extraData.client_id === 'string' ? record.extraData.client_id : null;
    const current: Current = { record, interrupt: new InterruptSignal(), clientId, lastNode: null, held: null };
    this.currents.add(current);
    if (this.cancelRequested.delete(record.id)) current.interrupt.interrupt();
    const gate = this.gates.get(record.id);
    // The slot's previous prompt's last messages may not be out yet (its end is still being written): this one's wait for them.
    const prior = this.lastSent.get(slot);
    let sent!: () => void;
    const allSent = new Promise<void>((r) => (sent = r));
    this.lastSent.set(slot, allSent);
    const throttle = new ProgressThrottle();
    const coalesce = gate === undefined && (this.o.relayCoalesceMs ?? 0) > 0;
    const sink = this.sink(current, gate || prior || coalesce ? [] : null, throttle);
    // Held messages leave once the answer is out and the prompt has ended (a short prompt's messages
    // then take one socket write with its last one), or HOLD_MS into the run, whichever comes last.
    let released = gate === undefined;
    let priorSent = prior === undefined;
    let ended = false;
    let holdTimer: NodeJS.Timeout | undefined;
    const settle = () => {
      if (current.held !== null || !ended) return;
      if (this.lastSent.get(slot) === allSent) this.lastSent.delete(slot);
      sent();
    };
    const flushHeld = () => {
      if (!released || !priorSent || current.held === null) return;
      if ((gate || coalesce) && !ended && holdTimer !== undefined) return;
      clearTimeout(holdTimer);
      const held = current.held;
      current.held = null;
      for (const f of held) f();
      settle();
    };
    if (gate) {
      holdTimer = setTimeout(() => {
        holdTimer = undefined;
        flushHeld();
      }, HOLD_MS);
      void this.waitGate(record.id).then(() => {
        released = true;
        flushHeld();
      });
    }
    if (coalesce) {
      holdTimer = setTimeout(() => {
        holdTimer = undefined;
        flushHeld();
      }, this.o.relayCoalesceMs);
    }
    void prior?.then(() => {
      priorSent = true;
      flushHeld();
    });
    let status: JobStatus = 'failed';
    let result: RunResult | undefined;
    /** Records the run's end (claiming the next prompt in the same transaction when asked) and lets its last messages go. */
    const finish = async (fusedClaim: boolean): Promise<PromptRecord | null> => {
      let next: PromptRecord | null = null;
      const completion: { status: JobStatus; endTime: number; outputs: RunResult['outputs']; meta: RunResult['meta']; messages: RunResult['messages'] } = { status, endTime: Date.now(), outputs: result?.outputs ?? {}, meta: result?.meta ?? {}, messages: result?.messages ?? [] };
      let recorded = false;
      let remaining: number | undefined;
      try {
        // Shared queue with per-owner status: the owner's count comes back with the end (no second query for the status).
        const countOwner = this.o.shared !== undefined && this.o.perOwnerStatus === true;
        const trim = this.historyTrim();
        let done: Awaited<ReturnType<typeof completeAndClaimNext>>;
        try {
          done = await completeAndClaimNext(this.o.storage, record.id, completion, fusedClaim ? this.workerId : null, trim, countOwner);
        } catch (err) {
          // Outputs that cannot be stored (they are bounded, so this is the database refusing them) must not leave the
          // prompt running forever or uncharged: it ends failed, without them, and says why.
          this.o.log.error({ err, prompt_id: record.id }, 'the end of a prompt could not be recorded with its outputs; recording it failed');
          status = 'failed';
          completion.status = status;
          completion.outputs = {};
          completion.meta = {};
          completion.messages = [
            ...completion.messages.filter(([t]) => t === 'execution_start' || t === 'execution_cached'),
            ['execution_error', { prompt_id: record.id, node_id: null, node_type: null, executed: result?.executed ?? [], exception_message: 'The prompt\'s outputs could not be recorded\n', exception_type: 'OutputRecordError', traceback: [], current_inputs: {}, current_outputs: [], timestamp: completion.endTime }],
          ];
          done = await completeAndClaimNext(this.o.storage, record.id, completion, null, trim, countOwner);
        }
        remaining = done.remaining;
        recorded = true;
        next = done.next;
        this.finished += 1 - done.trimmed;
        if (!this.o.shared && this.completions % RECOUNT_EVERY === 0) this.finished = await finishedCount(this.o.storage.db);
        this.o.onFinished?.({ promptId: record.id, owner: record.owner, status, startTime: record.startTime ?? completion.endTime, endTime: completion.endTime });
        this.counted(record.owner, -1);
      } finally {
        this.currents.delete(current);
        throttle.flush();
        // Unrecorded (the database failed): whoever settles the prompt later tells its client.
        if (recorded && clientId !== null) sink.out(() => this.o.hub.send('executing', { node: null, prompt_id: record.id }, clientId, record.owner));
        if (recorded) sink.out(() => this.broadcastStatus(record.owner, remaining));
        ended = true;
        // Never left waiting: the next prompt's messages wait for these.
        flushHeld();
        settle();
      }
      return next;
    };
    // Handed over as it was being stored: known (almost always) by the time the engine is done, else awaited.
    let storedOk: boolean | undefined = stored === undefined ? true : undefined;
    void stored?.then((ok) => (storedOk = ok));
    /** A prompt that could not be stored (its POST answered an error) ran nothing: nothing is recorded or sent. */
    const dropped = (): null => {
      clearTimeout(holdTimer);
      this.currents.delete(current);
      current.held = null;
      ended = true;
      settle();
      return null;
    };
    try {
      const scope = this.o.scopeFor?.(record.owner) ?? { dirs: this.o.dirs };
      await this.o.fetchInputs?.(record.prompt, scope.dirs);
      result = await this.o.executor.run({
        promptId: record.id,
        prompt: record.prompt,
        outputs: record.outputsToExecute,
        extraData: { ...record.extraData, ...(record.sensitive ?? {}) },
        sink,
        interrupt: current.interrupt,
        env: { ...scope, fileWritten: this.fileWrittenFor(record), secret: this.o.readSecret && ((name: string) => this.o.readSecret!(record.owner, name)) },
        stored,
      }, record.owner);
      status = result.status === 'success' ? 'completed' : result.interrupted ? 'cancelled' : 'failed';
    } catch (err) {
      engineFree?.();
      if (!(storedOk ?? (await stored!))) dropped();
      else await finish(false);
      throw err;
    }
    engineFree?.();
    if (!(storedOk ?? (await stored!))) return dropped();
    // With nothing else known to be queued, the end is recorded alone (a prompt stored meanwhile is claimed by the loop).
    // Shared queue: the next prompt comes with the next job; history is trimmed every so many ends (its count is everyone's).
    // A per-owner limit is checked by its own claim, not one that comes with the end.
    const limited = (this.o.slots ?? 1) > 1 && (this.o.maxPerOwner ?? 0) > 0;
    const more = !this.o.shared && !this.stopped && this.remaining > 1 && !limited;
    if (!more || !this.o.executor.offThread) return finish(more);
    // Prompts run in a thread: the next one is claimed and handed to it first, and this one's end is recorded while it
    // runs (its messages wait for this one's last, through the slot's lastSent chain).
    let early: PromptRecord | null = null;
    try {
      early = await claimNext(this.o.storage, this.workerId, Date.now());
    } catch (err) {
      this.o.log.error({ err }, 'claiming the next prompt failed');
    }
    if (!early) return finish(false);
    const recording = finish(false).then(
      () => {},
      (err) => this.o.log.error({ err, prompt_id: record.id }, 'recording the end of a prompt failed'),
    );
    this.recordings.add(recording);
    void recording.finally(() => this.recordings.delete(recording));
    return early;
  }
}
