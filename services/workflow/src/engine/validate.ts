import { isLink, type NodeScope } from '../nodes/api.ts';
import { carryFloatMark, setFloatMark } from '../nodes/json-floats.ts';
import { pyNumber, pyRepr, pyStr } from './pyrepr.ts';
import { MATCHTYPE, type InputInfo, type NodeClass, type NodeRegistry } from './registry.ts';

export interface PromptError {
  type: string;
  message: string;
  details: string;
  extra_info: Record<string, unknown>;
}

export interface NodeErrors {
  errors: PromptError[];
  dependent_outputs: string[];
  class_type: string;
}

export interface ValidationResult {
  ok: boolean;
  error?: PromptError;
  outputs: string[];
  nodeErrors: Record<string, NodeErrors>;
}

export type PromptGraph = Record<string, { class_type: string; inputs: Record<string, unknown>; _meta?: { title?: string } }>;

/** An exception raised while validating (the reference's Python exceptions), reported as exception_during_validation. */
class ValidationException extends Error {
  constructor(
    readonly pyType: string,
    message: string,
  ) {
    super(message);
  }
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Python int(): the reference converts INT inputs with it. */
function pyInt(v: unknown): number {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') {
    if (Number.isNaN(v)) throw new ValidationException('ValueError', 'cannot convert float NaN to integer');
    if (!Number.isFinite(v)) throw new ValidationException('OverflowError', 'cannot convert float infinity to integer');
    return Math.trunc(v);
  }
  if (typeof v === 'string') {
    const t = v.trim();
    if (/^[+-]?\d+(_\d+)*$/.test(t) && t.replace(/[^0-9]/g, '').length <= 4300) return Number(t.replace(/_/g, ''));
    throw new ValidationException('ValueError', `invalid literal for int() with base 10: ${pyRepr(v)}`);
  }
  throw new ValidationException('TypeError', `int() argument must be a string, a bytes-like object or a real number, not '${pyTypeName(v)}'`);
}

function pyFloat(v: unknown): number {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    const t = v.trim().replace(/_/g, '').toLowerCase();
    if (/^[+-]?(inf|infinity)$/.test(t)) return t.startsWith('-') ? -Infinity : Infinity;
    if (/^[+-]?nan$/.test(t)) return NaN;
    if (/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(t)) return Number(t);
    throw new ValidationException('ValueError', `could not convert string to float: ${pyRepr(v)}`);
  }
  throw new ValidationException('TypeError', `float() argument must be a string or a real number, not '${pyTypeName(v)}'`);
}

function pyTruthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isObject(v)) return Object.keys(v).length > 0;
  return !Number.isNaN(v);
}

function pyTypeName(v: unknown): string {
  if (v === null || v === undefined) return 'NoneType';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'object') return 'dict';
  if (typeof v === 'string') return 'str';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  return typeof v;
}

/** Types are comma-separated sets; two match when the sets overlap; `*` matches anything. */
export function typesMatch(received: unknown, expected: unknown): boolean {
  // The reference's validate_node_input: a MatchType input or output accepts any link (the frontend matches the template).
  if (received === MATCHTYPE || expected === MATCHTYPE) return true;
  if (Array.isArray(expected)) return received === 'COMBO' || Array.isArray(received) || received === '*';
  if (typeof received !== 'string' || typeof expected !== 'string') return false;
  if (received === '*' || expected === '*') return true;
  if (received === expected) return true;
  const a = received.split(',').map((s) => s.trim());
  const b = new Set(expected.split(',').map((s) => s.trim()));
  return a.some((t) => b.has(t));
}

interface NodeResult {
  valid: boolean;
  errors: PromptError[];
}

interface Frame {
  id: string;
  /** Link sources still to validate before this node's own checks, with the input that links each (null until read). */
  deps: Array<[source: string, input: string]> | null;
  next: number;
  /** The node and input that led here (absent for the output being validated). */
  via?: { parent: string; input: string };
}

/**
 * The reference's validate_prompt: every output node (or the partial targets)
 * is validated with its ancestors; outputs whose graphs are valid run, the
 * others are reported in node_errors. Iterative, so a chain of any length
 * validates without recursion; cycles are reported as dependency_cycle.
 */
/** `scope`: the caller's folders (a workspace's input folder in the hosted runtime), for nodes whose validation reads files. */
export async function validatePrompt(registry: NodeRegistry, prompt: unknown, partialTargets: unknown, scope?: NodeScope): Promise<ValidationResult> {
  if (!isObject(prompt)) {
    return fail({ type: 'invalid_prompt', message: 'Invalid prompt', details: 'The prompt must be an object that maps node ids to nodes', extra_info: {} });
  }
  const targets = Array.isArray(partialTargets) ? new Set(partialTargets.map(String)) : null;
  const outputs: string[] = [];
  for (const id of Object.keys(prompt)) {
    const node = prompt[id];
    const title = isObject(node) && isObject(node._meta) && typeof node._meta.title === 'string' ? node._meta.title : null;
    if (!isObject(node) || !('class_type' in node)) {
      return fail({
        type: 'missing_node_type',
        message: 'Prompt has no properly formatted class_type',
        details: `Node ID '#${id}'`,
        extra_info: { node_id: id, class_type: null, node_title: title },
      });
    }
    const cls = registry.get(node.class_type);
    if (!cls) {
      return fail({
        type: 'missing_node_type',
        message: `Node '${pyStr(node.class_type)}' not found. The custom node may not be installed.`,
        details: `Node ID '#${id}'`,
        extra_info: { node_id: id, class_type: node.class_type, node_title: title },
      });
    }
    if (cls.isOutput && (targets === null || targets.has(id))) outputs.push(id);
  }
  if (outputs.length === 0) return fail({ type: 'prompt_no_outputs', message: 'Prompt has no outputs', details: '', extra_info: {} });

  const graph = prompt as PromptGraph;
  const validated = new Map<string, NodeResult>();
  const good: string[] = [];
  const failures: Array<[string, PromptError[]]> = [];
  // Keyed by client-chosen node ids ('__proto__', 'constructor'): a Map, made an object only for the answer.
  const nodeErrors = new Map<string, NodeErrors>();
  for (const o of outputs) {
    let valid: boolean;
    let reasons: PromptError[];
    try {
      const r = await validateFrom(registry, graph, o, validated, scope);
      valid = r.valid;
      reasons = r.errors;
    } catch (err) {
      const ex = err instanceof ValidationException ? err : new ValidationException('Exception', String((err as Error)?.message ?? err));
      valid = false;
      reasons = [
        {
          type: 'exception_during_validation',
          message: 'Exception when validating node',
          details: ex.message,
          extra_info: { exception_type: ex.pyType, traceback: [] },
        },
      ];
      validated.set(o, { valid: false, errors: reasons });
    }
    if (valid) {
      good.push(o);
      continue;
    }
    failures.push([o, reasons]);
    // Nodes downstream of a failing node are invalid without errors of their own: only the causes are
    // reported, each with the outputs that depend on it (the reference lists every failing output seen so far).
    for (const id of ancestors(graph, o)) {
      const r = validated.get(id);
      if (!r || r.valid || r.errors.length === 0) continue;
      let e = nodeErrors.get(id);
      if (!e) nodeErrors.set(id, (e = { errors: r.errors, dependent_outputs: [], class_type: graph[id]!.class_type }));
      e.dependent_outputs.push(o);
    }
  }
  if (good.length === 0) {
    const lines: string[] = [];
    for (const [, errs] of failures) for (const e of errs) lines.push(`${e.message}: ${e.details}`);
    return {
      ok: false,
      error: { type: 'prompt_outputs_failed_validation', message: 'Prompt outputs failed validation', details: lines.join('\n'), extra_info: {} },
      outputs: [],
      nodeErrors: Object.fromEntries(nodeErrors),
    };
  }
  return { ok: true, outputs: good, nodeErrors: Object.fromEntries(nodeErrors) };
}

/** The node and every node it links to, without recursion. */
function ancestors(graph: PromptGraph, root: string): string[] {
  const seen = new Set<string>([root]);
  const stack = [root];
  while (stack.length > 0) {
    const id = stack.pop()!;
    for (const v of Object.values(inputsOf(graph[id]!))) {
      if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && isObject(nodeAt(graph, v[0])) && !seen.has(v[0])) {
        seen.add(v[0]);
        stack.push(v[0]);
      }
    }
  }
  return [...seen];
}

function fail(error: PromptError): ValidationResult {
  return { ok: false, error, outputs: [], nodeErrors: {} };
}

function inputsOf(node: PromptGraph[string]): Record<string, unknown> {
  return isObject(node.inputs) ? node.inputs : {};
}

/** The node's class's RETURN_TYPES entry for a link's slot, with Python's indexing rules. */
function returnTypeAt(cls: NodeClass, slot: unknown): string {
  if (typeof slot !== 'number' || !Number.isInteger(slot)) {
    throw new ValidationException('TypeError', `tuple indices must be integers or slices, not ${pyTypeName(slot)}`);
  }
  const types = cls.outputTypes;
  const i = slot < 0 ? types.length + slot : slot;
  if (i < 0 || i >= types.length) throw new ValidationException('IndexError', 'tuple index out of range');
  return types[i]!;
}

/** The prompt's own node of that id: never an inherited member ('constructor', '__proto__'). */
function nodeAt(graph: PromptGraph, id: string): unknown {
  return Object.hasOwn(graph, id) ? graph[id] : undefined;
}

function linkSource(graph: PromptGraph, registry: NodeRegistry, val: unknown[]): NodeClass {
  const src = typeof val[0] === 'string' ? nodeAt(graph, val[0]) : undefined;
  if (typeof val[0] !== 'string' || !isObject(src)) throw new ValidationException('KeyError', pyRepr(val[0]));
  const cls = registry.get(src.class_type);
  if (!cls) throw new ValidationException('KeyError', pyRepr(src.class_type));
  return cls;
}

function customInputs(cls: NodeClass): { names: Set<string>; all: boolean } {
  const v = cls.def.validateInputs;
  if (!v) return { names: new Set(), all: false };
  return v.inputs === '*' ? { names: new Set(), all: true } : { names: new Set(v.inputs), all: false };
}

/** exception_during_inner_validation: an exception while validating a node that another node links to is recorded on that node. */
function innerValidationError(graph: PromptGraph, registry: NodeRegistry, via: { parent: string; input: string }, err: unknown): PromptError {
  const ex = err instanceof ValidationException ? err : new ValidationException('Exception', String((err as Error)?.message ?? err));
  const parent = graph[via.parent]!;
  const info = registry.get(parent.class_type)?.inputInfo(via.input);
  return {
    type: 'exception_during_inner_validation',
    message: 'Exception when validating inner node',
    details: ex.message,
    extra_info: {
      input_name: via.input,
      input_config: info ? [info.type, info.options] : null,
      exception_message: ex.message,
      exception_type: ex.pyType,
      traceback: [],
      linked_node: inputsOf(parent)[via.input],
    },
  };
}

/**
 * Validates `root` and everything it links to, children before parents,
 * without recursion. An exception while validating a linked node marks that
 * node (exception_during_inner_validation); one in the root itself is left
 * to the caller (exception_during_validation). A cycle is reported on the
 * node it returns to, with the path, and leaves every node on it invalid.
 */
async function validateFrom(registry: NodeRegistry, graph: PromptGraph, root: string, validated: Map<string, NodeResult>, scope: NodeScope | undefined): Promise<NodeResult> {
  const done = validated.get(root);
  if (done) return done;
  const onStack = new Map<string, number>();
  const cycleErrors = new Map<string, PromptError[]>();
  const onCycle = new Set<string>();
  const stack: Frame[] = [{ id: root, deps: null, next: 0 }];
  onStack.set(root, 0);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    try {
      frame.deps ??= depsOf(registry, graph, frame.id);
      if (frame.next < frame.deps.length) {
        const [dep, input] = frame.deps[frame.next++]!;
        if (validated.has(dep)) continue;
        const at = onStack.get(dep);
        if (at !== undefined) {
          const path = stack.slice(at).map((f) => f.id);
          for (const id of path) onCycle.add(id);
          path.push(dep);
          const errs = cycleErrors.get(dep) ?? [];
          errs.push({
            type: 'dependency_cycle',
            message: 'Dependency cycle detected',
            details: path.map((id) => `${id} (${pyStr(graph[id]!.class_type)})`).join(' -> '),
            extra_info: { node_id: dep, linked_node: frame.id },
          });
          cycleErrors.set(dep, errs);
          continue;
        }
        onStack.set(dep, stack.length);
        stack.push({ id: dep, deps: null, next: 0, via: { parent: frame.id, input } });
        continue;
      }
      const result = await checkNode(registry, graph, frame.id, validated, scope);
      stack.pop();
      onStack.delete(frame.id);
      const cyc = cycleErrors.get(frame.id);
      if (cyc || onCycle.has(frame.id)) validated.set(frame.id, { valid: false, errors: [...result.errors, ...(cyc ?? [])] });
      else validated.set(frame.id, result);
    } catch (err) {
      if (!frame.via) throw err;
      stack.pop();
      onStack.delete(frame.id);
      validated.set(frame.id, { valid: false, errors: [innerValidationError(graph, registry, frame.via, err)] });
    }
  }
  return validated.get(root)!;
}

/** Link sources the reference recurses into: well-formed links whose type matches. */
function depsOf(registry: NodeRegistry, graph: PromptGraph, id: string): Array<[string, string]> {
  const node = graph[id]!;
  const cls = registry.get(node.class_type)!;
  const inputs = inputsOf(node);
  const custom = customInputs(cls);
  const deps: Array<[string, string]> = [];
  for (const name of cls.validInputs) {
    if (!Object.hasOwn(inputs, name)) continue;
    const val = inputs[name];
    if (!Array.isArray(val) || val.length !== 2) continue;
    const src = linkSource(graph, registry, val);
    const received = returnTypeAt(src, val[1]);
    if (!custom.names.has('input_types') && !typesMatch(received, cls.inputInfo(name)!.type)) continue;
    deps.push([val[0] as string, name]);
  }
  return deps;
}

/** The per-input checks of one node, its children already validated. */
async function checkNode(registry: NodeRegistry, graph: PromptGraph, id: string, validated: Map<string, NodeResult>, scope: NodeScope | undefined): Promise<NodeResult> {
  const node = graph[id]!;
  const cls = registry.get(node.class_type)!;
  const inputs = inputsOf(node);
  const custom = customInputs(cls);
  const errors: PromptError[] = [];
  let valid = true;
  const receivedTypes: Record<string, string> = {};
  let fresh: Map<string, InputInfo> | undefined;
  for (const name of cls.validInputs) {
    const info = cls.inputInfo(name)!;
    if (!Object.hasOwn(inputs, name)) {
      if (info.category === 'required') {
        // A node with V3 dynamic inputs names the missing one by its last part (`values.value0` → `value0`), as the reference.
        const details = cls.hasDynamicInputs ? name.split('.').pop()! : name;
        errors.push({ type: 'required_input_missing', message: 'Required input is missing', details, extra_info: { input_name: name } });
      }
      continue;
    }
    let val = inputs[name];
    const config = [info.type, info.options];
    if (Array.isArray(val)) {
      if (val.length !== 2) {
        errors.push({
          type: 'bad_linked_input',
          message: 'Bad linked input, must be a length-2 list of [node_id, slot_index]',
          details: name,
          extra_info: { input_name: name, input_config: config, received_value: val },
        });
        continue;
      }
      const src = linkSource(graph, registry, val);
      const received = returnTypeAt(src, val[1]);
      receivedTypes[name] = received;
      if (!custom.names.has('input_types') && !typesMatch(received, info.type)) {
        errors.push({
          type: 'return_type_mismatch',
          message: 'Return type mismatch between linked nodes',
          details: `${name}, received_type(${received}) mismatch input_type(${pyStr(info.type)})`,
          extra_info: { input_name: name, input_config: config, received_type: received, linked_node: val },
        });
        continue;
      }
      const r = validated.get(val[0] as string);
      if (r && !r.valid) valid = false;
      continue;
    }
    try {
      if (isObject(val) && '__value__' in val) {
        carryFloatMark(val, '__value__', inputs, name);
        val = val.__value__;
        inputs[name] = val;
      }
      val = coerce(info, val);
      inputs[name] = val;
      if (info.type === 'FLOAT' || info.type === 'INT') setFloatMark(inputs, name, info.type === 'FLOAT');
    } catch (err) {
      const ex = err as ValidationException;
      errors.push({
        type: 'invalid_input_type',
        message: `Failed to convert an input value to a ${pyStr(info.type)} value`,
        details: `${name}, ${pyStr(val)}, ${ex.message}`,
        extra_info: { input_name: name, input_config: config, received_value: val, exception_message: ex.message },
      });
      continue;
    }
    if (custom.all || custom.names.has(name)) continue;
    // Lists of files are read as the folders are now (the reference calls INPUT_TYPES at each validation).
    const now = cls.def.dynamicInputs ? (fresh ??= freshInfos(cls, scope)).get(name) : undefined;
    const e = now ? rangeAndListError(name, now, val, [now.type, now.options]) : rangeAndListError(name, info, val, config);
    if (e) errors.push(e);
  }

  if (cls.def.validateInputs) {
    const filtered: Record<string, unknown> = {};
    for (const name of Object.keys(inputs)) {
      if (!custom.all && !custom.names.has(name)) continue;
      if (!cls.inputInfo(name) || cls.inputInfo(name)!.category === 'hidden') continue;
      filtered[name] = Array.isArray(inputs[name]) ? null : inputs[name];
      // `5.0` stays a float for the node's own check, as the reference's Python sees it.
      carryFloatMark(inputs, name, filtered);
    }
    for (const name of custom.names) if (name !== 'input_types' && !Object.hasOwn(filtered, name) && cls.inputInfo(name)) filtered[name] = undefined;
    if (custom.names.has('input_types')) filtered.input_types = receivedTypes;
    let r: boolean | string;
    try {
      r = await cls.def.validateInputs.fn(filtered, scope);
    } catch (err) {
      throw new ValidationException('Exception', String((err as Error)?.message ?? err));
    }
    if (r !== true) {
      for (const name of Object.keys(filtered)) {
        errors.push({
          type: 'custom_validation_failed',
          message: 'Custom validation failed for node',
          details: r === false ? name : `${name} - ${pyStr(r)}`,
          extra_info: { input_name: name },
        });
      }
    }
  }
  return { valid: valid && errors.length === 0, errors };
}

function coerce(info: InputInfo, val: unknown): unknown {
  switch (info.type) {
    case 'INT':
      return pyInt(val);
    case 'FLOAT':
      return pyFloat(val);
    case 'STRING':
      return pyStr(val);
    case 'BOOLEAN':
      return pyTruthy(val);
    default:
      return val;
  }
}

function fmt(info: InputInfo, v: unknown): string {
  return typeof v === 'number' ? pyNumber(v, info.type === 'FLOAT') : pyStr(v);
}

/** The required and optional inputs of a class with file lists, as its dynamicInputs renders them for this caller now. */
function freshInfos(cls: NodeClass, scope: NodeScope | undefined): Map<string, InputInfo> {
  const out = new Map<string, InputInfo>();
  const inputs = cls.def.dynamicInputs!(scope);
  for (const category of ['required', 'optional'] as const) {
    for (const [name, spec] of Object.entries(inputs[category] ?? {})) {
      if (!out.has(name) && cls.inputInfo(name)) out.set(name, { type: spec[0], category, options: spec[1] ?? {} });
    }
  }
  return out;
}

function rangeAndListError(name: string, info: InputInfo, val: unknown, config: unknown[]): PromptError | undefined {
  const { min, max } = info.options;
  if (typeof min === 'number' && typeof val === 'number' && val < min) {
    return {
      type: 'value_smaller_than_min',
      message: `Value ${fmt(info, val)} smaller than min of ${fmt(info, min)}`,
      details: name,
      extra_info: { input_name: name, input_config: config, received_value: val },
    };
  }
  if (typeof max === 'number' && typeof val === 'number' && val > max) {
    return {
      type: 'value_bigger_than_max',
      message: `Value ${fmt(info, val)} bigger than max of ${fmt(info, max)}`,
      details: name,
      extra_info: { input_name: name, input_config: config, received_value: val },
    };
  }
  const options = Array.isArray(info.type) ? info.type : info.type === 'COMBO' ? (info.options.options ?? []) : undefined;
  if (!options) return undefined;
  const has = (v: unknown) => options.some((o) => o === v);
  const invalid = info.options.multiselect && Array.isArray(val) ? val.filter((v) => !has(v)) : has(val) ? [] : [val];
  if (invalid.length === 0) return undefined;
  const long = options.length > 20;
  return {
    type: 'value_not_in_list',
    message: 'Value not in list',
    details: `${name}: '${pyStr(val)}' not in ${long ? `(list of length ${options.length})` : pyRepr(options)}`,
    extra_info: { input_name: name, input_config: long ? null : config, received_value: val },
  };
}

export { isLink };
