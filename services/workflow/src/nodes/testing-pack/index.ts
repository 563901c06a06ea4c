import type { NodeDefinition } from '../api.ts';
import { materialisingInputs } from '../pending-images.ts';
import { apiTestNodes, asyncTestNodes } from './async-nodes.ts';
import { conditionNodes } from './conditions.ts';
import { executedIdsNodes } from './executed-ids.ts';
import { flowControlNodes } from './flow-control.ts';
import { specificTestNodes } from './specific-tests.ts';
import { stubNodes } from './stubs.ts';
import { utilityNodes } from './util.ts';

/**
 * The reference's execution test pack (tests/execution/testing_nodes/testing-pack):
 * same class names, inputs, outputs and behaviour, on this service's IMAGE and
 * MASK types. Loaded with `--enable-test-nodes`.
 */
export const testingPackNodes: NodeDefinition[] = [
  ...specificTestNodes,
  ...flowControlNodes,
  ...utilityNodes,
  ...conditionNodes,
  ...stubNodes,
  ...asyncTestNodes,
  ...apiTestNodes,
  ...executedIdsNodes,
].map((d) => materialisingInputs({ ...d, pythonModule: d.pythonModule ?? 'custom_nodes.testing-pack' }));
