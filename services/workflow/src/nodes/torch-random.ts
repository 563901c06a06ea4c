/**
 * torch.randn on the CPU generator, value for value: `torch.manual_seed(seed)`
 * then `torch.randn(n)` (float32). Nodes that add seeded noise (ImageAddNoise
 * here; a sampler's initial latent noise later) give the reference's numbers.
 *
 * torch's CPU generator is a 32-bit Mersenne Twister seeded with the low 32
 * bits of the seed. randn of fewer than 16 values draws Box-Muller pairs in
 * double precision from 53-bit uniforms (each pair's second value kept for
 * the next call); 16 or more use the vectorised path: n float uniforms from
 * 24 bits each, turned into normals 16 at a time (cos half, sin half), and
 * when n is not a multiple of 16 the last 16 values are drawn again and
 * recomputed. Checked against torch's documented outputs for seed 0.
 */
class Mt19937 {
  private readonly s = new Uint32Array(624);
  private i = 624;
  constructor(seed: number) {
    this.s[0] = seed >>> 0;
    for (let j = 1; j < 624; j++) {
      const p = this.s[j - 1]! ^ (this.s[j - 1]! >>> 30);
      this.s[j] = (Math.imul(1812433253, p) + j) >>> 0;
    }
  }
  next(): number {
    if (this.i >= 624) {
      const s = this.s;
      for (let k = 0; k < 624; k++) {
        const y = (s[k]! & 0x80000000) | (s[(k + 1) % 624]! & 0x7fffffff);
        s[k] = s[(k + 397) % 624]! ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      this.i = 0;
    }
    let y = this.s[this.i++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }
}

/** The low 32 bits of a seed given as a JSON number (up to 2^64 - 1, possibly rounded by JSON). */
function low32(seed: number | bigint): number {
  if (typeof seed === 'bigint') return Number(seed & 0xffffffffn);
  if (!Number.isFinite(seed)) throw new RangeError(`invalid seed ${seed}`);
  return Number(BigInt(Math.trunc(seed)) & 0xffffffffn);
}

/**
 * A stream of the n values of torch.randn(n) after torch.manual_seed(seed),
 * produced in order without holding all n (a batch of images can be large).
 */
export function torchRandnStream(seed: number | bigint, n: number): () => number {
  const g = new Mt19937(low32(seed));
  if (n < 16) {
    const u53 = () => {
      const hi = g.next();
      const lo = g.next();
      return ((hi & 0x1fffff) * 2 ** 32 + lo) / 2 ** 53;
    };
    let cached: number | undefined;
    return () => {
      if (cached !== undefined) {
        const v = cached;
        cached = undefined;
        return Math.fround(v);
      }
      const u1 = u53();
      const u2 = u53();
      const r = Math.sqrt(-2 * Math.log1p(-u2));
      const theta = 2 * Math.PI * u1;
      cached = r * Math.sin(theta);
      return Math.fround(r * Math.cos(theta));
    };
  }
  const uniform = () => (g.next() & 0xffffff) / 2 ** 24;
  const fill16 = (d: Float32Array, o: number) => {
    for (let j = 0; j < 8; j++) {
      const u1 = Math.fround(1 - d[o + j]!);
      const u2 = d[o + j + 8]!;
      const radius = Math.fround(Math.sqrt(Math.fround(-2 * Math.fround(Math.log(u1)))));
      const theta = Math.fround(2 * Math.PI * u2);
      d[o + j] = Math.fround(radius * Math.fround(Math.cos(theta)));
      d[o + j + 8] = Math.fround(radius * Math.fround(Math.sin(theta)));
    }
  };
  const full = Math.floor(n / 16);
  const rest = n % 16;
  let block = 0;
  let buf = new Float32Array(16);
  let pos = 16;
  return () => {
    if (pos >= buf.length) {
      if (block < full - 1 || rest === 0) {
        for (let i = 0; i < 16; i++) buf[i] = uniform();
        fill16(buf, 0);
      } else {
        // The last full block and the remainder: the block as usual, the
        // remainder's draws consumed, then the last 16 values drawn again.
        const tail = new Float32Array(16 + rest);
        for (let i = 0; i < 16; i++) tail[i] = uniform();
        fill16(tail, 0);
        for (let i = 0; i < rest; i++) uniform();
        const last = new Float32Array(16);
        for (let i = 0; i < 16; i++) last[i] = uniform();
        fill16(last, 0);
        tail.set(last, rest);
        buf = tail;
      }
      block++;
      pos = 0;
    }
    return buf[pos++]!;
  };
}
