import { GraphBuilder, type NodeDefinition } from '../api.ts';
import { delay } from './timing.ts';

/**
 * Nodes of the reference's executed-node-ids tests: an output node that
 * expands into one output child (whose UI output must still be reported when
 * the expansion is served from the cache), and an output node that blocks
 * until the prompt is interrupted.
 */
export const executedIdsNodes: NodeDefinition[] = [
  {
    name: 'TestExecutedNodeIdsExpander',
    displayName: 'Executed Node Ids Expander',
    category: 'Testing/Nodes',
    inputs: { required: { value: ['STRING', { default: 'stable-child' }] } },
    outputs: [],
    outputNode: true,
    execute: ({ value }) => {
      const g = new GraphBuilder();
      g.node('PreviewAny', 'child', { source: value });
      return { result: [], expand: g.finalize() };
    },
  },
  {
    name: 'TestExecutedNodeIdsBlocking',
    displayName: 'Executed Node Ids Blocking',
    category: 'Testing/Nodes',
    inputs: { required: {} },
    outputs: [],
    outputNode: true,
    isChanged: () => NaN,
    async execute(_inputs, ctx) {
      // Waits for the interrupt; the day-long bound only keeps a forgotten prompt from living forever.
      await delay(24 * 3600 * 1000, ctx.signal);
      return { ui: { released: [true] } };
    },
  },
];
