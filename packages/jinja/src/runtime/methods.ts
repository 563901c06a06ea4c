// The methods of str/list/dict/int/float a sandboxed template may call.
// SandboxedEnvironment (not the Immutable one) allows mutating list/dict methods.

import { pyError } from '../errors.js';
import { strFormat, type FieldAccess } from './str-format.js';
import { bindArgs, dflt, noKw } from './args.js';
import { cmp, contains, eq, intOf, sval } from './ops.js';
import { floatRepr, pyStr } from './repr.js';
import type { RenderState } from './state.js';
import {
  DictView,
  Markup,
  MISSING,
  PyFloat,
  dictDelete,
  dictGet,
  dictKeys,
  dictSet,
  isDict,
  isTuple,
  markTuple,
  mkFloat,
  strLen,
  toList,
  typeName,
  type Dict,
  type KwMap,
} from './values.js';

export type Method = (r: RenderState, self: any, args: unknown[], kw: KwMap) => unknown;

export const PY_WS = ' \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000';
const WS_SET = new Set(PY_WS);
const LINE_BREAKS = /\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]/;

export function isPyWs(c: string): boolean {
  return WS_SET.has(c);
}

function strArg(v: unknown, fname: string): string {
  if (typeof v === 'string') return v;
  if (v instanceof Markup) return v.s;
  throw pyError('TypeError', `${fname}() argument must be str, not ${typeName(v)}`);
}

export function pyStrip(s: string, chars: unknown, left: boolean, right: boolean): string {
  const set = chars === null || chars === undefined || chars === MISSING ? WS_SET : new Set(strArg(chars, 'strip'));
  let a = 0;
  let b = s.length;
  if (left) while (a < b && set.has(s[a])) a++;
  if (right) while (b > a && set.has(s[b - 1])) b--;
  return s.slice(a, b);
}

export function pySplit(s: string, sep: unknown, maxsplit: number): string[] {
  if (sep === null || sep === undefined || sep === MISSING) {
    const out: string[] = [];
    let i = 0;
    const n = s.length;
    while (i < n) {
      while (i < n && WS_SET.has(s[i])) i++;
      if (i >= n) break;
      if (maxsplit >= 0 && out.length >= maxsplit) {
        let end = n;
        while (end > i && WS_SET.has(s[end - 1])) end--;
        out.push(s.slice(i, end));
        return out;
      }
      let j = i;
      while (j < n && !WS_SET.has(s[j])) j++;
      out.push(s.slice(i, j));
      i = j;
    }
    return out;
  }
  const sp = strArg(sep, 'split');
  if (sp === '') throw pyError('ValueError', 'empty separator');
  const parts = s.split(sp);
  if (maxsplit < 0 || parts.length - 1 <= maxsplit) return parts;
  return [...parts.slice(0, maxsplit), parts.slice(maxsplit).join(sp)];
}

function pyRsplit(s: string, sep: unknown, maxsplit: number): string[] {
  if (maxsplit < 0) return pySplit(s, sep, -1);
  if (sep === null || sep === undefined || sep === MISSING) {
    const out: string[] = [];
    let j = s.length;
    while (j > 0) {
      while (j > 0 && WS_SET.has(s[j - 1])) j--;
      if (j <= 0) break;
      if (out.length >= maxsplit) {
        let st = 0;
        while (st < j && WS_SET.has(s[st])) st++;
        out.unshift(s.slice(st, j));
        return out;
      }
      let i = j;
      while (i > 0 && !WS_SET.has(s[i - 1])) i--;
      out.unshift(s.slice(i, j));
      j = i;
    }
    return out;
  }
  const sp = strArg(sep, 'rsplit');
  if (sp === '') throw pyError('ValueError', 'empty separator');
  const parts = s.split(sp);
  if (parts.length - 1 <= maxsplit) return parts;
  const keep = parts.length - maxsplit;
  return [parts.slice(0, keep).join(sp), ...parts.slice(keep)];
}

export function splitlines(s: string, keepends: boolean): string[] {
  const out: string[] = [];
  let rest = s;
  while (rest.length) {
    const m = LINE_BREAKS.exec(rest);
    if (!m) {
      out.push(rest);
      break;
    }
    out.push(rest.slice(0, keepends ? m.index + m[0].length : m.index));
    rest = rest.slice(m.index + m[0].length);
  }
  return out;
}

const CASED = /[\p{Lu}\p{Ll}\p{Lt}]/u;

export function pyTitle(s: string): string {
  let out = '';
  let prevCased = false;
  for (const ch of s) {
    out += prevCased ? ch.toLowerCase() : upperFirst(ch);
    prevCased = CASED.test(ch);
  }
  return out;
}
function upperFirst(ch: string): string {
  // title-case of a single character; JS has no toTitleCase, upper is right for all but a few digraphs
  const special: Record<string, string> = { 'ǆ': 'ǅ', 'Ǆ': 'ǅ', 'ǉ': 'ǈ', 'Ǉ': 'ǈ', 'ǌ': 'ǋ', 'Ǌ': 'ǋ', 'ǳ': 'ǲ', 'Ǳ': 'ǲ', 'ß': 'Ss' };
  return special[ch] ?? ch.toUpperCase();
}
export function pyCapitalize(s: string): string {
  const chars = Array.from(s);
  if (!chars.length) return s;
  return upperFirst(chars[0]) + chars.slice(1).join('').toLowerCase();
}

function center(s: string, width: number, fill: string): string {
  const len = Array.from(s).length;
  if (width <= len) return s;
  const marg = width - len;
  // CPython: left = marg // 2 + (marg & width & 1)
  const left = Math.floor(marg / 2) + (marg & width & 1);
  return fill.repeat(left) + s + fill.repeat(marg - left);
}

function fillArg(v: unknown): string {
  if (v === MISSING) return ' ';
  const s = strArg(v, 'fill');
  if (Array.from(s).length !== 1) throw pyError('TypeError', 'The fill character must be exactly one character long');
  return s;
}

function intArg(v: unknown, what = 'argument'): number {
  const i = intOf(v);
  if (i === null) throw pyError('TypeError', `'${typeName(v)}' object cannot be interpreted as an integer (${what})`);
  return Number(i);
}

function findRange(s: string, args: unknown[], fname: string): [string, number, number] {
  const sub = strArg(args[0], fname);
  let start = args.length > 1 && args[1] !== null ? intArg(args[1]) : 0;
  let end = args.length > 2 && args[2] !== null ? intArg(args[2]) : s.length;
  if (start < 0) start = Math.max(0, start + s.length);
  if (end < 0) end = Math.max(0, end + s.length);
  return [sub, start, Math.min(end, s.length)];
}

function startsEnds(s: string, args: unknown[], which: 'start' | 'end'): boolean {
  const [prefix] = args;
  let start = args.length > 1 && args[1] !== null ? intArg(args[1]) : 0;
  let end = args.length > 2 && args[2] !== null ? intArg(args[2]) : s.length;
  if (start < 0) start = Math.max(0, start + s.length);
  if (end < 0) end = Math.max(0, end + s.length);
  const seg = start > s.length ? null : s.slice(start, Math.max(start, end));
  const cands = isTuple(prefix) ? (prefix as unknown[]) : [prefix];
  for (const c of cands) {
    const p = strArg(c, `${which}swith`);
    if (seg === null) continue;
    if (which === 'start' ? seg.startsWith(p) : seg.endsWith(p)) return true;
  }
  return false;
}

const isAll = (re: RegExp) => (r: RenderState, s: string) => s.length > 0 && Array.from(s).every((c) => re.test(c));

let fieldAccess: FieldAccess | null = null;
/** The sandbox registers its lookups here (avoids an import cycle). */
export function setFieldAccess(a: FieldAccess): void {
  fieldAccess = a;
}

function checked<T extends string | unknown[]>(r: RenderState, v: T): T {
  r.checkSize(v.length);
  return v;
}

export const STR_METHODS = new Map<string, Method>([
  ['upper', (r, s) => sval(s).toUpperCase()],
  ['lower', (r, s) => sval(s).toLowerCase()],
  ['casefold', (r, s) => sval(s).toLowerCase()],
  ['title', (r, s) => (r.cost(sval(s).length, 250), pyTitle(sval(s)))],
  ['capitalize', (r, s) => (r.cost(sval(s).length, 80), pyCapitalize(sval(s)))],
  [
    'swapcase',
    (r, s) => {
      r.cost(sval(s).length, 350);
      return Array.from(sval(s), (c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('');
    },
  ],
  ['strip', (r, s, a) => pyStrip(sval(s), a[0], true, true)],
  ['lstrip', (r, s, a) => pyStrip(sval(s), a[0], true, false)],
  ['rstrip', (r, s, a) => pyStrip(sval(s), a[0], false, true)],
  [
    'split',
    (r, s, a, kw) => {
      const [sep, max] = bindArgs('split', a, kw, ['sep', 'maxsplit']);
      return pySplit(sval(s), dflt(sep, null), intArg(dflt(max, -1)));
    },
  ],
  [
    'rsplit',
    (r, s, a, kw) => {
      const [sep, max] = bindArgs('rsplit', a, kw, ['sep', 'maxsplit']);
      return pyRsplit(sval(s), dflt(sep, null), intArg(dflt(max, -1)));
    },
  ],
  ['splitlines', (r, s, a, kw) => splitlines(sval(s), !!dflt(bindArgs('splitlines', a, kw, ['keepends'])[0], false))],
  ['startswith', (r, s, a) => startsEnds(sval(s), a, 'start')],
  ['endswith', (r, s, a) => startsEnds(sval(s), a, 'end')],
  [
    'replace',
    (r, s, a) => {
      const str = sval(s);
      const old = strArg(a[0], 'replace');
      const nw = strArg(a[1], 'replace');
      const count = a.length > 2 ? intArg(a[2]) : -1;
      return checked(r, pyReplace(str, old, nw, count, r));
    },
  ],
  [
    'find',
    (r, s, a) => {
      const [sub, st, en] = findRange(sval(s), a, 'find');
      const i = sval(s).slice(0, en).indexOf(sub, st);
      return i >= 0 && i + sub.length <= en ? i : -1;
    },
  ],
  [
    'rfind',
    (r, s, a) => {
      const [sub, st, en] = findRange(sval(s), a, 'rfind');
      const i = sval(s).slice(st, en).lastIndexOf(sub);
      return i >= 0 ? i + st : -1;
    },
  ],
  [
    'index',
    (r, s, a) => {
      const [sub, st, en] = findRange(sval(s), a, 'index');
      const i = sval(s).slice(0, en).indexOf(sub, st);
      if (i < 0) throw pyError('ValueError', 'substring not found');
      return i;
    },
  ],
  [
    'rindex',
    (r, s, a) => {
      const [sub, st, en] = findRange(sval(s), a, 'rindex');
      const i = sval(s).slice(st, en).lastIndexOf(sub);
      if (i < 0) throw pyError('ValueError', 'substring not found');
      return i + st;
    },
  ],
  [
    'count',
    (r, s, a) => {
      const [sub, st, en] = findRange(sval(s), a, 'count');
      const seg = sval(s).slice(st, en);
      if (sub === '') return Array.from(seg).length + 1;
      return seg.split(sub).length - 1;
    },
  ],
  [
    'format',
    (r, s, a, kw) => {
      const out = strFormat(sval(s), a, kw, fieldAccess!);
      r.checkSize(out.length);
      return s instanceof Markup ? new Markup(out) : out;
    },
  ],
  [
    'format_map',
    (r, s, a) => {
      if (!isDict(a[0])) throw pyError('TypeError', 'format_map() argument must be a mapping');
      return checked(r, strFormat(sval(s), [], a[0] as Dict, fieldAccess!));
    },
  ],
  [
    'join',
    (r, s, a) => {
      const items = toList(a[0]);
      r.tick(items.length);
      const parts = items.map((x, i) => {
        if (typeof x === 'string') return x;
        if (x instanceof Markup) return x.s;
        throw pyError('TypeError', `sequence item ${i}: expected str instance, ${typeName(x)} found`);
      });
      r.checkSize(parts.reduce((n, p) => n + p.length, 0) + sval(s).length * Math.max(0, parts.length - 1));
      return parts.join(sval(s));
    },
  ],
  [
    'zfill',
    (r, s, a) => {
      const str = sval(s);
      const w = intArg(a[0]);
      r.checkSize(w);
      if (str.length >= w) return str;
      const sign = str[0] === '-' || str[0] === '+' ? str[0] : '';
      return sign + '0'.repeat(w - str.length) + str.slice(sign.length);
    },
  ],
  [
    'center',
    (r, s, a) => {
      r.checkSize(intArg(a[0]));
      return center(sval(s), intArg(a[0]), fillArg(a.length > 1 ? a[1] : MISSING));
    },
  ],
  [
    'ljust',
    (r, s, a) => {
      const w = intArg(a[0]);
      r.checkSize(w);
      const str = sval(s);
      const len = Array.from(str).length;
      return len >= w ? str : str + fillArg(a.length > 1 ? a[1] : MISSING).repeat(w - len);
    },
  ],
  [
    'rjust',
    (r, s, a) => {
      const w = intArg(a[0]);
      r.checkSize(w);
      const str = sval(s);
      const len = Array.from(str).length;
      return len >= w ? str : fillArg(a.length > 1 ? a[1] : MISSING).repeat(w - len) + str;
    },
  ],
  [
    'partition',
    (r, s, a) => {
      const str = sval(s);
      const sep = strArg(a[0], 'partition');
      const i = str.indexOf(sep);
      return markTuple(i < 0 ? [str, '', ''] : [str.slice(0, i), sep, str.slice(i + sep.length)]);
    },
  ],
  [
    'rpartition',
    (r, s, a) => {
      const str = sval(s);
      const sep = strArg(a[0], 'rpartition');
      const i = str.lastIndexOf(sep);
      return markTuple(i < 0 ? ['', '', str] : [str.slice(0, i), sep, str.slice(i + sep.length)]);
    },
  ],
  ['removeprefix', (r, s, a) => (sval(s).startsWith(strArg(a[0], 'removeprefix')) ? sval(s).slice(sval(a[0]).length) : sval(s))],
  [
    'removesuffix',
    (r, s, a) => {
      const suf = strArg(a[0], 'removesuffix');
      return suf && sval(s).endsWith(suf) ? sval(s).slice(0, -suf.length) : sval(s);
    },
  ],
  [
    'expandtabs',
    (r, s, a) => {
      const size = a.length ? intArg(a[0]) : 8;
      const str = sval(s);
      let tabs = 0;
      for (let i = str.indexOf('\t'); i >= 0; i = str.indexOf('\t', i + 1)) tabs++;
      r.checkSize(str.length + tabs * Math.max(0, size));
      r.cost(str.length, 200);
      let col = 0;
      let out = '';
      for (const c of sval(s)) {
        if (c === '\t') {
          const n = size > 0 ? size - (col % size) : 0;
          out += ' '.repeat(n);
          col += n;
        } else {
          out += c;
          col = c === '\n' || c === '\r' ? 0 : col + 1;
        }
      }
      return checked(r, out);
    },
  ],
  ['isdigit', (r, s) => isAll(/[\p{Nd}\u00b2\u00b3\u00b9\u2070-\u2079\u2080-\u2089]/u)(r, sval(s))],
  ['isdecimal', (r, s) => isAll(/\p{Nd}/u)(r, sval(s))],
  ['isnumeric', (r, s) => isAll(/\p{N}/u)(r, sval(s))],
  ['isalpha', (r, s) => isAll(/\p{L}/u)(r, sval(s))],
  ['isalnum', (r, s) => isAll(/[\p{L}\p{N}]/u)(r, sval(s))],
  ['isascii', (r, s) => /^[\x00-\x7f]*$/.test(sval(s))],
  ['isspace', (r, s) => sval(s).length > 0 && Array.from(sval(s)).every((c) => WS_SET.has(c))],
  ['isidentifier', (r, s) => /^[\p{L}_][\p{L}\p{N}_]*$/u.test(sval(s))],
  ['isprintable', (r, s) => !/[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u.test(sval(s).replace(/ /g, ''))],
  [
    'islower',
    (r, s) => {
      const str = sval(s);
      return /[\p{Lu}\p{Ll}\p{Lt}]/u.test(str) && !/[\p{Lu}\p{Lt}]/u.test(str);
    },
  ],
  [
    'isupper',
    (r, s) => {
      const str = sval(s);
      return /[\p{Lu}\p{Ll}\p{Lt}]/u.test(str) && !/[\p{Ll}\p{Lt}]/u.test(str);
    },
  ],
  ['istitle', (r, s) => /[\p{Lu}\p{Lt}]/u.test(sval(s)) && pyTitle(sval(s)) === sval(s)],
  ['encode', () => { throw pyError('TypeError', 'bytes are not supported'); }],
]);

export function pyReplace(s: string, old: string, nw: string, count: number, r?: RenderState): string {
  if (r) {
    // the result's size is known before building it: refuse a bomb without allocating it
    let hits = old === '' ? strLen(s) + 1 : 0;
    if (old !== '' && nw.length > old.length) for (let i = s.indexOf(old); i >= 0 && (count < 0 || hits < count); i = s.indexOf(old, i + old.length)) hits++;
    if (count >= 0 && hits > count) hits = count;
    r.checkSize(s.length + hits * Math.max(0, nw.length - old.length));
    if (old === '') r.cost(s.length, 140);
  }
  if (count < 0) {
    if (old === '') {
      const chars = Array.from(s);
      return nw + chars.join(nw) + (chars.length ? nw : '');
    }
    return s.split(old).join(nw);
  }
  let out = '';
  let rest = s;
  let n = 0;
  if (old === '') {
    const chars = Array.from(s);
    let res = '';
    for (let i = 0; i <= chars.length; i++) {
      if (n < count) {
        res += nw;
        n++;
      }
      if (i < chars.length) res += chars[i];
    }
    return res;
  }
  while (n < count) {
    const i = rest.indexOf(old);
    if (i < 0) break;
    out += rest.slice(0, i) + nw;
    rest = rest.slice(i + old.length);
    n++;
  }
  return out + rest;
}

function listIndex(a: unknown[], i: number): number {
  return i < 0 ? Math.max(0, i + a.length) : Math.min(i, a.length);
}

export const LIST_METHODS = new Map<string, Method>([
  [
    'append',
    (r, l: unknown[], a) => {
      r.checkSize(l.length + 1);
      r.grow(8);
      l.push(a[0]);
      return null;
    },
  ],
  [
    'extend',
    (r, l: unknown[], a) => {
      // l.extend(l) extends by a snapshot, as Python (iterating the growing list itself never ends)
      const items = a[0] === l ? l.slice() : toList(a[0]);
      r.checkSize(l.length + items.length);
      r.grow(items.length * 8);
      for (let i = 0; i < items.length; i++) l.push(items[i]);
      return null;
    },
  ],
  [
    'insert',
    (r, l: unknown[], a) => {
      r.checkSize(l.length + 1);
      r.grow(8);
      // splice moves every later item
      r.tick(l.length >>> 7);
      l.splice(listIndex(l, intArg(a[0])), 0, a[1]);
      return null;
    },
  ],
  [
    'pop',
    (r, l: unknown[], a) => {
      if (!l.length) throw pyError('IndexError', 'pop from empty list');
      let i = a.length ? intArg(a[0]) : -1;
      if (i < 0) i += l.length;
      if (i < 0 || i >= l.length) throw pyError('IndexError', 'pop index out of range');
      return l.splice(i, 1)[0];
    },
  ],
  [
    'remove',
    (r, l: unknown[], a) => {
      const i = l.findIndex((x) => eq(x, a[0]));
      if (i < 0) throw pyError('ValueError', 'list.remove(x): x not in list');
      l.splice(i, 1);
      return null;
    },
  ],
  ['clear', (r, l: unknown[]) => ((l.length = 0), null)],
  ['copy', (r, l: unknown[]) => l.slice()],
  ['reverse', (r, l: unknown[]) => (l.reverse(), null)],
  [
    'sort',
    (r, l: unknown[], a, kw) => {
      const [rev] = bindArgs('sort', a, kw, ['reverse']);
      r.tick(l.length * Math.ceil(Math.log2(l.length + 2)));
      const sorted = l.slice().sort((x, y) => cmp(x, y));
      if (rev !== MISSING && rev) sorted.reverse();
      for (let i = 0; i < l.length; i++) l[i] = sorted[i];
      return null;
    },
  ],
]);

export const SEQ_METHODS = new Map<string, Method>([
  ['count', (r, l: unknown[], a) => l.filter((x) => eq(x, a[0])).length],
  [
    'index',
    (r, l: unknown[], a) => {
      const i = l.findIndex((x) => eq(x, a[0]));
      if (i < 0) throw pyError('ValueError', `${pyStrShort(a[0])} is not in ${isTuple(l) ? 'tuple' : 'list'}`);
      return i;
    },
  ],
]);

function pyStrShort(v: unknown): string {
  return typeof v === 'string' ? `'${v}'` : pyStr(v);
}

export const DICT_METHODS = new Map<string, Method>([
  ['keys', (r, d: Dict) => new DictView('keys', d)],
  ['values', (r, d: Dict) => new DictView('values', d)],
  ['items', (r, d: Dict) => new DictView('items', d)],
  [
    'get',
    (r, d: Dict, a) => {
      if (!a.length) throw pyError('TypeError', 'get expected at least 1 argument, got 0');
      const v = dictGet(d, a[0]);
      return v === MISSING ? (a.length > 1 ? a[1] : null) : v;
    },
  ],
  [
    'pop',
    (r, d: Dict, a) => {
      const v = dictGet(d, a[0]);
      if (v === MISSING) {
        if (a.length > 1) return a[1];
        throw pyError('KeyError', pyStrShort(a[0]));
      }
      dictDelete(d, a[0]);
      return v;
    },
  ],
  [
    'popitem',
    (r, d: Dict) => {
      const keys = dictKeys(d);
      if (!keys.length) throw pyError('KeyError', "'popitem(): dictionary is empty'");
      const k = keys[keys.length - 1];
      const v = dictGet(d, k);
      dictDelete(d, k);
      return markTuple([k, v]);
    },
  ],
  [
    'setdefault',
    (r, d: Dict, a) => {
      const v = dictGet(d, a[0]);
      if (v !== MISSING) return v;
      const dv = a.length > 1 ? a[1] : null;
      r.grow(16);
      dictSet(d, a[0], dv);
      return dv;
    },
  ],
  [
    'update',
    (r, d: Dict, a, kw) => {
      if (a.length) {
        const src = a[0];
        if (isDict(src)) {
          const keys = dictKeys(src);
          r.grow(keys.length * 16);
          for (const k of keys) dictSet(d, k, dictGet(src, k));
        } else
          for (const pair of toList(src)) {
            r.grow(16);
            const kv = toList(pair);
            if (kv.length !== 2) throw pyError('ValueError', 'dictionary update sequence element has wrong length');
            dictSet(d, kv[0], kv[1]);
          }
      }
      if (kw) {
        r.grow(kw.size * 16);
        for (const [k, v] of kw) dictSet(d, k, v);
      }
      return null;
    },
  ],
  [
    'clear',
    (r, d: Dict) => {
      for (const k of dictKeys(d)) dictDelete(d, k);
      return null;
    },
  ],
  [
    'copy',
    (r, d: Dict) => {
      const m = new Map<unknown, unknown>();
      for (const k of dictKeys(d)) dictSet(m, k, dictGet(d, k));
      return m;
    },
  ],
]);

export const INT_METHODS = new Map<string, Method>([
  ['bit_length', (r, n) => (BigInt(n) < 0n ? -BigInt(n) : BigInt(n)).toString(2).replace(/^0$/, '').length],
  ['conjugate', (r, n) => n],
  ['is_integer', () => true],
]);
export const FLOAT_METHODS = new Map<string, Method>([
  ['is_integer', (r, x) => Number.isInteger(Number(x))],
  ['conjugate', (r, x) => x],
  ['hex', (r, x) => floatHex(Number(x))],
]);

function floatHex(x: number): string {
  if (!Number.isFinite(x)) return floatRepr(x);
  if (x === 0) return Object.is(x, -0) ? '-0x0.0p+0' : '0x0.0p+0';
  const sign = x < 0 ? '-' : '';
  let a = Math.abs(x);
  let e = Math.floor(Math.log2(a));
  if (a / 2 ** e >= 2) e++;
  if (a / 2 ** e < 1) e--;
  e = Math.max(e, -1022);
  let m = a / 2 ** e;
  const lead = Math.floor(m);
  m -= lead;
  let hex = '';
  for (let i = 0; i < 13; i++) {
    m *= 16;
    const d = Math.floor(m);
    hex += d.toString(16);
    m -= d;
  }
  hex = hex.replace(/0+$/, '') || '0';
  void a;
  return `${sign}0x${lead}.${hex}p${e < 0 ? '-' : '+'}${Math.abs(e)}`;
}

/** Non-callable attributes of numbers. */
export function numberAttr(v: unknown, name: string): unknown {
  const isF = v instanceof PyFloat || (typeof v === 'number' && !Number.isInteger(v));
  switch (name) {
    case 'real':
      return typeof v === 'boolean' ? (v ? 1 : 0) : v;
    case 'imag':
      return isF ? new PyFloat(0) : 0;
    case 'numerator':
      return isF ? MISSING : typeof v === 'boolean' ? (v ? 1 : 0) : v;
    case 'denominator':
      return isF ? MISSING : 1;
  }
  return MISSING;
}

export { contains, mkFloat };
