// Numeric filters: abs, int, float, round, filesizeformat.

import { LimitExceededError, pyError } from '../errors.js';
import { bindArgs, dflt } from '../runtime/args.js';
import { MAX_INT_BITS, intOf, normBig } from '../runtime/ops.js';
import { MAX_STR_DIGITS } from '../runtime/bigint.js';
import { Markup, PyFloat, Undefined, isFloat, mkFloat, num, typeName } from '../runtime/values.js';
import type { FilterFn } from './fn.js';
import { fixed } from '../runtime/numfmt.js';

/**
 * Python int(str, base) — returns null when Python raises ValueError (also for more than
 * 4,300 digits in a base that is not a power of two, as Python 3.11+). Linear time: V8 parses
 * decimal and power-of-two bases; other bases take at most 4,300 digits.
 */
export function parseIntPy(s: string, base: number): number | bigint | null {
  let t = s.trim().replace(/^([+-]?)/, '');
  const sign = /^\s*-/.test(s) ? -1n : 1n;
  if (base === 0 || base === 16 || base === 8 || base === 2) {
    const pm = /^0([xob])/i.exec(t);
    if (pm) {
      const b = { x: 16, o: 8, b: 2 }[pm[1].toLowerCase() as 'x' | 'o' | 'b'];
      if (base !== 0 && base !== b) return null;
      base = b;
      t = t.slice(2).replace(/^_/, '');
    } else if (base === 0) {
      if (/^0+$/.test(t.replace(/_/g, ''))) return 0;
      base = 10;
      if (/^0/.test(t)) return null;
    }
  }
  if (!/^[0-9a-zA-Z]+(_[0-9a-zA-Z]+)*$/.test(t)) return null;
  t = t.replace(/_/g, '').toLowerCase();
  const pow2 = (base & (base - 1)) === 0;
  if (!pow2 && t.length > MAX_STR_DIGITS) return null;
  for (let i = 0; i < t.length; i++) {
    const d = DIGIT[t.charCodeAt(i)] ?? 99;
    if (d >= base) return null;
  }
  if (pow2) {
    const bits = t.length * Math.log2(base);
    if (bits > MAX_INT_BITS + 64) throw new LimitExceededError('size', `integer result too large (about ${Math.round(bits)} bits)`);
  }
  let acc: bigint;
  if (base === 10) acc = BigInt(t);
  else if (base === 16 || base === 8 || base === 2) acc = BigInt((base === 16 ? '0x' : base === 8 ? '0o' : '0b') + t);
  else {
    acc = 0n;
    const B = BigInt(base);
    for (let i = 0; i < t.length; i++) acc = acc * B + BigInt(DIGIT[t.charCodeAt(i)]!);
  }
  return normBig(sign * acc);
}

const DIGIT: number[] = [];
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  if (/[0-9a-z]/.test(ch)) DIGIT[c] = parseInt(ch, 36);
}

/** Python float(str) — null when it raises ValueError. */
export function parseFloatPy(s: string): number | null {
  const t = s.trim().replace(/_/g, (m, i: number, str: string) => (/\d/.test(str[i - 1] ?? '') && /\d/.test(str[i + 1] ?? '') ? '' : '!'));
  if (/^[+-]?(inf|infinity)$/i.test(t)) return t.startsWith('-') ? -Infinity : Infinity;
  if (/^[+-]?nan$/i.test(t)) return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t)) return null;
  return Number(t);
}

function toFloat(v: unknown): number | null {
  if (typeof v === 'number') return v;
  if (v instanceof PyFloat) return v.v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string' || v instanceof Markup) return parseFloatPy(typeof v === 'string' ? v : v.s);
  return null;
}

function floatToInt(x: number): number | bigint {
  if (!Number.isFinite(x)) throw pyError('OverflowError', 'cannot convert float infinity to integer');
  const t = Math.trunc(x);
  return Number.isSafeInteger(t) ? (t === 0 ? 0 : t) : normBig(BigInt(t));
}

/** Python round(x, n) for floats: round-half-even on the exact binary value. */
export function roundHalfEven(x: number, n: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  if (n > 300) return x;
  if (n < 0) {
    const p = 10 ** -n;
    const q = x / p;
    const fl = Math.floor(q);
    const diff = q - fl;
    let res = diff > 0.5 ? fl + 1 : diff < 0.5 ? fl : fl % 2 === 0 ? fl : fl + 1;
    return res * p;
  }
  const digits = Math.min(100, n + 40);
  const full = Math.abs(x).toFixed(digits);
  const [ip, fp = ''] = full.split('.');
  const keep = fp.slice(0, n);
  const rest = fp.slice(n);
  let roundUp: boolean;
  if (/^50*$/.test(rest)) {
    const lastDigit = Number((n > 0 ? keep : ip).slice(-1));
    roundUp = lastDigit % 2 === 1;
  } else roundUp = rest[0] >= '5';
  let out = Number(`${ip}.${keep || '0'}`);
  if (roundUp) out = Number((out + 10 ** -n).toFixed(n));
  out = Number(out.toFixed(n));
  return x < 0 ? -out : out;
}

export const numberFilters: Record<string, FilterFn> = {
  abs: (r, v) => {
    if (typeof v === 'number') return Math.abs(v);
    if (v instanceof PyFloat) return new PyFloat(Math.abs(v.v));
    if (typeof v === 'boolean') return v ? 1 : 0;
    if (typeof v === 'bigint') return v < 0n ? -v : v;
    throw pyError('TypeError', `bad operand type for abs(): '${typeName(v)}'`);
  },
  int: (r, v, a, kw) => {
    const [d, baseA] = bindArgs('int', a, kw, ['default', 'base']);
    const def = dflt(d, 0);
    if (v instanceof Undefined) v.fail();
    const base = Number(intOf(dflt(baseA, 10)) ?? 10);
    if (typeof v === 'string' || v instanceof Markup) {
      const s = typeof v === 'string' ? v : v.s;
      const i = parseIntPy(s, base);
      if (i !== null) return i;
      const f = parseFloatPy(s);
      // Jinja2's fallback int(float(value)) returns the default on ValueError and OverflowError ('9'*400 → inf)
      if (f === null || !Number.isFinite(f)) return def;
      return floatToInt(f);
    }
    const i = intOf(v);
    if (i !== null) return i;
    if (v instanceof PyFloat || typeof v === 'number') return floatToInt(num(v));
    return def;
  },
  float: (r, v, a, kw) => {
    const [d] = bindArgs('float', a, kw, ['default']);
    if (v instanceof Undefined) v.fail();
    const f = toFloat(v);
    return f === null ? dflt(d, new PyFloat(0)) : mkFloat(f);
  },
  round: (r, v, a, kw) => {
    const [precA, methodA] = bindArgs('round', a, kw, ['precision', 'method']);
    const prec = Number(intOf(dflt(precA, 0)) ?? 0);
    const method = dflt(methodA, 'common');
    if (method !== 'common' && method !== 'ceil' && method !== 'floor') throw pyError('FilterArgumentError', 'method must be common, ceil or floor');
    if (v instanceof Undefined) v.fail();
    if (method === 'common') {
      const i = intOf(v);
      if (i !== null) {
        if (prec >= 0) return typeof v === 'boolean' ? i : v;
        const p = 10 ** -prec;
        const x = Number(i);
        return roundHalfEven(x, prec) === 0 ? 0 : Math.round(roundHalfEven(x / p, 0)) * p;
      }
      if (!isFloat(v)) throw pyError('TypeError', `type ${typeName(v)} doesn't define __round__ method`);
      return mkFloat(roundHalfEven(num(v), prec));
    }
    const p = 10 ** prec;
    const x = num(v) * p;
    return mkFloat((method === 'ceil' ? Math.ceil(x) : Math.floor(x)) / p);
  },
  filesizeformat: (r, v, a, kw) => {
    const [binary] = bindArgs('filesizeformat', a, kw, ['binary']);
    const bin = dflt(binary, false) ? true : false;
    if (v instanceof Undefined) v.fail();
    const f = toFloat(v);
    if (f === null) throw pyError('ValueError', `could not convert string to float: '${String(v)}'`);
    const base = bin ? 1024 : 1000;
    const prefixes = bin ? ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB', 'ZiB', 'YiB'] : ['kB', 'MB', 'GB', 'TB', 'PB', 'EB', 'ZB', 'YB'];
    if (f === 1) return '1 Byte';
    if (f < base) return `${Math.trunc(f)} Bytes`;
    let unit = 0;
    for (let i = 0; i < prefixes.length; i++) {
      unit = base ** (i + 2);
      if (f < unit) return `${fixed((base * f) / unit, 1)} ${prefixes[i]}`;
    }
    return `${fixed((base * f) / unit, 1)} ${prefixes[prefixes.length - 1]}`;
  },
};
