import { RE2JS } from 're2js';
import type { InputSpec, NodeDefinition } from './api.ts';
import { combo, v3 } from './schema.ts';
import { MAX_STRING } from './strings.ts';

/**
 * The reference's regex string nodes (RegexMatch, RegexExtract, RegexReplace)
 * on RE2, a linear-time engine: no pattern can backtrack catastrophically,
 * so a hostile prompt cannot stall the worker. Python-only syntax that RE2
 * cannot run (backreferences, lookarounds) fails the node with a clear error.
 */
const MAX_PATTERN = 2000;
/** Text length × program size bound on one search (RE2's worst case is linear in both). */
const MAX_STEPS = 50_000_000;

function compile(pattern: string, opts: { case_insensitive: boolean; multiline: boolean; dotall: boolean }): RE2JS {
  if (pattern.length > MAX_PATTERN) throw Object.assign(new Error(`regex pattern longer than ${MAX_PATTERN} characters`), { pyType: 're.error' });
  let flags = 0;
  if (opts.case_insensitive) flags |= RE2JS.CASE_INSENSITIVE;
  if (opts.multiline) flags |= RE2JS.MULTILINE;
  if (opts.dotall) flags |= RE2JS.DOTALL;
  try {
    return RE2JS.compile(pattern, flags);
  } catch (err) {
    throw Object.assign(new Error(`invalid regular expression (RE2 syntax; backreferences and lookarounds are not supported): ${(err as Error).message}`), {
      pyType: 're.error',
    });
  }
}

function checkCost(re: RE2JS, text: string): void {
  if (text.length * Math.max(1, re.programSize()) > MAX_STEPS) {
    throw Object.assign(new Error(`regex search over ${text.length} characters exceeds the matching budget`), { pyType: 'ValueError' });
  }
}

/** Python's re.sub replacement (\1, \g<1>, \g<name>, \n …) as RE2JS's ($1, ${name}). */
function replacement(repl: string): string {
  let out = '';
  for (let i = 0; i < repl.length; i++) {
    const c = repl[i]!;
    if (c === '$') out += '$$';
    else if (c === '\\' && i + 1 < repl.length) {
      const n = repl[i + 1]!;
      const g = /^g<(\w+)>/.exec(repl.slice(i + 1));
      if (g) {
        out += /^\d+$/.test(g[1]!) ? `$${g[1]}` : `\${${g[1]}}`;
        i += g[0].length;
      } else if (/\d/.test(n)) {
        const d = /^\d{1,2}/.exec(repl.slice(i + 1))![0];
        out += `$${d}`;
        i += d.length;
      } else {
        out += n === 'n' ? '\n' : n === 't' ? '\t' : n === 'r' ? '\r' : n === '\\' ? '\\' : `\\${n}`;
        i++;
      }
    } else out += c;
  }
  return out;
}

const flagInputs: Record<string, InputSpec> = {
  case_insensitive: ['BOOLEAN', { default: true, advanced: true }],
  multiline: ['BOOLEAN', { default: false, advanced: true }],
  dotall: ['BOOLEAN', { default: false, advanced: true }],
};

export const regexNodes: NodeDefinition[] = v3('comfy_extras.nodes_string', [
  {
    name: 'RegexMatch',
    displayName: 'Regex Match',
    category: 'utils/string',
    searchAliases: ['pattern match', 'text contains', 'string match'],
    inputs: { required: { string: ['STRING', { multiline: true }], regex_pattern: ['STRING', { multiline: true }], ...flagInputs } },
    outputs: ['BOOLEAN'],
    outputNames: ['matches'],
    execute: (i) => {
      const re = compile(i.regex_pattern, i as never);
      checkCost(re, i.string);
      return [re.matcher(i.string).find()];
    },
  },
  {
    name: 'RegexExtract',
    displayName: 'Regex Extract',
    category: 'utils/string',
    searchAliases: ['pattern extract', 'text parser', 'parse text'],
    inputs: {
      required: {
        string: ['STRING', { multiline: true }],
        regex_pattern: ['STRING', { multiline: true }],
        mode: combo(['First Match', 'All Matches', 'First Group', 'All Groups']),
        ...flagInputs,
        group_index: ['INT', { default: 1, min: 0, max: 100, advanced: true }],
      },
    },
    outputs: ['STRING'],
    execute: (i, ctx) => {
      const re = compile(i.regex_pattern, i as never);
      checkCost(re, i.string);
      const m = re.matcher(i.string);
      const idx = i.group_index as number;
      if (i.mode === 'First Match') return [m.find() ? m.group(0) : ''];
      if (i.mode === 'First Group') return [m.find() && m.groupCount() >= idx ? (m.group(idx) ?? '') : ''];
      const parts: string[] = [];
      let size = 0;
      const groups = m.groupCount();
      while (m.find()) {
        ctx.checkInterrupt();
        // Python's re.findall gives the first group, not the whole match, once the pattern has groups;
        // All Groups skips every match of a pattern without groups, even for group_index 0.
        const v = i.mode === 'All Matches' ? (m.group(groups > 0 ? 1 : 0) ?? '') : groups > 0 && groups >= idx ? (m.group(idx) ?? '') : null;
        if (v === null) continue;
        size += v.length + 1;
        if (size > MAX_STRING) throw new RangeError(`string result exceeds the limit of ${MAX_STRING}`);
        parts.push(v);
        // An empty match must still advance, as Python's finditer does.
        if (m.end() === m.start() && m.end() >= i.string.length) break;
      }
      return [parts.join('\n')];
    },
  },
  {
    name: 'RegexReplace',
    displayName: 'Regex Replace',
    category: 'utils/string',
    searchAliases: ['pattern replace', 'find and replace', 'substitution'],
    description: 'Find and replace text using regex patterns.',
    inputs: {
      required: {
        string: ['STRING', { multiline: true }],
        regex_pattern: ['STRING', { multiline: true }],
        replace: ['STRING', { multiline: true }],
      },
      optional: { ...flagInputs, count: ['INT', { default: 0, min: 0, max: 100, advanced: true, tooltip: 'Maximum number of replacements to make. Set to 0 to replace all occurrences.' }] },
    },
    outputs: ['STRING'],
    execute: (i) => {
      const re = compile(i.regex_pattern, { case_insensitive: i.case_insensitive ?? true, multiline: i.multiline ?? false, dotall: i.dotall ?? false });
      checkCost(re, i.string);
      const repl = replacement(String(i.replace));
      const count = (i.count as number | undefined) ?? 0;
      let out: string;
      if (count === 0) out = re.matcher(i.string).replaceAll(repl);
      else {
        // appendReplacement returns the text from the previous match up to and including this one's replacement.
        const m = re.matcher(i.string) as unknown as { find(): boolean; appendReplacement(r: string): string; appendTail(): string };
        out = '';
        for (let done = 0; done < count && m.find(); done++) out += m.appendReplacement(repl);
        out += m.appendTail();
      }
      if (out.length > MAX_STRING) throw new RangeError(`string result exceeds the limit of ${MAX_STRING}`);
      return [out];
    },
  },
]);
