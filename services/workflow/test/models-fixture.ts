/**
 * Writes SD1.x-shaped .safetensors checkpoints with weights from a seeded
 * PRNG: tiny ones for tests (a few channels, two levels, two text layers) and,
 * for the bench, the full SD1.5 layout. The keys and the nesting are the
 * reference's (model.diffusion_model.*, cond_stage_model.transformer.text_model.*,
 * first_stage_model.*); the values are noise scaled by 1/√fan_in so that
 * activations stay finite through every layer.
 */
import fs from 'node:fs';

export interface FixtureConfig {
  unet: { ch: number; mult: number[]; resBlocks: number; attnLevels: boolean[]; depth: number; inChannels?: number; contextDim?: number };
  clip: { hidden: number; layers: number; intermediate: number; vocab: number } | null;
  vae: { ch: number; mult: number[]; resBlocks: number; z?: number; encoder?: boolean } | null;
  dtype?: 'F32' | 'F16' | 'BF16';
  /** Round every value as this dtype would store it, then write float32 (the exact float32 twin of an F16/BF16 file). */
  roundAs?: 'F16' | 'BF16';
  /** Extra tensors added verbatim (for hostile variants). */
  seed?: number;
}

export const TINY: FixtureConfig = {
  unet: { ch: 32, mult: [1, 2], resBlocks: 1, attnLevels: [true, true], depth: 1 },
  clip: { hidden: 32, layers: 2, intermediate: 64, vocab: 49408 },
  vae: { ch: 32, mult: [1, 1, 1, 1], resBlocks: 1 },
};

export const SD15: FixtureConfig = {
  unet: { ch: 320, mult: [1, 2, 4, 4], resBlocks: 2, attnLevels: [true, true, true, false], depth: 1 },
  clip: { hidden: 768, layers: 12, intermediate: 3072, vocab: 49408 },
  vae: { ch: 128, mult: [1, 2, 4, 4], resBlocks: 2 },
};

/**
 * The smallest checkpoint the reference's own CheckpointLoaderSimple takes as SD1.5 (models.md §3): its detection
 * needs 320 model channels and SD1.5's CLIP-L and VAE, so only the UNet is cut (one level, one res block): about
 * 233M parameters, 465 MB in fp16.
 */
export const LOADABLE_NAME = 'sd15-233m.safetensors';

export const SD15_LOADABLE: FixtureConfig = {
  unet: { ch: 320, mult: [1], resBlocks: 1, attnLevels: [true], depth: 1 },
  clip: SD15.clip,
  vae: SD15.vae,
  dtype: 'F16',
};

export type Spec = [name: string, shape: number[], init: 'w' | 'one' | 'zero' | 'b' | 'emb'];

export function unetSpecs(c: FixtureConfig['unet'], ctx: number): Spec[] {
  const P = 'model.diffusion_model.';
  const s: Spec[] = [];
  const conv = (k: string, o: number, i: number, ks = 3) => s.push([`${P}${k}.weight`, [o, i, ks, ks], 'w'], [`${P}${k}.bias`, [o], 'b']);
  const lin = (k: string, o: number, i: number, bias = true) => {
    s.push([`${P}${k}.weight`, [o, i], 'w']);
    if (bias) s.push([`${P}${k}.bias`, [o], 'b']);
  };
  const norm = (k: string, n: number) => s.push([`${P}${k}.weight`, [n], 'one'], [`${P}${k}.bias`, [n], 'zero']);
  const emb = c.ch * 4;
  const res = (k: string, i: number, o: number) => {
    norm(`${k}.in_layers.0`, i);
    conv(`${k}.in_layers.2`, o, i);
    lin(`${k}.emb_layers.1`, o, emb);
    norm(`${k}.out_layers.0`, o);
    conv(`${k}.out_layers.3`, o, o);
    if (i !== o) conv(`${k}.skip_connection`, o, i, 1);
  };
  const tr = (k: string, ch: number) => {
    norm(`${k}.norm`, ch);
    conv(`${k}.proj_in`, ch, ch, 1);
    for (let d = 0; d < c.depth; d++) {
      const b = `${k}.transformer_blocks.${d}`;
      for (const a of ['attn1', 'attn2']) {
        lin(`${b}.${a}.to_q`, ch, ch, false);
        lin(`${b}.${a}.to_k`, ch, a === 'attn1' ? ch : ctx, false);
        lin(`${b}.${a}.to_v`, ch, a === 'attn1' ? ch : ctx, false);
        lin(`${b}.${a}.to_out.0`, ch, ch);
      }
      lin(`${b}.ff.net.0.proj`, ch * 8, ch);
      lin(`${b}.ff.net.2`, ch, ch * 4);
      for (const n of ['norm1', 'norm2', 'norm3']) norm(`${b}.${n}`, ch);
    }
    conv(`${k}.proj_out`, ch, ch, 1);
  };
  const inCh = c.inChannels ?? 4;
  lin('time_embed.0', emb, c.ch);
  lin('time_embed.2', emb, emb);
  conv('input_blocks.0.0', c.ch, inCh);
  const skips = [c.ch];
  let ch = c.ch;
  let i = 1;
  c.mult.forEach((m, level) => {
    for (let r = 0; r < c.resBlocks; r++) {
      res(`input_blocks.${i}.0`, ch, m * c.ch);
      ch = m * c.ch;
      if (c.attnLevels[level]) tr(`input_blocks.${i}.1`, ch);
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
  tr('middle_block.1', ch);
  res('middle_block.2', ch, ch);
  let o = 0;
  for (let level = c.mult.length - 1; level >= 0; level--) {
    for (let r = 0; r <= c.resBlocks; r++) {
      const out = c.mult[level]! * c.ch;
      res(`output_blocks.${o}.0`, ch + skips.pop()!, out);
      ch = out;
      let slot = 1;
      if (c.attnLevels[level]) tr(`output_blocks.${o}.${slot++}`, ch);
      if (level !== 0 && r === c.resBlocks) conv(`output_blocks.${o}.${slot}.conv`, ch, ch);
      o++;
    }
  }
  norm('out.0', ch);
  conv('out.2', inCh, ch);
  return s;
}

function clipSpecs(c: NonNullable<FixtureConfig['clip']>): Spec[] {
  const P = 'cond_stage_model.transformer.text_model.';
  const s: Spec[] = [
    [`${P}embeddings.token_embedding.weight`, [c.vocab, c.hidden], 'emb'],
    [`${P}embeddings.position_embedding.weight`, [77, c.hidden], 'emb'],
  ];
  const lin = (k: string, o: number, i: number) => s.push([`${P}${k}.weight`, [o, i], 'w'], [`${P}${k}.bias`, [o], 'b']);
  const norm = (k: string) => s.push([`${P}${k}.weight`, [c.hidden], 'one'], [`${P}${k}.bias`, [c.hidden], 'zero']);
  for (let l = 0; l < c.layers; l++) {
    const k = `encoder.layers.${l}`;
    for (const p of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) lin(`${k}.self_attn.${p}`, c.hidden, c.hidden);
    norm(`${k}.layer_norm1`);
    norm(`${k}.layer_norm2`);
    lin(`${k}.mlp.fc1`, c.intermediate, c.hidden);
    lin(`${k}.mlp.fc2`, c.hidden, c.intermediate);
  }
  norm('final_layer_norm');
  return s;
}

function vaeSpecs(c: NonNullable<FixtureConfig['vae']>): Spec[] {
  const P = 'first_stage_model.';
  const z = c.z ?? 4;
  const s: Spec[] = [];
  const conv = (k: string, o: number, i: number, ks = 3) => s.push([`${P}${k}.weight`, [o, i, ks, ks], 'w'], [`${P}${k}.bias`, [o], 'b']);
  const norm = (k: string, n: number) => s.push([`${P}${k}.weight`, [n], 'one'], [`${P}${k}.bias`, [n], 'zero']);
  const res = (k: string, i: number, o: number) => {
    norm(`${k}.norm1`, i);
    conv(`${k}.conv1`, o, i);
    norm(`${k}.norm2`, o);
    conv(`${k}.conv2`, o, o);
    if (i !== o) conv(`${k}.nin_shortcut`, o, i, 1);
  };
  const mid = (k: string, ch: number) => {
    res(`${k}.block_1`, ch, ch);
    norm(`${k}.attn_1.norm`, ch);
    for (const p of ['q', 'k', 'v', 'proj_out']) conv(`${k}.attn_1.${p}`, ch, ch, 1);
    res(`${k}.block_2`, ch, ch);
  };
  const top = c.ch * c.mult[c.mult.length - 1]!;
  if (c.encoder !== false) {
    conv('encoder.conv_in', c.ch, 3);
    let ch = c.ch;
    c.mult.forEach((m, l) => {
      for (let b = 0; b < c.resBlocks; b++) {
        res(`encoder.down.${l}.block.${b}`, ch, m * c.ch);
        ch = m * c.ch;
      }
      if (l !== c.mult.length - 1) conv(`encoder.down.${l}.downsample.conv`, ch, ch);
    });
    mid('encoder.mid', ch);
    norm('encoder.norm_out', ch);
    conv('encoder.conv_out', 2 * z, ch);
    conv('quant_conv', 2 * z, 2 * z, 1);
  }
  conv('post_quant_conv', z, z, 1);
  conv('decoder.conv_in', top, z);
  mid('decoder.mid', top);
  let ch = top;
  for (let l = c.mult.length - 1; l >= 0; l--) {
    for (let b = 0; b <= c.resBlocks; b++) {
      res(`decoder.up.${l}.block.${b}`, ch, c.mult[l]! * c.ch);
      ch = c.mult[l]! * c.ch;
    }
    if (l !== 0) conv(`decoder.up.${l}.upsample.conv`, ch, ch);
  }
  norm('decoder.norm_out', ch);
  conv('decoder.conv_out', 3, ch);
  return s;
}

export function fixtureSpecs(cfg: FixtureConfig): Spec[] {
  const ctx = cfg.unet.contextDim ?? cfg.clip?.hidden ?? 768;
  return [...unetSpecs(cfg.unet, ctx), ...(cfg.clip ? clipSpecs(cfg.clip) : []), ...(cfg.vae ? vaeSpecs(cfg.vae) : [])];
}

/** xorshift128+ → uniform [0, 1); deterministic for a seed. */
function prng(seed: number): () => number {
  let a = BigInt(seed) * 0x9e3779b97f4a7c15n + 1n;
  let b = a ^ 0xdeadbeefcafebaben;
  const M = (1n << 64n) - 1n;
  return () => {
    let s1 = a;
    const s0 = b;
    a = s0;
    s1 = (s1 ^ (s1 << 23n)) & M;
    b = s1 ^ s0 ^ (s1 >> 17n) ^ (s0 >> 26n);
    return Number(((b + s0) & M) >> 11n) / 2 ** 53;
  };
}

/** float32 bits → float16 bits (round to nearest; values here are far from the limits). */
function floatToHalf(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const e = ((x >>> 23) & 0xff) - 127 + 15;
  const m = x & 0x7fffff;
  if (e <= 0) return sign | (e < -10 ? 0 : ((m | 0x800000) >> (1 - e + 13)));
  if (e >= 31) return sign | 0x7c00;
  return sign | (e << 10) | Math.round(m / 8192);
}

/** float16 bits → float32 bits (normal numbers and zero; the fixtures hold nothing else). */
function halfToFloatBits(h: number): number {
  const sign = (h & 0x8000) << 16;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) {
    if (m === 0) return sign >>> 0;
    const v = new Float32Array([(m / 1024) * 2 ** -14 * (sign ? -1 : 1)]);
    return new Uint32Array(v.buffer)[0]!;
  }
  return (sign | ((e - 15 + 127) << 23) | (m << 13)) >>> 0;
}

/**
 * Writes the checkpoint; returns the tensor names. Values come from a fast
 * 32-bit generator per tensor (seeded from `seed` and the tensor's index) so
 * the full SD1.5 layout writes in seconds.
 */
export function writeFixture(file: string, cfg: FixtureConfig, seed = cfg.seed ?? 1): string[] {
  return writeSpecs(file, fixtureSpecs(cfg), cfg, seed);
}

/** Writes tensors of any layout (`specs`) as writeFixture does. */
export function writeSpecs(file: string, specs: Spec[], cfg: Pick<FixtureConfig, 'dtype' | 'roundAs'> = {}, seed = 1): string[] {
  const dtype = cfg.dtype ?? 'F32';
  const size = dtype === 'F32' ? 4 : 2;
  const header: Record<string, unknown> = { __metadata__: { format: 'pt', generator: 'svc-workflow test fixture' } };
  let off = 0;
  for (const [name, shape] of specs) {
    const bytes = shape.reduce((a, b) => a * b, 1) * size;
    header[name] = { dtype, shape, data_offsets: [off, off + bytes] };
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
    const rand = prng(seed);
    specs.forEach(([, shape, init], index) => {
      const n = shape.reduce((a, b) => a * b, 1);
      const fanIn = shape.length > 1 ? shape.slice(1).reduce((a, b) => a * b, 1) : 1;
      const scale = init === 'w' ? 1 / Math.sqrt(fanIn) : init === 'emb' ? 0.5 : 0.05;
      // mulberry32 per tensor: fast enough for ~10⁹ values.
      let st = (Math.floor(rand() * 2 ** 32) ^ index) >>> 0;
      const next = () => {
        st = (st + 0x6d2b79f5) >>> 0;
        let t = st;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
      };
      const chunk = 1 << 20;
      const vals = new Float32Array(Math.min(chunk, n));
      const bits = new Uint32Array(vals.buffer);
      for (let at = 0; at < n; at += chunk) {
        const m = Math.min(chunk, n - at);
        for (let i = 0; i < m; i++) vals[i] = init === 'one' ? 1 + (next() - 0.5) * 0.1 : init === 'zero' ? (next() - 0.5) * 0.02 : (next() * 2 - 1) * scale;
        if (cfg.roundAs) for (let i = 0; i < m; i++) bits[i] = cfg.roundAs === 'BF16' ? bits[i]! & 0xffff0000 : halfToFloatBits(floatToHalf(bits[i]!));
        if (dtype === 'F32') {
          fs.writeSync(fd, new Uint8Array(vals.buffer, 0, m * 4));
          continue;
        }
        const half = new Uint16Array(m);
        for (let i = 0; i < m; i++) half[i] = dtype === 'F16' ? floatToHalf(bits[i]!) : bits[i]! >>> 16;
        fs.writeSync(fd, new Uint8Array(half.buffer));
      }
    });
  } finally {
    fs.closeSync(fd);
  }
  return specs.map((s) => s[0]);
}
