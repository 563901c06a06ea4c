/**
 * Python's `json.dumps` with its defaults (separators ", " / ": ", ensure_ascii,
 * insertion order), so default webhook bodies and their signatures match
 * NetBox byte for byte. JSON.stringify differs on all three.
 *
 * JavaScript cannot tell `1` from `1.0`, so integral numbers print as Python
 * ints; `PyFloat`/`PyInt` carry the distinction when a document is read with
 * `parsePythonJson` (which keeps number lexemes and key order like json.load).
 */

/** A float that must print as Python prints floats even when integral (1.0, 1e+16). */
export class PyFloat {
  constructor(readonly value: number) {}
}
/** An int too large for a JS number; kept as its decimal digits. */
export class PyInt {
  constructor(readonly digits: string) {}
}
/** A dict whose key order must survive even for integer-like keys (JS objects reorder those). */
export class PyDict {
  constructor(readonly entries: Array<[string, unknown]>) {}
}

/** repr(float) as CPython prints it: shortest round-trip digits, exponent outside 1e-4..1e16. */
export function pythonFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const sign = x < 0 ? '-' : '';
  const [mant, expPart] = Math.abs(x).toExponential().split('e');
  const digits = mant.replace('.', '');
  const decpt = Number(expPart) + 1; // position of the decimal point relative to the digits
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) return `${sign}0.${'0'.repeat(-decpt)}${digits}`;
    if (decpt >= digits.length) return `${sign}${digits}${'0'.repeat(decpt - digits.length)}.0`;
    return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
  }
  const e = decpt - 1;
  const frac = digits.length > 1 ? `.${digits.slice(1)}` : '';
  return `${sign}${digits[0]}${frac}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
}

const SHORT_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };

/** A JSON string literal with ensure_ascii: everything outside ' '..'~' escaped per UTF-16 code unit. */
export function pythonJsonString(s: string): string {
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c <= 0x7e && c !== 0x22 && c !== 0x5c) continue;
    out += s.slice(start, i);
    const ch = s[i]!;
    out += SHORT_ESCAPES[ch] ?? '\\u' + c.toString(16).padStart(4, '0');
    start = i + 1;
  }
  return out + s.slice(start) + '"';
}

/**
 * A plain JS number as json.dumps(json.loads(JSON.stringify(n))) prints it: integers up to 1e21 in
 * digits (JSON.stringify's form, read back as a Python int), other values as Python floats, and
 * NaN/Infinity as null (what JSON.stringify makes of them).
 */
function dumpNumber(n: number): string {
  if (!Number.isFinite(n)) return 'null';
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return Object.is(n, -0) ? '0' : String(n);
  return pythonFloatRepr(n);
}

/**
 * The default webhook body (json.dumps of the event context) for a context stored as text. Contexts
 * are stored already in that form (so the body costs nothing to build at send time); rows stored
 * by earlier versions as JSON.stringify text are converted.
 */
export function defaultBody(contextText: string): string {
  return contextText.startsWith('{"event": ') ? contextText : pythonJsonDumps(parsePythonJson(contextText));
}

/** json.dumps(value), or json.dumps(value, indent=n) (then items end with ',' and nest on new lines). */
export function pythonJsonDumps(value: unknown, indent?: number): string {
  const parts: string[] = [];
  write(value, parts, new Set(), indent, 0);
  return parts.join('');
}

function write(v: unknown, out: string[], seen: Set<object>, indent?: number, level = 0): void {
  if (v === null || v === undefined) return void out.push('null');
  switch (typeof v) {
    case 'string':
      return void out.push(pythonJsonString(v));
    case 'number':
      return void out.push(dumpNumber(v));
    case 'boolean':
      return void out.push(v ? 'true' : 'false');
    case 'bigint':
      return void out.push(v.toString());
    case 'object':
      break;
    default:
      throw new TypeError(`Object of type ${typeof v} is not JSON serializable`);
  }
  if (v instanceof PyFloat) return void out.push(pythonFloatRepr(v.value));
  if (v instanceof PyInt) return void out.push(v.digits);
  if (v instanceof Date) return void out.push(pythonJsonString(v.toISOString()));
  if (seen.has(v as object)) throw new TypeError('Circular reference detected');
  seen.add(v as object);
  const nl = indent === undefined ? '' : '\n' + ' '.repeat(indent * (level + 1));
  const sep = indent === undefined ? ', ' : ',' + nl;
  const close = indent === undefined ? '' : '\n' + ' '.repeat(indent * level);
  if (Array.isArray(v)) {
    if (v.length === 0) out.push('[]');
    else {
      out.push('[', nl);
      v.forEach((item, i) => {
        if (i) out.push(sep);
        write(item, out, seen, indent, level + 1);
      });
      out.push(close, ']');
    }
  } else {
    const entries = v instanceof PyDict ? v.entries : Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
    if (entries.length === 0) out.push('{}');
    else {
      out.push('{', nl);
      entries.forEach(([k, item], i) => {
        if (i) out.push(sep);
        out.push(pythonJsonString(k), ': ');
        write(item, out, seen, indent, level + 1);
      });
      out.push(close, '}');
    }
  }
  seen.delete(v as object);
}

/**
 * json.load: like JSON.parse, but floats stay PyFloat, huge ints stay PyInt,
 * objects keep their key order (PyDict; a repeated key keeps its first
 * position and last value), and NaN/Infinity are accepted as Python does.
 */
export function parsePythonJson(text: string): unknown {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const fail = (msg: string): never => {
    // Python's wording: "Expecting value: line 1 column 1 (char 0)".
    const before = text.slice(0, i);
    const line = before.split('\n').length;
    const col = i - (before.lastIndexOf('\n') + 1) + 1;
    throw new SyntaxError(`${msg}: line ${line} column ${col} (char ${i})`);
  };
  const value = (): unknown => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const map = new Map<string, unknown>();
      ws();
      if (text[i] === '}') return i++, new PyDict([]);
      for (;;) {
        ws();
        if (text[i] !== '"') fail('Expecting property name enclosed in double quotes');
        const k = str();
        ws();
        if (text[i++] !== ':') fail("Expecting ':' delimiter");
        map.set(k, value());
        ws();
        const d = text[i++];
        if (d === '}') break;
        if (d !== ',') fail("Expecting ',' delimiter");
      }
      return new PyDict([...map.entries()]);
    }
    if (c === '[') {
      i++;
      const arr: unknown[] = [];
      ws();
      if (text[i] === ']') return i++, arr;
      for (;;) {
        arr.push(value());
        ws();
        const d = text[i++];
        if (d === ']') break;
        if (d !== ',') fail("Expecting ',' delimiter");
      }
      return arr;
    }
    if (c === '"') return str();
    for (const [lit, v] of [['true', true], ['false', false], ['null', null], ['NaN', new PyFloat(NaN)], ['Infinity', new PyFloat(Infinity)], ['-Infinity', new PyFloat(-Infinity)]] as const) {
      if (text.startsWith(lit, i)) return (i += lit.length), v;
    }
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) return fail('Expecting value');
    i += m[0].length;
    if (m[2] || m[3]) return new PyFloat(Number(m[0]));
    const n = Number(m[0]);
    return Number.isSafeInteger(n) ? (Object.is(n, -0) ? 0 : n) : new PyInt(BigInt(m[0]).toString());
  };
  const str = (): string => {
    i++; // opening quote
    let out = '';
    for (;;) {
      const j = text.indexOf('"', i);
      const k = text.indexOf('\\', i);
      if (j < 0) fail('Unterminated string');
      if (k < 0 || j < k) {
        out += text.slice(i, j);
        i = j + 1;
        return out;
      }
      out += text.slice(i, k);
      const e = text[k + 1];
      i = k + 2;
      if (e === 'u') {
        const hex = text.slice(i, i + 4);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('Invalid \\uXXXX escape');
        out += String.fromCharCode(parseInt(hex, 16));
        i += 4;
      } else {
        const map: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
        if (!(e! in map)) fail('Invalid \\escape');
        out += map[e!];
      }
    }
  };
  const v = value();
  ws();
  if (i !== text.length) fail('Extra data');
  return v;
}
