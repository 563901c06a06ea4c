// tojson: Python json.dumps(sort_keys=True) followed by HTML-safe escaping of < > & '.

import { bigDecimal } from '../runtime/bigint.js';
import { pyError } from '../errors.js';
import { bindArgs, dflt } from '../runtime/args.js';
import { intOf } from '../runtime/ops.js';
import { floatRepr } from '../runtime/repr.js';
import type { RenderState } from '../runtime/state.js';
import {
  DictView,
  Markup,
  PyFloat,
  dictGet,
  dictKeys,
  isDict,
  typeName,
} from '../runtime/values.js';
import type { FilterFn } from './fn.js';
import { cmp } from '../runtime/ops.js';

const ESCAPABLE = /[\\"\x00-\x1f\u007f-\uffff]/g;
const NEEDS_JSON_ESCAPE = /[\\"\x00-\x1f\u007f-\uffff]/;
const SHORT: Record<string, string> = { '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };

/** json.dumps string encoding with ensure_ascii=True. */
export function jsonString(s: string): string {
  if (s.length <= 64) {
    // short strings (keys, names): a char scan is cheaper than entering the regexp engine
    let plain = true;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x7f) {
        plain = false;
        break;
      }
    }
    if (plain) return '"' + s + '"';
  } else if (!NEEDS_JSON_ESCAPE.test(s)) return '"' + s + '"';
  return '"' + s.replace(ESCAPABLE, (c) => SHORT[c] ?? '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')) + '"';
}

function floatJson(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  return floatRepr(x);
}

function keyString(k: unknown): string {
  if (typeof k === 'string') return k;
  if (k instanceof Markup) return k.s;
  if (typeof k === 'boolean') return k ? 'true' : 'false';
  if (k === null || k === undefined) return 'null';
  if (typeof k === 'bigint') return bigDecimal(k);
  if (typeof k === 'number') return Number.isInteger(k) ? String(k) : floatJson(k);
  if (k instanceof PyFloat) return floatJson(k.v);
  throw pyError('TypeError', `keys must be str, int, float, bool or None, not ${typeName(k)}`);
}

export function dumps(r: RenderState, v: unknown, indent: string | null): string {
  return encode(r, v, 0, indent, []);
}

// A module-level recursive function (no per-call closures: tsx wraps named closures in __name()).
function encode(r: RenderState, x: unknown, level: number, indent: string | null, stack: unknown[]): string {
  switch (typeof x) {
    case 'string':
      return jsonString(x);
    case 'boolean':
      return x ? 'true' : 'false';
    case 'number':
      return Number.isInteger(x) ? (Number.isSafeInteger(x) ? String(x) : BigInt(x).toString()) : floatJson(x);
    case 'bigint':
      return bigDecimal(x);
    case 'undefined':
      return 'null';
  }
  if (x === null) return 'null';
  if (x instanceof PyFloat) return floatJson(x.v);
  if (x instanceof Markup) return jsonString(x.s);
  const isArr = Array.isArray(x);
  if (isArr || isDict(x)) {
    if (stack.includes(x)) throw pyError('ValueError', 'Circular reference detected');
    stack.push(x);
    r.tick(1);
    const nl = indent === null ? '' : '\n' + indent.repeat(level + 1);
    const sep = indent === null ? ', ' : ',' + nl;
    let out: string;
    if (isArr) {
      const arr = x as unknown[];
      if (!arr.length) out = '[]';
      else {
        out = '[' + nl;
        for (let i = 0; i < arr.length; i++) out += (i ? sep : '') + encode(r, arr[i], level + 1, indent, stack);
        out += (indent === null ? '' : '\n' + indent.repeat(level)) + ']';
      }
    } else {
      const d = x as Parameters<typeof dictKeys>[0];
      const keys = dictKeys(d);
      if (!keys.length) out = '{}';
      else {
        if (keys.length > 1) keys.sort(cmp);
        out = '{' + nl;
        for (let i = 0; i < keys.length; i++)
          out += (i ? sep : '') + jsonString(keyString(keys[i])) + ': ' + encode(r, dictGet(d, keys[i]), level + 1, indent, stack);
        out += (indent === null ? '' : '\n' + indent.repeat(level)) + '}';
      }
    }
    stack.pop();
    return out;
  }
  if (x instanceof DictView) return encode(r, x.toArray(), level, indent, stack);
  throw pyError('TypeError', `Object of type ${typeName(x)} is not JSON serializable`);
}

const NO_INDENT: unknown[] = [null];
const HTML_UNSAFE = /[<>&']/g;
const HTML_UNSAFE_TEST = /[<>&']/;
const HTML_MAP: Record<string, string> = { '<': '\\u003c', '>': '\\u003e', '&': '\\u0026', "'": '\\u0027' };

export const tojson: FilterFn = (r, v, a, kw) => {
  const [ind] = a.length === 0 && kw === null ? NO_INDENT : bindArgs('tojson', a, kw, ['indent']);
  const indArg = dflt(ind, null);
  let indent: string | null = null;
  if (indArg !== null) {
    if (typeof indArg === 'string') indent = indArg;
    else {
      const n = intOf(indArg);
      if (n === null) throw pyError('TypeError', 'indent must be an int or str');
      indent = ' '.repeat(Math.max(0, Number(n)));
    }
  }
  let out = dumps(r, v, indent);
  if (HTML_UNSAFE_TEST.test(out)) out = out.replace(HTML_UNSAFE, (c) => HTML_MAP[c]);
  r.checkSize(out.length);
  return new Markup(out);
};
