import { GraphBuilder, type InputSpec, type NodeDefinition } from '../api.ts';
import { NUM_FLOW_SOCKETS } from './flow-control.ts';
import { pyError } from './tensor.ts';
import { variantSupport } from './tools.ts';

const NUM_LIST_SOCKETS = 10;

type Accumulation = { accum: unknown[] };

function accum(v: unknown): unknown[] {
  const a = (v as Accumulation | null)?.accum;
  if (!Array.isArray(a)) throw pyError('TypeError', "'NoneType' object is not subscriptable");
  return a;
}

/** Python list indexing: negative from the end, IndexError outside. */
function index(list: unknown[], i: number): number {
  const j = i < 0 ? list.length + i : i;
  if (!Number.isInteger(j) || j < 0 || j >= list.length) throw pyError('IndexError', 'list index out of range');
  return j;
}

/** Python's // and % on ints (floor semantics), and ** . */
function intMath(a: number, b: number, op: string): number {
  switch (op) {
    case 'add':
      return a + b;
    case 'subtract':
      return a - b;
    case 'multiply':
      return a * b;
    case 'divide':
      if (b === 0) throw pyError('ZeroDivisionError', 'integer division or modulo by zero');
      return Math.floor(a / b);
    case 'modulo':
      if (b === 0) throw pyError('ZeroDivisionError', 'integer division or modulo by zero');
      return a - b * Math.floor(a / b);
    default:
      if (a === 0 && b < 0) throw pyError('ZeroDivisionError', '0.0 cannot be raised to a negative power');
      return a ** b;
  }
}

const INT_RANGE = { default: 0, min: -0xffffffffffffffff, max: 0xffffffffffffffff, step: 1 };

function loopSockets(extra?: InputSpec[1]): Record<string, InputSpec> {
  const out: Record<string, InputSpec> = {};
  for (let i = 1; i < NUM_FLOW_SOCKETS; i++) out[`initial_value${i}`] = extra ? ['*', { ...extra }] : ['*'];
  return out;
}

/** util.py: accumulations (list values carried in one output), for loops built on the while loop, and a list maker. */
export const utilityNodes: NodeDefinition[] = [
  variantSupport({
    name: 'TestAccumulateNode',
    displayName: 'Accumulate',
    category: 'Testing/Lists',
    inputs: { required: { to_add: ['*'] }, optional: { accumulation: ['ACCUMULATION'] } },
    outputs: ['ACCUMULATION'],
    execute: ({ to_add, accumulation }) => [{ accum: accumulation === undefined || accumulation === null ? [to_add] : [...accum(accumulation), to_add] }],
  }),
  variantSupport({
    name: 'TestAccumulationHeadNode',
    displayName: 'Accumulation Head',
    category: 'Testing/Lists',
    inputs: { required: { accumulation: ['ACCUMULATION'] } },
    outputs: ['ACCUMULATION', '*'],
    execute: ({ accumulation }) => {
      const a = accum(accumulation);
      return a.length === 0 ? [accumulation, null] : [{ accum: a.slice(1) }, a[0]];
    },
  }),
  {
    name: 'TestAccumulationTailNode',
    displayName: 'Accumulation Tail',
    category: 'Testing/Lists',
    inputs: { required: { accumulation: ['ACCUMULATION'] } },
    outputs: ['ACCUMULATION', '*'],
    execute: ({ accumulation }) => {
      const a = accum(accumulation);
      return a.length === 0 ? [null, accumulation] : [{ accum: a.slice(0, -1) }, a[a.length - 1]];
    },
  },
  variantSupport({
    name: 'TestAccumulationToListNode',
    displayName: 'Accumulation to List',
    category: 'Testing/Lists',
    inputs: { required: { accumulation: ['ACCUMULATION'] } },
    outputs: ['*'],
    outputIsList: [true],
    execute: ({ accumulation }) => [accum(accumulation)],
  }),
  variantSupport({
    name: 'TestListToAccumulationNode',
    displayName: 'List to Accumulation',
    category: 'Testing/Lists',
    inputs: { required: { list: ['*'] } },
    outputs: ['ACCUMULATION'],
    inputIsList: true,
    execute: ({ list }) => [{ accum: list }],
  }),
  variantSupport({
    name: 'TestAccumulationGetLengthNode',
    displayName: 'Accumulation Get Length',
    category: 'Testing/Lists',
    inputs: { required: { accumulation: ['ACCUMULATION'] } },
    outputs: ['INT'],
    execute: ({ accumulation }) => [accum(accumulation).length],
  }),
  variantSupport({
    name: 'TestAccumulationGetItemNode',
    displayName: 'Accumulation Get Item',
    category: 'Testing/Lists',
    inputs: { required: { accumulation: ['ACCUMULATION'], index: ['INT', { default: 0, step: 1 }] } },
    outputs: ['*'],
    execute: ({ accumulation, index: i }) => {
      const a = accum(accumulation);
      return [a[index(a, i)]];
    },
  }),
  variantSupport({
    name: 'TestAccumulationSetItemNode',
    displayName: 'Accumulation Set Item',
    category: 'Testing/Lists',
    inputs: { required: { accumulation: ['ACCUMULATION'], index: ['INT', { default: 0, step: 1 }], value: ['*'] } },
    outputs: ['ACCUMULATION'],
    execute: ({ accumulation, index: i, value }) => {
      const a = [...accum(accumulation)];
      a[index(a, i)] = value;
      return [{ accum: a }];
    },
  }),
  {
    name: 'TestIntMathOperation',
    displayName: 'Int Math Operation',
    category: 'Testing/Logic',
    inputs: { required: { a: ['INT', INT_RANGE], b: ['INT', INT_RANGE], operation: [['add', 'subtract', 'multiply', 'divide', 'modulo', 'power']] } },
    outputs: ['INT'],
    execute: ({ a, b, operation }) => [intMath(a, b, operation)],
  },
  variantSupport({
    name: 'TestForLoopOpen',
    displayName: 'For Loop Open',
    category: 'Testing/Flow',
    inputs: {
      required: { remaining: ['INT', { default: 1, min: 0, max: 100000, step: 1 }] },
      optional: loopSockets(),
      // Declared hidden as the reference does: the while loop sets it on its copies, the UI never shows it.
      hidden: { initial_value0: ['*'] as never },
    },
    outputs: ['FLOW_CONTROL', 'INT', ...Array.from({ length: NUM_FLOW_SOCKETS - 1 }, () => '*')],
    outputNames: ['flow_control', 'remaining', ...Array.from({ length: NUM_FLOW_SOCKETS - 1 }, (_, i) => `value${i + 1}`)],
    execute: (kwargs) => {
      let remaining = kwargs.remaining;
      if ('initial_value0' in kwargs) remaining = kwargs.initial_value0;
      const graph = new GraphBuilder();
      const inputs: Record<string, unknown> = { condition: remaining, initial_value0: remaining };
      for (let i = 1; i < NUM_FLOW_SOCKETS; i++) if (kwargs[`initial_value${i}`] !== undefined && kwargs[`initial_value${i}`] !== null) inputs[`initial_value${i}`] = kwargs[`initial_value${i}`];
      graph.node('TestWhileLoopOpen', undefined, inputs);
      const outputs = Array.from({ length: NUM_FLOW_SOCKETS - 1 }, (_, i) => kwargs[`initial_value${i + 1}`] ?? null);
      return { result: ['stub', remaining, ...outputs], expand: graph.finalize() };
    },
  }),
  variantSupport({
    name: 'TestForLoopClose',
    displayName: 'For Loop Close',
    category: 'Testing/Flow',
    inputs: { required: { flow_control: ['FLOW_CONTROL', { rawLink: true }] }, optional: loopSockets({ rawLink: true }) },
    outputs: Array.from({ length: NUM_FLOW_SOCKETS - 1 }, () => '*'),
    outputNames: Array.from({ length: NUM_FLOW_SOCKETS - 1 }, (_, i) => `value${i + 1}`),
    execute: (kwargs) => {
      const flowControl = kwargs.flow_control as [string, number];
      const graph = new GraphBuilder();
      const whileOpen = flowControl[0];
      const sub = graph.node('TestIntMathOperation', undefined, { operation: 'subtract', a: [whileOpen, 1], b: 1 });
      const cond = graph.node('TestToBoolNode', undefined, { value: sub.out(0) });
      const inputs: Record<string, unknown> = { flow_control: flowControl, condition: cond.out(0), initial_value0: sub.out(0) };
      for (let i = 1; i < NUM_FLOW_SOCKETS; i++) if (kwargs[`initial_value${i}`] !== undefined && kwargs[`initial_value${i}`] !== null) inputs[`initial_value${i}`] = kwargs[`initial_value${i}`];
      const close = graph.node('TestWhileLoopClose', undefined, inputs);
      return { result: Array.from({ length: NUM_FLOW_SOCKETS - 1 }, (_, i) => close.out(i + 1)), expand: graph.finalize() };
    },
  }),
  variantSupport({
    name: 'TestMakeListNode',
    displayName: 'Make List',
    category: 'Testing/Lists',
    inputs: {
      required: { value1: ['*'] },
      optional: Object.fromEntries(Array.from({ length: NUM_LIST_SOCKETS - 1 }, (_, i) => [`value${i + 1}`, ['*'] as InputSpec])),
    },
    outputs: ['*'],
    outputIsList: [true],
    execute: (kwargs) => {
      const result: unknown[] = [];
      for (let i = 0; i < NUM_LIST_SOCKETS; i++) if (`value${i}` in kwargs) result.push(kwargs[`value${i}`]);
      return [result];
    },
  }),
];
