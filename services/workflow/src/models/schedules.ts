/**
 * The SD1.x noise schedule (the reference's ModelSamplingDiscrete with its
 * linear beta schedule) and the schedulers of comfy/samplers.py. torch does
 * these sums in float32 (linspace, powers) after a float64 beta schedule;
 * the same rounding is applied here with Math.fround where it shows.
 */
const f = Math.fround;

export class DiscreteSchedule {
  /** float32 σ for t = 0 … 999. */
  readonly sigmas: Float32Array;
  readonly logSigmas: Float32Array;

  constructor(linearStart = 0.00085, linearEnd = 0.012, timesteps = 1000) {
    this.sigmas = new Float32Array(timesteps);
    this.logSigmas = new Float32Array(timesteps);
    const a = Math.sqrt(linearStart);
    const b = Math.sqrt(linearEnd);
    let cumprod = 1;
    for (let i = 0; i < timesteps; i++) {
      // torch.linspace in float64: start + step·i for the first half, end − step·(n−1−i) for the rest.
      const step = (b - a) / (timesteps - 1);
      const root = i < timesteps / 2 ? a + step * i : b - step * (timesteps - 1 - i);
      cumprod *= 1 - root * root;
      const sigma = Math.sqrt((1 - cumprod) / cumprod);
      this.sigmas[i] = sigma;
      // The reference takes the log of the float64 σ, then rounds.
      this.logSigmas[i] = Math.log(sigma);
    }
  }

  get sigmaMin(): number {
    return this.sigmas[0]!;
  }

  get sigmaMax(): number {
    return this.sigmas[this.sigmas.length - 1]!;
  }

  /** The nearest timestep in log σ (the first on a tie). */
  timestep(sigma: number): number {
    const ls = f(Math.log(sigma));
    let best = 0;
    let bestDist = Infinity;
    for (let i = 0; i < this.logSigmas.length; i++) {
      const d = Math.abs(f(ls - this.logSigmas[i]!));
      if (d < bestDist) {
        bestDist = d;
        best = i;
      }
    }
    return best;
  }

  /** σ at a fractional timestep: log-linear between the neighbours. */
  sigma(t: number): number {
    const tc = Math.min(Math.max(t, 0), this.sigmas.length - 1);
    const lo = Math.floor(tc);
    const hi = Math.ceil(tc);
    const w = f(tc - lo);
    return f(Math.exp(f(f(f(1 - w) * this.logSigmas[lo]!) + f(w * this.logSigmas[hi]!))));
  }

  percentToSigma(percent: number): number {
    if (percent <= 0) return 999999999.9;
    if (percent >= 1) return 0;
    return this.sigma(f(f(1 - percent) * 999));
  }
}

/** torch.linspace in float32. */
export function linspace32(start: number, end: number, steps: number): Float32Array {
  const out = new Float32Array(steps);
  if (steps === 1) {
    out[0] = start;
    return out;
  }
  const s = f(start);
  const e = f(end);
  const step = f(f(e - s) / (steps - 1));
  const half = Math.floor(steps / 2);
  for (let i = 0; i < steps; i++) out[i] = i < half ? f(s + f(step * i)) : f(e - f(step * (steps - i - 1)));
  return out;
}

export const SCHEDULER_NAMES = ['simple', 'sgm_uniform', 'karras', 'exponential', 'ddim_uniform', 'beta', 'normal', 'linear_quadratic', 'kl_optimal'] as const;
/** The schedulers that work here, in the reference's order. */
export const SUPPORTED_SCHEDULERS = ['simple', 'sgm_uniform', 'karras', 'exponential', 'ddim_uniform', 'normal'] as const;
export type SchedulerName = (typeof SUPPORTED_SCHEDULERS)[number];

function withZero(values: ArrayLike<number>): Float32Array {
  const out = new Float32Array(values.length + 1);
  out.set(values as ArrayLike<number>);
  return out;
}

function normalScheduler(s: DiscreteSchedule, steps: number, sgm: boolean): Float32Array {
  const start = s.timestep(s.sigmaMax);
  const end = s.timestep(s.sigmaMin);
  let appendZero = true;
  let ts: Float32Array;
  if (sgm) ts = linspace32(start, end, steps + 1).subarray(0, steps);
  else {
    if (Math.abs(s.sigma(end)) <= 0.00001) {
      steps += 1;
      appendZero = false;
    }
    ts = linspace32(start, end, steps);
  }
  const sigs = Array.from(ts, (t) => s.sigma(t));
  return appendZero ? withZero(sigs) : Float32Array.from(sigs);
}

function simpleScheduler(s: DiscreteSchedule, steps: number): Float32Array {
  const n = s.sigmas.length;
  const ss = n / steps;
  const sigs: number[] = [];
  for (let x = 0; x < steps; x++) sigs.push(s.sigmas[n - 1 - Math.floor(x * ss)]!);
  return withZero(sigs);
}

function ddimScheduler(s: DiscreteSchedule, steps: number): Float32Array {
  let x = 1;
  let sigs: number[];
  if (Math.abs(s.sigmas[x]!) <= 0.00001) {
    steps += 1;
    sigs = [];
  } else sigs = [0];
  const ss = Math.max(Math.floor(s.sigmas.length / steps), 1);
  while (x < s.sigmas.length) {
    sigs.push(s.sigmas[x]!);
    x += ss;
  }
  return Float32Array.from(sigs.reverse());
}

export function karrasSigmas(n: number, sigmaMin: number, sigmaMax: number, rho = 7): Float32Array {
  const ramp = linspace32(0, 1, n);
  // Python floats (doubles) meet a float32 tensor: each scalar is rounded to float32 where it joins.
  const minInv = sigmaMin ** (1 / rho);
  const maxInv = sigmaMax ** (1 / rho);
  const span = f(minInv - maxInv);
  return withZero(Array.from(ramp, (r) => f(f(f(maxInv) + f(r * span)) ** rho)));
}

export function exponentialSigmas(n: number, sigmaMin: number, sigmaMax: number): Float32Array {
  return withZero(Array.from(linspace32(Math.log(sigmaMax), Math.log(sigmaMin), n), (v) => f(Math.exp(v))));
}

/** comfy.samplers.calculate_sigmas. */
export function calculateSigmas(s: DiscreteSchedule, scheduler: string, steps: number): Float32Array {
  switch (scheduler) {
    case 'simple':
      return simpleScheduler(s, steps);
    case 'sgm_uniform':
      return normalScheduler(s, steps, true);
    case 'karras':
      return karrasSigmas(steps, s.sigmaMin, s.sigmaMax);
    case 'exponential':
      return exponentialSigmas(steps, s.sigmaMin, s.sigmaMax);
    case 'ddim_uniform':
      return ddimScheduler(s, steps);
    case 'normal':
      return normalScheduler(s, steps, false);
    default:
      throw new Error(`error invalid scheduler ${scheduler}`);
  }
}

/** Samplers for which KSampler takes one step more and drops the second-to-last σ. */
const DISCARD_PENULTIMATE = new Set(['dpm_2', 'dpm_2_ancestral', 'uni_pc', 'uni_pc_bh2']);

/** comfy.samplers.KSampler's σ list for steps and denoise. */
export function ksamplerSigmas(s: DiscreteSchedule, sampler: string, scheduler: string, steps: number, denoise = 1): Float32Array {
  const calc = (n: number) => {
    if (!DISCARD_PENULTIMATE.has(sampler)) return calculateSigmas(s, scheduler, n);
    const sig = calculateSigmas(s, scheduler, n + 1);
    const out = new Float32Array(sig.length - 1);
    out.set(sig.subarray(0, sig.length - 2));
    out[out.length - 1] = sig[sig.length - 1]!;
    return out;
  };
  if (denoise > 0.9999) return calc(steps);
  if (denoise <= 0) return new Float32Array(0);
  const all = calc(Math.trunc(steps / denoise));
  return all.slice(Math.max(0, all.length - (steps + 1)));
}
