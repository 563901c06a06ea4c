/**
 * Writes SD2.x-, SDXL- and SDXL-refiner-shaped .safetensors checkpoints with
 * weights from a seeded PRNG, in the reference's key layout: UNet with Linear
 * transformer projections, 64-channel heads and (SDXL) label_emb under
 * model.diffusion_model.*; OpenCLIP text towers in open_clip's layout
 * (cond_stage_model.model.* for SD2, conditioner.embedders.1.model.* beside
 * CLIP-L's conditioner.embedders.0.transformer.text_model.* for SDXL,
 * conditioner.embedders.0.model.* for the refiner); the SD VAE under
 * first_stage_model.*. Widths are tiny (64–128 channels, three text layers)
 * so tests run in seconds; nothing is committed.
 */
import fs from 'node:fs';
import { fixtureSpecs } from './models-fixture.ts';

type Init = 'w' | 'one' | 'zero' | 'emb' | 'spread';
type Spec = [name: string, shape: number[], init: Init];

export interface XLFixtureConfig {
  family: 'sd2' | 'sdxl' | 'sdxl_refiner';
  unet: { ch: number; mult: number[]; resBlocks: number; depth: number[]; midDepth: number; inChannels?: number };
  /** Text towers: l (CLIP-L, transformers layout), g or h (OpenCLIP layout with a square text_projection). */
  text: { l?: { hidden: number; layers: number; intermediate: number }; open: { hidden: number; layers: number; intermediate: number } };
  vae: boolean;
  /** SD2: give output_blocks.11's first norm1 bias a wide spread, which the reference reads as v-prediction. */
  vpredSpread?: boolean;
  /** SDXL: write the reference's `v_pred` marker key. */
  vpredKey?: boolean;
  seed?: number;
}

const EMB_EXTRA = { sd2: 0, sdxl: 6 * 256, sdxl_refiner: 5 * 256 };

export const SD2_TINY: XLFixtureConfig = {
  family: 'sd2',
  unet: { ch: 64, mult: [1, 1, 1, 1], resBlocks: 2, depth: [1, 0, 0, 0], midDepth: 1 },
  text: { open: { hidden: 64, layers: 3, intermediate: 128 } },
  vae: true,
};

export const SDXL_TINY: XLFixtureConfig = {
  family: 'sdxl',
  unet: { ch: 64, mult: [1, 2], resBlocks: 1, depth: [0, 2], midDepth: 1 },
  text: { l: { hidden: 64, layers: 3, intermediate: 128 }, open: { hidden: 128, layers: 3, intermediate: 256 } },
  vae: true,
};

export const REFINER_TINY: XLFixtureConfig = {
  family: 'sdxl_refiner',
  unet: { ch: 64, mult: [1, 2], resBlocks: 1, depth: [0, 1], midDepth: 1 },
  text: { open: { hidden: 128, layers: 3, intermediate: 256 } },
  vae: true,
};

export function openPrefix(family: XLFixtureConfig['family']): string {
  return family === 'sd2' ? 'cond_stage_model.model.' : family === 'sdxl' ? 'conditioner.embedders.1.model.' : 'conditioner.embedders.0.model.';
}

export function xlSpecs(cfg: XLFixtureConfig): Spec[] {
  const P = 'model.diffusion_model.';
  const s: Spec[] = [];
  const c = cfg.unet;
  const contextDim = cfg.text.open.hidden + (cfg.text.l?.hidden ?? 0);
  const adm = cfg.family === 'sd2' ? 0 : cfg.text.open.hidden + EMB_EXTRA[cfg.family];
  const conv = (k: string, o: number, i: number, ks = 3) => s.push([`${P}${k}.weight`, [o, i, ks, ks], 'w'], [`${P}${k}.bias`, [o], 'zero']);
  const lin = (k: string, o: number, i: number, bias = true) => {
    s.push([`${P}${k}.weight`, [o, i], 'w']);
    if (bias) s.push([`${P}${k}.bias`, [o], 'zero']);
  };
  const norm = (k: string, n: number, init: Init = 'zero') => s.push([`${P}${k}.weight`, [n], 'one'], [`${P}${k}.bias`, [n], init]);
  const emb = c.ch * 4;
  const res = (k: string, i: number, o: number) => {
    norm(`${k}.in_layers.0`, i);
    conv(`${k}.in_layers.2`, o, i);
    lin(`${k}.emb_layers.1`, o, emb);
    norm(`${k}.out_layers.0`, o);
    conv(`${k}.out_layers.3`, o, o);
    if (i !== o) conv(`${k}.skip_connection`, o, i, 1);
  };
  const tr = (k: string, ch: number, depth: number) => {
    norm(`${k}.norm`, ch);
    lin(`${k}.proj_in`, ch, ch);
    for (let d = 0; d < depth; d++) {
      const b = `${k}.transformer_blocks.${d}`;
      for (const a of ['attn1', 'attn2']) {
        lin(`${b}.${a}.to_q`, ch, ch, false);
        lin(`${b}.${a}.to_k`, ch, a === 'attn1' ? ch : contextDim, false);
        lin(`${b}.${a}.to_v`, ch, a === 'attn1' ? ch : contextDim, false);
        lin(`${b}.${a}.to_out.0`, ch, ch);
      }
      lin(`${b}.ff.net.0.proj`, ch * 8, ch);
      lin(`${b}.ff.net.2`, ch, ch * 4);
      const probe = `${b}.norm1` === 'output_blocks.11.1.transformer_blocks.0.norm1';
      norm(`${b}.norm1`, ch, probe && cfg.vpredSpread ? 'spread' : 'zero');
      norm(`${b}.norm2`, ch);
      norm(`${b}.norm3`, ch);
    }
    lin(`${k}.proj_out`, ch, ch);
  };
  const inCh = c.inChannels ?? 4;
  lin('time_embed.0', emb, c.ch);
  lin('time_embed.2', emb, emb);
  if (adm) {
    lin('label_emb.0.0', emb, adm);
    lin('label_emb.0.2', emb, emb);
  }
  conv('input_blocks.0.0', c.ch, inCh);
  const skips = [c.ch];
  let ch = c.ch;
  let i = 1;
  c.mult.forEach((m, level) => {
    for (let r = 0; r < c.resBlocks; r++) {
      res(`input_blocks.${i}.0`, ch, m * c.ch);
      ch = m * c.ch;
      if (c.depth[level]) tr(`input_blocks.${i}.1`, ch, c.depth[level]!);
      skips.push(ch);
      i++;
    }
    if (level !== c.mult.length - 1) {
      conv(`input_blocks.${i}.0.op`, ch, ch);
      skips.push(ch);
      i++;
    }
  });
  res('middle_block.0', ch, ch);
  tr('middle_block.1', ch, c.midDepth);
  res('middle_block.2', ch, ch);
  let o = 0;
  for (let level = c.mult.length - 1; level >= 0; level--) {
    for (let r = 0; r <= c.resBlocks; r++) {
      const out = c.mult[level]! * c.ch;
      res(`output_blocks.${o}.0`, ch + skips.pop()!, out);
      ch = out;
      let slot = 1;
      if (c.depth[level]) tr(`output_blocks.${o}.${slot++}`, ch, c.depth[level]!);
      if (level !== 0 && r === c.resBlocks) conv(`output_blocks.${o}.${slot}.conv`, ch, ch);
      o++;
    }
  }
  norm('out.0', ch);
  conv('out.2', inCh === 9 ? 4 : inCh, ch);

  // CLIP-L (SDXL): transformers' layout.
  if (cfg.text.l) {
    const L = 'conditioner.embedders.0.transformer.text_model.';
    const t = cfg.text.l;
    s.push([`${L}embeddings.token_embedding.weight`, [49408, t.hidden], 'emb'], [`${L}embeddings.position_embedding.weight`, [77, t.hidden], 'emb']);
    const l2 = (k: string, out: number, inp: number) => s.push([`${L}${k}.weight`, [out, inp], 'w'], [`${L}${k}.bias`, [out], 'zero']);
    const n2 = (k: string) => s.push([`${L}${k}.weight`, [t.hidden], 'one'], [`${L}${k}.bias`, [t.hidden], 'zero']);
    for (let l = 0; l < t.layers; l++) {
      const k = `encoder.layers.${l}`;
      for (const p of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) l2(`${k}.self_attn.${p}`, t.hidden, t.hidden);
      n2(`${k}.layer_norm1`);
      n2(`${k}.layer_norm2`);
      l2(`${k}.mlp.fc1`, t.intermediate, t.hidden);
      l2(`${k}.mlp.fc2`, t.hidden, t.intermediate);
    }
    n2('final_layer_norm');
  }
  // OpenCLIP (H for SD2, G for SDXL and the refiner): open_clip's layout.
  const O = openPrefix(cfg.family);
  const t = cfg.text.open;
  s.push([`${O}token_embedding.weight`, [49408, t.hidden], 'emb'], [`${O}positional_embedding`, [77, t.hidden], 'emb']);
  const o2 = (k: string, out: number, inp: number) => s.push([`${O}${k}.weight`, [out, inp], 'w'], [`${O}${k}.bias`, [out], 'zero']);
  const on = (k: string) => s.push([`${O}${k}.weight`, [t.hidden], 'one'], [`${O}${k}.bias`, [t.hidden], 'zero']);
  for (let l = 0; l < t.layers; l++) {
    const k = `transformer.resblocks.${l}`;
    s.push([`${O}${k}.attn.in_proj_weight`, [3 * t.hidden, t.hidden], 'w'], [`${O}${k}.attn.in_proj_bias`, [3 * t.hidden], 'zero']);
    o2(`${k}.attn.out_proj`, t.hidden, t.hidden);
    on(`${k}.ln_1`);
    on(`${k}.ln_2`);
    o2(`${k}.mlp.c_fc`, t.intermediate, t.hidden);
    o2(`${k}.mlp.c_proj`, t.hidden, t.intermediate);
  }
  on('ln_final');
  // [width, proj], applied as x @ text_projection; square as the reference's loader needs.
  s.push([`${O}text_projection`, [t.hidden, t.hidden], 'w'], [`${O}logit_scale`, [], 'one']);
  if (cfg.vae) {
    for (const [name, shape, init] of fixtureSpecs({ unet: { ch: 32, mult: [1], resBlocks: 1, attnLevels: [true], depth: 1 }, clip: null, vae: { ch: 32, mult: [1, 1, 1, 1], resBlocks: 1 } })) {
      if (name.startsWith('first_stage_model.')) s.push([name, shape, init === 'b' ? 'zero' : (init as Init)]);
    }
  }
  if (cfg.vpredKey) s.push(['v_pred', [0], 'zero']);
  return s;
}

/** Writes the checkpoint (float32); returns the tensor names. */
export function writeXLFixture(file: string, cfg: XLFixtureConfig): string[] {
  const specs = xlSpecs(cfg);
  const header: Record<string, unknown> = { __metadata__: { format: 'pt', generator: 'svc-workflow test fixture (xl)' } };
  let off = 0;
  for (const [name, shape] of specs) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 4;
    header[name] = { dtype: 'F32', shape, data_offsets: [off, off + bytes] };
    off += bytes;
  }
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const fd = fs.openSync(file, 'w');
  try {
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.length));
    fs.writeSync(fd, len);
    fs.writeSync(fd, json);
    const seed = Math.imul(cfg.seed ?? 7, 0x9e3779b1) >>> 0;
    specs.forEach(([, shape, init], index) => {
      const n = shape.reduce((a, b) => a * b, 1);
      const fanIn = shape.length > 1 ? shape.slice(1).reduce((a, b) => a * b, 1) : 1;
      const scale = init === 'w' ? 1 / Math.sqrt(fanIn) : init === 'emb' ? 0.5 : init === 'spread' ? 0.3 : 0.05;
      // mulberry32, one stream per tensor.
      let st = (seed ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0;
      const next = () => {
        st = (st + 0x6d2b79f5) >>> 0;
        let x = st;
        x = Math.imul(x ^ (x >>> 15), x | 1);
        x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
        return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
      };
      const vals = new Float32Array(n);
      for (let k = 0; k < n; k++) vals[k] = init === 'one' ? 1 + (next() - 0.5) * 0.1 : init === 'zero' ? (next() - 0.5) * 0.02 : (next() * 2 - 1) * scale;
      fs.writeSync(fd, new Uint8Array(vals.buffer));
    });
  } finally {
    fs.closeSync(fd);
  }
  return specs.map((x) => x[0]);
}

/** Writes float32 tensors as a .safetensors file. */
export function writeTensors(file: string, tensors: Map<string, { shape: number[]; data: Float32Array }>): void {
  const header: Record<string, unknown> = {};
  let off = 0;
  for (const [name, t] of tensors) {
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [off, off + t.data.length * 4] };
    off += t.data.length * 4;
  }
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(file, Buffer.concat([len, json, ...[...tensors.values()].map((t) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength))]));
}

/**
 * The text encoders of an SDXL fixture as files of their own, as users get
 * them for DualCLIPLoader: CLIP-L in transformers' layout, and OpenCLIP-G in
 * transformers' layout (q/k/v split from in_proj, text_projection.weight
 * transposed) or left in open_clip's.
 */
export async function writeSdxlTextEncoders(checkpoint: string, lPath: string, gPath: string, gLayout: 'hf' | 'openclip'): Promise<void> {
  const { SafetensorsFile } = await import('../src/models/safetensors.ts');
  const f = await SafetensorsFile.open(checkpoint);
  const read = async (k: string) => ({ shape: [...f.info(k).shape], data: await f.readFloat32(k) });
  const L = 'conditioner.embedders.0.transformer.';
  const G = 'conditioner.embedders.1.model.';
  const l = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const k of f.tensors.keys()) if (k.startsWith(L)) l.set(k.slice(L.length), await read(k));
  writeTensors(lPath, l);
  const g = new Map<string, { shape: number[]; data: Float32Array }>();
  if (gLayout === 'openclip') {
    for (const k of f.tensors.keys()) if (k.startsWith(G)) g.set(k.slice(G.length), await read(k));
  } else {
    const T = 'text_model.';
    const rename: Record<string, string> = { ln_1: 'layer_norm1', ln_2: 'layer_norm2', 'mlp.c_fc': 'mlp.fc1', 'mlp.c_proj': 'mlp.fc2', 'attn.out_proj': 'self_attn.out_proj' };
    for (const k of f.tensors.keys()) {
      if (!k.startsWith(G)) continue;
      const key = k.slice(G.length);
      const t = await read(k);
      if (key === 'token_embedding.weight') g.set(`${T}embeddings.token_embedding.weight`, t);
      else if (key === 'positional_embedding') g.set(`${T}embeddings.position_embedding.weight`, t);
      else if (key.startsWith('ln_final.')) g.set(`${T}final_layer_norm.${key.slice('ln_final.'.length)}`, t);
      else if (key === 'text_projection') {
        const [d, p] = t.shape as [number, number];
        const tr = new Float32Array(d * p);
        for (let i = 0; i < d; i++) for (let j = 0; j < p; j++) tr[j * d + i] = t.data[i * p + j]!;
        g.set('text_projection.weight', { shape: [p, d], data: tr });
      } else if (key === 'logit_scale') continue;
      else {
        const m = /^transformer\.resblocks\.(\d+)\.(.+)\.(weight|bias)$/.exec(key.replace('in_proj_weight', 'in_proj.weight').replace('in_proj_bias', 'in_proj.bias'));
        if (!m) throw new Error(`unexpected key ${key}`);
        const [, n, mod, kind] = m;
        if (mod === 'attn.in_proj') {
          const d = t.shape[t.shape.length - 1]!;
          const rows = t.shape[0]! / 3;
          ['q_proj', 'k_proj', 'v_proj'].forEach((q, i) => {
            const size = kind === 'weight' ? rows * d : rows;
            g.set(`${T}encoder.layers.${n}.self_attn.${q}.${kind}`, { shape: kind === 'weight' ? [rows, d] : [rows], data: t.data.slice(i * size, (i + 1) * size) });
          });
        } else g.set(`${T}encoder.layers.${n}.${rename[mod!]}.${kind}`, t);
      }
    }
  }
  writeTensors(gPath, g);
}
