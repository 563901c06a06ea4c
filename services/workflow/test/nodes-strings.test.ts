import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow, waitJob } from './helpers.ts';

/**
 * The string and primitive utilities of the reference's core
 * (comfy_extras/nodes_string.py, nodes_primitive.py): Python's string
 * semantics (code points, slices, str.title, str.replace with an empty
 * pattern) through a real prompt, and their V3 object_info schemas.
 */
forEachStorage('workflow string and primitive nodes', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  /** Runs every node of `nodes` behind its own PreviewAny and answers each one's text by node id. */
  async function runAll(nodes: Record<string, Record<string, unknown>>): Promise<Record<string, string>> {
    const prompt: Record<string, unknown> = {};
    for (const [id, n] of Object.entries(nodes)) {
      prompt[id] = n;
      prompt[`${id}_out`] = { class_type: 'PreviewAny', inputs: { source: [id, 0] } };
    }
    const r = await srv.http.post('/prompt', { prompt });
    assert.equal(r.status, 200, r.text);
    const j = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(j.status, 'completed', JSON.stringify(j.execution_error));
    return Object.fromEntries(Object.keys(nodes).map((id) => [id, j.outputs[`${id}_out`].text[0]]));
  }

  test('string nodes follow Python: code points, slices, title case, replace with an empty pattern, case-insensitive checks', async () => {
    const s = (class_type: string, inputs: Record<string, unknown>) => ({ class_type, inputs });
    const out = await runAll({
      concat: s('StringConcatenate', { string_a: 'a', string_b: 'b', delimiter: ' - ' }),
      sub: s('StringSubstring', { string: 'héllo😀wörld', start: 2, end: -3 }),
      subNeg: s('StringSubstring', { string: 'abc', start: -100, end: 2 }),
      subEmpty: s('StringSubstring', { string: 'abc', start: 2, end: 1 }),
      len: s('StringLength', { string: 'a😀b' }),
      upper: s('CaseConverter', { string: 'hello WORLD', mode: 'UPPERCASE' }),
      lower: s('CaseConverter', { string: 'hello WORLD', mode: 'lowercase' }),
      cap: s('CaseConverter', { string: 'hello WORLD', mode: 'Capitalize' }),
      title: s('CaseConverter', { string: "they're 1st o'neil", mode: 'Title Case' }),
      titleUncased: s('CaseConverter', { string: 'a中b e\u0301x', mode: 'Title Case' }),
      both: s('StringTrim', { string: '  x \n', mode: 'Both' }),
      left: s('StringTrim', { string: '  x \n', mode: 'Left' }),
      right: s('StringTrim', { string: '  x \n', mode: 'Right' }),
      // str.isspace(): U+001C and U+0085 are whitespace, U+FEFF is not
      pyspace: s('StringTrim', { string: '\u001c\u0085 x\ufeff', mode: 'Both' }),
      rep: s('StringReplace', { string: 'a.a.a', find: '.', replace: '::' }),
      repEmpty: s('StringReplace', { string: 'abc', find: '', replace: '-' }),
      containsCase: s('StringContains', { string: 'Hello', substring: 'ELL', case_sensitive: true }),
      containsNoCase: s('StringContains', { string: 'Hello', substring: 'ELL', case_sensitive: false }),
      starts: s('StringCompare', { string_a: 'Hello', string_b: 'he', mode: 'Starts With', case_sensitive: false }),
      startsCase: s('StringCompare', { string_a: 'Hello', string_b: 'he', mode: 'Starts With', case_sensitive: true }),
      ends: s('StringCompare', { string_a: 'Hello', string_b: 'LO', mode: 'Ends With', case_sensitive: false }),
      equal: s('StringCompare', { string_a: 'x', string_b: 'x', mode: 'Equal', case_sensitive: true }),
      int: s('PrimitiveInt', { value: -7 }),
      float: s('PrimitiveFloat', { value: 1.5 }),
      bool: s('PrimitiveBoolean', { value: false }),
      multi: s('PrimitiveStringMultiline', { value: 'a\nb' }),
    });
    assert.deepEqual(out, {
      concat: 'a - b',
      sub: 'llo😀wö',
      subNeg: 'ab',
      subEmpty: '',
      len: '3',
      upper: 'HELLO WORLD',
      lower: 'hello world',
      cap: 'Hello world',
      title: "They'Re 1St O'Neil",
      titleUncased: 'A中B E\u0301X',
      both: 'x',
      left: 'x \n',
      right: '  x',
      pyspace: 'x\ufeff',
      rep: 'a::a::a',
      repEmpty: '-a-b-c-',
      containsCase: 'False',
      containsNoCase: 'True',
      starts: 'True',
      startsCase: 'False',
      ends: 'True',
      equal: 'True',
      int: '-7',
      float: '1.5',
      bool: 'False',
      multi: 'a\nb',
    });
  });

  test("RegexExtract's All Matches gives the first group once the pattern has groups, as re.findall does", async () => {
    const flags = { case_insensitive: true, multiline: false, dotall: false };
    const out = await runAll({
      whole: { class_type: 'RegexExtract', inputs: { string: 'a1 b22 c333', regex_pattern: '[a-z]\\d+', mode: 'All Matches', ...flags, group_index: 1 } },
      oneGroup: { class_type: 'RegexExtract', inputs: { string: 'a1 b22 c333', regex_pattern: '[a-z](\\d+)', mode: 'All Matches', ...flags, group_index: 1 } },
      twoGroups: { class_type: 'RegexExtract', inputs: { string: 'a1 b22 c333', regex_pattern: '([a-z])(\\d+)', mode: 'All Matches', ...flags, group_index: 2 } },
      groupsOfNone: { class_type: 'RegexExtract', inputs: { string: 'a1 b22', regex_pattern: '[a-z]\\d+', mode: 'All Groups', ...flags, group_index: 0 } },
      groupZero: { class_type: 'RegexExtract', inputs: { string: 'a1 b22', regex_pattern: '([a-z])\\d+', mode: 'All Groups', ...flags, group_index: 0 } },
    });
    assert.deepEqual(out, { whole: 'a1\nb22\nc333', oneGroup: '1\n22\n333', twoGroups: 'a\nb\nc', groupsOfNone: '', groupZero: 'a1\nb22' });
  });

  test('object_info: V3 schemas of comfy_extras.nodes_string and nodes_primitive (COMBO inputs, advanced flags, aliases, null output tooltips)', async () => {
    const info = async (name: string) => (await srv.http.get(`/object_info/${name}`)).body[name];
    const compare = await info('StringCompare');
    assert.deepEqual(compare.input.required, {
      string_a: ['STRING', { multiline: true }],
      string_b: ['STRING', { multiline: true }],
      mode: ['COMBO', { multiselect: false, options: ['Starts With', 'Ends With', 'Equal'] }],
      case_sensitive: ['BOOLEAN', { default: true, advanced: true }],
    });
    assert.equal(compare.python_module, 'comfy_extras.nodes_string');
    assert.equal(compare.category, 'utils/string');
    assert.deepEqual(compare.output, ['BOOLEAN']);
    assert.deepEqual(compare.output_tooltips, [null]);
    assert.deepEqual(compare.search_aliases, ['text match', 'string equals', 'starts with', 'ends with']);
    const len = await info('StringLength');
    assert.deepEqual([len.output, len.output_name, len.display_name], [['INT'], ['length'], 'Length']);
    const sub = await info('StringSubstring');
    assert.deepEqual(sub.input.required, { string: ['STRING', { multiline: true }], start: ['INT', {}], end: ['INT', {}] });
    const concat = await info('StringConcatenate');
    assert.deepEqual(concat.input.required.delimiter, ['STRING', { multiline: false, default: '' }]);
    const extract = await info('RegexExtract');
    assert.equal(extract.python_module, 'comfy_extras.nodes_string');
    assert.deepEqual(extract.input.required.mode, ['COMBO', { multiselect: false, options: ['First Match', 'All Matches', 'First Group', 'All Groups'] }]);
    assert.deepEqual(extract.input.required.group_index, ['INT', { default: 1, min: 0, max: 100, advanced: true }]);
    const replace = await info('RegexReplace');
    assert.deepEqual(Object.keys(replace.input.optional), ['case_insensitive', 'multiline', 'dotall', 'count']);
    for (const n of ['PrimitiveString', 'PrimitiveStringMultiline', 'PrimitiveInt', 'PrimitiveFloat', 'PrimitiveBoolean']) {
      const p = await info(n);
      assert.equal(p.python_module, 'comfy_extras.nodes_primitive', n);
      assert.equal(p.category, 'utils/primitive', n);
      assert.deepEqual(p.output_tooltips, [null], n);
    }
    // sys.maxsize bounds, as a JSON parser reads the reference's integers
    assert.deepEqual((await info('PrimitiveFloat')).input.required.value, ['FLOAT', { min: -9223372036854775807, max: 9223372036854775807 }]);
    assert.deepEqual((await info('PrimitiveStringMultiline')).input.required.value, ['STRING', { multiline: true }]);
  });

  test('bad values: a combo value outside its options and a float beyond sys.maxsize are the reference validation errors', async () => {
    const r = await srv.http.post('/prompt', {
      prompt: {
        1: { class_type: 'StringTrim', inputs: { string: 'x', mode: 'Middle' } },
        2: { class_type: 'PreviewAny', inputs: { source: ['1', 0] } },
        3: { class_type: 'PrimitiveFloat', inputs: { value: 1e19 } },
        4: { class_type: 'PreviewAny', inputs: { source: ['3', 0] } },
      },
    });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.type, 'prompt_outputs_failed_validation');
    assert.equal(r.body.node_errors['1'].errors[0].type, 'value_not_in_list');
    assert.equal(r.body.node_errors['1'].errors[0].details, "mode: 'Middle' not in ['Both', 'Left', 'Right']");
    assert.equal(r.body.node_errors['3'].errors[0].type, 'value_bigger_than_max');
  });
});
