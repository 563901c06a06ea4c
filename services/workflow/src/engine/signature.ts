import { createHash, randomUUID } from 'node:crypto';
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

/**
 * Cache keys from what a node computes, not where it sits: class, IS_CHANGED
 * value, constant inputs and the keys of linked ancestors (Merkle style), so
 * identical subgraphs anywhere share one entry. Node ids enter only for
 * NOT_IDEMPOTENT classes and classes with a UNIQUE_ID input. Each key is
 * computed once per prompt, iteratively.
 */
export class Signatures {
  private readonly memo = new Map<string, string>();

  constructor(
    private readonly dyn: DynamicPrompt,
    private readonly registry: NodeRegistry,
    private readonly isChanged: (id: string) => unknown,
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
        for (const v of Object.values(inputs)) {
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
    const changed = this.isChanged(id);
    // NaN never equals itself: the node always runs.
    if (typeof changed === 'number' && Number.isNaN(changed)) return `nan:${randomUUID()}`;
    const h = createHash('sha256');
    h.update(classType);
    h.update('\0');
    h.update(changed === undefined ? '' : stableStringify(changed));
    h.update('\0');
    if (cls?.def.notIdempotent || cls?.hasUniqueIdHidden) h.update(id);
    for (const name of Object.keys(inputs).sort()) {
      const v = inputs[name];
      h.update('\0');
      h.update(name);
      h.update('=');
      if (isLink(v)) {
        const src = this.memo.get(v[0]);
        h.update(src !== undefined ? `@${src}:${v[1]}` : `#${v[0]}:${v[1]}`);
      } else h.update(stableStringify(v));
    }
    return h.digest('base64url');
  }
}
