/**
 * The reference's separate loaders and LoRA nodes (nodes.py): VAELoader,
 * CLIPLoader (stable_diffusion: CLIP-L, OpenCLIP-H as SD2.x's, OpenCLIP-G as the SDXL refiner's), UNETLoader, LoraLoader and
 * LoraLoaderModelOnly. File names go through the model-folder table, so a
 * name cannot leave its folder; a bad file is a node error naming it.
 */
import { ModelFolders } from '../../domain/models.ts';
import { LoadedLora, loraKeyMap, WeightPatches, type AppliedLora } from '../../models/lora.ts';
import type { ModelPart } from '../../models/parts.ts';
import { ModelFileError } from '../../models/safetensors.ts';
import { TAESD_SCALE, TaesdVae } from '../../models/taesd.ts';
import { ClipModel, loadCheckpoint, UNetModel, VaeModel, type Checkpoint } from '../../models/sd1.ts';
import { loadSingleClip } from '../../models/sdxl.ts';
import type { NodeDefinition, NodeEnv, NodeInputs } from '../api.ts';

function nodeError(message: string, pyType = 'RuntimeError'): Error {
  return Object.assign(new Error(message), { pyType });
}

function folders(dirs: NodeEnv['dirs']): ModelFolders {
  return new ModelFolders(dirs.models, '');
}

async function openPart(dirs: NodeEnv['dirs'], folder: string, name: unknown, part: ModelPart): Promise<Checkpoint> {
  const file = typeof name === 'string' ? folders(dirs).fullPath(folder, name) : undefined;
  if (!file) throw nodeError(`Model in folder '${folder}' with filename '${String(name)}' not found.`, 'FileNotFoundError');
  try {
    return await loadCheckpoint(file, part);
  } catch (err) {
    if (err instanceof ModelFileError) throw nodeError(`ERROR: could not load ${part === 'unet' ? 'diffusion model' : part === 'clip' ? 'text encoder' : part === 'taesd' ? 'TAESD' : 'VAE'} ${String(name)}: ${err.message}`);
    throw err;
  }
}

/** A combo of a folder's files, read again when the prompt is validated (files may come after start). */
function listed(dirs: NodeEnv['dirs'], input: string, folder: string, extra: (dirs: NodeEnv['dirs']) => string[] = () => []) {
  const names = (scope?: { dirs: NodeEnv['dirs'] }) => {
    const d = (scope ?? { dirs }).dirs;
    return [...folders(d).filenames(folder), ...extra(d)];
  };
  return {
    names,
    validate: {
      inputs: [input],
      fn: (a: Record<string, any>, scope?: { dirs: NodeEnv['dirs'] }) => {
        const n = names(scope);
        return n.includes(a[input]) ? true : `Value not in list: ${input}: '${String(a[input])}' not in (list of length ${n.length})`;
      },
    },
  };
}

/** VAELoader.vae_list's TAESD entries: a name is listed when models/vae_approx holds both its encoder and its decoder. */
function taesdNames(dirs: NodeEnv['dirs']): string[] {
  const files = folders(dirs).filenames('vae_approx');
  return Object.keys(TAESD_SCALE).filter((n) => files.some((f) => f.startsWith(`${n}_encoder.`)) && files.some((f) => f.startsWith(`${n}_decoder.`)));
}

/** VAELoader.load_taesd: the encoder and decoder files, with the name's scale and shift. */
async function loadTaesd(dirs: NodeEnv['dirs'], name: string): Promise<TaesdVae> {
  const files = folders(dirs).filenames('vae_approx');
  const [enc, dec] = ['encoder', 'decoder'].map((k) => files.find((f) => f.startsWith(`${name}_${k}.`)));
  if (!enc || !dec) throw nodeError(`Model in folder 'vae_approx' with filename '${name}_${enc ? 'decoder' : 'encoder'}' not found.`, 'FileNotFoundError');
  const [scale, shift] = TAESD_SCALE[name]!;
  try {
    return new TaesdVae(await openPart(dirs, 'vae_approx', dec, 'taesd'), await openPart(dirs, 'vae_approx', enc, 'taesd'), scale, shift);
  } catch (err) {
    if (err instanceof ModelFileError) throw nodeError(`ERROR: could not load VAE ${name}: ${err.message}`);
    throw err;
  }
}

/** The patches a model part carries, plus one more LoRA. */
function patchesWith(ck: Checkpoint, prefix: string, lora: LoadedLora, strength: number): WeightPatches {
  const before = ck.patches?.prefix === prefix ? ck.patches.applied : [];
  const applied: AppliedLora[] = [...before, { lora, strength }];
  return new WeightPatches(ck.file, prefix, applied);
}

/** model.clone() / clip.clone() with the LoRA added (load_lora_for_models). */
async function applyLora(dirs: NodeEnv['dirs'], model: unknown, clip: unknown, loraName: unknown, strengthModel: number, strengthClip: number): Promise<[unknown, unknown]> {
  if (strengthModel === 0 && strengthClip === 0) return [model, clip];
  const m = model instanceof UNetModel ? model : undefined;
  if (!m) throw nodeError('ERROR: model input is invalid: None\n\nIf the model is from a checkpoint loader node your checkpoint does not contain a valid model.');
  const c = clip === undefined ? undefined : clip instanceof ClipModel ? clip : undefined;
  if (clip !== undefined && !c) throw nodeError('ERROR: clip input is invalid: None\n\nIf the clip is from a checkpoint loader node your checkpoint does not contain a valid clip or text encoder model.');
  const file = typeof loraName === 'string' ? folders(dirs).fullPath('loras', loraName) : undefined;
  if (!file) throw nodeError(`Model in folder 'loras' with filename '${String(loraName)}' not found.`, 'FileNotFoundError');
  const unetPrefix = 'model.diffusion_model.';
  const clipPrefix = 'cond_stage_model.transformer.text_model.';
  const keyMap = new Map([
    ...loraKeyMap({ file: m.checkpoint.file, unet: { prefix: unetPrefix, config: m.checkpoint.detected.unet } }),
    ...(c ? loraKeyMap({ file: c.checkpoint.file, clip: { prefix: clipPrefix } }) : []),
  ]);
  let lora: LoadedLora;
  try {
    lora = await LoadedLora.load(file, keyMap);
  } catch (err) {
    if (err instanceof ModelFileError) throw nodeError(`ERROR: could not load LoRA ${String(loraName)}: ${err.message}`);
    throw err;
  }
  const mp = patchesWith(m.checkpoint, unetPrefix, lora, strengthModel);
  const newModel = m.clone({ checkpoint: m.checkpoint.withPatches(mp) } as never);
  if (!c) return [newModel, clip];
  const cp = patchesWith(c.checkpoint, clipPrefix, lora, strengthClip);
  const newClip = Object.assign(Object.create(Object.getPrototypeOf(c)) as ClipModel, c, { checkpoint: c.checkpoint.withPatches(cp) });
  return [newModel, newClip];
}

export function loaderNodes(dirs: NodeEnv['dirs']): NodeDefinition[] {
  const vaes = listed(dirs, 'vae_name', 'vae', taesdNames);
  const clips = listed(dirs, 'clip_name', 'text_encoders');
  const unets = listed(dirs, 'unet_name', 'diffusion_models');
  const loras = listed(dirs, 'lora_name', 'loras');
  const loraInputs = (scope?: { dirs: NodeEnv['dirs'] }): NodeInputs => ({
    required: {
      model: ['MODEL', { tooltip: 'The diffusion model the LoRA will be applied to.' }],
      clip: ['CLIP', { tooltip: 'The CLIP model the LoRA will be applied to.' }],
      lora_name: [loras.names(scope), { tooltip: 'The name of the LoRA.' }],
      strength_model: ['FLOAT', { default: 1.0, min: -100.0, max: 100.0, step: 0.01, tooltip: 'How strongly to modify the diffusion model. This value can be negative.' }],
      strength_clip: ['FLOAT', { default: 1.0, min: -100.0, max: 100.0, step: 0.01, tooltip: 'How strongly to modify the CLIP model. This value can be negative.' }],
    },
  });
  const modelOnlyInputs = (scope?: { dirs: NodeEnv['dirs'] }): NodeInputs => ({
    required: { model: ['MODEL'], lora_name: [loras.names(scope)], strength_model: ['FLOAT', { default: 1.0, min: -100.0, max: 100.0, step: 0.01 }] },
  });
  const clipInputs = (scope?: { dirs: NodeEnv['dirs'] }): NodeInputs => ({
    required: { clip_name: [clips.names(scope)], type: [['stable_diffusion']] },
    optional: { device: [['default', 'cpu'], { advanced: true }] },
  });
  return [
    {
      name: 'VAELoader',
      displayName: 'Load VAE',
      category: 'loaders',
      inputs: { required: { vae_name: [vaes.names()] } },
      dynamicInputs: (scope) => ({ required: { vae_name: [vaes.names(scope)] } }),
      validateInputs: vaes.validate,
      outputs: ['VAE'],
      execute: async ({ vae_name }, ctx) => [vae_name in TAESD_SCALE ? await loadTaesd(ctx.env.dirs, vae_name) : new VaeModel(await openPart(ctx.env.dirs, 'vae', vae_name, 'vae'))],
    },
    {
      name: 'CLIPLoader',
      displayName: 'Load CLIP',
      description:
        '[Recipes]\n\nstable_diffusion: clip-l\nstable_cascade: clip-g\nsd3: t5 xxl/ clip-g / clip-l\nstable_audio: t5 base\nmochi: t5 xxl\ncosmos: old t5 xxl\nlumina2: gemma 2 2B\nwan: umt5 xxl\n hidream: llama-3.1 (Recommend) or t5\nomnigen2: qwen vl 2.5 3B',
      category: 'advanced/loaders',
      inputs: clipInputs(),
      dynamicInputs: (scope) => clipInputs(scope),
      validateInputs: clips.validate,
      outputs: ['CLIP'],
      execute: async ({ clip_name }, ctx) => {
        // OpenCLIP-H (SD2.x) and OpenCLIP-G (the SDXL refiner) files are told apart by their layer count, as the reference does.
        const file = typeof clip_name === 'string' ? folders(ctx.env.dirs).fullPath('text_encoders', clip_name) : undefined;
        if (file) {
          try {
            const open = await loadSingleClip(file);
            if (open) return [open];
          } catch (err) {
            if (err instanceof ModelFileError) throw nodeError(`ERROR: could not load text encoder ${String(clip_name)}: ${err.message}`);
            throw err;
          }
        }
        return [new ClipModel(await openPart(ctx.env.dirs, 'text_encoders', clip_name, 'clip'))];
      },
    },
    {
      name: 'UNETLoader',
      displayName: 'Load Diffusion Model',
      category: 'advanced/loaders',
      inputs: { required: { unet_name: [unets.names()], weight_dtype: [['default']] } },
      dynamicInputs: (scope) => ({ required: { unet_name: [unets.names(scope)], weight_dtype: [['default']] } }),
      validateInputs: unets.validate,
      outputs: ['MODEL'],
      execute: async ({ unet_name }, ctx) => [new UNetModel(await openPart(ctx.env.dirs, 'diffusion_models', unet_name, 'unet'))],
    },
    {
      name: 'LoraLoader',
      displayName: 'Load LoRA',
      description:
        'LoRAs are used to modify diffusion and CLIP models, altering the way in which latents are denoised such as applying styles. Multiple LoRA nodes can be linked together.',
      category: 'loaders',
      inputs: loraInputs(),
      dynamicInputs: (scope) => loraInputs(scope),
      validateInputs: loras.validate,
      outputs: ['MODEL', 'CLIP'],
      outputTooltips: ['The modified diffusion model.', 'The modified CLIP model.'],
      execute: async ({ model, clip, lora_name, strength_model, strength_clip }, ctx) => applyLora(ctx.env.dirs, model, clip, lora_name, strength_model, strength_clip),
    },
    {
      name: 'LoraLoaderModelOnly',
      displayName: 'LoraLoaderModelOnly',
      // A subclass of LoraLoader in the reference: its description and output tooltips are inherited.
      description:
        'LoRAs are used to modify diffusion and CLIP models, altering the way in which latents are denoised such as applying styles. Multiple LoRA nodes can be linked together.',
      outputTooltips: ['The modified diffusion model.', 'The modified CLIP model.'],
      category: 'loaders',
      inputs: modelOnlyInputs(),
      dynamicInputs: (scope) => modelOnlyInputs(scope),
      validateInputs: loras.validate,
      outputs: ['MODEL'],
      execute: async ({ model, lora_name, strength_model }, ctx) => [(await applyLora(ctx.env.dirs, model, undefined, lora_name, strength_model, 0))[0]],
    },
  ];
}
