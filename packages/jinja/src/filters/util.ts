// Helpers shared by filters: Jinja2's attribute getters, soft_str, stable sorting.

import { pyError } from '../errors.js';
import { cmp } from '../runtime/ops.js';
import { pyStr } from '../runtime/repr.js';
import type { RenderState } from '../runtime/state.js';
import { Markup, MISSING, Undefined, isPlainObject } from '../runtime/values.js';
import { getitem } from '../sandbox.js';

export function softStr(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (v instanceof Markup) return v.s;
  return pyStr(v);
}

/** Keep Markup-ness of the input on string results (affects later escaping only). */
export function sameKind(input: unknown, out: string): string | Markup {
  return input instanceof Markup ? new Markup(out) : out;
}

// attribute= strings repeat across renders: split each once (results are never mutated)
const partsCache = new Map<string, unknown[]>();

function parts(attribute: unknown): unknown[] {
  if (attribute === null || attribute === undefined || attribute === MISSING) return [];
  if (typeof attribute === 'string') {
    let ps = partsCache.get(attribute);
    if (ps === undefined) {
      ps = attribute.split('.').map((p) => (/^\d+$/.test(p) ? Number(p) : p));
      if (partsCache.size >= 500) partsCache.clear();
      partsCache.set(attribute, ps);
    }
    return ps;
  }
  return [attribute];
}

export function ignoreCase(v: unknown): unknown {
  return typeof v === 'string' ? v.toLowerCase() : v instanceof Markup ? v.s.toLowerCase() : v;
}

/** jinja2.filters.make_attrgetter */
export function attrGetter(attribute: unknown, lower = false, dflt: unknown = null): (item: unknown) => unknown {
  const ps = parts(attribute);
  if (ps.length === 1 && typeof ps[0] === 'string' && !lower && (dflt === null || dflt === MISSING)) {
    // common case attribute='name': one own-key read on plain objects
    const key = ps[0];
    return (item) => {
      if (isPlainObject(item) && Object.hasOwn(item, key)) {
        const v = (item as Record<string, unknown>)[key];
        return v === undefined ? null : v;
      }
      return getitem(item, key);
    };
  }
  return (item) => {
    for (const p of ps) {
      item = getitem(item, p);
      if (dflt !== null && dflt !== MISSING && item instanceof Undefined) item = dflt;
    }
    return lower ? ignoreCase(item) : item;
  };
}

/** jinja2.filters.make_multi_attrgetter: "a,b" gives a list key. */
export function multiAttrGetter(attribute: unknown, lower = false): (item: unknown) => unknown {
  const list = typeof attribute === 'string' ? attribute.split(',') : [attribute];
  const getters = list.map((a) => attrGetter(a, lower));
  return (item) => getters.map((g) => g(item));
}

/** Python's sorted(): stable, and `reverse` keeps equal items in their original order. */
export function pySorted(r: RenderState, items: unknown[], key: (x: unknown) => unknown, reverse = false): unknown[] {
  r.tick(items.length * Math.ceil(Math.log2(items.length + 2)));
  const dec = items.map((v, i) => ({ v, k: key(v), i }));
  dec.sort((a, b) => {
    const c = reverse ? cmp(b.k, a.k) : cmp(a.k, b.k);
    return c || a.i - b.i;
  });
  return dec.map((d) => d.v);
}

export function filterArgError(msg: string): never {
  throw pyError('FilterArgumentError', msg);
}
