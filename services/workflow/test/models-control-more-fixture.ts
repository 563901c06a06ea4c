/**
 * Generated files for the control kinds models-control-fixture.ts leaves out:
 * a union ControlNet (ControlNet++, the diffusers layout the reference reads
 * its union parts from, for a 320-channel UNet since its task embedding is 320
 * wide), Control-LoRAs (up/down pairs for most linear and conv weights of a
 * ControlNet's encoder, full tensors for the hint block, zero convs, norms and
 * most biases, and an empty `lora_controlnet`; the SD1.5-shaped one in float16) and a T2I "light" adapter (the
 * reference's fixed widths 320/640/1280/1280, stored in float16). Values as
 * the other fixtures' (noise scaled by 1/√fan_in).
 */
import { controlNetSpecs, diffusersName, xlControlNetSpecs } from './models-control-fixture.ts';
import { SDXL_TINY, type XLFixtureConfig } from './models-fixture-xl.ts';
import { writeSpecs, type FixtureConfig, type Spec } from './models-fixture.ts';

/** The smallest UNet a union ControlNet fits: 320 channels, one level with one res block and a transformer; a tiny CLIP and VAE. */
export const UNION_BASE: FixtureConfig = {
  unet: { ch: 320, mult: [1], resBlocks: 1, attnLevels: [true], depth: 1 },
  clip: { hidden: 32, layers: 2, intermediate: 64, vocab: 49408 },
  vae: { ch: 32, mult: [1, 1, 1, 1], resBlocks: 1 },
};

/** A union ControlNet's own parts (diffusers names: in_proj_weight as nn.MultiheadAttention stores it). */
export function unionSpecs(types: number, modelChannels = 320): Spec[] {
  const emb = modelChannels * 4;
  const s: Spec[] = [['task_embedding', [types, 320], 'emb']];
  const lin = (k: string, o: number, i: number) => s.push([`${k}.weight`, [o, i], 'w'], [`${k}.bias`, [o], 'b']);
  lin('control_add_embedding.linear_1', emb, 256 * types);
  lin('control_add_embedding.linear_2', emb, emb);
  const T = 'transformer_layes.0';
  s.push([`${T}.attn.in_proj_weight`, [960, 320], 'w'], [`${T}.attn.in_proj_bias`, [960], 'b']);
  lin(`${T}.attn.out_proj`, 320, 320);
  s.push([`${T}.ln_1.weight`, [320], 'one'], [`${T}.ln_1.bias`, [320], 'b']);
  lin(`${T}.mlp.c_fc`, 1280, 320);
  lin(`${T}.mlp.c_proj`, 320, 1280);
  s.push([`${T}.ln_2.weight`, [320], 'one'], [`${T}.ln_2.bias`, [320], 'b']);
  lin('spatial_ch_projs', 320, 320);
  return s;
}

/** A union ControlNet for `cfg`'s UNet in the diffusers layout: the ControlNet's tensors under diffusers' names, then the union parts. */
export function writeUnionControlNet(file: string, cfg: FixtureConfig, types = 6, seed = 21): string[] {
  const net = controlNetSpecs(cfg, { prefix: '' }).map(([k, shape, init]): Spec => [diffusersName(k, cfg), shape, init]);
  return writeSpecs(file, [...net, ...unionSpecs(types, cfg.unet.ch)], {}, seed);
}

/** An SDXL-shaped UNet a union ControlNet fits (320 channels, one level, 64-channel heads, label_emb), the XL fixture's text towers. */
export const UNION_XL: XLFixtureConfig = { family: 'sdxl', unet: { ch: 320, mult: [1], resBlocks: 1, depth: [1], midDepth: 1 }, text: SDXL_TINY.text, vae: true };

/** An SDXL union ControlNet in the diffusers layout (label_emb as add_embedding), as xinsir's controlnet-union-sdxl files are. */
export function writeXLUnionControlNet(file: string, cfg: XLFixtureConfig, types = 8, seed = 29): string[] {
  const names = { unet: { resBlocks: cfg.unet.resBlocks } } as FixtureConfig;
  const net = xlControlNetSpecs(cfg, { prefix: '' }).map(([k, shape, init]): Spec => [diffusersName(k, names), shape, init]);
  return writeSpecs(file, [...net, ...unionSpecs(types, cfg.unet.ch)], {}, seed);
}

/** Encoder modules a Control-LoRA's up/down pairs are for (not the hint block, zero convs or middle_block_out: those are whole). */
const LOW_RANK_MODULES = ['time_embed.', 'label_emb.', 'input_blocks.', 'middle_block.'];

/**
 * A Control-LoRA made from a ControlNet's keys (no prefix): each linear or
 * conv weight of the encoder becomes `.up` [out, rank(, 1, 1)] and `.down`
 * [rank, in(, kh, kw)] — except every third, left to the model's own weight —
 * every other encoder bias is left to the model's, the rest is stored whole.
 */
export function controlLoraSpecs(net: Spec[], rank = 4): Spec[] {
  // As Stability's ControlLoraSave writes it: an empty tensor.
  const s: Spec[] = [['lora_controlnet', [0], 'zero']];
  let n = 0;
  let b = 0;
  for (const [k, shape, init] of net) {
    const encoder = LOW_RANK_MODULES.some((p) => k.startsWith(p));
    if (encoder && k.endsWith('.weight') && shape.length >= 2) {
      if (n++ % 3 === 2) continue;
      const m = k.slice(0, -'.weight'.length);
      const r = Math.min(rank, shape[0]!);
      s.push([`${m}.up`, shape.length === 4 ? [shape[0]!, r, 1, 1] : [shape[0]!, r], 'w'], [`${m}.down`, [r, ...shape.slice(1)], 'w']);
      continue;
    }
    if (encoder && k.endsWith('.bias') && b++ % 2 === 1) continue;
    s.push([k, shape, init]);
  }
  return s;
}

/** In float16, as Stability's Control-LoRAs are stored. */
export function writeControlLora(file: string, cfg: FixtureConfig, seed = 23): string[] {
  return writeSpecs(file, controlLoraSpecs(controlNetSpecs(cfg, { prefix: '' })), { dtype: 'F16' }, seed);
}

export function writeXLControlLora(file: string, cfg: XLFixtureConfig, seed = 25): string[] {
  return writeSpecs(file, controlLoraSpecs(xlControlNetSpecs(cfg, { prefix: '' })), {}, seed);
}

/** The reference's Adapter_light for `hintChannels`-channel hints: its fixed widths, four res blocks a level. */
export function lightAdapterSpecs(hintChannels = 3): Spec[] {
  const s: Spec[] = [];
  const conv = (k: string, o: number, i: number, ks: number) => s.push([`${k}.weight`, [o, i, ks, ks], 'w'], [`${k}.bias`, [o], 'b']);
  const widths = [320, 640, 1280, 1280];
  widths.forEach((out, i) => {
    const inC = i === 0 ? hintChannels * 64 : widths[i - 1]!;
    const inter = out / 4;
    conv(`body.${i}.in_conv`, inter, inC, 1);
    for (let j = 0; j < 4; j++) {
      conv(`body.${i}.body.${j}.block1`, inter, inter, 3);
      conv(`body.${i}.body.${j}.block2`, inter, inter, 3);
    }
    conv(`body.${i}.out_conv`, out, inter, 1);
  });
  return s;
}

export function writeLightAdapter(file: string, hintChannels = 3, seed = 27): string[] {
  return writeSpecs(file, lightAdapterSpecs(hintChannels), { dtype: 'F16' }, seed);
}
