// JSON → Python-like values, the way Python's json.loads sees the document:
// `1.0` stays a float (PyFloat), big integers stay exact (bigint), and objects
// remember key insertion order even for integer-like keys JS would reorder.

import { KEY_ORDER, PyFloat } from './runtime/values.js';

export class JsonParseError extends SyntaxError {}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export function parseJsonPreservingFloats(text: string): unknown {
  let i = 0;
  const n = text.length;
  const fail = (msg: string): never => {
    throw new JsonParseError(`${msg} at position ${i}`);
  };
  const ws = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 32 || c === 9 || c === 10 || c === 13) i++;
      else break;
    }
  };
  const NUM = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
  const value = (depth: number): unknown => {
    if (depth > 1000) fail('nesting too deep');
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const obj: Record<string, unknown> = {};
      const order: string[] = [];
      let reordered = false;
      ws();
      if (text[i] === '}') {
        i++;
        return obj;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected string key');
        const k = str();
        ws();
        if (text[i] !== ':') fail("expected ':'");
        i++;
        const v = value(depth + 1);
        if (!Object.hasOwn(obj, k)) {
          order.push(k);
          if (/^(0|[1-9]\d*)$/.test(k) && Number(k) < 2 ** 32 - 1) reordered = true;
        }
        Object.defineProperty(obj, k, { value: v, writable: true, enumerable: true, configurable: true });
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          break;
        }
        fail("expected ',' or '}'");
      }
      if (reordered) Object.defineProperty(obj, KEY_ORDER, { value: order });
      return obj;
    }
    if (c === '[') {
      i++;
      const arr: unknown[] = [];
      ws();
      if (text[i] === ']') {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(value(depth + 1));
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          break;
        }
        fail("expected ',' or ']'");
      }
      return arr;
    }
    if (c === '"') return str();
    if (text.startsWith('true', i)) return (i += 4), true;
    if (text.startsWith('false', i)) return (i += 5), false;
    if (text.startsWith('null', i)) return (i += 4), null;
    // Python's json also accepts these
    if (text.startsWith('NaN', i)) return (i += 3), NaN;
    if (text.startsWith('Infinity', i)) return (i += 8), Infinity;
    if (text.startsWith('-Infinity', i)) return (i += 9), -Infinity;
    NUM.lastIndex = i;
    const m = NUM.exec(text);
    if (!m) fail('unexpected character');
    i = NUM.lastIndex;
    if (m![1] === undefined && m![2] === undefined) {
      const big = BigInt(m![0]);
      return big > MAX_SAFE || big < -MAX_SAFE ? big : Number(big);
    }
    const f = Number(m![0]);
    return Number.isInteger(f) ? new PyFloat(f) : f;
  };
  const str = (): string => {
    i++; // opening quote
    let out = '';
    let start = i;
    for (;;) {
      if (i >= n) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 34) {
        out += text.slice(start, i);
        i++;
        return out;
      }
      if (c === 92) {
        out += text.slice(start, i);
        const e = text[i + 1];
        i += 2;
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case '/':
          case '\\':
          case '"':
            out += e;
            break;
          case 'u': {
            const hex = text.slice(i, i + 4);
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('bad unicode escape');
            out += String.fromCharCode(parseInt(hex, 16));
            i += 4;
            break;
          }
          default:
            fail('bad escape');
        }
        start = i;
        continue;
      }
      if (c < 0x20) fail('control character in string');
      i++;
    }
  };
  const v = value(0);
  ws();
  if (i < n) fail('extra data');
  return v;
}
