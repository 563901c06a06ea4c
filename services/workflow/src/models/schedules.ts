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
export const SUPPORTED_SCHEDULERS = ['simple', 'sgm_uniform', 'karras', 'exponential', 'ddim_uniform', 'beta', 'normal', 'linear_quadratic', 'kl_optimal'] as const;
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

/** ln Γ(x) for x > 0 (Lanczos, g = 7). */
function lnGamma(x: number): number {
  const c = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61503916999185, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - lnGamma(1 - x);
  x -= 1;
  let a = c[0]!;
  const t = x + 7.5;
  for (let i = 1; i < 9; i++) a += c[i]! / (x + i);
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(a);
}

/** The regularised incomplete beta function I_x(a, b) by its continued fraction (modified Lentz). */
function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  if (x > (a + 1) / (a + b + 2)) return 1 - incompleteBeta(1 - x, b, a);
  const front = Math.exp(a * Math.log(x) + b * Math.log(1 - x) - (lnGamma(a) + lnGamma(b) - lnGamma(a + b))) / a;
  const tiny = 1e-300;
  let f = 1;
  let c = 1;
  let d = 0;
  for (let i = 0; i <= 400; i++) {
    const m = Math.floor(i / 2);
    let num: number;
    if (i === 0) num = 1;
    else if (i % 2 === 0) num = (m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m));
    else num = -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1 + num * d;
    if (Math.abs(d) < tiny) d = tiny;
    d = 1 / d;
    c = 1 + num / c;
    if (Math.abs(c) < tiny) c = tiny;
    const cd = c * d;
    f *= cd;
    if (Math.abs(1 - cd) < 1e-16) break;
  }
  return front * (f - 1);
}

/** scipy.stats.beta.ppf: the x with I_x(a, b) = p, by bisection to double precision. */
export function betaPpf(p: number, a: number, b: number): number {
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 200 && hi - lo > 1e-17; i++) {
    const mid = (lo + hi) / 2;
    if (incompleteBeta(mid, a, b) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

export function betaScheduler(s: DiscreteSchedule, steps: number, alpha = 0.6, beta = 0.6): Float32Array {
  const total = s.sigmas.length - 1;
  const sigs: number[] = [];
  let last = -1;
  for (let i = 0; i < steps; i++) {
    // numpy.rint rounds half to even.
    const v = betaPpf(1 - i / steps, alpha, beta) * total;
    let t = Math.round(v);
    if (Math.abs(v - Math.trunc(v)) === 0.5 && t % 2 !== 0) t -= 1;
    if (t !== last) sigs.push(s.sigmas[t]!);
    last = t;
  }
  return withZero(sigs);
}

function linearQuadratic(s: DiscreteSchedule, steps: number, threshold = 0.025): Float32Array {
  let sched: number[];
  if (steps === 1) sched = [1, 0];
  else {
    const linearSteps = Math.floor(steps / 2);
    const lin = Array.from({ length: linearSteps }, (_, i) => (i * threshold) / linearSteps);
    const diff = linearSteps - threshold * steps;
    const quadSteps = steps - linearSteps;
    const qc = diff / (linearSteps * quadSteps ** 2);
    const lc = threshold / linearSteps - (2 * diff) / quadSteps ** 2;
    const k = qc * linearSteps ** 2;
    const quad = Array.from({ length: steps - linearSteps }, (_, n) => {
      const i = linearSteps + n;
      return qc * i ** 2 + lc * i + k;
    });
    sched = [...lin, ...quad, 1].map((x) => 1 - x);
  }
  return Float32Array.from(sched, (v) => f(f(v) * s.sigmaMax));
}

function klOptimal(n: number, sigmaMin: number, sigmaMax: number): Float32Array {
  const out = new Float32Array(n + 1);
  const aMin = f(Math.atan(sigmaMin));
  const aMax = f(Math.atan(sigmaMax));
  for (let i = 0; i < n; i++) {
    const adj = f(i / (n - 1));
    out[i] = f(Math.tan(f(f(adj * aMin) + f(f(1 - adj) * aMax))));
  }
  return out;
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
    case 'beta':
      return betaScheduler(s, steps);
    case 'linear_quadratic':
      return linearQuadratic(s, steps);
    case 'kl_optimal':
      return klOptimal(steps, s.sigmaMin, s.sigmaMax);
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
