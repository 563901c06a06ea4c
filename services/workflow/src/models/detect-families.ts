/**
 * SD2.x and SDXL (base and refiner) from a checkpoint's keys, as the
 * reference's comfy/model_detection.py and comfy/supported_models.py tell
 * them apart: SD2.x has Linear projections in its transformers and no
 * `label_emb`, an OpenCLIP-H text encoder (`cond_stage_model.model.*`) and is
 * ε or v-prediction by the spread of one norm's bias; SDXL has `label_emb`
 * (adm 2816: pooled 1280 + six 256-wide size/crop embeddings), CLIP-L
 * (`conditioner.embedders.0.transformer.text_model.*`) and OpenCLIP-G
 * (`conditioner.embedders.1.model.*`); the refiner has adm 2560 (pooled +
 * five: size, crop, aesthetic score) and OpenCLIP-G alone
 * (`conditioner.embedders.0.model.*`). Widths are read from the keys, so
 * small generated checkpoints of each family load too.
 */
import { detectClip, detectUNet, detectVae, type ClipConfig, type DetectedCheckpoint, type ModelType, type TextEncoderSpec, type UNetConfig } from './detect.ts';
import { ModelFileError, type SafetensorsFile } from './safetensors.ts';

export type { ModelType, TextEncoderSpec };

function countPrefixed(file: SafetensorsFile, prefix: string): number {
  const seen = new Set<number>();
  for (const k of file.tensors.keys()) {
    if (!k.startsWith(prefix)) continue;
    const n = Number.parseInt(k.slice(prefix.length), 10);
    if (Number.isInteger(n) && n >= 0 && n < 100_000) seen.add(n);
  }
  let i = 0;
  while (seen.has(i)) i++;
  return i;
}

/** An OpenCLIP text tower (token_embedding, positional_embedding, transformer.resblocks.N, ln_final, text_projection). */
export function detectOpenClip(file: SafetensorsFile, prefix: string): ClipConfig & { projection: number } {
  const fail = (problem: string): never => {
    throw new ModelFileError(file.path, problem);
  };
  const need = (k: string) => (file.has(prefix + k) ? file.info(prefix + k).shape : fail(`${prefix}${k} missing`));
  const tok = need('token_embedding.weight');
  if (tok.length !== 2) fail(`${prefix}token_embedding.weight has shape [${tok.join(', ')}], expected [vocab, width]`);
  const [vocabSize, hiddenSize] = tok as [number, number];
  const layers = countPrefixed(file, `${prefix}transformer.resblocks.`);
  if (layers === 0) fail(`${prefix}transformer.resblocks.0 missing: the text encoder has no layers`);
  const pos = need('positional_embedding');
  if (pos.length !== 2 || pos[1] !== hiddenSize) fail(`${prefix}positional_embedding has shape [${pos.join(', ')}], expected [77, ${hiddenSize}]`);
  if (pos[0]! < 77) fail(`the text encoder has ${pos[0]} positions, fewer than the 77 a prompt needs`);
  for (let l = 0; l < layers; l++) {
    const inProj = need(`transformer.resblocks.${l}.attn.in_proj_weight`);
    if (inProj[0] !== 3 * hiddenSize || inProj[1] !== hiddenSize) fail(`${prefix}transformer.resblocks.${l}.attn.in_proj_weight has shape [${inProj.join(', ')}], expected [${3 * hiddenSize}, ${hiddenSize}]`);
  }
  const intermediateSize = need('transformer.resblocks.0.mlp.c_fc.weight')[0]!;
  let projection = 0;
  if (file.has(`${prefix}text_projection`)) {
    const p = file.info(`${prefix}text_projection`).shape;
    if (p.length !== 2 || p[0] !== hiddenSize) fail(`${prefix}text_projection has shape [${p.join(', ')}], expected [${hiddenSize}, width]`);
    projection = p[1]!;
  }
  if (hiddenSize % 64 !== 0) fail(`the text encoder's width ${hiddenSize} is not a whole number of 64-channel attention heads`);
  return { vocabSize, hiddenSize, layers, heads: hiddenSize / 64, maxPositions: pos[0]!, intermediateSize, projection };
}

/** A transformers-layout CLIP text model, with its text_projection.weight when present. */
export function detectHfClip(file: SafetensorsFile, prefix: string, textPrefix = `${prefix}text_model.`): (ClipConfig & { projection: number }) | null {
  const cfg = detectClip(file, textPrefix);
  if (!cfg) return null;
  let projection = 0;
  const key = `${prefix}text_projection.weight`;
  if (file.has(key)) {
    const p = file.info(key).shape;
    if (p.length !== 2 || p[1] !== cfg.hiddenSize) throw new ModelFileError(file.path, `${key} has shape [${p.join(', ')}], expected [width, ${cfg.hiddenSize}]`);
    projection = p[0]!;
  }
  return { ...cfg, projection };
}

function spec(name: TextEncoderSpec['name'], prefix: string, layout: TextEncoderSpec['layout'], c: ClipConfig & { projection: number }): TextEncoderSpec {
  const { projection, ...config } = c;
  return { name, prefix, layout, config, projection };
}

/** The key whose spread tells SD2.x v-prediction from ε (the reference's SD20.model_type). */
export const SD2_VPRED_PROBE = 'model.diffusion_model.output_blocks.11.1.transformer_blocks.0.norm1.bias';

/**
 * SD2.x, SDXL or the SDXL refiner, from a UNet that has Linear projections
 * or `label_emb`. The SD2 ε/v decision needs a tensor's values: see
 * {@link resolveModelType}.
 */
export function detectFamily(file: SafetensorsFile, unet: UNetConfig): DetectedCheckpoint {
  const fail = (problem: string): never => {
    throw new ModelFileError(file.path, problem);
  };
  const vae = detectVae(file);
  const has = (k: string) => file.has(k);
  for (const k of ['edm_mean', 'edm_vpred.sigma_max']) if (has(k)) fail(`the checkpoint has ${k} (an EDM-sampled SDXL such as Playground 2.5), which is not supported yet`);
  if (!unet.admInChannels) {
    // SD2.x: OpenCLIP-H (ldm or sgm key names).
    const prefix = has('cond_stage_model.model.token_embedding.weight') ? 'cond_stage_model.model.' : has('conditioner.embedders.0.model.token_embedding.weight') ? 'conditioner.embedders.0.model.' : undefined;
    const textEncoders: TextEncoderSpec[] = [];
    if (prefix) {
      const h = spec('h', prefix, 'openclip', detectOpenClip(file, prefix));
      if (h.config.hiddenSize !== unet.contextDim) fail(`the text encoder's width ${h.config.hiddenSize} does not match the UNet's context width ${unet.contextDim}`);
      textEncoders.push(h);
    }
    const referenceShaped = unet.modelChannels === 320 && unet.contextDim === 1024 && (!prefix || (textEncoders[0]!.config.layers === 24 && textEncoders[0]!.config.hiddenSize === 1024));
    return { family: 'sd2', referenceShaped, unet, clip: textEncoders[0]?.config ?? null, vae, textEncoders, modelType: 'eps', vPredProbe: unet.inChannels === 4 ? SD2_VPRED_PROBE : undefined };
  }
  if (has('cond_stage_model.model.token_embedding.weight') || has('embedder.model.visual.conv1.weight')) fail(`the UNet has adm_in_channels ${unet.admInChannels} with an SD2 text encoder (SD2.1 unCLIP), which is not supported yet`);
  const textEncoders: TextEncoderSpec[] = [];
  let family: 'sdxl' | 'sdxl_refiner';
  if (has('conditioner.embedders.1.model.token_embedding.weight')) {
    family = 'sdxl';
    const l = detectHfClip(file, 'conditioner.embedders.0.transformer.');
    if (!l) fail('conditioner.embedders.0.transformer.text_model (CLIP-L) missing beside OpenCLIP-G');
    textEncoders.push(spec('l', 'conditioner.embedders.0.transformer.', 'hf', l!), spec('g', 'conditioner.embedders.1.model.', 'openclip', detectOpenClip(file, 'conditioner.embedders.1.model.')));
  } else if (has('conditioner.embedders.0.model.token_embedding.weight')) {
    family = 'sdxl_refiner';
    textEncoders.push(spec('g', 'conditioner.embedders.0.model.', 'openclip', detectOpenClip(file, 'conditioner.embedders.0.model.')));
  } else {
    // A UNet alone: the reference's two configs by their adm width.
    family = unet.admInChannels === 2560 ? 'sdxl_refiner' : 'sdxl';
  }
  const extra = (family === 'sdxl' ? 6 : 5) * 256;
  const g = textEncoders.find((t) => t.name === 'g');
  if (g) {
    if (!g.projection) fail(`${g.prefix}text_projection missing: OpenCLIP-G's pooled output feeds the UNet's adm`);
    if (unet.admInChannels !== g.projection + extra) fail(`the UNet's adm_in_channels ${unet.admInChannels} is not the pooled width ${g.projection} + ${extra}`);
    const ctx = textEncoders.reduce((a, t) => a + t.config.hiddenSize, 0);
    if (ctx !== unet.contextDim) fail(`the text encoders' widths (${textEncoders.map((t) => t.config.hiddenSize).join(' + ')}) do not match the UNet's context width ${unet.contextDim}`);
  } else if (unet.admInChannels <= extra) fail(`the UNet's adm_in_channels ${unet.admInChannels} leaves no room for a pooled text embedding`);
  if (!unet.linearProjection) fail('the UNet has label_emb but 1×1-conv projections: not an SDXL layout');
  const referenceShaped = unet.modelChannels === (family === 'sdxl' ? 320 : 384) && unet.admInChannels === (family === 'sdxl' ? 2816 : 2560);
  // The reference's SDXL.model_type: a `v_pred` key (written by its own saver) marks v-prediction, `ztsnr` zero terminal SNR.
  const modelType: ModelType = family === 'sdxl' && has('v_pred') ? 'v_prediction' : 'eps';
  return { family, referenceShaped, unet, clip: g?.config ?? null, vae, textEncoders, modelType, zsnr: modelType === 'v_prediction' && has('ztsnr') };
}

/**
 * The reference's SD20.model_type: a 4-channel SD2.x UNet whose
 * output_blocks.11 transformer's first norm1 bias has a population standard
 * deviation over 0.09 is v-prediction (SD2.x 768), otherwise ε (SD2.x 512
 * base, inpainting).
 */
export async function resolveModelType(file: SafetensorsFile, detected: DetectedCheckpoint): Promise<DetectedCheckpoint> {
  if (!detected.vPredProbe || !file.has(detected.vPredProbe)) return detected;
  const v = await file.readFloat32(detected.vPredProbe);
  let mean = 0;
  for (const x of v) mean += x;
  mean /= v.length;
  let varSum = 0;
  for (const x of v) varSum += (x - mean) ** 2;
  const std = Math.sqrt(varSum / v.length);
  return { ...detected, modelType: std > 0.09 ? 'v_prediction' : 'eps' };
}

/** The whole checkpoint: SD1.x UNet, CLIP-L-shaped text encoder and VAE; SD2.x and SDXL by detectFamily. */
export function detectCheckpoint(file: SafetensorsFile): DetectedCheckpoint {
  const unet = detectUNet(file);
  if (unet.linearProjection || unet.admInChannels) return detectFamily(file, unet);
  const clip = detectClip(file);
  const vae = detectVae(file);
  if (clip && clip.hiddenSize !== unet.contextDim) throw new ModelFileError(file.path, `the text encoder's width ${clip.hiddenSize} does not match the UNet's context width ${unet.contextDim}`);
  const referenceShaped =
    unet.modelChannels === 320 && unet.contextDim === 768 && (!clip || (clip.hiddenSize === 768 && clip.layers === 12)) && (!vae || (vae.ch === 128 && vae.chMult.join() === '1,2,4,4'));
  return { family: 'sd1', referenceShaped, unet, clip, vae };
}

