/**
 * The reference's nodes for SD2.x and SDXL beyond the loaders:
 * CLIPTextEncodeSDXL and CLIPTextEncodeSDXLRefiner (comfy_extras.nodes_clip_sdxl),
 * ModelSamplingDiscrete and RescaleCFG (comfy_extras.nodes_model_advanced),
 * DualCLIPLoader (nodes.py; type sdxl).
 * MODEL and CLIP are the model layer's objects (src/models/sd1.ts, sdxl.ts).
 */
import { ModelSampling, rescaleCfg, type SamplingKind } from '../../models/model-sampling.ts';
import { ClipModel, UNetModel } from '../../models/sd1.ts';
import { ModelFileError } from '../../models/safetensors.ts';
import { loadDualClip, XLClipModel } from '../../models/sdxl.ts';
import { ModelFolders } from '../../domain/models.ts';
import { embeddingOptions } from './embeddings.ts';
import type { NodeDefinition, NodeEnv, NodeInputs } from '../api.ts';
import { MAX_RESOLUTION } from '../image-types.ts';
import { inpaintNodes } from './inpaint-nodes.ts';

function nodeError(message: string, pyType = 'RuntimeError'): Error {
  return Object.assign(new Error(message), { pyType });
}

function model(v: unknown): UNetModel {
  if (!(v instanceof UNetModel)) throw nodeError('ERROR: model input is invalid: None\n\nIf the model is from a checkpoint loader node your checkpoint does not contain a valid model.');
  return v;
}

function xlClip(v: unknown, node: string): XLClipModel {
  if (v instanceof XLClipModel) return v;
  if (v instanceof ClipModel) throw nodeError(`${node} needs an SDXL text encoder (CLIP-L and OpenCLIP-G, or OpenCLIP-G for the refiner); this CLIP is SD1.x's CLIP-L`);
  throw nodeError('ERROR: clip input is invalid: None\n\nIf the clip is from a checkpoint loader node your checkpoint does not contain a valid clip or text encoder model.');
}


const SAMPLING_KINDS: SamplingKind[] = ['eps', 'v_prediction', 'lcm', 'x0', 'img_to_img'];

const size = (d: number) => ['INT', { default: d, min: 0, max: MAX_RESOLUTION }] as const;
const text = ['STRING', { multiline: true, dynamicPrompts: true }] as const;

type Dirs = NodeEnv['dirs'];

export function xlNodes(dirs: Dirs): NodeDefinition[] {
  const names = (scope?: { dirs: Dirs }) => new ModelFolders((scope ?? { dirs }).dirs.models, '').filenames('text_encoders');
  const dualInputs = (scope?: { dirs: Dirs }): NodeInputs => ({
    required: { clip_name1: [names(scope)], clip_name2: [names(scope)], type: [['sdxl']] },
    optional: { device: [['default', 'cpu'], { advanced: true }] },
  });
  return [dualClipLoader(dualInputs, names), ...XL_NODES, ...inpaintNodes];
}

function dualClipLoader(dualInputs: (scope?: { dirs: Dirs }) => NodeInputs, names: (scope?: { dirs: Dirs }) => string[]): NodeDefinition {
  return {
    name: 'DualCLIPLoader',
    displayName: 'DualCLIPLoader',
    description:
      '[Recipes]\n\nsdxl: clip-l, clip-g\nsd3: clip-l, clip-g / clip-l, t5 / clip-g, t5\nflux: clip-l, t5\nhidream: at least one of t5 or llama, recommended t5 and llama\nhunyuan_image: qwen2.5vl 7b and byt5 small',
    category: 'advanced/loaders',
    inputs: dualInputs(),
    dynamicInputs: (scope) => dualInputs(scope),
    // The folder is read when a prompt is validated (files come while the server runs).
    validateInputs: {
      inputs: ['clip_name1', 'clip_name2'],
      fn: (a, scope) => {
        const n = names(scope);
        for (const k of ['clip_name1', 'clip_name2']) if (!n.includes(a[k])) return `Value not in list: ${k}: '${String(a[k])}' not in (list of length ${n.length})`;
        return true;
      },
    },
    outputs: ['CLIP'],
    execute: async ({ clip_name1, clip_name2, type }, ctx) => {
      if (type !== 'sdxl') throw nodeError(`DualCLIPLoader type ${String(type)} is not supported here: only sdxl (CLIP-L + OpenCLIP-G)`, 'ValueError');
      const f = new ModelFolders(ctx.env.dirs.models, '');
      const [p1, p2] = [f.fullPath('text_encoders', clip_name1), f.fullPath('text_encoders', clip_name2)];
      if (!p1 || !p2) throw nodeError(`Model in folder 'text_encoders' with filename '${!p1 ? clip_name1 : clip_name2}' not found.`, 'FileNotFoundError');
      try {
        return [await loadDualClip(p1, p2)];
      } catch (err) {
        if (err instanceof ModelFileError) throw nodeError(`ERROR: could not load text encoders ${clip_name1}, ${clip_name2}: ${err.message}`);
        throw err;
      }
    },
  };
}

const XL_NODES: NodeDefinition[] = [
  {
    name: 'CLIPTextEncodeSDXL',
    displayName: 'CLIPTextEncodeSDXL',
    category: 'advanced/conditioning',
    pythonModule: 'comfy_extras.nodes_clip_sdxl',
    inputs: {
      required: {
        clip: ['CLIP'],
        width: [...size(1024)],
        height: [...size(1024)],
        crop_w: [...size(0)],
        crop_h: [...size(0)],
        target_width: [...size(1024)],
        target_height: [...size(1024)],
        text_g: [...text],
        text_l: [...text],
      },
    },
    outputs: ['CONDITIONING'],
    execute: async (a, ctx) => {
      const c = xlClip(a.clip, 'CLIPTextEncodeSDXL');
      const extra = { width: a.width, height: a.height, crop_w: a.crop_w, crop_h: a.crop_h, target_width: a.target_width, target_height: a.target_height };
      return [await c.encodeSDXL(String(a.text_g), String(a.text_l), extra, await embeddingOptions(ctx.env.dirs, [String(a.text_g), String(a.text_l)], c))];
    },
  },
  {
    name: 'CLIPTextEncodeSDXLRefiner',
    displayName: 'CLIPTextEncodeSDXLRefiner',
    category: 'advanced/conditioning',
    pythonModule: 'comfy_extras.nodes_clip_sdxl',
    inputs: {
      required: {
        ascore: ['FLOAT', { default: 6.0, min: 0.0, max: 1000.0, step: 0.01 }],
        width: [...size(1024)],
        height: [...size(1024)],
        text: [...text],
        clip: ['CLIP'],
      },
    },
    outputs: ['CONDITIONING'],
    execute: async (a, ctx) => {
      const c = xlClip(a.clip, 'CLIPTextEncodeSDXLRefiner');
      return [await c.encodeTokensXL(c.tokenize(String(a.text), await embeddingOptions(ctx.env.dirs, [String(a.text)], c)), { aesthetic_score: a.ascore, width: a.width, height: a.height })];
    },
  },
  {
    name: 'ModelSamplingDiscrete',
    displayName: 'ModelSamplingDiscrete',
    category: 'advanced/model',
    pythonModule: 'comfy_extras.nodes_model_advanced',
    inputs: { required: { model: ['MODEL'], sampling: [[...SAMPLING_KINDS]], zsnr: ['BOOLEAN', { default: false }] } },
    outputs: ['MODEL'],
    execute: ({ model: m, sampling, zsnr }) => {
      if (!SAMPLING_KINDS.includes(sampling)) throw nodeError(`sampling must be one of ${SAMPLING_KINDS.join(', ')}`, 'ValueError');
      return [model(m).clone({ sampling: ModelSampling.discrete(sampling, zsnr === true) })];
    },
  },
  {
    name: 'RescaleCFG',
    displayName: 'RescaleCFG',
    category: 'advanced/model',
    pythonModule: 'comfy_extras.nodes_model_advanced',
    inputs: { required: { model: ['MODEL'], multiplier: ['FLOAT', { default: 0.7, min: 0.0, max: 1.0, step: 0.01 }] } },
    outputs: ['MODEL'],
    execute: ({ model: m, multiplier }) => {
      const mult = Number(multiplier);
      return [model(m).clone({ cfgFunction: (cond, uncond, x, sigma, cfg, batch) => rescaleCfg(mult, cond, uncond, x, sigma, cfg, batch) })];
    },
  },
];
