// tojson: Python json.dumps(sort_keys=True) followed by HTML-safe escaping of < > & '.

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
import type { FilterFn } from '../compiler.js';
import { cmp } from '../runtime/ops.js';

const ESCAPABLE = /[\\"\x00-\x1f\u007f-\uffff]/g;
const SHORT: Record<string, string> = { '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };

/** json.dumps string encoding with ensure_ascii=True. */
export function jsonString(s: string): string {
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
  if (typeof k === 'bigint') return k.toString();
  if (typeof k === 'number') return Number.isInteger(k) ? String(k) : floatJson(k);
  if (k instanceof PyFloat) return floatJson(k.v);
  throw pyError('TypeError', `keys must be str, int, float, bool or None, not ${typeName(k)}`);
}

export function dumps(r: RenderState, v: unknown, indent: string | null): string {
  const stack: unknown[] = [];
  const itemSep = indent === null ? ', ' : ',';
  const enc = (x: unknown, level: number): string => {
    switch (typeof x) {
      case 'string':
        return jsonString(x);
      case 'boolean':
        return x ? 'true' : 'false';
      case 'number':
        return Number.isInteger(x) ? (Number.isSafeInteger(x) ? String(x) : BigInt(x).toString()) : floatJson(x);
      case 'bigint':
        return x.toString();
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
      try {
        const nl = indent === null ? '' : '\n' + indent.repeat(level + 1);
        const close = indent === null ? '' : '\n' + indent.repeat(level);
        if (isArr) {
          const arr = x as unknown[];
          if (!arr.length) return '[]';
          return '[' + nl + arr.map((i) => enc(i, level + 1)).join(itemSep + nl) + close + ']';
        }
        const d = x as Parameters<typeof dictKeys>[0];
        const keys = dictKeys(d);
        if (!keys.length) return '{}';
        const sorted = keys.slice().sort((a, b) => cmp(a, b));
        return (
          '{' +
          nl +
          sorted.map((k) => jsonString(keyString(k)) + ': ' + enc(dictGet(d, k), level + 1)).join(itemSep + nl) +
          close +
          '}'
        );
      } finally {
        stack.pop();
      }
    }
    if (x instanceof DictView) return enc(x.toArray(), level);
    throw pyError('TypeError', `Object of type ${typeName(x)} is not JSON serializable`);
  };
  return enc(v, 0);
}

const HTML_UNSAFE = /[<>&']/g;
const HTML_MAP: Record<string, string> = { '<': '\\u003c', '>': '\\u003e', '&': '\\u0026', "'": '\\u0027' };

export const tojson: FilterFn = (r, v, a, kw) => {
  const [ind] = bindArgs('tojson', a, kw, ['indent']);
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
  const out = dumps(r, v, indent).replace(HTML_UNSAFE, (c) => HTML_MAP[c]);
  r.checkSize(out.length);
  return new Markup(out);
};
