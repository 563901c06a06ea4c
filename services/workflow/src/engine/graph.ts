import { isLink } from '../nodes/api.ts';
import type { NodeRegistry } from './registry.ts';
import type { PromptGraph } from './validate.ts';

export type GraphNode = PromptGraph[string];

/** The prompt plus the ephemeral nodes that expansions add while it runs. */
export class DynamicPrompt {
  private readonly ephemeral = new Map<string, GraphNode>();
  private readonly parents = new Map<string, string>();
  private readonly display = new Map<string, string>();

  constructor(readonly original: PromptGraph) {}

  getNode(id: string): GraphNode {
    const n = this.ephemeral.get(id) ?? (Object.hasOwn(this.original, id) ? this.original[id] : undefined);
    if (!n) throw new Error(`Node ${id} not found`);
    return n;
  }

  hasNode(id: string): boolean {
    return this.ephemeral.has(id) || Object.hasOwn(this.original, id);
  }

  addEphemeral(id: string, node: GraphNode, parentId: string, displayId: string): void {
    this.ephemeral.set(id, node);
    this.parents.set(id, parentId);
    this.display.set(id, displayId);
  }

  realNodeId(id: string): string {
    let cur = id;
    for (let p = this.parents.get(cur); p !== undefined; p = this.parents.get(cur)) cur = p;
    return cur;
  }

  parentNodeId(id: string): string | null {
    return this.parents.get(id) ?? null;
  }

  displayNodeId(id: string): string {
    let cur = id;
    for (let d = this.display.get(cur); d !== undefined && d !== cur; d = this.display.get(cur)) cur = d;
    return cur;
  }
}

/**
 * The reference's ExecutionList ("topological dissolve"): nodes wait on strong
 * links from their non-lazy, not-yet-available inputs; a ready node is picked
 * output/async first, then nodes one or two links before an output. Ready
 * nodes are kept in one set per pick class, so a pick costs O(1) however wide
 * the graph is.
 */
export class ExecutionList {
  private readonly pending = new Set<string>();
  private readonly blockCount = new Map<string, number>();
  private readonly blocking = new Map<string, Set<string>>();
  private readonly ready: Array<Set<string>> = [new Set(), new Set(), new Set(), new Set()];
  private readonly readyClass = new Map<string, number>();
  private externalBlocks = 0;
  private wake: (() => void) | null = null;
  staged: string | null = null;

  constructor(
    private readonly dyn: DynamicPrompt,
    private readonly registry: NodeRegistry,
    /** True when the node's outputs are already available (cached or computed). */
    private readonly isAvailable: (id: string) => boolean,
  ) {}

  isEmpty(): boolean {
    return this.pending.size === 0;
  }

  isPending(id: string): boolean {
    return this.pending.has(id);
  }

  private isOutput(id: string): boolean {
    return this.registry.get(this.dyn.getNode(id).class_type)?.isOutput === true;
  }

  private isAsync(id: string): boolean {
    return this.registry.get(this.dyn.getNode(id).class_type)?.isAsync === true;
  }

  private classOf(id: string): number {
    if (this.isOutput(id) || this.isAsync(id)) return 0;
    const blocked = this.blocking.get(id)!;
    for (const b of blocked) if (this.isOutput(b)) return 1;
    for (const b of blocked) for (const c of this.blocking.get(b) ?? []) if (this.isOutput(c)) return 2;
    return 3;
  }

  private markReady(id: string): void {
    const c = this.classOf(id);
    this.readyClass.set(id, c);
    this.ready[c]!.add(id);
  }

  private unmarkReady(id: string): void {
    const c = this.readyClass.get(id);
    if (c === undefined) return;
    this.ready[c]!.delete(id);
    this.readyClass.delete(id);
  }

  private block(id: string): void {
    const n = this.blockCount.get(id)! + 1;
    this.blockCount.set(id, n);
    if (n === 1) this.unmarkReady(id);
  }

  private unblock(id: string): void {
    const n = this.blockCount.get(id)! - 1;
    this.blockCount.set(id, n);
    if (n === 0 && this.pending.has(id)) this.markReady(id);
  }

  /** Adds a node and (iteratively) every non-lazy, unavailable node it depends on. */
  addNode(root: string, includeLazy = false, within?: ReadonlySet<string>): void {
    const stack = [root];
    const links: Array<[string, string]> = [];
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (this.pending.has(id)) continue;
      this.pending.add(id);
      this.blockCount.set(id, 0);
      this.blocking.set(id, new Set());
      this.markReady(id);
      // A cached output node only reports its cached result: its ancestors need not run.
      if (id === root && this.isAvailable(id)) continue;
      const node = this.dyn.getNode(id);
      const cls = this.registry.get(node.class_type);
      for (const [name, value] of Object.entries(node.inputs ?? {})) {
        if (!isLink(value)) continue;
        const from = value[0];
        if (within && !within.has(from)) continue;
        const info = cls?.inputInfo(name);
        if (info?.options.rawLink) continue;
        if (!includeLazy && info?.options.lazy) continue;
        if (!this.isAvailable(from)) stack.push(from);
        links.push([from, id]);
      }
    }
    for (const [from, to] of links) this.addStrongLink(from, to);
  }

  addStrongLink(from: string, to: string): void {
    if (this.isAvailable(from)) return;
    this.addNode(from);
    const blocked = this.blocking.get(from)!;
    if (blocked.has(to)) return;
    blocked.add(to);
    this.block(to);
    // The pick class of a ready node depends on what it blocks.
    if (this.readyClass.has(from)) {
      this.unmarkReady(from);
      this.markReady(from);
    }
  }

  /** A lazy input the node asked for becomes a dependency. Returns false when the input is not a link. */
  makeInputStrongLink(to: string, input: string): boolean {
    const value = this.dyn.getNode(to).inputs?.[input];
    if (!isLink(value)) return false;
    this.addStrongLink(value[0], to);
    return true;
  }

  /** Blocks a node until the returned function is called (async work in flight). */
  addExternalBlock(id: string): () => void {
    this.externalBlocks++;
    this.block(id);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.externalBlocks--;
      this.unblock(id);
      const w = this.wake;
      this.wake = null;
      w?.();
    };
  }

  /** The next node to run, waiting for async work when nothing else is ready; null with a cycle. */
  async stage(): Promise<string | null> {
    for (;;) {
      for (const set of this.ready) {
        const first = set.values().next();
        if (!first.done) {
          this.staged = first.value;
          return first.value;
        }
      }
      if (this.externalBlocks === 0) return null;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  unstage(): void {
    this.staged = null;
  }

  complete(): void {
    const id = this.staged!;
    this.staged = null;
    this.pending.delete(id);
    this.unmarkReady(id);
    const blocked = this.blocking.get(id)!;
    this.blocking.delete(id);
    for (const b of blocked) this.unblock(b);
  }

  /** Pending nodes that are part of a cycle (what is left after removing everything that can finish). */
  nodesInCycle(): string[] {
    const blockedBy = new Map<string, string[]>();
    for (const [from, tos] of this.blocking) for (const to of tos) {
      const l = blockedBy.get(to) ?? [];
      l.push(from);
      blockedBy.set(to, l);
    }
    // Peel off nodes that block nothing pending (leaves): what remains is on or feeding a cycle.
    const out = new Map<string, number>();
    for (const id of this.pending) out.set(id, [...(this.blocking.get(id) ?? [])].filter((b) => this.pending.has(b)).length);
    const leaves = [...this.pending].filter((id) => out.get(id) === 0);
    while (leaves.length > 0) {
      const id = leaves.pop()!;
      out.delete(id);
      for (const from of blockedBy.get(id) ?? []) {
        if (!out.has(from)) continue;
        const n = out.get(from)! - 1;
        out.set(from, n);
        if (n === 0) leaves.push(from);
      }
    }
    return [...out.keys()];
  }
}
