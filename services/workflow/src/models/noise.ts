import { CEPHES, logF32, sincosF32 } from './cephes-f32.ts';
import { BUF, POS, randnKernels, type RandnKernels } from './randn-kernels.ts';

/**
 * The reference's noise: `torch.randn(shape, generator=torch.manual_seed(seed))`
 * on the CPU, re-implemented. torch's CPU generator is an MT19937 seeded with
 * the low 32 bits of the seed; a float32 uniform takes the low 24 bits of one
 * 32-bit draw; randn draws every uniform first, then turns each block of 16
 * into normals by Box–Muller (the first 8 as radii, the last 8 as angles) and,
 * when the count is not a multiple of 16, draws 16 more uniforms for the last
 * 16 values. The Box–Muller is torch's x86 one (normal_fill_16_AVX2, which
 * its AVX2 and AVX-512 builds both run) with its float32 log and sincos
 * (`cephes-f32.ts`), so the values are torch's bit for bit. Uniforms and
 * normals go through WebAssembly SIMD (`randn-kernels.ts`) where it runs,
 * with the same bits.
 */

/** Values per call into the SIMD kernels (their memory holds one such chunk). */
const CHUNK = 16384;

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
    const k = end - start >= 64 ? randnKernels() : undefined;
    if (k) {
      this.inKernels(k, end - start, (n, done) => {
        k.uniforms(n, BUF);
        out.set(k.f32.subarray(BUF / 4, BUF / 4 + n), start + done);
      });
      return;
    }
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

  /**
   * Calls `step(n, done)` over `count` values, CHUNK at most a call, with
   * this state in the SIMD kernels' memory (their `uniforms` draw from it and
   * advance it), and takes the state back after.
   */
  inKernels(k: RandnKernels, count: number, step: (n: number, done: number) => void): void {
    k.reserve(BUF + CHUNK * 4 + 64);
    k.u32.set(this.mt, 0);
    k.u32[POS / 4] = this.index;
    for (let done = 0; done < count; done += CHUNK) step(Math.min(CHUNK, count - done), done);
    this.mt.set(k.u32.subarray(0, 624));
    this.index = k.u32[POS / 4]!;
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
  readonly mt: Mt19937;

  constructor(seed: number | bigint | string) {
    this.mt = new Mt19937(seedLow32(seed));
  }

  /** torch.randn of `count` float32 values. */
  randn(count: number): Float32Array {
    const data = new Float32Array(count);
    if (count < 16) {
      // torch uses a scalar double-precision Box–Muller for tensors under 16 values.
      return this.randnSmall(data);
    }
    new NormalStream(this, count).read(data, count);
    return data;
  }

  /**
   * The same `count` values in order, `read` a part at a time into the
   * caller's array (ImageAddNoise over a large batch holds one chunk).
   */
  randnStream(count: number): NormalStream {
    return new NormalStream(this, count);
  }

  /** `blocks` blocks of 16 uniforms drawn and turned into normals, at out[at …]. */
  normals(out: Float32Array, at: number, blocks: number): void {
    const k = blocks >= 4 ? randnKernels() : undefined;
    if (!k) {
      this.mt.fillLow24(out, at, at + blocks * 16);
      for (let b = 0; b < blocks; b++) fill16(out, at + b * 16);
      return;
    }
    // CHUNK is a multiple of 16: every step is whole blocks.
    this.mt.inKernels(k, blocks * 16, (n, done) => {
      k.uniforms(n, BUF);
      k.boxMuller(BUF, n / 16);
      out.set(k.f32.subarray(BUF / 4, BUF / 4 + n), at + done);
    });
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
const trig = new Float64Array(2);

/** normal_fill_16_AVX2 on the block of 16 uniforms at d[at], in place (JavaScript; boxMuller in randn-kernels.ts is the same in SIMD). */
function fill16(d: Float32Array, at: number): void {
  for (let j = 0; j < 8; j++) {
    const u1 = f(1 - d[at + j]!);
    const radius = f(Math.sqrt(f(-2 * logF32(u1))));
    sincosF32(f(CEPHES.twoPi * d[at + j + 8]!), trig);
    // + 0: torch's fmadd(n, std 1, mean 0) turns −0 into +0.
    d[at + j] = f(radius * trig[1]!) + 0;
    d[at + j + 8] = f(radius * trig[0]!) + 0;
  }
}

/** TorchGenerator.randnStream: torch.randn(count)'s values in order, read in parts. */
export class NormalStream {
  private blocksLeft: number;
  private restLeft: boolean;
  private readonly rest: number;
  private buffered: Float32Array = new Float32Array(0);
  private bufferedAt = 0;

  constructor(private readonly gen: TorchGenerator, count: number) {
    const full = Math.floor(count / 16);
    const rest = count % 16;
    if (count < 16) {
      this.buffered = gen.randn(count);
      this.blocksLeft = 0;
      this.restLeft = false;
    } else {
      // With a remainder, the last full block goes with it (see the tail below).
      this.blocksLeft = rest === 0 ? full : full - 1;
      this.restLeft = rest !== 0;
    }
    this.rest = rest;
  }

  /** The next n values into dst[0 … n). */
  read(dst: Float32Array, n: number): void {
    let o = 0;
    while (o < n) {
      if (this.bufferedAt < this.buffered.length) {
        const m = Math.min(n - o, this.buffered.length - this.bufferedAt);
        dst.set(this.buffered.subarray(this.bufferedAt, this.bufferedAt + m), o);
        this.bufferedAt += m;
        o += m;
      } else if (this.blocksLeft > 0 && n - o >= 16) {
        const b = Math.min(this.blocksLeft, Math.floor((n - o) / 16));
        this.gen.normals(dst, o, b);
        this.blocksLeft -= b;
        o += b * 16;
      } else if (this.blocksLeft > 0) {
        this.fill(16);
        this.gen.normals(this.buffered, 0, 1);
        this.blocksLeft--;
      } else if (this.restLeft) {
        // randn's tail: the last full block, the remainder's uniforms drawn and lost, the last 16 values drawn again.
        this.fill(16 + this.rest);
        this.gen.normals(this.buffered, 0, 1);
        const last = new Float32Array(16);
        this.gen.mt.fillLow24(last, 0, this.rest);
        this.gen.normals(last, 0, 1);
        this.buffered.set(last, this.rest);
        this.restLeft = false;
      } else {
        throw new RangeError('read past the end of the values');
      }
    }
  }

  private fill(length: number): void {
    this.buffered = new Float32Array(length);
    this.bufferedAt = 0;
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
