/**
 * Generated ControlNet and T2I adapter files for the control tests, in the
 * layouts the reference reads: a ControlNet is the UNet's encoder keys under
 * `control_model.` (or none) plus input_hint_block, zero_convs and
 * middle_block_out; a difference ControlNet carries a `difference` key; a T2I
 * adapter is conv_in and body.N (two blocks a level). Values as the
 * checkpoint fixtures' (noise scaled by 1/√fan_in).
 */
import { unetSpecs, writeSpecs, type FixtureConfig, type Spec } from './models-fixture.ts';
import { xlSpecs, type XLFixtureConfig } from './models-fixture-xl.ts';

/** An SD1.5-shaped UNet at tiny widths: four levels of two res blocks, so a T2I adapter's features meet input blocks 2, 5, 8 and 11 as at full size. */
export const CONTROL_BASE: FixtureConfig = {
  unet: { ch: 32, mult: [1, 2, 4, 4], resBlocks: 2, attnLevels: [true, true, true, false], depth: 1 },
  clip: { hidden: 32, layers: 2, intermediate: 64, vocab: 49408 },
  vae: { ch: 32, mult: [1, 1, 1, 1], resBlocks: 1 },
};

/**
 * For the reference's example workflows at their own sizes (512² and up): attention only at the half-size level,
 * so a 64×64 latent's steps take a second, not many.
 */
export const EXAMPLE_TINY: FixtureConfig = {
  unet: { ch: 32, mult: [1, 2], resBlocks: 1, attnLevels: [false, true], depth: 1 },
  clip: { hidden: 32, layers: 2, intermediate: 64, vocab: 49408 },
  vae: { ch: 32, mult: [1, 1, 1, 1], resBlocks: 1 },
};

/** Channels of every input block's output (the zero convs' widths). */
function blockChannels(c: { ch: number; mult: number[]; resBlocks: number }): number[] {
  const out = [c.ch];
  c.mult.forEach((m, level) => {
    for (let r = 0; r < c.resBlocks; r++) out.push(m * c.ch);
    if (level !== c.mult.length - 1) out.push(m * c.ch);
  });
  return out;
}

export function controlNetSpecs(cfg: FixtureConfig, opts: { prefix?: string; hintChannels?: number; difference?: boolean } = {}): Spec[] {
  const ctx = cfg.unet.contextDim ?? cfg.clip?.hidden ?? 768;
  return controlFrom(unetSpecs(cfg.unet, ctx), cfg.unet, opts);
}

/** An SDXL (or SD2.x) ControlNet: the encoder of the XL fixture's UNet, label_emb included. */
export function xlControlNetSpecs(cfg: XLFixtureConfig, opts: { prefix?: string; hintChannels?: number } = {}): Spec[] {
  return controlFrom(xlSpecs(cfg) as Spec[], cfg.unet, opts);
}

export function writeXLControlNet(file: string, cfg: XLFixtureConfig, seed = 11): string[] {
  return writeSpecs(file, xlControlNetSpecs(cfg), {}, seed);
}

/** A UNet's encoder keys (under `prefix`) and a ControlNet's own parts for it. */
function controlFrom(unet: Spec[], u: { ch: number; mult: number[]; resBlocks: number }, opts: { prefix?: string; hintChannels?: number; difference?: boolean }): Spec[] {
  const P = opts.prefix ?? 'control_model.';
  const keep = ['time_embed.', 'label_emb.', 'input_blocks.', 'middle_block.'];
  const s: Spec[] = unet
    .filter(([k]) => keep.some((p) => k.startsWith(`model.diffusion_model.${p}`)))
    .map(([k, shape, init]) => [P + k.slice('model.diffusion_model.'.length), shape, init]);
  const conv = (k: string, o: number, i: number, ks = 3) => s.push([`${P}${k}.weight`, [o, i, ks, ks], 'w'], [`${P}${k}.bias`, [o], 'b']);
  const widths = [opts.hintChannels ?? 3, 16, 16, 32, 32, 96, 96, 256, u.ch];
  for (let i = 0; i < 8; i++) conv(`input_hint_block.${i * 2}`, widths[i + 1]!, widths[i]!);
  blockChannels(u).forEach((ch, i) => conv(`zero_convs.${i}.0`, ch, ch, 1));
  const mid = u.mult[u.mult.length - 1]! * u.ch;
  conv('middle_block_out.0', mid, mid, 1);
  if (opts.difference) s.push(['difference', [1], 'zero']);
  return s;
}

export function writeControlNet(file: string, cfg: FixtureConfig, opts: { prefix?: string; hintChannels?: number; difference?: boolean } = {}, seed = 7): string[] {
  return writeSpecs(file, controlNetSpecs(cfg, opts), {}, seed);
}

/** A T2I adapter for `cfg`'s UNet (four levels): hint channels × 64 in, widths ch, 2ch, 4ch, 4ch; average-pool downsampling unless useConv. */
export function t2iSpecs(cfg: FixtureConfig, opts: { hintChannels?: number; ksize?: number; useConv?: boolean } = {}): Spec[] {
  const s: Spec[] = [];
  const conv = (k: string, o: number, i: number, ks: number) => s.push([`${k}.weight`, [o, i, ks, ks], 'w'], [`${k}.bias`, [o], 'b']);
  const c = cfg.unet.ch;
  const widths = [c, 2 * c, 4 * c, 4 * c];
  const ks = opts.ksize ?? 1;
  conv('conv_in', c, (opts.hintChannels ?? 3) * 64, 3);
  for (let level = 0; level < 4; level++)
    for (let j = 0; j < 2; j++) {
      const k = `body.${level * 2 + j}`;
      const inC = j === 0 && level > 0 ? widths[level - 1]! : widths[level]!;
      const out = widths[level]!;
      if (j === 0 && level > 0 && opts.useConv) conv(`${k}.down_opt.op`, inC, inC, 3);
      if (inC !== out) conv(`${k}.in_conv`, out, inC, ks);
      conv(`${k}.block1`, out, out, 3);
      conv(`${k}.block2`, out, out, ks);
    }
  return s;
}

export function writeT2IAdapter(file: string, cfg: FixtureConfig, opts: { hintChannels?: number; ksize?: number; useConv?: boolean } = {}, seed = 9): string[] {
  return writeSpecs(file, t2iSpecs(cfg, opts), {}, seed);
}

const RESNET_TO_DIFFUSERS: Record<string, string> = {
  'in_layers.0': 'norm1',
  'in_layers.2': 'conv1',
  'emb_layers.1': 'time_emb_proj',
  'out_layers.0': 'norm2',
  'out_layers.3': 'conv2',
  skip_connection: 'conv_shortcut',
};

/** A single-file ControlNet key (no prefix) as diffusers names it, for `cfg`'s UNet (the same number of res blocks on every level). */
export function diffusersName(k: string, cfg: FixtureConfig): string {
  const R = cfg.unet.resBlocks;
  const resnet = (rest: string) => {
    for (const [from, to] of Object.entries(RESNET_TO_DIFFUSERS)) if (rest.startsWith(`${from}.`)) return `${to}.${rest.slice(from.length + 1)}`;
    throw new Error(`no diffusers name for ${rest}`);
  };
  const simple: [string, string][] = [
    ['input_blocks.0.0.', 'conv_in.'],
    ['time_embed.0.', 'time_embedding.linear_1.'],
    ['time_embed.2.', 'time_embedding.linear_2.'],
    ['label_emb.0.0.', 'add_embedding.linear_1.'],
    ['label_emb.0.2.', 'add_embedding.linear_2.'],
    ['middle_block_out.0.', 'controlnet_mid_block.'],
    ['input_hint_block.0.', 'controlnet_cond_embedding.conv_in.'],
    ['input_hint_block.14.', 'controlnet_cond_embedding.conv_out.'],
    ['middle_block.1.', 'mid_block.attentions.0.'],
  ];
  for (const [from, to] of simple) if (k.startsWith(from)) return to + k.slice(from.length);
  let m = /^input_hint_block\.(\d+)\.(.*)$/.exec(k);
  if (m) return `controlnet_cond_embedding.blocks.${Number(m[1]) / 2 - 1}.${m[2]}`;
  m = /^zero_convs\.(\d+)\.0\.(.*)$/.exec(k);
  if (m) return `controlnet_down_blocks.${m[1]}.${m[2]}`;
  m = /^middle_block\.([02])\.(.*)$/.exec(k);
  if (m) return `mid_block.resnets.${m[1] === '0' ? 0 : 1}.${resnet(m[2]!)}`;
  m = /^input_blocks\.(\d+)\.([01])\.(.*)$/.exec(k);
  if (m) {
    const n = Number(m[1]) - 1;
    const [level, i] = [Math.floor(n / (R + 1)), n % (R + 1)];
    if (i === R) return `down_blocks.${level}.downsamplers.0.conv.${m[3]!.replace(/^op\./, '')}`;
    return m[2] === '0' ? `down_blocks.${level}.resnets.${i}.${resnet(m[3]!)}` : `down_blocks.${level}.attentions.${i}.${m[3]}`;
  }
  throw new Error(`no diffusers name for ${k}`);
}

/** The same ControlNet as writeControlNet(…, { prefix: '' }, seed) writes, under diffusers' names (the same values in the same order). */
export function writeDiffusersControlNet(file: string, cfg: FixtureConfig, seed = 7): string[] {
  return writeSpecs(file, controlNetSpecs(cfg, { prefix: '' }).map(([k, shape, init]) => [diffusersName(k, cfg), shape, init]), {}, seed);
}
