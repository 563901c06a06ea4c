import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { defaultBody, parsePythonJson, pythonJsonDumps } from '../../src/events/python-json.ts';

function python(text: string): string | undefined {
  const r = spawnSync('python3', ['-c', 'import json,sys; print(json.dumps(json.load(sys.stdin)))'], { input: text, encoding: 'utf8' });
  if (r.error || r.status !== 0) return undefined;
  return r.stdout.replace(/\n$/, '');
}

const cases = [
  '{"a": 1, "b": 1.0, "c": 1e16, "d": 1e15, "e": 0.0001, "f": 0.00001, "g": -0.0, "h": 123456789012345678901234567890}',
  '{"u": "caf\u00e9 \u2603 \ud83d\ude00 \\ud800 lone", "ctl": "\\u0000\\u001f\\u007f\\t\\n\\r\\b\\f/\\\\\\""}',
  '{"2": "int-like key first in JS", "1": [1, [2, {"x": null}], true, false], "z": {}, "y": []}',
  '[1.5, 2.25e-7, 1.7976931348623157e308, 5e-324, 3.141592653589793, 100.0, 1e22, 12345678.9]',
  '{"dup": 1, "other": 2, "dup": 3}',
  '"plain"',
  '{"nested": {"deep": {"deeper": [{"k": "v\u00ff"}]}}}',
];

describe('pythonJsonDumps', () => {
  const hasPython = python('1') === '1';
  for (const text of cases) {
    it(`matches python json.dumps byte for byte: ${text.slice(0, 40)}`, { skip: !hasPython && 'python3 not available' }, () => {
      assert.equal(pythonJsonDumps(parsePythonJson(text)), python(text));
    });
  }

  it('formats plain JS values like Python would', () => {
    assert.equal(pythonJsonDumps({ a: 'é', b: [1, 2.5], c: null, d: { e: true } }), '{"a": "\\u00e9", "b": [1, 2.5], "c": null, "d": {"e": true}}');
    assert.equal(pythonJsonDumps('😀'), '"\\ud83d\\ude00"');
  });
});

describe('pythonJsonDumps with indent', () => {
  const py = (text: string) => {
    const r = spawnSync('python3', ['-c', 'import json,sys; print(json.dumps(json.load(sys.stdin), indent=4))'], { input: text, encoding: 'utf8' });
    return r.status === 0 ? r.stdout.replace(/\n$/, '') : undefined;
  };
  for (const text of ['{"foo": "bar", "n": [1, 2], "e": {}, "l": [], "d": {"x": [{"y": 1.0}]}, "u": "\u00e9"}', '[]', '"x"', '3']) {
    it(`matches json.dumps(indent=4): ${text.slice(0, 30)}`, { skip: py('1') !== '1' && 'python3 not available' }, () => {
      assert.equal(pythonJsonDumps(parsePythonJson(text), 4), py(text));
    });
  }
});

describe('stored contexts', () => {
  // Contexts are stored as json.dumps text at enqueue (the default body, ready to send); it must equal what the
  // send path made of the JSON.stringify text stored before.
  const samples: unknown[] = [
    { event: 'created', data: { id: 1, u_height: 1.5, big: 2 ** 53 + 2, huge: 1e21, tiny: 5e-7, neg: -0, name: 'café ☃ 😀', nested: [{ a: null, b: [true, false] }] } },
    { event: 'updated', data: { x: undefined, y: [undefined, 1], z: 0.1 + 0.2, w: 100, v: -12.5e10 }, snapshots: { prechange: null, postchange: { tags: [] } } },
  ];
  for (const [i, s] of samples.entries()) {
    it(`json.dumps of the context object equals the old parse-and-dump of its JSON text (${i})`, () => {
      const old = pythonJsonDumps(parsePythonJson(JSON.stringify(s)));
      assert.equal(pythonJsonDumps(s), old);
      assert.equal(defaultBody(pythonJsonDumps(s)), old, 'stored dumps text is the body as it is');
      assert.equal(defaultBody(JSON.stringify(s)), old, 'legacy JSON.stringify text is converted');
      assert.deepEqual(JSON.parse(pythonJsonDumps(s)), JSON.parse(JSON.stringify(s)), 'every JSON reader sees the same context');
    });
  }
});
