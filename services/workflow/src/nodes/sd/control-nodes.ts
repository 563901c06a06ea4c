/**
 * The reference's ControlNet nodes (nodes.py): ControlNetLoader and
 * DiffControlNetLoader read models/controlnet (ControlNets and T2I adapters),
 * ControlNetApply (deprecated: the positive only, and the negative follows)
 * and ControlNetApplyAdvanced (both, with a start and end percent) put an
 * application of it on every conditioning entry, over the one it had.
 */
import { ModelFolders } from '../../domain/models.ts';
import { AppliedControl, ControlLoraModel, ControlNetModel, differenceControlNet, loadControl, T2IAdapterModel, UNION_CONTROLNET_TYPES, type ControlModel, type Planar } from '../../models/controlnet.ts';
import { ModelFileError } from '../../models/safetensors.ts';
import { UNetModel, VaeModel, type ConditioningEntry } from '../../models/sd1.ts';
import type { NodeDefinition, NodeEnv, NodeInputs } from '../api.ts';
import { ImageBatch } from '../image-types.ts';
import { Tensor, upscaleTensor } from '../latent.ts';

function nodeError(message: string, pyType = 'RuntimeError'): Error {
  return Object.assign(new Error(message), { pyType });
}

function folders(dirs: NodeEnv['dirs']): ModelFolders {
  return new ModelFolders(dirs.models, '');
}

async function openControl(dirs: NodeEnv['dirs'], name: unknown): Promise<ControlModel> {
  const file = typeof name === 'string' ? folders(dirs).fullPath('controlnet', name) : undefined;
  if (!file) throw nodeError(`Model in folder 'controlnet' with filename '${String(name)}' not found.`, 'FileNotFoundError');
  try {
    return await loadControl(file);
  } catch (err) {
    if (err instanceof ModelFileError) throw nodeError(`ERROR: controlnet file is invalid and does not contain a valid controlnet model. (${err.message})`);
    throw err;
  }
}

function checkControl(v: unknown): ControlModel {
  if (!(v instanceof ControlNetModel) && !(v instanceof T2IAdapterModel) && !(v instanceof ControlLoraModel)) throw nodeError('the control_net input is not a CONTROL_NET');
  return v;
}

function checkConditioning(v: unknown, name: string): ConditioningEntry[] {
  if (!Array.isArray(v) || v.some((e) => !Array.isArray(e) || !e[0] || !(e[0].data instanceof Float32Array))) throw nodeError(`the ${name} input is not a CONDITIONING`);
  return v as ConditioningEntry[];
}

/** image.movedim(-1, 1): IMAGE bytes as planar floats [B, C, H, W] in [0, 1]. */
function planarImage(v: unknown): Planar {
  if (!(v instanceof ImageBatch)) throw nodeError('the image input is not an IMAGE');
  const { width: w, height: h } = v;
  const c = v.frames[0]!.channels;
  const data = new Float32Array(v.frames.length * c * h * w);
  v.frames.forEach((f, n) => {
    if (f.channels !== c) throw nodeError('the images of the batch have different channel counts');
    const src = f.data;
    for (let ch = 0; ch < c; ch++) {
      const base = (n * c + ch) * h * w;
      for (let i = 0; i < h * w; i++) data[base + i] = src[i * c + ch]! / 255;
    }
  });
  return { shape: [v.frames.length, c, h, w], data };
}

/** comfy.utils.common_upscale(hint, width, height, 'nearest-exact', 'center'). */
export const resizeHint = (hint: Planar, width: number, height: number): Planar => {
  const t = upscaleTensor(new Tensor(hint.shape, hint.data), width, height, 'nearest-exact', 'center');
  return { shape: [...t.shape], data: t.data };
};

function listed(dirs: NodeEnv['dirs']) {
  const names = (scope?: { dirs: NodeEnv['dirs'] }) => folders((scope ?? { dirs }).dirs).filenames('controlnet');
  return {
    names,
    validate: {
      inputs: ['control_net_name'],
      fn: (a: Record<string, any>, scope?: { dirs: NodeEnv['dirs'] }) => {
        const n = names(scope);
        return n.includes(a.control_net_name) ? true : `Value not in list: control_net_name: '${String(a.control_net_name)}' not in (list of length ${n.length})`;
      },
    },
  };
}

const STRENGTH = ['FLOAT', { default: 1.0, min: 0.0, max: 10.0, step: 0.01 }] as const;

export function controlNodes(dirs: NodeEnv['dirs']): NodeDefinition[] {
  const nets = listed(dirs);
  const loaderInputs = (scope?: { dirs: NodeEnv['dirs'] }): NodeInputs => ({ required: { control_net_name: [nets.names(scope)] } });
  const diffInputs = (scope?: { dirs: NodeEnv['dirs'] }): NodeInputs => ({ required: { model: ['MODEL'], control_net_name: [nets.names(scope)] } });
  return [
    {
      name: 'ControlNetLoader',
      displayName: 'Load ControlNet Model',
      category: 'loaders',
      inputs: loaderInputs(),
      dynamicInputs: (scope) => loaderInputs(scope),
      validateInputs: nets.validate,
      outputs: ['CONTROL_NET'],
      execute: async ({ control_net_name }, ctx) => [await openControl(ctx.env.dirs, control_net_name)],
    },
    {
      name: 'DiffControlNetLoader',
      displayName: 'Load ControlNet Model (diff)',
      category: 'loaders',
      inputs: diffInputs(),
      dynamicInputs: (scope) => diffInputs(scope),
      validateInputs: nets.validate,
      outputs: ['CONTROL_NET'],
      execute: async ({ model, control_net_name }, ctx) => {
        if (!(model instanceof UNetModel)) throw nodeError('the model input is not a MODEL');
        const net = await openControl(ctx.env.dirs, control_net_name);
        return [net instanceof ControlNetModel ? differenceControlNet(net, model) : net];
      },
    },
    {
      name: 'ControlNetApply',
      displayName: 'Apply ControlNet (OLD)',
      category: 'conditioning/controlnet',
      deprecated: true,
      inputs: { required: { conditioning: ['CONDITIONING'], control_net: ['CONTROL_NET'], image: ['IMAGE'], strength: [...STRENGTH] } },
      outputs: ['CONDITIONING'],
      execute: ({ conditioning, control_net, image, strength }) => {
        const cond = checkConditioning(conditioning, 'conditioning');
        if (strength === 0) return [cond];
        const net = checkControl(control_net);
        const hint = planarImage(image);
        // A control per entry, each over the entry's own (set_previous_controlnet), applied to the negative too.
        return [
          cond.map(([t, o]): ConditioningEntry => {
            const prev = (o ?? {}).control as AppliedControl | undefined;
            return [t, { ...o, control: new AppliedControl(net, hint, strength, [0, 1], resizeHint, prev), control_apply_to_uncond: true }];
          }),
        ];
      },
    },
    {
      name: 'ControlNetApplyAdvanced',
      displayName: 'Apply ControlNet',
      category: 'conditioning/controlnet',
      inputs: {
        required: {
          positive: ['CONDITIONING'],
          negative: ['CONDITIONING'],
          control_net: ['CONTROL_NET'],
          image: ['IMAGE'],
          strength: [...STRENGTH],
          start_percent: ['FLOAT', { default: 0.0, min: 0.0, max: 1.0, step: 0.001 }],
          end_percent: ['FLOAT', { default: 1.0, min: 0.0, max: 1.0, step: 0.001 }],
        },
        optional: { vae: ['VAE'] },
      },
      outputs: ['CONDITIONING', 'CONDITIONING'],
      outputNames: ['positive', 'negative'],
      execute: ({ positive, negative, control_net, image, strength, start_percent, end_percent, vae }) => {
        const pos = checkConditioning(positive, 'positive');
        const neg = checkConditioning(negative, 'negative');
        if (strength === 0) return [pos, neg];
        const net = checkControl(control_net);
        if (vae !== undefined && vae !== null && !(vae instanceof VaeModel)) throw nodeError('the vae input is not a VAE');
        // SD1.x, SD2.x and SDXL ControlNets read the hint as pixels: the VAE is for other families' ControlNets and is not used.
        const hint = planarImage(image);
        // One application per control the entries had before, shared by the positive and the negative (so they batch together).
        const made = new Map<unknown, AppliedControl>();
        const apply = (list: ConditioningEntry[]) =>
          list.map(([t, o]): ConditioningEntry => {
            const prev = (o ?? {}).control as AppliedControl | undefined;
            let c = made.get(prev);
            if (!c) {
              c = new AppliedControl(net, hint, strength, [start_percent, end_percent], resizeHint, prev);
              made.set(prev, c);
            }
            return [t, { ...o, control: c, control_apply_to_uncond: false }];
          });
        return [apply(pos), apply(neg)];
      },
    },
    {
      name: 'SetUnionControlNetType',
      displayName: 'SetUnionControlNetType',
      category: 'conditioning/controlnet',
      pythonModule: 'comfy_extras.nodes_controlnet',
      inputs: { required: { control_net: ['CONTROL_NET'], type: [['auto', ...Object.keys(UNION_CONTROLNET_TYPES)]] } },
      outputs: ['CONTROL_NET'],
      execute: ({ control_net, type }) => {
        const net = checkControl(control_net);
        const n = UNION_CONTROLNET_TYPES[String(type)] ?? -1;
        // A copy with the control_type extra argument; a ControlNet that is not a union one (or an adapter) ignores it.
        return [net instanceof ControlNetModel ? net.withControlType(n >= 0 ? [n] : []) : net];
      },
    },
  ];
}
