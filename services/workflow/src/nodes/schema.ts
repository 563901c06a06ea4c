import type { InputSpec, NodeDefinition } from './api.ts';

/**
 * Inputs written the way the reference's V3 schema (comfy_api io.Schema)
 * renders them in object_info: every input carries an options object, combos
 * are `["COMBO", {multiselect: false, options}]`, and every output has a
 * (null) tooltip. V1 nodes of nodes.py keep the bare `["IMAGE"]` form.
 */
export const IMAGE_IN: InputSpec = ['IMAGE', {}];
export const MASK_IN: InputSpec = ['MASK', {}];

export function combo(options: readonly (string | number)[], extra: Record<string, unknown> = {}): InputSpec {
  const { tooltip, default: def, ...rest } = extra;
  const opts: Record<string, unknown> = {};
  if (tooltip !== undefined) opts.tooltip = tooltip;
  if (def !== undefined) opts.default = def;
  return ['COMBO', { ...opts, ...rest, multiselect: false, options: [...options] }];
}

/** Fills what V3 nodes report: one null tooltip per output, hidden inputs as one-item lists. */
export function v3(pythonModule: string, defs: NodeDefinition[]): NodeDefinition[] {
  return defs.map((d) => ({ ...d, pythonModule, v3Schema: true, outputTooltips: d.outputTooltips ?? (d.outputs ?? []).map(() => null as unknown as string) }));
}
