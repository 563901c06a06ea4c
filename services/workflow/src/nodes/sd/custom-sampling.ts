/**
 * The reference's custom-sampling nodes (comfy_extras/nodes_custom_sampler.py)
 * that need a model or build the SAMPLER, NOISE and GUIDER values:
 * KSamplerSelect and the Sampler* option nodes, BasicScheduler,
 * SDTurboScheduler, BetaSamplingScheduler, SamplingPercentToSigma,
 * RandomNoise, DisableNoise, AddNoise, BasicGuider, CFGGuider,
 * DualCFGGuider, SamplerCustom and SamplerCustomAdvanced. The model-free
 * SIGMAS nodes are in ../sigmas.ts. SIGMAS values are 1-D float32 Tensors.
 */
import { prepareNoise } from '../../models/noise.ts';
import { SUPPORTED_SAMPLERS, type SamplerOptions } from '../../models/samplers.ts';
import { betaScheduler, calculateSigmas, SUPPORTED_SCHEDULERS } from '../../models/schedules.ts';
import { sample, UNetModel, type ConditioningEntry } from '../../models/sd1.ts';
import type { InputSpec, NodeContext, NodeDefinition } from '../api.ts';
import { combo, v3 } from '../schema.ts';
import { isLatent, Tensor, upscaleTensor, type Latent } from '../latent.ts';
import type { UpscaleMethod } from '../resample.ts';
import { stepPreviewer } from './preview.ts';

const f = Math.fround;
const MAX_SEED = 0xffffffffffffffff;
const SAMPLERS = 'sampling/custom_sampling/samplers';
const SCHEDULERS = 'sampling/custom_sampling/schedulers';
const GUIDERS = 'sampling/custom_sampling/guiders';

function nodeError(message: string, pyType = 'RuntimeError'): Error {
  return Object.assign(new Error(message), { pyType });
}

/** SAMPLER: a sampler of the model layer by name, with its extra options (the reference's KSAMPLER). */
export class SamplerValue {
  constructor(
    readonly name: string,
    readonly options: SamplerOptions = {},
  ) {}
}

/** NOISE: the initial noise of a seed (Noise_RandomNoise), or none (Noise_EmptyNoise, whose seed is 0). */
export class NoiseValue {
  constructor(
    readonly seed: number | bigint | string,
    readonly disabled: boolean,
  ) {}

  /** generate_noise: prepare_noise of the latent (batch_index as given), or zeros. */
  generate(latent: Latent): Float32Array {
    const shape = [...latent.samples.shape];
    return this.disabled ? new Float32Array(latent.samples.data.length) : prepareNoise(shape, this.seed, latent.batch_index);
  }
}

/** GUIDER: a model with its conditionings and scales (Guider_Basic, CFGGuider, Guider_DualCFG). */
export class GuiderValue {
  constructor(
    readonly model: UNetModel,
    readonly positive: ConditioningEntry[],
    readonly negative: ConditioningEntry[],
    readonly cfg: number,
    readonly dual?: { middle: ConditioningEntry[]; cfg2: number; nested: boolean },
  ) {}
}

function check<T>(v: unknown, cls: new (...a: any[]) => T, type: string, name: string): T {
  if (!(v instanceof cls)) throw nodeError(`the ${name} input is not a ${type}`);
  return v;
}

function checkConditioning(v: unknown, name: string): ConditioningEntry[] {
  if (!Array.isArray(v) || v.some((e) => !Array.isArray(e) || !e[0] || !(e[0].data instanceof Float32Array))) throw nodeError(`the ${name} input is not a CONDITIONING`);
  return v as ConditioningEntry[];
}

function checkSigmas(v: unknown): Float32Array {
  if (!(v instanceof Tensor) || v.ndim !== 1) throw nodeError('the sigmas input is not SIGMAS (a 1-D tensor)');
  return v.data;
}

function checkLatent(v: unknown, model: UNetModel): Latent {
  if (!isLatent(v)) throw nodeError('the latent_image input is not a LATENT');
  // outChannels: an inpainting UNet takes 9 channels but samples 4-channel latents.
  const ch = model.checkpoint.detected.unet.outChannels;
  if (v.samples.ndim !== 4 || v.samples.shape[1] !== ch) throw nodeError(`the latent has shape [${v.samples.shape.join(', ')}]; this model samples [B, ${ch}, H, W] latents`);
  return v;
}

const sigmasTensor = (v: ArrayLike<number>) => new Tensor([v.length], Float32Array.from(v));

/**
 * Guider.sample as SamplerCustom(Advanced) runs it: the latent's noise mask
 * and batch_index apply, the seed reaches the sampler's noise, and the last
 * step's denoised latent is the second output (latent_preview's x0).
 */
async function runGuider(guider: GuiderValue, noise: NoiseValue, sampler: SamplerValue, sigmas: Float32Array, latentIn: unknown, ctx: NodeContext): Promise<[Latent, Latent]> {
  const latent = checkLatent(latentIn, guider.model);
  let x0: Float32Array | undefined;
  let x0Shape: readonly number[] = latent.samples.shape;
  const total = sigmas.length - 1;
  // latent_preview.prepare_callback: each step's denoised latent as a preview (when --preview-method asks), the last one kept as x0.
  const preview = stepPreviewer(ctx, guider.model.latentFormat.rgbFactors, guider.model.latentFormat.rgbBias, guider.model.latentFormat.name);
  const samples = await sample({
    model: guider.model,
    positive: guider.positive,
    negative: guider.negative,
    cfg: guider.cfg,
    dual: guider.dual,
    samplerName: sampler.name,
    samplerOptions: sampler.options,
    // The σ are given: scheduler and steps are not read.
    sigmas,
    scheduler: 'normal',
    steps: total,
    seed: noise.seed,
    latent: { shape: [...latent.samples.shape], data: latent.samples.data },
    batchIndex: latent.batch_index,
    noiseMask: latent.noise_mask ? { shape: [...latent.noise_mask.shape], data: latent.noise_mask.data } : undefined,
    disableNoise: noise.disabled,
    onStep: (s) => {
      ctx.checkInterrupt();
      x0 = s.denoised;
      x0Shape = s.shape ?? latent.samples.shape;
      preview?.step(s.denoised, x0Shape);
      ctx.progress(Math.min(s.i + 1, total), total);
    },
    upscaleLatent: (x, shape, width, height, method) => upscaleTensor(new Tensor(shape, x), width, height, method as UpscaleMethod | 'bislerp', 'disabled', () => ctx.checkInterrupt()).data,
  });
  await preview?.done();
  ctx.checkInterrupt();
  const out: Latent = { ...latent, samples: new Tensor(samples.shape, samples.data) };
  if (!x0) return [out, out];
  const scale = guider.model.latentFormat.scaleFactor;
  return [out, { ...latent, samples: new Tensor([...x0Shape], x0.map((v) => v / scale)) }];
}

const ETA: InputSpec = ['FLOAT', { default: 1.0, min: 0.0, max: 100.0, step: 0.01, round: false }];
const S_NOISE: InputSpec = ['FLOAT', { default: 1.0, min: 0.0, max: 100.0, step: 0.01, round: false }];
const NOISE_DEVICE: InputSpec = [['gpu', 'cpu']];
const CFG: InputSpec = ['FLOAT', { default: 8.0, min: 0.0, max: 100.0, step: 0.1, round: 0.01 }];
const SEED: InputSpec = ['INT', { default: 0, min: 0, max: MAX_SEED, control_after_generate: true }];
const STEPS: InputSpec = ['INT', { default: 20, min: 1, max: 10000 }];
const tol = (key: string, def: number): [string, InputSpec] => [key, ['FLOAT', { default: def, min: 0.0, max: 100.0, step: 0.01, round: false }]];

const samplerNode = (name: string, required: Record<string, InputSpec>, build: (a: Record<string, any>) => SamplerValue, displayName?: string): NodeDefinition => ({
  name,
  ...(displayName ? { displayName } : {}),
  category: SAMPLERS,
  inputs: { required },
  outputs: ['SAMPLER'],
  execute: (a) => [build(a)],
});

const defs: NodeDefinition[] = [
  {
    name: 'SamplerCustom',
    category: 'sampling/custom_sampling',
    inputs: {
      required: {
        model: ['MODEL'],
        add_noise: ['BOOLEAN', { default: true }],
        noise_seed: SEED,
        cfg: CFG,
        positive: ['CONDITIONING'],
        negative: ['CONDITIONING'],
        sampler: ['SAMPLER'],
        sigmas: ['SIGMAS'],
        latent_image: ['LATENT'],
      },
    },
    outputs: ['LATENT', 'LATENT'],
    outputNames: ['output', 'denoised_output'],
    execute: async (a, ctx) => {
      const model = check(a.model, UNetModel, 'MODEL', 'model');
      const guider = new GuiderValue(model, checkConditioning(a.positive, 'positive'), checkConditioning(a.negative, 'negative'), a.cfg);
      // The seed reaches the sampler even without noise, as the reference passes noise_seed.
      const noise = new NoiseValue(a.noise_seed, a.add_noise !== true);
      return runGuider(guider, noise, check(a.sampler, SamplerValue, 'SAMPLER', 'sampler'), checkSigmas(a.sigmas), a.latent_image, ctx);
    },
  },
  {
    name: 'BasicScheduler',
    category: SCHEDULERS,
    inputs: {
      required: {
        model: ['MODEL'],
        scheduler: [[...SUPPORTED_SCHEDULERS]],
        steps: STEPS,
        denoise: ['FLOAT', { default: 1.0, min: 0.0, max: 1.0, step: 0.01 }],
      },
    },
    outputs: ['SIGMAS'],
    execute: ({ model, scheduler, steps, denoise }) => {
      const m = check(model, UNetModel, 'MODEL', 'model');
      let total = steps;
      if (denoise < 1.0) {
        if (denoise <= 0.0) return [sigmasTensor([])];
        total = Math.trunc(steps / denoise);
      }
      const s = calculateSigmas(m.schedule, scheduler, total);
      return [sigmasTensor(s.subarray(Math.max(0, s.length - (steps + 1))))];
    },
  },
  {
    name: 'BetaSamplingScheduler',
    category: SCHEDULERS,
    inputs: {
      required: {
        model: ['MODEL'],
        steps: STEPS,
        alpha: ['FLOAT', { default: 0.6, min: 0.0, max: 50.0, step: 0.01, round: false }],
        beta: ['FLOAT', { default: 0.6, min: 0.0, max: 50.0, step: 0.01, round: false }],
      },
    },
    outputs: ['SIGMAS'],
    execute: ({ model, steps, alpha, beta }) => [sigmasTensor(betaScheduler(check(model, UNetModel, 'MODEL', 'model').schedule, steps, alpha, beta))],
  },
  {
    name: 'SDTurboScheduler',
    category: SCHEDULERS,
    inputs: {
      required: {
        model: ['MODEL'],
        steps: ['INT', { default: 1, min: 1, max: 10 }],
        denoise: ['FLOAT', { default: 1.0, min: 0, max: 1.0, step: 0.01 }],
      },
    },
    outputs: ['SIGMAS'],
    execute: ({ model, steps, denoise }) => {
      const s = check(model, UNetModel, 'MODEL', 'model').schedule;
      // Timesteps 999, 899, …, 99 from int(10·denoise) from the end; σ of each, then 0.
      const start = 10 - Math.trunc(10 * denoise);
      const ts = Array.from({ length: 10 }, (_, i) => (10 - i) * 100 - 1).slice(start, start + steps);
      return [sigmasTensor([...ts.map((t) => s.sigma(t)), 0])];
    },
  },
  {
    name: 'SamplingPercentToSigma',
    category: 'sampling/custom_sampling/sigmas',
    inputs: {
      required: {
        model: ['MODEL', {}],
        sampling_percent: ['FLOAT', { default: 0.0, min: 0.0, max: 1.0, step: 0.0001 }],
        return_actual_sigma: [
          'BOOLEAN',
          { default: false, tooltip: 'Return the actual sigma value instead of the value used for interval checks.\nThis only affects results at 0.0 and 1.0.' },
        ],
      },
    },
    outputs: ['FLOAT'],
    outputNames: ['sigma_value'],
    execute: ({ model, sampling_percent, return_actual_sigma }) => {
      const s = check(model, UNetModel, 'MODEL', 'model').schedule;
      let v = s.percentToSigma(sampling_percent);
      if (return_actual_sigma === true) {
        if (sampling_percent === 0) v = s.sigmaMax;
        else if (sampling_percent === 1) v = s.sigmaMin;
      }
      return [v];
    },
  },
  samplerNode('KSamplerSelect', { sampler_name: [[...SUPPORTED_SAMPLERS]] }, (a) => new SamplerValue(a.sampler_name)),
  samplerNode('SamplerDPMPP_3M_SDE', { eta: ETA, s_noise: S_NOISE, noise_device: NOISE_DEVICE }, (a) =>
    new SamplerValue(a.noise_device === 'cpu' ? 'dpmpp_3m_sde' : 'dpmpp_3m_sde_gpu', { eta: a.eta, s_noise: a.s_noise }),
  ),
  samplerNode('SamplerDPMPP_2M_SDE', { solver_type: [['midpoint', 'heun']], eta: ETA, s_noise: S_NOISE, noise_device: NOISE_DEVICE }, (a) =>
    new SamplerValue(a.noise_device === 'cpu' ? 'dpmpp_2m_sde' : 'dpmpp_2m_sde_gpu', { eta: a.eta, s_noise: a.s_noise, solver_type: a.solver_type }),
  ),
  samplerNode('SamplerDPMPP_SDE', { eta: ETA, s_noise: S_NOISE, r: ['FLOAT', { default: 0.5, min: 0.0, max: 100.0, step: 0.01, round: false }], noise_device: NOISE_DEVICE }, (a) =>
    new SamplerValue(a.noise_device === 'cpu' ? 'dpmpp_sde' : 'dpmpp_sde_gpu', { eta: a.eta, s_noise: a.s_noise, r: a.r }),
  ),
  samplerNode('SamplerDPMPP_2S_Ancestral', { eta: ETA, s_noise: S_NOISE }, (a) => new SamplerValue('dpmpp_2s_ancestral', { eta: a.eta, s_noise: a.s_noise })),
  samplerNode('SamplerEulerAncestral', { eta: ETA, s_noise: S_NOISE }, (a) => new SamplerValue('euler_ancestral', { eta: a.eta, s_noise: a.s_noise })),
  samplerNode(
    'SamplerEulerAncestralCFGPP',
    { eta: ['FLOAT', { default: 1.0, min: 0.0, max: 1.0, step: 0.01, round: false }], s_noise: ['FLOAT', { default: 1.0, min: 0.0, max: 10.0, step: 0.01, round: false }] },
    (a) => new SamplerValue('euler_ancestral_cfg_pp', { eta: a.eta, s_noise: a.s_noise }),
    'SamplerEulerAncestralCFG++',
  ),
  samplerNode('SamplerLMS', { order: ['INT', { default: 4, min: 1, max: 100 }] }, (a) => new SamplerValue('lms', { order: a.order })),
  samplerNode(
    'SamplerDPMAdaptative',
    Object.fromEntries([
      ['order', ['INT', { default: 3, min: 2, max: 3 }]],
      tol('rtol', 0.05),
      tol('atol', 0.0078),
      tol('h_init', 0.05),
      tol('pcoeff', 0.0),
      tol('icoeff', 1.0),
      tol('dcoeff', 0.0),
      tol('accept_safety', 0.81),
      tol('eta', 0.0),
      tol('s_noise', 1.0),
    ]),
    (a) =>
      new SamplerValue('dpm_adaptive', {
        order: a.order, rtol: a.rtol, atol: a.atol, h_init: a.h_init, pcoeff: a.pcoeff, icoeff: a.icoeff, dcoeff: a.dcoeff, accept_safety: a.accept_safety, eta: a.eta, s_noise: a.s_noise,
      }),
  ),
  samplerNode(
    'SamplerER_SDE',
    {
      solver_type: ['COMBO', { options: ['ER-SDE', 'Reverse-time SDE', 'ODE'] }],
      max_stage: ['INT', { default: 3, min: 1, max: 3 }],
      eta: [
        'FLOAT',
        {
          default: 1.0,
          min: 0.0,
          max: 100.0,
          step: 0.01,
          round: false,
          tooltip: "Stochastic strength of reverse-time SDE.\nWhen eta=0, it reduces to deterministic ODE. This setting doesn't apply to ER-SDE solver type.",
        },
      ],
      s_noise: S_NOISE,
    },
    (a) => {
      let { eta, s_noise } = a;
      if (a.solver_type === 'ODE' || (a.solver_type === 'Reverse-time SDE' && eta === 0)) [eta, s_noise] = [0, 0];
      // ER-SDE keeps the sampler's own noise scaler; the others scale by x^(η + 1).
      return new SamplerValue('er_sde', { s_noise, max_stage: a.max_stage, reverse_eta: a.solver_type === 'ER-SDE' ? undefined : eta });
    },
  ),
  {
    name: 'SamplerSASolver',
    category: SAMPLERS,
    inputs: {
      required: {
        model: ['MODEL', {}],
        eta: ['FLOAT', { default: 1.0, min: 0.0, max: 10.0, step: 0.01, round: false }],
        sde_start_percent: ['FLOAT', { default: 0.2, min: 0.0, max: 1.0, step: 0.001 }],
        sde_end_percent: ['FLOAT', { default: 0.8, min: 0.0, max: 1.0, step: 0.001 }],
        s_noise: ['FLOAT', { default: 1.0, min: 0.0, max: 100.0, step: 0.01, round: false }],
        predictor_order: ['INT', { default: 3, min: 1, max: 6 }],
        corrector_order: ['INT', { default: 4, min: 0, max: 6 }],
        use_pece: ['BOOLEAN', {}],
        simple_order_2: ['BOOLEAN', {}],
      },
    },
    outputs: ['SAMPLER'],
    execute: (a) => {
      const s = check(a.model, UNetModel, 'MODEL', 'model').schedule;
      return [
        new SamplerValue('sa_solver', {
          tau_start_sigma: s.percentToSigma(a.sde_start_percent),
          tau_end_sigma: s.percentToSigma(a.sde_end_percent),
          tau_eta: a.eta,
          s_noise: a.s_noise,
          predictor_order: a.predictor_order,
          corrector_order: a.corrector_order,
          use_pece: a.use_pece === true,
          simple_order_2: a.simple_order_2 === true,
        }),
      ];
    },
  },
  {
    name: 'CFGGuider',
    category: GUIDERS,
    inputs: { required: { model: ['MODEL'], positive: ['CONDITIONING'], negative: ['CONDITIONING'], cfg: CFG } },
    outputs: ['GUIDER'],
    execute: (a) => [new GuiderValue(check(a.model, UNetModel, 'MODEL', 'model'), checkConditioning(a.positive, 'positive'), checkConditioning(a.negative, 'negative'), a.cfg)],
  },
  {
    name: 'DualCFGGuider',
    category: GUIDERS,
    inputs: {
      required: {
        model: ['MODEL'],
        cond1: ['CONDITIONING'],
        cond2: ['CONDITIONING'],
        negative: ['CONDITIONING'],
        cfg_conds: CFG,
        cfg_cond2_negative: CFG,
        style: [['regular', 'nested']],
      },
    },
    outputs: ['GUIDER'],
    execute: (a) => {
      const middle = checkConditioning(a.cond2, 'cond2').map(([t, o]): ConditioningEntry => [t, { ...o, prompt_type: 'negative' }]);
      return [
        new GuiderValue(check(a.model, UNetModel, 'MODEL', 'model'), checkConditioning(a.cond1, 'cond1'), checkConditioning(a.negative, 'negative'), a.cfg_conds, {
          middle,
          cfg2: a.cfg_cond2_negative,
          nested: a.style === 'nested',
        }),
      ];
    },
  },
  {
    name: 'BasicGuider',
    category: GUIDERS,
    inputs: { required: { model: ['MODEL'], conditioning: ['CONDITIONING'] } },
    outputs: ['GUIDER'],
    // Guider_Basic: the positive alone at cfg 1 (a sampler that reads the unconditional prediction sees zeros).
    execute: (a) => [new GuiderValue(check(a.model, UNetModel, 'MODEL', 'model'), checkConditioning(a.conditioning, 'conditioning'), [], 1.0)],
  },
  {
    name: 'RandomNoise',
    category: 'sampling/custom_sampling/noise',
    inputs: { required: { noise_seed: ['INT', { default: 0, min: 0, max: MAX_SEED, control_after_generate: true }] } },
    outputs: ['NOISE'],
    execute: ({ noise_seed }) => [new NoiseValue(noise_seed, false)],
  },
  {
    name: 'DisableNoise',
    category: 'sampling/custom_sampling/noise',
    inputs: { required: {} },
    outputs: ['NOISE'],
    execute: () => [new NoiseValue(0, true)],
  },
  {
    name: 'AddNoise',
    category: '_for_testing/custom_sampling/noise',
    inputs: { required: { model: ['MODEL'], noise: ['NOISE'], sigmas: ['SIGMAS'], latent_image: ['LATENT'] } },
    outputs: ['LATENT'],
    execute: ({ model, noise, sigmas, latent_image }) => {
      const m = check(model, UNetModel, 'MODEL', 'model');
      const s = checkSigmas(sigmas);
      if (s.length === 0) return [latent_image];
      const latent = checkLatent(latent_image, m);
      const noisy = check(noise, NoiseValue, 'NOISE', 'noise').generate(latent);
      const scale = s.length > 1 ? f(Math.abs(f(s[0]! - s[s.length - 1]!))) : s[0]!;
      const k = m.latentFormat.scaleFactor;
      const src = latent.samples.data;
      // A latent of zeros is not scaled in (as the reference leaves the empty latent alone); the sum comes back scaled out.
      const scaleIn = src.some((v) => v !== 0) ? k : 1;
      const out = new Float32Array(src.length);
      for (let i = 0; i < out.length; i++) {
        const v = f(f(f(noisy[i]! * scale) + f(src[i]! * scaleIn)) / k);
        out[i] = Number.isFinite(v) ? v : 0;
      }
      return [{ ...latent, samples: new Tensor([...latent.samples.shape], out) }];
    },
  },
  {
    name: 'SamplerCustomAdvanced',
    category: 'sampling/custom_sampling',
    inputs: { required: { noise: ['NOISE'], guider: ['GUIDER'], sampler: ['SAMPLER'], sigmas: ['SIGMAS'], latent_image: ['LATENT'] } },
    outputs: ['LATENT', 'LATENT'],
    outputNames: ['output', 'denoised_output'],
    execute: (a, ctx) =>
      runGuider(
        check(a.guider, GuiderValue, 'GUIDER', 'guider'),
        check(a.noise, NoiseValue, 'NOISE', 'noise'),
        check(a.sampler, SamplerValue, 'SAMPLER', 'sampler'),
        checkSigmas(a.sigmas),
        a.latent_image,
        ctx,
      ),
  },
];

/** comfy_extras/nodes_advanced_samplers.py (V3 nodes). */
const advancedSamplers: NodeDefinition[] = v3('comfy_extras.nodes_advanced_samplers', [
  {
    name: 'SamplerLCMUpscale',
    displayName: null,
    category: SAMPLERS,
    inputs: {
      required: {
        scale_ratio: ['FLOAT', { default: 1.0, min: 0.1, max: 20.0, step: 0.01 }],
        scale_steps: ['INT', { default: -1, min: -1, max: 1000, step: 1 }],
        upscale_method: combo(['bislerp', 'nearest-exact', 'bilinear', 'area', 'bicubic']),
      },
    },
    outputs: ['SAMPLER'],
    execute: ({ scale_ratio, scale_steps, upscale_method }) => [
      new SamplerValue('lcm_upscale', { total_upscale: scale_ratio, upscale_steps: scale_steps < 0 ? undefined : scale_steps, upscale_method }),
    ],
  },
  {
    name: 'SamplerEulerCFGpp',
    displayName: 'SamplerEulerCFG++',
    category: '_for_testing',
    experimental: true,
    inputs: { required: { version: combo(['regular', 'alternative']) } },
    outputs: ['SAMPLER'],
    execute: ({ version }) => [new SamplerValue(version === 'alternative' ? 'euler_pp' : 'euler_cfg_pp')],
  },
]);

export const customSamplingNodes: NodeDefinition[] = [...defs.map((d) => ({ ...d, pythonModule: 'comfy_extras.nodes_custom_sampler' })), ...advancedSamplers];
