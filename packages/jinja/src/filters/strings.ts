// String filters: case, trimming, truncation, wrapping, formatting.

import { pyError } from '../errors.js';
import { bindArgs, dflt } from '../runtime/args.js';
import { pyCapitalize, pyReplace, pyStrip, pySplit, splitlines, isPyWs, pyTitle } from '../runtime/methods.js';
import { intOf } from '../runtime/ops.js';
import { printfFormat } from '../runtime/printf.js';
import type { FilterFn } from './fn.js';
import type { RenderState } from '../runtime/state.js';
import { Markup, MISSING, Undefined, isDict, markTuple, pyLen, strLen, truthy, typeName } from '../runtime/values.js';
import { sameKind, softStr } from './util.js';

void pyTitle;

const TITLE_SPLIT = /([-\s({[<]+)/u;

/** Charges the measured cost of a slow filter on `s` before it runs (see RenderState.cost). */
function charged(r: RenderState, s: string, nsPerChar: number): string {
  r.cost(s.length, nsPerChar);
  return s;
}

function countLines(s: string): number {
  let n = 1;
  for (let i = s.indexOf('\n'); i >= 0; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

/** Filters that call str methods on their input fail for non-strings, as in Python. */
function strOnly(v: unknown, method: string): string {
  if (typeof v === 'string') return v;
  if (v instanceof Markup) return v.s;
  if (v instanceof Undefined) v.fail();
  throw pyError('AttributeError', `'${typeName(v)}' object has no attribute '${method}'`);
}

function intArg(v: unknown, name: string): number {
  const i = intOf(v);
  if (i === null) throw pyError('TypeError', `'${name}' must be an integer`);
  return Number(i);
}

export const stringFilters: Record<string, FilterFn> = {
  upper: (r, v) => sameKind(v, softStr(v).toUpperCase()),
  lower: (r, v) => (typeof v === 'boolean' ? (v ? 'true' : 'false') : sameKind(v, softStr(v).toLowerCase())),
  capitalize: (r, v) => sameKind(v, pyCapitalize(charged(r, softStr(v), 80))),
  title: (r, v) =>
    sameKind(
      v,
      charged(r, softStr(v), 250)
        .split(TITLE_SPLIT)
        .filter((p) => p)
        .map((p) => {
          const chars = Array.from(p);
          return chars[0].toUpperCase() + chars.slice(1).join('').toLowerCase();
        })
        .join(''),
    ),
  trim: (r, v, a, kw) => {
    const [chars] = bindArgs('trim', a, kw, ['chars']);
    return sameKind(v, pyStrip(softStr(v), dflt(chars, null), true, true));
  },
  center: (r, v, a, kw) => {
    const [width] = bindArgs('center', a, kw, ['width']);
    const w = intArg(dflt(width, 80), 'width');
    r.checkSize(w);
    const s = softStr(v);
    const len = strLen(s);
    if (w <= len) return s;
    const marg = w - len;
    const left = Math.floor(marg / 2) + (marg & w & 1);
    return ' '.repeat(left) + s + ' '.repeat(marg - left);
  },
  replace: (r, v, a, kw) => {
    const [old, nw, count] = bindArgs('replace', a, kw, ['old', 'new', 'count'], 2);
    const c = count === MISSING || count === null ? -1 : intArg(count, 'count');
    const out = pyReplace(softStr(v), softStr(old), softStr(nw), c, r);
    r.checkSize(out.length);
    return sameKind(v, out);
  },
  truncate: (r, v, a, kw) => {
    const [length, killwords, end, leeway] = bindArgs('truncate', a, kw, ['length', 'killwords', 'end', 'leeway']);
    const L = intArg(dflt(length, 255), 'length');
    if (typeof v !== 'string' && !(v instanceof Markup)) {
      // Jinja2 measures and slices the object itself: short containers come back unchanged
      const lw0 = intArg(dflt(leeway, null) ?? 5, 'leeway');
      if (pyLen(v) <= L + lw0) return v;
      throw pyError('AttributeError', `'${typeName(v)}' object has no attribute 'rsplit'`);
    }
    const s = softStr(v);
    const e = softStr(dflt(end, '...'));
    const lw = intArg(dflt(leeway, null) ?? 5, 'leeway');
    if (L < e.length) throw pyError('AssertionError', `expected length >= ${e.length}, got ${L}`);
    if (lw < 0) throw pyError('AssertionError', `expected leeway >= 0, got ${lw}`);
    r.cost(s.length, 90);
    const chars = Array.from(s);
    if (chars.length <= L + lw) return s;
    const head = chars.slice(0, L - e.length).join('');
    if (truthy(dflt(killwords, false))) return head + e;
    const i = head.lastIndexOf(' ');
    return (i >= 0 ? head.slice(0, i) : head) + e;
  },
  wordcount: (r, v) => (charged(r, softStr(v), 50).match(/[\p{L}\p{N}_]+/gu) ?? []).length,
  indent: (r, v, a, kw) => {
    const [width, first, blank] = bindArgs('indent', a, kw, ['width', 'first', 'blank']);
    const w = dflt(width, 4);
    if (typeof w !== 'string' && !(w instanceof Markup)) r.checkSize(intArg(w, 'width'));
    const ind = typeof w === 'string' ? w : w instanceof Markup ? w.s : ' '.repeat(intArg(w, 'width'));
    let s = strOnly(v, 'splitlines') + '\n';
    // every line may get the indent: refuse before building it
    if (ind.length > 0) r.checkSize(s.length + ind.length * countLines(s));
    let rv: string;
    const lines = splitlines(s, false);
    if (truthy(dflt(blank, false))) rv = lines.join('\n' + ind);
    else {
      rv = lines.shift() ?? '';
      if (lines.length) rv += '\n' + lines.map((l) => (l ? ind + l : l)).join('\n');
    }
    if (truthy(dflt(first, false))) rv = ind + rv;
    s = rv;
    r.checkSize(s.length);
    return sameKind(v, s);
  },
  format: (r, v, a, kw) => {
    if (a.length && kw && kw.size) throw pyError('FilterArgumentError', "can't handle positional and keyword arguments at the same time");
    let arg: unknown;
    if (kw && kw.size) {
      const m = new Map<unknown, unknown>();
      for (const [k, x] of kw) m.set(k, x);
      arg = m;
    } else return printfFormat(r, v instanceof Markup ? v : softStr(v), a, true);
    return printfFormat(r, v instanceof Markup ? v : softStr(v), arg);
  },
  wordwrap: (r, v, a, kw) => {
    const [width, breakLong, wrapstring, breakHyph] = bindArgs('wordwrap', a, kw, [
      'width',
      'break_long_words',
      'wrapstring',
      'break_on_hyphens',
    ]);
    const w = intArg(dflt(width, 79), 'width');
    const ws = softStr(dflt(wrapstring, null) ?? '\n');
    const text = charged(r, strOnly(v, 'splitlines'), 300);
    // the output has at most one wrapstring per character (width 1): bound it before wrapping
    if (ws.length > 1) r.checkSize(text.length * (1 + ws.length));
    const out = splitlines(text, false)
      .map((line) => textwrap(line, w, truthy(dflt(breakLong, true)), truthy(dflt(breakHyph, true)), r).join(ws))
      .join(ws);
    r.checkSize(out.length);
    return out;
  },
  string: (r, v) => (v instanceof Markup ? v : softStr(v)),
  striptags: (r, v) => stripTags(charged(r, softStr(v), 60)),
  split_words: (r, v) => pySplit(softStr(v), null, -1),
};
delete stringFilters.split_words;

/** markupsafe.Markup.striptags: drop comments and tags, collapse whitespace, unescape entities. */
export function stripTags(s: string): string {
  let out = s.replace(/<!--[\s\S]*?-->/g, '');
  out = out.replace(/<[^>]*>/g, '');
  out = pySplit(out, null, -1).join(' ');
  return unescapeEntities(out);
}

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\xa0', copy: '©', reg: '®' };
function unescapeEntities(s: string): string {
  return s.replace(/&(#\d+|#[xX][0-9a-fA-F]+|[a-zA-Z]+);/g, (m, body: string) => {
    if (body[0] === '#') {
      const cp = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
      return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : m;
    }
    return NAMED[body] ?? m;
  });
}

/**
 * textwrap.TextWrapper(width, expand_tabs=False, replace_whitespace=False, drop_whitespace=True).wrap(line)
 * — chunking on whitespace and, optionally, after hyphens inside words.
 */
export function textwrap(text: string, width: number, breakLong: boolean, breakHyphens: boolean, r?: RenderState): string[] {
  const chunks: string[] = [];
  const re = /(\s+)|([^\s]+)/gu;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    if (m[1]) chunks.push(m[1]);
    else if (breakHyphens) {
      // split words after hyphens that follow a letter/digit run (like textwrap's wordsep_re)
      const parts = m[2].split(/(?<=[\p{L}\p{N}]-)(?=[\p{L}\p{N}])/u);
      chunks.push(...parts);
    } else chunks.push(m[2]);
  }
  const lines: string[] = [];
  chunks.reverse();
  while (chunks.length) {
    r?.tick();
    const cur: string[] = [];
    let curLen = 0;
    if (width <= 0) throw pyError('ValueError', `invalid width ${width} (must be > 0)`);
    // leading whitespace is dropped on every line but the first
    if (lines.length > 0 && isWs(chunks[chunks.length - 1])) chunks.pop();
    while (chunks.length) {
      const l = strLen(chunks[chunks.length - 1]);
      if (curLen + l <= width) {
        cur.push(chunks.pop()!);
        curLen += l;
      } else break;
    }
    if (chunks.length && strLen(chunks[chunks.length - 1]) > width) {
      const spaceLeft = width < 1 ? 1 : width - curLen;
      if (breakLong) {
        const chunk = Array.from(chunks.pop()!);
        cur.push(chunk.slice(0, spaceLeft).join(''));
        curLen += spaceLeft;
        // the rest would be cut `width` characters per line: cut it all now (once, not once per line)
        const pieces: string[] = [];
        for (let i = spaceLeft; i < chunk.length; i += width) pieces.push(chunk.slice(i, i + width).join(''));
        for (let i = pieces.length - 1; i >= 0; i--) chunks.push(pieces[i]);
      } else if (!cur.length) {
        cur.push(chunks.pop()!);
      }
    }
    if (cur.length && isWs(cur[cur.length - 1])) cur.pop();
    if (cur.length) lines.push(cur.join(''));
  }
  return lines;
}
function isWs(s: string | undefined): boolean {
  return s !== undefined && s.length > 0 && Array.from(s).every(isPyWs);
}

export { isDict };
