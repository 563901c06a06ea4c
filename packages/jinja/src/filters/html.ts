// Escaping, URL and HTML attribute filters, pprint, default.

import { pyError } from '../errors.js';
import { bindArgs, dflt } from '../runtime/args.js';
import { escapeHtml } from '../runtime/escape.js';
import { pyRepr } from '../runtime/repr.js';
import {
  Markup,
  Undefined,
  dictGet,
  dictKeys,
  isDict,
  isIterable,
  isTuple,
  toList,
  truthy,
} from '../runtime/values.js';
import type { FilterFn } from './fn.js';
import { softStr } from './util.js';

const UTF8 = new TextEncoder();
const ALWAYS_SAFE = /[A-Za-z0-9_.\-~]/;

/** urllib.parse.quote_from_bytes with Jinja2's url_quote tweaks. */
export function urlQuote(v: unknown, forQs: boolean): string {
  const s = softStr(v);
  let out = '';
  for (const b of UTF8.encode(s)) {
    const c = String.fromCharCode(b);
    if (b < 128 && (ALWAYS_SAFE.test(c) || (!forQs && c === '/'))) out += c;
    else out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return forQs ? out.replace(/%20/g, '+') : out;
}

/** pprint.pformat for values that fit on one line: dicts are shown with sorted keys. */
export function pformat(v: unknown): string {
  if (isDict(v)) {
    const keys = dictKeys(v).slice();
    try {
      keys.sort((a, b) => (a === b ? 0 : String(a) < String(b) ? -1 : 1));
    } catch {
      /* unorderable keys keep insertion order */
    }
    return `{${keys.map((k) => `${pformat(k)}: ${pformat(dictGet(v, k))}`).join(', ')}}`;
  }
  if (Array.isArray(v)) {
    const parts = v.map(pformat);
    if (isTuple(v)) return parts.length === 1 ? `(${parts[0]},)` : `(${parts.join(', ')})`;
    return `[${parts.join(', ')}]`;
  }
  return pyRepr(v);
}

const HTTP_RE =
  /^((https?:\/\/|www\.)(([\p{L}\p{N}_%-]+\.)+)?([a-z]{2,63}|xn--[\p{L}\p{N}_%]{2,59})|([\p{L}\p{N}_%-]{2,63}\.)+(com|net|int|edu|gov|org|info|mil)|(https?:\/\/)((([\d]{1,3})(\.[\d]{1,3}){3})|(\[([\da-f]{0,4}:){2}([\da-f]{0,4}:?){1,6}\])))(?::[\d]{1,5})?(?:[/?#]\S*)?$/iu;
const EMAIL_RE = /^\S+@[\p{L}\p{N}_][\p{L}\p{N}_.-]*\.[\p{L}\p{N}_]+$/u;

function count(s: string, sub: string): number {
  return s.split(sub).length - 1;
}

/** jinja2.utils.urlize */
function urlize(text: string, trimLimit: number | null, rel: string, target: string | null, extraSchemes: string[] | null): string {
  const trim = (x: string) => (trimLimit !== null && x.length > trimLimit ? `${x.slice(0, trimLimit)}${x.length >= 3 ? '...' : ''}` : x);
  const words = escapeHtml(text).split(/(\s+)/u);
  const relAttr = rel ? ` rel="${escapeHtml(rel)}"` : '';
  const targetAttr = target ? ` target="${escapeHtml(target)}"` : '';
  for (let i = 0; i < words.length; i += 2) {
    let head = '';
    let middle = words[i];
    let tail = '';
    const hm = /^([(<]|&lt;)+/.exec(middle);
    if (hm) {
      head = hm[0];
      middle = middle.slice(hm[0].length);
    }
    if (/([)>.,\n]|&gt;)$/.test(middle)) {
      const tm = /([)>.,\n]|&gt;)+$/.exec(middle);
      if (tm) {
        tail = tm[0];
        middle = middle.slice(0, tm.index);
      }
    }
    for (const [sc, ec] of [['(', ')'], ['<', '>'], ['&lt;', '&gt;']]) {
      const sCount = count(middle, sc);
      if (sCount <= count(middle, ec)) continue;
      for (let k = 0; k < Math.min(sCount, count(tail, ec)); k++) {
        const endIndex = tail.indexOf(ec) + ec.length;
        middle += tail.slice(0, endIndex);
        tail = tail.slice(endIndex);
      }
    }
    if (HTTP_RE.test(middle)) {
      if (middle.startsWith('https://') || middle.startsWith('http://'))
        middle = `<a href="${middle}"${relAttr}${targetAttr}>${trim(middle)}</a>`;
      else middle = `<a href="https://${middle}"${relAttr}${targetAttr}>${trim(middle)}</a>`;
    } else if (middle.startsWith('mailto:') && EMAIL_RE.test(middle.slice(7))) {
      middle = `<a href="${middle}">${middle.slice(7)}</a>`;
    } else if (middle.includes('@') && !middle.startsWith('www.') && !middle.includes(':') && EMAIL_RE.test(middle)) {
      middle = `<a href="mailto:${middle}">${middle}</a>`;
    } else if (extraSchemes) {
      for (const scheme of extraSchemes)
        if (middle !== scheme && middle.startsWith(scheme)) middle = `<a href="${middle}"${relAttr}${targetAttr}>${middle}</a>`;
    }
    words[i] = head + middle + tail;
  }
  return words.join('');
}

export const htmlFilters: Record<string, FilterFn> = {
  escape: (r, v) => (v instanceof Markup ? v : new Markup(escapeHtml(softStr(v)))),
  e: (r, v) => (v instanceof Markup ? v : new Markup(escapeHtml(softStr(v)))),
  forceescape: (r, v) => new Markup(escapeHtml(softStr(v))),
  safe: (r, v) => (v instanceof Markup ? v : new Markup(softStr(v))),
  urlencode: (r, v) => {
    if (typeof v === 'string' || v instanceof Markup) r.cost(softStr(v).length, 220);
    if (typeof v === 'string' || v instanceof Markup || !isIterable(v) || v instanceof Undefined) return urlQuote(v, false);
    const pairs = isDict(v)
      ? dictKeys(v).map((k) => [k, dictGet(v, k)])
      : toList(v).map((p) => {
          const kv = toList(p);
          if (kv.length < 2) throw pyError('ValueError', `not enough values to unpack (expected 2, got ${kv.length})`);
          if (kv.length > 2) throw pyError('ValueError', 'too many values to unpack (expected 2)');
          return kv;
        });
    return pairs.map(([k, x]) => `${urlQuote(k, true)}=${urlQuote(x, true)}`).join('&');
  },
  xmlattr: (r, v, a, kw) => {
    const [autospace] = bindArgs('xmlattr', a, kw, ['autospace']);
    if (v instanceof Undefined) v.fail();
    if (!isDict(v)) throw pyError('AttributeError', 'xmlattr requires a mapping');
    const items: string[] = [];
    for (const k of dictKeys(v)) {
      const x = dictGet(v, k);
      if (x === null || x === undefined || x instanceof Undefined) continue;
      const key = softStr(k);
      if (/[\s/>=]/.test(key)) throw pyError('ValueError', `Invalid character in attribute name: '${key}'`);
      items.push(`${escapeHtml(key)}="${x instanceof Markup ? x.s : escapeHtml(softStr(x))}"`);
    }
    let out = items.join(' ');
    if (truthy(dflt(autospace, true)) && out) out = ' ' + out;
    return new Markup(out);
  },
  pprint: (r, v) => pformat(v),
  urlize: (r, v, a, kw) => {
    const [trimLimit, nofollow, target, rel, extra] = bindArgs('urlize', a, kw, ['trim_url_limit', 'nofollow', 'target', 'rel', 'extra_schemes']);
    const rels = new Set(softStr(dflt(rel, null) ?? '').split(/\s+/).filter(Boolean));
    if (truthy(dflt(nofollow, false))) rels.add('nofollow');
    rels.add('noopener');
    const relStr = Array.from(rels).sort().join(' ');
    const tl = dflt(trimLimit, null);
    const tg = dflt(target, null);
    const ex = dflt(extra, null);
    const schemes = ex === null ? null : toList(ex).map(softStr);
    const text = softStr(v);
    r.cost(text.length, 300);
    return new Markup(urlize(text, tl === null ? null : Number(tl), relStr, tg === null ? null : softStr(tg), schemes));
  },
  default: (r, v, a, kw) => {
    const [dv, boolean] = bindArgs('default', a, kw, ['default_value', 'boolean']);
    if (v instanceof Undefined || (truthy(dflt(boolean, false)) && !truthy(v))) return dflt(dv, '');
    return v;
  },
};
htmlFilters.d = htmlFilters.default;
