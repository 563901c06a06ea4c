/**
 * The reference's samplers (comfy/k_diffusion/sampling.py, its DPM-Solver,
 * DEIS and SA-Solver helpers, and comfy/extra_samplers/uni_pc.py) for
 * ε-prediction models, over flat float32 latents. `model(x, σ)` returns the
 * denoised latent (guidance already applied); it is awaited, so a sampler
 * never holds the event loop while the network runs.
 *
 * Noise: the ancestral and SDE samplers draw from a torch generator seeded
 * with the sampling seed (the reference's default_noise_sampler), the
 * DPM-Solver++ SDE family from a Brownian tree with that seed (brownian.ts),
 * so a seed gives the reference's noise. Scalars that feed a noise query are
 * computed in float32 as torch computes them (the tree rounds its query
 * times to 6 decimals, so a last-bit difference would move the query).
 */
import { brownianNoiseSampler } from './brownian.ts';
import { seedLow32, TorchGenerator } from './noise.ts';
import { roundHalfEven } from './conditioning.ts';
import { linspace32 } from './schedules.ts';

/** x → the denoised latent at σ; `shape` is x's when a sampler changed the latent's size (SamplerLCMUpscale). */
export type Denoiser = (x: Float32Array, sigma: number, shape?: readonly number[]) => Promise<Float32Array>;
/** (σ, σ_next) → unit-variance noise the size of the latent. */
export type NoiseSampler = (sigma: number, sigmaNext: number) => Float32Array;

export interface StepInfo {
  i: number;
  x: Float32Array;
  denoised: Float32Array;
  sigma: number;
  total: number;
  /** x's shape, when the sampler changed the latent's size. */
  shape?: readonly number[];
}

export interface SamplerContext {
  seed: number | bigint | string;
  /** The unconditional prediction of the last model call (CFG++ samplers; the reference's post-CFG hook). */
  uncond?: () => Float32Array;
  /** Called after each step's first model call (previews, progress); may throw to interrupt. */
  callback?: (info: StepInfo) => void;
  /** The model's sampling percent → σ (sa_solver's default stochastic interval). */
  percentToSigma?: (percent: number) => number;
  /** The latent's shape [b, c, h, w] (a sampler that resizes starts from it). */
  shape?: readonly number[];
  /** comfy.utils.common_upscale of a latent (crop disabled) with one of its methods. */
  upscale?: (x: Float32Array, shape: readonly number[], width: number, height: number, method: string) => Float32Array;
  /** torch's global generator as the initial noise left it (torch.randn_like in a sampler draws from it). */
  globalRandn?: () => (count: number) => Float32Array;
  /** Set by a sampler that returns a latent of another size. */
  outShape?: readonly number[];
}

/** A sampler's extra options (the reference's extra_options: eta, s_noise, order, …). */
export type SamplerOptions = Readonly<Record<string, number | string | boolean | undefined>>;

type Sampler = (model: Denoiser, x: Float32Array, sigmas: Float32Array, ctx: SamplerContext, opts?: SamplerOptions) => Promise<Float32Array>;

/** The reference's KSampler sampler list, in its order. */
export const SAMPLER_NAMES = [
  'euler', 'euler_cfg_pp', 'euler_ancestral', 'euler_ancestral_cfg_pp', 'heun', 'heunpp2', 'dpm_2', 'dpm_2_ancestral',
  'lms', 'dpm_fast', 'dpm_adaptive', 'dpmpp_2s_ancestral', 'dpmpp_2s_ancestral_cfg_pp', 'dpmpp_sde', 'dpmpp_sde_gpu',
  'dpmpp_2m', 'dpmpp_2m_cfg_pp', 'dpmpp_2m_sde', 'dpmpp_2m_sde_gpu', 'dpmpp_2m_sde_heun', 'dpmpp_2m_sde_heun_gpu', 'dpmpp_3m_sde', 'dpmpp_3m_sde_gpu', 'ddpm', 'lcm',
  'ipndm', 'ipndm_v', 'deis', 'res_multistep', 'res_multistep_cfg_pp', 'res_multistep_ancestral', 'res_multistep_ancestral_cfg_pp',
  'gradient_estimation', 'gradient_estimation_cfg_pp', 'er_sde', 'seeds_2', 'seeds_3', 'sa_solver', 'sa_solver_pece',
  'ddim', 'uni_pc', 'uni_pc_bh2',
] as const;

const f = Math.fround;

// ---------------------------------------------------------------- vector helpers

/** Σ cₖ·vₖ elementwise: every step body is a few of these. */
function lin(...terms: [number, Float32Array][]): Float32Array {
  const n = terms[0]![1].length;
  const out = new Float32Array(n);
  for (const [c, v] of terms) {
    if (c === 0) continue;
    for (let i = 0; i < n; i++) out[i]! += c * v[i]!;
  }
  return out;
}

/** (x − denoised) / σ */
function toD(x: Float32Array, sigma: number, denoised: Float32Array): Float32Array {
  const out = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = (x[i]! - denoised[i]!) / sigma;
  return out;
}

/** Σ coeffs[k]·vs[k], with any NaN coefficient taken as 0 (torch.nan_to_num on the coefficients). */
function combine(coeffs: ArrayLike<number>, vs: Float32Array[]): Float32Array {
  return lin(...vs.map((v, k): [number, Float32Array] => [Number.isNaN(coeffs[k]!) ? 0 : coeffs[k]!, v]));
}

// ---------------------------------------------------------------- scalar helpers (float32 where torch's rounding shows)

/** get_ancestral_step on float32 σ tensors, rounded as torch rounds each operation (σ_down cancels badly in float32). */
export function ancestralStep(sigmaFrom: number, sigmaTo: number, eta = 1): [down: number, up: number] {
  if (!eta) return [sigmaTo, 0];
  const to2 = f(sigmaTo * sigmaTo);
  const from2 = f(sigmaFrom * sigmaFrom);
  const up = Math.min(sigmaTo, f(eta * f(Math.sqrt(f(f(to2 * f(from2 - to2)) / from2)))));
  return [f(Math.sqrt(f(to2 - f(up * up)))), up];
}

/** λ = −log σ (half log-SNR of an ε model) in float32. */
const lambdaOf = (sigma: number) => f(-f(Math.log(sigma)));
/** σ = exp(−λ) in float32. */
const sigmaOfLambda = (lambda: number) => f(Math.exp(f(-lambda)));

/** exp(lerp(log a, log b, ½)) in float32 as torch computes it. */
function logMid(a: number, b: number): number {
  const la = f(Math.log(a));
  const lb = f(Math.log(b));
  return f(Math.exp(f(la + 0.5 * (lb - la))));
}

/** torch.lerp for scalars: a + w(b − a), or b − (b − a)(1 − w) for w ≥ ½. */
const lerp = (a: number, b: number, w: number) => (w < 0.5 ? a + w * (b - a) : b - (b - a) * (1 - w));

/** The seed as a non-negative integer (the Brownian tree's entropy). */
function seedBig(seed: SamplerContext['seed']): bigint {
  const b = typeof seed === 'bigint' ? seed : BigInt(typeof seed === 'string' ? seed : Math.trunc(seed));
  return b < 0n ? BigInt.asUintN(64, b) : b;
}

const num = (opts: SamplerOptions, key: string, fallback: number): number => (typeof opts[key] === 'number' ? (opts[key] as number) : fallback);

/** default_noise_sampler: one torch generator seeded once, drawn at each call. */
function defaultNoise(ctx: SamplerContext, n: number): NoiseSampler {
  let gen: TorchGenerator | undefined;
  return () => (gen ??= new TorchGenerator(seedLow32(ctx.seed))).randn(n);
}

function uncondOf(ctx: SamplerContext): Float32Array {
  const u = ctx.uncond?.();
  if (!u) throw new Error('a CFG++ sampler needs the unconditional prediction');
  return u;
}

/**
 * The loop most samplers share: the model at σᵢ, the step callback, then the
 * step body. `makeStep` is called once per run, so its closure holds the
 * sampler's history (previous predictions, step sizes).
 */
interface Step {
  i: number;
  x: Float32Array;
  denoised: Float32Array;
  sigma: number;
  next: number;
}
function stepSampler(makeStep: (model: Denoiser, sigmas: Float32Array, ctx: SamplerContext, opts: SamplerOptions, n: number) => (s: Step) => Promise<Float32Array> | Float32Array): Sampler {
  return async (model, x, sigmas, ctx, opts = {}) => {
    const body = makeStep(model, sigmas, ctx, opts, x.length);
    const total = sigmas.length - 1;
    for (let i = 0; i < total; i++) {
      const sigma = sigmas[i]!;
      const denoised = await model(x, sigma);
      ctx.callback?.({ i, x, denoised, sigma, total });
      x = await body({ i, x, denoised, sigma, next: sigmas[i + 1]! });
    }
    return x;
  };
}

// ---------------------------------------------------------------- Euler, Heun, DPM-2 and their ancestral forms

const euler = stepSampler(() => ({ x, denoised, sigma, next }) => lin([1, x], [next - sigma, toD(x, sigma, denoised)]));

/** euler_ancestral and dpm_2_ancestral: the step down to σ_down, then σ_up of fresh noise. */
function ancestral(second: boolean): Sampler {
  return stepSampler((model, _sigmas, ctx, opts, n) => {
    const noise = defaultNoise(ctx, n);
    const eta = num(opts, 'eta', 1);
    const sNoise = num(opts, 's_noise', 1);
    return async ({ x, denoised, sigma, next }) => {
      const [down, up] = ancestralStep(sigma, next, eta);
      const d = toD(x, sigma, denoised);
      if (down === 0) return second ? lin([1, x], [down - sigma, d]) : denoised;
      let target = d;
      if (second) {
        const mid = logMid(sigma, down);
        const x2 = lin([1, x], [mid - sigma, d]);
        target = toD(x2, mid, await model(x2, mid));
      }
      return lin([1, x], [down - sigma, target], [sNoise * up, noise(sigma, next)]);
    };
  });
}

/** heun and dpm_2: a second evaluation at σ_next (Heun, averaged) or at the log-midpoint (DPM-2). */
function secondOrder(midpoint: boolean): Sampler {
  return stepSampler((model) => async ({ x, denoised, sigma, next }) => {
    const d = toD(x, sigma, denoised);
    if (next === 0) return lin([1, x], [next - sigma, d]);
    const at = midpoint ? logMid(sigma, next) : next;
    const x2 = lin([1, x], [at - sigma, d]);
    const d2 = toD(x2, at, await model(x2, at));
    return midpoint ? lin([1, x], [next - sigma, d2]) : lin([1, x], [(next - sigma) / 2, d], [(next - sigma) / 2, d2]);
  });
}

/** heunpp2: Euler at the end, Heun one step before it, otherwise Heun++ with a third evaluation, weighted by σ / σ₀. */
const heunpp2 = stepSampler((model, sigmas) => async ({ i, x, denoised, sigma, next }) => {
  const end = sigmas[sigmas.length - 1]!;
  const d = toD(x, sigma, denoised);
  const dt = next - sigma;
  if (next === end) return lin([1, x], [dt, d]);
  const x2 = lin([1, x], [dt, d]);
  const d2 = toD(x2, next, await model(x2, next));
  const after = sigmas[i + 2]!;
  if (after === end) {
    const w2 = next / (2 * sigmas[0]!);
    return lin([1, x], [dt * (1 - w2), d], [dt * w2, d2]);
  }
  const x3 = lin([1, x2], [after - next, d2]);
  const d3 = toD(x3, after, await model(x3, after));
  const w = 3 * sigmas[0]!;
  const w2 = next / w;
  const w3 = after / w;
  return lin([1, x], [dt * (1 - w2 - w3), d], [dt * w2, d2], [dt * w3, d3]);
});

// ---------------------------------------------------------------- linear multistep

/** Gauss–Legendre nodes and weights on [−1, 1] (Newton on Pₙ), exact for polynomials of degree < 2n. */
function gaussLegendre(n: number): [number[], number[]] {
  const xs: number[] = [];
  const ws: number[] = [];
  for (let k = 1; k <= n; k++) {
    let x = Math.cos((Math.PI * (k - 0.25)) / (n + 0.5));
    let dp = 1;
    for (let it = 0; it < 100; it++) {
      let p0 = 1;
      let p1 = x;
      for (let j = 2; j <= n; j++) [p0, p1] = [p1, ((2 * j - 1) * x * p1 - (j - 1) * p0) / j];
      dp = (n * (x * p1 - p0)) / (x * x - 1);
      const dx = p1 / dp;
      x -= dx;
      if (Math.abs(dx) < 1e-16) break;
    }
    xs.push(x);
    ws.push(2 / ((1 - x * x) * dp * dp));
  }
  return [xs, ws];
}

/** linear_multistep_coeff: ∫ from σᵢ to σᵢ₊₁ of the Lagrange basis polynomial j over σᵢ, σᵢ₋₁, … (polynomial, so Gauss is exact). */
function lmsCoeff(order: number, t: Float32Array, i: number, j: number): number {
  const [nodes, weights] = gaussLegendre(Math.max(2, Math.ceil(order / 2) + 1));
  const a = t[i]!;
  const b = t[i + 1]!;
  const mid = (a + b) / 2;
  const half = (b - a) / 2;
  let sum = 0;
  nodes.forEach((node, q) => {
    const tau = mid + half * node;
    let prod = 1;
    for (let k = 0; k < order; k++) if (k !== j) prod *= (tau - t[i - k]!) / (t[i - j]! - t[i - k]!);
    sum += weights[q]! * prod;
  });
  return sum * half;
}

const lms = stepSampler((_m, sigmas, _c, opts) => {
  const order = num(opts, 'order', 4);
  const ds: Float32Array[] = [];
  return ({ i, x, denoised, sigma, next }) => {
    ds.push(toD(x, sigma, denoised));
    if (ds.length > order) ds.shift();
    if (next === 0) return denoised;
    const cur = Math.min(i + 1, order);
    const coeffs = Array.from({ length: cur }, (_, j) => lmsCoeff(cur, sigmas, i, j));
    return lin([1, x], ...coeffs.map((c, j): [number, Float32Array] => [c, ds[ds.length - 1 - j]!]));
  };
});

/** iPNDM: Adams–Bashforth on the last derivatives, fixed coefficients (ipndm) or step-size aware ones (ipndm_v). */
function ipndm(variable: boolean): Sampler {
  return stepSampler((_m, t) => {
    const buffer: Float32Array[] = [];
    return ({ i, x, denoised, sigma: cur, next }) => {
      const d = toD(x, cur, denoised);
      const order = Math.min(4, i + 1);
      let coeffs: number[];
      if (!variable) coeffs = [[1], [3 / 2, -1 / 2], [23 / 12, -16 / 12, 5 / 12], [55 / 24, -59 / 24, 37 / 24, -9 / 24]][order - 1]!;
      else {
        const h = next - cur;
        const h1 = cur - t[i - 1]!;
        const h2 = t[i - 1]! - t[i - 2]!;
        const h3 = t[i - 2]! - t[i - 3]!;
        if (order === 1) coeffs = [1];
        else if (order === 2) coeffs = [(2 + h / h1) / 2, -(h / h1) / 2];
        else {
          const temp1 = (1 - ((h / (3 * (h + h1))) * (h * (h + h1))) / (h1 * (h1 + h2))) / 2;
          if (order === 3) coeffs = [(2 + h / h1) / 2 + temp1, -(h / h1) / 2 - (1 + h1 / h2) * temp1, (temp1 * h1) / h2];
          else {
            const temp2 =
              (((1 - h / (3 * (h + h1))) / 2 + ((1 - h / (2 * (h + h1))) * h) / (6 * (h + h1 + h2))) * (h * (h + h1) * (h + h1 + h2))) / (h1 * (h1 + h2) * (h1 + h2 + h3));
            const r = (h1 * (h1 + h2)) / (h2 * (h2 + h3));
            coeffs = [
              (2 + h / h1) / 2 + temp1 + temp2,
              -(h / h1) / 2 - (1 + h1 / h2) * temp1 - (1 + h1 / h2 + r) * temp2,
              (temp1 * h1) / h2 + (h1 / h2 + r * (1 + h2 / h3)) * temp2,
              (-temp2 * r * h1) / h2,
            ];
          }
        }
      }
      const hist = [d, ...buffer.slice().reverse()];
      const out = next === 0 ? denoised : lin([1, x], ...coeffs.map((c, j): [number, Float32Array] => [(next - cur) * c, hist[j]!]));
      if (buffer.length === 3) buffer.shift();
      buffer.push(d);
      return out;
    };
  });
}

/** DEIS (tab mode): the exponential-integrator coefficients of the VP ODE, integrated numerically over 10,000 points per step, as the reference. */
function deisCoefficients(sigmas: Float32Array, maxOrder: number): number[][] {
  // edm2t: the VP schedule through σ_min = 0.002 and σ_max = 80 at ε_s = 1e-3, in float32.
  const epsS = 1e-3;
  const lmin = f(Math.log(f(f(f(0.002) * f(0.002)) + 1)));
  const lmax = f(Math.log(f(f(f(80) * f(80)) + 1)));
  const betaD = f(f(2 * f(f(lmin / epsS) - lmax)) / (epsS - 1));
  const betaMin = f(lmax - f(0.5 * betaD));
  const beta0 = betaMin;
  const beta1 = f(betaD + betaMin);
  const t = Array.from(sigmas, (s) => f(f(f(Math.sqrt(f(f(betaMin * betaMin) + f(f(2 * betaD) * f(Math.log(f(f(s * s) + 1))))))) - betaMin) / betaD));
  const N = 10000;
  const out: number[][] = [];
  for (let i = 0; i + 1 < t.length; i++) {
    const order = Math.min(i + 1, maxOrder);
    if (order === 1) {
      out.push([]);
      continue;
    }
    const taus = linspace32(t[i]!, t[i + 1]!, N);
    const dtau = f(f(t[i + 1]! - t[i]!) / N);
    const prev = Array.from({ length: order }, (_, k) => t[i - k]!);
    const coeffs = new Array<number>(order).fill(0);
    const db = f(beta1 - beta0);
    for (const tau of taus) {
      const alpha = f(Math.exp(f(f(-0.5 * f(f(tau * tau) * db)) - f(tau * beta0))));
      const dlog = f(f(-f(tau * db)) - beta0);
      const integrand = f(f(-0.5 * dlog) / f(Math.sqrt(f(alpha * f(1 - alpha)))));
      for (let j = 0; j < order; j++) {
        let poly = 1;
        for (let k = 0; k < order; k++) if (k !== j) poly = f(poly * f(f(tau - prev[k]!) / f(prev[j]! - prev[k]!)));
        coeffs[j]! += f(integrand * poly);
      }
    }
    out.push(coeffs.map((c) => f(c) * dtau));
  }
  return out;
}

const deis = stepSampler((_m, sigmas, _c, opts) => {
  const maxOrder = num(opts, 'max_order', 3);
  const coeffList = deisCoefficients(sigmas, maxOrder);
  const buffer: Float32Array[] = [];
  return ({ i, x, denoised, sigma, next }) => {
    const d = toD(x, sigma, denoised);
    const order = next <= 0 ? 1 : Math.min(maxOrder, i + 1);
    const out = order === 1 ? lin([1, x], [next - sigma, d]) : combine([1, ...coeffList[i]!], [x, d, ...buffer.slice(-(order - 1)).reverse()]);
    if (buffer.length === maxOrder - 1) buffer.shift();
    buffer.push(d);
    return out;
  };
});

/** gradient_estimation (and its CFG++ form): Euler plus (γ − 1) times the change in the derivative. */
function gradientEstimation(cfgPp: boolean): Sampler {
  return stepSampler((_m, _s, ctx, opts) => {
    const gamma = num(opts, 'ge_gamma', 2);
    let oldD: Float32Array | undefined;
    return ({ i, x, denoised, sigma, next }) => {
      const d = toD(x, sigma, cfgPp ? uncondOf(ctx) : denoised);
      const dt = next - sigma;
      let out: Float32Array;
      if (next === 0) out = denoised;
      else {
        out = cfgPp ? lin([1, denoised], [next, d]) : lin([1, x], [dt, d]);
        if (i >= 1) out = lin([1, out], [(gamma - 1) * dt, d], [-(gamma - 1) * dt, oldD!]);
      }
      oldD = d;
      return out;
    };
  });
}

// ---------------------------------------------------------------- DPM-Solver++ family

/** dpmpp_2s_ancestral (and CFG++): a half step in log σ to σ_down's midpoint, a second evaluation, then noise. */
function dpmpp2sAncestral(cfgPp: boolean): Sampler {
  return stepSampler((model, _s, ctx, opts, n) => {
    const noise = defaultNoise(ctx, n);
    const eta = num(opts, 'eta', 1);
    const sNoise = num(opts, 's_noise', 1);
    return async ({ x, denoised, sigma, next }) => {
      const uncond = cfgPp ? uncondOf(ctx) : undefined;
      const [down, up] = ancestralStep(sigma, next, eta);
      let out: Float32Array;
      if (down === 0) out = cfgPp ? lin([1, denoised], [down, toD(x, sigma, uncond!)]) : lin([1, x], [down - sigma, toD(x, sigma, denoised)]);
      else {
        const t = -Math.log(sigma);
        const tNext = -Math.log(down);
        const h = tNext - t;
        const sigmaS = Math.exp(-(t + h / 2));
        // CFG++ steps from x shifted by the guidance (denoised − uncond).
        const base = (u: Float32Array | undefined) => (u ? lin([1, x], [1, denoised], [-1, u]) : x);
        const x2 = lin([sigmaS / sigma, base(uncond)], [-Math.expm1(-h / 2), denoised]);
        const denoised2 = await model(x2, sigmaS);
        // The reference reads its hook's latest unconditional prediction here: the second call's.
        out = lin([Math.exp(-tNext) / sigma, base(cfgPp ? uncondOf(ctx) : undefined)], [-Math.expm1(-h), denoised2]);
      }
      return next > 0 ? lin([1, out], [sNoise * up, noise(sigma, next)]) : out;
    };
  });
}

const dpmpp2m = stepSampler((_m, sigmas) => {
  let old: Float32Array | undefined;
  return ({ i, x, denoised, sigma, next }) => {
    const t = -Math.log(sigma);
    const h = -Math.log(next) - t;
    const ratio = next / sigma;
    let out: Float32Array;
    if (!old || next === 0) out = lin([ratio, x], [-Math.expm1(-h), denoised]);
    else {
      const r = (t + Math.log(sigmas[i - 1]!)) / h;
      out = lin([ratio, x], [-Math.expm1(-h) * (1 + 1 / (2 * r)), denoised], [Math.expm1(-h) * (1 / (2 * r)), old]);
    }
    old = denoised;
    return out;
  };
});

const dpmpp2mCfgPp = stepSampler((_m, sigmas, ctx) => {
  let oldUncond: Float32Array | undefined;
  return ({ i, x, denoised, sigma, next }) => {
    const uncond = uncondOf(ctx);
    const t = -Math.log(sigma);
    const h = -Math.log(next) - t;
    const eh = Math.exp(-h);
    let out: Float32Array;
    if (!oldUncond || next === 0) out = lin([1, denoised], [-eh, uncond], [eh, x]);
    else {
      const r = (t + Math.log(sigmas[i - 1]!)) / h;
      const c = Math.expm1(-h) / (2 * r);
      out = lin([1 - c, denoised], [-eh, uncond], [c, oldUncond], [eh, x]);
    }
    oldUncond = uncond;
    return out;
  };
});

/** The Brownian-tree noise of the SDE samplers, spanning the run's σ. */
function treeNoise(sigmas: Float32Array, ctx: SamplerContext, n: number): NoiseSampler {
  let tree: NoiseSampler | undefined;
  return (a, b) => (tree ??= brownianNoiseSampler(sigmas, seedBig(ctx.seed), n))(a, b);
}

/** dpmpp_sde: DPM-Solver++ with a stochastic midpoint at λ + r·h, both half steps ancestral. */
const dpmppSde = stepSampler((model, sigmas, ctx, opts, n) => {
  const noise = treeNoise(sigmas, ctx, n);
  const eta = num(opts, 'eta', 1);
  const sNoise = num(opts, 's_noise', 1);
  const r = num(opts, 'r', 0.5);
  return async ({ x, denoised, sigma, next }) => {
    if (next === 0) return denoised;
    const lambdaS = lambdaOf(sigma);
    const lambdaT = lambdaOf(next);
    const h = f(lambdaT - lambdaS);
    const lambdaS1 = f(lambdaS + f(f(r) * h));
    const fac = 1 / (2 * r);
    const sigmaS1 = sigmaOfLambda(lambdaS1);
    const alphaS = f(sigma * f(Math.exp(lambdaS)));
    const alphaS1 = f(sigmaS1 * f(Math.exp(lambdaS1)));
    const alphaT = f(next * f(Math.exp(lambdaT)));
    const sigmaOf = (l: number) => f(Math.exp(f(-l)));
    // Step 1: to the midpoint.
    let [sd, su] = ancestralStep(sigmaOf(lambdaS), sigmaOf(lambdaS1), eta);
    let hh = f(-f(Math.log(sd))) - lambdaS;
    let x2 = lin([(alphaS1 / alphaS) * Math.exp(-hh), x], [-alphaS1 * Math.expm1(-hh), denoised]);
    if (eta > 0 && sNoise > 0) x2 = lin([1, x2], [alphaS1 * sNoise * su, noise(sigma, sigmaS1)]);
    const denoised2 = await model(x2, sigmaS1);
    // Step 2: to σ_next with the mixed prediction.
    [sd, su] = ancestralStep(sigmaOf(lambdaS), sigmaOf(lambdaT), eta);
    hh = f(-f(Math.log(sd))) - lambdaS;
    const k = -alphaT * Math.expm1(-hh);
    let out = lin([(alphaT / alphaS) * Math.exp(-hh), x], [k * (1 - fac), denoised], [k * fac, denoised2]);
    if (eta > 0 && sNoise > 0) out = lin([1, out], [alphaT * sNoise * su, noise(sigma, next)]);
    return out;
  };
});

/**
 * dpmpp_2m_sde (midpoint or heun correction) and dpmpp_3m_sde: multistep
 * DPM-Solver++ in λ with the SDE's e^(−ηh) decay and Brownian noise.
 */
function dpmppMultistepSde(maxOrder: 2 | 3, defaultSolver: 'midpoint' | 'heun'): Sampler {
  return stepSampler((_m, sigmas, ctx, opts, n) => {
    const noise = treeNoise(sigmas, ctx, n);
    const eta = num(opts, 'eta', 1);
    const sNoise = num(opts, 's_noise', 1);
    const solver = typeof opts.solver_type === 'string' ? opts.solver_type : defaultSolver;
    if (solver !== 'heun' && solver !== 'midpoint') throw new Error("solver_type must be 'heun' or 'midpoint'");
    let d1: Float32Array | undefined;
    let d2: Float32Array | undefined;
    let h1: number | undefined;
    let h2: number | undefined;
    return ({ x, denoised, sigma, next }) => {
      let out: Float32Array;
      let h: number | undefined = h1;
      if (next === 0) out = denoised;
      else {
        const lambdaS = lambdaOf(sigma);
        const lambdaT = lambdaOf(next);
        h = f(lambdaT - lambdaS);
        const hEta = h * (eta + 1);
        const alphaT = next * Math.exp(lambdaT);
        const phi1 = -Math.expm1(-hEta);
        out = lin([(next / sigma) * Math.exp(-h * eta), x], [alphaT * phi1, denoised]);
        // φ₂ = (e^(−hη) − 1)/hη + 1
        const phi2 = -phi1 / hEta + 1;
        if (maxOrder === 3 && h2 !== undefined) {
          const r0 = h1! / h;
          const r1 = h2 / h;
          // d1_0 = (D − D₁)/r0, d1_1 = (D₁ − D₂)/r1; d1 = d1_0 + (d1_0 − d1_1)·r0/(r0 + r1); d2 = (d1_0 − d1_1)/(r0 + r1)
          const a = 1 / r0;
          const b = 1 / r1;
          const w = r0 / (r0 + r1);
          const phi3 = phi2 / hEta - 0.5;
          const c1 = alphaT * phi2;
          const c2 = alphaT * phi3 / (r0 + r1);
          // D·a(1 + w) − D₁(a(1 + w) + b·w) + D₂·b·w for d1; D·a − D₁(a + b) + D₂·b for d2·(r0 + r1)
          out = lin([1, out], [c1 * a * (1 + w) - c2 * a, denoised], [-c1 * (a * (1 + w) + b * w) + c2 * (a + b), d1!], [c1 * b * w - c2 * b, d2!]);
        } else if (h1 !== undefined && d1) {
          const r = h1 / h;
          const c = maxOrder === 3 || solver === 'heun' ? alphaT * phi2 : 0.5 * alphaT * phi1;
          out = lin([1, out], [c / r, denoised], [-c / r, d1]);
        }
        if (eta > 0 && sNoise > 0) out = lin([1, out], [next * Math.sqrt(-Math.expm1(-2 * h * eta)) * sNoise, noise(sigma, next)]);
      }
      [d2, d1] = [d1, denoised];
      [h2, h1] = [h1, h];
      return out;
    };
  });
}

// ---------------------------------------------------------------- DDPM, LCM

/** The DDPM posterior step, on x scaled to unit variance. */
const ddpm = stepSampler((_m, _s, ctx, _o, n) => {
  const noise = defaultNoise(ctx, n);
  return ({ x, denoised, sigma: s, next: prev }) => {
    const ac = 1 / (s * s + 1);
    const acPrev = 1 / (prev * prev + 1);
    const alpha = ac / acPrev;
    const inScale = 1 / Math.sqrt(1 + s * s);
    const a = Math.sqrt(1 / alpha);
    const b = (1 - alpha) / Math.sqrt(1 - ac);
    // (x·inScale − b·ε)·a with ε = (x − denoised)/σ
    let out = lin([a * (inScale - b / s), x], [(a * b) / s, denoised]);
    if (prev > 0) {
      const c = Math.sqrt(((1 - alpha) * (1 - acPrev)) / (1 - ac));
      out = lin([Math.sqrt(1 + prev * prev), out], [c * Math.sqrt(1 + prev * prev), noise(s, prev)]);
    }
    return out;
  };
});

const lcm = stepSampler((_m, _s, ctx, _o, n) => {
  const noise = defaultNoise(ctx, n);
  return ({ denoised, sigma, next }) => (next > 0 ? lin([1, denoised], [next, noise(sigma, next)]) : denoised);
});

/**
 * SamplerLCMUpscale (sample_lcm_upscale): LCM steps that enlarge the latent
 * after each of the first steps, to total_upscale in even ratios
 * (np.linspace), the fresh noise from torch's global generator (randn_like).
 */
const lcmUpscale: Sampler = async (model, x, sigmas, ctx, opts = {}) => {
  const total = num(opts, 'total_upscale', 2);
  const method = typeof opts.upscale_method === 'string' ? opts.upscale_method : 'bislerp';
  const count = typeof opts.upscale_steps === 'number' ? Math.min(opts.upscale_steps + 1, sigmas.length + 1) : Math.max(Math.floor(sigmas.length / 2) + 1, 2);
  // np.linspace(1, total, count)[1:]: start + k·step, the last exactly `total`.
  const step = count > 1 ? (total - 1) / (count - 1) : 0;
  const upscales = Array.from({ length: count - 1 }, (_, k) => (k + 1 === count - 1 ? total : (k + 1) * step + 1));
  const orig = ctx.shape;
  if (!orig || !ctx.upscale) throw new Error('SamplerLCMUpscale needs the latent shape and an upscaler');
  let shape: readonly number[] = orig;
  let gen: TorchGenerator | undefined;
  const randn = ctx.globalRandn?.() ?? ((count: number) => (gen ??= new TorchGenerator(seedLow32(ctx.seed))).randn(count));
  const steps = sigmas.length - 1;
  for (let i = 0; i < steps; i++) {
    const sigma = sigmas[i]!;
    const denoised = await model(x, sigma, shape);
    ctx.callback?.({ i, x, denoised, sigma, total: steps, shape });
    x = denoised;
    if (i < upscales.length) {
      const w = roundHalfEven(orig[3]! * upscales[i]!);
      const h = roundHalfEven(orig[2]! * upscales[i]!);
      x = ctx.upscale(x, shape, w, h, method);
      shape = [shape[0]!, shape[1]!, h, w];
    }
    const next = sigmas[i + 1]!;
    if (next > 0) {
      const noise = randn(x.length);
      const out = new Float32Array(x.length);
      for (let k = 0; k < x.length; k++) out[k] = x[k]! + f(next * noise[k]!);
      x = out;
    }
  }
  ctx.outShape = shape;
  return x;
};

// ---------------------------------------------------------------- CFG++ Euler

function eulerAncestralCfgPp(defaultEta: number, defaultSNoise: number): Sampler {
  return stepSampler((_m, _s, ctx, opts, n) => {
    const noise = defaultNoise(ctx, n);
    const eta = num(opts, 'eta', defaultEta);
    const sNoise = num(opts, 's_noise', defaultSNoise);
    return ({ x, denoised, sigma, next }) => {
      const uncond = uncondOf(ctx);
      if (next === 0) return denoised;
      const aS = f(sigma * f(Math.exp(lambdaOf(sigma))));
      const aT = f(next * f(Math.exp(lambdaOf(next))));
      const [down0, up] = ancestralStep(sigma / aS, next / aT, eta);
      const down = aT * down0;
      // d = (x − α_s·uncond)/σ
      let out = lin([aT, denoised], [down / sigma, x], [(-down * aS) / sigma, uncond]);
      if (eta > 0 && sNoise > 0) out = lin([1, out], [aT * sNoise * up, noise(sigma, next)]);
      return out;
    };
  });
}

/**
 * SamplerEulerCFGpp's "alternative" version (sample_euler_pp): Euler along
 * d = (x − denoised + uncond − denoised)/σ, in torch's order of operations.
 */
const eulerPp = stepSampler((_m, _s, ctx) => ({ x, denoised, sigma, next }) => {
  const uncond = uncondOf(ctx);
  const dt = f(next - sigma);
  const out = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const d = f(f(f(f(x[i]! - denoised[i]!) + uncond[i]!) - denoised[i]!) / sigma);
    out[i] = x[i]! + f(d * dt);
  }
  return out;
});

// ---------------------------------------------------------------- res_multistep

/** res_multistep (+ ancestral, + CFG++): a second-order exponential multistep step from arXiv:2308.02157. */
function resMultistep(ancestralEta: boolean, cfgPp: boolean): Sampler {
  return stepSampler((_m, sigmas, ctx, opts, n) => {
    const noise = defaultNoise(ctx, n);
    const eta = ancestralEta ? num(opts, 'eta', 1) : 0;
    const sNoise = num(opts, 's_noise', 1);
    let oldDenoised: Float32Array | undefined;
    let oldSigmaDown = 0;
    const phi1 = (t: number) => Math.expm1(t) / t;
    const phi2 = (t: number) => (phi1(t) - 1) / t;
    return ({ i, x, denoised, sigma, next }) => {
      const uncond = cfgPp ? uncondOf(ctx) : undefined;
      const [down, up] = ancestralStep(sigma, next, eta);
      let out: Float32Array;
      if (down === 0 || !oldDenoised) {
        out = cfgPp ? lin([1, denoised], [down, toD(x, sigma, uncond!)]) : lin([1, x], [down - sigma, toD(x, sigma, denoised)]);
      } else {
        const t = -Math.log(sigma);
        const tOld = -Math.log(oldSigmaDown);
        const tNext = -Math.log(down);
        const tPrev = -Math.log(sigmas[i - 1]!);
        const h = tNext - t;
        const c2 = (tPrev - tOld) / h;
        const p1 = phi1(-h);
        const p2 = phi2(-h);
        let b1 = p1 - p2 / c2;
        let b2 = p2 / c2;
        if (Number.isNaN(b1)) b1 = 0;
        if (Number.isNaN(b2)) b2 = 0;
        const base = cfgPp ? lin([1, x], [1, denoised], [-1, uncond!]) : x;
        out = lin([Math.exp(-h), base], [h * b1, cfgPp ? uncond! : denoised], [h * b2, oldDenoised]);
      }
      if (next > 0) out = lin([1, out], [sNoise * up, noise(sigma, next)]);
      oldDenoised = cfgPp ? uncond : denoised;
      oldSigmaDown = down;
      return out;
    };
  });
}

// ---------------------------------------------------------------- ER-SDE, SEEDS, SA-Solver

/** er_sde: the extended reverse-time SDE solver (VP ER-SDE-Solver-3), up to `max_stage` stages. */
const erSde = stepSampler((_m, sigmas, ctx, opts, n) => {
  const noise = defaultNoise(ctx, n);
  const sNoise = num(opts, 's_noise', 1);
  const maxStage = num(opts, 'max_stage', 3);
  // The ER-SDE scaler x·(e^(x^0.3) + 10), or the reverse-time SDE's x^(η + 1) (SamplerER_SDE).
  const reverseEta = typeof opts.reverse_eta === 'number' ? opts.reverse_eta : undefined;
  const scaler = (v: number) => (reverseEta === undefined ? f(v * f(f(Math.exp(f(v ** 0.3))) + 10)) : f(v ** (reverseEta + 1)));
  const er = Array.from(sigmas, (s) => f(Math.exp(-lambdaOf(s))));
  const points = 200;
  let oldDenoised: Float32Array | undefined;
  let oldDenoisedD: Float32Array | undefined;
  return ({ i, x, denoised, sigma, next }) => {
    const stage = Math.min(maxStage, i + 1);
    let out: Float32Array;
    if (next === 0) out = denoised;
    else {
      const erS = er[i]!;
      const erT = er[i + 1]!;
      const alphaS = sigma / erS;
      const alphaT = next / erT;
      const r = scaler(erT) / scaler(erS);
      out = lin([(alphaT / alphaS) * r, x], [alphaT * (1 - r), denoised]);
      if (stage >= 2) {
        const dt = erT - erS;
        const step = -dt / points;
        let s = 0;
        let su = 0;
        for (let k = 0; k < points; k++) {
          const pos = f(erT + f(k * f(step)));
          const sc = scaler(pos);
          s += 1 / sc;
          su += (pos - erS) / sc;
        }
        s *= step;
        su *= step;
        const denoisedD = lin([1 / (erS - er[i - 1]!), denoised], [-1 / (erS - er[i - 1]!), oldDenoised!]);
        out = lin([1, out], [alphaT * (dt + s * scaler(erT)), denoisedD]);
        if (stage >= 3) {
          const denom = (erS - er[i - 2]!) / 2;
          out = lin([1, out], [(alphaT * ((dt * dt) / 2 + su * scaler(erT))) / denom, denoisedD], [(-alphaT * ((dt * dt) / 2 + su * scaler(erT))) / denom, oldDenoisedD!]);
        }
        oldDenoisedD = denoisedD;
      }
      if (sNoise > 0) {
        const v = Math.sqrt(erT * erT - erS * erS * r * r);
        out = lin([1, out], [alphaT * sNoise * (Number.isNaN(v) ? 0 : v), noise(sigma, next)]);
      }
    }
    oldDenoised = denoised;
    return out;
  };
});

/** SEEDS-2 and SEEDS-3: stochastic explicit exponential solvers with stages at λ + rₖ·h, each stage's noise carried to the next. */
function seeds(stages: 2 | 3): Sampler {
  return stepSampler((model, _s, ctx, opts, n) => {
    const noise = defaultNoise(ctx, n);
    const eta = num(opts, 'eta', 1);
    const sNoise = num(opts, 's_noise', 1);
    const inject = eta > 0 && sNoise > 0;
    const rs = stages === 2 ? [num(opts, 'r', 0.5)] : [num(opts, 'r_1', 1 / 3), num(opts, 'r_2', 2 / 3)];
    const phi1 = (h: number) => Math.expm1(h);
    const phi2 = (h: number) => (Math.expm1(h) - h) / h;
    return async ({ x, denoised, sigma, next }) => {
      if (next === 0) return denoised;
      const lambdaS = lambdaOf(sigma);
      const lambdaT = lambdaOf(next);
      const h = lambdaT - lambdaS;
      const hEta = h * (eta + 1);
      const lambdas = rs.map((r) => lerp(lambdaS, lambdaT, r));
      const sig = lambdas.map((l) => Math.exp(-l));
      const alphas = lambdas.map((l, k) => sig[k]! * Math.exp(l));
      const alphaT = next * Math.exp(lambdaT);
      let sde: Float32Array | undefined;
      const addNoise = (v: Float32Array, rPrev: number, rNext: number, from: number, to: number, sigmaTo: number) => {
        if (!inject) return v;
        if (!sde) sde = lin([Math.sqrt(-Math.expm1(-2 * rNext * h * eta)), noise(from, to)]);
        else {
          const seg = (rPrev - rNext) * h * eta;
          sde = lin([Math.exp(seg), sde], [Math.sqrt(-Math.expm1(2 * seg)), noise(from, to)]);
        }
        return lin([1, v], [sigmaTo * sNoise, sde]);
      };
      const r1 = rs[0]!;
      let x2 = lin([(sig[0]! / sigma) * Math.exp(-r1 * h * eta), x], [-alphas[0]! * phi1(-r1 * hEta), denoised]);
      x2 = addNoise(x2, 0, r1, sigma, sig[0]!, sig[0]!);
      const denoised2 = await model(x2, sig[0]!);
      if (stages === 2) {
        const fac = 1 / (2 * r1);
        const dd = lin([1 - fac, denoised], [fac, denoised2]);
        let out = lin([(next / sigma) * Math.exp(-h * eta), x], [-alphaT * phi1(-hEta), dd]);
        if (inject) {
          const seg = (r1 - 1) * h * eta;
          sde = lin([Math.exp(seg), sde!], [Math.sqrt(-Math.expm1(2 * seg)), noise(sig[0]!, next)]);
          out = lin([1, out], [next * sNoise, sde]);
        }
        return out;
      }
      const r2 = rs[1]!;
      const a32 = (r2 / r1) * phi2(-r2 * hEta);
      const a31 = phi1(-r2 * hEta) - a32;
      let x3 = lin([(sig[1]! / sigma) * Math.exp(-r2 * h * eta), x], [-alphas[1]! * a31, denoised], [-alphas[1]! * a32, denoised2]);
      x3 = addNoise(x3, r1, r2, sig[0]!, sig[1]!, sig[1]!);
      const denoised3 = await model(x3, sig[1]!);
      const b3 = phi2(-hEta) / r2;
      const b1 = phi1(-hEta) - b3;
      let out = lin([(next / sigma) * Math.exp(-h * eta), x], [-alphaT * b1, denoised], [-alphaT * b3, denoised3]);
      out = addNoise(out, r2, 1, sig[1]!, next, next);
      return out;
    };
  });
}

/** Solves A·x = b by Gaussian elimination with partial pivoting (small systems). */
function solve(A: number[][], b: number[]): number[] {
  const n = b.length;
  const M = A.map((row, i) => [...row, b[i]!]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(M[r]![c]!) > Math.abs(M[p]![c]!)) p = r;
    [M[c], M[p]] = [M[p]!, M[c]!];
    for (let r = c + 1; r < n; r++) {
      const k = M[r]![c]! / M[c]![c]!;
      for (let j = c; j <= n; j++) M[r]![j]! -= k * M[c]![j]!;
    }
  }
  const x = new Array<number>(n).fill(0);
  for (let r = n - 1; r >= 0; r--) {
    let s = M[r]![n]!;
    for (let j = r + 1; j < n; j++) s -= M[r]![j]! * x[j]!;
    x[r] = s / M[r]![r]!;
  }
  return x;
}

/** ln((n)!) for small non-negative integers. */
const logFactorial = (n: number) => {
  let s = 0;
  for (let k = 2; k <= n; k++) s += Math.log(k);
  return s;
};

/** SA-Solver's b coefficients: Lagrange integrals of the exponential integrator over the given λ points. */
function saCoefficients(sigmaNext: number, lambdas: number[], lambdaS: number, lambdaT: number, tau: number, simpleOrder2: boolean, corrector: boolean): number[] {
  const n = lambdas.length;
  const tauMul = 1 + tau * tau;
  const h = lambdaT - lambdaS;
  const alphaT = sigmaNext * Math.exp(lambdaT);
  if (simpleOrder2 && n === 2) {
    if (corrector) {
      const b1 = alphaT * (0.5 * tauMul * h);
      return [-alphaT * Math.expm1(-h * tauMul) - b1, b1];
    }
    const b2 = (alphaT * (0.5 * tauMul * h * h)) / (lambdas[n - 2]! - lambdaS);
    return [b2, -alphaT * Math.expm1(-h * tauMul) - b2];
  }
  const product = Array.from({ length: n }, (_, p) => lambdaT ** p - lambdaS ** p * Math.exp(-tauMul * h));
  const expCoeffs = Array.from({ length: n }, (_, i) => {
    let s = 0;
    for (let j = 0; j <= i; j++) {
      let c = logFactorial(i) - logFactorial(j);
      if (tau > 0) c -= (i - j) * Math.log(tauMul);
      s += Math.exp(c) * ((i - j) % 2 === 0 ? 1 : -1) * product[j]!;
    }
    return s;
  });
  // The transposed Vandermonde matrix: row p holds λₖ^p.
  const V = Array.from({ length: n }, (_, p) => lambdas.map((l) => l ** p));
  return solve(V, expCoeffs).map((v) => alphaT * v);
}

function saSolver(pece: boolean): Sampler {
  return async (model, x, sigmas, ctx, opts = {}) => {
    if (sigmas.length <= 1) return x;
    const noise = defaultNoise(ctx, x.length);
    const sNoise = num(opts, 's_noise', 1);
    const predictorOrder = num(opts, 'predictor_order', 3);
    const correctorOrder = num(opts, 'corrector_order', 4);
    const usePece = typeof opts.use_pece === 'boolean' ? opts.use_pece : pece;
    const simpleOrder2 = opts.simple_order_2 === true;
    const pct = ctx.percentToSigma ?? (() => 0);
    const start = num(opts, 'tau_start_sigma', pct(0.2));
    const end = num(opts, 'tau_end_sigma', pct(0.8));
    const tauEta = num(opts, 'tau_eta', 1);
    const tauOf = (s: number) => (tauEta <= 0 ? 0 : start >= s && s >= end ? tauEta : 0);
    const lambdas = Array.from(sigmas, (s) => lambdaOf(s));
    const maxUsed = Math.max(predictorOrder, correctorOrder);
    const total = sigmas.length - 1;
    const lowerToEnd = sigmas[total] === 0;
    let xPred = x;
    let h = 0;
    let tau = 0;
    let lastNoise: Float32Array | undefined;
    let preds: Float32Array[] = [];
    for (let i = 0; i < total; i++) {
      const sigma = sigmas[i]!;
      const next = sigmas[i + 1]!;
      let denoised = await model(xPred, sigma);
      ctx.callback?.({ i, x: xPred, denoised, sigma, total });
      preds = [...preds, denoised].slice(-maxUsed);
      let pUsed = Math.min(predictorOrder, preds.length);
      let cUsed = i === 0 || (next === 0 && !usePece) ? 0 : Math.min(correctorOrder, preds.length);
      if (lowerToEnd) {
        pUsed = Math.min(pUsed, total - 1 - i);
        cUsed = Math.min(cUsed, total - i);
      }
      if (cUsed === 0) x = xPred;
      else {
        const b = saCoefficients(sigma, lambdas.slice(i - cUsed + 1, i + 1), lambdas[i - 1]!, lambdas[i]!, tau, simpleOrder2, true);
        x = lin([(sigma / sigmas[i - 1]!) * Math.exp(-(tau * tau) * h), x], ...preds.slice(-cUsed).map((p, k): [number, Float32Array] => [b[k]!, p]));
        if (tau > 0 && sNoise > 0 && lastNoise) x = lin([1, x], [1, lastNoise]);
        if (usePece) {
          denoised = await model(x, sigma);
          preds[preds.length - 1] = denoised;
        }
      }
      if (next === 0) x = denoised;
      else {
        tau = tauOf(next);
        const b = saCoefficients(next, lambdas.slice(i - pUsed + 1, i + 1), lambdas[i]!, lambdas[i + 1]!, tau, simpleOrder2, false);
        h = lambdas[i + 1]! - lambdas[i]!;
        xPred = lin([(next / sigma) * Math.exp(-(tau * tau) * h), x], ...preds.slice(-pUsed).map((p, k): [number, Float32Array] => [b[k]!, p]));
        if (tau > 0 && sNoise > 0) {
          lastNoise = lin([next * Math.sqrt(-Math.expm1(-2 * tau * tau * h)) * sNoise, noise(sigma, next)]);
          xPred = lin([1, xPred], [1, lastNoise]);
        }
      }
    }
    return x;
  };
}

// ---------------------------------------------------------------- DPM-Solver (fast, adaptive)

/** DPM-Solver in t = −log σ with ε = (x − D(x, σ))/σ, its evaluations cached per step as the reference's eps_cache. */
class DpmSolver {
  constructor(private readonly model: Denoiser) {}

  sigma = (t: number) => f(Math.exp(f(-t)));

  async eps(cache: Map<string, Float32Array>, key: string, x: Float32Array, t: number): Promise<Float32Array> {
    const hit = cache.get(key);
    if (hit) return hit;
    const s = this.sigma(t);
    const e = toD(x, s, await this.model(x, s));
    cache.set(key, e);
    return e;
  }

  async step1(x: Float32Array, t: number, tNext: number, cache: Map<string, Float32Array>): Promise<Float32Array> {
    const h = tNext - t;
    return lin([1, x], [-this.sigma(tNext) * Math.expm1(h), await this.eps(cache, 'eps', x, t)]);
  }

  async step2(x: Float32Array, t: number, tNext: number, cache: Map<string, Float32Array>, r1 = 1 / 2): Promise<Float32Array> {
    const h = tNext - t;
    const eps = await this.eps(cache, 'eps', x, t);
    const s1 = t + r1 * h;
    const u1 = lin([1, x], [-this.sigma(s1) * Math.expm1(r1 * h), eps]);
    const epsR1 = await this.eps(cache, 'eps_r1', u1, s1);
    const a = this.sigma(tNext) * Math.expm1(h);
    return lin([1, x], [-a + a / (2 * r1), eps], [-a / (2 * r1), epsR1]);
  }

  async step3(x: Float32Array, t: number, tNext: number, cache: Map<string, Float32Array>, r1 = 1 / 3, r2 = 2 / 3): Promise<Float32Array> {
    const h = tNext - t;
    const eps = await this.eps(cache, 'eps', x, t);
    const s1 = t + r1 * h;
    const s2 = t + r2 * h;
    const u1 = lin([1, x], [-this.sigma(s1) * Math.expm1(r1 * h), eps]);
    const epsR1 = await this.eps(cache, 'eps_r1', u1, s1);
    const c2 = this.sigma(s2) * (r2 / r1) * (Math.expm1(r2 * h) / (r2 * h) - 1);
    const u2 = lin([1, x], [-this.sigma(s2) * Math.expm1(r2 * h) + c2, eps], [-c2, epsR1]);
    const epsR2 = await this.eps(cache, 'eps_r2', u2, s2);
    const a = this.sigma(tNext) * Math.expm1(h);
    const c3 = (this.sigma(tNext) / r2) * (Math.expm1(h) / h - 1);
    return lin([1, x], [-a + c3, eps], [-c3, epsR2]);
  }
}

/** The σ range KSampler gives DPM-Solver: σ₀ down to the last non-zero σ. */
function dpmRange(sigmas: Float32Array): [min: number, max: number] {
  let min = sigmas[sigmas.length - 1]!;
  if (min === 0) min = sigmas[sigmas.length - 2]!;
  return [min, sigmas[0]!];
}

/** dpm_fast: DPM-Solver with fixed steps of orders 3, …, 3, then 2 and 1 (or the remainder), spending as many evaluations as KSampler's steps. */
const dpmFast: Sampler = async (model, x, sigmas, ctx, opts = {}) => {
  if (sigmas.length <= 1) return x;
  const [sigmaMin, sigmaMax] = dpmRange(sigmas);
  if (sigmaMin <= 0 || sigmaMax <= 0) throw new Error('sigma_min and sigma_max must not be 0');
  const nfe = sigmas.length - 1;
  const eta = num(opts, 'eta', 0);
  const sNoise = num(opts, 's_noise', 1);
  const solver = new DpmSolver(model);
  const noise = defaultNoise(ctx, x.length);
  const tStart = lambdaOf(sigmaMax);
  const tEnd = lambdaOf(sigmaMin);
  const m = Math.floor(nfe / 3) + 1;
  const ts = linspace32(tStart, tEnd, m + 1);
  const orders = nfe % 3 === 0 ? [...new Array<number>(m - 2).fill(3), 2, 1] : [...new Array<number>(m - 1).fill(3), nfe % 3];
  for (let i = 0; i < orders.length; i++) {
    const cache = new Map<string, Float32Array>();
    const t = ts[i]!;
    const tNext = ts[i + 1]!;
    let tNext_ = tNext;
    let su = 0;
    if (eta) {
      const [sd] = ancestralStep(solver.sigma(t), solver.sigma(tNext), eta);
      tNext_ = Math.min(tEnd, lambdaOf(sd));
      su = Math.sqrt(solver.sigma(tNext) ** 2 - solver.sigma(tNext_) ** 2);
    }
    const eps = await solver.eps(cache, 'eps', x, t);
    ctx.callback?.({ i, x, denoised: lin([1, x], [-solver.sigma(t), eps]), sigma: solver.sigma(t), total: nfe });
    x = orders[i] === 1 ? await solver.step1(x, t, tNext_, cache) : orders[i] === 2 ? await solver.step2(x, t, tNext_, cache) : await solver.step3(x, t, tNext_, cache);
    x = lin([1, x], [su * sNoise, noise(solver.sigma(t), solver.sigma(tNext))]);
  }
  return x;
};

const MAX_ADAPTIVE_STEPS = 10000;

/** dpm_adaptive: embedded DPM-Solver-12/23 pairs under a PID step-size controller on the error between them. */
const dpmAdaptive: Sampler = async (model, x, sigmas, ctx, opts = {}) => {
  if (sigmas.length <= 1) return x;
  const [sigmaMin, sigmaMax] = dpmRange(sigmas);
  if (sigmaMin <= 0 || sigmaMax <= 0) throw new Error('sigma_min and sigma_max must not be 0');
  const order = num(opts, 'order', 3);
  if (order !== 2 && order !== 3) throw new Error('order should be 2 or 3');
  const rtol = f(num(opts, 'rtol', 0.05));
  const atol = f(num(opts, 'atol', 0.0078));
  const eta = num(opts, 'eta', 0);
  const sNoise = num(opts, 's_noise', 1);
  const pcoeff = num(opts, 'pcoeff', 0);
  const icoeff = num(opts, 'icoeff', 1);
  const dcoeff = num(opts, 'dcoeff', 0);
  const acceptSafety = num(opts, 'accept_safety', 0.81);
  const solver = new DpmSolver(model);
  const noise = defaultNoise(ctx, x.length);
  const tStart = lambdaOf(sigmaMax);
  const tEnd = lambdaOf(sigmaMin);
  const forward = tEnd > tStart;
  if (!forward && eta) throw new Error('eta must be 0 for reverse sampling');
  // The PID controller of k-diffusion (PIDStepSizeController).
  let hStep = Math.abs(num(opts, 'h_init', 0.05)) * (forward ? 1 : -1);
  // The reference loops forever on a zero step (h only ever scales); here that, and a run that will not end, is an error.
  if (!(Math.abs(hStep) > 0) || !Number.isFinite(hStep)) throw new Error('dpm_adaptive needs h_init > 0');
  const ctrlOrder = eta ? 1.5 : order;
  const b1 = (pcoeff + icoeff + dcoeff) / ctrlOrder;
  const b2 = -(pcoeff + 2 * dcoeff) / ctrlOrder;
  const b3 = dcoeff / ctrlOrder;
  let errs: number[] | undefined;
  const propose = (error: number) => {
    const inv = 1 / (error + 1e-8);
    errs ??= [inv, inv, inv];
    errs[0] = inv;
    const factor = 1 + Math.atan(errs[0] ** b1 * errs[1]! ** b2 * errs[2]! ** b3 - 1);
    const accept = factor >= acceptSafety;
    if (accept) [errs[2], errs[1]] = [errs[1]!, errs[0]];
    hStep *= factor;
    return accept;
  };
  let s = tStart;
  let xPrev = x;
  let steps = 0;
  const total = sigmas.length - 1;
  while (forward ? s < tEnd - 1e-5 : s > tEnd + 1e-5) {
    if (steps >= MAX_ADAPTIVE_STEPS) throw new Error(`dpm_adaptive did not reach the last σ in ${MAX_ADAPTIVE_STEPS} steps (rtol ${rtol}, atol ${atol}): loosen the tolerances`);
    const cache = new Map<string, Float32Array>();
    const t = forward ? Math.min(tEnd, f(s + hStep)) : Math.max(tEnd, f(s + hStep));
    let t_ = t;
    let su = 0;
    if (eta) {
      const [sd] = ancestralStep(solver.sigma(s), solver.sigma(t), eta);
      t_ = Math.min(tEnd, lambdaOf(sd));
      su = Math.sqrt(solver.sigma(t) ** 2 - solver.sigma(t_) ** 2);
    }
    const eps = await solver.eps(cache, 'eps', x, s);
    const denoised = lin([1, x], [-solver.sigma(s), eps]);
    const low = order === 2 ? await solver.step1(x, s, t_, cache) : await solver.step2(x, s, t_, cache, 1 / 3);
    const high = order === 2 ? await solver.step2(x, s, t_, cache) : await solver.step3(x, s, t_, cache);
    let sq = 0;
    for (let k = 0; k < x.length; k++) {
      const delta = Math.max(atol, rtol * Math.max(Math.abs(low[k]!), Math.abs(xPrev[k]!)));
      const e = (low[k]! - high[k]!) / delta;
      sq += e * e;
    }
    if (propose(Math.sqrt(sq) / Math.sqrt(x.length))) {
      xPrev = low;
      x = lin([1, high], [su * sNoise, noise(solver.sigma(s), solver.sigma(t))]);
      s = t;
    }
    steps++;
    ctx.callback?.({ i: steps - 1, x, denoised, sigma: solver.sigma(s), total });
  }
  return x;
};

// ---------------------------------------------------------------- UniPC

/** The VP view of a σ (uni_pc.py's SigmaConvert), float32 as torch computes it. */
const vp = {
  logAlpha: (s: number) => f(0.5 * f(Math.log(f(1 / f(f(s * s) + 1))))),
  alpha: (s: number) => f(Math.exp(vp.logAlpha(s))),
  std: (s: number) => f(Math.sqrt(f(1 - f(Math.exp(f(2 * vp.logAlpha(s))))))),
  lambda: (s: number) => {
    const lm = vp.logAlpha(s);
    return f(lm - f(0.5 * f(Math.log(f(1 - f(Math.exp(f(2 * lm))))))));
  },
};

/** UniPC (bh1 or bh2 variant): multistep predictor-corrector on the data prediction, order up to 3, as KSampler runs it. */
function uniPc(variant: 'bh1' | 'bh2'): Sampler {
  return async (model, noiseIn, sigmas, ctx) => {
    const ts = Float32Array.from(sigmas);
    if (ts[ts.length - 1] === 0) ts[ts.length - 1] = f(0.001);
    const steps = ts.length - 1;
    const order = Math.min(3, ts.length - 2);
    // The data prediction on VP-scaled x: ε from the denoiser at σ, then x₀ = (x − σ_t ε)/α_t.
    const dataPred = async (x: Float32Array, s: number) => {
      const scale = Math.sqrt(s * s + 1);
      const input = lin([scale, x]);
      const denoised = await model(input, s);
      const eps = lin([1 / s, input], [-1 / s, denoised]);
      return lin([1 / vp.alpha(s), x], [-vp.std(s) / vp.alpha(s), eps]);
    };
    const update = async (x: Float32Array, prevModels: Float32Array[], prevTs: number[], t: number, ord: number, useCorrector: boolean): Promise<[Float32Array, Float32Array | undefined]> => {
      const t0 = prevTs[prevTs.length - 1]!;
      const m0 = prevModels[prevModels.length - 1]!;
      const lambda0 = vp.lambda(t0);
      const lambdaT = vp.lambda(t);
      const sigma0 = vp.std(t0);
      const sigmaT = vp.std(t);
      const alphaT = f(Math.exp(vp.logAlpha(t)));
      const h = f(lambdaT - lambda0);
      const rks: number[] = [];
      const D1s: Float32Array[] = [];
      for (let i = 1; i < ord; i++) {
        const rk = f(f(vp.lambda(prevTs[prevTs.length - 1 - i]!) - lambda0) / h);
        rks.push(rk);
        D1s.push(lin([1 / rk, prevModels[prevModels.length - 1 - i]!], [-1 / rk, m0]));
      }
      rks.push(1);
      const hh = -h;
      const hPhi1 = Math.expm1(hh);
      let hPhiK = hPhi1 / hh - 1;
      let factorial = 1;
      const Bh = variant === 'bh1' ? hh : Math.expm1(hh);
      const R: number[][] = [];
      const b: number[] = [];
      for (let i = 1; i <= ord; i++) {
        R.push(rks.map((r) => r ** (i - 1)));
        b.push((hPhiK * factorial) / Bh);
        factorial *= i + 1;
        hPhiK = hPhiK / hh - 1 / factorial;
      }
      const xt_ = lin([sigmaT / sigma0, x], [-alphaT * hPhi1, m0]);
      let xt = xt_;
      if (D1s.length > 0) {
        const rhosP = ord === 2 ? [0.5] : solve(R.slice(0, -1).map((row) => row.slice(0, -1)), b.slice(0, -1));
        xt = lin([1, xt_], ...D1s.map((d, k): [number, Float32Array] => [-alphaT * Bh * rhosP[k]!, d]));
      }
      if (!useCorrector) return [xt, undefined];
      const rhosC = ord === 1 ? [0.5] : solve(R, b);
      const mt = await dataPred(xt, t);
      const last = rhosC[rhosC.length - 1]!;
      xt = lin([1, xt_], ...D1s.map((d, k): [number, Float32Array] => [-alphaT * Bh * rhosC[k]!, d]), [-alphaT * Bh * last, mt], [alphaT * Bh * last, m0]);
      return [xt, mt];
    };
    let x = lin([1 / Math.sqrt(1 + ts[0]! * ts[0]!), noiseIn]);
    let models: Float32Array[] = [];
    let times: number[] = [];
    for (let stepIndex = 0; stepIndex < steps; stepIndex++) {
      if (stepIndex === 0) {
        models = [await dataPred(x, ts[0]!)];
        times = [ts[0]!];
      } else if (stepIndex < order) {
        const t = ts[stepIndex]!;
        const [nx, mx] = await update(x, models, times, t, stepIndex, true);
        x = nx;
        models.push(mx ?? (await dataPred(x, t)));
        times.push(t);
      } else {
        const extra = stepIndex === steps - 1 ? 1 : 0;
        for (let step = stepIndex; step <= stepIndex + extra; step++) {
          const t = ts[step]!;
          const stepOrder = Math.min(order, steps + 1 - step);
          const [nx, mx] = await update(x, models, times, t, stepOrder, step !== steps);
          x = nx;
          for (let i = 0; i < order - 1; i++) {
            times[i] = times[i + 1]!;
            models[i] = models[i + 1]!;
          }
          times[times.length - 1] = t;
          if (step < steps) models[models.length - 1] = mx ?? (await dataPred(x, t));
        }
      }
      ctx.callback?.({ i: stepIndex, x, denoised: models[models.length - 1]!, sigma: sigmas[stepIndex]!, total: steps });
    }
    return lin([1 / vp.alpha(ts[ts.length - 1]!), x]);
  };
}

// ---------------------------------------------------------------- the table

/** Samplers that read the unconditional prediction: guidance runs the negative even at cfg 1 for them. */
export const CFG_PP_SAMPLERS = new Set(['euler_pp', 'euler_cfg_pp', 'euler_ancestral_cfg_pp', 'dpmpp_2s_ancestral_cfg_pp', 'dpmpp_2m_cfg_pp', 'gradient_estimation_cfg_pp', 'res_multistep_cfg_pp', 'res_multistep_ancestral_cfg_pp']);

const SAMPLERS: Record<string, Sampler> = {
  euler,
  euler_cfg_pp: eulerAncestralCfgPp(0, 0),
  euler_ancestral: ancestral(false),
  euler_ancestral_cfg_pp: eulerAncestralCfgPp(1, 1),
  heun: secondOrder(false),
  heunpp2,
  dpm_2: secondOrder(true),
  dpm_2_ancestral: ancestral(true),
  lms,
  dpm_fast: dpmFast,
  dpm_adaptive: dpmAdaptive,
  dpmpp_2s_ancestral: dpmpp2sAncestral(false),
  dpmpp_2s_ancestral_cfg_pp: dpmpp2sAncestral(true),
  dpmpp_sde: dpmppSde,
  // The _gpu forms draw the tree on the latent's device; on the CPU that is the same tree.
  dpmpp_sde_gpu: dpmppSde,
  dpmpp_2m: dpmpp2m,
  dpmpp_2m_cfg_pp: dpmpp2mCfgPp,
  dpmpp_2m_sde: dpmppMultistepSde(2, 'midpoint'),
  dpmpp_2m_sde_gpu: dpmppMultistepSde(2, 'midpoint'),
  dpmpp_2m_sde_heun: dpmppMultistepSde(2, 'heun'),
  dpmpp_2m_sde_heun_gpu: dpmppMultistepSde(2, 'heun'),
  dpmpp_3m_sde: dpmppMultistepSde(3, 'midpoint'),
  dpmpp_3m_sde_gpu: dpmppMultistepSde(3, 'midpoint'),
  ddpm,
  lcm,
  ipndm: ipndm(false),
  ipndm_v: ipndm(true),
  deis,
  res_multistep: resMultistep(false, false),
  res_multistep_cfg_pp: resMultistep(false, true),
  res_multistep_ancestral: resMultistep(true, false),
  res_multistep_ancestral_cfg_pp: resMultistep(true, true),
  gradient_estimation: gradientEstimation(false),
  gradient_estimation_cfg_pp: gradientEstimation(true),
  er_sde: erSde,
  seeds_2: seeds(2),
  seeds_3: seeds(3),
  sa_solver: saSolver(false),
  sa_solver_pece: saSolver(true),
  // The reference's ddim is euler (it differs only in the noise used for inpainting masks).
  ddim: euler,
  uni_pc: uniPc('bh1'),
  uni_pc_bh2: uniPc('bh2'),
  // Not in KSampler's list: only SamplerEulerCFGpp (version "alternative") and SamplerLCMUpscale name them.
  euler_pp: eulerPp,
  lcm_upscale: lcmUpscale,
};

/** The samplers that work here, in the reference's order (what /object_info lists). */
export const SUPPORTED_SAMPLERS = SAMPLER_NAMES.filter((n) => n in SAMPLERS);

/** A sampler by name with its options (the reference's KSAMPLER(sampler_function, extra_options)). */
export function getSampler(name: string): Sampler {
  const s = Object.hasOwn(SAMPLERS, name) ? SAMPLERS[name] : undefined;
  if (!s) throw new Error(`sampler ${JSON.stringify(name)} is not supported here (supported: ${SUPPORTED_SAMPLERS.join(', ')})`);
  return s;
}
