// The value model: how Python values are represented in JavaScript.
//
//   Python            JavaScript
//   None              null (JS undefined is treated as None too)
//   bool              boolean
//   int               integer-valued number; bigint beyond Number.MAX_SAFE_INTEGER
//   float             non-integer number (incl. inf/nan), or PyFloat for integer-valued floats
//   str               string
//   list              Array
//   tuple             Array tagged with markTuple()
//   dict              Map (created by templates) or plain object (from hosts / JSON)
//   Markup            Markup
//   Undefined         Undefined
// Anything else (class instances, functions) is opaque: no attributes are reachable.

import { SecurityError, UndefinedError, pyError } from '../errors.js';
import type { RenderState } from './state.js';
import { Markup, PyIterator } from './wrappers.js';

export { Markup, PyIterator };

/** An integer-valued float such as `1.0`, kept apart from the int `1` so it renders as Python does. */
export class PyFloat {
  constructor(readonly v: number) {}
  valueOf(): number {
    return this.v;
  }
}

/** Float result normalisation: only integer-valued floats need the wrapper. */
export function mkFloat(x: number): number | PyFloat {
  return Number.isInteger(x) ? new PyFloat(x) : x;
}

const TUPLE = Symbol('tuple');
/** Tags groupby() results so `.grouper` / `.list` work on them. */
export const GROUP_TUPLE = Symbol('groupTuple');
export function markTuple<T extends unknown[]>(a: T): T {
  // plain symbol assignment: a cached hidden-class transition, much cheaper than defineProperty
  (a as unknown as Record<symbol, unknown>)[TUPLE] = true;
  return a;
}
export function isTuple(v: unknown): v is unknown[] {
  return Array.isArray(v) && (v as unknown as Record<symbol, unknown>)[TUPLE] === true;
}

export const MISSING: unique symbol = Symbol('missing');

/** Jinja2's default Undefined: renders empty, iterates empty, raises on any other use. */
export class Undefined {
  constructor(
    readonly name: unknown = MISSING,
    readonly obj: unknown = MISSING,
    readonly hint: string | null = null,
    readonly security = false,
  ) {}
  message(): string {
    if (this.hint !== null) return this.hint;
    if (this.obj === MISSING) return `${pyReprShort(this.name)} is undefined`;
    if (typeof this.name !== 'string') return `${objectTypeRepr(this.obj)} has no element ${pyReprShort(this.name)}`;
    return `${pyReprShort(objectTypeRepr(this.obj))} has no attribute ${pyReprShort(this.name)}`;
  }
  fail(): never {
    const msg = this.message();
    throw this.security ? new SecurityError(msg) : new UndefinedError(msg);
  }
}

// Minimal repr for messages; the full repr lives in repr.ts (which imports this module).
function pyReprShort(v: unknown): string {
  if (typeof v === 'string') return v.includes("'") && !v.includes('"') ? `"${v}"` : `'${v.replace(/'/g, "\\'")}'`;
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  return String(v);
}

/** Keyword arguments handed to host functions as the last argument. */
export class Kwargs {
  constructor(readonly map: Map<string, unknown>) {}
  get(name: string): unknown {
    return this.map.get(name);
  }
}

export type KwMap = Map<string, unknown> | null;

/** Anything a template may call besides host functions. */
export abstract class PyCallable {
  abstract readonly pyName: string;
  abstract call(r: RenderState, args: unknown[], kw: KwMap): unknown;
  typeRepr(): string {
    return 'builtin_function_or_method';
  }
}

/** A callable defined in TS (globals, loop.cycle, ...). */
export class NativeFunction extends PyCallable {
  constructor(
    readonly pyName: string,
    readonly fn: (r: RenderState, args: unknown[], kw: KwMap) => unknown,
    readonly typeName = 'builtin_function_or_method',
  ) {
    super();
  }
  call(r: RenderState, args: unknown[], kw: KwMap): unknown {
    return this.fn(r, args, kw);
  }
  override typeRepr(): string {
    return this.typeName;
  }
}

/** `'abc'.upper` before it is called. */
export class BoundMethod extends PyCallable {
  constructor(
    readonly self: unknown,
    readonly pyName: string,
    readonly fn: (r: RenderState, self: any, args: unknown[], kw: KwMap) => unknown,
  ) {
    super();
  }
  call(r: RenderState, args: unknown[], kw: KwMap): unknown {
    return this.fn(r, this.self, args, kw);
  }
}

/** Engine objects exposed to templates (loop, namespace, cycler, joiner, macros). Host objects never get this treatment. */
export abstract class PyObject {
  abstract readonly pyTypeName: string;
  /** Module-qualified name used in undefined messages, e.g. 'jinja2.utils.Namespace'. */
  readonly pyQualName: string | null = null;
  /** Attribute lookup; MISSING when absent. */
  pyGetAttr(_name: string): unknown {
    return MISSING;
  }
  pyIter(): unknown[] | null {
    return null;
  }
  pyLen(): number | null {
    return null;
  }
  pyRepr(): string {
    return `<${this.pyQualName ?? this.pyTypeName} object>`;
  }
}

/** dict.keys()/values()/items() views. */
export class DictView {
  constructor(
    readonly kind: 'keys' | 'values' | 'items',
    readonly dict: Dict,
  ) {}
  toArray(): unknown[] {
    if (this.kind === 'keys') return dictKeys(this.dict);
    if (this.kind === 'values') return dictKeys(this.dict).map((k) => dictGet(this.dict, k));
    return dictKeys(this.dict).map((k) => markTuple([k, dictGet(this.dict, k)]));
  }
}

export type Dict = Map<unknown, unknown> | Record<string, unknown>;

// ---- type predicates ----

// The object that last passed isPlainObject: templates read several attributes of the same
// object in a row (`item.a`, `item.b`), and only host code could change its prototype meanwhile.
// Cleared after every render so no host object is retained.
let lastPlain: object | null = null;

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === lastPlain) return v !== null;
  if (v === null || typeof v !== 'object') return false;
  const p = Object.getPrototypeOf(v);
  if (p === Object.prototype || p === null) {
    lastPlain = v;
    return true;
  }
  return false;
}

export function forgetPlainObject(): void {
  lastPlain = null;
}
export function isDict(v: unknown): v is Dict {
  return v instanceof Map || isPlainObject(v);
}
export function isInt(v: unknown): v is number | bigint {
  return (typeof v === 'number' && Number.isInteger(v)) || typeof v === 'bigint';
}
export function isFloat(v: unknown): boolean {
  return v instanceof PyFloat || (typeof v === 'number' && !Number.isInteger(v));
}
/** int, float or bool (bool is an int subclass in Python). */
export function isNumeric(v: unknown): boolean {
  return typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' || v instanceof PyFloat;
}
export function isString(v: unknown): v is string | Markup {
  return typeof v === 'string' || v instanceof Markup;
}
export function isNone(v: unknown): boolean {
  return v === null || v === undefined;
}
export function isCallable(v: unknown): boolean {
  return typeof v === 'function' || v instanceof PyCallable;
}

/** Python's type(x).__name__. */
export function typeName(v: unknown): string {
  if (v === null || v === undefined) return 'NoneType';
  switch (typeof v) {
    case 'string':
      return 'str';
    case 'boolean':
      return 'bool';
    case 'bigint':
      return 'int';
    case 'number':
      return Number.isInteger(v) ? 'int' : 'float';
    case 'function':
      return 'function';
  }
  if (v instanceof PyFloat) return 'float';
  if (Array.isArray(v)) return isTuple(v) ? 'tuple' : 'list';
  if (isDict(v)) return 'dict';
  if (v instanceof Markup) return 'Markup';
  if (v instanceof Undefined) return 'Undefined';
  if (v instanceof DictView) return `dict_${v.kind}`;
  if (v instanceof PyIterator) return v.typeName;
  if (v instanceof PyCallable) return v.typeRepr();
  if (v instanceof PyObject) return v.pyTypeName;
  return 'object';
}

/** jinja2.utils.object_type_repr, used in undefined messages. */
export function objectTypeRepr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (v instanceof PyObject && v.pyQualName) return `${v.pyQualName} object`;
  if (v instanceof Markup) return 'markupsafe.Markup object';
  return `${typeName(v)} object`;
}

export function truthy(v: unknown): boolean {
  switch (typeof v) {
    case 'boolean':
      return v;
    case 'string':
      return v.length > 0;
    case 'number':
      return v !== 0; // NaN is truthy in Python as well
    case 'bigint':
      return v !== 0n;
    case 'undefined':
      return false;
  }
  if (v === null) return false;
  if (v instanceof Undefined) return false;
  if (Array.isArray(v)) return v.length > 0;
  if (v instanceof PyFloat) return v.v !== 0;
  if (v instanceof Markup) return v.s.length > 0;
  if (v instanceof Map) return v.size > 0;
  if (isPlainObject(v)) return dictSize(v) > 0;
  if (v instanceof DictView) return dictSize(v.dict) > 0;
  // Python's bool() of an object with __len__ (range(0), a host's empty query set) is its length.
  if (v instanceof PyObject) {
    const n = v.pyLen();
    if (n !== null) return n > 0;
  }
  return true;
}

// ---- dicts: Map or plain object ----

/** Insertion order of a parsed JSON object whose keys JS would otherwise reorder (integer-like keys). */
export const KEY_ORDER = Symbol('keyOrder');

export function newDict(): Map<unknown, unknown> {
  return new Map();
}

/** Map keys: PyFloat and bool keys hash like the equal int in Python. */
export function hashKey(k: unknown): unknown {
  if (k instanceof PyFloat) return k.v;
  if (typeof k === 'boolean') return k ? 1 : 0;
  if (typeof k === 'bigint' && k >= BigInt(Number.MIN_SAFE_INTEGER) && k <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(k);
  if (k instanceof Markup) return k.s;
  if (k === undefined) return null;
  if (Array.isArray(k)) {
    if (!isTuple(k)) throw pyError('TypeError', "unhashable type: 'list'");
    return 'tuple:' + k.map((x) => String(typeName(x)) + ':' + String(hashKey(x))).join('\u0000');
  }
  if (isDict(k)) throw pyError('TypeError', "unhashable type: 'dict'");
  return k;
}

/**
 * Map dicts store values under hashKey(key) so that 1, 1.0 and True collide like in Python;
 * the key object first inserted is remembered here when it differs from its hash form.
 */
const ORIGINAL_KEYS = new WeakMap<Map<unknown, unknown>, Map<unknown, unknown>>();

export function dictKeys(d: Dict): unknown[] {
  if (d instanceof Map) {
    const orig = ORIGINAL_KEYS.get(d);
    if (!orig) return Array.from(d.keys());
    return Array.from(d.keys(), (k) => (orig.has(k) ? orig.get(k) : k));
  }
  const order = (d as Record<symbol, unknown>)[KEY_ORDER] as string[] | undefined;
  const keys = Object.keys(d);
  if (!order) return keys;
  const seen = new Set(order);
  const out = order.filter((k) => Object.hasOwn(d, k));
  for (const k of keys) if (!seen.has(k)) out.push(k);
  return out;
}
export function dictSize(d: Dict): number {
  return d instanceof Map ? d.size : Object.keys(d).length;
}
export function dictHas(d: Dict, k: unknown): boolean {
  if (d instanceof Map) return d.has(typeof k === 'string' ? k : hashKey(k));
  if (typeof k === 'string') return Object.hasOwn(d, k);
  if (k instanceof Markup) return Object.hasOwn(d, k.s);
  return false;
}
/** Returns MISSING when the key is absent. */
export function dictGet(d: Dict, k: unknown): unknown {
  if (d instanceof Map) {
    const hk = typeof k === 'string' ? k : hashKey(k);
    const v = d.get(hk);
    if (v === undefined && !d.has(hk)) return MISSING;
    return v === undefined ? null : v;
  }
  const key = typeof k === 'string' ? k : k instanceof Markup ? k.s : null;
  if (key === null || !Object.hasOwn(d, key)) {
    hashKey(k); // raises for unhashable keys like Python
    return MISSING;
  }
  const v = d[key];
  return v === undefined ? null : v;
}
export function dictSet(d: Dict, k: unknown, v: unknown): void {
  if (d instanceof Map) {
    const hk = typeof k === 'string' ? k : hashKey(k);
    if (!d.has(hk) && hk !== k) {
      let orig = ORIGINAL_KEYS.get(d);
      if (!orig) ORIGINAL_KEYS.set(d, (orig = new Map()));
      orig.set(hk, k);
    }
    d.set(hk, v);
    return;
  }
  const key = typeof k === 'string' ? k : k instanceof Markup ? k.s : null;
  if (key === null) throw pyError('TypeError', 'this dict only accepts string keys');
  Object.defineProperty(d, key, { value: v, writable: true, enumerable: true, configurable: true });
}
export function dictDelete(d: Dict, k: unknown): boolean {
  if (d instanceof Map) {
    const hk = typeof k === 'string' ? k : hashKey(k);
    ORIGINAL_KEYS.get(d)?.delete(hk);
    return d.delete(hk);
  }
  if (typeof k === 'string' && Object.hasOwn(d, k)) return delete d[k];
  return false;
}

// ---- iteration ----

/** Python iter() materialised; strings iterate by code point. */
export function toList(v: unknown): unknown[] {
  if (Array.isArray(v)) return v;
  if (typeof v === 'string') return Array.from(v);
  if (v instanceof Markup) return Array.from(v.s);
  if (v instanceof Undefined) return [];
  if (v instanceof Map) return Array.from(v.keys());
  if (isPlainObject(v)) return dictKeys(v);
  if (v instanceof DictView) return v.toArray();
  if (v instanceof PyIterator) return v.take();
  if (v instanceof PyObject) {
    const items = v.pyIter();
    if (items) return items;
  }
  throw pyError('TypeError', `'${typeName(v)}' object is not iterable`);
}

export function isIterable(v: unknown): boolean {
  if (v instanceof Undefined) return true;
  if (Array.isArray(v) || typeof v === 'string' || v instanceof Markup || isDict(v) || v instanceof DictView || v instanceof PyIterator) return true;
  return v instanceof PyObject && v.pyIter() !== null;
}

/** Numeric value of int/float/bool for float arithmetic. */
export function num(v: unknown): number {
  if (typeof v === 'number') return v;
  if (v instanceof PyFloat) return v.v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'bigint') return Number(v);
  throw pyError('TypeError', `must be real number, not ${typeName(v)}`);
}

/** Python len(). */
export function pyLen(v: unknown): number {
  if (typeof v === 'string') return strLen(v);
  if (Array.isArray(v)) return v.length;
  if (v instanceof Markup) return strLen(v.s);
  if (v instanceof Map) return v.size;
  if (isPlainObject(v)) return dictSize(v);
  if (v instanceof DictView) return dictSize(v.dict);
  if (v instanceof Undefined) return 0;
  if (v instanceof PyObject) {
    const n = v.pyLen();
    if (n !== null) return n;
  }
  throw pyError('TypeError', `object of type '${typeName(v)}' has no len()`);
}

const SURROGATE = /[\uD800-\uDFFF]/;
/** Length in code points, as Python counts. */
export function strLen(s: string): number {
  if (!SURROGATE.test(s)) return s.length;
  let n = 0;
  for (const _ of s) n++;
  return n;
}
export function hasSurrogates(s: string): boolean {
  return SURROGATE.test(s);
}
