import type { NodeDefinition } from './api.ts';
import { v3 } from './schema.ts';

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
/** Python's sys.maxsize, the reference's Float bounds (as JSON parsers read it, a double). */
const SYS_MAXSIZE = 9223372036854775807;

/** The reference's primitive nodes (comfy_extras/nodes_primitive.py). */
export const primitiveNodes: NodeDefinition[] = v3('comfy_extras.nodes_primitive', [
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
    inputs: { required: { value: ['FLOAT', { min: -SYS_MAXSIZE, max: SYS_MAXSIZE }] } },
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
]);
