/**
 * The reference's Brownian-tree noise (k-diffusion's BrownianTreeNoiseSampler
 * over torchsde's BrownianTree), re-implemented so that the SDE samplers give
 * the same noise for the same seed.
 *
 * torchsde's tree: the interval [σ_min, σ_max] (ends rounded to 6 decimals,
 * its tolerance 1e-6) holds a Brownian increment W drawn as torch.randn from a
 * seed; each node splits at its rounded midpoint, and a child's increment is
 * the Brownian bridge from its parent's, the bridge noise being torch.randn
 * seeded from numpy's SeedSequence(entropy = the sampler's seed,
 * spawn_key = (node key, depth), pool_size = 24). A query W(a, b) rounds a and
 * b to the grid and sums the increments of the dyadic nodes that tile [a, b],
 * so values depend on the seed only, not on the order of queries.
 * Arithmetic on tensors is float32, as torch's.
 */
import { TorchGenerator } from './noise.ts';

const f = Math.fround;

const INIT_A = 0x43b0d7e5;
const MULT_A = 0x931e8875;
const INIT_B = 0x8b51f9dd;
const MULT_B = 0x58f38ded;
const MIX_MULT_L = 0xca01f9dd;
const MIX_MULT_R = 0x4973f715;

/** A non-negative integer as little-endian 32-bit words (numpy's _int_to_uint32_array). */
function words(v: bigint): number[] {
  if (v < 0n) throw new RangeError('SeedSequence entropy must be non-negative');
  if (v === 0n) return [0];
  const out: number[] = [];
  for (; v > 0n; v >>= 32n) out.push(Number(v & 0xffffffffn));
  return out;
}

/** numpy.random.SeedSequence(entropy, spawn_key, pool_size).generate_state(nWords) as uint32 words. */
export function seedSequenceState(entropy: bigint, spawnKey: readonly bigint[], poolSize: number, nWords: number): Uint32Array {
  let run = words(entropy);
  const spawn = spawnKey.flatMap(words);
  if (spawn.length > 0 && run.length < poolSize) run = run.concat(new Array(poolSize - run.length).fill(0));
  const ent = run.concat(spawn);
  let hashConst = INIT_A;
  const hashmix = (value: number): number => {
    value = (value ^ hashConst) >>> 0;
    hashConst = Math.imul(hashConst, MULT_A) >>> 0;
    value = Math.imul(value, hashConst) >>> 0;
    return (value ^ (value >>> 16)) >>> 0;
  };
  const mix = (x: number, y: number): number => {
    const r = (Math.imul(MIX_MULT_L, x) - Math.imul(MIX_MULT_R, y)) >>> 0;
    return (r ^ (r >>> 16)) >>> 0;
  };
  const pool = new Uint32Array(poolSize);
  for (let i = 0; i < poolSize; i++) pool[i] = hashmix(i < ent.length ? ent[i]! : 0);
  for (let src = 0; src < poolSize; src++) for (let dst = 0; dst < poolSize; dst++) if (src !== dst) pool[dst] = mix(pool[dst]!, hashmix(pool[src]!));
  for (let src = poolSize; src < ent.length; src++) for (let dst = 0; dst < poolSize; dst++) pool[dst] = mix(pool[dst]!, hashmix(ent[src]!));
  let hc = INIT_B;
  const out = new Uint32Array(nWords);
  for (let i = 0; i < nWords; i++) {
    let d = (pool[i % poolSize]! ^ hc) >>> 0;
    hc = Math.imul(hc, MULT_B) >>> 0;
    d = Math.imul(d, hc) >>> 0;
    out[i] = (d ^ (d >>> 16)) >>> 0;
  }
  return out;
}

/** Python's round(x, 6): the double nearest the decimal rounded half-to-even on x's exact value. */
function round6(x: number): number {
  // toFixed rounds on the exact value too, but breaks exact ties upward; Python breaks them to even.
  // A tie is a value whose exact decimal expansion ends in 5 at the 7th decimal (x·10⁶ in floating point can look like one when it is not).
  const exact = Math.abs(x).toFixed(100);
  const dot = exact.indexOf('.');
  if (/^50*$/.test(exact.slice(dot + 7))) {
    const kept = BigInt(exact.slice(0, dot) + exact.slice(dot + 1, dot + 7));
    const even = kept % 2n === 0n ? kept : kept + 1n;
    return Math.sign(x) * Number(`${even / 1000000n}.${String(even % 1000000n).padStart(6, '0')}`);
  }
  return Number(x.toFixed(6));
}

const POOL_SIZE = 24;
const CACHE_SIZE = 64;
const MAX_DEPTH = 200;

interface Node {
  start: number;
  end: number;
  parent: Node | undefined;
  isLeft: boolean;
  key: bigint;
  depth: number;
  midway?: number;
  wSeed?: number;
  left?: Node;
  right?: Node;
}

/** torchsde.BrownianTree(t0, zeros(n), t1, entropy, tol = 1e-6, pool_size = 24): increments W(a, b) of n independent motions. */
export class BrownianTree {
  private readonly root: Node;
  private readonly rootW: Float32Array;
  private readonly cache = new Map<Node, Float32Array>();

  constructor(
    t0: number,
    t1: number,
    private readonly size: number,
    private readonly entropy: bigint,
  ) {
    if (!(t0 <= t1)) throw new RangeError(`the tree's start ${t0} is past its end ${t1}`);
    this.root = { start: round6(t0), end: round6(t1), parent: undefined, isLeft: false, key: 0n, depth: 0 };
    const [wSeed] = seedSequenceState(entropy, [], POOL_SIZE, 3);
    const scale = f(Math.sqrt(t1 - t0));
    this.rootW = new TorchGenerator(wSeed!).randn(size).map((v) => f(v * scale));
  }

  private split(node: Node): void {
    if (node.midway !== undefined) return;
    if (node.depth >= MAX_DEPTH) throw new Error('the Brownian tree cannot resolve this interval');
    const mid = round6(0.5 * (node.end + node.start));
    node.midway = mid;
    // The root splits with spawn key (0, 0); each child's key is its parent's ×2 (+1 on the right), its depth one more.
    node.wSeed = seedSequenceState(this.entropy, [node.key, BigInt(node.depth)], POOL_SIZE, 4)[0]!;
    node.left = { start: node.start, end: mid, parent: node, isLeft: true, key: 2n * node.key, depth: node.depth + 1 };
    node.right = { start: mid, end: node.end, parent: node, isLeft: false, key: 2n * node.key + 1n, depth: node.depth + 1 };
  }

  /** The nodes that tile [ta, tb], left to right. */
  private locate(node: Node, ta: number, tb: number, out: Node[]): void {
    for (;;) {
      if (ta === node.start && tb === node.end) {
        out.push(node);
        return;
      }
      this.split(node);
      const mid = node.midway!;
      if (tb <= mid) node = node.left!;
      else if (ta >= mid) node = node.right!;
      else {
        this.locate(node.left!, ta, mid, out);
        node = node.right!;
        ta = mid;
      }
    }
  }

  /** A node's increment: the Brownian bridge from its parent's with the parent's seeded noise. */
  private increment(node: Node): Float32Array {
    if (!node.parent) return this.rootW;
    const hit = this.cache.get(node);
    if (hit) {
      this.cache.delete(node);
      this.cache.set(node, hit);
      return hit;
    }
    const p = node.parent;
    const W = this.increment(p);
    const hRec = 1 / (p.end - p.start);
    const leftDiff = p.midway! - p.start;
    const rightDiff = p.end - p.midway!;
    const std = f(Math.sqrt(leftDiff * rightDiff * hRec));
    const a = f(leftDiff);
    const b = f(hRec);
    const noise = new TorchGenerator(p.wSeed!).randn(this.size);
    const left = new Float32Array(this.size);
    const right = new Float32Array(this.size);
    for (let i = 0; i < this.size; i++) {
      const l = f(f(f(a * W[i]!) * b) + f(std * noise[i]!));
      left[i] = l;
      right[i] = f(W[i]! - l);
    }
    this.remember(p.left!, left);
    this.remember(p.right!, right);
    return node.isLeft ? left : right;
  }

  private remember(node: Node, w: Float32Array): void {
    this.cache.delete(node);
    this.cache.set(node, w);
    while (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
  }

  /** W(tb) − W(ta) for ta ≤ tb, the ends clamped to the tree's interval as torchsde does. */
  call(ta: number, tb: number): Float32Array {
    ta = Math.min(Math.max(ta, this.root.start), this.root.end);
    tb = Math.min(Math.max(tb, this.root.start), this.root.end);
    if (ta > tb) throw new RangeError(`query times ${ta} and ${tb} must respect ta <= tb`);
    if (ta === tb) return new Float32Array(this.size);
    const nodes: Node[] = [];
    this.locate(this.root, round6(ta), round6(tb), nodes);
    const w = Float32Array.from(this.increment(nodes[0]!));
    for (const n of nodes.slice(1)) {
      const wi = this.increment(n);
      for (let i = 0; i < this.size; i++) w[i] = f(w[i]! + wi[i]!);
    }
    return w;
  }
}

/**
 * k-diffusion's BrownianTreeNoiseSampler with one seed: (σ, σ') ↦ W(σ, σ') / √|σ' − σ|,
 * signed as the query runs, the tree spanning the smallest non-zero σ to the largest.
 */
export function brownianNoiseSampler(sigmas: Float32Array, seed: bigint, size: number): (sigma: number, sigmaNext: number) => Float32Array {
  let lo = Infinity;
  let hi = -Infinity;
  for (const s of sigmas) {
    if (s > 0) lo = Math.min(lo, s);
    hi = Math.max(hi, s);
  }
  const tree = new BrownianTree(lo, hi, size, seed);
  return (sigma, sigmaNext) => {
    const [a, b, sign] = sigma < sigmaNext ? [sigma, sigmaNext, 1] : [sigmaNext, sigma, -1];
    const w = tree.call(a, b);
    const d = f(Math.sqrt(f(Math.abs(f(sigmaNext - sigma)))));
    for (let i = 0; i < w.length; i++) w[i] = f(f(w[i]! * sign) / d);
    return w;
  };
}
