/**
 * Conditioning nodes of the reference that only set keys on CONDITIONING
 * entries for model families this service does not run yet (Flux, edit
 * models, Stable Audio, video models): comfy_extras nodes_flux (FluxGuidance,
 * FluxDisableGuidance, FluxKontextMultiReferenceLatentMethod), nodes_edit_model
 * (ReferenceLatent), nodes_audio (ConditioningStableAudio) and
 * nodes_video_model (ConditioningSetAreaPercentageVideo). Each copies the
 * entries' options and sets its keys as node_helpers.conditioning_set_values;
 * an SD sampler ignores the keys it does not read, as the reference's does.
 */
import type { NodeDefinition } from './api.ts';
import { isLatent } from './latent.ts';

type Entry = [unknown, Record<string, unknown>];

function entries(v: unknown, name: string): Entry[] {
  if (!Array.isArray(v) || v.some((e) => !Array.isArray(e) || e.length < 2 || typeof e[1] !== 'object' || e[1] === null)) {
    throw Object.assign(new Error(`the ${name} input is not a CONDITIONING`), { pyType: 'RuntimeError' });
  }
  return v as Entry[];
}

/** node_helpers.conditioning_set_values; with `append`, a key already set is extended (its list joined with the new one). */
function setValues(c: Entry[], values: Record<string, unknown>, append = false): Entry[] {
  return c.map(([t, o]) => {
    const opts = { ...o };
    for (const [k, v] of Object.entries(values)) {
      const old = opts[k];
      opts[k] = append && Array.isArray(old) && Array.isArray(v) ? [...old, ...v] : v;
    }
    return [t, opts];
  });
}

const FLUX = { category: 'advanced/conditioning/flux', pythonModule: 'comfy_extras.nodes_flux', v3Schema: true } as const;

export const conditioningValueNodes: NodeDefinition[] = [
  {
    name: 'FluxGuidance',
    ...FLUX,
    inputs: { required: { conditioning: ['CONDITIONING'], guidance: ['FLOAT', { default: 3.5, min: 0.0, max: 100.0, step: 0.1 }] } },
    outputs: ['CONDITIONING'],
    execute: ({ conditioning, guidance }) => [setValues(entries(conditioning, 'conditioning'), { guidance })],
  },
  {
    name: 'FluxDisableGuidance',
    ...FLUX,
    description: 'This node completely disables the guidance embed on Flux and Flux like models',
    inputs: { required: { conditioning: ['CONDITIONING'] } },
    outputs: ['CONDITIONING'],
    execute: ({ conditioning }) => [setValues(entries(conditioning, 'conditioning'), { guidance: null })],
  },
  {
    name: 'FluxKontextMultiReferenceLatentMethod',
    ...FLUX,
    experimental: true,
    inputs: { required: { conditioning: ['CONDITIONING'], reference_latents_method: ['COMBO', { options: ['offset', 'index', 'uxo/uno'] }] } },
    outputs: ['CONDITIONING'],
    execute: ({ conditioning, reference_latents_method }) => {
      const m = String(reference_latents_method);
      return [setValues(entries(conditioning, 'conditioning'), { reference_latents_method: m.includes('uxo') || m.includes('uso') ? 'uxo' : m })];
    },
  },
  {
    name: 'ReferenceLatent',
    category: 'advanced/conditioning/edit_models',
    pythonModule: 'comfy_extras.nodes_edit_model',
    v3Schema: true,
    description: 'This node sets the guiding latent for an edit model. If the model supports it you can chain multiple to set multiple reference images.',
    inputs: { required: { conditioning: ['CONDITIONING'] }, optional: { latent: ['LATENT'] } },
    outputs: ['CONDITIONING'],
    execute: ({ conditioning, latent }) => {
      const c = entries(conditioning, 'conditioning');
      if (latent === undefined || latent === null) return [c];
      if (!isLatent(latent)) throw Object.assign(new Error('the latent input is not a LATENT'), { pyType: 'RuntimeError' });
      return [setValues(c, { reference_latents: [latent.samples] }, true)];
    },
  },
  {
    name: 'ConditioningStableAudio',
    category: 'conditioning',
    pythonModule: 'comfy_extras.nodes_audio',
    inputs: {
      required: {
        positive: ['CONDITIONING'],
        negative: ['CONDITIONING'],
        seconds_start: ['FLOAT', { default: 0.0, min: 0.0, max: 1000.0, step: 0.1 }],
        seconds_total: ['FLOAT', { default: 47.0, min: 0.0, max: 1000.0, step: 0.1 }],
      },
    },
    outputs: ['CONDITIONING', 'CONDITIONING'],
    outputNames: ['positive', 'negative'],
    execute: ({ positive, negative, seconds_start, seconds_total }) => [
      setValues(entries(positive, 'positive'), { seconds_start, seconds_total }),
      setValues(entries(negative, 'negative'), { seconds_start, seconds_total }),
    ],
  },
  {
    name: 'ConditioningSetAreaPercentageVideo',
    category: 'conditioning',
    pythonModule: 'comfy_extras.nodes_video_model',
    inputs: {
      required: {
        conditioning: ['CONDITIONING'],
        width: ['FLOAT', { default: 1.0, min: 0, max: 1.0, step: 0.01 }],
        height: ['FLOAT', { default: 1.0, min: 0, max: 1.0, step: 0.01 }],
        temporal: ['FLOAT', { default: 1.0, min: 0, max: 1.0, step: 0.01 }],
        x: ['FLOAT', { default: 0, min: 0, max: 1.0, step: 0.01 }],
        y: ['FLOAT', { default: 0, min: 0, max: 1.0, step: 0.01 }],
        z: ['FLOAT', { default: 0, min: 0, max: 1.0, step: 0.01 }],
        strength: ['FLOAT', { default: 1.0, min: 0.0, max: 10.0, step: 0.01 }],
      },
    },
    outputs: ['CONDITIONING'],
    execute: ({ conditioning, width, height, temporal, x, y, z, strength }) => [
      setValues(entries(conditioning, 'conditioning'), { area: ['percentage', temporal, height, width, z, y, x], strength, set_area_to_bounds: false }),
    ],
  },
];
