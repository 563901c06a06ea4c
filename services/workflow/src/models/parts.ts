/**
 * Model parts in files of their own, as the reference's UNETLoader,
 * CLIPLoader (type sd1) and VAELoader read them: each file's keys are viewed
 * under the prefixes a whole SD1.x checkpoint uses, so the checkpoint's graphs
 * run them unchanged and the weights are still read from the file itself.
 */
import { CLIP_PREFIX, detectClip, detectVae, UNET_PREFIX, VAE_PREFIX, type DetectedCheckpoint, type UNetConfig } from './detect.ts';
import { CONTROL_PREFIX, detectControl, diffusersControlNetNames, isUnionKey, t2iKeyName } from './detect-control.ts';
import { ModelFileError, type SafetensorsFile } from './safetensors.ts';

/** `control`: a ControlNet or T2I adapter (ControlNetLoader; detect-control.ts tells which). */
export type ModelPart = 'unet' | 'clip' | 'vae' | 'taesd' | 'control';

function rebase(file: SafetensorsFile, from: string, to: string): SafetensorsFile {
  return file.renamed((k) => (k.startsWith(from) ? to + k.slice(from.length) : undefined));
}

/** The file's tensors under the checkpoint prefix of `part`; a layout this service cannot read is a ModelFileError. */
export function partView(file: SafetensorsFile, part: ModelPart): SafetensorsFile {
  // TAESD encoder and decoder files keep their own (nn.Sequential) names.
  if (part === 'taesd') return file;
  // ControlNets are read under control_model. (the .pth layout); diffusers-layout T2I adapters under the single-file names.
  if (part === 'control') {
    // A Control-LoRA keeps its own names (its ControlNet is built from the sampled model's UNet, controlnet.ts).
    if (file.has('lora_controlnet')) return file;
    // The single-file layouts: a union ControlNet's parts there are left out, as the reference's loader leaves them.
    if (!file.has(`${CONTROL_PREFIX}zero_convs.0.0.weight`) && file.has('zero_convs.0.0.weight')) return file.renamed((k) => (isUnionKey(k) ? undefined : CONTROL_PREFIX + k));
    if (file.has(`${CONTROL_PREFIX}zero_convs.0.0.weight`)) return file.renamed((k) => (k.startsWith(CONTROL_PREFIX) && isUnionKey(k.slice(CONTROL_PREFIX.length)) ? undefined : k));
    if (file.has('adapter.body.0.resnets.0.block1.weight')) return file.renamed(t2iKeyName);
    if (file.has('controlnet_cond_embedding.conv_in.weight')) {
      const names = diffusersControlNetNames(file.tensors.keys());
      // Diffusers' layout; a union ControlNet's parts (control_add_embedding …) under control_model. too, nn.MultiheadAttention's in_proj_ renamed as the reference does.
      if (!file.has('control_add_embedding.linear_1.bias')) return file.renamed(names);
      return file.renamed((k) => (isUnionKey(k) ? CONTROL_PREFIX + k.replace('.attn.in_proj_', '.attn.in_proj.') : names(k)));
    }
    return file;
  }
  const fail = (problem: string): never => {
    throw new ModelFileError(file.path, problem);
  };
  if (part === 'unet') {
    for (const p of [UNET_PREFIX, 'diffusion_model.', '']) if (file.has(`${p}input_blocks.0.0.weight`)) return rebase(file, p, UNET_PREFIX);
    if (file.has('conv_in.weight') && file.has('down_blocks.0.resnets.0.conv1.weight')) fail('a diffusion model in the diffusers layout is not supported yet: use the single-file (input_blocks …) layout');
    return fail('no diffusion model: input_blocks.0.0.weight is missing');
  }
  if (part === 'clip') {
    for (const p of ['', 'transformer.', 'cond_stage_model.transformer.', 'clip_l.transformer.']) {
      if (file.has(`${p}text_model.embeddings.token_embedding.weight`)) return rebase(file, `${p}text_model.`, CLIP_PREFIX);
    }
    if (file.has('transformer.resblocks.0.ln_1.weight') || file.has('token_embedding.weight')) fail('an OpenCLIP-layout text encoder is not supported yet: only CLIP-L in the transformers layout (text_model. …) is');
    return fail('no CLIP text encoder: text_model.embeddings.token_embedding.weight is missing');
  }
  for (const p of [VAE_PREFIX, '']) if (file.has(`${p}decoder.conv_in.weight`)) return rebase(file, p, VAE_PREFIX);
  if (file.has('decoder.up_blocks.0.resnets.0.norm1.weight')) fail('a VAE in the diffusers layout is not supported yet: use the single-file (encoder./decoder. …) layout');
  if (file.has('decoder.layers.0.weight') || file.has('decoder.1.conv.0.weight')) fail('a TAESD approximation is not a full VAE; it is not supported as one yet');
  return fail('no VAE: decoder.conv_in.weight is missing');
}

/** What a CLIP-only or VAE-only file holds, in the checkpoint's terms (no diffusion model: `unet` is never read for these parts). */
export function detectPart(file: SafetensorsFile, part: 'clip' | 'vae' | 'taesd' | 'control'): DetectedCheckpoint {
  if (part === 'control') {
    const spec = detectControl(file);
    if (spec.kind === 't2i') return { family: spec.xl ? 'sdxl' : 'sd1', referenceShaped: false, unet: undefined as unknown as UNetConfig, clip: null, vae: null };
    // A Control-LoRA's family is the model's it is sampled with.
    if (spec.kind === 'control_lora') return { family: 'sd1', referenceShaped: false, unet: undefined as unknown as UNetConfig, clip: null, vae: null };
    const u = spec.unet;
    return { family: u.admInChannels ? 'sdxl' : u.linearProjection ? 'sd2' : 'sd1', referenceShaped: false, unet: u, clip: null, vae: null };
  }
  if (part === 'taesd') {
    if (!file.has('1.weight') && !file.has('0.weight')) throw new ModelFileError(file.path, 'not a TAESD encoder or decoder: neither 0.weight nor 1.weight is there');
    return { family: 'sd1', referenceShaped: false, unet: undefined as unknown as UNetConfig, clip: null, vae: null };
  }
  const clip = part === 'clip' ? detectClip(file) : null;
  const vae = part === 'vae' ? detectVae(file) : null;
  if (part === 'clip' && !clip) throw new ModelFileError(file.path, 'no CLIP text encoder');
  if (part === 'vae' && !vae) throw new ModelFileError(file.path, 'no VAE');
  const referenceShaped = clip ? clip.hiddenSize === 768 && clip.layers === 12 : vae!.ch === 128 && vae!.chMult.join() === '1,2,4,4';
  return { family: 'sd1', referenceShaped, unet: undefined as unknown as UNetConfig, clip, vae };
}
