// Filters over sequences and mappings: sorting, grouping, selecting, aggregating.

import { pyError } from '../errors.js';
import { bindArgs, dflt } from '../runtime/args.js';
import { callValue } from '../runtime/call.js';
import { add, cmp, eq, intOf } from '../runtime/ops.js';
import type { RenderState } from '../runtime/state.js';
import {
  DictView,
  GROUP_TUPLE,
  Markup,
  MISSING,
  PyIterator,
  Undefined,
  dictGet,
  dictKeys,
  hashKey,
  isDict,
  isTuple,
  markTuple,
  pyLen,
  toList,
  truthy,
  typeName,
  type KwMap,
} from '../runtime/values.js';
import type { FilterFn, TestFn } from './fn.js';
import { attrGetter, filterArgError, ignoreCase, multiAttrGetter, pySorted, softStr } from './util.js';
import { pyStr } from '../runtime/repr.js';


function list(r: RenderState, v: unknown): unknown[] {
  const items = toList(v);
  r.tick(items.length);
  return items;
}

function gen(items: unknown[]): PyIterator {
  return new PyIterator(items, 'generator');
}

export interface FilterLookup {
  filters: Map<string, FilterFn>;
  tests: Map<string, TestFn>;
}

/** select/reject/selectattr/rejectattr share jinja2.filters.prepare_select_or_reject. */
function selectOrReject(
  r: RenderState,
  env: FilterLookup,
  v: unknown,
  args: unknown[],
  kw: KwMap,
  lookupAttr: boolean,
  modfunc: (b: boolean) => boolean,
): PyIterator {
  let off = 0;
  let getter: (x: unknown) => unknown = (x) => x;
  if (lookupAttr) {
    if (!args.length) throw pyError('FilterArgumentError', 'Missing parameter for attribute name');
    getter = attrGetter(args[0]);
    off = 1;
  }
  let test: (x: unknown) => boolean;
  if (args.length > off) {
    const name = softStr(args[off]);
    const fn = env.tests.get(name);
    if (!fn) throw pyError('TemplateRuntimeError', `No test named '${name}'.`);
    const rest = args.slice(off + 1);
    test = (x) => fn(r, x, rest, kw);
  } else test = (x) => truthy(x);
  // Jinja2 guards with `if value:`, so falsy inputs (None, '') select nothing
  const items = truthy(v) ? list(r, v) : [];
  const kept: unknown[] = [];
  for (let i = 0; i < items.length; i++) if (modfunc(test(getter(items[i])))) kept.push(items[i]);
  return gen(kept);
}

function mapFilter(r: RenderState, env: FilterLookup, v: unknown, args: unknown[], kw: KwMap): PyIterator {
  const items = truthy(v) ? list(r, v) : [];
  if (!args.length && kw && kw.has('attribute')) {
    const attribute = kw.get('attribute');
    const d = kw.has('default') ? kw.get('default') : null;
    for (const k of kw.keys())
      if (k !== 'attribute' && k !== 'default') throw pyError('FilterArgumentError', `Unexpected keyword argument '${k}'`);
    const g = attrGetter(attribute, false, d);
    return gen(items.map(g));
  }
  if (!args.length) throw pyError('FilterArgumentError', 'map requires a filter argument');
  const name = softStr(args[0]);
  const fn = env.filters.get(name);
  if (!fn) throw pyError('TemplateRuntimeError', `No filter named '${name}'.`);
  const rest = args.slice(1);
  return gen(
    items.map((x) => {
      r.tick();
      return fn(r, x, rest, kw);
    }),
  );
}

const UNDEFINED_KEY = Symbol('undefined');

function uniqueItems(r: RenderState, items: unknown[], caseSensitive: boolean, attribute: unknown): unknown[] {
  const g = attrGetter(attribute, !caseSensitive);
  const seen = new Set<unknown>();
  const seenList: unknown[] = [];
  const out: unknown[] = [];
  for (const x of items) {
    const k = g(x);
    let key: unknown;
    try {
      // all Undefined objects hash and compare equal in Jinja2
      key = k instanceof Undefined ? UNDEFINED_KEY : hashKey(k);
    } catch {
      throw pyError('TypeError', `unhashable type: '${typeName(k)}'`);
    }
    if (typeof key === 'object' && key !== null) {
      // unhashable-by-identity keys (tuples) are compared one by one: quadratic, so charged as such
      r.tick(seenList.length);
      if (seenList.some((s) => eq(s, k))) continue;
      seenList.push(k);
    } else {
      if (seen.has(key)) continue;
      seen.add(key);
    }
    out.push(x);
  }
  return out;
}

function minmax(r: RenderState, v: unknown, a: unknown[], kw: KwMap, fname: string, sign: number): unknown {
  const [cs, attribute] = bindArgs(fname, a, kw, ['case_sensitive', 'attribute']);
  const items = list(r, v);
  if (!items.length) return new Undefined(MISSING, MISSING, 'No aggregated item, sequence was empty.');
  const g = attrGetter(dflt(attribute, null), !truthy(dflt(cs, false)));
  let best = items[0];
  let bestKey = g(best);
  for (let i = 1; i < items.length; i++) {
    const k = g(items[i]);
    if (cmp(k, bestKey) * sign > 0) {
      best = items[i];
      bestKey = k;
    }
  }
  return best;
}

export function makeSequenceFilters(env: FilterLookup): Record<string, FilterFn> {
  return {
    length: (r, v) => pyLen(v),
    count: (r, v) => pyLen(v),
    list: (r, v) => list(r, v).slice(),
    first: (r, v) => {
      const items = toList(v);
      return items.length ? items[0] : new Undefined(MISSING, MISSING, 'No first item, sequence was empty.');
    },
    last: (r, v) => {
      if (v instanceof PyIterator) throw pyError('TypeError', `'${v.typeName}' object is not reversible`);
      const items = toList(v);
      return items.length ? items[items.length - 1] : new Undefined(MISSING, MISSING, 'No last item, sequence was empty.');
    },
    reverse: (r, v) => {
      if (typeof v === 'string' || v instanceof Markup) r.cost(softStr(v).length, 80);
      if (typeof v === 'string') return Array.from(v).reverse().join('');
      if (v instanceof Markup) return new Markup(Array.from(v.s).reverse().join(''));
      const items = list(r, v).slice().reverse();
      if (Array.isArray(v)) return new PyIterator(items, 'list_reverseiterator');
      if (isDict(v)) return new PyIterator(items, 'dict_reversekeyiterator');
      return items;
    },
    sort: (r, v, a, kw) => {
      const [reverse, cs, attribute] = bindArgs('sort', a, kw, ['reverse', 'case_sensitive', 'attribute']);
      const g = multiOrSingle(dflt(attribute, null), !truthy(dflt(cs, false)));
      return pySorted(r, list(r, v), g, truthy(dflt(reverse, false)));
    },
    dictsort: (r, v, a, kw) => {
      const [cs, by, reverse] = bindArgs('dictsort', a, kw, ['case_sensitive', 'by', 'reverse']);
      const byv = dflt(by, 'key');
      let pos: number;
      if (byv === 'key') pos = 0;
      else if (byv === 'value') pos = 1;
      else filterArgError('You can only sort by either "key" or "value"');
      if (v instanceof Undefined) v.fail();
      if (!isDict(v)) throw pyError('AttributeError', `'${typeName(v)}' object has no attribute 'items'`);
      const items = dictKeys(v).map((k) => markTuple([k, dictGet(v, k)]));
      const lower = !truthy(dflt(cs, false));
      return pySorted(r, items, (x) => {
        const k = (x as unknown[])[pos];
        return lower ? ignoreCase(k) : k;
      }, truthy(dflt(reverse, false)));
    },
    items: (r, v) => {
      if (v instanceof Undefined) return gen([]);
      if (!isDict(v)) throw pyError('TypeError', 'Can only get item pairs from a mapping.');
      return gen(new DictView('items', v).toArray());
    },
    unique: (r, v, a, kw) => {
      const [cs, attribute] = bindArgs('unique', a, kw, ['case_sensitive', 'attribute']);
      return gen(uniqueItems(r, list(r, v), truthy(dflt(cs, false)), dflt(attribute, null)));
    },
    min: (r, v, a, kw) => minmax(r, v, a, kw, 'min', -1),
    max: (r, v, a, kw) => minmax(r, v, a, kw, 'max', 1),
    sum: (r, v, a, kw) => {
      const [attribute, start] = bindArgs('sum', a, kw, ['attribute', 'start']);
      let items = list(r, v);
      if (dflt(attribute, null) !== null) items = items.map(attrGetter(attribute));
      let acc: unknown = dflt(start, 0);
      for (const x of items) acc = add(r, acc, x);
      return acc;
    },
    join: (r, v, a, kw) => {
      const [d, attribute] = bindArgs('join', a, kw, ['d', 'attribute']);
      let items = list(r, v);
      if (dflt(attribute, null) !== null) items = items.map(attrGetter(attribute));
      const sep = softStr(dflt(d, ''));
      const parts = items.map((x) => (typeof x === 'string' ? x : softStr(x)));
      r.checkSize(parts.reduce((n, p) => n + p.length, 0) + sep.length * Math.max(0, parts.length - 1));
      const out = parts.join(sep);
      if (r.autoescape) return new Markup(out);
      return out;
    },
    batch: (r, v, a, kw) => {
      const [lc, fill] = bindArgs('batch', a, kw, ['linecount', 'fill_with'], 1);
      const n = Number(intOf(lc) ?? NaN);
      if (Number.isNaN(n)) throw pyError('TypeError', "'linecount' must be an integer");
      const items = list(r, v);
      const out: unknown[][] = [];
      let tmp: unknown[] = [];
      for (const item of items) {
        if (tmp.length === n) {
          out.push(tmp);
          tmp = [];
        }
        tmp.push(item);
      }
      if (tmp.length) {
        const fw = dflt(fill, null);
        if (fw !== null && tmp.length < n) {
          // batch(10**9, fill_with=x) would build a list of a billion fillers
          r.checkSize(n);
          r.grow((n - tmp.length) * 8);
          while (tmp.length < n) tmp.push(fw);
        }
        out.push(tmp);
      }
      return gen(out);
    },
    slice: (r, v, a, kw) => {
      const [slicesA, fill] = bindArgs('slice', a, kw, ['slices', 'fill_with'], 1);
      const slices = Number(intOf(slicesA) ?? NaN);
      if (!Number.isFinite(slices)) throw pyError('TypeError', 'slices must be an integer');
      r.checkSize(slices);
      const seq = list(r, v);
      const per = Math.floor(seq.length / slices);
      const extra = seq.length % slices;
      const fw = dflt(fill, null);
      let offset = 0;
      const out: unknown[][] = [];
      for (let i = 0; i < slices; i++) {
        const start = offset + i * per;
        if (i < extra) offset++;
        const end = offset + (i + 1) * per;
        const tmp = seq.slice(start, end);
        if (fw !== null && i >= extra) tmp.push(fw);
        out.push(tmp);
      }
      return gen(out);
    },
    groupby: (r, v, a, kw) => {
      const [attribute, d, cs] = bindArgs('groupby', a, kw, ['attribute', 'default', 'case_sensitive'], 1);
      const lower = !truthy(dflt(cs, false));
      const dv = dflt(d, null);
      const keyFn = attrGetter(attribute, lower, dv);
      const sorted = pySorted(r, list(r, v), keyFn);
      const groups: unknown[][] = [];
      let curKey: unknown = MISSING;
      let cur: unknown[] = [];
      for (const x of sorted) {
        const k = keyFn(x);
        if (curKey !== MISSING && eq(k, curKey)) cur.push(x);
        else {
          if (curKey !== MISSING) groups.push([curKey, cur]);
          curKey = k;
          cur = [x];
        }
      }
      if (curKey !== MISSING) groups.push([curKey, cur]);
      const outKey = lower ? attrGetter(attribute, false, dv) : null;
      return groups.map(([k, items]) => {
        const t = markTuple([outKey ? outKey((items as unknown[])[0]) : k, items]);
        Object.defineProperty(t, GROUP_TUPLE, { value: true });
        return t;
      });
    },
    map: (r, v, a, kw) => mapFilter(r, env, v, a, kw),
    select: (r, v, a, kw) => selectOrReject(r, env, v, a, kw, false, (b) => b),
    reject: (r, v, a, kw) => selectOrReject(r, env, v, a, kw, false, (b) => !b),
    selectattr: (r, v, a, kw) => selectOrReject(r, env, v, a, kw, true, (b) => b),
    rejectattr: (r, v, a, kw) => selectOrReject(r, env, v, a, kw, true, (b) => !b),
    random: (r, v) => {
      const items = toList(v);
      if (!items.length) return new Undefined(MISSING, MISSING, 'No random item, sequence was empty.');
      const i = Math.floor(Math.random() * items.length);
      if (isDict(v)) {
        // random.choice indexes the mapping with an int
        const x = dictGet(v, i);
        if (x === MISSING) throw pyError('KeyError', String(i));
        return x;
      }
      return items[i];
    },
    attr: (r, v, a) => {
      // python getattr only (no item fallback), with the sandbox check
      return attrOnly(v, softStr(a[0]));
    },
  };
}

/** The sort filter always keys on a list (make_multi_attrgetter), so equal Undefined keys never get compared. */
function multiOrSingle(attribute: unknown, lower: boolean): (x: unknown) => unknown {
  return multiAttrGetter(attribute, lower);
}

import { pyAttr, UNSAFE } from '../sandbox.js';
function attrOnly(v: unknown, name: string): unknown {
  if (v instanceof Undefined && !name.startsWith('__')) v.fail();
  const a = pyAttr(v, name);
  if (a === UNSAFE) return new Undefined(name, v, `access to attribute '${name}' of '${typeName(v)}' object is unsafe.`, true);
  if (a !== MISSING) return a;
  return new Undefined(name, v);
}

export { callValue, isTuple, pyStr };
