/**
 * NetBox's event-rule conditions language (extras/conditions.py, 4.3.4–4.6.8
 * semantics; path type errors fail closed as in 4.7). Validation happens when
 * a rule is saved (ConditionError → 400); evaluation errors are
 * InvalidCondition, which the caller turns into "rule skipped".
 */

import { compilePyRegex, RegexSyntaxError, type PyRegex } from './pyregex.ts';

export class ConditionError extends Error {}
export class InvalidCondition extends Error {}

type Op = 'eq' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'contains' | 'regex';
const OPS: Op[] = ['eq', 'gt', 'gte', 'lt', 'lte', 'in', 'contains', 'regex'];
const OPS_BY_TYPE: Record<string, Op[]> = {
  str: ['eq', 'contains', 'regex'],
  bool: ['eq', 'contains'],
  number: ['eq', 'gt', 'gte', 'lt', 'lte', 'contains'],
  list: ['eq', 'in', 'contains'],
  none: ['eq'],
};

interface Condition {
  kind: 'condition';
  attr: string;
  value: unknown;
  op: Op;
  negate: boolean;
  regex?: PyRegex;
}
interface ConditionSet {
  kind: 'set';
  logic: 'and' | 'or';
  items: Array<Condition | ConditionSet>;
}
export type CompiledConditions = Condition | ConditionSet | null;

const MAX_DEPTH = 16;
const MAX_NODES = 500;

function pyType(v: unknown): string {
  if (v === null) return 'none';
  if (typeof v === 'string') return 'str';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return 'number';
  if (Array.isArray(v)) return 'list';
  return 'dict';
}

/** Python truthiness of a JSON value. */
export function truthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v as object).length > 0;
  return true;
}

/** Validates and compiles stored conditions; falsy conditions (null, {}, []) always match. */
export function compileConditions(raw: unknown): CompiledConditions {
  if (!truthy(raw)) return null;
  const budget = { nodes: 0 };
  return compileSet(raw, 0, budget);
}

function isLogic(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  return keys.length === 1 && (keys[0] === 'and' || keys[0] === 'or');
}

function compileSet(raw: unknown, depth: number, budget: { nodes: number }): Condition | ConditionSet {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConditionError(`Ruleset must be a dictionary, not ${pyType(raw)}.`);
  }
  if (depth > MAX_DEPTH) throw new ConditionError(`Conditions are nested too deeply (at most ${MAX_DEPTH} levels).`);
  const keys = Object.keys(raw);
  if (keys.length === 1) {
    const logic = keys[0]!;
    if (logic !== 'and' && logic !== 'or') {
      throw new ConditionError("Invalid logic type: must be 'and' or 'or'. Please check documentation.");
    }
    const list = (raw as Record<string, unknown>)[logic];
    if (!Array.isArray(list)) throw new ConditionError(`The value of '${logic}' must be a list of conditions.`);
    const items = list.map((rule) => (isLogic(rule) ? compileSet(rule, depth + 1, budget) : compileCondition(rule, budget)));
    return { kind: 'set', logic, items };
  }
  return compileCondition(raw, budget);
}

function compileCondition(raw: unknown, budget: { nodes: number }): Condition {
  if (++budget.nodes > MAX_NODES) throw new ConditionError(`Too many conditions (at most ${MAX_NODES}).`);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConditionError(`Ruleset must be a dictionary, not ${pyType(raw)}.`);
  }
  const r = raw as Record<string, unknown>;
  const unknown = Object.keys(r).filter((k) => !['attr', 'value', 'op', 'negate'].includes(k));
  if (unknown.length || !('attr' in r) || !('value' in r)) {
    throw new ConditionError('Incorrect key(s) informed. Please check documentation.');
  }
  if (typeof r.attr !== 'string' || r.attr === '') throw new ConditionError('Condition attr must be a non-empty string.');
  const op = (r.op ?? 'eq') as Op;
  if (typeof op !== 'string' || !OPS.includes(op)) {
    throw new ConditionError(`Unknown operator: ${String(r.op)}. Must be one of: ${OPS.join(', ')}`);
  }
  const t = pyType(r.value);
  if (!(t in OPS_BY_TYPE)) throw new ConditionError(`Unsupported value type: ${JSON.stringify(r.value)}`);
  if (!OPS_BY_TYPE[t]!.includes(op)) throw new ConditionError(`Invalid type for ${op} operation: ${JSON.stringify(r.value)}`);
  const cond: Condition = { kind: 'condition', attr: r.attr, value: r.value, op, negate: truthy(r.negate) };
  if (op === 'regex') cond.regex = compilePythonRegex(r.value as string);
  return cond;
}

/** Python `re` syntax on RE2 (linear time); constructs RE2 cannot run are refused on save. */
export function compilePythonRegex(pattern: string): PyRegex {
  try {
    return compilePyRegex(pattern);
  } catch (err) {
    if (err instanceof RegexSyntaxError) throw new ConditionError(err.message);
    throw err;
  }
}

/** Python `==` between JSON values: 1 == 1.0 == True, lists and dicts element-wise. */
export function pyEquals(a: unknown, b: unknown): boolean {
  const num = (v: unknown) => (typeof v === 'boolean' ? (v ? 1 : 0) : v);
  if ((typeof a === 'number' || typeof a === 'boolean') && (typeof b === 'number' || typeof b === 'boolean')) return num(a) === num(b);
  if (a === null || b === null) return a === b;
  if (typeof a !== typeof b) return false;
  if (typeof a !== 'object') return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bl = b as unknown[];
    return a.length === bl.length && a.every((x, i) => pyEquals(x, bl[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao);
  return ak.length === Object.keys(bo).length && ak.every((k) => Object.hasOwn(bo, k) && pyEquals(ao[k], bo[k]));
}

function pyIn(needle: unknown, haystack: unknown, attr: string, op: string): boolean {
  if (typeof haystack === 'string') {
    if (typeof needle !== 'string') throw new InvalidCondition(`Invalid data type at '${attr}' for '${op}' evaluation: 'in <string>' requires string as left operand`);
    return haystack.includes(needle);
  }
  if (Array.isArray(haystack)) return haystack.some((x) => x === needle || pyEquals(x, needle));
  if (haystack !== null && typeof haystack === 'object') {
    if (Array.isArray(needle) || (needle !== null && typeof needle === 'object')) {
      throw new InvalidCondition(`Invalid data type at '${attr}' for '${op}' evaluation: unhashable type`);
    }
    return typeof needle === 'string' && Object.hasOwn(haystack, needle);
  }
  throw new InvalidCondition(`Invalid data type at '${attr}' for '${op}' evaluation: argument of type '${pyType(haystack)}' is not iterable`);
}

function compare(data: unknown, value: unknown, op: 'gt' | 'gte' | 'lt' | 'lte', attr: string): boolean {
  const ok = (v: unknown) => typeof v === 'number' || typeof v === 'boolean';
  if (!ok(data)) throw new InvalidCondition(`Invalid data type at '${attr}' for '${op}' evaluation: '${op}' not supported between '${pyType(data)}' and '${pyType(value)}'`);
  const a = Number(data);
  const b = Number(value);
  return op === 'gt' ? a > b : op === 'gte' ? a >= b : op === 'lt' ? a < b : a <= b;
}

function lookup(obj: unknown, key: string, attr: string): unknown {
  if (Array.isArray(obj)) return obj.map((item) => lookupOne(item, key, attr));
  return lookupOne(obj, key, attr);
}

function lookupOne(obj: unknown, key: string, attr: string): unknown {
  const o = truthy(obj) ? obj : {};
  if (typeof o !== 'object' || Array.isArray(o)) {
    throw new InvalidCondition(`Invalid key path: ${attr} (cannot look up '${key}' in a ${pyType(o)})`);
  }
  if (!Object.hasOwn(o as object, key)) throw new InvalidCondition(`Invalid key path: ${attr}`);
  return (o as Record<string, unknown>)[key];
}

function evalCondition(c: Condition, data: unknown): boolean {
  const v = c.attr.split('.').reduce((acc, key) => lookup(acc, key, c.attr), data);
  let result: boolean;
  switch (c.op) {
    case 'eq':
      result = pyEquals(v, c.value);
      break;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      result = compare(v, c.value, c.op, c.attr);
      break;
    case 'in':
      result = pyIn(v, c.value, c.attr, c.op);
      break;
    case 'contains':
      result = pyIn(c.value, v, c.attr, c.op);
      break;
    case 'regex':
      if (typeof v !== 'string') throw new InvalidCondition(`Invalid data type at '${c.attr}' for 'regex' evaluation: expected string or bytes-like object, got '${pyType(v)}'`);
      try {
        result = c.regex!.matchStart(v);
      } catch (err) {
        // too long a text for the pattern: the rule is skipped like any evaluation error (fail closed)
        throw new InvalidCondition(`Invalid data at '${c.attr}' for 'regex' evaluation: ${(err as Error).message}`);
      }
      break;
  }
  return c.negate ? !result : result;
}

/** True when the data matches; throws InvalidCondition when it cannot be evaluated. */
export function evaluateConditions(compiled: CompiledConditions, data: unknown): boolean {
  if (!compiled) return true;
  if (compiled.kind === 'condition') return evalCondition(compiled, data);
  if (compiled.logic === 'and') return compiled.items.every((c) => evaluateConditions(c, data));
  return compiled.items.some((c) => evaluateConditions(c, data));
}
