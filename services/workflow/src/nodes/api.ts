/**
 * The node API: what a node pack module exports and what a node's functions
 * receive. Packs under `<data-dir>/custom_nodes/<pack>/index.{ts,js,mjs}`
 * export `nodes: NodeDefinition[]` (or a default export of the same).
 */

/** Options of one input, as the reference's INPUT_TYPES second tuple element. */
export interface InputOptions {
  default?: unknown;
  min?: number;
  max?: number;
  step?: number;
  round?: number | false;
  multiline?: boolean;
  /** The input is evaluated only when `checkLazyStatus` asks for it. */
  lazy?: boolean;
  /** Pass the link itself (`[node_id, slot]`) instead of its value. */
  rawLink?: boolean;
  forceInput?: boolean;
  tooltip?: string;
  /** COMBO written the schema way: `['COMBO', {options: [...]}]`. */
  options?: unknown[];
  multiselect?: boolean;
  /**
   * A secret such as an API key: when a prompt is queued, the runtime moves the
   * value out of the stored prompt (queue, history, jobs, saved files show
   * `[redacted]`) and the node reads it back with `secretInputOf` (secret-inputs.ts).
   * A link into a secret input is refused.
   */
  secret?: boolean;
  /**
   * V3 dynamic inputs (the reference's comfy_api io): `COMFY_MATCHTYPE_V3` inputs carry
   * `{template_id, allowed_types}` (any linked type is accepted, as the reference's
   * validate_node_input: matching is the frontend's); `COMFY_AUTOGROW_V3` inputs carry
   * `{input: {required|optional: {name: spec}}, prefix, min, max}` or `{input, names, min}`
   * and stand for the inputs `<id>.<prefix>0` … (see registry.ts: the node receives them
   * nested, `{<id>: {<prefix>0: v, …}}`).
   */
  template?: Record<string, unknown>;
  [key: string]: unknown;
}

/** `[type, options]`: type is INT, FLOAT, STRING, BOOLEAN, COMBO, any custom type name, `*`, or a list of combo choices. */
export type InputSpec = [type: string | unknown[], options?: InputOptions];

export type HiddenKind = 'PROMPT' | 'UNIQUE_ID' | 'EXTRA_PNGINFO' | 'DYNPROMPT' | 'AUTH_TOKEN_COMFY_ORG' | 'API_KEY_COMFY_ORG';

export interface NodeInputs {
  required?: Record<string, InputSpec>;
  optional?: Record<string, InputSpec>;
  hidden?: Record<string, HiddenKind>;
}

/** A graph a node expands into: `{id: {class_type, inputs, override_display_id?}}`; inputs may link to `[id, slot]`. */
export type GraphSpec = Record<string, { class_type: string; inputs: Record<string, unknown>; override_display_id?: string }>;

/** What a node's `execute` may return: the outputs tuple, or an object with result/ui/expand. */
export type NodeReturn =
  | unknown[]
  | ExecutionBlocker
  | { result?: unknown[] | ExecutionBlocker; ui?: Record<string, unknown[]>; expand?: GraphSpec };

export interface NodeContext {
  /** The node's id in the (possibly expanded) prompt. */
  readonly nodeId: string;
  readonly promptId: string;
  /** Index of this call when the node is mapped over lists (0 otherwise). */
  readonly listIndex: number;
  /** Throws the interrupt error when the prompt was interrupted; call it inside long loops. */
  checkInterrupt(): void;
  /** Reports progress (`progress` / `progress_state` messages, coalesced per client). */
  progress(value: number, max: number): void;
  /** Sends a preview image (binary WebSocket frame) to the prompt's client. */
  preview(image: Buffer, format: 'png' | 'jpeg'): void;
  /** Services the runtime lends to nodes (file folders, image codecs …). */
  readonly env: NodeEnv;
  /** An AbortSignal that fires on interrupt, for async work. */
  readonly signal: AbortSignal;
}

/**
 * Whose files a call sees: the caller's folders (in the hosted runtime each
 * workspace has its own input folder). Given to the calls that run before or
 * outside execution (object_info lists, validation, IS_CHANGED); absent, a
 * node uses the folders it was built with.
 */
export interface NodeScope {
  readonly dirs: NodeEnv['dirs'];
  /**
   * Whether this caller may read a file of the shared output or temp folder
   * (`name.png [output]` in LoadImage); absent, every file there is readable.
   */
  readonly canRead?: (ref: { type: 'output' | 'temp'; subfolder: string; filename: string }) => Promise<boolean>;
}

/** What the runtime gives nodes: folders for files, and the prompt's metadata. */
export interface NodeEnv {
  /** `<data-dir>/input`, `output`, `temp`. */
  readonly dirs: { input: string; output: string; temp: string; models: string };
  /** See NodeScope.canRead. */
  readonly canRead?: NodeScope['canRead'];
  /** Original prompt (API format), for nodes that embed it in files. */
  readonly prompt: Record<string, unknown>;
  readonly extraData: Record<string, unknown>;
  /** Called for every file an output node writes, so the runtime can index it (assets). */
  fileWritten?(info: { filename: string; subfolder: string; type: 'output' | 'temp' | 'input' }): Promise<Record<string, unknown> | void>;
  /** The prompt's workspace secret with this name (hosted runtime; marks it used); undefined when there is none. */
  secret?(name: string): Promise<string | undefined>;
}

export interface NodeDefinition {
  /** The class_type, unique across packs. */
  name: string;
  /** null: object_info's display_name is null (a V3 node of the reference without one, e.g. SaveWEBM). */
  displayName?: string | null;
  /** Rendered by the reference's V3 schema: hidden inputs appear as one-item lists (`{"prompt": ["PROMPT"]}`). */
  v3Schema?: boolean;
  description?: string;
  /** Default "sd", as the reference. */
  category?: string;
  /** Reported in object_info as python_module; defaults to "nodes" for built-ins and "custom_nodes.<pack>" for packs. */
  pythonModule?: string;
  inputs: NodeInputs;
  /** Inputs as object_info shows them when they depend on files (combo lists of input images …); re-read when the runtime invalidates object_info. */
  dynamicInputs?(scope?: NodeScope): NodeInputs;
  /** RETURN_TYPES. */
  outputs?: string[];
  /** RETURN_NAMES; default the types. */
  outputNames?: string[];
  outputIsList?: boolean[];
  outputTooltips?: string[];
  outputNode?: boolean;
  /** INPUT_IS_LIST: called once with whole lists. */
  inputIsList?: boolean;
  /** NOT_IDEMPOTENT: the node id is part of its cache key. */
  notIdempotent?: boolean;
  deprecated?: boolean;
  experimental?: boolean;
  apiNode?: boolean;
  devOnly?: boolean;
  /** object_info `essentials_category`: the key is always emitted (null when unset). */
  essentialsCategory?: string | null;
  /** null: the key is emitted as null (the 2026 reference's V3 nodes without aliases). */
  searchAliases?: string[] | null;
  /** V3 `price_badge` (API nodes' client-side price); present (null) only for nodes rendered the 2026 reference's way. */
  priceBadge?: Record<string, unknown> | null;
  hasIntermediateOutput?: boolean;
  /**
   * V3 `output_matchtypes`: per output, the MatchType template id it follows (null for
   * other outputs). Absent, object_info has no such key (V1 nodes and V3 nodes of the
   * 2025-10 reference); null, the key is present and null (the 2026 reference's V3 nodes).
   */
  outputMatchtypes?: Array<string | null> | null;
  /** V3 `accept_all_inputs`: prompt inputs the schema does not declare are passed to the node too (constants as given). */
  acceptAllInputs?: boolean;
  /** Runs the node. Returning a Promise makes it an async node: other ready nodes run meanwhile. */
  execute(inputs: Record<string, any>, ctx: NodeContext): NodeReturn | Promise<NodeReturn>;
  /** Marks the node async for the scheduler's pick order before it has run (detected for `async` functions). */
  isAsync?: boolean;
  /** Names of lazy inputs still needed (called with unevaluated lazies as null/undefined). */
  checkLazyStatus?(inputs: Record<string, any>, ctx: NodeContext): string[] | Promise<string[]>;
  /**
   * VALIDATE_INPUTS: called at validation with constant inputs (linked inputs are null).
   * Inputs it names skip the built-in min/max/list checks ('*' = all, like **kwargs);
   * naming 'input_types' receives `{input: received_type}`. Return true, false or a message.
   */
  validateInputs?: { inputs: string[] | '*'; fn(inputs: Record<string, any>, scope?: NodeScope): boolean | string | Promise<boolean | string> };
  /** IS_CHANGED: its value joins the cache key; NaN means always re-run. Called with constant inputs only. */
  isChanged?(inputs: Record<string, any>, scope?: NodeScope): unknown;
}

/** A value that blocks every node downstream of it; with a message, the first blocked output reports it as an error. */
class ExecutionBlockerClass {
  constructor(readonly message: string | null) {}
}

/** Raised by `checkInterrupt` and by the engine between nodes after an interrupt. */
class InterruptErrorClass extends Error {
  constructor() {
    super('Processing interrupted');
    this.name = 'InterruptProcessingException';
  }
}

/**
 * Builds an expansion graph with ids unique to the expanding node's call
 * (the reference's GraphBuilder: `{prefix}{id}`, prefix `"{node}.{call}.{n}."`).
 */
class GraphBuilderClass {
  private static defaultPrefix = '';
  private static counter = 0;
  readonly prefix: string;
  private readonly nodes = new Map<string, GraphNodeClass>();
  private idCounter = 1;

  constructor(prefix?: string) {
    this.prefix = prefix ?? GraphBuilderClass.allocPrefix();
  }

  /** Set by the engine before each call of an expanding node. */
  static setDefaultPrefix(nodeId: string, callIndex: number): void {
    GraphBuilderClass.defaultPrefix = `${nodeId}.${callIndex}.`;
    GraphBuilderClass.counter = 0;
  }

  private static allocPrefix(): string {
    return `${GraphBuilderClass.defaultPrefix}${GraphBuilderClass.counter++}.`;
  }

  node(classType: string, id?: string, inputs: Record<string, unknown> = {}): GraphNodeClass {
    const nodeId = this.prefix + (id ?? String(this.idCounter++));
    const existing = this.nodes.get(nodeId);
    if (existing) return existing;
    const n = new GraphNodeClass(nodeId, classType, { ...inputs });
    this.nodes.set(nodeId, n);
    return n;
  }

  lookup(id: string): GraphNodeClass | undefined {
    return this.nodes.get(this.prefix + id);
  }

  finalize(): GraphSpec {
    const out: GraphSpec = {};
    for (const [id, n] of this.nodes) out[id] = n.serialize();
    return out;
  }
}

class GraphNodeClass {
  overrideDisplayId?: string;
  constructor(
    readonly id: string,
    readonly classType: string,
    readonly inputs: Record<string, unknown>,
  ) {}
  /** A link to output `slot` of this node. */
  out(slot: number): [string, number] {
    return [this.id, slot];
  }
  setInput(name: string, value: unknown): this {
    if (value === undefined) delete this.inputs[name];
    else this.inputs[name] = value instanceof GraphNodeClass ? value.out(0) : value;
    return this;
  }
  setOverrideDisplayId(id: string): this {
    this.overrideDisplayId = id;
    return this;
  }
  serialize(): GraphSpec[string] {
    const s: GraphSpec[string] = { class_type: this.classType, inputs: this.inputs };
    if (this.overrideDisplayId !== undefined) s.override_display_id = this.overrideDisplayId;
    return s;
  }
}

/**
 * The API's classes, once per thread. A pack may reach this module by another
 * path than the engine (the service runs from its bundle; a TypeScript pack is
 * compiled with its imports), which would give it classes of its own: an
 * `ExecutionBlocker` the engine does not recognise, a `GraphBuilder` whose id
 * prefix the engine never sets. Whichever copy loads first registers its
 * classes under a global symbol and every later copy uses those.
 */
interface ApiClasses {
  ExecutionBlocker: typeof ExecutionBlockerClass;
  InterruptError: typeof InterruptErrorClass;
  GraphBuilder: typeof GraphBuilderClass;
  GraphNode: typeof GraphNodeClass;
}
const SHARED_CLASSES = Symbol.for('comfy-workflow.node-api.classes.v1');
const registry = globalThis as unknown as Record<symbol, ApiClasses | undefined>;
const shared: ApiClasses = (registry[SHARED_CLASSES] ??= { ExecutionBlocker: ExecutionBlockerClass, InterruptError: InterruptErrorClass, GraphBuilder: GraphBuilderClass, GraphNode: GraphNodeClass });

export const ExecutionBlocker = shared.ExecutionBlocker;
export type ExecutionBlocker = ExecutionBlockerClass;
export const InterruptError = shared.InterruptError;
export type InterruptError = InterruptErrorClass;
export const GraphBuilder = shared.GraphBuilder;
export type GraphBuilder = GraphBuilderClass;
export const GraphNode = shared.GraphNode;
export type GraphNode = GraphNodeClass;

/** `is_link`: a 2-item list whose first item is a string and second a number. */
export function isLink(v: unknown): v is [string, number] {
  return Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'number';
}

/** Whether a prompt's number was written as a float (`5.0`) or an int (`5`): JSON has one number type, the reference two. */
export { isFloatLiteral, pyTypeOf } from './json-floats.ts';
