import { loadedModels, unloadAll, type LoadedModel } from '../models/sd1.ts';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import {
  ExecutionBlocker,
  GraphBuilder,
  InterruptError,
  isLink,
  type GraphSpec,
  type NodeContext,
  type NodeEnv,
  type NodeReturn,
} from '../nodes/api.ts';
import { OutputCache, type CacheEntry, type CachePolicy } from './cache.ts';
import { DynamicPrompt, ExecutionList } from './graph.ts';
import { ProgressRegistry, type ProgressView } from './progress.ts';
import type { NodeClass, NodeRegistry } from './registry.ts';
import { SignatureTable, Signatures } from './signature.ts';
import type { PromptGraph } from './validate.ts';

/** Where a run's messages go (the runtime routes them to the prompt's WebSocket client). */
export interface ExecutionSink {
  /** `history`: the message is one of the run's recorded status messages (RunResult.messages). */
  send(type: string, data: Record<string, unknown>, broadcast?: boolean, history?: boolean): void;
  /** A node's progress; a sink may keep only the latest per node. */
  progress(data: { value: number; max: number; prompt_id: string; node: string }): void;
  /** The progress map changed; a sink may coalesce and read `snapshot()` when it sends. */
  progressState(registry: ProgressView): void;
  preview(image: Buffer, format: 'png' | 'jpeg', meta: Record<string, unknown>): void;
  /**
   * A node ran (not from the cache) or its UI output was recorded. A runtime that may have to
   * end a run from outside (a terminated execution thread) keeps these to report what ran.
   */
  recorded?(id: string, executed: boolean, ui?: { meta: NodeMeta; output: Record<string, unknown[]> }): void;
}

/**
 * Per-prompt bounds. A prompt (and the node packs it runs) is untrusted: a node that expands
 * into itself or a chain that doubles a string must end as an execution_error, not take the
 * process's memory. Each bound is off when not a positive number.
 */
export interface ExecutorLimits {
  /** Nodes that expansions may add to one prompt in all. */
  maxExpandedNodes?: number;
  /** How deep expansions may nest (an expansion of an expanded node is one deeper). */
  maxExpansionDepth?: number;
  /** Size of the prompt's recorded UI outputs (history, `executed` messages), as JSON text. */
  maxOutputBytes?: number;
  /** Items in the prompt's recorded UI outputs, over every node and list. */
  maxOutputItems?: number;
}

export const DEFAULT_LIMITS: Required<ExecutorLimits> = {
  maxExpandedNodes: 100_000,
  maxExpansionDepth: 10_000,
  maxOutputBytes: 64 * 1024 * 1024,
  maxOutputItems: 100_000,
};

/** A bound of ExecutorLimits was passed: the run ends with an execution_error that names it. */
export class PromptLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PromptLimitExceeded';
  }
}

/**
 * Set by POST /interrupt; checked between nodes and by `checkInterrupt()` inside long ones. The AbortSignal
 * (for async work) is made when first asked for: most prompts never need one, and one costs tens of µs.
 */
export class InterruptSignal {
  private controller: AbortController | undefined;
  private aborted = false;
  private readonly listeners = new Set<() => void>();
  /** `poll` is read whenever the flag is checked: an interrupt set by another thread is seen inside a synchronous node. */
  constructor(private readonly poll?: () => boolean) {}
  get interrupted(): boolean {
    if (this.poll !== undefined && !this.aborted && this.poll()) this.interrupt();
    return this.aborted;
  }
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(new InterruptError());
    }
    return this.controller.signal;
  }
  /** Calls `f` once, when the signal is interrupted (at once if it is already); the returned function removes it. */
  onInterrupt(f: () => void): () => void {
    if (this.aborted) {
      f();
      return () => {};
    }
    const once = () => f();
    this.listeners.add(once);
    return () => this.listeners.delete(once);
  }
  interrupt(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.controller?.abort(new InterruptError());
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const f of listeners) f();
  }
}

export interface PromptRun {
  promptId: string;
  prompt: PromptGraph;
  /** Output node ids to execute (validation's good outputs). */
  outputs: string[];
  /** extra_data with the sensitive keys put back (never stored with history). */
  extraData: Record<string, unknown>;
  sink: ExecutionSink;
  interrupt: InterruptSignal;
  env: Omit<NodeEnv, 'prompt' | 'extraData'>;
  /**
   * A prompt handed over while its row is being stored: no node runs before this settles true; false (it could
   * not be stored, its POST failed) ends the run at once with nothing run, sent or recorded.
   */
  stored?: Promise<boolean>;
}

export interface NodeMeta {
  node_id: string;
  display_node: string;
  parent_node: string | null;
  real_node_id: string;
}

export interface RunResult {
  status: 'success' | 'error';
  interrupted: boolean;
  /** The history's status messages: execution_start, execution_cached and the ending message, with timestamps. */
  messages: Array<[string, Record<string, unknown>]>;
  outputs: Record<string, Record<string, unknown[]>>;
  meta: Record<string, NodeMeta>;
  /** Nodes that ran (not cached) in this prompt. */
  executed: string[];
}

interface UiEntry {
  meta: NodeMeta;
  output: Record<string, unknown[]>;
}

type Outcome = { kind: 'success' } | { kind: 'pending' } | { kind: 'failure'; details: Record<string, unknown>; interrupted: boolean };

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

const PENDING_MARK = Symbol('pending');
const YIELD_EVERY_MS = 10;

/** Python's traceback.format_tb shape from a JS stack. */
function traceback(err: unknown): string[] {
  const stack = err instanceof Error && typeof err.stack === 'string' ? err.stack.split('\n').slice(1) : [];
  return stack.slice(0, 50).map((line) => {
    const m = /at (?:(.+?) \()?(.+?):(\d+):\d+\)?$/.exec(line.trim());
    return m ? `  File "${m[2]}", line ${m[3]}, in ${m[1] ?? '<module>'}\n` : `  ${line.trim()}\n`;
  });
}

function exceptionType(err: unknown): string {
  if (err instanceof Error) return (err as { pyType?: string }).pyType ?? err.name ?? 'Error';
  return 'Exception';
}

function exceptionMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The reference's format_value: plain values as they are, anything else as text. */
function formatValue(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return typeof v === 'string' && v.length > 10_000 ? v.slice(0, 10_000) : v;
  if (v instanceof ExecutionBlocker) return 'ExecutionBlocker';
  if (typeof (v as { describe?: unknown }).describe === 'function') return String((v as { describe(): string }).describe());
  try {
    const s = JSON.stringify(v);
    if (s !== undefined && s.length <= 10_000 && Object.getPrototypeOf(v) === Object.prototype) return v;
    if (s !== undefined && s.length <= 10_000 && Array.isArray(v)) return v;
  } catch {
    /* not JSON */
  }
  return Object.prototype.toString.call(v);
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

async function settleNow(p: PromiseLike<unknown>): Promise<Settled | typeof PENDING_MARK> {
  try {
    const v = await Promise.race([p, Promise.resolve(PENDING_MARK)]);
    return v === PENDING_MARK ? PENDING_MARK : { ok: true, value: v };
  } catch (error) {
    return { ok: false, error };
  }
}

/** One call's return turned into the reference's (graph, result) / result shape. */
interface Normalised {
  result: unknown[];
  ui?: Record<string, unknown[]>;
  expand?: GraphSpec;
}

function normalise(r: unknown, cls: NodeClass): Normalised {
  const n = cls.outputTypes.length;
  const blockerTuple = (b: ExecutionBlocker) => Array.from({ length: n }, () => b);
  if (r instanceof ExecutionBlocker) return { result: blockerTuple(r) };
  if (Array.isArray(r)) return { result: r };
  if (r && typeof r === 'object') {
    const o = r as { result?: unknown; ui?: Record<string, unknown[]>; expand?: GraphSpec };
    const result = o.result instanceof ExecutionBlocker ? blockerTuple(o.result) : Array.isArray(o.result) ? o.result : [];
    return { result, ui: o.ui, expand: o.expand };
  }
  return { result: [] };
}

/** merge_result_data: per output slot, collect the calls' values (or concatenate for OUTPUT_IS_LIST). */
function mergeResults(results: unknown[][], cls: NodeClass): unknown[][] {
  if (results.length === 0) return [];
  const width = results[0]!.length;
  const out: unknown[][] = [];
  for (let i = 0; i < width; i++) {
    if (cls.outputIsList[i]) {
      const value: unknown[] = [];
      for (const o of results) {
        const v = o[i];
        if (v instanceof ExecutionBlocker) value.push(v);
        else if (Array.isArray(v)) for (const x of v) value.push(x);
        else value.push(v);
      }
      out.push(value);
    } else out.push(results.map((o) => o[i]));
  }
  return out;
}

function mergeUi(uis: Array<Record<string, unknown[]>>): Record<string, unknown[]> {
  if (uis.length === 0) return {};
  const out: Record<string, unknown[]> = {};
  for (const k of Object.keys(uis[0]!)) out[k] = uis.flatMap((u) => (Array.isArray(u[k]) ? u[k]! : u[k] === undefined ? [] : [u[k]]));
  return out;
}

/**
 * Nodes kept out of the output cache: those the prompt marks `no_cache`, and with
 * --disable-subgraph-caching the nodes inside a UI subgraph (flattened ids "12:5")
 * whose value never leaves it. Output nodes and nodes feeding anything outside
 * their subgraph stay cached, so an unchanged re-queue still runs nothing.
 */
function noCacheNodes(prompt: PromptGraph, registry: NodeRegistry, subgraphInternals: boolean): Set<string> {
  const out = new Set<string>();
  for (const id in prompt) if ((prompt[id] as { no_cache?: unknown }).no_cache === true) out.add(id);
  if (!subgraphInternals) return out;
  const leaves = new Map<string, boolean>();
  for (const id in prompt) {
    for (const k in prompt[id]!.inputs ?? {}) {
      const v = prompt[id]!.inputs[k];
      if (!isLink(v) || !v[0].includes(':')) continue;
      const src = v[0];
      const inside = src.slice(0, src.lastIndexOf(':') + 1);
      if (!id.startsWith(inside)) leaves.set(src, true);
      else if (!leaves.has(src)) leaves.set(src, false);
    }
  }
  for (const id in prompt) {
    if (!id.includes(':') || leaves.get(id) === true) continue;
    if (registry.get(prompt[id]!.class_type)?.isOutput) continue;
    out.add(id);
  }
  return out;
}

class DuplicateNodeError extends Error {
  constructor(id: string) {
    super(`Attempt to add duplicate node ${id}. Ensure node ids are unique and deterministic or use graph_utils.GraphBuilder.`);
    this.name = 'DuplicateNodeError';
    (this as { pyType?: string }).pyType = 'comfy_execution.graph_utils.DuplicateNodeError';
  }
}

/** What a node's functions receive; methods on the prototype so a call allocates one small object. */
class NodeCtx implements NodeContext {
  constructor(
    private readonly run: Run,
    readonly nodeId: string,
    readonly listIndex: number,
  ) {}
  get promptId(): string {
    return this.run.spec.promptId;
  }
  get env(): NodeEnv {
    return this.run.env;
  }
  get signal(): AbortSignal {
    return this.run.spec.interrupt.signal;
  }
  checkInterrupt(): void {
    if (this.run.spec.interrupt.interrupted) throw new InterruptError();
  }
  progress(value: number, max: number): void {
    const run = this.run;
    run.progress.update(this.nodeId, value, max);
    run.spec.sink.progress({ value, max, prompt_id: run.spec.promptId, node: this.nodeId });
    run.spec.sink.progressState(run.progress);
  }
  preview(image: Buffer, format: 'png' | 'jpeg'): void {
    const { dyn, spec } = this.run;
    spec.sink.preview(image, format, {
      node_id: this.nodeId,
      prompt_id: spec.promptId,
      display_node_id: dyn.displayNodeId(this.nodeId),
      parent_node_id: dyn.parentNodeId(this.nodeId),
      real_node_id: dyn.realNodeId(this.nodeId),
    });
  }
}

/**
 * Under `--cache-none`: the nodes whose outputs no node of the prompt still
 * has to read. As the reference's execution list does (its per-consumer
 * execution cache, dropped as each consumer completes), an output is let go
 * once every node that links to it has completed, so a chain of large values
 * (1024² masks, 4 MiB each) holds a few at a time instead of all of them to
 * the prompt's end. Kept: the prompt's output nodes' values, and whatever a
 * node that never runs (not needed, a lazy input left unevaluated) links to.
 * The executor stops releasing in a run once an expansion has added nodes,
 * which may link to any node's outputs.
 */
class ConsumedOutputs {
  /** Links from prompt nodes not yet completed, by source node. */
  private readonly readers = new Map<string, number>();
  private readonly kept: ReadonlySet<string>;

  constructor(
    private readonly prompt: PromptRun['prompt'],
    outputs: readonly string[],
  ) {
    this.kept = new Set(outputs);
    for (const id of Object.keys(prompt)) for (const src of this.sources(id)) this.readers.set(src, (this.readers.get(src) ?? 0) + 1);
  }

  private sources(id: string): string[] {
    if (!Object.hasOwn(this.prompt, id)) return [];
    const inputs = (this.prompt[id] as { inputs?: Record<string, unknown> } | undefined)?.inputs;
    const out: string[] = [];
    if (inputs && typeof inputs === 'object') for (const v of Object.values(inputs)) if (isLink(v)) out.push(v[0]);
    return out;
  }

  /** Node `id` completed: the sources it was the last reader of. */
  completed(id: string): string[] {
    const done: string[] = [];
    for (const src of this.sources(id)) {
      const left = (this.readers.get(src) ?? 0) - 1;
      this.readers.set(src, left);
      if (left === 0 && !this.kept.has(src)) done.push(src);
    }
    return done;
  }
}

/** State of one prompt's run. */
class Run {
  readonly dyn: DynamicPrompt;
  readonly progress: ProgressRegistry;
  readonly sigs: Signatures;
  readonly list: ExecutionList;
  readonly values = new Map<string, CacheEntry>();
  readonly ui = new Map<string, UiEntry>();
  readonly executed = new Set<string>();
  readonly messages: Array<[string, Record<string, unknown>]> = [];
  readonly pendingAsync = new Map<string, Array<Promise<Settled>>>();
  readonly pendingSubgraph = new Map<string, { parts: Array<[boolean, unknown[]]>; children: string[] }>();
  readonly lazyRequested = new Map<string, Set<string>>();
  readonly env: NodeEnv;
  /** Nodes whose outputs stay out of the cache (`no_cache`, subgraph internals). */
  readonly noCache: ReadonlySet<string>;
  /** Nodes that evaluated a lazy input their key had left out: their result is not cached under that key. */
  readonly lazyKeyBroken = new Set<string>();
  currentOutputs: string[] = [];
  /** Nodes expansions added, and each expanded node's nesting depth (original nodes are 0). */
  private expandedCount = 0;
  /** Whether an expansion added nodes in this run (they may link to any node's outputs). */
  get expanded(): boolean {
    return this.expandedCount > 0 || this.pendingSubgraph.size > 0;
  }
  private readonly depth = new Map<string, number>();
  private outputBytes = 0;
  private outputItems = 0;

  constructor(
    readonly spec: PromptRun,
    readonly registry: NodeRegistry,
    readonly cache: OutputCache,
    table: SignatureTable,
    readonly lazyEvidence: Map<string, boolean>,
    readonly limits: Required<ExecutorLimits>,
  ) {
    this.dyn = new DynamicPrompt(spec.prompt);
    this.progress = new ProgressRegistry(spec.promptId, this.dyn);
    this.sigs = new Signatures(this.dyn, registry, table, (id) => this.isChanged(id), (id, input) => lazyEvidence.get(`${id}\0${input}`) === false);
    this.noCache = noCacheNodes(spec.prompt, registry, cache.policy.noSubgraphCaching === true);
    this.list = new ExecutionList(this.dyn, registry, (id) => this.available(id));
    this.env = { ...spec.env, prompt: spec.prompt, extraData: spec.extraData };
  }

  addMessage(type: string, data: Record<string, unknown>, broadcast = false): void {
    const d = { ...data, timestamp: Date.now() };
    this.messages.push([type, d]);
    this.spec.sink.send(type, d, broadcast, true);
  }

  /** IS_CHANGED with constant inputs only; an exception counts as "always changed". */
  isChanged(id: string): unknown {
    const node = this.dyn.getNode(id);
    const cls = this.registry.get(node.class_type);
    if (!cls?.def.isChanged) return undefined;
    const consts: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node.inputs ?? {})) if (!isLink(v)) consts[k] = v;
    try {
      return cls.def.isChanged(consts, this.env);
    } catch {
      return NaN;
    }
  }

  /** Whether a node's outputs are at hand: computed in this run, or found in the cache (then pinned for the run). */
  available(id: string): boolean {
    if (this.values.has(id)) return true;
    if (!this.dyn.hasNode(id) || this.noCache.has(id)) return false;
    const hit = this.cache.get(this.sigs.of(id));
    if (!hit) return false;
    this.values.set(id, hit);
    return true;
  }

  /** Records a node's UI output, within the prompt's output bounds. */
  setUi(id: string, entry: UiEntry): void {
    if (this.ui.has(id)) {
      this.ui.set(id, entry);
      this.spec.sink.recorded?.(id, false, entry);
      return;
    }
    const { maxOutputBytes, maxOutputItems } = this.limits;
    if (maxOutputItems > 0) {
      for (const k in entry.output) this.outputItems += Array.isArray(entry.output[k]) ? entry.output[k]!.length : 1;
      if (this.outputItems > maxOutputItems) throw new PromptLimitError(`The prompt's outputs exceed ${maxOutputItems} items (max_output_items)`);
    }
    // Outputs are stored and sent as JSON: what is kept is what JSON keeps (a function or a class instance in a
    // pack's UI output must not reach the history or another thread as something else).
    let text: string;
    try {
      text = JSON.stringify(entry.output) ?? '{}';
    } catch (err) {
      if (err instanceof RangeError) throw new PromptLimitError(`The prompt's outputs exceed ${maxOutputBytes} bytes (max_output_bytes)`);
      throw new TypeError(`The node's UI output is not JSON: ${exceptionMessage(err)}`);
    }
    this.outputBytes += text.length;
    if (maxOutputBytes > 0 && this.outputBytes > maxOutputBytes) throw new PromptLimitError(`The prompt's outputs exceed ${maxOutputBytes} bytes (max_output_bytes)`);
    entry = { meta: entry.meta, output: JSON.parse(text) as Record<string, unknown[]> };
    this.ui.set(id, entry);
    this.spec.sink.recorded?.(id, false, entry);
  }

  meta(id: string): NodeMeta {
    return { node_id: id, display_node: this.dyn.displayNodeId(id), parent_node: this.dyn.parentNodeId(id), real_node_id: this.dyn.realNodeId(id) };
  }

  context(id: string, listIndex: number): NodeContext {
    return new NodeCtx(this, id, listIndex);
  }

  /** get_input_data: links resolved to upstream output lists, constants wrapped in one-item lists, hidden inputs filled. */
  inputData(id: string, cls: NodeClass): { data: Record<string, unknown[]>; missing: Set<string> } {
    const node = this.dyn.getNode(id);
    const data: Record<string, unknown[]> = {};
    const missing = new Set<string>();
    for (const [name, v] of Object.entries(node.inputs ?? {})) {
      const info = cls.inputInfo(name);
      if (isLink(v) && !info?.options.rawLink) {
        // As the reference's get_input_data: a lazy input whose source is already at hand is passed even unrequested.
        const entry = this.available(v[0]) ? this.values.get(v[0]) : undefined;
        const slot = entry?.outputs[v[1]];
        if (!slot) {
          missing.add(name);
          data[name] = [null];
        } else data[name] = slot;
      } else if (info || cls.def.acceptAllInputs) data[name] = [v];
    }
    for (const [name, kind] of Object.entries(cls.def.inputs.hidden ?? {})) {
      const x = this.spec.extraData;
      if (kind === 'PROMPT') data[name] = [this.spec.prompt];
      else if (kind === 'DYNPROMPT') data[name] = [this.dyn];
      else if (kind === 'EXTRA_PNGINFO') data[name] = [x.extra_pnginfo ?? null];
      else if (kind === 'UNIQUE_ID') data[name] = [id];
      else if (kind === 'AUTH_TOKEN_COMFY_ORG') data[name] = [x.auth_token_comfy_org ?? null];
      else if (kind === 'API_KEY_COMFY_ORG') data[name] = [x.api_key_comfy_org ?? null];
    }
    return { data, missing };
  }

  /** _map_node_over_list: one call per list index (shorter lists repeat their last item), or one call with whole lists. */
  mapOverList(
    id: string,
    cls: NodeClass,
    data: Record<string, unknown[]>,
    fn: (args: Record<string, unknown>, ctx: NodeContext) => unknown,
    blockCb?: (b: ExecutionBlocker) => ExecutionBlocker,
    expanding = false,
  ): unknown[] {
    const results: unknown[] = [];
    const call = (args: Record<string, unknown>, index: number, wholeLists: boolean) => {
      if (this.spec.interrupt.interrupted) throw new InterruptError();
      let block: ExecutionBlocker | undefined;
      for (const v of Object.values(args)) {
        if (wholeLists && Array.isArray(v)) block = v.find((e) => e instanceof ExecutionBlocker) as ExecutionBlocker | undefined;
        else if (v instanceof ExecutionBlocker) block = v;
        if (block) break;
      }
      if (block) {
        results.push(blockCb ? blockCb(block) : block);
        return;
      }
      if (expanding) GraphBuilder.setDefaultPrefix(id, index);
      results.push(fn(args, this.context(id, index)));
    };
    const lists = Object.values(data);
    const maxLen = lists.reduce((m, l) => Math.max(m, l.length), 0);
    if (cls.def.inputIsList) call(data, 0, true);
    else if (maxLen === 0) call({}, 0, false);
    else {
      for (let i = 0; i < maxLen; i++) {
        const args: Record<string, unknown> = {};
        for (const [k, l] of Object.entries(data)) args[k] = l.length > i ? l[i] : l[l.length - 1];
        call(args, i, false);
      }
    }
    return results;
  }

  failure(id: string, err: unknown, inputs?: Record<string, unknown[]>): Outcome {
    const real = this.dyn.realNodeId(id);
    this.progress.error(id);
    this.spec.sink.progressState(this.progress);
    if (err instanceof InterruptError || this.spec.interrupt.interrupted) return { kind: 'failure', interrupted: true, details: { node_id: real } };
    const currentInputs: Record<string, unknown[]> = {};
    for (const [k, l] of Object.entries(inputs ?? {})) currentInputs[k] = l.map(formatValue);
    return {
      kind: 'failure',
      interrupted: false,
      details: {
        node_id: real,
        exception_message: `${exceptionMessage(err)}\n`,
        exception_type: exceptionType(err),
        traceback: traceback(err),
        current_inputs: currentInputs,
      },
    };
  }

  async executeNode(id: string): Promise<Outcome> {
    const node = this.dyn.getNode(id);
    const found = this.registry.get(node.class_type);
    // Validated against the server's registry; the registry that runs it (an execution thread's) may lack a class
    // whose pack failed to load there only.
    if (!found) throw Object.assign(new Error(`node type ${node.class_type} is not loaded where prompts run (its pack failed to load in the execution thread; the server log says why)`), { pyType: 'RuntimeError' });
    const cls = found;
    const sink = this.spec.sink;
    const promptId = this.spec.promptId;
    const display = this.dyn.displayNodeId(id);

    // The reference looks the node up by signature here too: an equal node computed earlier in this run is a hit.
    if (!this.pendingAsync.has(id) && !this.pendingSubgraph.has(id) && this.available(id)) {
      const cached = this.values.get(id)!;
      const ui = cached.ui as unknown as UiEntry | undefined;
      try {
        if (ui) this.setUi(id, ui);
        if (cached.children) this.collectChildUi(cached.children);
      } catch (err) {
        return this.failure(id, err);
      }
      sink.send('executed', { node: id, display_node: display, output: ui?.output ?? null, prompt_id: promptId });
      this.progress.finish(id);
      sink.progressState(this.progress);
      return { kind: 'success' };
    }

    let inputs: Record<string, unknown[]> | undefined;
    try {
      let output: unknown[][];
      let uiOut: Record<string, unknown[]> = {};
      let expansions: Array<[GraphSpec | undefined, unknown[]]> | undefined;
      const asyncResults = this.pendingAsync.get(id);
      const subgraph = this.pendingSubgraph.get(id);
      let children: string[] | undefined;
      if (asyncResults) {
        this.pendingAsync.delete(id);
        const settled = await Promise.all(asyncResults);
        const values = settled.map((s) => {
          if (!s.ok) throw s.error;
          return s.value;
        });
        ({ output, ui: uiOut, expansions } = this.fromReturns(values, cls));
      } else if (subgraph) {
        this.pendingSubgraph.delete(id);
        children = subgraph.children;
        const resolved: unknown[][] = [];
        for (const [isSub, result] of subgraph.parts) {
          if (!isSub) {
            resolved.push(result);
            continue;
          }
          const out: unknown[] = [];
          for (const r of result) {
            if (isLink(r)) {
              this.available(r[0]);
              for (const o of this.values.get(r[0])?.outputs[r[1]] ?? []) out.push(o);
            } else out.push(r);
          }
          resolved.push(out);
        }
        output = mergeResults(resolved, cls);
      } else {
        this.progress.start(id);
        sink.progressState(this.progress);
        const { data, missing } = this.inputData(id, cls);
        inputs = data;
        sink.send('executing', { node: id, display_node: display, prompt_id: promptId });
        if (cls.def.checkLazyStatus) {
          const lazyFn = cls.def.checkLazyStatus.bind(cls.def);
          const raw = this.mapOverList(id, cls, data, (args, ctx) => lazyFn(args, ctx));
          const needed = new Set<string>();
          for (const r of raw) {
            const names = isThenable(r) ? await r : r;
            if (Array.isArray(names)) for (const n of names) if (typeof n === 'string' && (!(n in data) || missing.has(n))) needed.add(n);
          }
          // Ask once per input: an input that stays unavailable after it was requested must not re-stage forever.
          let req = this.lazyRequested.get(id);
          let fresh = false;
          for (const n of needed) {
            if (req?.has(n) || !isLink(node.inputs?.[n])) continue;
            if (!req) this.lazyRequested.set(id, (req = new Set()));
            req.add(n);
            this.list.makeInputStrongLink(id, n);
            fresh = true;
          }
          if (fresh) return { kind: 'pending' };
          this.recordLazyEvidence(id, cls, node.inputs ?? {}, missing);
        }
        const blockCb = (b: ExecutionBlocker): ExecutionBlocker => {
          if (b.message === null) return b;
          sink.send('execution_error', {
            prompt_id: promptId,
            node_id: id,
            node_type: node.class_type,
            executed: [...this.executed],
            exception_message: `Execution Blocked: ${b.message}`,
            exception_type: 'ExecutionBlocked',
            traceback: [],
            current_inputs: [],
            current_outputs: [],
          });
          return new ExecutionBlocker(null);
        };
        const exec = cls.def.execute.bind(cls.def);
        const raw = this.mapOverList(id, cls, data, (args, ctx) => exec(args as Record<string, any>, ctx), blockCb, true);
        if (raw.some(isThenable)) {
          const now = await Promise.all(raw.map((r) => (isThenable(r) ? settleNow(r) : ({ ok: true, value: r } as Settled))));
          if (now.some((s) => s === PENDING_MARK)) {
            const settled: Array<Promise<Settled>> = raw.map((r) =>
              isThenable(r)
                ? Promise.resolve(r).then(
                    (value): Settled => ({ ok: true, value }),
                    (error): Settled => ({ ok: false, error }),
                  )
                : Promise.resolve({ ok: true, value: r } as Settled),
            );
            this.pendingAsync.set(id, settled);
            const unblock = this.list.addExternalBlock(id);
            void Promise.all(settled).then(unblock);
            return { kind: 'pending' };
          }
          const values = (now as Settled[]).map((s) => {
            if (!s.ok) throw s.error;
            return s.value;
          });
          ({ output, ui: uiOut, expansions } = this.fromReturns(values, cls));
        } else ({ output, ui: uiOut, expansions } = this.fromReturns(raw, cls));
      }

      if (Object.keys(uiOut).length > 0) {
        this.setUi(id, { meta: this.meta(id), output: uiOut });
        sink.send('executed', { node: id, display_node: display, output: this.ui.get(id)!.output, prompt_id: promptId });
      }
      if (expansions) return this.expand(id, expansions);

      const entry: CacheEntry = { outputs: output, ui: this.ui.get(id) as unknown as Record<string, unknown[]> | undefined };
      if (children) entry.children = children.map((c) => this.sigs.of(c));
      this.values.set(id, entry);
      if (!this.noCache.has(id) && !this.lazyKeyBroken.has(id)) this.cache.set(this.sigs.of(id), entry);
    } catch (err) {
      return this.failure(id, err, inputs);
    }
    this.progress.finish(id);
    sink.progressState(this.progress);
    this.executed.add(id);
    sink.recorded?.(id, true);
    return { kind: 'success' };
  }

  /**
   * record_lazy_evidence: whether the node ran with each linked lazy input evaluated. Once seen
   * evaluated it stays so (a later run may find the value cached and not ask for it again).
   */
  private recordLazyEvidence(id: string, cls: NodeClass, inputs: Record<string, unknown>, missing: ReadonlySet<string>): void {
    const excluded = this.sigs.excluded.get(id);
    for (const name of cls.lazyInputs) {
      if (!isLink(inputs[name])) continue;
      const key = `${id}\0${name}`;
      if (!missing.has(name)) {
        this.lazyEvidence.set(key, true);
        if (excluded?.has(name)) this.lazyKeyBroken.add(id);
      } else if (!this.lazyEvidence.has(key)) this.lazyEvidence.set(key, false);
    }
  }

  /** An expansion served from the cache still reports the UI outputs of the nodes it had expanded into (the reference's subcaches). */
  private collectChildUi(keys: string[]): void {
    const stack = [...keys];
    const seen = new Set<string>();
    while (stack.length > 0) {
      const key = stack.pop()!;
      if (seen.has(key)) continue;
      seen.add(key);
      const entry = this.cache.get(key);
      if (!entry) continue;
      const ui = entry.ui as unknown as UiEntry | undefined;
      if (ui && !this.ui.has(ui.meta.node_id)) this.setUi(ui.meta.node_id, ui);
      if (entry.children) stack.push(...entry.children);
    }
  }

  /** get_output_from_returns. */
  private fromReturns(values: unknown[], cls: NodeClass): { output: unknown[][]; ui: Record<string, unknown[]>; expansions?: Array<[GraphSpec | undefined, unknown[]]> } {
    const results: unknown[][] = [];
    const uis: Array<Record<string, unknown[]>> = [];
    const sub: Array<[GraphSpec | undefined, unknown[]]> = [];
    let hasSubgraph = false;
    for (const v of values) {
      const n = normalise(v as NodeReturn, cls);
      if (n.ui && typeof n.ui === 'object') uis.push(n.ui);
      if (n.expand) {
        hasSubgraph = true;
        sub.push([n.expand, n.result]);
      } else {
        results.push(n.result);
        sub.push([undefined, n.result]);
      }
    }
    return { output: hasSubgraph ? [] : mergeResults(results, cls), ui: mergeUi(uis), expansions: hasSubgraph ? sub : undefined };
  }

  private expand(id: string, parts: Array<[GraphSpec | undefined, unknown[]]>): Outcome {
    const newIds: string[] = [];
    const newOutputs: string[] = [];
    const links: Array<[string, number]> = [];
    const cached: Array<[boolean, unknown[]]> = [];
    for (const [graph, result] of parts) {
      if (!graph) {
        cached.push([false, result]);
        continue;
      }
      for (const nid of Object.keys(graph)) if (this.dyn.hasNode(nid)) throw new DuplicateNodeError(nid);
      const { maxExpandedNodes, maxExpansionDepth } = this.limits;
      const depth = (this.depth.get(id) ?? 0) + 1;
      if (maxExpansionDepth > 0 && depth > maxExpansionDepth) throw new PromptLimitError(`Node expansion nested deeper than ${maxExpansionDepth} levels (max_expansion_depth)`);
      this.expandedCount += Object.keys(graph).length;
      if (maxExpandedNodes > 0 && this.expandedCount > maxExpandedNodes) throw new PromptLimitError(`Node expansions added more than ${maxExpandedNodes} nodes to the prompt (max_expanded_nodes)`);
      for (const [nid, info] of Object.entries(graph)) {
        this.depth.set(nid, depth);
        const cls = this.registry.get(info.class_type);
        if (!cls) throw Object.assign(new Error(`Node '${info.class_type}' not found`), { pyType: 'KeyError' });
        newIds.push(nid);
        this.dyn.addEphemeral(nid, { class_type: info.class_type, inputs: { ...(info.inputs ?? {}) } }, id, info.override_display_id ?? id);
        if (cls.isOutput) newOutputs.push(nid);
      }
      for (const r of result) if (isLink(r)) links.push(r);
      cached.push([true, result]);
    }
    for (const nid of newOutputs) this.list.addNode(nid);
    for (const [from] of links) this.list.addStrongLink(from, id);
    this.pendingSubgraph.set(id, { parts: cached, children: newIds });
    return { kind: 'pending' };
  }
}

/**
 * Runs validated prompts one at a time against a cache that lives across
 * prompts. Knows nothing of HTTP or storage: messages go to the run's sink.
 */
export class Executor {
  readonly cache: OutputCache;
  private readonly table = new SignatureTable();
  /** `${node}\0${input}` → whether the node's last runs evaluated that lazy input (kept with the cache). */
  private readonly lazyEvidence = new Map<string, boolean>();
  private readonly limits: Required<ExecutorLimits>;

  constructor(
    readonly registry: NodeRegistry,
    policy: CachePolicy = { kind: 'classic' },
    limits: ExecutorLimits = {},
  ) {
    this.cache = new OutputCache(policy);
    this.limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /** POST /free with free_memory: drop every cached output. */
  /** POST /free on this thread: free_memory (the default) empties the cache; unload_models (implied by free_memory) unloads the models. */
  freeMemory(opts: { unloadModels?: boolean; freeMemory?: boolean } = { freeMemory: true }): void {
    if (opts.freeMemory) {
      this.cache.clear();
      this.table.clear();
      this.lazyEvidence.clear();
    }
    if (opts.unloadModels || opts.freeMemory) void unloadAll().catch(() => {});
  }

  /** The models loaded in this thread (the engine when prompts run on the main thread). */
  loadedModels(): Array<LoadedModel & { thread: null }> {
    return loadedModels().map((m) => ({ ...m, thread: null }));
  }

  async run(spec: PromptRun): Promise<RunResult> {
    if (spec.stored !== undefined && !(await spec.stored)) return { status: 'error', interrupted: false, messages: [], outputs: {}, meta: {}, executed: [] };
    const run = new Run(spec, this.registry, this.cache, this.table, this.lazyEvidence, this.limits);
    const { promptId, prompt } = spec;
    run.addMessage('execution_start', { prompt_id: promptId });
    const ids = Object.keys(prompt);
    this.cache.beginPrompt(ids.map((id) => run.sigs.of(id)));
    const cachedNodes = ids.filter((id) => run.available(id));
    run.currentOutputs = cachedNodes;
    run.addMessage('execution_cached', { nodes: cachedNodes, prompt_id: promptId });

    let failed: Extract<Outcome, { kind: 'failure' }> | undefined;
    const release = this.cache.policy.kind === 'none' ? new ConsumedOutputs(prompt, spec.outputs) : undefined;
    try {
      for (const o of spec.outputs) run.list.addNode(o);
      let lastYield = performance.now();
      while (!run.list.isEmpty()) {
        const id = await run.list.stage();
        if (id === null) {
          const cycle = run.list.nodesInCycle();
          let blamed = cycle[0] ?? spec.outputs[0]!;
          for (const c of cycle) {
            const d = run.dyn.displayNodeId(c);
            if (d !== c) {
              blamed = d;
              break;
            }
          }
          failed = {
            kind: 'failure',
            interrupted: false,
            details: { node_id: blamed, exception_message: 'Dependency cycle detected', exception_type: 'graph.DependencyCycleError', traceback: [], current_inputs: [] },
          };
          break;
        }
        const outcome = await run.executeNode(id);
        if (outcome.kind === 'failure') {
          failed = outcome;
          break;
        }
        if (outcome.kind === 'pending') run.list.unstage();
        else {
          run.list.complete();
          if (release && !run.expanded) for (const done of release.completed(id)) run.values.delete(done);
        }
        if (performance.now() - lastYield > YIELD_EVERY_MS) {
          // Long prompts of quick nodes still let the API (and POST /interrupt) in.
          await yieldToLoop();
          lastYield = performance.now();
        }
      }
    } catch (err) {
      failed = run.failure(run.list.staged ?? spec.outputs[0]!, err) as Extract<Outcome, { kind: 'failure' }>;
    }

    // A failed prompt is over (the reference's asyncio.run cancels its tasks): async nodes still in flight are told to stop.
    if (failed && run.pendingAsync.size > 0) spec.interrupt.interrupt();

    if (failed) {
      const nodeId = failed.details.node_id as string;
      const nodeType = Object.hasOwn(prompt, nodeId) ? prompt[nodeId]!.class_type : run.dyn.hasNode(nodeId) ? run.dyn.getNode(nodeId).class_type : null;
      if (failed.interrupted) {
        run.addMessage('execution_interrupted', { prompt_id: promptId, node_id: nodeId, node_type: nodeType, executed: [...run.executed] }, true);
      } else {
        run.addMessage('execution_error', {
          prompt_id: promptId,
          node_id: nodeId,
          node_type: nodeType,
          executed: [...run.executed],
          exception_message: failed.details.exception_message,
          exception_type: failed.details.exception_type,
          traceback: failed.details.traceback,
          current_inputs: failed.details.current_inputs,
          current_outputs: run.currentOutputs,
        });
      }
    } else run.addMessage('execution_success', { prompt_id: promptId });

    // Keyed by client-chosen node ids: built from entries, so '__proto__' is a key like any other, not the prototype.
    const outputs: RunResult['outputs'] = Object.fromEntries([...run.ui].map(([id, u]) => [id, u.output]));
    const meta: RunResult['meta'] = Object.fromEntries([...run.ui].map(([id, u]) => [id, u.meta]));
    return { status: failed ? 'error' : 'success', interrupted: failed?.interrupted === true, messages: run.messages, outputs, meta, executed: [...run.executed] };
  }
}
