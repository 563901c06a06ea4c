import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';
import { run, type Server } from './nodes-helpers.ts';

/**
 * The logic nodes of the 2026 reference (comfy_extras/nodes_logic.py) and the V3
 * input kinds they need: MatchType (`COMFY_MATCHTYPE_V3`) inputs and outputs,
 * Autogrow (`COMFY_AUTOGROW_V3`) inputs sent as `values.value0` …, lazy switch
 * branches, accept_all_inputs. Expected shapes and values are the reference's
 * (comfy_api/latest/_io.py get_v1_info, execution.py validate_inputs,
 * comfy_execution/validation.py validate_node_input).
 */
const s = (class_type: string, inputs: Record<string, unknown>) => ({ class_type, inputs });
const text = (id: string) => s('PreviewAny', { source: [id, 0] });

forEachStorage('workflow logic nodes', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  test('object_info renders the V3 kinds as the 2026 reference', async () => {
    const r = await srv.http.get('/object_info');
    assert.equal(r.status, 200);
    const sw = r.body.ComfySwitchNode;
    assert.deepEqual(sw.input, {
      required: { switch: ['BOOLEAN', {}] },
      optional: {
        on_false: ['COMFY_MATCHTYPE_V3', { lazy: true, template: { template_id: 'switch', allowed_types: '*' } }],
        on_true: ['COMFY_MATCHTYPE_V3', { lazy: true, template: { template_id: 'switch', allowed_types: '*' } }],
      },
    });
    assert.deepEqual(sw.input_order, { required: ['switch'], optional: ['on_false', 'on_true'] });
    assert.deepEqual(sw.output, ['COMFY_MATCHTYPE_V3']);
    assert.deepEqual(sw.output_name, ['output']);
    assert.deepEqual(sw.output_matchtypes, ['switch']);
    assert.deepEqual(sw.output_tooltips, [null]);
    assert.equal(sw.display_name, 'If/Else Switch');
    assert.equal(sw.category, 'utilities/logic');
    assert.equal(sw.python_module, 'comfy_extras.nodes_logic');
    assert.equal(sw.experimental, true);
    assert.equal(sw.price_badge, null);
    assert.deepEqual(sw.search_aliases, ['if', 'then', 'switch', 'conditional', 'branch']);

    const and = r.body.ComfyAndNode;
    assert.deepEqual(and.input, {
      required: { values: ['COMFY_AUTOGROW_V3', { template: { input: { required: { value: ['*', {}] } }, prefix: 'value', min: 1, max: 10 } }] },
    });
    assert.deepEqual(and.output_matchtypes, null);
    assert.deepEqual(and.output, ['BOOLEAN']);
    assert.deepEqual(and.output_name, ['BOOLEAN']);

    const pass = r.body.ComfyPassOrNoneNode;
    assert.deepEqual(pass.input.required, {});
    assert.deepEqual(pass.input_order, { required: [], optional: ['anything', 'default'] });
    assert.deepEqual(pass.output_name, ['output', 'is_none']);
    assert.deepEqual(pass.output_matchtypes, ['value', null]);
    assert.deepEqual(pass.input.optional.default[1].template, { template_id: 'value', allowed_types: '*' });

    const cc = r.body.CustomCombo;
    assert.deepEqual(cc.input, { required: { choice: ['COMBO', { multiselect: false, options: [] }] } });
    assert.deepEqual(cc.output_name, ['STRING', 'INDEX']);
    assert.equal(cc.category, 'utilities');
    assert.equal(cc.search_aliases, null);
    assert.deepEqual(r.body.ComfyNotNode.input, { required: { value: ['*', {}] } });
  });

  test('the switch evaluates only the selected branch; a branch not connected gives None', async () => {
    // The unselected branch would fail at run time (an invalid regular expression).
    const bad = s('RegexMatch', { string: 'x', regex_pattern: '(', case_insensitive: true, multiline: false, dotall: false });
    const good = s('PrimitiveString', { value: 'picked' });
    const prompt = {
      bad,
      good,
      sw: s('ComfySwitchNode', { switch: true, on_true: ['good', 0], on_false: ['bad', 0] }),
      out: text('sw'),
      sw2: s('ComfySwitchNode', { switch: false, on_true: ['good', 0] }),
      out2: text('sw2'),
    };
    const r = await run(srv, prompt);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.deepEqual(r.outputs.out.text, ['picked']);
    assert.deepEqual(r.outputs.out2.text, ['None']);
    const ran = r.messages.filter((m) => m.type === 'executing' && m.data.node).map((m) => m.data.node);
    assert.ok(!ran.includes('bad'), `the unselected branch ran: ${ran}`);

    // Selecting the failing branch runs it, and its error is the prompt's.
    const r2 = await run(srv, { ...prompt, sw: s('ComfySwitchNode', { switch: false, on_true: ['good', 0], on_false: ['bad', 0] }) });
    assert.equal(r2.error?.node_id, 'bad');
  });

  test('Not, And, Or follow Python truthiness over Autogrow inputs; Pass or None falls back', async () => {
    const prompt: Record<string, unknown> = {
      i0: s('PrimitiveInt', { value: 0 }),
      i5: s('PrimitiveInt', { value: 5 }),
      se: s('PrimitiveString', { value: '' }),
      sx: s('PrimitiveString', { value: 'x' }),
      notEmpty: s('ComfyNotNode', { value: ['se', 0] }),
      notInt: s('ComfyNotNode', { value: ['i5', 0] }),
      andTrue: s('ComfyAndNode', { 'values.value0': ['i5', 0], 'values.value1': ['sx', 0], 'values.value2': true }),
      andFalse: s('ComfyAndNode', { 'values.value0': ['i5', 0], 'values.value3': ['i0', 0] }),
      orTrue: s('ComfyOrNode', { 'values.value0': ['se', 0], 'values.value1': ['i0', 0], 'values.value9': 'y' }),
      orFalse: s('ComfyOrNode', { 'values.value0': ['se', 0], 'values.value1': 0 }),
      passA: s('ComfyPassOrNoneNode', { anything: ['sx', 0], default: ['i5', 0] }),
      passD: s('ComfyPassOrNoneNode', { default: ['i5', 0] }),
      passNone: s('ComfyPassOrNoneNode', {}),
      combo: s('CustomCombo', { choice: 'user option', index: 3 }),
    };
    for (const id of Object.keys(prompt)) if (!id.startsWith('i') && !id.startsWith('s')) prompt[`${id}_out`] = text(id);
    prompt.passA_none = s('PreviewAny', { source: ['passA', 1] });
    prompt.passD_none = s('PreviewAny', { source: ['passD', 1] });
    prompt.passNone_none = s('PreviewAny', { source: ['passNone', 1] });
    prompt.combo_index = s('PreviewAny', { source: ['combo', 1] });
    const r = await run(srv, prompt);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    const t = (id: string) => r.outputs[id].text[0];
    assert.equal(t('notEmpty_out'), 'True');
    assert.equal(t('notInt_out'), 'False');
    assert.equal(t('andTrue_out'), 'True');
    assert.equal(t('andFalse_out'), 'False');
    assert.equal(t('orTrue_out'), 'True');
    assert.equal(t('orFalse_out'), 'False');
    assert.equal(t('passA_out'), 'x');
    assert.equal(t('passA_none'), 'False');
    assert.equal(t('passD_out'), '5');
    assert.equal(t('passD_none'), 'False');
    assert.equal(t('passNone_out'), 'None');
    assert.equal(t('passNone_none'), 'True');
    assert.equal(t('combo_out'), 'user option');
    assert.equal(t('combo_index'), '3');
  });

  test('validation: Autogrow names its first input as required, MatchType accepts any linked type', async () => {
    const r = await srv.http.post('/prompt', {
      prompt: { and: s('ComfyAndNode', { values: [true] }), out: text('and') },
    });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.node_errors.and.errors, [
      { type: 'required_input_missing', message: 'Required input is missing', details: 'value0', extra_info: { input_name: 'values.value0' } },
    ]);
    // An IMAGE into a MatchType input, and the MatchType output into a STRING input: both valid, as the reference.
    const ok = await srv.http.post('/prompt', {
      prompt: {
        img: s('EmptyImage', { width: 4, height: 4, batch_size: 1, color: 0 }),
        pass: s('ComfyPassOrNoneNode', { anything: ['img', 0] }),
        sw: s('ComfySwitchNode', { switch: true, on_true: 'text' }),
        cat: s('StringConcatenate', { string_a: ['sw', 0], string_b: 'b', delimiter: '' }),
        out: text('cat'),
        out2: s('PreviewAny', { source: ['pass', 1] }),
      },
    });
    assert.equal(ok.status, 200, ok.text);
    // A value outside the 10 names of the template is not an input of the node (ignored, as the reference).
    const extra = await run(srv, { and: s('ComfyAndNode', { 'values.value0': 1, 'values.value10': 0 }), out: text('and') });
    assert.equal(extra.error, undefined);
    assert.equal(extra.outputs.out.text[0], 'True');
    // Custom Combo takes any choice: the options live in the frontend.
    const cc = await srv.http.post('/prompt', { prompt: { c: s('CustomCombo', { choice: 'anything at all' }), out: text('c') } });
    assert.equal(cc.status, 200, cc.text);
  });

  test('Not of an IMAGE raises as torch does for a tensor of many values', async () => {
    const r = await run(srv, { img: s('EmptyImage', { width: 2, height: 2, batch_size: 1, color: 0 }), n: s('ComfyNotNode', { value: ['img', 0] }), out: text('n') });
    assert.equal(r.error?.node_id, 'n');
    assert.match(r.error.exception_message, /more than one value is ambiguous/);
  });
});
