import { createHash } from 'node:crypto';
import type { InputOptions, NodeDefinition, NodeScope } from '../nodes/api.ts';

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
  inputInfo(name: string): InputInfo | undefined;
  readonly lazyInputs: ReadonlySet<string>;
}

function makeClass(def: NodeDefinition): NodeClass {
  const infos = new Map<string, InputInfo>();
  for (const category of ['required', 'optional'] as const) {
    for (const [name, spec] of Object.entries(def.inputs[category] ?? {})) {
      // get_input_info looks in required first: a name declared in both stays required.
      if (!infos.has(name)) infos.set(name, { type: spec[0], category, options: spec[1] ?? {} });
    }
  }
  for (const [name, kind] of Object.entries(def.inputs.hidden ?? {})) {
    if (!infos.has(name)) infos.set(name, { type: kind, category: 'hidden', options: {} });
  }
  const outputTypes = def.outputs ?? [];
  const lazy = new Set<string>();
  for (const [name, info] of infos) if (info.options.lazy) lazy.add(name);
  return {
    def,
    outputTypes,
    outputIsList: def.outputIsList ?? outputTypes.map(() => false),
    isOutput: def.outputNode === true,
    isAsync: def.isAsync ?? def.execute.constructor.name === 'AsyncFunction',
    hasUniqueIdHidden: Object.values(def.inputs.hidden ?? {}).includes('UNIQUE_ID'),
    validInputs: [...new Set([...Object.keys(def.inputs.required ?? {}), ...Object.keys(def.inputs.optional ?? {})])],
    inputInfo: (name) => infos.get(name),
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
    input.hidden = { ...inputs.hidden };
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
    display_name: def.displayName ?? def.name,
    description: def.description ?? '',
    python_module: def.pythonModule ?? 'nodes',
    category: def.category ?? 'sd',
    output_node: def.outputNode === true,
    has_intermediate_output: def.hasIntermediateOutput === true,
    deprecated: def.deprecated === true,
    experimental: def.experimental === true,
    dev_only: def.devOnly === true,
    api_node: def.apiNode === true,
    search_aliases: def.searchAliases ?? [],
    essentials_category: def.essentialsCategory ?? null,
  };
  if (def.outputTooltips) info.output_tooltips = def.outputTooltips;
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
