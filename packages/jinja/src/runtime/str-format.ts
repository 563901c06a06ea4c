// str.format / format_map with the format-spec mini-language. Field lookups
// (`{0.attr}`, `{0[key]}`) go through the sandbox's getattr/getitem, so
// `'{0.__class__}'.format(x)` is refused exactly like in a template.

import { bigDecimal } from './bigint.js';
import { LimitExceededError, pyError } from '../errors.js';
import { pyRepr, pyStr } from './repr.js';
import { Markup, MISSING, PyFloat, Undefined, dictGet, typeName, type Dict, type KwMap } from './values.js';
import { expo, fixed, general, group, nonFinite, reprLike } from './numfmt.js';

export interface FieldAccess {
  getattr(obj: unknown, name: string): unknown;
  getitem(obj: unknown, key: unknown): unknown;
}

interface Numbering {
  auto: number;
  manual: boolean;
}

export function strFormat(
  fmt: string,
  args: unknown[],
  kw: KwMap | Dict,
  access: FieldAccess,
  depth = 0,
  num: Numbering = { auto: 0, manual: false },
): string {
  if (depth > 2) throw pyError('ValueError', 'Max string recursion exceeded');
  let out = '';
  let i = 0;
  const n = fmt.length;
  while (i < n) {
    const c = fmt[i];
    if (c === '}') {
      if (fmt[i + 1] === '}') {
        out += '}';
        i += 2;
        continue;
      }
      throw pyError('ValueError', "Single '}' encountered in format string");
    }
    if (c !== '{') {
      const next = fmt.slice(i).search(/[{}]/);
      const end = next < 0 ? n : i + next;
      out += fmt.slice(i, end);
      i = end;
      continue;
    }
    if (fmt[i + 1] === '{') {
      out += '{';
      i += 2;
      continue;
    }
    // find the matching close brace, allowing one level of nested {} in the spec
    let j = i + 1;
    let level = 1;
    while (j < n && level > 0) {
      if (fmt[j] === '{') level++;
      else if (fmt[j] === '}') level--;
      if (level > 0) j++;
    }
    if (j >= n) throw pyError('ValueError', "expected '}' before end of string");
    const field = fmt.slice(i + 1, j);
    i = j + 1;
    // split field_name ! conversion : spec (spec may contain nested fields)
    let nameEnd = field.length;
    for (let k = 0, br = 0; k < field.length; k++) {
      const ch = field[k];
      if (ch === '[') br++;
      else if (ch === ']') br--;
      else if (br === 0 && (ch === '!' || ch === ':')) {
        nameEnd = k;
        break;
      }
    }
    const fieldName = field.slice(0, nameEnd);
    let rest = field.slice(nameEnd);
    let conv: string | null = null;
    if (rest.startsWith('!')) {
      conv = rest[1] ?? '';
      rest = rest.slice(2);
      if (!'rsa'.includes(conv) || conv === '') throw pyError('ValueError', `Unknown conversion specifier ${conv}`);
      if (rest !== '' && !rest.startsWith(':')) throw pyError('ValueError', "expected ':' after conversion specifier");
    }
    let spec = rest.startsWith(':') ? rest.slice(1) : '';

    // resolve the field name
    const m = /^([^.[]*)(.*)$/s.exec(fieldName)!;
    let first = m[1];
    let value: unknown;
    if (first === '') {
      if (num.manual) throw pyError('ValueError', 'cannot switch from manual field specification to automatic field numbering');
      first = String(num.auto++);
    } else if (/^\d+$/.test(first)) {
      if (num.auto > 0) throw pyError('ValueError', 'cannot switch from automatic field numbering to manual field specification');
      num.manual = true;
    }
    if (/^\d+$/.test(first)) {
      const idx = Number(first);
      if (idx >= args.length) throw pyError('IndexError', `Replacement index ${idx} out of range for positional args tuple`);
      value = args[idx];
    } else {
      const v = kw instanceof Map ? (kw.has(first) ? kw.get(first) : MISSING) : kw ? dictGet(kw as Dict, first) : MISSING;
      if (v === MISSING) throw pyError('KeyError', `'${first}'`);
      value = v;
    }
    let path = m[2];
    while (path.length) {
      const am = /^\.([^.[]+)/.exec(path);
      if (am) {
        value = access.getattr(value, am[1]);
        path = path.slice(am[0].length);
        continue;
      }
      const im = /^\[([^\]]+)\]/.exec(path);
      if (im) {
        const key = /^\d+$/.test(im[1]) ? Number(im[1]) : im[1];
        value = access.getitem(value, key);
        path = path.slice(im[0].length);
        continue;
      }
      throw pyError('ValueError', 'Only \'.\' or \'[\' may follow \']\' in format field specifier');
    }
    if (conv === 'r' || conv === 'a') value = pyRepr(value);
    else if (conv === 's') value = pyStr(value);
    if (spec.includes('{')) spec = strFormat(spec, args, kw, access, depth + 1, num);
    out += formatValue(value, spec);
  }
  return out;
}

/** Largest width/precision of one format field (the engine's default largest value). */
const MAX_FIELD = 10_000_000;

const SPEC_RE = /^(?:([\s\S])?([<>=^]))?([+\- ])?(z)?(#)?(0)?(\d+)?([,_])?(?:\.(\d+))?([bcdeEfFgGnosxX%])?$/;

/** format(value, spec) */
export function formatValue(v: unknown, spec: string): string {
  if (spec === '') {
    return pyStr(v);
  }
  const m = SPEC_RE.exec(spec);
  if (!m) throw pyError('ValueError', 'Invalid format specifier');
  let [, fill, align, sign, , alt, zero, widthS, grouping, precS, type] = m;
  const width = widthS ? Number(widthS) : 0;
  const prec = precS !== undefined ? Number(precS) : null;
  // padding and numeric precision are built before the result's size is checked: bound them first
  if (width > MAX_FIELD || (prec !== null && prec > MAX_FIELD && type !== 's' && type !== undefined))
    throw new LimitExceededError('size', `format field of ${Math.max(width, prec ?? 0)} characters exceeds the limit of ${MAX_FIELD}`);
  if (zero) {
    // '0' means fill with zeros (unless a fill is given) and sign-aware padding (unless aligned)
    if (!align) align = '=';
    fill = fill ?? '0';
  }
  fill = fill ?? ' ';
  if (grouping) {
    const t = type ?? '';
    const ok = grouping === ',' ? 'deEfFgG%'.includes(t) || t === '' : 'bdoxXeEfFgG%'.includes(t) || t === '';
    if (!ok) throw pyError('ValueError', `Cannot specify '${grouping}' with '${t}'.`);
  }
  if (v instanceof Undefined) throw pyError('TypeError', 'unsupported format string passed to Undefined.__format__');
  if (typeof v === 'string' || v instanceof Markup) {
    if (type && type !== 's') throw pyError('ValueError', `Unknown format code '${type}' for object of type 'str'`);
    if (sign) throw pyError('ValueError', 'Sign not allowed in string format specifier');
    if (alt) throw pyError('ValueError', 'Alternate form (#) not allowed in string format specifier');
    if (align === '=') throw pyError('ValueError', "'=' alignment not allowed in string format specifier");
    let s = typeof v === 'string' ? v : v.s;
    if (prec !== null) s = Array.from(s).slice(0, prec).join('');
    return pad(s, '', fill, align ?? '<', width);
  }
  let isInt = typeof v === 'boolean' || typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v));
  const isNumber = isInt || typeof v === 'number' || v instanceof PyFloat;
  if (!isNumber) throw pyError('TypeError', `unsupported format string passed to ${typeName(v)}.__format__`);
  let body: string;
  let negative: boolean;
  let prefix = '';
  if (isInt && type && 'eEfFgG%'.includes(type)) isInt = false;
  if (isInt) {
    const b = typeof v === 'boolean' ? (v ? 1n : 0n) : BigInt(v as number | bigint);
    if (prec !== null) throw pyError('ValueError', 'Precision not allowed in integer format specifier');
    negative = b < 0n;
    const a = negative ? -b : b;
    switch (type ?? 'd') {
      case 'b':
        body = a.toString(2);
        if (alt) prefix = '0b';
        break;
      case 'o':
        body = a.toString(8);
        if (alt) prefix = '0o';
        break;
      case 'x':
        body = a.toString(16);
        if (alt) prefix = '0x';
        break;
      case 'X':
        body = a.toString(16).toUpperCase();
        if (alt) prefix = '0X';
        break;
      case 'c':
        if (sign) throw pyError('ValueError', "Sign not allowed with integer format specifier 'c'");
        if (alt) throw pyError('ValueError', "Alternate form (#) not allowed with integer format specifier 'c'");
        body = String.fromCodePoint(Number(a));
        break;
      case 'd':
      case 'n':
        body = bigDecimal(a);
        break;
      default:
        throw pyError('ValueError', `Unknown format code '${type}' for object of type 'int'`);
    }
    if (grouping) body = group(body, grouping, 'bxXo'.includes(type ?? 'd') ? 4 : 3);
  } else {
    const x = v instanceof PyFloat ? v.v : Number(v);
    if (type && !'eEfFgGn%'.includes(type)) throw pyError('ValueError', `Unknown format code '${type}' for object of type 'float'`);
    negative = x < 0 || Object.is(x, -0);
    const a = Math.abs(x);
    const p = prec ?? 6;
    if (!Number.isFinite(a)) body = nonFinite(a);
    else
      switch (type) {
        case 'f':
        case 'F':
          body = fixed(a, p);
          if (alt && p === 0) body += '.';
          break;
        case 'e':
        case 'E':
          body = expo(a, p, type === 'E', !!alt);
          break;
        case 'g':
        case 'G':
        case 'n':
          body = general(a, p, type === 'G', !!alt);
          if (alt && !/[.eEn]/.test(body.replace(/inf|nan/i, 'n'))) body += '.';
          else if (alt && !body.includes('.') && /[eE]/.test(body)) body = body.replace(/([eE])/, '.$1');
          break;
        case '%':
          body = fixed(a * 100, p) + (alt && p === 0 ? '.' : '') + '%';
          break;
        default:
          body = prec === null ? reprLike(a, null) : reprLike(a, prec, !!alt);
      }
    if (type === 'F' || type === 'E' || type === 'G') body = body.toUpperCase();
    if (grouping && Number.isFinite(a)) {
      const dm = /^(\d+)(.*)$/s.exec(body);
      if (dm) body = group(dm[1], grouping) + dm[2];
    }
    if (Number.isNaN(x)) negative = false;
  }
  const signStr = negative ? '-' : sign === '+' ? '+' : sign === ' ' ? ' ' : '';
  if (grouping && fill === '0' && align === '=' && /^\d/.test(body)) {
    // zero padding is grouped too: '{:012,f}'.format(1e-5) == '0,000.000010'
    const m = /^([\d,_]+)(.*)$/s.exec(body)!;
    let digits = m[1].replace(/[,_]/g, '');
    const every = 'bxXo'.includes(type ?? 'd') ? 4 : 3;
    let grouped = group(digits, grouping, every);
    while (signStr.length + prefix.length + grouped.length + m[2].length < width) {
      digits = '0' + digits;
      grouped = group(digits, grouping, every);
    }
    body = grouped + m[2];
  }
  return pad(body, signStr + prefix, fill, align ?? '>', width);
}

function pad(body: string, sign: string, fill: string, align: string, width: number): string {
  const len = Array.from(body).length + sign.length;
  if (len >= width) return sign + body;
  const padN = width - len;
  switch (align) {
    case '<':
      return sign + body + fill.repeat(padN);
    case '^': {
      const l = Math.floor(padN / 2);
      return fill.repeat(l) + sign + body + fill.repeat(padN - l);
    }
    case '=':
      return sign + fill.repeat(padN) + body;
    default:
      return fill.repeat(padN) + sign + body;
  }
}
