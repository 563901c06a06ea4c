/**
 * What a file in models/controlnet holds, told from its keys as the
 * reference's load_controlnet_state_dict and load_t2i_adapter tell it: a
 * ControlNet in the single-file layout (with or without `control_model.`, a
 * `difference` key for the ones made as differences from a model), or a T2I
 * adapter (the full one, `conv_in.` … `body.N.`, or the diffusers layout of
 * it). Others are a clear error naming what was found.
 */
import { detectUNet, type UNetConfig } from './detect.ts';
import { ModelFileError, type SafetensorsFile } from './safetensors.ts';

export const CONTROL_PREFIX = 'control_model.';

export interface ControlNetSpec {
  kind: 'controlnet';
  /** The encoder copy's widths and blocks (no output blocks). */
  unet: UNetConfig;
  hintChannels: number;
  /** Weights stored as differences from a model's (DiffControlNetLoader adds the model's). */
  difference: boolean;
  /** A union ControlNet (ControlNet++, diffusers layout): how many control types its task_embedding holds. */
  union?: { types: number };
}

/**
 * A Control-LoRA (the reference's ControlLora): a ControlNet built when it is
 * sampled from the sampled model's own UNet encoder, its linear and conv
 * weights plus the file's up·down, the file's full tensors (hint block, zero
 * convs, norms, biases) in place of the model's.
 */
export interface ControlLoraSpec {
  kind: 'control_lora';
  hintChannels: number;
  /** Module names (no suffix) the file gives an up·down for. */
  lowRank: string[];
}

export interface T2IAdapterSpec {
  kind: 't2i';
  /** conv_in's input channels: the hint's channels × unshuffle². */
  cin: number;
  /** Width of each of the four levels. */
  channels: number[];
  /** Res blocks per level. */
  blocksPerLevel: number;
  ksize: number;
  /** The down blocks downsample with a strided conv (else average pooling). */
  useConv: boolean;
  /** SDXL's adapter (16× unshuffle, a different level layout). */
  xl: boolean;
  unshuffle: number;
  /** Hint channels it takes (cin / unshuffle²): 1 means the hint is averaged to grey. */
  inputChannels: number;
  /** The "light" adapter (Adapter_light: per level in_conv, four res blocks, out_conv; widths fixed by the reference). */
  light?: boolean;
}

export type ControlSpec = ControlNetSpec | T2IAdapterSpec | ControlLoraSpec;

/** The parts a union ControlNet adds to the diffusers layout (cldm.ControlNet's union_controlnet_num_control_type). */
export const UNION_PREFIXES = ['task_embedding', 'control_add_embedding.', 'transformer_layes.', 'spatial_ch_projs.'];

export function isUnionKey(k: string): boolean {
  return UNION_PREFIXES.some((p) => k.startsWith(p));
}

/** Widths the reference's Adapter_light is built with (its state dict must fit them). */
export const LIGHT_CHANNELS = [320, 640, 1280, 1280];
export const LIGHT_BLOCKS = 4;

/** The module prefixes a Control-LoRA's tensors may name (cldm.ControlNet's own modules). */
const CONTROL_LORA_MODULES = ['time_embed.', 'label_emb.', 'input_blocks.', 'middle_block.', 'input_hint_block.', 'zero_convs.', 'middle_block_out.'];

/** Renames a diffusers-layout adapter's keys to the single-file ones (adapter.body.i.resnets.j. → body.(2i+j).). */
export function t2iKeyName(k: string): string | undefined {
  if (!k.startsWith('adapter.')) return k;
  const m = /^adapter\.body\.(\d+)\.resnets\.(\d+)\.(.*)$/.exec(k);
  if (m) return `body.${Number(m[1]) * 2 + Number(m[2])}.${m[3]}`;
  const d = /^adapter\.body\.(\d+)\.(.*)$/.exec(k);
  if (d) return `body.${Number(d[1]) * 2}.${d[2]}`;
  return k.slice('adapter.'.length);
}

const RESNET_NAMES: Record<string, string> = {
  norm1: 'in_layers.0',
  conv1: 'in_layers.2',
  time_emb_proj: 'emb_layers.1',
  norm2: 'out_layers.0',
  conv2: 'out_layers.3',
  conv_shortcut: 'skip_connection',
};

/**
 * A diffusers-layout ControlNet's key → its single-file name under
 * control_model. (the reference's unet_to_diffusers map, read backwards, plus
 * the ControlNet's own parts); undefined for keys the single-file layout has
 * no place for. Input block numbers count each level's res blocks and its
 * downsample, from the file's own keys.
 */
export function diffusersControlNetNames(names: Iterable<string>): (k: string) => string | undefined {
  const keys = [...names];
  const resnets = new Map<number, number>();
  const downs = new Set<number>();
  for (const k of keys) {
    const r = /^down_blocks\.(\d+)\.resnets\.(\d+)\./.exec(k);
    if (r) resnets.set(Number(r[1]), Math.max(resnets.get(Number(r[1])) ?? 0, Number(r[2]) + 1));
    const d = /^down_blocks\.(\d+)\.downsamplers\.0\./.exec(k);
    if (d) downs.add(Number(d[1]));
  }
  // The first input block of each level (input_blocks.0 is conv_in).
  const first: number[] = [];
  let n = 1;
  for (let level = 0; resnets.has(level); level++) {
    first[level] = n;
    n += resnets.get(level)! + (downs.has(level) ? 1 : 0);
  }
  const resnet = (rest: string) => {
    const [name, ...tail] = rest.split('.');
    const mapped = RESNET_NAMES[name!];
    return mapped === undefined ? undefined : [mapped, ...tail].join('.');
  };
  const basic: Record<string, string> = {
    'conv_in.': 'input_blocks.0.0.',
    'time_embedding.linear_1.': 'time_embed.0.',
    'time_embedding.linear_2.': 'time_embed.2.',
    'add_embedding.linear_1.': 'label_emb.0.0.',
    'add_embedding.linear_2.': 'label_emb.0.2.',
    'class_embedding.linear_1.': 'label_emb.0.0.',
    'class_embedding.linear_2.': 'label_emb.0.2.',
    'controlnet_mid_block.': 'middle_block_out.0.',
    'controlnet_cond_embedding.conv_in.': 'input_hint_block.0.',
  };
  let hintBlocks = 0;
  for (const k of keys) {
    const m = /^controlnet_cond_embedding\.blocks\.(\d+)\./.exec(k);
    if (m) hintBlocks = Math.max(hintBlocks, Number(m[1]) + 1);
  }
  basic['controlnet_cond_embedding.conv_out.'] = `input_hint_block.${2 * (hintBlocks + 1)}.`;
  return (k: string) => {
    const at = (name: string | undefined) => (name === undefined ? undefined : CONTROL_PREFIX + name);
    for (const [from, to] of Object.entries(basic)) if (k.startsWith(from)) return at(to + k.slice(from.length));
    let m = /^controlnet_cond_embedding\.blocks\.(\d+)\.(.*)$/.exec(k);
    if (m) return at(`input_hint_block.${2 * (Number(m[1]) + 1)}.${m[2]}`);
    m = /^controlnet_down_blocks\.(\d+)\.(.*)$/.exec(k);
    if (m) return at(`zero_convs.${m[1]}.0.${m[2]}`);
    m = /^down_blocks\.(\d+)\.resnets\.(\d+)\.(.*)$/.exec(k);
    if (m && first[Number(m[1])] !== undefined) {
      const r = resnet(m[3]!);
      return r === undefined ? undefined : at(`input_blocks.${first[Number(m[1])]! + Number(m[2])}.0.${r}`);
    }
    m = /^down_blocks\.(\d+)\.attentions\.(\d+)\.(.*)$/.exec(k);
    if (m && first[Number(m[1])] !== undefined) return at(`input_blocks.${first[Number(m[1])]! + Number(m[2])}.1.${m[3]}`);
    m = /^down_blocks\.(\d+)\.downsamplers\.0\.conv\.(.*)$/.exec(k);
    if (m && first[Number(m[1])] !== undefined) return at(`input_blocks.${first[Number(m[1])]! + resnets.get(Number(m[1]))!}.0.op.${m[2]}`);
    m = /^mid_block\.attentions\.0\.(.*)$/.exec(k);
    if (m) return at(`middle_block.1.${m[1]}`);
    m = /^mid_block\.resnets\.([01])\.(.*)$/.exec(k);
    if (m) {
      const r = resnet(m[2]!);
      return r === undefined ? undefined : at(`middle_block.${m[1] === '0' ? 0 : 2}.${r}`);
    }
    return undefined;
  };
}

export function detectControl(file: SafetensorsFile): ControlSpec {
  const fail = (problem: string): never => {
    throw new ModelFileError(file.path, problem);
  };
  // The reference's order: HunyuanDiT, then Control-LoRA (before any ControlNet layout), then the ControlNets.
  if (file.has('after_proj_list.18.bias')) fail('a HunyuanDiT ControlNet: that model family is not supported');
  if (file.has('lora_controlnet')) return detectControlLora(file, fail);
  if (file.has(`${CONTROL_PREFIX}zero_convs.0.0.weight`)) {
    const unet = detectUNet(file, CONTROL_PREFIX, { encoderOnly: true });
    const hint = `${CONTROL_PREFIX}input_hint_block.0.weight`;
    if (!file.has(hint)) fail(`${hint} is missing`);
    const hs = file.info(hint).shape;
    if (hs.length !== 4) fail(`${hint} has shape [${hs.join(', ')}], expected a 4-d conv weight`);
    for (let i = 0; i < unet.inputBlocks.length; i++) if (!file.has(`${CONTROL_PREFIX}zero_convs.${i}.0.weight`)) fail(`${CONTROL_PREFIX}zero_convs.${i}.0.weight is missing`);
    if (!file.has(`${CONTROL_PREFIX}middle_block_out.0.weight`)) fail(`${CONTROL_PREFIX}middle_block_out.0.weight is missing`);
    // Only the .pth layout (control_model. in the file itself) is read as a difference, as the reference's loader does.
    const spec: ControlNetSpec = { kind: 'controlnet', unet, hintChannels: hs[1]!, difference: file.has('difference') };
    // Union parts are read from the diffusers layout only (parts.ts keeps them there, drops them from the others), as the reference's loader does.
    if (file.has(`${CONTROL_PREFIX}task_embedding`)) spec.union = { types: checkUnion(file, unet, fail) };
    return spec;
  }
  if (file.has('control_add_embedding.linear_1.bias') || file.has('task_embedding')) fail('union ControlNet parts (task_embedding, control_add_embedding) without a ControlNet in the diffusers layout (controlnet_cond_embedding.conv_in.weight is missing)');
  if (file.has('controlnet_cond_embedding.conv_in.weight')) fail('a ControlNet in the diffusers layout must be read through its single-file view (parts.ts)');
  if (file.has('controlnet_blocks.0.weight') || file.has('controlnet_blocks.0.linear.weight')) fail('a ControlNet for SD3, Flux, Qwen-Image or HunyuanDiT: those model families are not supported');
  if (file.has('body.0.in_conv.weight')) return detectLight(file, fail);
  if (file.has('backbone.0.0.weight') || file.has('backbone.10.blocks.0.weight')) fail('a Stable Cascade ControlNet: that model family is not supported');
  if (file.has('conv_in.weight')) {
    const cinShape = file.info('conv_in.weight').shape;
    if (cinShape.length !== 4) fail(`conv_in.weight has shape [${cinShape.join(', ')}], expected a 4-d conv weight`);
    const [channel, cin] = cinShape as [number, number];
    if (!file.has('body.0.block2.weight')) fail('body.0.block2.weight is missing');
    const ksize = file.info('body.0.block2.weight').shape[2]!;
    const useConv = [...file.tensors.keys()].some((k) => k.endsWith('down_opt.op.weight'));
    const xl = cin === 256 || cin === 768;
    const unshuffle = xl ? 16 : 8;
    if (cin % (unshuffle * unshuffle) !== 0) fail(`conv_in takes ${cin} channels, not a whole number of ${unshuffle}×${unshuffle}-unshuffled hint channels`);
    return { kind: 't2i', cin, channels: [channel, channel * 2, channel * 4, channel * 4], blocksPerLevel: 2, ksize, useConv, xl, unshuffle, inputChannels: cin / (unshuffle * unshuffle) };
  }
  return fail('error could not detect control model type: neither a ControlNet (zero_convs.0.0.weight) nor a T2I adapter (conv_in.weight)');
}

/** A union ControlNet's extra parts, checked against the shapes cldm.ControlNet gives them; the number of control types. */
function checkUnion(file: SafetensorsFile, unet: UNetConfig, fail: (problem: string) => never): number {
  const P = CONTROL_PREFIX;
  const te = file.info(`${P}task_embedding`).shape;
  if (te.length !== 2 || te[1] !== 320 || te[0]! < 1) fail(`${P}task_embedding has shape [${te.join(', ')}], expected [types, 320]`);
  const types = te[0]!;
  const mc = unet.modelChannels;
  // The hint features (model_channels wide) meet task_embedding's 320-wide rows: the reference's union merge needs 320 channels.
  if (mc !== 320) fail(`a union ControlNet needs 320 model channels (its task embedding is 320 wide); this one has ${mc}`);
  const emb = mc * 4;
  const expect: [string, number[]][] = [
    ['control_add_embedding.linear_1.weight', [emb, 256 * types]],
    ['control_add_embedding.linear_1.bias', [emb]],
    ['control_add_embedding.linear_2.weight', [emb, emb]],
    ['control_add_embedding.linear_2.bias', [emb]],
    ['transformer_layes.0.attn.in_proj.weight', [960, 320]],
    ['transformer_layes.0.attn.in_proj.bias', [960]],
    ['transformer_layes.0.attn.out_proj.weight', [320, 320]],
    ['transformer_layes.0.attn.out_proj.bias', [320]],
    ['transformer_layes.0.ln_1.weight', [320]],
    ['transformer_layes.0.ln_1.bias', [320]],
    ['transformer_layes.0.mlp.c_fc.weight', [1280, 320]],
    ['transformer_layes.0.mlp.c_fc.bias', [1280]],
    ['transformer_layes.0.mlp.c_proj.weight', [320, 1280]],
    ['transformer_layes.0.mlp.c_proj.bias', [320]],
    ['transformer_layes.0.ln_2.weight', [320]],
    ['transformer_layes.0.ln_2.bias', [320]],
    ['spatial_ch_projs.weight', [320, 320]],
    ['spatial_ch_projs.bias', [320]],
  ];
  for (const [k, shape] of expect) {
    if (!file.has(P + k)) fail(`${k} is missing (a union ControlNet has it)`);
    const got = file.info(P + k).shape;
    if (got.join() !== shape.join()) fail(`${k} has shape [${got.join(', ')}], expected [${shape.join(', ')}]`);
  }
  return types;
}

/** A Control-LoRA's keys as the reference's ControlLora reads them (every name a ControlNet module's, up and down in pairs). */
function detectControlLora(file: SafetensorsFile, fail: (problem: string) => never): ControlLoraSpec {
  const hint = 'input_hint_block.0.weight';
  if (!file.has(hint)) fail(`a Control-LoRA (lora_controlnet) without ${hint}`);
  const hs = file.info(hint).shape;
  if (hs.length !== 4) fail(`${hint} has shape [${hs.join(', ')}], expected a 4-d conv weight`);
  for (const k of ['zero_convs.0.0.weight', 'middle_block_out.0.weight']) if (!file.has(k)) fail(`a Control-LoRA without ${k}`);
  const lowRank: string[] = [];
  for (const [k, info] of file.tensors) {
    if (k === 'lora_controlnet' || k.includes('__')) continue;
    const m = /^(.*)\.(up|down|weight|bias)$/.exec(k);
    // The reference sets only these suffixes; any other name is left out by it too.
    if (!m) continue;
    if (!CONTROL_LORA_MODULES.some((p) => k.startsWith(p))) fail(`${k} names no module of a ControlNet`);
    if (info.dtype !== 'F32' && info.dtype !== 'F16' && info.dtype !== 'BF16') fail(`${k} has dtype ${info.dtype}, expected a float type`);
    if (m[2] === 'up') {
      const down = `${m[1]}.down`;
      if (!file.has(down)) fail(`${k} has no ${down}`);
      const [us, ds] = [info.shape, file.info(down).shape];
      if (us.length < 2 || ds.length < 2 || us.slice(1).reduce((a, b) => a * b, 1) !== ds[0]) fail(`${k} [${us.join(', ')}] and ${down} [${ds.join(', ')}] disagree on the rank`);
      lowRank.push(m[1]!);
    } else if (m[2] === 'down' && !file.has(`${m[1]}.up`)) fail(`${k} has no ${m[1]}.up`);
  }
  return { kind: 'control_lora', hintChannels: hs[1]!, lowRank };
}

/** Adapter_light's keys: body.i.in_conv, body.i.body.j.block1/2, body.i.out_conv, with the reference's fixed widths. */
function detectLight(file: SafetensorsFile, fail: (problem: string) => never): T2IAdapterSpec {
  const cinShape = file.info('body.0.in_conv.weight').shape;
  if (cinShape.length !== 4) fail(`body.0.in_conv.weight has shape [${cinShape.join(', ')}], expected a 4-d conv weight`);
  const cin = cinShape[1]!;
  if (cin % 64 !== 0) fail(`body.0.in_conv takes ${cin} channels, not a whole number of 8×8-unshuffled hint channels`);
  // The reference loads the file strictly into Adapter_light(cin, [320, 640, 1280, 1280], 4 res blocks): every shape must be that.
  const expect = new Map<string, number[]>();
  LIGHT_CHANNELS.forEach((out, i) => {
    const inC = i === 0 ? cin : LIGHT_CHANNELS[i - 1]!;
    const inter = out / 4;
    const conv = (k: string, o: number, c: number, ks: number) => {
      expect.set(`body.${i}.${k}.weight`, [o, c, ks, ks]);
      expect.set(`body.${i}.${k}.bias`, [o]);
    };
    conv('in_conv', inter, inC, 1);
    for (let j = 0; j < LIGHT_BLOCKS; j++) {
      conv(`body.${j}.block1`, inter, inter, 3);
      conv(`body.${j}.block2`, inter, inter, 3);
    }
    conv('out_conv', out, inter, 1);
  });
  for (const [k, shape] of expect) {
    if (!file.has(k)) fail(`${k} is missing (a T2I light adapter has it)`);
    const got = file.info(k).shape;
    if (got.join() !== shape.join()) fail(`${k} has shape [${got.join(', ')}], expected [${shape.join(', ')}]`);
  }
  for (const k of file.tensors.keys()) if (!expect.has(k)) fail(`${k} is not a tensor of a T2I light adapter`);
  return { kind: 't2i', cin, channels: LIGHT_CHANNELS, blocksPerLevel: LIGHT_BLOCKS, ksize: 3, useConv: false, xl: false, unshuffle: 8, inputChannels: cin / 64, light: true };
}
