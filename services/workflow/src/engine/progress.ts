import type { DynamicPrompt } from './graph.ts';

export type NodeState = 'pending' | 'running' | 'finished' | 'error';

export interface NodeProgress {
  value: number;
  max: number;
  state: NodeState;
  node_id: string;
  prompt_id: string;
  display_node_id: string;
  parent_node_id: string | null;
  real_node_id: string;
}

/**
 * Per-prompt node progress (the reference's progress registry). Only nodes
 * that have started are stored: the `progress_state` message carries the
 * non-pending ones, and a 10,000-node prompt must not build a 10,000-entry
 * map per message.
 */
export class ProgressRegistry {
  private readonly nodes = new Map<string, NodeProgress>();
  /** Entries changed since `takeChanges` last ran (null: nobody reads changes). */
  private changed: Set<string> | null = null;

  constructor(
    readonly promptId: string,
    private readonly dyn: DynamicPrompt,
  ) {}

  private entry(id: string): NodeProgress {
    let e = this.nodes.get(id);
    if (!e) {
      e = {
        value: 0,
        max: 1,
        state: 'pending',
        node_id: id,
        prompt_id: this.promptId,
        display_node_id: this.dyn.displayNodeId(id),
        parent_node_id: this.dyn.parentNodeId(id),
        real_node_id: this.dyn.realNodeId(id),
      };
      this.nodes.set(id, e);
    }
    return e;
  }

  private touch(id: string): void {
    this.changed?.add(id);
  }

  /** Copies of the entries changed since the last call (the first call starts the tracking and returns every entry). */
  takeChanges(): NodeProgress[] {
    const ids = this.changed ?? this.nodes.keys();
    const out: NodeProgress[] = [];
    for (const id of ids) {
      const e = this.nodes.get(id);
      if (e) out.push({ ...e });
    }
    this.changed = new Set();
    return out;
  }

  start(id: string): void {
    this.touch(id);
    const e = this.entry(id);
    e.state = 'running';
    e.value = 0;
    e.max = 1;
  }

  update(id: string, value: number, max: number): void {
    this.touch(id);
    const e = this.entry(id);
    e.state = 'running';
    e.value = value;
    e.max = max;
  }

  finish(id: string): void {
    this.touch(id);
    const e = this.entry(id);
    e.state = 'finished';
    e.value = e.max;
  }

  error(id: string): void {
    this.touch(id);
    this.entry(id).state = 'error';
  }

  /** The `progress_state` payload as of now. */
  snapshot(): { prompt_id: string; nodes: Record<string, NodeProgress> } {
    return { prompt_id: this.promptId, nodes: Object.fromEntries(this.nodes) };
  }
}

/** What a sink reads when it sends `progress_state`: a prompt's registry, or a copy of it kept in another thread. */
export interface ProgressView {
  readonly promptId: string;
  snapshot(): { prompt_id: string; nodes: Record<string, NodeProgress> };
}

/** The main thread's copy of a registry that lives in an execution thread, kept by its changes. */
export class ProgressMirror implements ProgressView {
  private readonly nodes = new Map<string, NodeProgress>();
  constructor(readonly promptId: string) {}
  apply(changes: NodeProgress[]): void {
    for (const e of changes) this.nodes.set(e.node_id, e);
  }
  snapshot(): { prompt_id: string; nodes: Record<string, NodeProgress> } {
    return { prompt_id: this.promptId, nodes: Object.fromEntries(this.nodes) };
  }
}
