// Python operator semantics: arithmetic, comparison, membership, slicing.

import { LimitExceededError, pyError } from '../errors.js';
import { escapeHtml } from './escape.js';
import { printfFormat } from './printf.js';
import type { RenderState } from './state.js';
import {
  DictView,
  Markup,
  PyFloat,
  PyIterator,
  PyObject,
  Undefined,
  dictGet,
  dictHas,
  dictKeys,
  dictSize,
  isDict,
  isFloat,
  isTuple,
  markTuple,
  MISSING,
  mkFloat,
  num,
  typeName,
  strLen,
  hasSurrogates,
} from './values.js';

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
import { MAX_INT_BITS } from './bigint.js';
export { MAX_INT_BITS };

export function normBig(b: bigint): number | bigint {
  return b <= MAX_SAFE && b >= MIN_SAFE ? Number(b) : b;
}

/** int value of int/bool, or null if not an int. */
export function intOf(v: unknown): number | bigint | null {
  if (typeof v === 'number') return Number.isInteger(v) ? v : null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'bigint') return v;
  return null;
}
function big(v: number | bigint): bigint {
  return typeof v === 'bigint' ? v : BigInt(v);
}
function checkBits(b: bigint): number | bigint {
  if (b > MAX_SAFE || b < MIN_SAFE) {
    const bits = (b < 0n ? -b : b).toString(16).length * 4;
    if (bits > MAX_INT_BITS) throw new LimitExceededError('size', `integer result too large (${bits} bits)`);
    return b;
  }
  return Number(b);
}

function isNum(v: unknown): boolean {
  return typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' || v instanceof PyFloat;
}

export function sval(v: unknown): string {
  return typeof v === 'string' ? v : (v as Markup).s;
}

function unsupported(op: string, a: unknown, b: unknown): never {
  if (a instanceof Undefined) a.fail();
  if (b instanceof Undefined) b.fail();
  throw pyError('TypeError', `unsupported operand type(s) for ${op}: '${typeName(a)}' and '${typeName(b)}'`);
}

export function add(r: RenderState, a: unknown, b: unknown): unknown {
  if (typeof a === 'number' && typeof b === 'number') {
    const s = a + b;
    if (Number.isInteger(a) && Number.isInteger(b)) return Number.isSafeInteger(s) ? s : checkBits(BigInt(a) + BigInt(b));
    return mkFloat(s);
  }
  if (typeof a === 'string' && typeof b === 'string') {
    r.checkSize(a.length + b.length);
    // a rope: the new memory is the shorter side
    r.grow(a.length < b.length ? a.length : b.length);
    return a + b;
  }
  if (isNum(a) && isNum(b)) {
    if (isFloat(a) || isFloat(b)) return mkFloat(num(a) + num(b));
    return checkBits(big(intOf(a)!) + big(intOf(b)!));
  }
  if ((typeof a === 'string' || a instanceof Markup) && (typeof b === 'string' || b instanceof Markup)) {
    r.checkSize(sval(a).length + sval(b).length);
    r.grow(Math.min(sval(a).length, sval(b).length));
    if (a instanceof Markup) return new Markup(a.s + (b instanceof Markup ? b.s : escapeHtml(b as string)));
    return new Markup(escapeHtml(a as string) + (b as Markup).s);
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (isTuple(a) !== isTuple(b)) throw pyError('TypeError', `can only concatenate ${typeName(a)} (not "${typeName(b)}") to ${typeName(a)}`);
    r.checkSize(a.length + b.length);
    r.grow((a.length + b.length) * 8);
    const out = a.concat(b);
    return isTuple(a) ? markTuple(out) : out;
  }
  if (typeof a === 'string' && !(b instanceof Undefined))
    throw pyError('TypeError', `can only concatenate str (not "${typeName(b)}") to str`);
  unsupported('+', a, b);
}

export function sub(a: unknown, b: unknown): unknown {
  if (typeof a === 'number' && typeof b === 'number') {
    const s = a - b;
    if (Number.isInteger(a) && Number.isInteger(b)) return Number.isSafeInteger(s) ? s : checkBits(BigInt(a) - BigInt(b));
    return mkFloat(s);
  }
  if (isNum(a) && isNum(b)) {
    if (isFloat(a) || isFloat(b)) return mkFloat(num(a) - num(b));
    return checkBits(big(intOf(a)!) - big(intOf(b)!));
  }
  unsupported('-', a, b);
}

function repeat(r: RenderState, seq: unknown, n: number | bigint): unknown {
  const count = typeof n === 'bigint' ? (n > 0n ? Infinity : 0) : Math.max(0, n);
  if (typeof seq === 'string' || seq instanceof Markup) {
    const s = sval(seq);
    if (s.length === 0 || count === 0) return seq instanceof Markup ? new Markup('') : '';
    r.checkSize(s.length * count);
    r.grow(s.length * count);
    return seq instanceof Markup ? new Markup(s.repeat(count)) : s.repeat(count);
  }
  const arr = seq as unknown[];
  if (arr.length === 0 || count === 0) return isTuple(arr) ? markTuple([]) : [];
  r.checkSize(arr.length * count);
  r.grow(arr.length * count * 8);
  const out: unknown[] = [];
  for (let i = 0; i < count; i++) for (const x of arr) out.push(x);
  return isTuple(arr) ? markTuple(out) : out;
}

export function mul(r: RenderState, a: unknown, b: unknown): unknown {
  if (typeof a === 'number' && typeof b === 'number') {
    const s = a * b;
    if (Number.isInteger(a) && Number.isInteger(b)) return Number.isSafeInteger(s) ? s : checkBits(BigInt(a) * BigInt(b));
    return mkFloat(s);
  }
  if (isNum(a) && isNum(b)) {
    if (isFloat(a) || isFloat(b)) return mkFloat(num(a) * num(b));
    return checkBits(big(intOf(a)!) * big(intOf(b)!));
  }
  const ia = intOf(a);
  const ib = intOf(b);
  if (ib !== null && (typeof a === 'string' || a instanceof Markup || Array.isArray(a))) return repeat(r, a, ib);
  if (ia !== null && (typeof b === 'string' || b instanceof Markup || Array.isArray(b))) return repeat(r, b, ia);
  if ((typeof a === 'string' || Array.isArray(a)) && !(b instanceof Undefined) && isNum(b))
    throw pyError('TypeError', `can't multiply sequence by non-int of type '${typeName(b)}'`);
  unsupported('*', a, b);
}

function zeroDiv(msg = 'division by zero'): never {
  throw pyError('ZeroDivisionError', msg);
}

export function truediv(a: unknown, b: unknown): unknown {
  // int/float operands held as JS numbers: IEEE division is Python's correctly rounded result
  if (typeof a === 'number' && typeof b === 'number' && b !== 0) return mkFloat(a / b);
  if (isNum(a) && isNum(b)) {
    const y = num(b);
    if (y === 0) zeroDiv();
    if (typeof a === 'bigint' || typeof b === 'bigint') {
      const ia = intOf(a);
      const ib = intOf(b);
      if (ia !== null && ib !== null) {
        // exact-ish: divide big integers before converting to float
        const A = big(ia);
        const B = big(ib);
        const q = A / B;
        const rem = A - q * B;
        return mkFloat(Number(q) + Number(rem) / Number(B));
      }
    }
    return mkFloat(num(a) / y);
  }
  unsupported('/', a, b);
}

export function floordiv(a: unknown, b: unknown): unknown {
  if (isNum(a) && isNum(b)) {
    if (isFloat(a) || isFloat(b)) {
      const x = num(a);
      const y = num(b);
      if (y === 0) zeroDiv('float floor division by zero');
      return mkFloat(pyFloatFloorDiv(x, y));
    }
    const ia = intOf(a)!;
    const ib = intOf(b)!;
    if (typeof ia === 'number' && typeof ib === 'number' && Math.abs(ia) < 2 ** 52) {
      if (ib === 0) zeroDiv('integer division or modulo by zero');
      return Math.floor(ia / ib);
    }
    const A = big(ia);
    const B = big(ib);
    if (B === 0n) zeroDiv('integer division or modulo by zero');
    let q = A / B;
    if ((A % B !== 0n) && ((A < 0n) !== (B < 0n))) q -= 1n;
    return normBig(q);
  }
  unsupported('//', a, b);
}

function pyFloatMod(x: number, y: number): number {
  let m = x % y;
  if (m !== 0) {
    if (y < 0 !== m < 0) m += y;
  } else m = y < 0 ? -0 : 0;
  return m;
}
function pyFloatFloorDiv(x: number, y: number): number {
  const m = x % y;
  let div = (x - m) / y;
  if (m !== 0 && y < 0 !== m < 0) div -= 1;
  if (div !== 0) {
    let fl = Math.floor(div);
    if (div - fl > 0.5) fl += 1;
    return fl;
  }
  return 0 * (x / y);
}

export function mod(r: RenderState, a: unknown, b: unknown): unknown {
  if (typeof a === 'string' || a instanceof Markup) return printfFormat(r, a, b);
  if (isNum(a) && isNum(b)) {
    if (isFloat(a) || isFloat(b)) {
      const y = num(b);
      if (y === 0) zeroDiv('float modulo');
      return mkFloat(pyFloatMod(num(a), y));
    }
    const ia = intOf(a)!;
    const ib = intOf(b)!;
    if (typeof ia === 'number' && typeof ib === 'number') {
      if (ib === 0) zeroDiv('integer division or modulo by zero');
      let m = ia % ib;
      if (m !== 0 && m < 0 !== ib < 0) m += ib;
      return m === 0 ? 0 : m;
    }
    const A = big(ia);
    const B = big(ib);
    if (B === 0n) zeroDiv('integer division or modulo by zero');
    let m = A % B;
    if (m !== 0n && m < 0n !== B < 0n) m += B;
    return normBig(m);
  }
  unsupported('%', a, b);
}

export function pow(a: unknown, b: unknown): unknown {
  if (isNum(a) && isNum(b)) {
    if (isFloat(a) || isFloat(b)) {
      const x = num(a);
      const y = num(b);
      if (x === 0 && y < 0) zeroDiv('0.0 cannot be raised to a negative power');
      if (x < 0 && !Number.isInteger(y)) throw pyError('TypeError', 'complex results are not supported');
      const res = Math.pow(x, y);
      if (!Number.isFinite(res) && Number.isFinite(x) && Number.isFinite(y))
        throw new LimitExceededError('size', "(34, 'Numerical result out of range')");
      return mkFloat(res);
    }
    const ia = intOf(a)!;
    const ib = intOf(b)!;
    if (ib < 0) {
      if (Number(ia) === 0) zeroDiv('0.0 cannot be raised to a negative power');
      return mkFloat(Math.pow(Number(ia), Number(ib)));
    }
    const base = Math.abs(Number(ia));
    if (base > 1 && Number(ib) * Math.log2(base) > MAX_INT_BITS)
      throw new LimitExceededError('size', `integer result too large (about ${Math.round(Number(ib) * Math.log2(base))} bits)`);
    if (typeof ia === 'number' && typeof ib === 'number') {
      const res = Math.pow(ia, ib);
      if (Number.isSafeInteger(res)) return res;
    }
    return checkBits(big(ia) ** big(ib));
  }
  unsupported('** or pow()', a, b);
}

export function neg(a: unknown): unknown {
  if (typeof a === 'number') return Number.isInteger(a) ? (a === 0 ? 0 : -a) : -a;
  if (a instanceof PyFloat) return new PyFloat(-a.v);
  if (typeof a === 'boolean') return a ? -1 : 0;
  if (typeof a === 'bigint') return normBig(-a);
  if (a instanceof Undefined) a.fail();
  throw pyError('TypeError', `bad operand type for unary -: '${typeName(a)}'`);
}
export function pos(a: unknown): unknown {
  if (typeof a === 'boolean') return a ? 1 : 0;
  if (isNum(a)) return a;
  if (a instanceof Undefined) a.fail();
  throw pyError('TypeError', `bad operand type for unary +: '${typeName(a)}'`);
}

// ---- comparison ----

export function eq(a: unknown, b: unknown): boolean {
  if (a === b) return a === a || typeof a !== 'number'; // NaN != NaN
  const ta = typeof a;
  if (ta === 'string' || a instanceof Markup) return (typeof b === 'string' || b instanceof Markup) && sval(a) === sval(b);
  if (isNum(a)) {
    if (!isNum(b)) return false;
    if (typeof a === 'bigint' || typeof b === 'bigint') {
      const ia = intOf(a);
      const ib = intOf(b);
      if (ia !== null && ib !== null) return big(ia) === big(ib);
    }
    return num(a) === num(b);
  }
  if ((a === null || a === undefined) && (b === null || b === undefined)) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || isTuple(a) !== isTuple(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!eq(a[i], b[i])) return false;
    return true;
  }
  if (isDict(a)) {
    if (!isDict(b) || dictSize(a) !== dictSize(b)) return false;
    for (const k of dictKeys(a)) {
      const v = dictGet(b, k);
      if (v === MISSING || !eq(dictGet(a, k), v)) return false;
    }
    return true;
  }
  if (a instanceof Undefined) return b instanceof Undefined;
  if (a instanceof DictView && b instanceof DictView && a.kind === b.kind && a.kind !== 'values') return eq(a.toArray().sort(), b.toArray().sort());
  return false;
}

const OPNAMES: Record<string, string> = { '<': '<', '<=': '<=', '>': '>', '>=': '>=' };

/** Three-way compare for ordering; throws TypeError like Python for unorderable types. */
export function cmp(a: unknown, b: unknown, op = '<'): number {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : a === b ? 0 : NaN;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (isNum(a) && isNum(b)) {
    if (typeof a === 'bigint' || typeof b === 'bigint') {
      const ia = intOf(a);
      const ib = intOf(b);
      if (ia !== null && ib !== null) {
        const A = big(ia);
        const B = big(ib);
        return A < B ? -1 : A > B ? 1 : 0;
      }
    }
    const x = num(a);
    const y = num(b);
    return x < y ? -1 : x > y ? 1 : x === y ? 0 : NaN;
  }
  if ((typeof a === 'string' || a instanceof Markup) && (typeof b === 'string' || b instanceof Markup)) {
    const x = sval(a);
    const y = sval(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (Array.isArray(a) && Array.isArray(b) && isTuple(a) === isTuple(b)) {
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) {
      if (!eq(a[i], b[i])) return cmp(a[i], b[i], op);
    }
    return a.length - b.length;
  }
  if (a instanceof Undefined) a.fail();
  if (b instanceof Undefined) b.fail();
  throw pyError('TypeError', `'${OPNAMES[op] ?? op}' not supported between instances of '${typeName(a)}' and '${typeName(b)}'`);
}

export function compare(op: string, a: unknown, b: unknown): boolean {
  switch (op) {
    case '==':
      return eq(a, b);
    case '!=':
      return !eq(a, b);
    case '<':
      return cmp(a, b, op) < 0;
    case '<=':
      return cmp(a, b, op) <= 0;
    case '>':
      return cmp(a, b, op) > 0;
    case '>=':
      return cmp(a, b, op) >= 0;
    case 'in':
      return contains(b, a);
    case 'notin':
      return !contains(b, a);
  }
  throw new Error(`unknown operator ${op}`);
}

export function contains(container: unknown, item: unknown): boolean {
  if (typeof container === 'string' || container instanceof Markup) {
    if (typeof item !== 'string' && !(item instanceof Markup)) {
      if (item instanceof Undefined) item.fail();
      throw pyError('TypeError', `'in <string>' requires string as left operand, not ${typeName(item)}`);
    }
    return sval(container).includes(sval(item));
  }
  if (Array.isArray(container)) {
    for (const x of container) if (eq(x, item)) return true;
    return false;
  }
  if (isDict(container)) return dictHas(container, item);
  if (container instanceof DictView) {
    if (container.kind === 'keys') return dictHas(container.dict, item);
    return container.toArray().some((x) => eq(x, item));
  }
  if (container instanceof Undefined) return false;
  if (container instanceof PyIterator) return container.take().some((x) => eq(x, item));
  if (container instanceof PyObject) {
    const items = container.pyIter();
    if (items) return items.some((x) => eq(x, item));
  }
  throw pyError('TypeError', `argument of type '${typeName(container)}' is not iterable`);
}

// ---- indexing and slicing ----

export function sliceIndices(len: number, start: unknown, stop: unknown, step: unknown): [number, number, number] {
  const st = step === null || step === undefined ? 1 : toIndex(step);
  if (st === 0) throw pyError('ValueError', 'slice step cannot be zero');
  let s: number;
  let e: number;
  if (st > 0) {
    s = start === null || start === undefined ? 0 : clampIdx(toIndex(start), len, 0, len);
    e = stop === null || stop === undefined ? len : clampIdx(toIndex(stop), len, 0, len);
  } else {
    s = start === null || start === undefined ? len - 1 : clampIdx(toIndex(start), len, -1, len - 1);
    e = stop === null || stop === undefined ? -1 : clampIdx(toIndex(stop), len, -1, len - 1);
  }
  return [s, e, st];
}
function clampIdx(i: number, len: number, lo: number, hi: number): number {
  if (i < 0) i += len;
  return i < lo ? lo : i > hi ? hi : i;
}
export function toIndex(v: unknown): number {
  const i = intOf(v);
  if (i === null) {
    if (v instanceof Undefined) v.fail();
    throw pyError('TypeError', 'slice indices must be integers or None or have an __index__ method');
  }
  return Number(i);
}

export function sliceSeq(r: RenderState, seq: unknown, start: unknown, stop: unknown, step: unknown): unknown {
  if (typeof seq === 'string' || seq instanceof Markup) {
    const s = sval(seq);
    const chars = hasSurrogates(s) ? Array.from(s) : null;
    const len = chars ? chars.length : s.length;
    const [b, e, st] = sliceIndices(len, start, stop, step);
    let out: string;
    if (st === 1) out = chars ? chars.slice(b, Math.max(b, e)).join('') : s.slice(b, Math.max(b, e));
    else {
      const parts: string[] = [];
      if (st > 0) for (let i = b; i < e; i += st) parts.push(chars ? chars[i] : s[i]);
      else for (let i = b; i > e; i += st) parts.push(chars ? chars[i] : s[i]);
      out = parts.join('');
    }
    r.tick(out.length >>> 6);
    return seq instanceof Markup ? new Markup(out) : out;
  }
  if (Array.isArray(seq)) {
    const [b, e, st] = sliceIndices(seq.length, start, stop, step);
    let out: unknown[];
    if (st === 1) out = seq.slice(b, Math.max(b, e));
    else {
      out = [];
      if (st > 0) for (let i = b; i < e; i += st) out.push(seq[i]);
      else for (let i = b; i > e; i += st) out.push(seq[i]);
    }
    r.tick(out.length >>> 6);
    return isTuple(seq) ? markTuple(out) : out;
  }
  return MISSING;
}

/** Element of a str (by code point), or MISSING when out of range. */
export function strIndex(s: string, i: number): string | typeof MISSING {
  if (!hasSurrogates(s)) {
    if (i < 0) i += s.length;
    return i >= 0 && i < s.length ? s[i] : MISSING;
  }
  const chars = Array.from(s);
  if (i < 0) i += chars.length;
  return i >= 0 && i < chars.length ? chars[i] : MISSING;
}

export { strLen };
