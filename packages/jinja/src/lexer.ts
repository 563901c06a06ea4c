// Turns template source into tokens, applying Jinja2's whitespace control
// (`-`/`+` markers, trim_blocks, lstrip_blocks) and newline normalisation.

import { TemplateSyntaxError } from './errors.js';
import { MAX_INT_BITS, MAX_STR_DIGITS, tooManyDigits } from './runtime/bigint.js';

export type TokType =
  | 'data'
  | 'var_begin'
  | 'var_end'
  | 'block_begin'
  | 'block_end'
  | 'name'
  | 'string'
  | 'int'
  | 'float'
  | 'op'
  | 'eof';

export interface Token {
  t: TokType;
  v: any;
  line: number;
}

export interface LexOptions {
  trimBlocks: boolean;
  lstripBlocks: boolean;
  keepTrailingNewline: boolean;
}

const TAG_START = /\{([{%#])/g;
const RAW_BEGIN = /([-+]?)\s*raw\s*([-+]?)%\}/y;
const RAW_END = /\{%([-+]?)\s*endraw\s*([-+]?)%\}/g;
const WS = /\s/;
const NAME = /[a-zA-Z_\u00c0-\uffff][a-zA-Z0-9_\u00c0-\uffff]*/y;
const INT_PREFIXED = /0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+/y;
const DEC = /\d(?:_?\d)*(\.\d(?:_?\d)*)?([eE][+-]?\d(?:_?\d)*)?/y;
const OPS3 = new Set<string>();
const OPS2 = new Set(['//', '**', '==', '!=', '<=', '>=']);
const OPS1 = new Set(['+', '-', '*', '/', '%', '~', '[', ']', '(', ')', '{', '}', '<', '>', '=', '.', ':', '|', ',', ';']);
const CLOSERS: Record<string, string> = { ')': '(', ']': '[', '}': '{' };
void OPS3;

export function tokenize(source: string, opts: LexOptions): Token[] {
  let src = source.replace(/\r\n|\r/g, '\n');
  if (!opts.keepTrailingNewline && src.endsWith('\n')) src = src.slice(0, -1);
  const toks: Token[] = [];
  let pos = 0;
  let line = 1;
  let lineStarting = true;
  const n = src.length;

  const countLines = (from: number, to: number) => {
    for (let i = from; i < to; i++) if (src.charCodeAt(i) === 10) line++;
  };
  const fail = (msg: string, at: number): never => {
    throw new TemplateSyntaxError(msg, line);
  };
  const emitData = (text: string, startLine: number) => {
    if (text.length) toks.push({ t: 'data', v: text, line: startLine });
  };

  while (pos < n) {
    TAG_START.lastIndex = pos;
    const m = TAG_START.exec(src);
    if (!m) {
      emitData(src.slice(pos), line);
      countLines(pos, n);
      break;
    }
    const kind = m[1];
    const tagStart = m.index;
    let after = tagStart + 2;
    const marker = src[after];
    let text = src.slice(pos, tagStart);
    const dataLine = line;
    if (marker === '-') {
      text = text.replace(/\s+$/, '');
    } else if (marker !== '+' && opts.lstripBlocks && kind !== '{') {
      const lpos = text.lastIndexOf('\n') + 1;
      if ((lpos > 0 || lineStarting) && /^[^\S\n]+$/.test(text.slice(lpos))) text = text.slice(0, lpos);
    }
    emitData(text, dataLine);
    countLines(pos, tagStart);
    if (marker === '-' || marker === '+') after++;

    if (kind === '#') {
      const end = src.indexOf('#}', after);
      if (end < 0) fail('Missing end of comment tag', tagStart);
      countLines(after, end + 2);
      pos = end + 2;
      const endMarker = src[end - 1];
      if (endMarker === '-' && end - 1 >= after) pos = skipWs(src, pos);
      else if (endMarker !== '+' && opts.trimBlocks && src[pos] === '\n') pos++;
      countLines(end + 2, pos);
      lineStarting = src[pos - 1] === '\n';
      continue;
    }

    if (kind === '%') {
      RAW_BEGIN.lastIndex = after - (marker === '-' || marker === '+' ? 1 : 0);
      const rm = RAW_BEGIN.exec(src);
      if (rm && (rm[1] === '' || rm[1] === marker)) {
        let bodyStart = RAW_BEGIN.lastIndex;
        countLines(tagStart, bodyStart);
        if (rm[2] === '-') bodyStart = skipWs(src, bodyStart);
        else if (rm[2] !== '+' && opts.trimBlocks && src[bodyStart] === '\n') bodyStart++;
        RAW_END.lastIndex = bodyStart;
        const em = RAW_END.exec(src);
        if (!em) fail('Missing end of raw directive', tagStart);
        let body = src.slice(bodyStart, em!.index);
        if (em![1] === '-') body = body.replace(/\s+$/, '');
        else if (em![1] !== '+' && opts.lstripBlocks) {
          const lpos = body.lastIndexOf('\n') + 1;
          if (/^[^\S\n]+$/.test(body.slice(lpos))) body = body.slice(0, lpos);
        }
        const bodyLine = line;
        countLines(bodyStart, em!.index);
        emitData(body, bodyLine);
        pos = RAW_END.lastIndex;
        countLines(em!.index, pos);
        const p0 = pos;
        if (em![2] === '-') pos = skipWs(src, pos);
        else if (em![2] !== '+' && opts.trimBlocks && src[pos] === '\n') pos++;
        countLines(p0, pos);
        lineStarting = src[pos - 1] === '\n';
        continue;
      }
    }

    // expression tokens inside {{ }} / {% %}
    const isBlock = kind === '%';
    toks.push({ t: isBlock ? 'block_begin' : 'var_begin', v: null, line });
    let p = after;
    const stack: string[] = [];
    let closed = false;
    let prevDot = false;
    while (p < n) {
      // skip whitespace
      while (p < n && WS.test(src[p])) {
        if (src.charCodeAt(p) === 10) line++;
        p++;
      }
      if (p >= n) break;
      const c = src[p];
      if (stack.length === 0) {
        if (isBlock) {
          if (src.startsWith('-%}', p)) {
            p = skipWsCount(p + 3);
            closed = true;
            break;
          }
          if (src.startsWith('+%}', p)) {
            p += 3;
            closed = true;
            break;
          }
          if (src.startsWith('%}', p)) {
            p += 2;
            if (opts.trimBlocks && src[p] === '\n') {
              p++;
              line++;
            }
            closed = true;
            break;
          }
        } else {
          if (src.startsWith('-}}', p)) {
            p = skipWsCount(p + 3);
            closed = true;
            break;
          }
          if (src.startsWith('}}', p)) {
            p += 2;
            closed = true;
            break;
          }
        }
      }
      const tokLine = line;
      if (c === '"' || c === "'") {
        let q = p + 1;
        while (q < n && src[q] !== c) {
          if (src[q] === '\\') q++;
          q++;
        }
        if (q >= n) fail(`unexpected char '${c}' at ${p}`, p);
        const raw = src.slice(p + 1, q);
        countLines(p, q);
        toks.push({ t: 'string', v: decodeEscapes(raw, tokLine), line: tokLine });
        p = q + 1;
        prevDot = false;
        continue;
      }
      if (c >= '0' && c <= '9') {
        INT_PREFIXED.lastIndex = p;
        let nm = INT_PREFIXED.exec(src);
        if (nm) {
          const txt = nm[0].replace(/_/g, '');
          if ((txt.length - 2) * 4 > MAX_INT_BITS) throw new TemplateSyntaxError(`integer literal too large (${txt.length - 2} digits)`, line);
          const big = BigInt(txt);
          toks.push({ t: 'int', v: normInt(big), line });
          p += nm[0].length;
          prevDot = false;
          continue;
        }
        DEC.lastIndex = p;
        nm = DEC.exec(src)!;
        let txt = nm[0];
        const isFloat = !prevDot && (nm[1] !== undefined || nm[2] !== undefined);
        if (!isFloat) {
          // after a dot (`foo.0.1`) only the integer part belongs to this token
          txt = /^\d(?:_?\d)*/.exec(txt)![0];
          const digits = txt.replace(/_/g, '');
          // Jinja2 parses literals with int(…, 0): Python 3.11+ refuses more than 4,300 decimal digits
          if (digits.length > MAX_STR_DIGITS) throw new TemplateSyntaxError(tooManyDigits(digits.length).message, line);
          toks.push({ t: 'int', v: normInt(BigInt(digits)), line });
        } else {
          toks.push({ t: 'float', v: Number(txt.replace(/_/g, '')), line });
        }
        p += txt.length;
        prevDot = false;
        continue;
      }
      NAME.lastIndex = p;
      const nmm = NAME.exec(src);
      if (nmm) {
        toks.push({ t: 'name', v: nmm[0], line });
        p += nmm[0].length;
        prevDot = false;
        continue;
      }
      const two = src.substr(p, 2);
      let op: string | null = null;
      if (OPS2.has(two)) op = two;
      else if (OPS1.has(c)) op = c;
      if (op === null) fail(`unexpected char ${JSON.stringify(c).replace(/^"|"$/g, "'")} at ${p}`, p);
      if (op === '(' || op === '[' || op === '{') stack.push(op);
      else if (op === ')' || op === ']' || op === '}') {
        if (stack.length === 0) fail(`unexpected '${op}'`, p);
        const open = stack.pop();
        if (open !== CLOSERS[op!]) fail(`unexpected '${op}', expected '${open === '(' ? ')' : open === '[' ? ']' : '}'}'`, p);
      }
      toks.push({ t: 'op', v: op, line });
      p += op!.length;
      prevDot = op === '.';
    }
    if (!closed) {
      toks.push({ t: 'eof', v: null, line });
      return toks;
    }
    toks.push({ t: isBlock ? 'block_end' : 'var_end', v: null, line });
    lineStarting = src[p - 1] === '\n';
    pos = p;
  }
  // Jinja2 reports end-of-template errors on the line where the last token started
  toks.push({ t: 'eof', v: null, line: toks.length ? toks[toks.length - 1].line : 1 });
  return toks;

  function skipWsCount(q: number): number {
    while (q < n && WS.test(src[q])) {
      if (src.charCodeAt(q) === 10) line++;
      q++;
    }
    return q;
  }
}

function skipWs(src: string, q: number): number {
  while (q < src.length && WS.test(src[q])) q++;
  return q;
}

function normInt(b: bigint): number | bigint {
  return b <= BigInt(Number.MAX_SAFE_INTEGER) && b >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(b) : b;
}

const SIMPLE_ESC: Record<string, string> = {
  '\\': '\\',
  "'": "'",
  '"': '"',
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\n': '',
};

/** Python's unicode-escape decoding of string literal bodies. */
export function decodeEscapes(raw: string, line: number): string {
  if (!raw.includes('\\')) return raw;
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = raw[++i];
    if (e === undefined) throw new TemplateSyntaxError('(unicode error) \\ at end of string', line);
    if (e in SIMPLE_ESC) {
      out += SIMPLE_ESC[e];
    } else if (e >= '0' && e <= '7') {
      let j = i;
      while (j < i + 3 && raw[j] >= '0' && raw[j] <= '7') j++;
      out += String.fromCodePoint(parseInt(raw.slice(i, j), 8));
      i = j - 1;
    } else if (e === 'N') {
      // \N{NAME} needs the Unicode name database; only the malformed form is diagnosed precisely
      if (raw[i + 1] !== '{' || !raw.includes('}', i)) throw new TemplateSyntaxError('malformed \\N character escape', line);
      throw new TemplateSyntaxError('\\N{...} named character escapes are not supported', line);
    } else if (e === 'x' || e === 'u' || e === 'U') {
      const len = e === 'x' ? 2 : e === 'u' ? 4 : 8;
      const hex = raw.slice(i + 1, i + 1 + len);
      if (hex.length < len || !/^[0-9a-fA-F]+$/.test(hex))
        throw new TemplateSyntaxError(`(unicode error) truncated \\${e}${'X'.repeat(len)} escape`, line);
      const cp = parseInt(hex, 16);
      if (cp > 0x10ffff) throw new TemplateSyntaxError('(unicode error) illegal Unicode character', line);
      out += String.fromCodePoint(cp);
      i += len;
    } else {
      out += '\\' + e;
    }
  }
  return out;
}
