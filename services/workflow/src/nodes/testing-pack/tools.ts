import type { NodeDefinition } from '../api.ts';

/** The reference pack's SmartType inequality: types are comma sets, `*` matches all, and a received set must be inside the expected one. */
export function smartTypeDiffers(received: string, expected: string): boolean {
  if (received === '*' || expected === '*') return false;
  const want = new Set(expected.split(','));
  return !received.split(',').every((t) => want.has(t));
}

/**
 * The pack's VariantSupport decorator: the node takes the received link types
 * (`input_types`), which turns the engine's own type check off, and accepts a
 * link when its type set lies inside the declared one.
 */
export function variantSupport(def: NodeDefinition): NodeDefinition {
  if (def.validateInputs) throw new Error('VariantSupport does not support VALIDATE_INPUTS yet');
  const declared = (name: string): string | undefined => {
    const spec = def.inputs.required?.[name] ?? def.inputs.optional?.[name];
    return spec && typeof spec[0] === 'string' ? spec[0] : undefined;
  };
  return {
    ...def,
    validateInputs: {
      inputs: ['input_types'],
      fn: ({ input_types }) => {
        for (const [key, value] of Object.entries((input_types ?? {}) as Record<string, string>)) {
          const expected = declared(key);
          if (expected !== undefined && typeof value === 'string' && smartTypeDiffers(value, expected)) {
            return `Invalid type of ${key}: ${value} (expected ${expected})`;
          }
        }
        return true;
      },
    },
  };
}
