import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow, waitJob } from './helpers.ts';

forEachStorage('workflow regex string nodes', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  async function run(node: Record<string, unknown>): Promise<any> {
    const r = await srv.http.post('/prompt', { prompt: { n: node, out: { class_type: 'PreviewAny', inputs: { source: ['n', 0] } } } });
    assert.equal(r.status, 200, r.text);
    return waitJob(srv.http, r.body.prompt_id);
  }

  test('RegexMatch, RegexExtract (four modes) and RegexReplace as Python re, with \\1 and \\g<1> replacements and count', async () => {
    const flags = { case_insensitive: true, multiline: false, dotall: false };
    let j = await run({ class_type: 'RegexMatch', inputs: { string: 'Hello World', regex_pattern: 'world', ...flags } });
    assert.deepEqual(j.outputs.out.text, ['True']);
    const s = 'a1 b22 c333';
    const cases: Array<[string, number, string]> = [
      ['First Match', 1, 'a1'],
      // re.findall with groups: the first group of each match
      ['All Matches', 1, 'a\nb\nc'],
      ['First Group', 2, '1'],
      ['All Groups', 1, 'a\nb\nc'],
    ];
    for (const [mode, group_index, expected] of cases) {
      j = await run({ class_type: 'RegexExtract', inputs: { string: s, regex_pattern: '([a-z])(\\d+)', mode, ...flags, group_index } });
      assert.deepEqual(j.outputs.out.text, [expected], mode);
    }
    j = await run({ class_type: 'RegexReplace', inputs: { string: 'a1 b22 c333 $x', regex_pattern: '([a-z])(\\d+)', replace: '\\2-\\g<1>$', ...flags, count: 2 } });
    assert.deepEqual(j.outputs.out.text, ['1-a$ 22-b$ c333 $x']);
  });

  test('catastrophic patterns run in linear time; Python-only syntax fails the node with a clear error', async () => {
    let j = await run({ class_type: 'RegexMatch', inputs: { string: 'a'.repeat(50_000) + 'b', regex_pattern: '^(a+)+$', case_insensitive: false, multiline: false, dotall: false } });
    assert.deepEqual(j.outputs.out.text, ['False']);
    j = await run({ class_type: 'RegexMatch', inputs: { string: 'aa', regex_pattern: '(a)\\1', case_insensitive: false, multiline: false, dotall: false } });
    assert.equal(j.status, 'failed');
    assert.match(j.execution_error.exception_message, /backreferences and lookarounds are not supported/);
  });
});
