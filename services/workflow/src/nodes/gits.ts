import fs from 'node:fs';
import path from 'node:path';
import type { NodeDefinition } from './api.ts';
import { Tensor } from './latent.ts';
import { loglinearInterp, pyRound } from './sigmas.ts';

/**
 * GITSScheduler (comfy_extras.nodes_gits): the GITS paper's published noise
 * levels, per `coeff` (0.80 … 1.50 by 0.05), a schedule for each of 2 … 20
 * steps; more steps interpolate the 20-step one log-linearly. The table is
 * data (`data/gits-noise-levels.json`, its source named inside), read once.
 */
let levels: Record<string, number[][]> | undefined;

function table(): Record<string, number[][]> {
  levels ??= (JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'data', 'gits-noise-levels.json'), 'utf8')) as { levels: Record<string, number[][]> }).levels;
  return levels;
}

/** Python's round(x, 2) for the coeff key ("1.20"); a coeff between the table's rows is a KeyError, as in the reference. */
function coeffKey(coeff: number): string {
  const key = (pyRound(coeff * 100) / 100).toFixed(2);
  if (!Object.hasOwn(table(), key)) throw Object.assign(new Error(String(pyRound(coeff * 100) / 100)), { pyType: 'KeyError' });
  return key;
}

export function gitsSigmas(coeff: number, steps: number, denoise: number): Tensor {
  let total = steps;
  if (denoise < 1.0) {
    if (denoise <= 0.0) return new Tensor([0], new Float32Array(0));
    total = pyRound(steps * denoise);
  }
  const rows = table()[coeffKey(coeff)]!;
  const sigmas = steps <= 20 ? [...rows[steps - 2]!] : loglinearInterp(rows[rows.length - 1]!, steps + 1);
  const out = Float32Array.from(sigmas.slice(Math.max(0, sigmas.length - (total + 1))));
  out[out.length - 1] = 0;
  return new Tensor([out.length], out);
}

export const gitsNodes: NodeDefinition[] = [
  {
    name: 'GITSScheduler',
    category: 'sampling/custom_sampling/schedulers',
    pythonModule: 'comfy_extras.nodes_gits',
    inputs: {
      required: {
        coeff: ['FLOAT', { default: 1.2, min: 0.8, max: 1.5, step: 0.05 }],
        steps: ['INT', { default: 10, min: 2, max: 1000 }],
        denoise: ['FLOAT', { default: 1.0, min: 0.0, max: 1.0, step: 0.01 }],
      },
    },
    outputs: ['SIGMAS'],
    outputTooltips: [null as unknown as string],
    execute: ({ coeff, steps, denoise }) => [gitsSigmas(coeff, steps, denoise)],
  },
];
