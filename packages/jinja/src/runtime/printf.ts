// Python's `str % args` (printf-style) formatting.

import { bigDecimal } from './bigint.js';
import { LimitExceededError, pyError } from '../errors.js';
import { escapeHtml } from './escape.js';
import { pyRepr, pyStr } from './repr.js';
import type { RenderState } from './state.js';
import { Markup, MISSING, PyFloat, Undefined, dictGet, isDict, isTuple, typeName } from './values.js';
import { expo, fixed, fixedNumber, general, nonFinite } from './numfmt.js';

const SPEC = /%(?:\(([^)]*)\))?([#0\- +]*)(\*|\d+)?(?:\.(\*|\d*))?[hlL]?([diouxXeEfFgGcrsa%])?/g;

interface Spec {
  lit: string; // literal text before the specifier
  key: string | undefined;
  flags: string;
  width: string | undefined;
  prec: string | undefined;
  type: string | undefined;
  /** Precision of a bare `%f`/`%.Nf` (no key, flags or width), else -1: formatted by fixedNumber. */
  fastF: number;
}
interface Parsed {
  specs: Spec[];
  tail: string;
}

// Format strings are few and reused across renders: parse each once.
const cache = new Map<string, Parsed>();
const CACHE_MAX = 500;

function parse(s: string): Parsed {
  let p = cache.get(s);
  if (p) return p;
  const specs: Spec[] = [];
  let last = 0;
  SPEC.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = SPEC.exec(s))) {
    const [, key, flags, width, prec, type] = m;
    const bareF = type === 'f' && key === undefined && !flags && width === undefined && prec !== '*';
    const fastF = bareF ? (prec === undefined ? 6 : prec === '' ? 0 : Number(prec)) : -1;
    specs.push({ lit: s.slice(last, m.index), key, flags, width, prec, type, fastF: fastF <= 100 ? fastF : -1 });
    last = SPEC.lastIndex;
  }
  p = { specs, tail: s.slice(last) };
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(s, p);
  return p;
}

/** `fmt % argv`; `argvIsTuple` lets callers pass an argument array without tagging it. */
export function printfFormat(r: RenderState, fmt: string | Markup, argv: unknown, argvIsTuple = false): string | Markup {
  const isMarkup = fmt instanceof Markup;
  return formatParsed(r, parse(isMarkup ? fmt.s : fmt), isMarkup, argv, argvIsTuple);
}

/** A constant format string parsed ahead: `(r, args) => fmt % tuple(args)`. */
export function compilePrintf(fmt: string): (r: RenderState, args: unknown[]) => string {
  const parsed = parse(fmt);
  return (r, args) => formatParsed(r, parsed, false, args, true) as string;
}

/** A constant format string applied to one argument: `(r, x) => fmt % (x,)`. */
export function compilePrintf1(fmt: string): (r: RenderState, x: unknown) => string {
  const parsed = parse(fmt);
  const sp = parsed.specs.length === 1 ? parsed.specs[0] : null;
  if (sp && sp.fastF >= 0) {
    // one bare '%.Nf': the formatting loop reduced to its hot path
    const { lit, fastF } = sp;
    const tail = parsed.tail;
    return (r, x) => {
      const n = typeof x === 'number' ? x : x instanceof PyFloat ? x.v : NaN;
      if (n !== n) return formatParsed(r, parsed, false, [x], true) as string;
      const body = fixedNumber(n, fastF);
      r.checkSize(lit.length + body.length);
      return lit + body + tail;
    };
  }
  return (r, x) => formatParsed(r, parsed, false, [x], true) as string;
}

function formatParsed(r: RenderState, parsed: Parsed, isMarkup: boolean, argv: unknown, argvIsTuple: boolean): string | Markup {
  const tuple = argvIsTuple || isTuple(argv);
  const args: unknown[] = tuple ? (argv as unknown[]) : [argv];
  const mapping = !tuple && isDict(argv) ? argv : null;
  let ai = 0;
  let out = '';
  for (const sp of parsed.specs) {
    out += sp.lit;
    if (sp.fastF >= 0 && ai < args.length) {
      // hot path: '%.1f' % number (same text as convert() below)
      const v = args[ai];
      const x = typeof v === 'number' ? v : v instanceof PyFloat ? v.v : NaN;
      if (x === x) {
        ai++;
        const body = fixedNumber(x, sp.fastF);
        r.checkSize(out.length + body.length);
        out += body;
        continue;
      }
    }
    const { key, flags, width: widthS, prec: precS, type } = sp;
    if (type === undefined) throw pyError('ValueError', `incomplete format`);
    if (type === '%' && key === undefined && !flags && widthS === undefined && precS === undefined) {
      out += '%';
      continue;
    }
    let value: unknown;
    let width = 0;
    let prec: number | null = null;
    if (widthS === '*') width = Number(args[ai >= args.length ? notEnough() : ai++]);
    else if (widthS) width = Number(widthS);
    if (precS === '*') prec = Number(args[ai >= args.length ? notEnough() : ai++]);
    else if (precS !== undefined) prec = precS === '' ? 0 : Number(precS);
    if (key !== undefined) {
      if (!mapping) throw pyError('TypeError', 'format requires a mapping');
      const v = dictGet(mapping, key);
      if (v === MISSING) throw pyError('KeyError', `'${key}'`);
      value = v;
    } else if (type === '%') {
      value = null;
    } else value = args[ai >= args.length ? notEnough() : ai++];
    let left = flags.includes('-');
    if (width < 0) {
      left = true;
      width = -width;
    }
    // padding and numeric precision are built before the result's size is checked: bound them first
    if (width > 0) r.checkSize(width);
    if (prec !== null && prec > 0 && type !== 's' && type !== 'r' && type !== 'a') r.checkSize(prec);
    let body = convert(value, type, flags, prec);
    if (isMarkup && (type === 's' || type === 'r' || type === 'a') && !(value instanceof Markup)) body = escapeHtml(body);
    if (body.length < width) {
      const numeric = 'diouxXeEfFgG'.includes(type);
      if (left) body = body + ' '.repeat(width - body.length);
      else if (flags.includes('0') && numeric && !/^-?[a-z]/i.test(body.replace(/^[+ -]/, ''))) {
        const signMatch = /^([+ -]|0[xXob]|[+ -]0[xXob])?/.exec(body)!;
        const pre = signMatch[0] ?? '';
        body = pre + '0'.repeat(width - body.length) + body.slice(pre.length);
      } else body = ' '.repeat(width - body.length) + body;
    }
    r.checkSize(out.length + body.length);
    out += body;
  }
  out += parsed.tail;
  // CPython skips this check for any non-tuple argument with __getitem__ (dicts and lists)
  if (!mapping && !(!tuple && Array.isArray(argv)) && ai < args.length)
    throw pyError('TypeError', 'not all arguments converted during string formatting');
  return isMarkup ? new Markup(out) : out;
}

function notEnough(): never {
  throw pyError('TypeError', 'not enough arguments for format string');
}

function numArg(v: unknown, type: string): number | bigint {
  if (typeof v === 'number' || typeof v === 'bigint') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (v instanceof PyFloat) return v.v;
  if (v instanceof Undefined) v.fail();
  const need = 'diouxXc'.includes(type) ? (type === 'd' || type === 'i' || type === 'u' ? 'a real number' : 'an integer') : 'a real number';
  throw pyError('TypeError', `%${type} format: ${need} is required, not ${typeName(v)}`);
}

function signed(body: string, negative: boolean, flags: string): string {
  if (negative) return '-' + body;
  if (flags.includes('+')) return '+' + body;
  if (flags.includes(' ')) return ' ' + body;
  return body;
}

function convert(v: unknown, type: string, flags: string, prec: number | null): string {
  const alt = flags.includes('#');
  switch (type) {
    case 's': {
      const s = pyStr(v);
      return prec !== null ? Array.from(s).slice(0, prec).join('') : s;
    }
    case 'r':
    case 'a': {
      let s = pyRepr(v);
      if (type === 'a') s = s.replace(/[^\x00-\x7f]/gu, (c) => asciiEscape(c));
      return prec !== null ? s.slice(0, prec) : s;
    }
    case '%':
      return '%';
    case 'c': {
      if (typeof v === 'string' || v instanceof Markup) {
        const s = typeof v === 'string' ? v : v.s;
        if (Array.from(s).length !== 1) throw pyError('TypeError', '%c requires int or char');
        return s;
      }
      if (v instanceof PyFloat || (typeof v === 'number' && !Number.isInteger(v))) throw pyError('TypeError', '%c requires int or char');
      const n = numArg(v, 'c');
      if (Number(n) < 0 || Number(n) > 0x10ffff) throw new LimitExceededError('range', '%c arg not in range(0x110000)');
      return String.fromCodePoint(Number(n));
    }
    case 'd':
    case 'i':
    case 'u': {
      let n = numArg(v, type);
      if (typeof n === 'number') {
        if (!Number.isFinite(n)) throw pyError('OverflowError', 'cannot convert float infinity to integer');
        n = Math.trunc(n);
      }
      const neg = n < 0;
      let digits = typeof n === 'number' && Number.isSafeInteger(n) ? String(neg ? -n : n) : bigDecimal(neg ? -BigInt(n) : BigInt(n));
      if (prec !== null && digits.length < prec) digits = '0'.repeat(prec - digits.length) + digits;
      return signed(digits, neg, flags);
    }
    case 'o':
    case 'x':
    case 'X': {
      if (v instanceof PyFloat || (typeof v === 'number' && !Number.isInteger(v)))
        throw pyError('TypeError', `%${type} format: an integer is required, not float`);
      const n = numArg(v, type);
      const b = BigInt(n);
      const neg = b < 0n;
      let digits = (neg ? -b : b).toString(type === 'o' ? 8 : 16);
      if (type === 'X') digits = digits.toUpperCase();
      if (prec !== null && digits.length < prec) digits = '0'.repeat(prec - digits.length) + digits;
      if (alt) digits = (type === 'o' ? '0o' : type === 'x' ? '0x' : '0X') + digits;
      return signed(digits, neg, flags);
    }
    default: {
      const n = Number(numArg(v, type));
      const p = prec ?? 6;
      let body: string;
      const neg = n < 0 || Object.is(n, -0);
      const a = Math.abs(n);
      if (!Number.isFinite(n)) body = nonFinite(a);
      else if (type === 'f' || type === 'F') body = fixed(a, p) + (alt && p === 0 ? '.' : '');
      else if (type === 'e' || type === 'E') body = expo(a, p, type === 'E', alt);
      else body = general(a, p, type === 'G', alt);
      if (type === 'F' || type === 'E' || type === 'G') body = body.toUpperCase();
      return signed(body, neg && !Number.isNaN(n), flags);
    }
  }
}

function asciiEscape(c: string): string {
  const cp = c.codePointAt(0)!;
  if (cp <= 0xff) return '\\x' + cp.toString(16).padStart(2, '0');
  if (cp <= 0xffff) return '\\u' + cp.toString(16).padStart(4, '0');
  return '\\U' + cp.toString(16).padStart(8, '0');
}
