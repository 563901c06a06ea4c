import { RE2JS } from 're2js';

/**
 * Python `re` patterns (as NetBox's `regex` condition uses them: `re.match`, anchored at the start)
 * on RE2, a linear-time engine: no pattern can backtrack catastrophically. Syntax RE2 cannot run
 * (backreferences, lookarounds, atomic groups, possessive quantifiers, conditionals, verbose mode)
 * is refused when the rule is saved, with a message naming the construct. Python's Unicode classes
 * (`\d`, `\w`, `\s` for str patterns) and `$` (end, or before a final newline) are translated.
 */

export class RegexSyntaxError extends Error {}
export class RegexTooExpensive extends Error {}

/** Matching costs at most text length × program size steps (RE2's bound); past this a match is refused. */
export const MAX_MATCH_STEPS = 4_000_000;
const MAX_PATTERN = 1000;

const UNSUPPORTED = 'is not supported: conditions match in linear time (RE2), which cannot run it';

// Python's str classes (re.UNICODE): \d = Unicode decimal digits, \w = alphanumerics and _, \s = str.isspace()
const W = '\\p{L}\\p{N}_';
const S = '\\t\\n\\x{0b}\\f\\r\\x{1c}-\\x{1f}\\x{85}\\p{Z}';

export class PyRegex {
  readonly programSize: number;
  constructor(
    readonly source: string,
    private readonly re: RE2JS,
  ) {
    this.programSize = Math.max(1, re.programSize());
  }

  /** re.match(pattern, text) is not None. Throws RegexTooExpensive past MAX_MATCH_STEPS. */
  matchStart(text: string): boolean {
    if (text.length * this.programSize > MAX_MATCH_STEPS) {
      throw new RegexTooExpensive(
        `regular expression over ${text.length} characters exceeds the matching budget (${MAX_MATCH_STEPS} steps; its program has ${this.programSize} instructions)`,
      );
    }
    return this.re.matcher(text).lookingAt();
  }
}

/** Translates and compiles a Python pattern; throws RegexSyntaxError with a clear message. */
export function compilePyRegex(pattern: string): PyRegex {
  if (pattern.length > MAX_PATTERN) throw new RegexSyntaxError(`Regular expression is too long (at most ${MAX_PATTERN} characters).`);
  const re2 = translate(pattern);
  try {
    return new PyRegex(pattern, RE2JS.compile(re2));
  } catch (err) {
    const msg = String((err as Error).message ?? err).replace(/^error parsing regexp: /, '');
    if (/invalid nested repetition operator: `(\*|\+|\?|\})\+`/.test(msg) || /nested repetition/.test(msg))
      throw new RegexSyntaxError(`Invalid regular expression: possessive quantifiers (${msg.split('`')[1] ?? '++'}) ${UNSUPPORTED}.`);
    if (/invalid repeat count/.test(msg)) throw new RegexSyntaxError(`Invalid regular expression: ${msg} (RE2 allows repeat counts up to 1000).`);
    throw new RegexSyntaxError(`Invalid regular expression: ${msg}`);
  }
}

function refuse(what: string): never {
  throw new RegexSyntaxError(`Invalid regular expression: ${what} ${UNSUPPORTED}.`);
}

function translate(p: string): string {
  let out = '';
  let i = 0;
  let multiline = false;
  // Python allows global flags only at the very start (3.11+)
  const lead = /^\(\?([aiLmsux]+)\)/.exec(p);
  if (lead) {
    const keep = flags(lead[1]!);
    if (keep.includes('m')) multiline = true;
    if (keep) out += `(?${keep})`;
    i = lead[0].length;
  }
  let inClass = false;
  let classStart = 0;
  while (i < p.length) {
    const c = p[i]!;
    if (c === '\\') {
      const [text, len] = escape(p, i, inClass);
      out += text;
      i += len;
      continue;
    }
    if (inClass) {
      if (c === '[' && p[i + 1] === ':') throw new RegexSyntaxError('Invalid regular expression: POSIX classes like [[:alpha:]] are not Python syntax.');
      if (c === ']' && i > classStart) inClass = false;
      out += c;
      i++;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += c;
      i++;
      if (p[i] === '^') (out += '^'), i++;
      // a ']' right after '[' or '[^' is a literal
      classStart = i;
      if (p[i] === ']') (out += '\\]'), i++;
      continue;
    }
    if (c === '(' && p[i + 1] === '?') {
      const rest = p.slice(i + 2);
      if (rest.startsWith('#')) {
        const end = p.indexOf(')', i);
        if (end < 0) throw new RegexSyntaxError('Invalid regular expression: missing ), unterminated comment.');
        i = end + 1;
        continue;
      }
      if (rest.startsWith('P<')) {
        out += '(?P<';
        i += 4;
        continue;
      }
      if (rest.startsWith('P=')) refuse('the backreference (?P=name)');
      if (rest.startsWith('=') || rest.startsWith('!')) refuse(`lookahead (?${rest[0]}…)`);
      if (rest.startsWith('<=') || rest.startsWith('<!')) refuse(`lookbehind (?${rest.slice(0, 2)}…)`);
      if (rest.startsWith('>')) refuse('the atomic group (?>…)');
      if (rest.startsWith('(')) refuse('the conditional group (?(…)…)');
      if (rest.startsWith(':')) {
        out += '(?:';
        i += 3;
        continue;
      }
      const scoped = /^([aiLmsux]*)(?:-([imsx]+))?:/.exec(rest);
      if (scoped && (scoped[1] || scoped[2])) {
        const on = flags(scoped[1]!);
        const off = scoped[2] ? flags(scoped[2]) : '';
        out += `(?${on}${off ? '-' + off : ''}:`;
        i += 2 + scoped[0].length;
        continue;
      }
      if (/^[aiLmsux]+\)/.test(rest)) throw new RegexSyntaxError('Invalid regular expression: global flags not at the start of the expression.');
      throw new RegexSyntaxError(`Invalid regular expression: unknown extension ?${rest.slice(0, 2)}.`);
    }
    if (c === '{') {
      // Python's {,n} is {0,n}; RE2 reads it as literal text
      const m = /^\{,(\d+)\}/.exec(p.slice(i));
      if (m) {
        out += `{0,${m[1]}}`;
        i += m[0].length;
        continue;
      }
    }
    if (c === '$' && !multiline) {
      // Python's $ also matches before a newline at the end of the text
      out += '(?:\\n?\\z)';
      i++;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}

/** Inline flags RE2 has (i, m, s); u is Python 3's default for str; a, L and x change what a pattern means. */
function flags(f: string): string {
  let keep = '';
  for (const ch of f) {
    if (ch === 'i' || ch === 'm' || ch === 's') keep += keep.includes(ch) ? '' : ch;
    else if (ch === 'x') refuse('verbose mode (?x)');
    else if (ch === 'a') refuse('ASCII-only matching (?a)');
    else if (ch === 'L') refuse('locale-dependent matching (?L)');
  }
  return keep;
}

function hex(cp: number): string {
  return `\\x{${cp.toString(16)}}`;
}

/** One escape sequence at p[i] ('\\'): its RE2 text and its length. */
function escape(p: string, i: number, inClass: boolean): [string, number] {
  const n = p[i + 1];
  if (n === undefined) throw new RegexSyntaxError('Invalid regular expression: bad escape (end of pattern).');
  if (n >= '0' && n <= '9') {
    // octal: \0, \0oo, or three octal digits; anything else outside a class is a backreference
    const oct = /^(?:0[0-7]{0,2}|[0-3][0-7]{2})/.exec(p.slice(i + 1));
    if (oct && (n === '0' || oct[0].length === 3)) return [hex(parseInt(oct[0], 8)), 1 + oct[0].length];
    if (inClass) throw new RegexSyntaxError(`Invalid regular expression: bad escape \\${n} in a character class.`);
    refuse(`the backreference \\${/^\d{1,2}/.exec(p.slice(i + 1))![0]}`);
  }
  switch (n) {
    case 'd':
      return ['\\p{Nd}', 2];
    case 'D':
      return [inClass ? '\\P{Nd}' : '\\P{Nd}', 2];
    case 'w':
      return [inClass ? W : `[${W}]`, 2];
    case 'W':
      return [inClass ? '\\W' : `[^${W}]`, 2];
    case 's':
      return [inClass ? S : `[${S}]`, 2];
    case 'S':
      return [inClass ? '\\S' : `[^${S}]`, 2];
    case 'Z':
      if (inClass) throw new RegexSyntaxError('Invalid regular expression: bad escape \\Z in a character class.');
      return ['\\z', 2];
    case 'A':
      if (inClass) throw new RegexSyntaxError('Invalid regular expression: bad escape \\A in a character class.');
      return ['\\A', 2];
    case 'u': {
      const m = /^[0-9a-fA-F]{4}/.exec(p.slice(i + 2));
      if (!m) throw new RegexSyntaxError(`Invalid regular expression: incomplete escape \\u${p.slice(i + 2, i + 6)}.`);
      return [hex(parseInt(m[0], 16)), 6];
    }
    case 'U': {
      const m = /^[0-9a-fA-F]{8}/.exec(p.slice(i + 2));
      if (!m || parseInt(m[0], 16) > 0x10ffff) throw new RegexSyntaxError(`Invalid regular expression: bad escape \\U${p.slice(i + 2, i + 10)}.`);
      return [hex(parseInt(m[0], 16)), 10];
    }
    case 'N':
      refuse('the named character escape \\N{…}');
  }
  if (/[a-zA-Z]/.test(n) && !'abfnrtvxbBpP'.includes(n)) throw new RegexSyntaxError(`Invalid regular expression: bad escape \\${n}.`);
  return [p.slice(i, i + 2), 2];
}
