import type { NodeDefinition } from '../api.ts';
import { isTensorLike, maskTensor, imageTensor } from './tensor.ts';
import { ImageBatch } from '../image-types.ts';

const OPS = ['==', '!=', '<', '>', '<=', '>='];

function compare(a: number, b: number, op: string): boolean {
  switch (op) {
    case '==':
      return a === b;
    case '!=':
      return a !== b;
    case '<':
      return a < b;
    case '>':
      return a > b;
    case '<=':
      return a <= b;
    default:
      return a >= b;
  }
}

/** Longest pattern and subject a regex condition takes: the node runs user text, so it stays bounded. */
const MAX_REGEX_TEXT = 1000;

/** re.match(pattern, text): anchored at the start only; a bad pattern is "no match". */
function regexMatch(pattern: string, text: string): boolean {
  if (pattern.length > MAX_REGEX_TEXT || text.length > 10 * MAX_REGEX_TEXT) return false;
  try {
    return new RegExp(`^(?:${pattern})`, 'u').test(text);
  } catch {
    return false;
  }
}

/** Python's bool(): None, 0, '', empty lists and dicts are false. */
export function pyBool(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (typeof v === 'number') return true;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) return Object.keys(v).length > 0;
  return true;
}

/** conditions.py. */
export const conditionNodes: NodeDefinition[] = [
  {
    name: 'TestIntConditions',
    displayName: 'Int Condition',
    category: 'Testing/Logic',
    inputs: {
      required: {
        a: ['INT', { default: 0, min: -0xffffffffffffffff, max: 0xffffffffffffffff, step: 1 }],
        b: ['INT', { default: 0, min: -0xffffffffffffffff, max: 0xffffffffffffffff, step: 1 }],
        operation: [OPS],
      },
    },
    outputs: ['BOOLEAN'],
    execute: ({ a, b, operation }) => [compare(a, b, operation)],
  },
  {
    name: 'TestFloatConditions',
    displayName: 'Float Condition',
    category: 'Testing/Logic',
    inputs: {
      required: {
        a: ['FLOAT', { default: 0, min: -999999999999.0, max: 999999999999.0, step: 1 }],
        b: ['FLOAT', { default: 0, min: -999999999999.0, max: 999999999999.0, step: 1 }],
        operation: [OPS],
      },
    },
    outputs: ['BOOLEAN'],
    execute: ({ a, b, operation }) => [compare(a, b, operation)],
  },
  {
    name: 'TestStringConditions',
    displayName: 'String Condition',
    category: 'Testing/Logic',
    inputs: {
      required: {
        a: ['STRING', { multiline: false }],
        b: ['STRING', { multiline: false }],
        operation: [['a == b', 'a != b', 'a IN b', 'a MATCH REGEX(b)', 'a BEGINSWITH b', 'a ENDSWITH b']],
        case_sensitive: ['BOOLEAN', { default: true }],
      },
    },
    outputs: ['BOOLEAN'],
    execute: ({ a, b, operation, case_sensitive }) => {
      let x = String(a);
      let y = String(b);
      if (!case_sensitive) {
        x = x.toLowerCase();
        y = y.toLowerCase();
      }
      switch (operation) {
        case 'a == b':
          return [x === y];
        case 'a != b':
          return [x !== y];
        case 'a IN b':
          return [y.includes(x)];
        case 'a MATCH REGEX(b)':
          return [regexMatch(y, x)];
        case 'a BEGINSWITH b':
          return [x.startsWith(y)];
        default:
          return [x.endsWith(y)];
      }
    },
  },
  {
    name: 'TestToBoolNode',
    displayName: 'To Bool',
    category: 'Testing/Logic',
    inputs: { required: { value: ['*'] }, optional: { invert: ['BOOLEAN', { default: false }] } },
    outputs: ['BOOLEAN'],
    execute: ({ value, invert }) => {
      let result: boolean;
      if (isTensorLike(value)) {
        const t = value instanceof ImageBatch ? imageTensor(value) : maskTensor(value as never);
        result = !(t.max() === 0 && t.min() === 0);
      } else result = pyBool(value);
      return [invert ? !result : result];
    },
  },
  {
    name: 'TestBoolOperationNode',
    displayName: 'Bool Operation',
    category: 'Testing/Logic',
    inputs: { required: { a: ['BOOLEAN'], b: ['BOOLEAN'], op: [['a AND b', 'a OR b', 'a XOR b', 'NOT a']] } },
    outputs: ['BOOLEAN'],
    execute: ({ a, b, op }) => {
      if (op === 'a AND b') return [a && b];
      if (op === 'a OR b') return [a || b];
      if (op === 'a XOR b') return [Boolean(a) !== Boolean(b)];
      return [!a];
    },
  },
];
