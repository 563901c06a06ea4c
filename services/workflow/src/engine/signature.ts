import { randomUUID } from 'node:crypto';
import { isLink } from '../nodes/api.ts';
import type { DynamicPrompt } from './graph.ts';
import type { NodeRegistry } from './registry.ts';

/** JSON with object keys sorted, so equal values give equal text. */
export function stableStringify(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(stableStringify).join(',')}]`;
  const keys = Object.keys(v as object).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stableStringify((v as Record<string, unknown>)[k])}`).join(',')}}`;
}

/** Whether a value is JSON-like data (plain objects, arrays, primitives), checked without recursion. */
export function isPlainData(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v === 'string' || typeof v === 'boolean') continue;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return false;
      continue;
    }
    if (typeof v !== 'object') return false;
    if (Array.isArray(v)) {
      for (const x of v) stack.push(x);
      continue;
    }
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return false;
    for (const k in v as Record<string, unknown>) stack.push((v as Record<string, unknown>)[k]);
  }
  return true;
}

/**
 * Interns node signatures: a signature's text names its linked ancestors by
 * their interned ids, so every text stays short however deep the graph, and
 * equal ids mean exactly equal subgraphs (no hash, so no collision can make
 * one user's graph hit another's cache entry). Two generations bound the
 * memory: when the current one is full it becomes the previous one and the
 * older is dropped. Ids are never reused, so a dropped text that comes back
 * gets a new id: a cache miss at worst, never a wrong hit.
 */
export class SignatureTable {
  private current = new Map<string, string>();
  private previous = new Map<string, string>();
  private next = 0;

  constructor(readonly generationSize = 20_000) {}

  intern(text: string): string {
    let id = this.current.get(text);
    if (id !== undefined) return id;
    id = this.previous.get(text) ?? `s${(this.next++).toString(36)}`;
    if (this.current.size >= this.generationSize) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(text, id);
    return id;
  }

  get size(): number {
    return this.current.size + this.previous.size;
  }

  clear(): void {
    this.current.clear();
    this.previous.clear();
  }
}

/**
 * Cache keys from what a node computes, not where it sits: class, IS_CHANGED
 * value, constant inputs and the keys of linked ancestors, so identical
 * subgraphs anywhere share one entry. Node ids enter only for NOT_IDEMPOTENT
 * classes and classes with a UNIQUE_ID input. Each key is computed once per
 * prompt, iteratively.
 */
export class Signatures {
  private readonly memo = new Map<string, string>();
  /** Lazy inputs left out of a node's key because earlier runs showed the node does not evaluate them. */
  readonly excluded = new Map<string, Set<string>>();

  constructor(
    private readonly dyn: DynamicPrompt,
    private readonly registry: NodeRegistry,
    private readonly table: SignatureTable,
    private readonly isChanged: (id: string) => unknown,
    /** True when a previous run of this node finished without evaluating this lazy input. */
    private readonly lazyUnused: (id: string, input: string) => boolean = () => false,
  ) {}

  of(root: string): string {
    const known = this.memo.get(root);
    if (known !== undefined) return known;
    const stack = [root];
    const entered = new Set<string>();
    while (stack.length > 0) {
      const id = stack[stack.length - 1]!;
      if (this.memo.has(id)) {
        stack.pop();
        continue;
      }
      const node = this.dyn.getNode(id);
      const inputs = node.inputs ?? {};
      if (!entered.has(id)) {
        entered.add(id);
        let waiting = false;
        for (const k in inputs) {
          const v = inputs[k];
          if (isLink(v) && !this.memo.has(v[0]) && this.dyn.hasNode(v[0])) {
            if (entered.has(v[0])) continue; // a cycle: the link is keyed by id below
            stack.push(v[0]);
            waiting = true;
          }
        }
        if (waiting) continue;
      }
      stack.pop();
      this.memo.set(id, this.compute(id, node.class_type, inputs));
    }
    return this.memo.get(root)!;
  }

  private compute(id: string, classType: string, inputs: Record<string, unknown>): string {
    const cls = this.registry.get(classType);
    const changed = cls?.def.isChanged ? this.isChanged(id) : undefined;
    // NaN never equals itself: the node always runs.
    if (typeof changed === 'number' && Number.isNaN(changed)) return `nan:${randomUUID()}`;
    let text = JSON.stringify(classType);
    if (changed !== undefined) text += `|${stableStringify(changed)}`;
    if (cls?.def.notIdempotent || cls?.hasUniqueIdHidden) text += `|#${JSON.stringify(id)}`;
    const names = Object.keys(inputs);
    if (names.length > 1) names.sort();
    for (const name of names) {
      const v = inputs[name];
      text += `|${JSON.stringify(name)}=`;
      if (isLink(v) && cls !== undefined && cls.lazyInputs.has(name) && this.lazyUnused(id, name)) {
        // The reference's lazy-input evidence: churn behind a lazy input the node never evaluates does not change its key.
        text += '~';
        let set = this.excluded.get(id);
        if (!set) this.excluded.set(id, (set = new Set()));
        set.add(name);
      } else if (isLink(v)) {
        const src = this.memo.get(v[0]);
        text += src !== undefined ? `@${src}:${v[1]}` : `#${JSON.stringify(v[0])}:${v[1]}`;
      } else if (typeof v === 'number' || typeof v === 'boolean' || v === null) text += String(v);
      else if (typeof v === 'string') text += JSON.stringify(v);
      else if (isPlainData(v)) text += stableStringify(v);
      // The reference's to_hashable turns objects it cannot hash (tensors, node values an expansion
      // embeds as constants) into a value equal to nothing: such a node never hits the cache.
      else return `u:${randomUUID()}`;
    }
    return this.table.intern(text);
  }
}
