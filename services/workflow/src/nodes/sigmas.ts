import type { InputSpec, NodeDefinition } from './api.ts';
import { Tensor } from './latent.ts';

/**
 * SIGMAS nodes of comfy_extras.nodes_custom_sampler that need no model: the
 * k-diffusion schedules (Karras, exponential, polyexponential, VP, Laplace)
 * and the sigma list tools. A SIGMAS value is a 1-D float32 `Tensor`
 * (latent.ts), the noise levels a sampler steps through, ending in 0 for the
 * schedules that append one. Arithmetic follows torch on float32 tensors:
 * torch.linspace's two-sided formula, then each operation rounded to float32.
 */

const f32 = Math.fround;
const MAX_STEPS = 10000;

/** torch.linspace(start, end, n) in float32: start + step·i for the first half, end − step·(n − 1 − i) for the rest. */
export function linspace(start: number, end: number, n: number): Float32Array {
  const out = new Float32Array(n);
  if (n === 1) {
    out[0] = start;
    return out;
  }
  const s = f32(start);
  const e = f32(end);
  const step = f32(f32(e - s) / (n - 1));
  const half = Math.floor(n / 2);
  for (let i = 0; i < n; i++) out[i] = i < half ? f32(s + f32(step * i)) : f32(e - f32(step * (n - i - 1)));
  return out;
}

function appendZero(v: Float32Array): Tensor {
  const out = new Float32Array(v.length + 1);
  out.set(v);
  return new Tensor([out.length], out);
}

function checkSigmas(v: unknown): Tensor {
  if (!(v instanceof Tensor) || v.ndim !== 1) throw new TypeError('expected SIGMAS (a 1-D tensor)');
  return v;
}

/** k_diffusion.sampling.get_sigmas_karras. */
export function karras(n: number, sigmaMin: number, sigmaMax: number, rho: number): Tensor {
  const ramp = linspace(0, 1, n);
  const minInv = f32(sigmaMin ** (1 / rho));
  const maxInv = f32(sigmaMax ** (1 / rho));
  const d = f32(minInv - maxInv);
  return appendZero(ramp.map((r) => f32(f32(maxInv + f32(r * d)) ** rho)));
}

export function exponential(n: number, sigmaMin: number, sigmaMax: number): Tensor {
  return appendZero(linspace(Math.log(sigmaMax), Math.log(sigmaMin), n).map((v) => f32(Math.exp(v))));
}

export function polyexponential(n: number, sigmaMin: number, sigmaMax: number, rho: number): Tensor {
  const span = f32(Math.log(sigmaMax) - Math.log(sigmaMin));
  const lo = f32(Math.log(sigmaMin));
  return appendZero(linspace(1, 0, n).map((r) => f32(Math.exp(f32(f32(f32(f32(r) ** rho) * span) + lo)))));
}

export function vp(n: number, betaD: number, betaMin: number, epsS: number): Tensor {
  const bd = f32(betaD);
  const bm = f32(betaMin);
  return appendZero(linspace(1, epsS, n).map((t) => f32(Math.sqrt(f32(Math.expm1(f32(f32(f32(bd * f32(t * t)) / 2) + f32(bm * t))))))));
}

/** get_sigmas_laplace: no trailing zero, as the reference. */
export function laplace(n: number, sigmaMin: number, sigmaMax: number, mu: number, beta: number): Tensor {
  const out = linspace(0, 1, n).map((x) => {
    const d = f32(0.5 - x);
    const lmb = f32(mu - f32(f32(beta * Math.sign(d)) * f32(Math.log(f32(f32(1 - f32(2 * Math.abs(d))) + f32(1e-5))))));
    return Math.min(f32(sigmaMax), Math.max(f32(sigmaMin), f32(Math.exp(lmb))));
  });
  return new Tensor([out.length], out);
}

/** Python's slice a[start:stop] of a list of n (None = undefined). */
function pySlice(v: Float32Array, start: number | undefined, stop: number | undefined): Tensor {
  const n = v.length;
  const norm = (i: number) => (i < 0 ? Math.max(0, i + n) : Math.min(i, n));
  const a = start === undefined ? 0 : norm(start);
  const b = stop === undefined ? n : norm(stop);
  const out = v.slice(a, Math.max(a, b));
  return new Tensor([out.length], out);
}

export function pyRound(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

const SIGMA_RANGE: Record<string, InputSpec> = {
  sigma_max: ['FLOAT', { default: 14.614642, min: 0.0, max: 5000.0, step: 0.01, round: false }],
  sigma_min: ['FLOAT', { default: 0.0291675, min: 0.0, max: 5000.0, step: 0.01, round: false }],
};
const STEPS: InputSpec = ['INT', { default: 20, min: 1, max: MAX_STEPS }];
const SCHEDULERS = 'sampling/custom_sampling/schedulers';
const SIGMA_TOOLS = 'sampling/custom_sampling/sigmas';

const defs: NodeDefinition[] = [
    {
      name: 'KarrasScheduler',
      category: SCHEDULERS,
      inputs: { required: { steps: STEPS, ...SIGMA_RANGE, rho: ['FLOAT', { default: 7.0, min: 0.0, max: 100.0, step: 0.01, round: false }] } },
      outputs: ['SIGMAS'],
      execute: ({ steps, sigma_max, sigma_min, rho }) => [karras(steps, sigma_min, sigma_max, rho)],
    },
    {
      name: 'ExponentialScheduler',
      category: SCHEDULERS,
      inputs: { required: { steps: STEPS, ...SIGMA_RANGE } },
      outputs: ['SIGMAS'],
      execute: ({ steps, sigma_max, sigma_min }) => [exponential(steps, sigma_min, sigma_max)],
    },
    {
      name: 'PolyexponentialScheduler',
      category: SCHEDULERS,
      inputs: { required: { steps: STEPS, ...SIGMA_RANGE, rho: ['FLOAT', { default: 1.0, min: 0.0, max: 100.0, step: 0.01, round: false }] } },
      outputs: ['SIGMAS'],
      execute: ({ steps, sigma_max, sigma_min, rho }) => [polyexponential(steps, sigma_min, sigma_max, rho)],
    },
    {
      name: 'LaplaceScheduler',
      category: SCHEDULERS,
      inputs: {
        required: {
          steps: STEPS,
          ...SIGMA_RANGE,
          mu: ['FLOAT', { default: 0.0, min: -10.0, max: 10.0, step: 0.1, round: false }],
          beta: ['FLOAT', { default: 0.5, min: 0.0, max: 10.0, step: 0.1, round: false }],
        },
      },
      outputs: ['SIGMAS'],
      execute: ({ steps, sigma_max, sigma_min, mu, beta }) => [laplace(steps, sigma_min, sigma_max, mu, beta)],
    },
    {
      name: 'VPScheduler',
      category: SCHEDULERS,
      inputs: {
        required: {
          steps: STEPS,
          beta_d: ['FLOAT', { default: 19.9, min: 0.0, max: 5000.0, step: 0.01, round: false }],
          beta_min: ['FLOAT', { default: 0.1, min: 0.0, max: 5000.0, step: 0.01, round: false }],
          eps_s: ['FLOAT', { default: 0.001, min: 0.0, max: 1.0, step: 0.0001, round: false }],
        },
      },
      outputs: ['SIGMAS'],
      execute: ({ steps, beta_d, beta_min, eps_s }) => [vp(steps, beta_d, beta_min, eps_s)],
    },
    {
      name: 'SplitSigmas',
      category: SIGMA_TOOLS,
      inputs: { required: { sigmas: ['SIGMAS'], step: ['INT', { default: 0, min: 0, max: MAX_STEPS }] } },
      outputs: ['SIGMAS', 'SIGMAS'],
      outputNames: ['high_sigmas', 'low_sigmas'],
      execute: ({ sigmas, step }) => {
        const s = checkSigmas(sigmas).data;
        return [pySlice(s, undefined, step + 1), pySlice(s, step, undefined)];
      },
    },
    {
      name: 'SplitSigmasDenoise',
      category: SIGMA_TOOLS,
      inputs: { required: { sigmas: ['SIGMAS'], denoise: ['FLOAT', { default: 1.0, min: 0.0, max: 1.0, step: 0.01 }] } },
      outputs: ['SIGMAS', 'SIGMAS'],
      outputNames: ['high_sigmas', 'low_sigmas'],
      execute: ({ sigmas, denoise }) => {
        const s = checkSigmas(sigmas).data;
        const steps = Math.max(s.length - 1, 0);
        const total = pyRound(steps * denoise);
        // sigmas[:-0] is empty in Python, as the reference gives for denoise 0.
        return [pySlice(s, undefined, -total), pySlice(s, -(total + 1), undefined)];
      },
    },
    {
      name: 'FlipSigmas',
      category: SIGMA_TOOLS,
      inputs: { required: { sigmas: ['SIGMAS'] } },
      outputs: ['SIGMAS'],
      execute: ({ sigmas }) => {
        const s = checkSigmas(sigmas).data;
        if (s.length === 0) return [sigmas];
        const out = s.slice().reverse();
        if (out[0] === 0) out[0] = 0.0001;
        return [new Tensor([out.length], out)];
      },
    },
    {
      name: 'SetFirstSigma',
      category: SIGMA_TOOLS,
      inputs: { required: { sigmas: ['SIGMAS'], sigma: ['FLOAT', { default: 136.0, min: 0.0, max: 20000.0, step: 0.001, round: false }] } },
      outputs: ['SIGMAS'],
      execute: ({ sigmas, sigma }) => {
        const out = checkSigmas(sigmas).data.slice();
        if (out.length === 0) throw Object.assign(new Error('index 0 is out of bounds for dimension 0 with size 0'), { pyType: 'IndexError' });
        out[0] = sigma;
        return [new Tensor([out.length], out)];
      },
    },
    {
      name: 'ExtendIntermediateSigmas',
      category: SIGMA_TOOLS,
      inputs: {
        required: {
          sigmas: ['SIGMAS'],
          steps: ['INT', { default: 2, min: 1, max: 100 }],
          start_at_sigma: ['FLOAT', { default: -1.0, min: -1.0, max: 20000.0, step: 0.01, round: false }],
          end_at_sigma: ['FLOAT', { default: 12.0, min: 0.0, max: 20000.0, step: 0.01, round: false }],
          spacing: [['linear', 'cosine', 'sine']],
        },
      },
      outputs: ['SIGMAS'],
      execute: ({ sigmas, steps, start_at_sigma, end_at_sigma, spacing }) => {
        const s = checkSigmas(sigmas).data;
        const start = start_at_sigma < 0 ? Infinity : start_at_sigma;
        const interp = spacing === 'cosine' ? (x: number) => f32(Math.sin(f32(f32(x * Math.PI) / 2))) : spacing === 'sine' ? (x: number) => f32(1 - f32(Math.cos(f32(f32(x * Math.PI) / 2)))) : (x: number) => x;
        const xs = Array.from(linspace(0, 1, steps + 1).subarray(1, steps)).map(interp);
        const out: number[] = [];
        for (let i = 0; i < s.length - 1; i++) {
          const cur = s[i]!;
          out.push(cur);
          if (end_at_sigma <= cur && cur <= start) for (const x of xs) out.push(f32(f32(x * f32(s[i + 1]! - cur)) + cur));
        }
        if (s.length > 0) out.push(s[s.length - 1]!);
        return [new Tensor([out.length], Float32Array.from(out))];
      },
    },
];

/** Align Your Steps noise levels (NVIDIA's published 10-step schedules, as the reference lists them). */
const AYS_LEVELS: Record<string, number[]> = {
  SD1: [14.6146412293, 6.4745760956, 3.8636745985, 2.694615152, 1.8841921177, 1.3943805092, 0.9642583904, 0.6523686016, 0.3977456272, 0.1515232662, 0.0291671582],
  SDXL: [14.6146412293, 6.3184485287, 3.7681790315, 2.1811480769, 1.3405244945, 0.8620721141, 0.5550693289, 0.3798540708, 0.2332364134, 0.1114188177, 0.0291671582],
  SVD: [700.0, 54.5, 15.886, 7.977, 4.248, 1.789, 0.981, 0.403, 0.173, 0.034, 0.002],
};

/** loglinear_interp: np.interp of the reversed log levels on an even grid (float64, as numpy). */
export function loglinearInterp(levels: number[], n: number): number[] {
  const ys = levels.map(Math.log).reverse();
  const m = ys.length;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const x = n === 1 ? 0 : i / (n - 1);
    const pos = x * (m - 1);
    const k = Math.min(m - 2, Math.floor(pos));
    const xk = k / (m - 1);
    const xk1 = (k + 1) / (m - 1);
    out.push(Math.exp(ys[k]! + ((ys[k + 1]! - ys[k]!) * (x - xk)) / (xk1 - xk)));
  }
  return out.reverse();
}

/** OptimalStepsScheduler's levels (the OptimalSteps paper's schedules, as the reference lists them). */
const OPTIMAL_LEVELS: Record<string, number[]> = {
  FLUX: [0.9968, 0.9886, 0.9819, 0.975, 0.966, 0.9471, 0.9158, 0.8287, 0.5512, 0.2808, 0.001],
  Wan: [1.0, 0.997, 0.995, 0.993, 0.991, 0.989, 0.987, 0.985, 0.98, 0.975, 0.973, 0.968, 0.96, 0.946, 0.927, 0.902, 0.864, 0.776, 0.539, 0.208, 0.001],
  Chroma: [
    0.992, 0.99, 0.988, 0.985, 0.982, 0.978, 0.973, 0.968, 0.961, 0.953, 0.943, 0.931, 0.917, 0.9, 0.881, 0.858, 0.832, 0.802, 0.769, 0.731, 0.69, 0.646, 0.599, 0.55, 0.501, 0.451, 0.402, 0.355, 0.311, 0.27, 0.232,
    0.199, 0.169, 0.143, 0.12, 0.101, 0.084, 0.07, 0.058, 0.048, 0.001,
  ],
};

export function alignYourSteps(modelType: string, steps: number, denoise: number): Tensor {
  return tableSchedule(AYS_LEVELS, modelType, steps, denoise);
}

/** The shared body of AlignYourStepsScheduler and OptimalStepsScheduler. */
export function tableSchedule(table: Record<string, number[]>, modelType: string, steps: number, denoise: number): Tensor {
  let total = steps;
  if (denoise < 1.0) {
    if (denoise <= 0.0) return new Tensor([0], new Float32Array(0));
    total = pyRound(steps * denoise);
  }
  let sigmas = Object.hasOwn(table, modelType) ? table[modelType] : undefined;
  if (!sigmas) throw Object.assign(new Error(`'${modelType}'`), { pyType: 'KeyError' });
  if (steps + 1 !== sigmas.length) sigmas = loglinearInterp(sigmas, steps + 1);
  const out = Float32Array.from(sigmas.slice(Math.max(0, sigmas.length - (total + 1))));
  out[out.length - 1] = 0;
  return new Tensor([out.length], out);
}

/** LTXVScheduler: a shifted linear schedule, the shift set by the latent's token count, optionally stretched to end at `terminal`. */
export function ltxvSigmas(steps: number, maxShift: number, baseShift: number, stretch: boolean, terminal: number, tokens: number): Tensor {
  const lin = linspace(1, 0, steps + 1);
  const mm = (maxShift - baseShift) / (4096 - 1024);
  const b = baseShift - mm * 1024;
  const e = f32(Math.exp(tokens * mm + b));
  const s = lin.map((v) => (v !== 0 ? f32(e / f32(e + f32(f32(1 / v) - 1))) : 0));
  if (stretch) {
    const nz = [...s.keys()].filter((i) => s[i] !== 0);
    if (nz.length > 0) {
      const scale = f32(f32(1 - s[nz[nz.length - 1]!]!) / f32(1 - terminal));
      for (const i of nz) s[i] = f32(1 - f32(f32(1 - s[i]!) / scale));
    }
  }
  return new Tensor([s.length], s);
}

const tableSchedulers: NodeDefinition[] = [
  {
    name: 'AlignYourStepsScheduler',
    category: SCHEDULERS,
    pythonModule: 'comfy_extras.nodes_align_your_steps',
    inputs: { required: { model_type: ['COMBO', { multiselect: false, options: ['SD1', 'SDXL', 'SVD'] }], steps: ['INT', { default: 10, min: 1, max: 10000 }], denoise: ['FLOAT', { default: 1.0, min: 0.0, max: 1.0, step: 0.01 }] } },
    outputs: ['SIGMAS'],
    outputTooltips: [null as unknown as string],
    execute: ({ model_type, steps, denoise }) => [alignYourSteps(model_type, steps, denoise)],
  },
  {
    name: 'OptimalStepsScheduler',
    category: SCHEDULERS,
    pythonModule: 'comfy_extras.nodes_optimalsteps',
    inputs: { required: { model_type: ['COMBO', { multiselect: false, options: ['FLUX', 'Wan', 'Chroma'] }], steps: ['INT', { default: 20, min: 3, max: 1000 }], denoise: ['FLOAT', { default: 1.0, min: 0.0, max: 1.0, step: 0.01 }] } },
    outputs: ['SIGMAS'],
    outputTooltips: [null as unknown as string],
    execute: ({ model_type, steps, denoise }) => [tableSchedule(OPTIMAL_LEVELS, model_type, steps, denoise)],
  },
  {
    name: 'LTXVScheduler',
    category: SCHEDULERS,
    pythonModule: 'comfy_extras.nodes_lt',
    inputs: {
      required: {
        steps: ['INT', { default: 20, min: 1, max: 10000 }],
        max_shift: ['FLOAT', { default: 2.05, min: 0.0, max: 100.0, step: 0.01 }],
        base_shift: ['FLOAT', { default: 0.95, min: 0.0, max: 100.0, step: 0.01 }],
        stretch: ['BOOLEAN', { default: true, tooltip: 'Stretch the sigmas to be in the range [terminal, 1].' }],
        terminal: ['FLOAT', { default: 0.1, min: 0.0, max: 0.99, step: 0.01, tooltip: 'The terminal value of the sigmas after stretching.' }],
      },
      optional: { latent: ['LATENT', {}] },
    },
    outputs: ['SIGMAS'],
    outputTooltips: [null as unknown as string],
    execute: ({ steps, max_shift, base_shift, stretch, terminal, latent }) => {
      const tokens = latent?.samples instanceof Tensor ? latent.samples.shape.slice(2).reduce((a: number, b: number) => a * b, 1) : 4096;
      return [ltxvSigmas(steps, max_shift, base_shift, stretch === true, terminal, tokens)];
    },
  },
];

export const sigmaNodes: NodeDefinition[] = [...defs.map((d) => ({ ...d, pythonModule: 'comfy_extras.nodes_custom_sampler' })), ...tableSchedulers];
