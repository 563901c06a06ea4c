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

  start(id: string): void {
    const e = this.entry(id);
    e.state = 'running';
    e.value = 0;
    e.max = 1;
  }

  update(id: string, value: number, max: number): void {
    const e = this.entry(id);
    e.state = 'running';
    e.value = value;
    e.max = max;
  }

  finish(id: string): void {
    const e = this.entry(id);
    e.state = 'finished';
    e.value = e.max;
  }

  error(id: string): void {
    this.entry(id).state = 'error';
  }

  /** The `progress_state` payload as of now. */
  snapshot(): { prompt_id: string; nodes: Record<string, NodeProgress> } {
    return { prompt_id: this.promptId, nodes: Object.fromEntries(this.nodes) };
  }
}
