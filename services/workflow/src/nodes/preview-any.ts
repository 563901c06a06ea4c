import type { NodeDefinition } from './api.ts';

function pyStr(v: unknown): string {
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(v);
  return String(v);
}

/** PreviewAny (comfy_extras/nodes_preview_any.py): shows any value as text. */
export const previewAnyNodes: NodeDefinition[] = [
  {
    name: 'PreviewAny',
    displayName: 'Preview Any',
    category: 'utils',
    inputs: { required: { source: ['*', {}] } },
    outputs: [],
    outputNode: true,
    execute: ({ source }) => {
      let value = 'None';
      if (typeof source === 'string') value = source;
      else if (typeof source === 'number' || typeof source === 'boolean') value = pyStr(source);
      else if (source !== null && source !== undefined) {
        try {
          value = JSON.stringify(source) ?? String(source);
        } catch {
          value = 'source exists, but could not be serialized.';
        }
      }
      return { ui: { text: [value] } };
    },
  },
];
