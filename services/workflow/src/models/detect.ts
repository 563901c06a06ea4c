/**
 * Reads a checkpoint's architecture from its keys and shapes, as the
 * reference's comfy/model_detection.py does: which family it is, and the
 * widths, levels, res blocks and transformer depths its graphs need. SD1.x
 * here, SD2.x and SDXL in detect-families.ts; anything else is a clear error
 * naming what was found.
 */
import { ModelFileError, type SafetensorsFile } from './safetensors.ts';

export const UNET_PREFIX = 'model.diffusion_model.';
export const CLIP_PREFIX = 'cond_stage_model.transformer.text_model.';
export const VAE_PREFIX = 'first_stage_model.';

export interface UNetBlock {
  /** Index in input_blocks / output_blocks. */
  index: number;
  kind: 'res' | 'down' | 'conv_in';
  outChannels: number;
  /** Transformer depth following the res block (0 = none). */
  depth: number;
  /** Output blocks: key of the upsample conv after this block, if any. */
  upsample?: string;
}

export interface UNetConfig {
  inChannels: number;
  outChannels: number;
  modelChannels: number;
  contextDim: number;
  /** Attention heads where every transformer has the same count (SD1: 8); ignored when headChannels > 0. */
  numHeads: number;
  /** Channels per attention head (SD2, SDXL: 64; the heads are a transformer's width / 64); -1 = numHeads heads. */
  headChannels: number;
  /** Width of the `y` vector label_emb takes (SDXL 2816, refiner 2560); 0 = none. */
  admInChannels: number;
  inputBlocks: UNetBlock[];
  middleDepth: number;
  outputBlocks: UNetBlock[];
  /** proj_in of the transformers is a Linear (SD2 style) instead of a 1×1 conv. */
  linearProjection: boolean;
}

export interface ClipConfig {
  vocabSize: number;
  hiddenSize: number;
  layers: number;
  heads: number;
  maxPositions: number;
  intermediateSize: number;
}

export interface VaeConfig {
  ch: number;
  chMult: number[];
  numResBlocks: number;
  zChannels: number;
  inChannels: number;
  hasEncoder: boolean;
  /** Pixels per latent pixel along a side: 2^(levels − 1). */
  downscale: number;
}

/** One text encoder of a checkpoint: which (l, g, h), where its keys are, and their layout. */
export interface TextEncoderSpec {
  name: 'l' | 'g' | 'h';
  prefix: string;
  /** `hf`: transformers' CLIPTextModel keys under prefix (text_model.encoder.layers.N.*, text_projection.weight); `openclip`: open_clip's (transformer.resblocks.N.*, fused in_proj). */
  layout: 'hf' | 'openclip';
  config: ClipConfig;
  /** Width of the projected pooled output (0 when the file has no text projection). */
  projection: number;
}

export type ModelType = 'eps' | 'v_prediction';

export interface DetectedCheckpoint {
  family: 'sd1' | 'sd2' | 'sdxl' | 'sdxl_refiner';
  /** Whether the reference itself would accept the widths (model_channels 320, context 768, CLIP-L, the SD VAE). */
  referenceShaped: boolean;
  unet: UNetConfig;
  clip: ClipConfig | null;
  vae: VaeConfig | null;
  /** SD2.x and SDXL: every text encoder, in the order the reference concatenates them (detect-families.ts). */
  textEncoders?: TextEncoderSpec[];
  /** ε or v-prediction (the reference's model_type); absent = ε. */
  modelType?: ModelType;
  /** Zero terminal SNR sigmas (a `ztsnr` key). */
  zsnr?: boolean;
  /** A tensor whose values decide ε or v (SD2.x): resolveModelType reads it. */
  vPredProbe?: string;
}

function countPrefixed(keys: readonly string[], prefix: string): number {
  const seen = new Set<number>();
  for (const k of keys) {
    if (!k.startsWith(prefix)) continue;
    const n = Number.parseInt(k.slice(prefix.length), 10);
    if (Number.isInteger(n) && n >= 0 && n < 100_000) seen.add(n);
  }
  let i = 0;
  while (seen.has(i)) i++;
  return i;
}

/**
 * The UNet's widths and blocks from its keys. `encoderOnly`: a ControlNet's
 * copy of the encoder (input and middle blocks, no output blocks or `out`).
 */
export function detectUNet(file: SafetensorsFile, prefix = UNET_PREFIX, opts: { encoderOnly?: boolean } = {}): UNetConfig {
  const keys = [...file.tensors.keys()];
  const shape = (k: string) => file.info(prefix + k).shape;
  const has = (k: string) => file.has(prefix + k);
  const fail = (problem: string): never => {
    throw new ModelFileError(file.path, problem);
  };
  if (!has('input_blocks.0.0.weight')) fail(`no UNet (${prefix}input_blocks.0.0.weight missing): not an SD1.x checkpoint, nor SD2.x or SDXL`);
  let admInChannels = 0;
  if (has('label_emb.0.0.weight')) {
    const adm = shape('label_emb.0.0.weight');
    if (adm.length !== 2 || !has('label_emb.0.2.weight')) fail(`label_emb.0.0.weight has shape [${adm.join(', ')}], expected a 2-d Linear weight followed by label_emb.0.2`);
    admInChannels = adm[1]!;
  }
  const convIn = shape('input_blocks.0.0.weight');
  if (convIn.length !== 4) fail(`input_blocks.0.0.weight has shape [${convIn.join(', ')}], expected a 4-d conv weight`);
  const modelChannels = convIn[0]!;
  const inChannels = convIn[1]!;
  const depthAt = (block: string): number => countPrefixed(keys, `${prefix}${block}.transformer_blocks.`);

  let contextDim = -1;
  let linearProjection = false;
  const noteTransformer = (block: string) => {
    const k = `${block}.transformer_blocks.0.attn2.to_k.weight`;
    if (!has(k)) fail(`${prefix}${k} missing`);
    const c = shape(k)[1]!;
    if (contextDim !== -1 && contextDim !== c) fail(`cross-attention context widths differ (${contextDim} and ${c})`);
    contextDim = c;
    if (shape(`${block}.proj_in.weight`).length === 2) linearProjection = true;
  };

  const inputBlocks: UNetBlock[] = [{ index: 0, kind: 'conv_in', outChannels: modelChannels, depth: 0 }];
  const nIn = countPrefixed(keys, `${prefix}input_blocks.`);
  for (let i = 1; i < nIn; i++) {
    if (has(`input_blocks.${i}.0.op.weight`)) {
      inputBlocks.push({ index: i, kind: 'down', outChannels: shape(`input_blocks.${i}.0.op.weight`)[0]!, depth: 0 });
    } else if (has(`input_blocks.${i}.0.in_layers.0.weight`)) {
      const depth = has(`input_blocks.${i}.1.proj_in.weight`) ? depthAt(`input_blocks.${i}.1`) : 0;
      if (depth) noteTransformer(`input_blocks.${i}.1`);
      inputBlocks.push({ index: i, kind: 'res', outChannels: shape(`input_blocks.${i}.0.out_layers.3.weight`)[0]!, depth });
    } else fail(`input_blocks.${i} is neither a res block nor a downsample`);
  }
  if (!has('middle_block.0.in_layers.0.weight') || !has('middle_block.2.in_layers.0.weight')) fail('middle_block res blocks missing');
  const middleDepth = has('middle_block.1.proj_in.weight') ? depthAt('middle_block.1') : 0;
  if (middleDepth) noteTransformer('middle_block.1');

  const outputBlocks: UNetBlock[] = [];
  const nOut = opts.encoderOnly ? 0 : countPrefixed(keys, `${prefix}output_blocks.`);
  for (let i = 0; i < nOut; i++) {
    if (!has(`output_blocks.${i}.0.in_layers.0.weight`)) fail(`output_blocks.${i}.0 is not a res block`);
    const depth = has(`output_blocks.${i}.1.proj_in.weight`) ? depthAt(`output_blocks.${i}.1`) : 0;
    if (depth) noteTransformer(`output_blocks.${i}.1`);
    const up = depth ? 2 : 1;
    const upsample = has(`output_blocks.${i}.${up}.conv.weight`) ? `output_blocks.${i}.${up}.conv` : undefined;
    outputBlocks.push({ index: i, kind: 'res', outChannels: shape(`output_blocks.${i}.0.out_layers.3.weight`)[0]!, depth, upsample });
  }
  if (!opts.encoderOnly && outputBlocks.length !== inputBlocks.length) fail(`${inputBlocks.length} input blocks but ${outputBlocks.length} output blocks`);
  if (contextDim === -1) fail('the UNet has no cross-attention transformer');
  if (!opts.encoderOnly && !has('out.2.weight')) fail(`${prefix}out.2.weight missing`);
  if (!linearProjection && !admInChannels && modelChannels % 8 !== 0) fail(`model_channels ${modelChannels} is not a multiple of the 8 attention heads`);
  // SD1.x: 8 heads everywhere (the reference's SD15 num_heads); SD2.x and SDXL (linear projections or adm): 64-channel heads.
  const headChannels = linearProjection || admInChannels ? 64 : -1;
  if (headChannels > 0) {
    for (const b of [...inputBlocks, ...outputBlocks]) if (b.depth && b.outChannels % 64 !== 0) fail(`a transformer of ${b.outChannels} channels is not a whole number of 64-channel attention heads`);
  }
  return { inChannels, outChannels: opts.encoderOnly ? 0 : shape('out.2.weight')[0]!, modelChannels, contextDim, numHeads: 8, headChannels, admInChannels, inputBlocks, middleDepth, outputBlocks, linearProjection };
}

export function detectClip(file: SafetensorsFile, prefix = CLIP_PREFIX): ClipConfig | null {
  const tok = `${prefix}embeddings.token_embedding.weight`;
  if (!file.has(tok)) return null;
  const [vocabSize, hiddenSize] = file.info(tok).shape as number[];
  const layers = countPrefixed([...file.tensors.keys()], `${prefix}encoder.layers.`);
  if (layers === 0) throw new ModelFileError(file.path, `${prefix}encoder.layers.0 missing: the text encoder has no layers`);
  const pos = `${prefix}embeddings.position_embedding.weight`;
  if (!file.has(pos)) throw new ModelFileError(file.path, `${pos} missing`);
  const maxPositions = file.info(pos).shape[0]!;
  if (maxPositions < 77) throw new ModelFileError(file.path, `the text encoder has ${maxPositions} positions, fewer than the 77 a prompt needs`);
  const intermediateSize = file.info(`${prefix}encoder.layers.0.mlp.fc1.weight`).shape[0]!;
  // CLIP-L: 12 heads of 64 channels; the head count is not in the weights, so smaller encoders use 64-channel heads too.
  const heads = hiddenSize! % 64 === 0 ? hiddenSize! / 64 : 1;
  return { vocabSize: vocabSize!, hiddenSize: hiddenSize!, layers, heads, maxPositions, intermediateSize };
}

export function detectVae(file: SafetensorsFile, prefix = VAE_PREFIX): VaeConfig | null {
  if (!file.has(`${prefix}decoder.conv_in.weight`)) return null;
  const keys = [...file.tensors.keys()];
  const levels = countPrefixed(keys, `${prefix}decoder.up.`);
  if (levels === 0) throw new ModelFileError(file.path, `${prefix}decoder.up.0 missing`);
  const numResBlocks = countPrefixed(keys, `${prefix}decoder.up.0.block.`) - 1;
  if (numResBlocks < 1) throw new ModelFileError(file.path, `${prefix}decoder.up.0 has too few res blocks`);
  const chMult: number[] = [];
  const ch = file.info(`${prefix}decoder.conv_out.weight`).shape[1]!;
  for (let l = 0; l < levels; l++) {
    const out = file.info(`${prefix}decoder.up.${l}.block.0.conv2.weight`).shape[0]!;
    if (out % ch !== 0) throw new ModelFileError(file.path, `decoder level ${l} has ${out} channels, not a multiple of ${ch}`);
    chMult.push(out / ch);
  }
  const zChannels = file.info(`${prefix}decoder.conv_in.weight`).shape[1]!;
  const hasEncoder = file.has(`${prefix}encoder.conv_in.weight`);
  const inChannels = hasEncoder ? file.info(`${prefix}encoder.conv_in.weight`).shape[1]! : 3;
  return { ch, chMult, numResBlocks, zChannels, inChannels, hasEncoder, downscale: 2 ** (levels - 1) };
}
