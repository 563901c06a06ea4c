import type { NodeDefinition } from '../api.ts';
import { constantImage, constantMask, noiseImage } from './tensor.ts';

const CATEGORY = 'Testing/Stub Nodes';
const SIZE = { default: 512, min: 1, max: 1024 ** 3, step: 1 };
const WIDTH = { default: 512, min: 1, max: 4096 ** 3, step: 1 };
const BATCH = { default: 1, min: 1, max: 1024 ** 3, step: 1 };

/** A small black image: what the reference's "runtime validation" stubs return. */
const tinyBlack = () => constantImage(1, 64, 64, 0);

/** stubs.py: constant images, masks and primitive values. */
export const stubNodes: NodeDefinition[] = [
  {
    name: 'StubImage',
    displayName: 'Stub Image',
    category: CATEGORY,
    inputs: {
      required: {
        content: [['WHITE', 'BLACK', 'NOISE']],
        height: ['INT', SIZE],
        width: ['INT', WIDTH],
        batch_size: ['INT', BATCH],
      },
    },
    outputs: ['IMAGE'],
    execute: ({ content, height, width, batch_size }) => {
      if (content === 'WHITE') return [constantImage(batch_size, height, width, 1)];
      if (content === 'BLACK') return [constantImage(batch_size, height, width, 0)];
      return [noiseImage(batch_size, height, width)];
    },
  },
  {
    name: 'StubConstantImage',
    displayName: 'Stub Constant Image',
    category: CATEGORY,
    inputs: {
      required: {
        value: ['FLOAT', { default: 0.5, min: 0.0, max: 1.0, step: 0.01 }],
        height: ['INT', SIZE],
        width: ['INT', WIDTH],
        batch_size: ['INT', BATCH],
      },
    },
    outputs: ['IMAGE'],
    execute: ({ value, height, width, batch_size }) => [constantImage(batch_size, height, width, value)],
  },
  {
    name: 'StubMask',
    displayName: 'Stub Mask',
    category: CATEGORY,
    inputs: {
      required: {
        value: ['FLOAT', { default: 0.5, min: 0.0, max: 1.0, step: 0.01 }],
        height: ['INT', SIZE],
        width: ['INT', WIDTH],
        batch_size: ['INT', BATCH],
      },
    },
    outputs: ['MASK'],
    execute: ({ value, height, width, batch_size }) => [constantMask(batch_size, height, width, value)],
  },
  {
    name: 'StubInt',
    displayName: 'Stub Int',
    category: CATEGORY,
    inputs: { required: { value: ['INT', { default: 0, min: -0xffffffff, max: 0xffffffff, step: 1 }] } },
    outputs: ['INT'],
    execute: ({ value }) => [value],
  },
  {
    name: 'StubFloat',
    displayName: 'Stub Float',
    category: CATEGORY,
    inputs: { required: { value: ['FLOAT', { default: 0.0, min: -1.0e38, max: 1.0e38, step: 0.01 }] } },
    outputs: ['FLOAT'],
    execute: ({ value }) => [value],
  },
  {
    name: 'StubStringOutput',
    displayName: 'Stub String Output',
    category: CATEGORY,
    inputs: { required: { value: ['STRING', { default: '' }] } },
    outputs: ['STRING'],
    execute: ({ value }) => [value],
  },
  {
    name: 'StubStringWithLength',
    displayName: 'Stub String With Length',
    description: 'STRING input with declared bounds AND opted in to runtime validation (RUNTIME_INPUT_VALIDATION = True).',
    category: CATEGORY,
    inputs: { required: { text: ['STRING', { default: 'hello', minLength: 3, maxLength: 10 }] } },
    outputs: ['IMAGE'],
    execute: () => [tinyBlack()],
  },
  {
    name: 'StubStringWithLengthNoFlag',
    displayName: 'Stub String With Length (No Flag)',
    description: 'Same bounds as StubStringWithLength but NOT opted in - linked values must flow through unchecked.',
    category: CATEGORY,
    inputs: { required: { text: ['STRING', { default: 'hello', minLength: 3, maxLength: 10 }] } },
    outputs: ['IMAGE'],
    execute: () => [tinyBlack()],
  },
  {
    name: 'StubIntWithBounds',
    displayName: 'Stub Int With Bounds',
    description: 'INT input with min/max bounds AND opted in to runtime validation.',
    category: CATEGORY,
    inputs: { required: { value: ['INT', { default: 5, min: 1, max: 10 }] } },
    outputs: ['IMAGE'],
    execute: () => [tinyBlack()],
  },
  {
    name: 'StubComboWithOptions',
    displayName: 'Stub Combo With Options',
    description: 'COMBO input opted in to runtime validation; takes input_types so a STRING may link into the COMBO.',
    category: CATEGORY,
    inputs: { required: { choice: [['RED', 'GREEN', 'BLUE']] } },
    outputs: ['IMAGE'],
    validateInputs: { inputs: ['input_types'], fn: () => true },
    execute: () => [tinyBlack()],
  },
];
