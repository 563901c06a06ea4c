/**
 * The reference's noise: `torch.randn(shape, generator=torch.manual_seed(seed))`
 * on the CPU, re-implemented. torch's CPU generator is an MT19937 seeded with
 * the low 32 bits of the seed; a float32 uniform takes the low 24 bits of one
 * 32-bit draw; randn draws every uniform first, then turns each block of 16
 * into normals by Box–Muller (the first 8 as radii, the last 8 as angles) and,
 * when the count is not a multiple of 16, draws 16 more uniforms for the last
 * 16 values. torch computes log/sin/cos with vectorised approximations, so
 * values agree to about 2e-6, not bit for bit.
 */

export class Mt19937 {
  private readonly mt = new Uint32Array(624);
  private index = 624;

  constructor(seed: number) {
    this.mt[0] = seed >>> 0;
    for (let i = 1; i < 624; i++) {
      const prev = this.mt[i - 1]! ^ (this.mt[i - 1]! >>> 30);
      // 1812433253 × prev + i in uint32 arithmetic.
      this.mt[i] = (Math.imul(1812433253, prev) + i) >>> 0;
    }
  }

  private twist(): void {
    const mt = this.mt;
    for (let i = 0; i < 624; i++) {
      const y = (mt[i]! & 0x80000000) | (mt[(i + 1) % 624]! & 0x7fffffff);
      let v = mt[(i + 397) % 624]! ^ (y >>> 1);
      if (y & 1) v ^= 0x9908b0df;
      mt[i] = v >>> 0;
    }
    this.index = 0;
  }

  /**
   * out[start..end) = the low 24 bits of successive draws × 2⁻²⁴ (torch's
   * float32 uniforms), as nextUint32 would give them one at a time.
   */
  fillLow24(out: Float32Array, start: number, end: number): void {
    const mt = this.mt;
    let idx = this.index;
    for (let i = start; i < end; i++) {
      if (idx >= 624) {
        this.twist();
        idx = 0;
      }
      let y = mt[idx++]!;
      y ^= y >>> 11;
      y ^= (y << 7) & 0x9d2c5680;
      y ^= (y << 15) & 0xefc60000;
      y ^= y >>> 18;
      out[i] = (y & 0xffffff) * 2 ** -24;
    }
    this.index = idx;
  }

  nextUint32(): number {
    if (this.index >= 624) this.twist();
    let y = this.mt[this.index++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }
}

/** The low 32 bits of a seed given as a number or a decimal string (seeds up to 2⁶⁴ − 1). */
export function seedLow32(seed: number | bigint | string): number {
  const big = typeof seed === 'bigint' ? seed : typeof seed === 'string' ? BigInt(seed) : BigInt(Math.trunc(seed));
  return Number(BigInt.asUintN(32, big));
}

/** A torch CPU generator: `torch.manual_seed(seed)` then successive `torch.randn` calls. */
export class TorchGenerator {
  private readonly mt: Mt19937;

  constructor(seed: number | bigint | string) {
    this.mt = new Mt19937(seedLow32(seed));
  }

  private uniform(): number {
    return (this.mt.nextUint32() & 0xffffff) * 2 ** -24;
  }

  /** torch.randn of `count` float32 values. */
  randn(count: number): Float32Array {
    const data = new Float32Array(count);
    if (count < 16) {
      // torch uses a scalar double-precision Box–Muller for tensors under 16 values.
      return this.randnSmall(data);
    }
    this.mt.fillLow24(data, 0, count);
    for (let i = 0; i + 16 <= count; i += 16) fill16(data, i);
    if (count % 16 !== 0) {
      const at = count - 16;
      this.mt.fillLow24(data, at, count);
      fill16(data, at);
    }
    return data;
  }

  /**
   * The same `count` values one at a time, holding 32 at most (ImageAddNoise
   * over a large batch). The last full block and the remainder are drawn
   * together: the block as usual, the remainder's uniforms consumed, then the
   * last 16 values drawn again, as randn does.
   */
  randnStream(count: number): () => number {
    if (count < 16) {
      const all = this.randn(count);
      let at = 0;
      return () => all[at++]!;
    }
    const full = Math.floor(count / 16);
    const rest = count % 16;
    // Blocks before the last full one (all of them when no remainder) are drawn many at a time.
    const plain = rest === 0 ? full : full - 1;
    const CHUNK = 1024;
    let block = 0;
    let buf = new Float32Array(CHUNK * 16);
    let len = 0;
    let pos = 0;
    const refill = () => {
      if (block < plain) {
        const n = Math.min(CHUNK, plain - block);
        this.mt.fillLow24(buf, 0, n * 16);
        for (let i = 0; i < n * 16; i += 16) fill16(buf, i);
        len = n * 16;
        block += n;
      } else {
        buf = new Float32Array(16 + rest);
        this.mt.fillLow24(buf, 0, 16);
        fill16(buf, 0);
        for (let i = 0; i < rest; i++) this.uniform();
        const last = new Float32Array(16);
        this.mt.fillLow24(last, 0, 16);
        fill16(last, 0);
        buf.set(last, rest);
        len = buf.length;
        block++;
      }
      pos = 0;
    };
    return () => {
      if (pos >= len) refill();
      return buf[pos++]!;
    };
  }

  private uniform53(): number {
    // random64: two 32-bit draws, high word first, masked to 53 bits.
    const hi = this.mt.nextUint32();
    const lo = this.mt.nextUint32();
    const v = (BigInt(hi) << 32n) | BigInt(lo);
    return Number(v & ((1n << 53n) - 1n)) * 2 ** -53;
  }

  private randnSmall(data: Float32Array): Float32Array {
    let cached: number | undefined;
    for (let i = 0; i < data.length; i++) {
      if (cached !== undefined) {
        data[i] = cached;
        cached = undefined;
        continue;
      }
      const u1 = this.uniform53();
      const u2 = this.uniform53();
      const r = Math.sqrt(-2 * Math.log1p(-u2));
      const theta = 2 * Math.PI * u1;
      cached = r * Math.sin(theta);
      data[i] = r * Math.cos(theta);
    }
    return data;
  }
}

const f = Math.fround;
const TWO_PI = 2 * Math.PI;

function fill16(d: Float32Array, at: number): void {
  for (let j = 0; j < 8; j++) {
    const u1 = f(1 - d[at + j]!);
    const u2 = d[at + j + 8]!;
    const radius = f(Math.sqrt(f(-2 * f(Math.log(u1)))));
    const theta = f(TWO_PI * u2);
    d[at + j] = f(radius * f(Math.cos(theta)));
    d[at + j + 8] = f(radius * f(Math.sin(theta)));
  }
}

/**
 * comfy.sample.prepare_noise: one randn over the whole latent, or with
 * `batch_index`, one randn per index up to the largest (those not listed are
 * drawn and dropped), each item taking the noise of its index.
 */
export function prepareNoise(shape: readonly number[], seed: number | bigint | string, batchIndex?: readonly number[]): Float32Array {
  const total = shape.reduce((a, b) => a * b, 1);
  const gen = new TorchGenerator(seed);
  if (!batchIndex) return gen.randn(total);
  const per = total / shape[0]!;
  const unique = [...new Set(batchIndex)].sort((a, b) => a - b);
  const byIndex = new Map<number, Float32Array>();
  const last = unique[unique.length - 1] ?? -1;
  for (let i = 0; i <= last; i++) {
    const n = gen.randn(per);
    if (unique.includes(i)) byIndex.set(i, n);
  }
  const out = new Float32Array(per * batchIndex.length);
  batchIndex.forEach((idx, b) => out.set(byIndex.get(idx)!, b * per));
  return out;
}
