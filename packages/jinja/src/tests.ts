// Jinja2 3.1 builtin tests (`x is defined`, `x is divisibleby 3`, ...).

import type { TestFn } from './compiler.js';
import { compare, eq, intOf, mod } from './runtime/ops.js';
import {
  Markup,
  PyFloat,
  Undefined,
  isCallable,
  isDict,
  isFloat,
  isIterable,
  truthy,
} from './runtime/values.js';
import { Macro } from './runtime/objects.js';
import { softStr } from './filters/util.js';

const cmpTest =
  (op: string): TestFn =>
  (r, v, a) =>
    compare(op, v, a[0]);

export function makeTests(lookup: { filters: Map<string, unknown>; tests: Map<string, unknown> }): Record<string, TestFn> {
  const t: Record<string, TestFn> = {
    defined: (r, v) => !(v instanceof Undefined),
    undefined: (r, v) => v instanceof Undefined,
    none: (r, v) => v === null || v === undefined,
    boolean: (r, v) => typeof v === 'boolean',
    true: (r, v) => v === true,
    false: (r, v) => v === false,
    integer: (r, v) => typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v)),
    float: (r, v) => isFloat(v),
    number: (r, v) => typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean' || v instanceof PyFloat,
    string: (r, v) => typeof v === 'string' || v instanceof Markup,
    mapping: (r, v) => isDict(v),
    sequence: (r, v) => typeof v === 'string' || v instanceof Markup || Array.isArray(v) || isDict(v) || v instanceof Undefined,
    iterable: (r, v) => isIterable(v),
    callable: (r, v) => isCallable(v) || v instanceof Macro || v instanceof Undefined, // Undefined defines __call__
    lower: (r, v) => {
      const s = softStr(v);
      return /[\p{Lu}\p{Ll}\p{Lt}]/u.test(s) && !/[\p{Lu}\p{Lt}]/u.test(s);
    },
    upper: (r, v) => {
      const s = softStr(v);
      return /[\p{Lu}\p{Ll}\p{Lt}]/u.test(s) && !/[\p{Ll}\p{Lt}]/u.test(s);
    },
    escaped: (r, v) => v instanceof Markup,
    even: (r, v) => eq(mod(r, v, 2), 0),
    odd: (r, v) => eq(mod(r, v, 2), 1),
    divisibleby: (r, v, a) => eq(mod(r, v, a[0]), 0),
    sameas: (r, v, a) => {
      const o = a[0];
      if (v === o) return typeof v !== 'number' || Number.isInteger(v);
      // small ints and None are singletons in CPython; equal-valued PyFloats are distinct objects
      return false;
    },
    in: (r, v, a) => compare('in', v, a[0]),
    filter: (r, v) => typeof v === 'string' && lookup.filters.has(v),
    test: (r, v) => typeof v === 'string' && lookup.tests.has(v),
    eq: cmpTest('=='),
    ne: cmpTest('!='),
    lt: cmpTest('<'),
    le: cmpTest('<='),
    gt: cmpTest('>'),
    ge: cmpTest('>='),
  };
  t.equalto = t.eq;
  t['=='] = t.eq;
  t['!='] = t.ne;
  t.lessthan = t.lt;
  t['<'] = t.lt;
  t['<='] = t.le;
  t.greaterthan = t.gt;
  t['>'] = t.gt;
  t['>='] = t.ge;
  void intOf;
  void truthy;
  return t;
}
