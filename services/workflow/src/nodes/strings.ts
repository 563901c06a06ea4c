import type { NodeDefinition } from './api.ts';
import { combo, v3 } from './schema.ts';

/** Longest string a string node may produce: bounds memory whatever the inputs. */
export const MAX_STRING = 16 * 1024 * 1024;

function bounded(s: string): string {
  if (s.length > MAX_STRING) throw new RangeError(`string result of ${s.length} characters exceeds the limit of ${MAX_STRING}`);
  return s;
}

/**
 * Python's str.isspace() set, which str.strip() removes: JavaScript's trim()
 * also strips U+FEFF and keeps U+001C–U+001F and U+0085.
 */
const PY_SPACE = '[\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const PY_SPACE_START = new RegExp(`^${PY_SPACE}+`);
const PY_SPACE_END = new RegExp(`${PY_SPACE}+$`);

const text = (multiline = true): ['STRING', { multiline: boolean }] => ['STRING', { multiline }];

/** The reference's string utilities (comfy_extras/nodes_string.py), without the regex nodes. */
export const stringNodes: NodeDefinition[] = v3('comfy_extras.nodes_string', [
  {
    name: 'StringConcatenate',
    displayName: 'Concatenate',
    category: 'utils/string',
    searchAliases: ['text concat', 'join text', 'merge text', 'combine strings', 'concat', 'concatenate', 'append text', 'combine text', 'string'],
    inputs: { required: { string_a: text(), string_b: text(), delimiter: ['STRING', { multiline: false, default: '' }] } },
    outputs: ['STRING'],
    execute: ({ string_a, string_b, delimiter }) => [bounded(`${string_a}${delimiter}${string_b}`)],
  },
  {
    name: 'StringSubstring',
    displayName: 'Substring',
    category: 'utils/string',
    searchAliases: ['extract text', 'text portion'],
    inputs: { required: { string: text(), start: ['INT', {}], end: ['INT', {}] } },
    outputs: ['STRING'],
    execute: ({ string, start, end }) => [pySlice(string, start, end)],
  },
  {
    name: 'StringLength',
    displayName: 'Length',
    category: 'utils/string',
    searchAliases: ['character count', 'text size'],
    inputs: { required: { string: text() } },
    outputs: ['INT'],
    outputNames: ['length'],
    execute: ({ string }) => [[...string].length],
  },
  {
    name: 'CaseConverter',
    displayName: 'Case Converter',
    category: 'utils/string',
    searchAliases: ['text case', 'uppercase', 'lowercase', 'capitalize'],
    inputs: { required: { string: text(), mode: combo(['UPPERCASE', 'lowercase', 'Capitalize', 'Title Case']) } },
    outputs: ['STRING'],
    execute: ({ string, mode }) => {
      const s = string as string;
      if (mode === 'UPPERCASE') return [s.toUpperCase()];
      if (mode === 'lowercase') return [s.toLowerCase()];
      if (mode === 'Capitalize') return [s.charAt(0).toUpperCase() + s.slice(1).toLowerCase()];
      // str.title(): a cased character after an uncased one (digit, apostrophe, CJK, combining mark) starts a word.
      return [s.toLowerCase().replace(/(^|[^\p{Lowercase}\p{Uppercase}\p{Lt}])([\p{Lowercase}\p{Uppercase}\p{Lt}])/gu, (_m, a: string, b: string) => a + b.toUpperCase())];
    },
  },
  {
    name: 'StringTrim',
    displayName: 'Trim',
    category: 'utils/string',
    searchAliases: ['clean whitespace', 'remove whitespace'],
    inputs: { required: { string: text(), mode: combo(['Both', 'Left', 'Right']) } },
    outputs: ['STRING'],
    execute: ({ string, mode }) => {
      const s = string as string;
      return [mode === 'Left' ? s.replace(PY_SPACE_START, '') : mode === 'Right' ? s.replace(PY_SPACE_END, '') : s.replace(PY_SPACE_START, '').replace(PY_SPACE_END, '')];
    },
  },
  {
    name: 'StringReplace',
    displayName: 'Replace',
    category: 'utils/string',
    searchAliases: ['find and replace', 'substitute', 'swap text'],
    inputs: { required: { string: text(), find: text(), replace: text() } },
    outputs: ['STRING'],
    execute: ({ string, find, replace }) => {
      const s = string as string;
      const f = find as string;
      // Python's str.replace: an empty pattern inserts between every character.
      if (f === '') return [bounded(s.length === 0 ? replace : replace + [...s].join(replace) + replace)];
      const parts = s.split(f);
      if ((parts.length - 1) * (replace as string).length > MAX_STRING) throw new RangeError(`string result exceeds the limit of ${MAX_STRING}`);
      return [bounded(parts.join(replace))];
    },
  },
  {
    name: 'StringContains',
    displayName: 'Contains',
    category: 'utils/string',
    searchAliases: ['text includes', 'string includes'],
    inputs: { required: { string: text(), substring: text(), case_sensitive: ['BOOLEAN', { default: true, advanced: true }] } },
    outputs: ['BOOLEAN'],
    outputNames: ['contains'],
    execute: ({ string, substring, case_sensitive }) =>
      [case_sensitive ? string.includes(substring) : string.toLowerCase().includes(substring.toLowerCase())],
  },
  {
    name: 'StringCompare',
    displayName: 'Compare',
    category: 'utils/string',
    searchAliases: ['text match', 'string equals', 'starts with', 'ends with'],
    inputs: {
      required: { string_a: text(), string_b: text(), mode: combo(['Starts With', 'Ends With', 'Equal']), case_sensitive: ['BOOLEAN', { default: true, advanced: true }] },
    },
    outputs: ['BOOLEAN'],
    execute: ({ string_a, string_b, mode, case_sensitive }) => {
      const a = case_sensitive ? string_a : string_a.toLowerCase();
      const b = case_sensitive ? string_b : string_b.toLowerCase();
      return [mode === 'Starts With' ? a.startsWith(b) : mode === 'Ends With' ? a.endsWith(b) : a === b];
    },
  },
]);

/** Python's s[start:end] on code points. */
function pySlice(s: string, start: number, end: number): string {
  const cps = [...s];
  const n = cps.length;
  const norm = (i: number) => (i < 0 ? Math.max(0, n + i) : Math.min(i, n));
  return cps.slice(norm(start), norm(end)).join('');
}
