import type { NodeDefinition } from './api.ts';
import { MAX_RESOLUTION } from './image-types.ts';
import { type Latent, zeros } from './latent.ts';
import { v3 } from './schema.ts';

/**
 * The model families' empty latents (zeros of each model's latent shape),
 * from the comfy_extras module that defines each: they need no weights, and
 * a later model layer samples into them. Shapes as the reference computes
 * them; a shape over the latent size limit (latent.ts) fails the node.
 */

const INT = (d: number, min: number, max: number, step?: number) => ['INT', step === undefined ? { default: d, min, max } : { default: d, min, max, step }] as ['INT', Record<string, number>];
const BATCH = INT(1, 1, 4096);
const BATCH_TIP = ['INT', { default: 1, min: 1, max: 4096, tooltip: 'The number of latent images in the batch.' }] as ['INT', Record<string, unknown>];
const LATENT = (samples: number[], type?: string): Latent => (type ? { samples: zeros(samples), type } : { samples: zeros(samples) });
const fl = Math.floor;

/** Python's round(): halves to even. */
function pyRound(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

export const emptyLatentNodes: NodeDefinition[] = [
  ...v3('comfy_extras.nodes_sd3', [
    {
      name: 'EmptySD3LatentImage',
      category: 'latent/sd3',
      inputs: { required: { width: INT(1024, 16, MAX_RESOLUTION, 16), height: INT(1024, 16, MAX_RESOLUTION, 16), batch_size: BATCH } },
      outputs: ['LATENT'],
      execute: ({ width, height, batch_size }) => [LATENT([batch_size, 16, fl(height / 8), fl(width / 8)])],
    },
  ]),
  ...(<NodeDefinition[]>[
    {
      name: 'EmptyHunyuanLatentVideo',
      category: 'latent/video',
      inputs: { required: { width: INT(848, 16, MAX_RESOLUTION, 16), height: INT(480, 16, MAX_RESOLUTION, 16), length: INT(25, 1, MAX_RESOLUTION, 4), batch_size: INT(1, 1, 4096) } },
      outputs: ['LATENT'],
      execute: ({ width, height, length, batch_size }) => [LATENT([batch_size, 16, fl((length - 1) / 4) + 1, fl(height / 8), fl(width / 8)])],
    },
    {
      name: 'EmptyHunyuanImageLatent',
      category: 'latent',
      inputs: { required: { width: INT(2048, 64, MAX_RESOLUTION, 32), height: INT(2048, 64, MAX_RESOLUTION, 32), batch_size: INT(1, 1, 4096) } },
      outputs: ['LATENT'],
      execute: ({ width, height, batch_size }) => [LATENT([batch_size, 64, fl(height / 32), fl(width / 32)])],
    },
  ]).map((d): NodeDefinition => ({ ...d, pythonModule: 'comfy_extras.nodes_hunyuan' })),
  ...v3('comfy_extras.nodes_mochi', [
    {
      name: 'EmptyMochiLatentVideo',
      category: 'latent/video',
      inputs: { required: { width: INT(848, 16, MAX_RESOLUTION, 16), height: INT(480, 16, MAX_RESOLUTION, 16), length: INT(25, 7, MAX_RESOLUTION, 6), batch_size: BATCH } },
      outputs: ['LATENT'],
      execute: ({ width, height, length, batch_size }) => [LATENT([batch_size, 12, fl((length - 1) / 6) + 1, fl(height / 8), fl(width / 8)])],
    },
  ]),
  ...v3('comfy_extras.nodes_lt', [
    {
      name: 'EmptyLTXVLatentVideo',
      category: 'latent/video/ltxv',
      inputs: { required: { width: INT(768, 64, MAX_RESOLUTION, 32), height: INT(512, 64, MAX_RESOLUTION, 32), length: INT(97, 1, MAX_RESOLUTION, 8), batch_size: BATCH } },
      outputs: ['LATENT'],
      execute: ({ width, height, length, batch_size }) => [LATENT([batch_size, 128, fl((length - 1) / 8) + 1, fl(height / 32), fl(width / 32)])],
    },
  ]),
  ...v3('comfy_extras.nodes_cosmos', [
    {
      name: 'EmptyCosmosLatentVideo',
      category: 'latent/video',
      inputs: { required: { width: INT(1280, 16, MAX_RESOLUTION, 16), height: INT(704, 16, MAX_RESOLUTION, 16), length: INT(121, 1, MAX_RESOLUTION, 8), batch_size: BATCH } },
      outputs: ['LATENT'],
      execute: ({ width, height, length, batch_size }) => [LATENT([batch_size, 16, fl((length - 1) / 8) + 1, fl(height / 8), fl(width / 8)])],
    },
  ]),
  ...v3('comfy_extras.nodes_stable_cascade', [
    {
      name: 'StableCascade_EmptyLatentImage',
      category: 'latent/stable_cascade',
      inputs: { required: { width: INT(1024, 256, MAX_RESOLUTION, 8), height: INT(1024, 256, MAX_RESOLUTION, 8), compression: INT(42, 4, 128, 1), batch_size: BATCH } },
      outputs: ['LATENT', 'LATENT'],
      outputNames: ['stage_c', 'stage_b'],
      execute: ({ width, height, compression, batch_size }) => [LATENT([batch_size, 16, fl(height / compression), fl(width / compression)]), LATENT([batch_size, 4, fl(height / 4), fl(width / 4)])],
    },
  ]),
  {
    name: 'EmptyLatentAudio',
    displayName: 'Empty Latent Audio',
    category: 'latent/audio',
    pythonModule: 'comfy_extras.nodes_audio',
    inputs: { required: { seconds: ['FLOAT', { default: 47.6, min: 1.0, max: 1000.0, step: 0.1 }], batch_size: BATCH_TIP } },
    outputs: ['LATENT'],
    execute: ({ seconds, batch_size }) => [LATENT([batch_size, 64, pyRound((seconds * 44100) / 2048 / 2) * 2], 'audio')],
  },
  ...v3('comfy_extras.nodes_ace', [
    {
      name: 'EmptyAceStepLatentAudio',
      category: 'latent/audio',
      inputs: { required: { seconds: ['FLOAT', { default: 120.0, min: 1.0, max: 1000.0, step: 0.1 }], batch_size: BATCH_TIP } },
      outputs: ['LATENT'],
      execute: ({ seconds, batch_size }) => [LATENT([batch_size, 8, 16, Math.trunc((seconds * 44100) / 512 / 8)], 'audio')],
    },
  ]),
  ...v3('comfy_extras.nodes_chroma_radiance', [
    {
      name: 'EmptyChromaRadianceLatentImage',
      category: 'latent/chroma_radiance',
      inputs: { required: { width: INT(1024, 16, MAX_RESOLUTION, 16), height: INT(1024, 16, MAX_RESOLUTION, 16), batch_size: BATCH } },
      outputs: ['LATENT'],
      execute: ({ width, height, batch_size }) => [LATENT([batch_size, 3, height, width])],
    },
  ]),
  {
    name: 'EmptyLatentHunyuan3Dv2',
    category: 'latent/3d',
    pythonModule: 'comfy_extras.nodes_hunyuan3d',
    inputs: { required: { resolution: INT(3072, 1, 8192), batch_size: BATCH_TIP } },
    outputs: ['LATENT'],
    execute: ({ resolution, batch_size }) => [LATENT([batch_size, 64, resolution], 'hunyuan3dv2')],
  },
];
