/**
 * The weight differences of the LyCORIS adapters the reference applies
 * (comfy/weight_adapter: LoHa, LoKr, GLoRA, OFT, BOFT) and DoRA's weight
 * decomposition, on flat row-major float32 tensors. Products are summed in
 * float64 and stored as float32, so results agree with the reference's
 * float32 torch arithmetic to rounding. Shapes are checked here and a
 * mismatch is an error naming the tensors (the reference logs it and leaves
 * the weight unpatched, which hides a wrong file).
 */

export interface Tensor {
  data: Float32Array;
  shape: readonly number[];
  /** The file's name for it, for messages. */
  name: string;
}

export class PatchShapeError extends Error {}

const numel = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);
const fmt = (t: Tensor) => `${t.name} [${t.shape.join(', ')}]`;

function need(ok: boolean, problem: string): void {
  if (!ok) throw new PatchShapeError(problem);
}

/** a [m, k] · b [k, n] (both flattened past their first dimension, as torch's flatten(start_dim=1)). */
export function matmul(a: Float32Array, m: number, k: number, b: Float32Array, n: number): Float32Array {
  const out = new Float32Array(m * n);
  const row = new Float64Array(n);
  for (let i = 0; i < m; i++) {
    row.fill(0);
    for (let j = 0; j < k; j++) {
      const x = a[i * k + j]!;
      if (x === 0) continue;
      const base = j * n;
      for (let c = 0; c < n; c++) row[c]! += x * b[base + c]!;
    }
    out.set(row, i * n);
  }
  return out;
}

function mm(a: Tensor, b: Tensor): Float32Array {
  const m = a.shape[0]!;
  const k = numel(a.shape) / m;
  need(a.shape.length >= 2 && b.shape.length >= 2 && b.shape[0] === k, `${fmt(a)} and ${fmt(b)} cannot be multiplied`);
  return matmul(a.data, m, k, b.data, numel(b.shape) / k);
}

/** einsum('i j k l, j r, i p -> p r k l', t, wb, wa): the CP (Tucker) form of LoHa's and LoKr's factors. */
function tucker(t: Tensor, wb: Tensor, wa: Tensor): { data: Float32Array; shape: number[] } {
  need(t.shape.length === 4 && wb.shape.length === 2 && wa.shape.length === 2, `${fmt(t)}, ${fmt(wb)} and ${fmt(wa)} are not a CP decomposition (4-d core, two matrices)`);
  const [I, J, K, L] = t.shape as [number, number, number, number];
  need(wb.shape[0] === J && wa.shape[0] === I, `${fmt(t)} does not fit ${fmt(wb)} and ${fmt(wa)}`);
  const R = wb.shape[1]!;
  const P = wa.shape[1]!;
  const KL = K * L;
  // tb[i, r, kl] = Σ_j t[i, j, kl] · wb[j, r]
  const tb = new Float64Array(I * R * KL);
  for (let i = 0; i < I; i++)
    for (let j = 0; j < J; j++)
      for (let r = 0; r < R; r++) {
        const w = wb.data[j * R + r]!;
        if (w === 0) continue;
        const src = (i * J + j) * KL;
        const dst = (i * R + r) * KL;
        for (let s = 0; s < KL; s++) tb[dst + s]! += t.data[src + s]! * w;
      }
  const out = new Float32Array(P * R * KL);
  const acc = new Float64Array(R * KL);
  for (let p = 0; p < P; p++) {
    acc.fill(0);
    for (let i = 0; i < I; i++) {
      const w = wa.data[i * P + p]!;
      if (w === 0) continue;
      const base = i * R * KL;
      for (let s = 0; s < R * KL; s++) acc[s]! += tb[base + s]! * w;
    }
    out.set(acc, p * R * KL);
  }
  return { data: out, shape: [P, R, K, L] };
}

function reshapeTo(data: Float32Array, from: readonly number[], weight: readonly number[], what: string): Float32Array {
  need(data.length === numel(weight), `${what} [${from.join(', ')}] does not give the weight's shape [${weight.join(', ')}]`);
  return data;
}

/** LoHa: (w1a·w1b) ⊙ (w2a·w2b), or with CP cores t1/t2; alpha is divided by w1b's rank. */
export function lohaDiff(p: { w1a: Tensor; w1b: Tensor; w2a: Tensor; w2b: Tensor; t1?: Tensor; t2?: Tensor }, weight: readonly number[]): Float32Array {
  let m1: { data: Float32Array; shape: readonly number[] };
  let m2: { data: Float32Array; shape: readonly number[] };
  if (p.t1) {
    need(p.t2 !== undefined, `${p.t1.name} has no hada_t2`);
    m1 = tucker(p.t1, p.w1b, p.w1a);
    m2 = tucker(p.t2!, p.w2b, p.w2a);
  } else {
    m1 = { data: mm(p.w1a, p.w1b), shape: [p.w1a.shape[0]!, numel(p.w1b.shape) / p.w1b.shape[0]!] };
    m2 = { data: mm(p.w2a, p.w2b), shape: [p.w2a.shape[0]!, numel(p.w2b.shape) / p.w2b.shape[0]!] };
  }
  need(m1.data.length === m2.data.length, `the two Hadamard factors of ${p.w1a.name} have different sizes`);
  const out = new Float32Array(m1.data.length);
  for (let i = 0; i < out.length; i++) out[i] = m1.data[i]! * m2.data[i]!;
  return reshapeTo(out, m1.shape, weight, `${p.w1a.name}'s product`);
}

/** torch.kron of two tensors of any rank (the smaller padded with leading ones). */
export function kron(a: { data: Float32Array; shape: readonly number[] }, b: { data: Float32Array; shape: readonly number[] }): { data: Float32Array; shape: number[] } {
  const n = Math.max(a.shape.length, b.shape.length);
  const as = [...Array(n - a.shape.length).fill(1), ...a.shape] as number[];
  const bs = [...Array(n - b.shape.length).fill(1), ...b.shape] as number[];
  const shape = as.map((x, i) => x * bs[i]!);
  const out = new Float32Array(numel(shape));
  const ia = new Array<number>(n).fill(0);
  // Walk a's elements; each fills one b-sized block of the output.
  const bStrides = strides(bs);
  const oStrides = strides(shape);
  const bIdx = new Array<number>(n).fill(0);
  for (let ai = 0; ai < a.data.length; ai++) {
    let rem = ai;
    for (let d = n - 1; d >= 0; d--) {
      ia[d] = rem % as[d]!;
      rem = Math.floor(rem / as[d]!);
    }
    const av = a.data[ai]!;
    for (let bi = 0; bi < b.data.length; bi++) {
      let o = 0;
      for (let d = 0; d < n; d++) {
        bIdx[d] = Math.floor(bi / bStrides[d]!) % bs[d]!;
        o += (ia[d]! * bs[d]! + bIdx[d]!) * oStrides[d]!;
      }
      out[o] = av * b.data[bi]!;
    }
  }
  return { data: out, shape };
}

function strides(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    s[d] = acc;
    acc *= shape[d]!;
  }
  return s;
}

/**
 * LoKr: kron(w1, w2), each factor whole or a product (w2 also in CP form);
 * alpha is divided by the rank of the factored one (w2's when both are).
 */
export function lokrDiff(
  p: { w1?: Tensor; w2?: Tensor; w1a?: Tensor; w1b?: Tensor; w2a?: Tensor; w2b?: Tensor; t2?: Tensor; name: string },
  weight: readonly number[],
): { diff: Float32Array; rank: number | undefined } {
  let rank: number | undefined;
  let w1: { data: Float32Array; shape: readonly number[] };
  if (p.w1) w1 = p.w1;
  else {
    need(p.w1a !== undefined && p.w1b !== undefined, `${p.name}: LoKr needs lokr_w1 or both lokr_w1_a and lokr_w1_b`);
    rank = p.w1b!.shape[0];
    w1 = { data: mm(p.w1a!, p.w1b!), shape: [p.w1a!.shape[0]!, numel(p.w1b!.shape) / p.w1b!.shape[0]!] };
  }
  let w2: { data: Float32Array; shape: readonly number[] };
  if (p.w2) w2 = p.w2;
  else {
    need(p.w2a !== undefined && p.w2b !== undefined, `${p.name}: LoKr needs lokr_w2 or both lokr_w2_a and lokr_w2_b`);
    rank = p.w2b!.shape[0];
    w2 = p.t2 ? tucker(p.t2, p.w2b!, p.w2a!) : { data: mm(p.w2a!, p.w2b!), shape: [p.w2a!.shape[0]!, numel(p.w2b!.shape) / p.w2b!.shape[0]!] };
  }
  if (w2.shape.length === 4) w1 = { data: w1.data, shape: [...w1.shape, 1, 1] };
  const k = kron(w1, w2);
  return { diff: reshapeTo(k.data, k.shape, weight, `${p.name}'s Kronecker product`), rank };
}

/**
 * GLoRA: W·a1·a2 + b1·b2 (or the older LyCORIS layout b2·b1 + W·a2·a1, told
 * apart by the shapes as the reference does); W is the weight as patched so far.
 */
export function gloraDiff(p: { a1: Tensor; a2: Tensor; b1: Tensor; b2: Tensor }, w: Float32Array, weight: readonly number[]): { diff: Float32Array; rank: number } {
  const [a1, a2, b1, b2] = [p.a1, p.a2, p.b1, p.b2];
  let old = false;
  let rank: number | undefined;
  if (b2.shape[1] === b1.shape[0] && b1.shape[0] === a1.shape[0] && a1.shape[0] === a2.shape[1]) {
    rank = a1.shape[0];
    old = true;
  }
  if (b2.shape[0] === b1.shape[1] && b1.shape[1] === a1.shape[1] && a1.shape[1] === a2.shape[0]) {
    if (!(old && a2.shape[0] === weight[0] && weight[0] === weight[1])) {
      old = false;
      rank = a2.shape[0];
    }
  }
  need(rank !== undefined, `${fmt(a1)}, ${fmt(a2)}, ${fmt(b1)}, ${fmt(b2)} are not a GLoRA`);
  const flat = (t: Tensor): [number, number] => [t.shape[0]!, numel(t.shape) / t.shape[0]!];
  const [a1r, a1c] = flat(a1);
  const [a2r, a2c] = flat(a2);
  const [b1r, b1c] = flat(b1);
  const [b2r, b2c] = flat(b2);
  const o = weight[0]!;
  const inner = numel(weight) / o;
  let diff: Float32Array;
  if (old) {
    // (b2·b1 + W.flatten(1)·a2·a1).reshape(W)
    need(b2c === b1r && inner === a2r && a2c === a1r, `the GLoRA ${a1.name} does not fit the weight [${weight.join(', ')}]`);
    const bb = matmul(b2.data, b2r, b2c, b1.data, b1c);
    const wa = matmul(matmul(w, o, inner, a2.data, a2c), o, a2c, a1.data, a1c);
    need(bb.length === wa.length && wa.length === numel(weight), `the GLoRA ${a1.name} does not give the weight's shape [${weight.join(', ')}]`);
    diff = new Float32Array(wa.length);
    for (let i = 0; i < diff.length; i++) diff[i] = bb[i]! + wa[i]!;
  } else {
    // einsum('o i ..., i j -> o j ...') twice: contract W's second axis with a1 then a2.
    const i = weight[1] ?? 1;
    const rest = weight.length > 2 ? numel(weight.slice(2)) : 1;
    need(a1r === i && a2r === a1c && a2c === i, `the GLoRA ${a1.name} does not fit the weight [${weight.join(', ')}]`);
    const contract = (src: Float32Array, cin: number, m: Float32Array, cout: number): Float32Array => {
      const out = new Float32Array(o * cout * rest);
      const acc = new Float64Array(cout * rest);
      for (let oo = 0; oo < o; oo++) {
        acc.fill(0);
        for (let ii = 0; ii < cin; ii++)
          for (let j = 0; j < cout; j++) {
            const x = m[ii * cout + j]!;
            if (x === 0) continue;
            const s = (oo * cin + ii) * rest;
            for (let r = 0; r < rest; r++) acc[j * rest + r]! += src[s + r]! * x;
          }
        out.set(acc, oo * cout * rest);
      }
      return out;
    };
    const wa = contract(contract(w, i, a1.data, a1c), a1c, a2.data, a2c);
    const bb = matmul(b1.data, b1r, b1c, b2.data, b2c);
    need(bb.length === wa.length, `the GLoRA ${b1.name}·${b2.name} does not give the weight's shape [${weight.join(', ')}]`);
    diff = new Float32Array(wa.length);
    for (let k = 0; k < diff.length; k++) diff[k] = Math.fround(wa[k]!) + bb[k]!;
  }
  return { diff, rank: rank! };
}

/** (I + Q)·(I − Q)⁻¹ for each skew-symmetric Q = B − Bᵀ of `blocks` [n, b, b] (float64 Gauss–Jordan). */
function cayley(blocks: Float32Array, count: number, b: number, constraint: number): Float64Array {
  const q = new Float64Array(count * b * b);
  for (let k = 0; k < count; k++)
    for (let i = 0; i < b; i++)
      for (let j = 0; j < b; j++) q[(k * b + i) * b + j] = Math.fround(blocks[(k * b + i) * b + j]! - blocks[(k * b + j) * b + i]!);
  if (constraint > 0) {
    let ss = 0;
    for (const x of q) ss += x * x;
    const norm = Math.fround(Math.sqrt(ss)) + 1e-8;
    if (norm > constraint) for (let i = 0; i < q.length; i++) q[i] = Math.fround((q[i]! * constraint) / norm);
  }
  const r = new Float64Array(count * b * b);
  const a = new Float64Array(b * 2 * b);
  for (let k = 0; k < count; k++) {
    // [I − Q | I] → [I | (I − Q)⁻¹]
    for (let i = 0; i < b; i++)
      for (let j = 0; j < b; j++) {
        a[i * 2 * b + j] = (i === j ? 1 : 0) - q[(k * b + i) * b + j]!;
        a[i * 2 * b + b + j] = i === j ? 1 : 0;
      }
    for (let c = 0; c < b; c++) {
      let piv = c;
      for (let i = c + 1; i < b; i++) if (Math.abs(a[i * 2 * b + c]!) > Math.abs(a[piv * 2 * b + c]!)) piv = i;
      need(a[piv * 2 * b + c] !== 0, 'an OFT block is singular');
      if (piv !== c)
        for (let j = 0; j < 2 * b; j++) {
          const t = a[c * 2 * b + j]!;
          a[c * 2 * b + j] = a[piv * 2 * b + j]!;
          a[piv * 2 * b + j] = t;
        }
      const d = a[c * 2 * b + c]!;
      for (let j = 0; j < 2 * b; j++) a[c * 2 * b + j]! /= d;
      for (let i = 0; i < b; i++) {
        if (i === c) continue;
        const f = a[i * 2 * b + c]!;
        if (f === 0) continue;
        for (let j = 0; j < 2 * b; j++) a[i * 2 * b + j]! -= f * a[c * 2 * b + j]!;
      }
    }
    for (let i = 0; i < b; i++)
      for (let j = 0; j < b; j++) {
        let acc = 0;
        for (let m = 0; m < b; m++) acc += ((i === m ? 1 : 0) + q[(k * b + i) * b + m]!) * a[m * 2 * b + b + j]!;
        r[(k * b + i) * b + j] = Math.fround(acc);
      }
  }
  return r;
}

/**
 * OFT: each block of b output rows turned by its Cayley rotation R:
 * diff[k, m] = Σ_n s·(R − I)[k, n, m] · W[k, n]. The reference multiplies by
 * the strength again when it adds the difference (weight += s·diff), so a
 * strength s acts as s²; kept, so that a file gives the reference's images.
 */
export function oftDiff(blocks: Tensor, alpha: number, strength: number, w: Float32Array, weight: readonly number[]): Float32Array {
  need(blocks.shape.length === 3 && blocks.shape[1] === blocks.shape[2], `${fmt(blocks)} is not a stack of square OFT blocks`);
  const [count, b] = blocks.shape as [number, number];
  need(count * b === weight[0], `${fmt(blocks)} does not cover the weight's ${weight[0]} output rows`);
  const r = cayley(blocks.data, count, b, alpha);
  const rest = numel(weight) / weight[0]!;
  const out = new Float32Array(w.length);
  const acc = new Float64Array(rest);
  const s = Math.fround(strength);
  for (let k = 0; k < count; k++)
    for (let m = 0; m < b; m++) {
      acc.fill(0);
      for (let n = 0; n < b; n++) {
        const x = Math.fround(Math.fround(r[(k * b + n) * b + m]! * s) - (n === m ? s : 0));
        if (x === 0) continue;
        const base = (k * b + n) * rest;
        for (let e = 0; e < rest; e++) acc[e]! += x * w[base + e]!;
      }
      out.set(acc, (k * b + m) * rest);
    }
  return out;
}

/**
 * BOFT: log2 butterfly stages; stage i shuffles the output rows in pairs of
 * groups 2^i·b/2 apart, turns each block of b rows by its rotation (blended
 * with I by the strength), and shuffles back; then `rescale`, then the
 * difference to W (added with the strength once more, as the reference).
 */
export function boftDiff(blocks: Tensor, rescale: Tensor | undefined, alpha: number, strength: number, w: Float32Array, weight: readonly number[]): Float32Array {
  need(blocks.shape.length === 4 && blocks.shape[2] === blocks.shape[3], `${fmt(blocks)} is not a BOFT block stack [stages, blocks, b, b]`);
  const [stages, count, b] = blocks.shape as [number, number, number];
  const rows = weight[0]!;
  need(count * b === rows && b % 2 === 0, `${fmt(blocks)} does not cover the weight's ${rows} output rows`);
  const rest = numel(weight) / rows;
  const r = cayley(blocks.data, stages * count, b, alpha);
  const s = Math.fround(strength);
  let inp = Float32Array.from(w);
  const half = b / 2;
  for (let st = 0; st < stages; st++) {
    const k = 2 ** st * half;
    need(rows % (2 * k) === 0, `${fmt(blocks)}: stage ${st} does not divide the ${rows} rows`);
    // Row o = a·2k + g·k + kk goes to position a·2k + kk·2 + g.
    const perm = new Int32Array(rows);
    for (let o = 0; o < rows; o++) {
      const a = Math.floor(o / (2 * k));
      const g = Math.floor((o % (2 * k)) / k);
      const kk = o % k;
      perm[o] = a * 2 * k + kk * 2 + g;
    }
    const shuffled = new Float32Array(inp.length);
    for (let o = 0; o < rows; o++) shuffled.set(inp.subarray(o * rest, (o + 1) * rest), perm[o]! * rest);
    const turned = new Float32Array(inp.length);
    const acc = new Float64Array(rest);
    for (let blk = 0; blk < count; blk++)
      for (let i = 0; i < b; i++) {
        acc.fill(0);
        for (let j = 0; j < b; j++) {
          let x = r[((st * count + blk) * b + i) * b + j]!;
          if (s !== 1) x = Math.fround(Math.fround(x * s) + Math.fround((1 - s) * (i === j ? 1 : 0)));
          if (x === 0) continue;
          const base = (blk * b + j) * rest;
          for (let e = 0; e < rest; e++) acc[e]! += x * shuffled[base + e]!;
        }
        turned.set(acc, (blk * b + i) * rest);
      }
    const back = new Float32Array(inp.length);
    for (let o = 0; o < rows; o++) back.set(turned.subarray(perm[o]! * rest, (perm[o]! + 1) * rest), o * rest);
    inp = back;
  }
  if (rescale) {
    need(rescale.data.length === rows || rescale.data.length === 1, `${fmt(rescale)} does not scale the weight's ${rows} rows`);
    for (let o = 0; o < rows; o++) {
      const f = rescale.data[rescale.data.length === 1 ? 0 : o]!;
      for (let e = 0; e < rest; e++) inp[o * rest + e] = Math.fround(inp[o * rest + e]! * f);
    }
  }
  for (let i = 0; i < inp.length; i++) inp[i] = Math.fround(inp[i]! - w[i]!);
  return inp;
}

const F32_EPS = 2 ** -23;

/**
 * DoRA (weight_decompose): W + alpha·diff rescaled to the magnitude vector
 * `scale` (per output row when it has as many entries as W has rows, per
 * input column otherwise), then blended with W by the strength. The per-row
 * norm is W's before the patch, the per-column one the patched weight's, as
 * the reference computes them.
 */
export function applyDora(w: Float32Array, weight: readonly number[], diff: Float32Array, alpha: number, strength: number, scale: Tensor): void {
  const rows = weight[0]!;
  const cols = weight[1] ?? 1;
  const rest = weight.length > 2 ? numel(weight.slice(2)) : 1;
  const a = Math.fround(alpha);
  const calc = new Float32Array(w.length);
  for (let i = 0; i < w.length; i++) calc[i] = w[i]! + Math.fround(diff[i]! * a);
  const perRow = scale.shape[0] === rows;
  const n = perRow ? rows : cols;
  need(scale.data.length === n, `${fmt(scale)} has ${scale.data.length} magnitudes, the weight [${weight.join(', ')}] needs ${n}`);
  const norm = new Float64Array(n);
  if (perRow) {
    const inner = numel(weight) / rows;
    for (let o = 0; o < rows; o++) {
      let ss = 0;
      for (let e = 0; e < inner; e++) ss += w[o * inner + e]! ** 2;
      norm[o] = Math.fround(Math.fround(Math.sqrt(ss)) + F32_EPS);
    }
    for (let o = 0; o < rows; o++) {
      const f = Math.fround(scale.data[o]! / norm[o]!);
      for (let e = 0; e < inner; e++) calc[o * inner + e] = Math.fround(calc[o * inner + e]! * f);
    }
  } else {
    for (let o = 0; o < rows; o++)
      for (let c = 0; c < cols; c++)
        for (let e = 0; e < rest; e++) norm[c]! += calc[(o * cols + c) * rest + e]! ** 2;
    for (let c = 0; c < cols; c++) norm[c] = Math.fround(Math.fround(Math.sqrt(norm[c]!)) + F32_EPS);
    for (let o = 0; o < rows; o++)
      for (let c = 0; c < cols; c++) {
        const f = Math.fround(scale.data[c]! / norm[c]!);
        for (let e = 0; e < rest; e++) {
          const i = (o * cols + c) * rest + e;
          calc[i] = Math.fround(calc[i]! * f);
        }
      }
  }
  if (strength !== 1) {
    const s = Math.fround(strength);
    for (let i = 0; i < w.length; i++) w[i] = w[i]! + Math.fround(s * Math.fround(calc[i]! - w[i]!));
  } else w.set(calc);
}
