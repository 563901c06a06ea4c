import { createHash } from 'node:crypto';
import type { InputOptions, InputSpec, NodeDefinition, NodeScope } from '../nodes/api.ts';

export type InputCategory = 'required' | 'optional' | 'hidden';

export interface InputInfo {
  /** The declared type: a name such as INT, or the list of combo choices. */
  type: string | unknown[];
  category: InputCategory;
  options: InputOptions;
}

/** A node class as the engine uses it: its definition plus lookups computed once. */
export interface NodeClass {
  readonly def: NodeDefinition;
  readonly outputTypes: string[];
  readonly outputIsList: boolean[];
  readonly isOutput: boolean;
  readonly isAsync: boolean;
  readonly hasUniqueIdHidden: boolean;
  /** required then optional, in declaration order. */
  readonly validInputs: string[];
  /** Whether the class has V3 dynamic inputs (Autogrow): its input names are `<id>.<name>`. */
  readonly hasDynamicInputs: boolean;
  inputInfo(name: string): InputInfo | undefined;
  readonly lazyInputs: ReadonlySet<string>;
}

/** The V3 input kinds of the reference's comfy_api io (2026). */
export const MATCHTYPE = 'COMFY_MATCHTYPE_V3';
export const AUTOGROW = 'COMFY_AUTOGROW_V3';
/** The reference's Autogrow._MaxNames. */
const AUTOGROW_MAX_NAMES = 100;

/** One Autogrow input: its id and the names of the inputs it stands for (`<id>.<name>`). */
interface AutogrowGroup {
  id: string;
  names: string[];
}

function isRecord(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The inputs an Autogrow input stands for, as the reference's get_finalized_class_inputs:
 * `<id>.<prefix>0` … `<id>.<prefix>{max-1}` (or `<id>.<name>` per listed name), the first
 * `min` required when the template input is required, the rest optional; the Autogrow
 * input itself is not an input of the prompt.
 */
function expandAutogrow(def: NodeDefinition, id: string, template: unknown): { group: AutogrowGroup; inputs: Array<[string, InputSpec, 'required' | 'optional']> } {
  if (!isRecord(template) || !isRecord(template.input)) throw new Error(`${def.name}: Autogrow input ${id} needs a template with an input`);
  let spec: InputSpec | undefined;
  let required = true;
  for (const [category, specs] of Object.entries(template.input)) {
    if (!isRecord(specs) || Object.keys(specs).length === 0) continue;
    spec = Object.values(specs)[0] as InputSpec;
    required = category === 'required';
    break;
  }
  if (!spec) throw new Error(`${def.name}: Autogrow input ${id} has no template input`);
  const min = typeof template.min === 'number' ? template.min : 1;
  let names: string[];
  if (Array.isArray(template.names)) names = template.names.slice(0, AUTOGROW_MAX_NAMES).map(String);
  else {
    const max = typeof template.max === 'number' ? Math.min(template.max, AUTOGROW_MAX_NAMES) : 10;
    names = Array.from({ length: max }, (_, i) => `${String(template.prefix ?? '')}${i}`);
  }
  return {
    group: { id, names },
    inputs: names.map((name, i) => [`${id}.${name}`, spec, i < min && required ? 'required' : 'optional']),
  };
}

/**
 * build_nested_inputs: the flat `<id>.<name>` arguments of each Autogrow input become
 * `{<id>: {<name>: value, …}}` in template order (an empty object when none was given).
 */
function nestAutogrow(groups: AutogrowGroup[], args: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = { ...args };
  for (const g of groups) {
    const nested: Record<string, unknown> = {};
    for (const name of g.names) {
      const key = `${g.id}.${name}`;
      if (!Object.hasOwn(out, key)) continue;
      nested[name] = out[key];
      delete out[key];
    }
    out[g.id] = nested;
  }
  return out;
}

/** A definition whose functions receive Autogrow inputs nested, as the reference's V3 nodes do. */
function withNestedInputs(def: NodeDefinition, groups: AutogrowGroup[]): NodeDefinition {
  const wrapped: NodeDefinition = { ...def, execute: (inputs, ctx) => def.execute.call(def, nestAutogrow(groups, inputs), ctx) };
  if (def.checkLazyStatus) wrapped.checkLazyStatus = (inputs, ctx) => def.checkLazyStatus!.call(def, nestAutogrow(groups, inputs), ctx);
  if (def.validateInputs) {
    const v = def.validateInputs;
    wrapped.validateInputs = { inputs: v.inputs, fn: (inputs, scope) => v.fn.call(v, nestAutogrow(groups, inputs), scope) };
  }
  if (def.isChanged) wrapped.isChanged = (inputs, scope) => def.isChanged!.call(def, nestAutogrow(groups, inputs), scope);
  return wrapped;
}

function makeClass(def: NodeDefinition): NodeClass {
  const infos = new Map<string, InputInfo>();
  const groups: AutogrowGroup[] = [];
  const order: string[] = [];
  for (const category of ['required', 'optional'] as const) {
    for (const [name, spec] of Object.entries(def.inputs[category] ?? {})) {
      if (spec[0] === AUTOGROW) {
        const { group, inputs } = expandAutogrow(def, name, spec[1]?.template);
        groups.push(group);
        for (const [full, s, c] of inputs) {
          if (!infos.has(full)) infos.set(full, { type: s[0], category: c, options: s[1] ?? {} });
          order.push(full);
        }
        continue;
      }
      // get_input_info looks in required first: a name declared in both stays required.
      if (!infos.has(name)) infos.set(name, { type: spec[0], category, options: spec[1] ?? {} });
      order.push(name);
    }
  }
  for (const [name, kind] of Object.entries(def.inputs.hidden ?? {})) {
    if (!infos.has(name)) infos.set(name, { type: kind, category: 'hidden', options: {} });
  }
  const outputTypes = def.outputs ?? [];
  const lazy = new Set<string>();
  for (const [name, info] of infos) if (info.options.lazy) lazy.add(name);
  const isAsync = def.isAsync ?? def.execute.constructor.name === 'AsyncFunction';
  return {
    def: groups.length > 0 ? withNestedInputs(def, groups) : def,
    outputTypes,
    outputIsList: def.outputIsList ?? outputTypes.map(() => false),
    isOutput: def.outputNode === true,
    isAsync,
    hasUniqueIdHidden: Object.values(def.inputs.hidden ?? {}).includes('UNIQUE_ID'),
    validInputs: [...new Set(order)],
    hasDynamicInputs: groups.length > 0,
    inputInfo: (name) => (typeof name === 'string' ? infos.get(name) : undefined),
    lazyInputs: lazy,
  };
}

/** The object_info entry of one node (the reference's NodeInfo, V3 style: every key present). */
export function nodeInfo(def: NodeDefinition, scope?: NodeScope): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  const order: Record<string, string[]> = {};
  const inputs = def.dynamicInputs?.(scope) ?? def.inputs;
  for (const category of ['required', 'optional'] as const) {
    const specs = inputs[category];
    if (!specs) continue;
    input[category] = Object.fromEntries(Object.entries(specs).map(([k, s]) => [k, s[1] === undefined ? [s[0]] : [s[0], s[1]]]));
    order[category] = Object.keys(specs);
  }
  if (inputs.hidden) {
    // V3 schemas render each hidden input as a tuple of its kind (get_v1_info), V1 nodes as the bare kind.
    input.hidden = def.v3Schema ? Object.fromEntries(Object.entries(inputs.hidden).map(([k, v]) => [k, [v]])) : { ...inputs.hidden };
    order.hidden = Object.keys(inputs.hidden);
  }
  const outputs = def.outputs ?? [];
  const info: Record<string, unknown> = {
    input,
    input_order: order,
    is_input_list: def.inputIsList === true,
    output: outputs,
    output_is_list: def.outputIsList ?? outputs.map(() => false),
    output_name: def.outputNames ?? outputs,
    name: def.name,
    display_name: def.displayName === undefined ? def.name : def.displayName,
    description: def.description ?? '',
    python_module: def.pythonModule ?? 'nodes',
    category: def.category ?? 'sd',
    output_node: def.outputNode === true,
    has_intermediate_output: def.hasIntermediateOutput === true,
    deprecated: def.deprecated === true,
    experimental: def.experimental === true,
    dev_only: def.devOnly === true,
    api_node: def.apiNode === true,
    search_aliases: def.searchAliases === undefined ? [] : def.searchAliases,
    essentials_category: def.essentialsCategory ?? null,
  };
  if (def.outputTooltips) info.output_tooltips = def.outputTooltips;
  if (def.outputMatchtypes !== undefined) info.output_matchtypes = def.outputMatchtypes;
  if (def.priceBadge !== undefined) info.price_badge = def.priceBadge;
  return info;
}

/** Pre-rendered JSON bytes with a strong ETag, for routes that serve them as-is. */
export interface Rendered {
  body: Buffer;
  etag: string;
}

export function render(value: unknown): Rendered {
  return renderText(JSON.stringify(value));
}

function renderText(text: string): Rendered {
  const body = Buffer.from(text);
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}

/** How many callers' folders keep a rendered object_info (hosted runtime: one per active workspace). */
const SCOPES_KEPT = 64;

interface ScopeRender {
  /** Rendered JSON of every class (`"Name":{...}`), by class. */
  parts: Map<string, string>;
  all?: Rendered;
  perClass: Map<string, Rendered>;
  stale: boolean;
}

/**
 * Every node class the service can run. Frozen after start: object_info is
 * rendered once, and its bytes and ETag served from memory. Classes whose
 * inputs list files (LoadImage's images) are rendered per scope, the rest
 * once for all scopes.
 */
export class NodeRegistry {
  private readonly classes = new Map<string, NodeClass>();
  private frozen = false;
  /** Classes without dynamic inputs, rendered once. */
  private readonly staticParts = new Map<string, string>();
  private readonly dynamicNames: string[] = [];
  private readonly scopes = new Map<string, ScopeRender>();

  add(def: NodeDefinition): void {
    if (this.frozen) throw new Error('registry is frozen');
    if (!def || typeof def.name !== 'string' || typeof def.execute !== 'function') throw new Error('a node definition needs a name and an execute function');
    if (this.classes.has(def.name)) throw new Error(`duplicate node class ${def.name}`);
    this.classes.set(def.name, makeClass(def));
  }

  has(name: string): boolean {
    return this.classes.has(name);
  }

  get(name: string): NodeClass | undefined {
    return typeof name === 'string' ? this.classes.get(name) : undefined;
  }

  names(): string[] {
    return [...this.classes.keys()];
  }

  /**
   * Files that dynamic inputs list have changed (in the folder of `scope`, or
   * anywhere): render those classes again on the next request.
   */
  invalidate(scope?: NodeScope): void {
    if (scope) {
      const r = this.scopes.get(scope.dirs.input);
      if (r) r.stale = true;
      return;
    }
    for (const r of this.scopes.values()) r.stale = true;
  }

  /** Renders the classes that do not depend on files and forbids further additions. */
  freeze(): void {
    if (this.frozen) return;
    this.frozen = true;
    for (const [name, cls] of this.classes) {
      if (cls.def.dynamicInputs) this.dynamicNames.push(name);
      else this.staticParts.set(name, JSON.stringify(nodeInfo(cls.def)));
    }
  }

  private scope(scope: NodeScope | undefined): ScopeRender {
    this.freeze();
    const key = scope?.dirs.input ?? '';
    let r = this.scopes.get(key);
    if (r && !r.stale) {
      // Most recently used last, so the first entry is the one to drop.
      this.scopes.delete(key);
      this.scopes.set(key, r);
      return r;
    }
    r = { parts: new Map(), perClass: new Map(), stale: false };
    for (const name of this.dynamicNames) r.parts.set(name, JSON.stringify(nodeInfo(this.classes.get(name)!.def, scope)));
    this.scopes.delete(key);
    this.scopes.set(key, r);
    if (this.scopes.size > SCOPES_KEPT) this.scopes.delete(this.scopes.keys().next().value!);
    return r;
  }

  private part(r: ScopeRender, name: string): string | undefined {
    return this.staticParts.get(name) ?? r.parts.get(name);
  }

  /** All of object_info as seen from `scope` (the caller's folders). */
  objectInfoRendered(scope?: NodeScope): Rendered {
    const r = this.scope(scope);
    if (!r.all) {
      const items: string[] = [];
      for (const name of this.classes.keys()) items.push(`${JSON.stringify(name)}:${this.part(r, name)}`);
      r.all = renderText(`{${items.join(',')}}`);
    }
    return r.all;
  }

  classRendered(name: string, scope?: NodeScope): Rendered | undefined {
    if (!this.classes.has(name)) return undefined;
    const r = this.scope(scope);
    let out = r.perClass.get(name);
    if (!out) {
      out = renderText(`{${JSON.stringify(name)}:${this.part(r, name)}}`);
      // Bounded by the number of classes.
      r.perClass.set(name, out);
    }
    return out;
  }
}
