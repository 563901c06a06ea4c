import type { NodeDefinition } from './api.ts';

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** The reference's primitive nodes (comfy_extras/nodes_primitive.py). */
export const primitiveNodes: NodeDefinition[] = [
  {
    name: 'PrimitiveInt',
    displayName: 'Int',
    category: 'utils/primitive',
    inputs: { required: { value: ['INT', { min: -MAX_SAFE, max: MAX_SAFE, control_after_generate: 'fixed' }] } },
    outputs: ['INT'],
    execute: ({ value }) => [value],
  },
  {
    name: 'PrimitiveFloat',
    displayName: 'Float',
    category: 'utils/primitive',
    inputs: { required: { value: ['FLOAT', { min: -Number.MAX_VALUE, max: Number.MAX_VALUE }] } },
    outputs: ['FLOAT'],
    execute: ({ value }) => [value],
  },
  {
    name: 'PrimitiveString',
    displayName: 'String',
    category: 'utils/primitive',
    inputs: { required: { value: ['STRING', {}] } },
    outputs: ['STRING'],
    execute: ({ value }) => [value],
  },
  {
    name: 'PrimitiveStringMultiline',
    displayName: 'String (Multiline)',
    category: 'utils/primitive',
    inputs: { required: { value: ['STRING', { multiline: true }] } },
    outputs: ['STRING'],
    execute: ({ value }) => [value],
  },
  {
    name: 'PrimitiveBoolean',
    displayName: 'Boolean',
    category: 'utils/primitive',
    inputs: { required: { value: ['BOOLEAN', {}] } },
    outputs: ['BOOLEAN'],
    execute: ({ value }) => [value],
  },
];
