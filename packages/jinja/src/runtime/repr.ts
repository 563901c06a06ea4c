// str() and repr() with CPython's output rules.

import { bigDecimal } from './bigint.js';
import {
  DictView,
  Markup,
  PyCallable,
  PyFloat,
  PyIterator,
  PyObject,
  Undefined,
  dictGet,
  dictKeys,
  isDict,
  isTuple,
} from './values.js';

/** repr(float): shortest round-trip digits, exponent form outside 1e-4 <= |x| < 1e16. */
export function floatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const ax = x < 0 ? -x : x;
  if (ax >= 1e-4 && ax < 1e16) {
    // JS and CPython both print the shortest round-trip digits; in this range JS uses positional notation too
    const s = String(x);
    return s.includes('.') ? s : s + '.0';
  }
  const e = x.toExponential(); // shortest digits, e.g. "-1.2345e-7"
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(e)!;
  const sign = m[1];
  const digits = m[2] + (m[3] ?? '');
  const exp = Number(m[4]);
  if (exp >= -5 && exp < 16) {
    // positional notation (Python switches at exponent < -4, i.e. 1e-05 is exponent form)
    if (exp < -4) return expForm(sign, digits, exp);
    if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
    if (digits.length <= exp + 1) return `${sign}${digits}${'0'.repeat(exp + 1 - digits.length)}.0`;
    return `${sign}${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  }
  return expForm(sign, digits, exp);
}

function expForm(sign: string, digits: string, exp: number): string {
  const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const ae = Math.abs(exp);
  return `${sign}${mant}e${exp < 0 ? '-' : '+'}${ae < 10 ? '0' + ae : ae}`;
}

export function intStr(v: number | bigint): string {
  if (typeof v === 'bigint') return bigDecimal(v);
  return Number.isSafeInteger(v) ? String(v) : BigInt(v).toString();
}

/** str(x) */
export function pyStr(v: unknown): string {
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
      return Number.isInteger(v) ? intStr(v) : floatRepr(v);
    case 'boolean':
      return v ? 'True' : 'False';
    case 'bigint':
      return bigDecimal(v);
    case 'undefined':
      return 'None';
  }
  if (v === null) return 'None';
  if (v instanceof Undefined) return '';
  if (v instanceof Markup) return v.s;
  if (v instanceof PyFloat) return floatRepr(v.v);
  return pyRepr(v);
}

// Python's str.isprintable(): categories Cc Cf Cs Co Cn Zl Zp Zs (except the space) are escaped.
const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;
const NEEDS_ESCAPE = /[\\\x00-\x1f\x7f-\xa0\xad\u0600-\u0605\u061c\u06dd\u070f\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2066-\u206f\u3000\ud800-\udfff\ufeff\ufff9-\ufffb\ue000-\uf8ff]|\p{Cn}/u;

export function strRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  if (!NEEDS_ESCAPE.test(s) && !s.includes(quote)) return quote + s + quote;
  let out = quote;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === quote || ch === '\\') out += '\\' + ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || c === 0x7f) out += '\\x' + c.toString(16).padStart(2, '0');
    else if (c > 0x7f && ch !== ' ' && NON_PRINTABLE.test(ch)) {
      if (c <= 0xff) out += '\\x' + c.toString(16).padStart(2, '0');
      else if (c <= 0xffff) out += '\\u' + c.toString(16).padStart(4, '0');
      else out += '\\U' + c.toString(16).padStart(8, '0');
    } else out += ch;
  }
  return out + quote;
}

/** repr(x) */
export function pyRepr(v: unknown): string {
  switch (typeof v) {
    case 'string':
      return strRepr(v);
    case 'function':
      return `<function ${v.name || '<lambda>'}>`;
    case 'number':
    case 'boolean':
    case 'bigint':
    case 'undefined':
      return pyStr(v);
  }
  if (v === null) return 'None';
  if (v instanceof PyFloat) return floatRepr(v.v);
  if (Array.isArray(v) || isDict(v)) {
    // self-containing containers print as [...] / {...} like CPython
    if (inProgress.includes(v)) return Array.isArray(v) ? (isTuple(v) ? '(...)' : '[...]') : '{...}';
    inProgress.push(v);
    try {
      return containerRepr(v);
    } finally {
      inProgress.pop();
    }
  }
  return otherRepr(v);
}

const inProgress: unknown[] = [];

function containerRepr(v: unknown): string {
  if (Array.isArray(v)) {
    const parts = v.map(pyRepr);
    if (isTuple(v)) return parts.length === 1 ? `(${parts[0]},)` : `(${parts.join(', ')})`;
    return `[${parts.join(', ')}]`;
  }
  if (isDict(v)) {
    const keys = dictKeys(v);
    return `{${keys.map((k) => `${pyRepr(k)}: ${pyRepr(dictGet(v, k))}`).join(', ')}}`;
  }
  return '';
}

function otherRepr(v: unknown): string {
  if (v instanceof Undefined) return 'Undefined';
  if (v instanceof Markup) return `Markup(${strRepr(v.s)})`;
  if (v instanceof DictView) return `dict_${v.kind}(${pyRepr(v.toArray())})`;
  if (v instanceof PyIterator) return `<${v.typeName} object>`;
  if (v instanceof PyCallable) return `<built-in function ${v.pyName}>`;
  if (v instanceof PyObject) return v.pyRepr();
  return '<object>';
}
