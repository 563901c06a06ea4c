import { ExecutionBlocker, GraphBuilder, isLink, type InputSpec, type NodeDefinition } from '../api.ts';
import { variantSupport } from './tools.ts';

export const NUM_FLOW_SOCKETS = 5;

interface DynPrompt {
  getNode(id: string): { class_type: string; inputs: Record<string, unknown> };
}

function socketInputs(from: number, extra: Partial<InputSpec[1]> = {}): Record<string, InputSpec> {
  const out: Record<string, InputSpec> = {};
  for (let i = from; i < NUM_FLOW_SOCKETS; i++) out[`initial_value${i}`] = Object.keys(extra).length ? ['*', { ...extra }] : ['*'];
  return out;
}

/** Every node upstream of `root`, mapped to the nodes it feeds (the reference's explore_dependencies, without recursion). */
function upstreamOf(root: string, dyn: DynPrompt): Map<string, string[]> {
  const upstream = new Map<string, string[]>();
  const stack = [root];
  while (stack.length > 0) {
    const id = stack.pop()!;
    for (const v of Object.values(dyn.getNode(id).inputs ?? {})) {
      if (!isLink(v)) continue;
      const parent = v[0];
      let fed = upstream.get(parent);
      if (!fed) {
        upstream.set(parent, (fed = []));
        stack.push(parent);
      }
      fed.push(id);
    }
  }
  return upstream;
}

/** Nodes between `open` and the close node: everything downstream of `open` within the close node's ancestry. */
function contained(open: string, upstream: Map<string, string[]>): string[] {
  const seen = new Set<string>();
  const order: string[] = [];
  const stack = [open];
  while (stack.length > 0) {
    const id = stack.pop()!;
    for (const child of upstream.get(id) ?? []) {
      if (seen.has(child)) continue;
      seen.add(child);
      order.push(child);
      stack.push(child);
    }
  }
  return order;
}

/** flow_control.py: while loops that re-expand themselves, and the execution blocker. */
export const flowControlNodes: NodeDefinition[] = [
  variantSupport({
    name: 'TestWhileLoopOpen',
    displayName: 'While Loop Open',
    category: 'Testing/Flow',
    inputs: { required: { condition: ['BOOLEAN', { default: true }] }, optional: socketInputs(0) },
    outputs: ['FLOW_CONTROL', ...Array.from({ length: NUM_FLOW_SOCKETS }, () => '*')],
    outputNames: ['FLOW_CONTROL', ...Array.from({ length: NUM_FLOW_SOCKETS }, (_, i) => `value${i}`)],
    execute: (kwargs) => ['stub', ...Array.from({ length: NUM_FLOW_SOCKETS }, (_, i) => kwargs[`initial_value${i}`] ?? null)],
  }),
  variantSupport({
    name: 'TestWhileLoopClose',
    displayName: 'While Loop Close',
    category: 'Testing/Flow',
    inputs: {
      required: { flow_control: ['FLOW_CONTROL', { rawLink: true }], condition: ['BOOLEAN', { forceInput: true }] },
      optional: socketInputs(0),
      hidden: { dynprompt: 'DYNPROMPT', unique_id: 'UNIQUE_ID' },
    },
    outputs: Array.from({ length: NUM_FLOW_SOCKETS }, () => '*'),
    outputNames: Array.from({ length: NUM_FLOW_SOCKETS }, (_, i) => `value${i}`),
    execute: (kwargs) => {
      const { flow_control, condition, dynprompt, unique_id } = kwargs as { flow_control: [string, number]; condition: unknown; dynprompt: DynPrompt; unique_id: string };
      if (!dynprompt) throw new Error('TestWhileLoopClose needs its DYNPROMPT input');
      if (!condition) return Array.from({ length: NUM_FLOW_SOCKETS }, (_, i) => kwargs[`initial_value${i}`] ?? null);

      const upstream = upstreamOf(unique_id, dynprompt);
      const open = flow_control[0];
      const ids = new Set(contained(open, upstream));
      ids.add(unique_id);
      ids.add(open);
      // The default prefix keeps ids unique per call; the recursive copy of this node is called "Recurse" so ids grow only linearly.
      const name = (id: string) => (id === unique_id ? 'Recurse' : id);
      const graph = new GraphBuilder();
      for (const id of ids) graph.node(dynprompt.getNode(id).class_type, name(id)).setOverrideDisplayId(id);
      for (const id of ids) {
        const node = graph.lookup(name(id))!;
        for (const [k, v] of Object.entries(dynprompt.getNode(id).inputs ?? {})) {
          if (isLink(v) && ids.has(v[0])) node.setInput(k, graph.lookup(name(v[0]))!.out(v[1]));
          else node.setInput(k, v);
        }
      }
      const newOpen = graph.lookup(open)!;
      for (let i = 0; i < NUM_FLOW_SOCKETS; i++) newOpen.setInput(`initial_value${i}`, kwargs[`initial_value${i}`] ?? undefined);
      const clone = graph.lookup('Recurse')!;
      return { result: Array.from({ length: NUM_FLOW_SOCKETS }, (_, i) => clone.out(i)), expand: graph.finalize() };
    },
  }),
  variantSupport({
    name: 'TestExecutionBlocker',
    displayName: 'Execution Blocker',
    category: 'Testing/Flow',
    inputs: { required: { input: ['*'], block: ['BOOLEAN'], verbose: ['BOOLEAN', { default: false }] } },
    outputs: ['*'],
    outputNames: ['output'],
    execute: ({ input, block, verbose }) => (block ? [new ExecutionBlocker(verbose ? 'Blocked Execution' : null)] : [input]),
  }),
];
