/**
 * The reference's model nodes for SD1.x checkpoints (nodes.py): loading,
 * text encoding, sampling, VAE decode/encode. MODEL, CLIP and VAE values are
 * the model layer's objects (src/models/sd1.ts); CONDITIONING is the
 * reference's list of [embedding, options]; LATENT is latent.ts's value.
 * Every file name goes through the model-folder table, so a name cannot
 * leave its folder.
 */
import { ModelFolders } from '../../domain/models.ts';
import { ModelFileError } from '../../models/safetensors.ts';
import { ClipModel, loadCheckpoint, sample, UNetModel, VaeModel, type ConditioningEntry, type FloatTensor } from '../../models/sd1.ts';
import { SUPPORTED_SAMPLERS } from '../../models/samplers.ts';
import { SUPPORTED_SCHEDULERS } from '../../models/schedules.ts';
import type { NodeContext, NodeDefinition, NodeEnv, NodeInputs } from '../api.ts';
import { Frame, ImageBatch } from '../image-types.ts';
import { isLatent, Tensor, type Latent } from '../latent.ts';
import { conditioningNodes } from './conditioning-nodes.ts';
import { controlNodes } from './control-nodes.ts';
import { customSamplingNodes } from './custom-sampling.ts';
import { loaderNodes } from './loader-nodes.ts';
import { stepPreviewer } from './preview.ts';
import { XLClipModel } from '../../models/sdxl.ts';
import { xlNodes } from './xl-nodes.ts';
import { embeddingOptions } from './embeddings.ts';
import { decodeTiled, encodeTiled } from '../../models/vae-tiled.ts';

const MAX_SEED = 0xffffffffffffffff;

function folders(dirs: NodeEnv['dirs']): ModelFolders {
  return new ModelFolders(dirs.models, '');
}

function nodeError(message: string, pyType = 'RuntimeError'): Error {
  return Object.assign(new Error(message), { pyType });
}

async function openCheckpoint(dirs: NodeEnv['dirs'], name: unknown) {
  const file = typeof name === 'string' ? folders(dirs).fullPath('checkpoints', name) : undefined;
  if (!file) throw nodeError(`Model in folder 'checkpoints' with filename '${String(name)}' not found.`, 'FileNotFoundError');
  try {
    return await loadCheckpoint(file);
  } catch (err) {
    if (err instanceof ModelFileError) throw nodeError(`ERROR: could not load checkpoint ${name}: ${err.message}`);
    throw err;
  }
}

function asFloat(t: Tensor): FloatTensor {
  return { shape: [...t.shape], data: t.data };
}

function checkLatent(v: unknown): Latent {
  if (!isLatent(v)) throw nodeError('the samples input is not a LATENT');
  return v;
}

function checkModel<T>(v: unknown, cls: new (...a: any[]) => T, what: string): T {
  if (!(v instanceof cls)) throw nodeError(`ERROR: ${what} input is invalid: None\n\nIf the ${what} is from a checkpoint loader node your checkpoint does not contain a valid ${what} model.`);
  return v;
}

function checkConditioning(v: unknown, name: string): ConditioningEntry[] {
  if (!Array.isArray(v) || v.some((e) => !Array.isArray(e) || !e[0] || !(e[0].data instanceof Float32Array))) throw nodeError(`the ${name} input is not a CONDITIONING`);
  return v as ConditioningEntry[];
}

/** IMAGE from [B,H,W,3] floats in [0,1]: bytes as the reference's SaveImage makes them (255·v, truncated). */
function toImage(px: FloatTensor): ImageBatch {
  const [b, h, w] = px.shape as [number, number, number];
  const frames: Frame[] = [];
  for (let n = 0; n < b; n++) {
    const bytes = Buffer.alloc(h * w * 3);
    const off = n * h * w * 3;
    for (let i = 0; i < bytes.length; i++) bytes[i] = Math.fround(255 * px.data[off + i]!);
    frames.push(new Frame(w, h, 3, bytes));
  }
  return new ImageBatch(frames);
}

function fromImage(img: ImageBatch): FloatTensor {
  const { width: w, height: h } = img;
  const data = new Float32Array(img.frames.length * h * w * 3);
  img.frames.forEach((f, n) => {
    const src = f.data;
    for (let i = 0; i < h * w; i++) for (let c = 0; c < 3; c++) data[(n * h * w + i) * 3 + c] = src[i * f.channels + c]! / 255;
  });
  return { shape: [img.frames.length, h, w, 3], data };
}

interface KSamplerArgs {
  model: unknown;
  seed: number;
  steps: number;
  cfg: number;
  sampler_name: string;
  scheduler: string;
  positive: unknown;
  negative: unknown;
  latent_image: unknown;
  denoise?: number;
  disableNoise?: boolean;
  startStep?: number;
  lastStep?: number;
  forceFullDenoise?: boolean;
}

/** nodes.py common_ksampler. */
async function commonKSampler(a: KSamplerArgs, ctx: NodeContext): Promise<[Latent]> {
  const model = checkModel(a.model, UNetModel, 'model');
  const latent = checkLatent(a.latent_image);
  // outChannels: an inpainting UNet takes 9 channels but samples 4-channel latents (the other 5 are its mask and image).
  if (latent.samples.ndim !== 4 || latent.samples.shape[1] !== model.checkpoint.detected.unet.outChannels) {
    throw nodeError(`the latent has shape [${latent.samples.shape.join(', ')}]; this model samples [B, ${model.checkpoint.detected.unet.outChannels}, H, W] latents`);
  }
  // latent_preview.prepare_callback: the denoised latent of each step as a preview, when --preview-method asks.
  const preview = stepPreviewer(ctx, model.latentFormat.rgbFactors, model.latentFormat.rgbBias, model.latentFormat.name);
  const samples = await sample({
    model,
    positive: checkConditioning(a.positive, 'positive'),
    negative: checkConditioning(a.negative, 'negative'),
    cfg: a.cfg,
    samplerName: a.sampler_name,
    scheduler: a.scheduler,
    steps: a.steps,
    denoise: a.denoise,
    seed: a.seed,
    latent: asFloat(latent.samples),
    batchIndex: latent.batch_index,
    noiseMask: latent.noise_mask ? asFloat(latent.noise_mask) : undefined,
    disableNoise: a.disableNoise,
    startStep: a.startStep,
    lastStep: a.lastStep,
    forceFullDenoise: a.forceFullDenoise,
    onStep: (s) => {
      ctx.checkInterrupt();
      preview?.step(s.denoised, latent.samples.shape);
      // ProgressBar.update_absolute caps at the total: dpm_adaptive may take more steps than it announced.
      ctx.progress(Math.min(s.i + 1, s.total), s.total);
    },
  });
  // The last previews reach the client before the node's result, as the reference sends them with each step.
  await preview?.done();
  ctx.checkInterrupt();
  return [{ ...latent, samples: new Tensor(samples.shape, samples.data) }];
}

const samplerCombo = () => [...SUPPORTED_SAMPLERS];
const schedulerCombo = () => [...SUPPORTED_SCHEDULERS];

export function sdNodes(dirs: NodeEnv['dirs']): NodeDefinition[] {
  const checkpointInputs = (scope?: { dirs: NodeEnv['dirs'] }): NodeInputs => ({
    required: { ckpt_name: [folders((scope ?? { dirs }).dirs).filenames('checkpoints'), { tooltip: 'The name of the checkpoint (model) to load.' }] },
  });
  // The folder is read when a prompt is validated (the static list was read at start, before files came).
  const checkpointListed = {
    inputs: ['ckpt_name'],
    fn: ({ ckpt_name }: Record<string, any>, scope?: { dirs: NodeEnv['dirs'] }) => {
      const names = folders((scope ?? { dirs }).dirs).filenames('checkpoints');
      return names.includes(ckpt_name) ? true : `Value not in list: ckpt_name: '${String(ckpt_name)}' not in (list of length ${names.length})`;
    },
  };
  const loadOutputs = async (ckpt_name: string, ctx: NodeContext) => {
    const ck = await openCheckpoint(ctx.env.dirs, ckpt_name);
    const d = ck.detected;
    // SD2.x and SDXL: their own text encoders (OpenCLIP-H; CLIP-L + OpenCLIP-G; OpenCLIP-G).
    const clip = d.family === 'sd1' ? (d.clip ? new ClipModel(ck) : null) : d.textEncoders?.length ? new XLClipModel(ck) : null;
    return [new UNetModel(ck), clip, d.vae ? new VaeModel(ck) : null];
  };
  return [
    {
      name: 'CheckpointLoaderSimple',
      displayName: 'Load Checkpoint',
      description: 'Loads a diffusion model checkpoint, diffusion models are used to denoise latents.',
      category: 'loaders',
      inputs: checkpointInputs(),
      dynamicInputs: (scope) => checkpointInputs(scope),
      validateInputs: checkpointListed,
      outputs: ['MODEL', 'CLIP', 'VAE'],
      outputTooltips: [
        'The model used for denoising latents.',
        'The CLIP model used for encoding text prompts.',
        'The VAE model used for encoding and decoding images to and from latent space.',
      ],
      execute: async ({ ckpt_name }, ctx) => loadOutputs(ckpt_name, ctx),
    },
    {
      name: 'CheckpointLoader',
      displayName: 'Load Checkpoint With Config (DEPRECATED)',
      category: 'advanced/loaders',
      deprecated: true,
      inputs: { required: { config_name: [[]], ckpt_name: [[]] } },
      dynamicInputs: (scope) => {
        const f = folders((scope ?? { dirs }).dirs);
        return { required: { config_name: [f.filenames('configs')], ckpt_name: [f.filenames('checkpoints')] } };
      },
      validateInputs: {
        inputs: ['config_name', 'ckpt_name'],
        fn: (a, scope) => {
          const names = folders((scope ?? { dirs }).dirs).filenames('configs');
          if (!names.includes(a.config_name)) return `Value not in list: config_name: '${String(a.config_name)}' not in (list of length ${names.length})`;
          return checkpointListed.fn(a, scope);
        },
      },
      outputs: ['MODEL', 'CLIP', 'VAE'],
      // The architecture is read from the weights; the config file only has to exist, as a name in the list.
      execute: async ({ ckpt_name }, ctx) => loadOutputs(ckpt_name, ctx),
    },
    {
      name: 'CLIPSetLastLayer',
      displayName: 'CLIP Set Last Layer',
      category: 'conditioning',
      inputs: { required: { clip: ['CLIP'], stop_at_clip_layer: ['INT', { default: -1, min: -24, max: -1, step: 1 }] } },
      outputs: ['CLIP'],
      execute: ({ clip, stop_at_clip_layer }) => {
        const c = checkModel(clip, ClipModel, 'clip');
        const layers = c.checkpoint.detected.clip!.layers;
        if (-stop_at_clip_layer > layers) throw nodeError(`stop_at_clip_layer ${stop_at_clip_layer} is beyond this text encoder's ${layers} layers`);
        return [c.withLayer(stop_at_clip_layer)];
      },
    },
    {
      name: 'CLIPTextEncode',
      displayName: 'CLIP Text Encode (Prompt)',
      description: 'Encodes a text prompt using a CLIP model into an embedding that can be used to guide the diffusion model towards generating specific images.',
      category: 'conditioning',
      inputs: {
        required: {
          text: ['STRING', { multiline: true, dynamicPrompts: true, tooltip: 'The text to be encoded.' }],
          clip: ['CLIP', { tooltip: 'The CLIP model used for encoding the text.' }],
        },
      },
      outputs: ['CONDITIONING'],
      outputTooltips: ['A conditioning containing the embedded text used to guide the diffusion model.'],
      execute: async ({ text, clip }, ctx) => {
        if (!(clip instanceof ClipModel))
          throw nodeError('ERROR: clip input is invalid: None\n\nIf the clip is from a checkpoint loader node your checkpoint does not contain a valid clip or text encoder model.');
        return [await clip.encode(String(text), await embeddingOptions(ctx.env.dirs, [String(text)], clip))];
      },
    },
    {
      name: 'KSampler',
      displayName: 'KSampler',
      description: 'Uses the provided model, positive and negative conditioning to denoise the latent image.',
      category: 'sampling',
      inputs: {
        required: {
          model: ['MODEL', { tooltip: 'The model used for denoising the input latent.' }],
          seed: ['INT', { default: 0, min: 0, max: MAX_SEED, control_after_generate: true, tooltip: 'The random seed used for creating the noise.' }],
          steps: ['INT', { default: 20, min: 1, max: 10000, tooltip: 'The number of steps used in the denoising process.' }],
          cfg: [
            'FLOAT',
            {
              default: 8.0,
              min: 0.0,
              max: 100.0,
              step: 0.1,
              round: 0.01,
              tooltip:
                'The Classifier-Free Guidance scale balances creativity and adherence to the prompt. Higher values result in images more closely matching the prompt however too high values will negatively impact quality.',
            },
          ],
          sampler_name: [samplerCombo(), { tooltip: 'The algorithm used when sampling, this can affect the quality, speed, and style of the generated output.' }],
          scheduler: [schedulerCombo(), { tooltip: 'The scheduler controls how noise is gradually removed to form the image.' }],
          positive: ['CONDITIONING', { tooltip: 'The conditioning describing the attributes you want to include in the image.' }],
          negative: ['CONDITIONING', { tooltip: 'The conditioning describing the attributes you want to exclude from the image.' }],
          latent_image: ['LATENT', { tooltip: 'The latent image to denoise.' }],
          denoise: [
            'FLOAT',
            { default: 1.0, min: 0.0, max: 1.0, step: 0.01, tooltip: 'The amount of denoising applied, lower values will maintain the structure of the initial image allowing for image to image sampling.' },
          ],
        },
      },
      outputs: ['LATENT'],
      outputTooltips: ['The denoised latent.'],
      execute: (a, ctx) => commonKSampler(a as KSamplerArgs, ctx),
    },
    {
      name: 'KSamplerAdvanced',
      displayName: 'KSampler (Advanced)',
      category: 'sampling',
      inputs: {
        required: {
          model: ['MODEL'],
          add_noise: [['enable', 'disable']],
          noise_seed: ['INT', { default: 0, min: 0, max: MAX_SEED, control_after_generate: true }],
          steps: ['INT', { default: 20, min: 1, max: 10000 }],
          cfg: ['FLOAT', { default: 8.0, min: 0.0, max: 100.0, step: 0.1, round: 0.01 }],
          sampler_name: [samplerCombo()],
          scheduler: [schedulerCombo()],
          positive: ['CONDITIONING'],
          negative: ['CONDITIONING'],
          latent_image: ['LATENT'],
          start_at_step: ['INT', { default: 0, min: 0, max: 10000 }],
          end_at_step: ['INT', { default: 10000, min: 0, max: 10000 }],
          return_with_leftover_noise: [['disable', 'enable']],
        },
      },
      outputs: ['LATENT'],
      execute: (a, ctx) =>
        commonKSampler(
          {
            ...(a as KSamplerArgs),
            seed: a.noise_seed,
            disableNoise: a.add_noise === 'disable',
            startStep: a.start_at_step,
            lastStep: a.end_at_step,
            forceFullDenoise: a.return_with_leftover_noise !== 'enable',
          },
          ctx,
        ),
    },
    {
      name: 'VAEDecode',
      displayName: 'VAE Decode',
      description: 'Decodes latent images back into pixel space images.',
      category: 'latent',
      inputs: {
        required: {
          samples: ['LATENT', { tooltip: 'The latent to be decoded.' }],
          vae: ['VAE', { tooltip: 'The VAE model used for decoding the latent.' }],
        },
      },
      outputs: ['IMAGE'],
      outputTooltips: ['The decoded image.'],
      execute: async ({ samples, vae }, ctx) => {
        const v = checkModel(vae, VaeModel, 'vae');
        const latent = checkLatent(samples);
        if (latent.samples.ndim !== 4) throw nodeError(`VAEDecode needs a [B, C, H, W] latent, got [${latent.samples.shape.join(', ')}]`);
        const px = await v.decode(asFloat(latent.samples));
        ctx.checkInterrupt();
        return [toImage(px)];
      },
    },
    {
      name: 'VAEDecodeTiled',
      displayName: 'VAE Decode (Tiled)',
      category: '_for_testing',
      inputs: {
        required: {
          samples: ['LATENT'],
          vae: ['VAE'],
          tile_size: ['INT', { default: 512, min: 64, max: 4096, step: 32 }],
          overlap: ['INT', { default: 64, min: 0, max: 4096, step: 32 }],
          temporal_size: ['INT', { default: 64, min: 8, max: 4096, step: 4, tooltip: 'Only used for video VAEs: Amount of frames to decode at a time.' }],
          temporal_overlap: ['INT', { default: 8, min: 4, max: 4096, step: 4, tooltip: 'Only used for video VAEs: Amount of frames to overlap.' }],
        },
      },
      outputs: ['IMAGE'],
      execute: async ({ samples, vae, tile_size, overlap }, ctx) => {
        const v = checkModel(vae, VaeModel, 'vae');
        const latent = checkLatent(samples);
        if (latent.samples.ndim !== 4) throw nodeError(`VAEDecodeTiled needs a [B, C, H, W] latent, got [${latent.samples.shape.join(', ')}]`);
        // The reference: an overlap of more than a quarter tile is cut to a quarter; both go to latent cells.
        const ov = tile_size < overlap * 4 ? Math.floor(tile_size / 4) : overlap;
        const r = v.downscale;
        const px = await decodeTiled(v, asFloat(latent.samples), Math.floor(tile_size / r), Math.floor(ov / r), { step: (d, t) => ctx.progress(d, t), checkInterrupt: () => ctx.checkInterrupt() });
        ctx.checkInterrupt();
        return [toImage(px)];
      },
    },
    {
      name: 'VAEEncodeTiled',
      displayName: 'VAE Encode (Tiled)',
      category: '_for_testing',
      inputs: {
        required: {
          pixels: ['IMAGE'],
          vae: ['VAE'],
          tile_size: ['INT', { default: 512, min: 64, max: 4096, step: 64 }],
          overlap: ['INT', { default: 64, min: 0, max: 4096, step: 32 }],
          temporal_size: ['INT', { default: 64, min: 8, max: 4096, step: 4, tooltip: 'Only used for video VAEs: Amount of frames to encode at a time.' }],
          temporal_overlap: ['INT', { default: 8, min: 4, max: 4096, step: 4, tooltip: 'Only used for video VAEs: Amount of frames to overlap.' }],
        },
      },
      outputs: ['LATENT'],
      execute: async ({ pixels, vae, tile_size, overlap }, ctx) => {
        const v = checkModel(vae, VaeModel, 'vae');
        if (!(pixels instanceof ImageBatch)) throw nodeError('the pixels input is not an IMAGE');
        // Unlike the decoder, the reference does not cut the overlap here: a half tile that does not exceed it divides by zero there, a clear error here.
        if (Math.floor(tile_size / 2) <= overlap) throw nodeError(`VAEEncodeTiled: an overlap of ${overlap} needs tiles of more than ${overlap * 2} pixels (tile_size is ${tile_size})`, 'ValueError');
        const z = await encodeTiled(v, fromImage(pixels), tile_size, overlap, { step: (d, t) => ctx.progress(d, t), checkInterrupt: () => ctx.checkInterrupt() });
        ctx.checkInterrupt();
        return [{ samples: new Tensor(z.shape, z.data) } satisfies Latent];
      },
    },
    {
      name: 'VAEEncode',
      displayName: 'VAE Encode',
      category: 'latent',
      inputs: { required: { pixels: ['IMAGE'], vae: ['VAE'] } },
      outputs: ['LATENT'],
      execute: async ({ pixels, vae }, ctx) => {
        const v = checkModel(vae, VaeModel, 'vae');
        if (!(pixels instanceof ImageBatch)) throw nodeError('the pixels input is not an IMAGE');
        const z = await v.encode(fromImage(pixels));
        ctx.checkInterrupt();
        return [{ samples: new Tensor(z.shape, z.data) } satisfies Latent];
      },
    },
    ...conditioningNodes,
    ...loaderNodes(dirs),
    ...controlNodes(dirs),
    ...xlNodes(dirs),
    ...customSamplingNodes,
  ];
}
