/**
 * The reference's conditioning nodes (nodes.py): combine, average, concat,
 * areas, strengths, masks, zero-out and timestep ranges. CONDITIONING is a
 * list of [embedding, options]; these nodes copy the options and set keys
 * the sampler reads (src/models/conditioning.ts), as node_helpers.conditioning_set_values.
 */
import type { ConditioningEntry, FloatTensor } from '../../models/sd1.ts';
import type { NodeDefinition } from '../api.ts';
import { MaskBatch, maskPlanes, MAX_RESOLUTION } from '../image-types.ts';

function nodeError(message: string, pyType = 'RuntimeError'): Error {
  return Object.assign(new Error(message), { pyType });
}

function conditioning(v: unknown, name: string): ConditioningEntry[] {
  if (!Array.isArray(v) || v.some((e) => !Array.isArray(e) || !e[0] || !(e[0].data instanceof Float32Array) || !Array.isArray(e[0].shape))) {
    throw nodeError(`the ${name} input is not a CONDITIONING`);
  }
  return v as ConditioningEntry[];
}

function setValues(c: ConditioningEntry[], values: Record<string, unknown>): ConditioningEntry[] {
  return c.map(([t, o]) => [t, { ...o, ...values }]);
}

function firstFrom(from: ConditioningEntry[], node: string): FloatTensor {
  if (from.length === 0) throw nodeError(`${node}: conditioning_from is empty`, 'IndexError');
  return from[0]![0];
}

/** A MASK as the reference's tensor [B, H, W]. */
function maskTensor(m: unknown): FloatTensor {
  if (!(m instanceof MaskBatch)) throw nodeError('the mask input is not a MASK');
  const planes = maskPlanes(m);
  const { width: w, height: h } = planes[0]!;
  const data = new Float32Array(planes.length * h * w);
  planes.forEach((p, i) => {
    if (p.width !== w || p.height !== h) throw nodeError('the mask planes differ in size');
    data.set(p.data, i * h * w);
  });
  return { shape: [planes.length, h, w], data };
}

const COND = ['CONDITIONING'] as const;

export const conditioningNodes: NodeDefinition[] = [
  {
    name: 'ConditioningCombine',
    displayName: 'Conditioning (Combine)',
    category: 'conditioning',
    inputs: { required: { conditioning_1: ['CONDITIONING'], conditioning_2: ['CONDITIONING'] } },
    outputs: [...COND],
    execute: ({ conditioning_1, conditioning_2 }) => [[...conditioning(conditioning_1, 'conditioning_1'), ...conditioning(conditioning_2, 'conditioning_2')]],
  },
  {
    name: 'ConditioningAverage',
    displayName: 'ConditioningAverage',
    category: 'conditioning',
    inputs: {
      required: {
        conditioning_to: ['CONDITIONING'],
        conditioning_from: ['CONDITIONING'],
        conditioning_to_strength: ['FLOAT', { default: 1.0, min: 0.0, max: 1.0, step: 0.01 }],
      },
    },
    outputs: [...COND],
    execute: ({ conditioning_to, conditioning_from, conditioning_to_strength }) => {
      const to = conditioning(conditioning_to, 'conditioning_to');
      const from = firstFrom(conditioning(conditioning_from, 'conditioning_from'), 'ConditioningAverage');
      const s = Number(conditioning_to_strength);
      const out: ConditioningEntry[] = to.map(([t1, o]) => {
        const [n, T, D] = t1.shape as [number, number, number];
        const [fn, fT, fD] = from.shape as [number, number, number];
        if (fD !== D) throw nodeError(`The size of tensor a (${D}) must match the size of tensor b (${fD}) at non-singleton dimension 2`);
        if (fn !== 1 && fn !== n) throw nodeError(`The size of tensor a (${n}) must match the size of tensor b (${fn}) at non-singleton dimension 0`);
        // t0: the first T tokens of `from`, zero-padded; t1·s + t0·(1 − s), each product rounded to float32 as torch.
        const data = new Float32Array(n * T * D);
        for (let b = 0; b < n; b++)
          for (let t = 0; t < T; t++)
            for (let d = 0; d < D; d++) {
              const v1 = t1.data[(b * T + t) * D + d]!;
              const v0 = t < fT ? from.data[((fn === 1 ? 0 : b) * fT + t) * D + d]! : 0;
              data[(b * T + t) * D + d] = Math.fround(v1 * s) + Math.fround(v0 * Math.fround(1 - s));
            }
        return [{ shape: [n, T, D], data }, { ...o }];
      });
      return [out];
    },
  },
  {
    name: 'ConditioningConcat',
    displayName: 'Conditioning (Concat)',
    category: 'conditioning',
    inputs: { required: { conditioning_to: ['CONDITIONING'], conditioning_from: ['CONDITIONING'] } },
    outputs: [...COND],
    execute: ({ conditioning_to, conditioning_from }) => {
      const to = conditioning(conditioning_to, 'conditioning_to');
      const from = firstFrom(conditioning(conditioning_from, 'conditioning_from'), 'ConditioningConcat');
      return [
        to.map(([t1, o]): ConditioningEntry => {
          const [n, T, D] = t1.shape as [number, number, number];
          const [fn, fT, fD] = from.shape as [number, number, number];
          if (fn !== n || fD !== D) throw nodeError(`Sizes of tensors must match except in dimension 1. Expected size ${n === fn ? D : n} but got size ${n === fn ? fD : fn} for tensor number 1 in the list.`);
          const data = new Float32Array(n * (T + fT) * D);
          for (let b = 0; b < n; b++) {
            data.set(t1.data.subarray(b * T * D, (b + 1) * T * D), b * (T + fT) * D);
            data.set(from.data.subarray(b * fT * D, (b + 1) * fT * D), (b * (T + fT) + T) * D);
          }
          return [{ shape: [n, T + fT, D], data }, { ...o }];
        }),
      ];
    },
  },
  {
    name: 'ConditioningSetArea',
    displayName: 'Conditioning (Set Area)',
    category: 'conditioning',
    inputs: {
      required: {
        conditioning: ['CONDITIONING'],
        width: ['INT', { default: 64, min: 64, max: MAX_RESOLUTION, step: 8 }],
        height: ['INT', { default: 64, min: 64, max: MAX_RESOLUTION, step: 8 }],
        x: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 8 }],
        y: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 8 }],
        strength: ['FLOAT', { default: 1.0, min: 0.0, max: 10.0, step: 0.01 }],
      },
    },
    outputs: [...COND],
    execute: ({ conditioning: c, width, height, x, y, strength }) => [
      setValues(conditioning(c, 'conditioning'), {
        area: [Math.floor(height / 8), Math.floor(width / 8), Math.floor(y / 8), Math.floor(x / 8)],
        strength,
        set_area_to_bounds: false,
      }),
    ],
  },
  {
    name: 'ConditioningSetAreaPercentage',
    displayName: 'Conditioning (Set Area with Percentage)',
    category: 'conditioning',
    inputs: {
      required: {
        conditioning: ['CONDITIONING'],
        width: ['FLOAT', { default: 1.0, min: 0, max: 1.0, step: 0.01 }],
        height: ['FLOAT', { default: 1.0, min: 0, max: 1.0, step: 0.01 }],
        x: ['FLOAT', { default: 0, min: 0, max: 1.0, step: 0.01 }],
        y: ['FLOAT', { default: 0, min: 0, max: 1.0, step: 0.01 }],
        strength: ['FLOAT', { default: 1.0, min: 0.0, max: 10.0, step: 0.01 }],
      },
    },
    outputs: [...COND],
    execute: ({ conditioning: c, width, height, x, y, strength }) => [
      setValues(conditioning(c, 'conditioning'), { area: ['percentage', height, width, y, x], strength, set_area_to_bounds: false }),
    ],
  },
  {
    name: 'ConditioningSetAreaStrength',
    displayName: 'ConditioningSetAreaStrength',
    category: 'conditioning',
    inputs: { required: { conditioning: ['CONDITIONING'], strength: ['FLOAT', { default: 1.0, min: 0.0, max: 10.0, step: 0.01 }] } },
    outputs: [...COND],
    execute: ({ conditioning: c, strength }) => [setValues(conditioning(c, 'conditioning'), { strength })],
  },
  {
    name: 'ConditioningSetMask',
    displayName: 'Conditioning (Set Mask)',
    category: 'conditioning',
    inputs: {
      required: {
        conditioning: ['CONDITIONING'],
        mask: ['MASK'],
        strength: ['FLOAT', { default: 1.0, min: 0.0, max: 10.0, step: 0.01 }],
        set_cond_area: [['default', 'mask bounds']],
      },
    },
    outputs: [...COND],
    execute: ({ conditioning: c, mask, strength, set_cond_area }) => [
      setValues(conditioning(c, 'conditioning'), { mask: maskTensor(mask), set_area_to_bounds: set_cond_area !== 'default', mask_strength: strength }),
    ],
  },
  {
    name: 'ConditioningZeroOut',
    displayName: 'ConditioningZeroOut',
    category: 'advanced/conditioning',
    inputs: { required: { conditioning: ['CONDITIONING'] } },
    outputs: [...COND],
    execute: ({ conditioning: c }) => [
      conditioning(c, 'conditioning').map(([t, o]): ConditioningEntry => {
        const d: Record<string, unknown> = { ...o };
        for (const k of ['pooled_output', 'conditioning_lyrics']) {
          const v = d[k] as FloatTensor | undefined;
          if (v && v.data instanceof Float32Array) d[k] = { shape: [...v.shape], data: new Float32Array(v.data.length) };
        }
        return [{ shape: [...t.shape], data: new Float32Array(t.data.length) }, d];
      }),
    ],
  },
  {
    name: 'ConditioningSetTimestepRange',
    displayName: 'ConditioningSetTimestepRange',
    category: 'advanced/conditioning',
    inputs: {
      required: {
        conditioning: ['CONDITIONING'],
        start: ['FLOAT', { default: 0.0, min: 0.0, max: 1.0, step: 0.001 }],
        end: ['FLOAT', { default: 1.0, min: 0.0, max: 1.0, step: 0.001 }],
      },
    },
    outputs: [...COND],
    execute: ({ conditioning: c, start, end }) => [setValues(conditioning(c, 'conditioning'), { start_percent: start, end_percent: end })],
  },
];
