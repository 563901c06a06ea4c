import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { compilePyRegex, MAX_MATCH_STEPS, RegexSyntaxError, RegexTooExpensive } from '../../src/events/pyregex.ts';

const CASES: Array<[string, string]> = [
  ['edge', 'edge-1'],
  ['dge', 'edge'],
  ['(?i)EDGE', 'edge'],
  ['(?P<x>e)dge\\d', 'edge7'],
  ['\\d+$', '١٢٣'],
  ['\\w+', 'café'],
  ['\\s', '\u2003x'],
  ['\\S+\\Z', 'abc'],
  ['abc$', 'abc\n'],
  ['abc$', 'abc\n\n'],
  ['(?m)a$\\nb', 'a\nb'],
  ['a{,2}b', 'aab'],
  ['a{,2}b', 'aaab'],
  ['[\\w-]+\\.example', 'my-host.example'],
  ['[^\\d]+', 'x1'],
  ['\\u00e9', 'é'],
  ['(?#comment)x', 'x'],
  ['(?i:A)b', 'ab'],
  ['(?i:A)b', 'aB'],
  ['\\x41\\101\\0', 'AA\0'],
  ['.', '\n'],
  ['(?s).', '\n'],
  ['\\Aab', 'ab'],
  ['[]a]+', ']a'],
  ['(a+)+$', 'a'.repeat(30)],
];

const python = spawnSync('python3', ['-c', 'import sys'], { encoding: 'utf8' }).status === 0;

describe('Python regex conditions on RE2', () => {
  it('match as Python re.match does', { skip: !python && 'python3 not installed' }, () => {
    const r = spawnSync('python3', ['-c', 'import json,re,sys\nprint(json.dumps([re.match(p, t) is not None for p, t in json.load(sys.stdin)]))'], {
      input: JSON.stringify(CASES),
      encoding: 'utf8',
    });
    const expected = JSON.parse(r.stdout) as boolean[];
    CASES.forEach(([p, t], i) => assert.equal(compilePyRegex(p).matchStart(t), expected[i], `re.match(${JSON.stringify(p)}, ${JSON.stringify(t)})`));
  });

  it('refuses what RE2 cannot run, naming the construct', () => {
    const refused: Array<[string, RegExp]> = [
      ['(a)\\1', /backreference \\1 is not supported/],
      ['(?P<n>a)(?P=n)', /backreference \(\?P=name\)/],
      ['a(?=b)', /lookahead/],
      ['a(?!b)', /lookahead/],
      ['(?<=a)b', /lookbehind/],
      ['(?<!a)b', /lookbehind/],
      ['(?>a+)', /atomic group/],
      ['(a)?(?(1)b|c)', /conditional group/],
      ['a++', /possessive quantifiers/],
      ['(?x) a', /verbose mode/],
      ['a{1001}', /repeat count/],
      ['(unclosed', /Invalid regular expression/],
      ['x(?i)y', /global flags not at the start/],
      ['[[:alpha:]]', /POSIX classes/],
      ['\\N{DIGIT ONE}', /named character escape/],
      ['a'.repeat(1001), /too long/],
    ];
    for (const [p, msg] of refused) assert.throws(() => compilePyRegex(p), (e: unknown) => e instanceof RegexSyntaxError && msg.test(e.message), p);
  });

  it('matches catastrophic-backtracking patterns in linear time', () => {
    // A backtracking engine takes longer than the age of the universe on these: that they return at all
    // (within the test's time-out) is the proof, so no clock is compared on this loaded machine.
    assert.equal(compilePyRegex('(a+)+$').matchStart('a'.repeat(50_000) + '!'), false);
    assert.equal(compilePyRegex('(x+x+)+y').matchStart('x'.repeat(50_000)), false);
    assert.equal(compilePyRegex('(.*a){12}').matchStart('a'.repeat(40_000)), true);
  });

  it('refuses a match whose worst case exceeds the step budget', () => {
    const re = compilePyRegex('(a|b|c|d|e|f|g|h)*(x+x+)+y');
    const n = Math.ceil(MAX_MATCH_STEPS / re.programSize) + 1;
    assert.throws(() => re.matchStart('a'.repeat(n)), RegexTooExpensive);
  });
});
