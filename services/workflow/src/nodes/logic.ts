import type { InputSpec, NodeDefinition } from './api.ts';
import { Frame, ImageBatch, MaskBatch } from './image-types.ts';
import { Tensor } from './latent.ts';
import { combo } from './schema.ts';

/**
 * The logic nodes of the 2026 reference (`comfy_extras/nodes_logic.py`, the
 * ones its LogicExtension registers): the If/Else switch, Not/And/Or, Pass or
 * None, and Custom Combo. They use the V3 input kinds the engine supports in
 * registry.ts: MatchType inputs and outputs (`COMFY_MATCHTYPE_V3`, any linked
 * type accepted as the reference's validate_node_input) and Autogrow inputs
 * (`COMFY_AUTOGROW_V3`, `values.value0` … passed nested as `values`).
 * Rendered in object_info as the 2026 reference renders V3 nodes:
 * `output_matchtypes` and `price_badge` present, `search_aliases` null when
 * there are none.
 */

const MODULE = 'comfy_extras.nodes_logic';
const CATEGORY = 'utilities/logic';

function matchType(templateId: string, extra: Record<string, unknown> = {}): InputSpec {
  return ['COMFY_MATCHTYPE_V3', { ...extra, template: { template_id: templateId, allowed_types: '*' } }];
}

function autogrowAny(prefix: string): InputSpec {
  return ['COMFY_AUTOGROW_V3', { template: { input: { required: { value: ['*', {}] } }, prefix, min: 1, max: 10 } }];
}

/** What the 2026 reference's V3 schema renders for every node (object_info keys). */
function latestV3(def: NodeDefinition): NodeDefinition {
  return {
    pythonModule: MODULE,
    outputTooltips: (def.outputs ?? []).map(() => null as unknown as string),
    outputMatchtypes: null,
    priceBadge: null,
    searchAliases: null,
    description: '',
    ...def,
  };
}

/**
 * Python's truth value of a node value: None, False, 0, 0.0, '' and empty
 * lists/dicts are false; a tensor (IMAGE, MASK, latent samples) is its one
 * element's value, and one of more elements raises as torch does.
 */
export function pyTruthy(v: unknown): boolean {
  if (v === null || v === undefined) return false;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0; // NaN is true in Python, and NaN !== 0
  if (typeof v === 'bigint') return v !== 0n;
  if (typeof v === 'string') return v.length > 0;
  if (v instanceof Tensor) return tensorTruth(v.data.length, () => v.data[0]!);
  if (v instanceof ImageBatch) return framesTruth(v.frames);
  if (v instanceof MaskBatch) {
    const n = v.planes.reduce((s, p) => s + p.data.length, 0);
    return tensorTruth(n, () => v.planes[0]!.data[0]!);
  }
  if (Array.isArray(v)) {
    if (v.length > 0 && v.every((f) => f instanceof Frame)) return framesTruth(v as Frame[]);
    return v.length > 0;
  }
  if (v instanceof Map || v instanceof Set) return v.size > 0;
  if (ArrayBuffer.isView(v)) return v.byteLength > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

/** An IMAGE tensor has at least 3 values (channels), so its truth value always raises. */
function framesTruth(frames: readonly Frame[]): boolean {
  return tensorTruth(frames.reduce((s, f) => s + f.width * f.height * f.channels, 0), () => NaN);
}

function tensorTruth(numel: number, first: () => number): boolean {
  if (numel === 1) return first() !== 0;
  if (numel === 0) throw new Error('Boolean value of Tensor with no values is ambiguous');
  throw new Error('Boolean value of Tensor with more than one value is ambiguous');
}

export const logicNodes: NodeDefinition[] = [
  latestV3({
    name: 'ComfySwitchNode',
    displayName: 'If/Else Switch',
    category: CATEGORY,
    experimental: true,
    searchAliases: ['if', 'then', 'switch', 'conditional', 'branch'],
    inputs: {
      required: { switch: ['BOOLEAN', {}] },
      optional: { on_false: matchType('switch', { lazy: true }), on_true: matchType('switch', { lazy: true }) },
    },
    outputs: ['COMFY_MATCHTYPE_V3'],
    outputNames: ['output'],
    outputMatchtypes: ['switch'],
    // A connected input not evaluated yet is null; one not connected is absent (the reference's MISSING).
    checkLazyStatus({ switch: sw, on_false, on_true }) {
      if (sw && on_true === null) return ['on_true'];
      if (!sw && on_false === null) return ['on_false'];
      return [];
    },
    execute({ switch: sw, on_true, on_false }) {
      const selected = sw ? on_true : on_false;
      return [selected === undefined ? null : selected];
    },
  }),
  latestV3({
    name: 'CustomCombo',
    displayName: 'Custom Combo',
    category: 'utilities',
    experimental: true,
    inputs: { required: { choice: combo([]) } },
    outputs: ['STRING', 'INT'],
    outputNames: ['STRING', 'INDEX'],
    // The frontend defines the options and the index widget: every input is passed and none is checked.
    acceptAllInputs: true,
    validateInputs: { inputs: '*', fn: () => true },
    execute: ({ choice, index }) => [choice, index === undefined ? 0 : index],
  }),
  latestV3({
    name: 'ComfyNotNode',
    displayName: 'Not',
    category: CATEGORY,
    description: "Logical NOT operation. Returns true if the value is falsy. Uses Python's rules for truthiness.",
    searchAliases: ['invert', 'toggle', 'negate', 'flip boolean'],
    inputs: { required: { value: ['*', {}] } },
    outputs: ['BOOLEAN'],
    execute: ({ value }) => [!pyTruthy(value)],
  }),
  latestV3({
    name: 'ComfyAndNode',
    displayName: 'And',
    category: CATEGORY,
    description: "Logical AND operation. Returns true if all of the values are truthy. Uses Python's rules for truthiness.",
    searchAliases: ['all', 'every'],
    inputs: { required: { values: autogrowAny('value') } },
    outputs: ['BOOLEAN'],
    execute: ({ values }) => [Object.values(values as Record<string, unknown>).every(pyTruthy)],
  }),
  latestV3({
    name: 'ComfyOrNode',
    displayName: 'Or',
    category: CATEGORY,
    description: "Logical OR operation. Returns true if any of the values are truthy. Uses Python's rules for truthiness.",
    searchAliases: ['any', 'some'],
    inputs: { required: { values: autogrowAny('value') } },
    outputs: ['BOOLEAN'],
    execute: ({ values }) => [Object.values(values as Record<string, unknown>).some(pyTruthy)],
  }),
  latestV3({
    name: 'ComfyPassOrNoneNode',
    displayName: 'Pass or None',
    category: CATEGORY,
    description: 'Passes the input through, or a default value when input is None/not provided, or outputs None when both inputs are None/not provided.',
    searchAliases: ['fallback', 'null', 'nothing', 'empty', 'blank'],
    inputs: {
      required: {},
      optional: {
        anything: matchType('value', {
          tooltip: 'Passes the input through, or a default value when input is None/not provided, or outputs None when both inputs are None/not provided.',
        }),
        default: matchType('value', { tooltip: 'Optional fallback value to use when the input is None/not provided.' }),
      },
    },
    outputs: ['COMFY_MATCHTYPE_V3', 'BOOLEAN'],
    outputNames: ['output', 'is_none'],
    outputMatchtypes: ['value', null],
    execute({ anything, default: def }) {
      if (anything === null || anything === undefined) {
        const d = def === undefined ? null : def;
        return [d, d === null];
      }
      return [anything, false];
    },
  }),
];
