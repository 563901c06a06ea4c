/**
 * The reference's k-diffusion samplers (comfy/k_diffusion/sampling.py) for
 * ε-prediction models, over flat float32 latents. `model(x, σ)` returns the
 * denoised latent (CFG already applied); it is awaited, so a sampler never
 * holds the event loop while the network runs. Ancestral noise comes from a
 * torch generator seeded with the sampler's seed, as the reference's
 * default_noise_sampler.
 */
import { TorchGenerator } from './noise.ts';

export type Denoiser = (x: Float32Array, sigma: number) => Promise<Float32Array>;

export interface StepInfo {
  i: number;
  x: Float32Array;
  denoised: Float32Array;
  sigma: number;
  total: number;
}

export interface SamplerContext {
  seed: number | bigint | string;
  /** The unconditional prediction of the last model call (CFG++ samplers; the reference's post-CFG hook). */
  uncond?: () => Float32Array;
  /** Called after each step's first model call (previews, progress); may throw to interrupt. */
  callback?: (info: StepInfo) => void;
}

type Sampler = (model: Denoiser, x: Float32Array, sigmas: Float32Array, ctx: SamplerContext) => Promise<Float32Array>;

/** The reference's KSampler sampler list, in its order. */
export const SAMPLER_NAMES = [
  'euler', 'euler_cfg_pp', 'euler_ancestral', 'euler_ancestral_cfg_pp', 'heun', 'heunpp2', 'dpm_2', 'dpm_2_ancestral',
  'lms', 'dpm_fast', 'dpm_adaptive', 'dpmpp_2s_ancestral', 'dpmpp_2s_ancestral_cfg_pp', 'dpmpp_sde', 'dpmpp_sde_gpu',
  'dpmpp_2m', 'dpmpp_2m_cfg_pp', 'dpmpp_2m_sde', 'dpmpp_2m_sde_gpu', 'dpmpp_2m_sde_heun', 'dpmpp_2m_sde_heun_gpu', 'dpmpp_3m_sde', 'dpmpp_3m_sde_gpu', 'ddpm', 'lcm',
  'ipndm', 'ipndm_v', 'deis', 'res_multistep', 'res_multistep_cfg_pp', 'res_multistep_ancestral', 'res_multistep_ancestral_cfg_pp',
  'gradient_estimation', 'gradient_estimation_cfg_pp', 'er_sde', 'seeds_2', 'seeds_3', 'sa_solver', 'sa_solver_pece',
  'ddim', 'uni_pc', 'uni_pc_bh2',
] as const;

/** x + a·y, elementwise into a new array. */
function axpy(x: Float32Array, a: number, y: Float32Array): Float32Array {
  const out = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = x[i]! + a * y[i]!;
  return out;
}

/** (x − denoised) / σ */
function toD(x: Float32Array, sigma: number, denoised: Float32Array): Float32Array {
  const out = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = (x[i]! - denoised[i]!) / sigma;
  return out;
}

/** a·x + b·y */
function lincomb(a: number, x: Float32Array, b: number, y: Float32Array): Float32Array {
  const out = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = a * x[i]! + b * y[i]!;
  return out;
}

/** get_ancestral_step on float32 σ tensors, rounded as torch rounds each operation (σ_down cancels badly in float32). */
export function ancestralStep(sigmaFrom: number, sigmaTo: number, eta = 1): [down: number, up: number] {
  if (!eta) return [sigmaTo, 0];
  const f = Math.fround;
  const to2 = f(sigmaTo * sigmaTo);
  const from2 = f(sigmaFrom * sigmaFrom);
  const up = Math.min(sigmaTo, f(eta * f(Math.sqrt(f(f(to2 * f(from2 - to2)) / from2)))));
  return [f(Math.sqrt(f(to2 - f(up * up)))), up];
}

function noiseSampler(ctx: SamplerContext, n: number): () => Float32Array {
  let gen: TorchGenerator | undefined;
  return () => (gen ??= new TorchGenerator(ctx.seed)).randn(n);
}

const steps = (sigmas: Float32Array) => sigmas.length - 1;
const report = (ctx: SamplerContext, i: number, x: Float32Array, denoised: Float32Array, sigmas: Float32Array) =>
  ctx.callback?.({ i, x, denoised, sigma: sigmas[i]!, total: steps(sigmas) });

const euler: Sampler = async (model, x, sigmas, ctx) => {
  for (let i = 0; i < steps(sigmas); i++) {
    const denoised = await model(x, sigmas[i]!);
    report(ctx, i, x, denoised, sigmas);
    x = axpy(x, sigmas[i + 1]! - sigmas[i]!, toD(x, sigmas[i]!, denoised));
  }
  return x;
};

const eulerAncestral: Sampler = async (model, x, sigmas, ctx) => {
  const noise = noiseSampler(ctx, x.length);
  for (let i = 0; i < steps(sigmas); i++) {
    const denoised = await model(x, sigmas[i]!);
    const [down, up] = ancestralStep(sigmas[i]!, sigmas[i + 1]!);
    report(ctx, i, x, denoised, sigmas);
    if (down === 0) x = denoised;
    else {
      x = axpy(x, down - sigmas[i]!, toD(x, sigmas[i]!, denoised));
      x = axpy(x, up, noise());
    }
  }
  return x;
};

const heun: Sampler = async (model, x, sigmas, ctx) => {
  for (let i = 0; i < steps(sigmas); i++) {
    const s = sigmas[i]!;
    const next = sigmas[i + 1]!;
    const denoised = await model(x, s);
    const d = toD(x, s, denoised);
    report(ctx, i, x, denoised, sigmas);
    const dt = next - s;
    if (next === 0) x = axpy(x, dt, d);
    else {
      const x2 = axpy(x, dt, d);
      const d2 = toD(x2, next, await model(x2, next));
      x = axpy(x, dt, lincomb(0.5, d, 0.5, d2));
    }
  }
  return x;
};

/** exp(lerp(log a, log b, ½)) in float32 as torch computes it. */
function logMid(a: number, b: number): number {
  const la = Math.fround(Math.log(a));
  const lb = Math.fround(Math.log(b));
  return Math.fround(Math.exp(Math.fround(la + 0.5 * (lb - la))));
}

const dpm2: Sampler = async (model, x, sigmas, ctx) => {
  for (let i = 0; i < steps(sigmas); i++) {
    const s = sigmas[i]!;
    const next = sigmas[i + 1]!;
    const denoised = await model(x, s);
    const d = toD(x, s, denoised);
    report(ctx, i, x, denoised, sigmas);
    if (next === 0) x = axpy(x, next - s, d);
    else {
      const mid = logMid(s, next);
      const x2 = axpy(x, mid - s, d);
      const d2 = toD(x2, mid, await model(x2, mid));
      x = axpy(x, next - s, d2);
    }
  }
  return x;
};

const dpm2Ancestral: Sampler = async (model, x, sigmas, ctx) => {
  const noise = noiseSampler(ctx, x.length);
  for (let i = 0; i < steps(sigmas); i++) {
    const s = sigmas[i]!;
    const denoised = await model(x, s);
    const [down, up] = ancestralStep(s, sigmas[i + 1]!);
    report(ctx, i, x, denoised, sigmas);
    const d = toD(x, s, denoised);
    if (down === 0) x = axpy(x, down - s, d);
    else {
      const mid = logMid(s, down);
      const x2 = axpy(x, mid - s, d);
      const d2 = toD(x2, mid, await model(x2, mid));
      x = axpy(x, down - s, d2);
      x = axpy(x, up, noise());
    }
  }
  return x;
};

const dpmpp2sAncestral: Sampler = async (model, x, sigmas, ctx) => {
  const noise = noiseSampler(ctx, x.length);
  for (let i = 0; i < steps(sigmas); i++) {
    const s = sigmas[i]!;
    const denoised = await model(x, s);
    const [down, up] = ancestralStep(s, sigmas[i + 1]!);
    report(ctx, i, x, denoised, sigmas);
    if (down === 0) x = axpy(x, down - s, toD(x, s, denoised));
    else {
      const t = -Math.log(s);
      const tNext = -Math.log(down);
      const h = tNext - t;
      const sMid = t + h / 2;
      const sigmaS = Math.exp(-sMid);
      const x2 = lincomb(sigmaS / s, x, -Math.expm1(-h / 2), denoised);
      const denoised2 = await model(x2, sigmaS);
      x = lincomb(Math.exp(-tNext) / s, x, -Math.expm1(-h), denoised2);
    }
    if (sigmas[i + 1]! > 0) x = axpy(x, up, noise());
  }
  return x;
};

const dpmpp2m: Sampler = async (model, x, sigmas, ctx) => {
  let old: Float32Array | undefined;
  for (let i = 0; i < steps(sigmas); i++) {
    const s = sigmas[i]!;
    const next = sigmas[i + 1]!;
    const denoised = await model(x, s);
    report(ctx, i, x, denoised, sigmas);
    const t = -Math.log(s);
    const tNext = -Math.log(next);
    const h = tNext - t;
    const ratio = Math.exp(-tNext) / Math.exp(-t);
    if (!old || next === 0) x = lincomb(ratio, x, -Math.expm1(-h), denoised);
    else {
      const hLast = t + Math.log(sigmas[i - 1]!);
      const r = hLast / h;
      const dd = lincomb(1 + 1 / (2 * r), denoised, -(1 / (2 * r)), old);
      x = lincomb(ratio, x, -Math.expm1(-h), dd);
    }
    old = denoised;
  }
  return x;
};

/** The DDPM posterior step, on x scaled to unit variance. */
const ddpm: Sampler = async (model, x, sigmas, ctx) => {
  const noise = noiseSampler(ctx, x.length);
  for (let i = 0; i < steps(sigmas); i++) {
    const s = sigmas[i]!;
    const prev = sigmas[i + 1]!;
    const denoised = await model(x, s);
    report(ctx, i, x, denoised, sigmas);
    const ac = 1 / (s * s + 1);
    const acPrev = 1 / (prev * prev + 1);
    const alpha = ac / acPrev;
    const inScale = 1 / Math.sqrt(1 + s * s);
    const a = Math.sqrt(1 / alpha);
    const b = (1 - alpha) / Math.sqrt(1 - ac);
    const out = new Float32Array(x.length);
    for (let k = 0; k < x.length; k++) {
      const eps = (x[k]! - denoised[k]!) / s;
      out[k] = a * (x[k]! * inScale - b * eps);
    }
    if (prev > 0) {
      const n = noise();
      const c = Math.sqrt(((1 - alpha) * (1 - acPrev)) / (1 - ac));
      for (let k = 0; k < x.length; k++) out[k]! += c * n[k]!;
      const scale = Math.sqrt(1 + prev * prev);
      for (let k = 0; k < x.length; k++) out[k]! *= scale;
    }
    x = out;
  }
  return x;
};

const lcm: Sampler = async (model, x, sigmas, ctx) => {
  const noise = noiseSampler(ctx, x.length);
  for (let i = 0; i < steps(sigmas); i++) {
    const denoised = await model(x, sigmas[i]!);
    report(ctx, i, x, denoised, sigmas);
    x = denoised;
    if (sigmas[i + 1]! > 0) x = axpy(x, sigmas[i + 1]!, noise());
  }
  return x;
};

/** ∫ from t[i] to t[i+1] of the Lagrange basis polynomial j over t[i], t[i−1], … (degree < 4: Gauss–Legendre is exact). */
function lmsCoeff(order: number, t: Float32Array, i: number, j: number): number {
  const fn = (tau: number) => {
    let prod = 1;
    for (let k = 0; k < order; k++) if (k !== j) prod *= (tau - t[i - k]!) / (t[i - j]! - t[i - k]!);
    return prod;
  };
  const a = t[i]!;
  const b = t[i + 1]!;
  const mid = (a + b) / 2;
  const half = (b - a) / 2;
  const nodes = [-Math.sqrt(3 / 5), 0, Math.sqrt(3 / 5)];
  const weights = [5 / 9, 8 / 9, 5 / 9];
  return nodes.reduce((acc, x, n) => acc + weights[n]! * fn(mid + half * x), 0) * half;
}

const lms: Sampler = async (model, x, sigmas, ctx) => {
  const order = 4;
  const ds: Float32Array[] = [];
  for (let i = 0; i < steps(sigmas); i++) {
    const denoised = await model(x, sigmas[i]!);
    ds.push(toD(x, sigmas[i]!, denoised));
    if (ds.length > order) ds.shift();
    report(ctx, i, x, denoised, sigmas);
    if (sigmas[i + 1] === 0) x = denoised;
    else {
      const cur = Math.min(i + 1, order);
      const out = Float32Array.from(x);
      for (let j = 0; j < cur; j++) {
        const c = lmsCoeff(cur, sigmas, i, j);
        const d = ds[ds.length - 1 - j]!;
        for (let k = 0; k < out.length; k++) out[k]! += c * d[k]!;
      }
      x = out;
    }
  }
  return x;
};

/** iPNDM: Adams–Bashforth on the last derivatives, fixed coefficients (ipndm) or step-size aware ones (ipndm_v). */
function ipndm(variable: boolean): Sampler {
  return async (model, x, sigmas, ctx) => {
    const buffer: Float32Array[] = [];
    const t = sigmas;
    for (let i = 0; i < steps(sigmas); i++) {
      const cur = t[i]!;
      const next = t[i + 1]!;
      const denoised = await model(x, cur);
      report(ctx, i, x, denoised, sigmas);
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
              ((-temp2 * r) * h1) / h2,
            ];
          }
        }
      }
      if (next === 0) x = denoised;
      else {
        const out = Float32Array.from(x);
        const hist = [d, ...buffer.slice().reverse()];
        for (let j = 0; j < coeffs.length; j++) {
          const c = (next - cur) * coeffs[j]!;
          const v = hist[j]!;
          for (let k = 0; k < out.length; k++) out[k]! += c * v[k]!;
        }
        x = out;
      }
      if (buffer.length === 3) buffer.shift();
      buffer.push(d);
    }
    return x;
  };
}

const gradientEstimation: Sampler = async (model, x, sigmas, ctx) => {
  const gamma = 2;
  let oldD: Float32Array | undefined;
  for (let i = 0; i < steps(sigmas); i++) {
    const denoised = await model(x, sigmas[i]!);
    const d = toD(x, sigmas[i]!, denoised);
    report(ctx, i, x, denoised, sigmas);
    const dt = sigmas[i + 1]! - sigmas[i]!;
    if (sigmas[i + 1] === 0) x = denoised;
    else {
      x = axpy(x, dt, d);
      if (i >= 1) {
        const out = new Float32Array(x.length);
        for (let k = 0; k < x.length; k++) out[k] = x[k]! + (gamma - 1) * (d[k]! - oldD![k]!) * dt;
        x = out;
      }
    }
    oldD = d;
  }
  return x;
};

/** exp(λ(σ))·σ with λ = −log σ: 1 up to torch's float32 rounding, as the reference computes α for ε models. */
function alphaOf(sigma: number): number {
  const f = Math.fround;
  return f(sigma * f(Math.exp(f(-f(Math.log(sigma))))));
}

function uncondOf(ctx: SamplerContext): Float32Array {
  const u = ctx.uncond?.();
  if (!u) throw new Error('a CFG++ sampler needs the unconditional prediction');
  return u;
}

function eulerAncestralCfgPp(eta: number, sNoise: number): Sampler {
  return async (model, x, sigmas, ctx) => {
    const noise = noiseSampler(ctx, x.length);
    for (let i = 0; i < steps(sigmas); i++) {
      const s = sigmas[i]!;
      const next = sigmas[i + 1]!;
      const denoised = await model(x, s);
      const uncond = uncondOf(ctx);
      report(ctx, i, x, denoised, sigmas);
      if (next === 0) {
        x = denoised;
        continue;
      }
      const aS = alphaOf(s);
      const aT = alphaOf(next);
      const d = new Float32Array(x.length);
      for (let k = 0; k < x.length; k++) d[k] = (x[k]! - aS * uncond[k]!) / s;
      const [down0, up] = ancestralStep(s / aS, next / aT, eta);
      const down = aT * down0;
      const out = new Float32Array(x.length);
      for (let k = 0; k < x.length; k++) out[k] = aT * denoised[k]! + down * d[k]!;
      if (eta > 0 && sNoise > 0) {
        const n = noise();
        for (let k = 0; k < x.length; k++) out[k]! += aT * n[k]! * sNoise * up;
      }
      x = out;
    }
    return x;
  };
}

const dpmpp2mCfgPp: Sampler = async (model, x, sigmas, ctx) => {
  let oldUncond: Float32Array | undefined;
  for (let i = 0; i < steps(sigmas); i++) {
    const s = sigmas[i]!;
    const next = sigmas[i + 1]!;
    const denoised = await model(x, s);
    const uncond = uncondOf(ctx);
    report(ctx, i, x, denoised, sigmas);
    const t = -Math.log(s);
    const h = -Math.log(next) - t;
    const eh = Math.exp(-h);
    const out = new Float32Array(x.length);
    if (!oldUncond || next === 0) for (let k = 0; k < x.length; k++) out[k] = denoised[k]! - eh * uncond[k]! + eh * x[k]!;
    else {
      const r = (t + Math.log(sigmas[i - 1]!)) / h;
      const c = Math.expm1(-h) * (1 / (2 * r));
      for (let k = 0; k < x.length; k++) out[k] = denoised[k]! + (-eh * uncond[k]! - c * (denoised[k]! - oldUncond[k]!)) + eh * x[k]!;
    }
    x = out;
    oldUncond = uncond;
  }
  return x;
};

const dpmpp2sAncestralCfgPp: Sampler = async (model, x, sigmas, ctx) => {
  const noise = noiseSampler(ctx, x.length);
  for (let i = 0; i < steps(sigmas); i++) {
    const s = sigmas[i]!;
    const denoised = await model(x, s);
    const uncond = uncondOf(ctx);
    const [down, up] = ancestralStep(s, sigmas[i + 1]!);
    report(ctx, i, x, denoised, sigmas);
    if (down === 0) {
      const out = new Float32Array(x.length);
      for (let k = 0; k < x.length; k++) out[k] = denoised[k]! + ((x[k]! - uncond[k]!) / s) * down;
      x = out;
    } else {
      const t = -Math.log(s);
      const tNext = -Math.log(down);
      const h = tNext - t;
      const sigmaS = Math.exp(-(t + h / 2));
      const shifted = new Float32Array(x.length);
      for (let k = 0; k < x.length; k++) shifted[k] = x[k]! + (denoised[k]! - uncond[k]!);
      const x2 = lincomb(sigmaS / s, shifted, -Math.expm1(-h / 2), denoised);
      const denoised2 = await model(x2, sigmaS);
      // The reference reads its hook's latest unconditional prediction here: the second call's.
      const uncond2 = uncondOf(ctx);
      const shifted2 = new Float32Array(x.length);
      for (let k = 0; k < x.length; k++) shifted2[k] = x[k]! + (denoised[k]! - uncond2[k]!);
      x = lincomb(Math.exp(-tNext) / s, shifted2, -Math.expm1(-h), denoised2);
    }
    if (sigmas[i + 1]! > 0) x = axpy(x, up, noise());
  }
  return x;
};

const gradientEstimationCfgPp: Sampler = async (model, x, sigmas, ctx) => {
  let oldD: Float32Array | undefined;
  for (let i = 0; i < steps(sigmas); i++) {
    const denoised = await model(x, sigmas[i]!);
    const d = toD(x, sigmas[i]!, uncondOf(ctx));
    report(ctx, i, x, denoised, sigmas);
    const dt = sigmas[i + 1]! - sigmas[i]!;
    if (sigmas[i + 1] === 0) x = denoised;
    else {
      const out = axpy(denoised, sigmas[i + 1]!, d);
      if (i >= 1) for (let k = 0; k < out.length; k++) out[k]! += (d[k]! - oldD![k]!) * dt;
      x = out;
    }
    oldD = d;
  }
  return x;
};

/** Samplers that read the unconditional prediction: CFG runs the negative even at cfg 1 for them. */
export const CFG_PP_SAMPLERS = new Set(['euler_cfg_pp', 'euler_ancestral_cfg_pp', 'dpmpp_2s_ancestral_cfg_pp', 'dpmpp_2m_cfg_pp', 'gradient_estimation_cfg_pp']);

const SAMPLERS: Record<string, Sampler> = {
  euler_cfg_pp: eulerAncestralCfgPp(0, 0),
  euler_ancestral_cfg_pp: eulerAncestralCfgPp(1, 1),
  dpmpp_2s_ancestral_cfg_pp: dpmpp2sAncestralCfgPp,
  dpmpp_2m_cfg_pp: dpmpp2mCfgPp,
  gradient_estimation_cfg_pp: gradientEstimationCfgPp,
  lms,
  ipndm: ipndm(false),
  ipndm_v: ipndm(true),
  gradient_estimation: gradientEstimation,
  euler,
  euler_ancestral: eulerAncestral,
  heun,
  dpm_2: dpm2,
  dpm_2_ancestral: dpm2Ancestral,
  dpmpp_2s_ancestral: dpmpp2sAncestral,
  dpmpp_2m: dpmpp2m,
  ddpm,
  lcm,
  // The reference's ddim is euler (it differs only in the noise used for inpainting masks).
  ddim: euler,
};

/** The samplers that work here, in the reference's order (what /object_info lists). */
export const SUPPORTED_SAMPLERS = SAMPLER_NAMES.filter((n) => n in SAMPLERS);

export function getSampler(name: string): Sampler {
  const s = SAMPLERS[name];
  if (!s) throw new Error(`sampler ${JSON.stringify(name)} is not supported here (supported: ${SUPPORTED_SAMPLERS.join(', ')})`);
  return s;
}
