import fs from 'node:fs';

/**
 * A tiny ESRGAN (RRDBNet ×4: 8 features, 2 blocks, growth 4) as safetensors,
 * in the BasicSR layout or the original ESRGAN one, values from a formula;
 * bench/workflow/models-reference-esrgan.py reads the file for the reference
 * values.
 */
export const ESRGAN_TINY = { features: 8, blocks: 2, growth: 4, channels: 3 };

type Spec = [name: string, shape: number[]];

function specs(layout: 'new' | 'old', inChannels = ESRGAN_TINY.channels, gc = ESRGAN_TINY.growth, size: { features: number; blocks: number } = ESRGAN_TINY): Spec[] {
  const { features: nf, blocks: nb } = size;
  const c = ESRGAN_TINY.channels;
  const conv = (name: string, o: number, i: number): Spec[] => [
    [`${name}.weight`, [o, i, 3, 3]],
    [`${name}.bias`, [o]],
  ];
  const rdb = (b: number, r: number, k: number) => (layout === 'new' ? `body.${b}.rdb${r}.conv${k}` : `model.1.sub.${b}.RDB${r}.conv${k}.0`);
  const out: Spec[] = [...conv(layout === 'new' ? 'conv_first' : 'model.0', nf, inChannels)];
  for (let b = 0; b < nb; b++) for (let r = 1; r <= 3; r++) for (let k = 1; k <= 5; k++) out.push(...conv(rdb(b, r, k), k === 5 ? nf : gc, nf + (k - 1) * gc));
  const names = layout === 'new' ? ['conv_body', 'conv_up1', 'conv_up2', 'conv_hr'] : [`model.1.sub.${nb}`, 'model.3', 'model.6', 'model.8'];
  for (const n of names) out.push(...conv(n, nf, nf));
  out.push(...conv(layout === 'new' ? 'conv_last' : 'model.10', c, nf));
  return out;
}

/** The i-th value of the t-th tensor (the same order in both layouts), rounded to float32 when written. */
export function fixtureValue(t: number, i: number, fanIn: number, bias: boolean, last: boolean): number {
  const u = ((i * 7919 + t * 104729) % 10007) / 10007 - 0.5;
  // Gains that keep the output spread over [0, 1] (the last conv's bias centres it), so clamping and blending both show.
  if (bias) return last ? 0.5 + u * 0.5 : u * 0.5;
  return (u * 5) / Math.sqrt(fanIn);
}

/** RRDBNet ×4 in either layout; `inChannels` 12 or 48 makes Real-ESRGAN's pixel-unshuffled ×2 or ×1 model; `size` the published one's 64 features and 23 blocks (the bench). */
export function writeEsrgan(file: string, layout: 'new' | 'old' = 'new', inChannels = ESRGAN_TINY.channels, growth = ESRGAN_TINY.growth, size?: { features: number; blocks: number }): void {
  writeSpecs(file, specs(layout, inChannels, growth, size));
}

/** A tiny SRVGGNetCompact (Real-ESRGAN's compact model): conv, PReLU, `convs` × (conv, PReLU), conv to C·s², pixel shuffle. */
export function writeCompact(file: string, opts: { features: number; convs: number; scale: number; channels?: number }): void {
  const c = opts.channels ?? 3;
  const nf = opts.features;
  const list: Spec[] = [];
  let i = 0;
  const conv = (o: number, inC: number) => {
    list.push([`body.${i}.weight`, [o, inC, 3, 3]], [`body.${i}.bias`, [o]]);
    i++;
  };
  conv(nf, c);
  list.push([`body.${i++}.weight`, [nf]]);
  for (let k = 0; k < opts.convs; k++) {
    conv(nf, nf);
    list.push([`body.${i++}.weight`, [nf]]);
  }
  conv(c * opts.scale * opts.scale, nf);
  writeSpecs(file, list);
}

function writeSpecs(file: string, list: Spec[]): void {
  const header: Record<string, unknown> = {};
  let off = 0;
  for (const [name, shape] of list) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 4;
    header[name] = { dtype: 'F32', shape, data_offsets: [off, off + bytes] };
    off += bytes;
  }
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const parts: Buffer[] = [len, json];
  list.forEach(([name, shape], t) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const fanIn = shape.slice(1).reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    // A 1-d weight is a PReLU's slopes: small and positive, as trained ones are.
    if (shape.length === 1 && !name.endsWith('.bias')) for (let k = 0; k < n; k++) data[k] = 0.1 + 0.2 * (((k * 7919 + t * 104729) % 10007) / 10007);
    else for (let k = 0; k < n; k++) data[k] = fixtureValue(t, k, fanIn, name.endsWith('.bias'), t >= list.length - 2);
    parts.push(Buffer.from(data.buffer));
  });
  fs.writeFileSync(file, Buffer.concat(parts));
}

/** The test image: RGB bytes of a w×h pattern (the reference script draws the same). */
export function patternPixel(x: number, y: number, c: number): number {
  return (x * 37 + y * 11 + c * 71 + ((x * y) % 13) * 5) % 256;
}

/** The generated models the compact/unshuffle test runs, and the image size each gets (two tiles wide, odd sizes for the reflect padding). */
export const UPSCALE_CASES = [
  { name: 'compact_x4', kind: 'compact', features: 8, convs: 3, scale: 4, width: 560, height: 21 },
  { name: 'compact_x2', kind: 'compact', features: 6, convs: 2, scale: 2, width: 300, height: 17 },
  // spandrel reads an RRDBNet's growth as 32 whatever the file holds.
  { name: 'rrdb_x2_unshuffle', kind: 'unshuffle', inChannels: 12, growth: 32, width: 561, height: 25 },
  { name: 'rrdb_x1_unshuffle', kind: 'unshuffle', inChannels: 48, growth: 32, width: 537, height: 19 },
] as const;

export function writeUpscaleCase(file: string, c: (typeof UPSCALE_CASES)[number]): void {
  if (c.kind === 'compact') writeCompact(file, { features: c.features, convs: c.convs, scale: c.scale });
  else writeEsrgan(file, 'new', c.inChannels, c.growth);
}
