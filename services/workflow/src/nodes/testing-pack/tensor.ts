import { randomBytes } from 'node:crypto';
import { checkSize, Frame, ImageBatch, MaskBatch, MaskPlane } from '../image-types.ts';

/**
 * The reference's test nodes do float32 tensor arithmetic on IMAGE
 * ([B,H,W,C], 0..1) and MASK ([B,H,W]) values. Here IMAGE is a batch of 8-bit
 * frames, so the pack computes on a small float32 tensor and converts at its
 * edges. Frames a pack node made keep their exact float values on the side,
 * so a chain of pack nodes sees what the reference's chain sees; the bytes
 * (clamped and truncated as the reference's SaveImage does) are what other
 * nodes see.
 */
export class Tensor {
  constructor(
    readonly shape: number[],
    readonly data: Float32Array,
  ) {}

  static full(shape: number[], value: number): Tensor {
    const t = new Tensor(shape, new Float32Array(shape.reduce((a, b) => a * b, 1)));
    t.data.fill(value);
    return t;
  }

  // Indexed loops: a typed array's iterator is slow until the JIT has optimised the
  // loop, and the reference's suite times prompts on freshly started servers.
  min(): number {
    const d = this.data;
    let m = Infinity;
    for (let i = 0; i < d.length; i++) if (d[i]! < m) m = d[i]!;
    return m;
  }

  max(): number {
    const d = this.data;
    let m = -Infinity;
    for (let i = 0; i < d.length; i++) if (d[i]! > m) m = d[i]!;
    return m;
  }

  mean(): number {
    const d = this.data;
    let s = 0;
    for (let i = 0; i < d.length; i++) s += d[i]!;
    return d.length === 0 ? NaN : s / d.length;
  }
}

/** A Python-typed error for the execution_error message (`exception_type`). */
export function pyError(pyType: string, message: string): Error {
  const e = new Error(message);
  (e as { pyType?: string }).pyType = pyType;
  return e;
}

const exact = new WeakMap<Frame, Float32Array>();

/** A 4-D tensor of an IMAGE batch (its exact values when a pack node made it). */
export function imageTensor(img: ImageBatch): Tensor {
  const { width: w, height: h } = img;
  const c = img.frames[0]!.channels;
  const per = w * h * c;
  // One frame a pack node made: its exact values as they are (no node writes into a tensor's data).
  const only = img.frames.length === 1 ? exact.get(img.frames[0]!) : undefined;
  if (only && img.frames[0]!.width === w && img.frames[0]!.height === h && only.length === per) return new Tensor([1, h, w, c], only);
  const data = new Float32Array(per * img.frames.length);
  img.frames.forEach((f, b) => {
    if (f.width !== w || f.height !== h || f.channels !== c) throw pyError('RuntimeError', 'images of one batch must have one size');
    const known = exact.get(f);
    if (known) data.set(known, b * per);
    else {
      const bytes = f.data;
      const base = b * per;
      for (let i = 0; i < per; i++) data[base + i] = bytes[i]! / 255;
    }
  });
  return new Tensor([img.frames.length, h, w, c], data);
}

/** The bytes a float becomes when saved: 255·v clipped to 0..255 and truncated. */
function toByte(v: number): number {
  const x = 255 * v;
  return x <= 0 || Number.isNaN(x) ? 0 : x >= 255 ? 255 : Math.floor(x);
}

export function tensorImage(t: Tensor): ImageBatch {
  const [b, h, w, c] = t.shape as [number, number, number, number];
  if (t.shape.length !== 4 || (c !== 3 && c !== 4)) throw pyError('RuntimeError', `an IMAGE needs shape [B,H,W,3], got [${t.shape.join(', ')}]`);
  const per = h * w * c;
  const frames: Frame[] = [];
  for (let i = 0; i < b; i++) {
    const values = b === 1 ? t.data : t.data.slice(i * per, (i + 1) * per);
    const bytes = Buffer.allocUnsafe(per);
    // toByte inlined: this loop runs over every value of every image a pack node makes.
    for (let j = 0; j < per; j++) {
      const x = 255 * values[j]!;
      bytes[j] = x > 0 ? (x < 255 ? Math.floor(x) : 255) : 0;
    }
    const f = new Frame(w, h, c, bytes);
    exact.set(f, values);
    frames.push(f);
  }
  return new ImageBatch(frames);
}

/** A MASK batch as a [B,H,W] tensor. */
export function maskTensor(m: MaskBatch): Tensor {
  if (m.planes.length === 0) return new Tensor([0, 0, 0], new Float32Array(0));
  const { width: w, height: h } = m.planes[0]!;
  const data = new Float32Array(m.planes.length * w * h);
  m.planes.forEach((p, b) => {
    if (p.width !== w || p.height !== h) throw pyError('RuntimeError', 'masks of one batch must have one size');
    data.set(p.data, b * w * h);
  });
  return new Tensor([m.planes.length, h, w], data);
}

export function tensorMask(t: Tensor): MaskBatch {
  const [b, h, w] = t.shape as [number, number, number];
  const planes: MaskPlane[] = [];
  for (let i = 0; i < b; i++) planes.push(new MaskPlane(w, h, t.data.slice(i * h * w, (i + 1) * h * w)));
  return new MaskBatch(planes);
}

/** torch broadcasting of two shapes, with torch's error text. */
function broadcastShape(a: number[], b: number[]): number[] {
  const n = Math.max(a.length, b.length);
  const out = new Array<number>(n);
  for (let i = 1; i <= n; i++) {
    const x = a[a.length - i] ?? 1;
    const y = b[b.length - i] ?? 1;
    if (x !== y && x !== 1 && y !== 1) {
      throw pyError('RuntimeError', `The size of tensor a (${x}) must match the size of tensor b (${y}) at non-singleton dimension ${n - i}`);
    }
    out[n - i] = x === 1 ? y : x;
  }
  return out;
}

const MAX_ELEMENTS = 256 * 1024 * 1024;

/** An elementwise operation with broadcasting; a number is a 0-d tensor. */
export function binary(a: Tensor | number, b: Tensor | number, op: (x: number, y: number) => number): Tensor {
  const ta = typeof a === 'number' ? new Tensor([], Float32Array.of(a)) : a;
  const tb = typeof b === 'number' ? new Tensor([], Float32Array.of(b)) : b;
  const shape = broadcastShape(ta.shape, tb.shape);
  const size = shape.reduce((x, y) => x * y, 1);
  if (size > MAX_ELEMENTS) throw pyError('RuntimeError', `tensor of ${size} elements is too large`);
  const out = new Float32Array(size);
  // Fast paths for what the pack's nodes mostly do (same shapes, or a tensor and a number):
  // the general loop below steps an index per dimension for every element.
  if (ta.data.length === size && tb.data.length === size && ta.shape.length === tb.shape.length) {
    const da = ta.data;
    const db = tb.data;
    for (let k = 0; k < size; k++) out[k] = op(da[k]!, db[k]!);
    return new Tensor(shape, out);
  }
  if (tb.data.length === 1 && ta.data.length === size) {
    const da = ta.data;
    const y = tb.data[0]!;
    for (let k = 0; k < size; k++) out[k] = op(da[k]!, y);
    return new Tensor(shape, out);
  }
  if (ta.data.length === 1 && tb.data.length === size) {
    const x = ta.data[0]!;
    const db = tb.data;
    for (let k = 0; k < size; k++) out[k] = op(x, db[k]!);
    return new Tensor(shape, out);
  }
  const n = shape.length;
  const strides = (s: number[]) => {
    const padded = [...new Array<number>(n - s.length).fill(1), ...s];
    const st = new Array<number>(n);
    let acc = 1;
    for (let i = n - 1; i >= 0; i--) {
      st[i] = padded[i] === 1 ? 0 : acc;
      acc *= padded[i]!;
    }
    return st;
  };
  const sa = strides(ta.shape);
  const sb = strides(tb.shape);
  const idx = new Array<number>(n).fill(0);
  let ia = 0;
  let ib = 0;
  for (let k = 0; k < size; k++) {
    out[k] = op(ta.data[ia]!, tb.data[ib]!);
    for (let d = n - 1; d >= 0; d--) {
      idx[d]!++;
      ia += sa[d]!;
      ib += sb[d]!;
      if (idx[d]! < shape[d]!) break;
      ia -= sa[d]! * shape[d]!;
      ib -= sb[d]! * shape[d]!;
      idx[d] = 0;
    }
  }
  return new Tensor(shape, out);
}

export const mul = (a: Tensor | number, b: Tensor | number) => binary(a, b, (x, y) => x * y);
export const add = (a: Tensor | number, b: Tensor | number) => binary(a, b, (x, y) => x + y);
export const sub = (a: Tensor | number, b: Tensor | number) => binary(a, b, (x, y) => x - y);

/** torch.stack(ts).mean(dim=0): every tensor must have one shape. */
export function stackMean(ts: Tensor[]): Tensor {
  const first = ts[0]!;
  ts.forEach((t, i) => {
    if (t.shape.length !== first.shape.length || t.shape.some((d, j) => d !== first.shape[j])) {
      throw pyError('RuntimeError', `stack expects each tensor to be equal size, but got [${first.shape.join(', ')}] at entry 0 and [${t.shape.join(', ')}] at entry ${i}`);
    }
  });
  const data = ts.map((t) => t.data);
  const n = data.length;
  const out = new Float32Array(first.data.length);
  for (let j = 0; j < out.length; j++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += data[i]![j]!;
    out[j] = s / n;
  }
  return new Tensor(first.shape, out);
}

/** A [B,H,W,3] image of one value, checked against the service's size limits. */
export function constantImage(batch: number, height: number, width: number, value: number): ImageBatch {
  checkSize(width, height, batch);
  const per = width * height * 3;
  const bytes = Buffer.alloc(per, toByte(value));
  const values = new Float32Array(per).fill(value);
  const frames: Frame[] = [];
  for (let i = 0; i < batch; i++) {
    const f = new Frame(width, height, 3, bytes);
    exact.set(f, values);
    frames.push(f);
  }
  return new ImageBatch(frames);
}

export function noiseImage(batch: number, height: number, width: number): ImageBatch {
  checkSize(width, height, batch);
  const per = width * height * 3;
  const frames: Frame[] = [];
  for (let i = 0; i < batch; i++) frames.push(new Frame(width, height, 3, randomBytes(per)));
  return new ImageBatch(frames);
}

export function constantMask(batch: number, height: number, width: number, value: number): MaskBatch {
  checkSize(width, height, batch);
  const plane = new Float32Array(width * height).fill(value);
  const stored = Math.fround(value);
  return new MaskBatch(
    Array.from({ length: batch }, () => {
      const p = new MaskPlane(width, height, plane);
      if (!Number.isNaN(stored)) ranges.set(p, [stored, stored]);
      return p;
    }),
  );
}

/** Lowest and highest value of each mask plane already scanned (or made constant here). Planes are never written after they are made. */
const ranges = new WeakMap<MaskPlane, [number, number]>();

/**
 * A mask's lowest and highest values (torch's mask.min()/mask.max()), each plane
 * scanned once: the lazy mix asks before and after its inputs arrive and again
 * when it runs, and a scan of a large plane is slow before the JIT has optimised it.
 */
export function maskRange(mask: MaskBatch): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  const first = mask.planes[0];
  for (const p of mask.planes) {
    if (p.width !== first!.width || p.height !== first!.height) throw pyError('RuntimeError', 'masks of one batch must have one size');
    let r = ranges.get(p);
    if (!r) {
      let a = Infinity;
      let b = -Infinity;
      const d = p.data;
      for (let i = 0; i < d.length; i++) {
        const v = d[i]!;
        if (v < a) a = v;
        if (v > b) b = v;
      }
      ranges.set(p, (r = [a, b]));
    }
    if (r[0] < lo) lo = r[0];
    if (r[1] > hi) hi = r[1];
  }
  return [lo, hi];
}

/** A tensor of any value the pack multiplies: IMAGE, MASK or a number. */
export function asTensor(v: unknown): Tensor | number {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (v instanceof ImageBatch) return imageTensor(v);
  if (v instanceof MaskBatch) return maskTensor(v);
  throw pyError('TypeError', `unsupported operand type(s) for *: '${pyTypeName(v)}'`);
}

/** Back to the value type the reference would hold: a 4-D tensor is an IMAGE, a 3-D one a MASK. */
export function fromTensor(t: Tensor | number): unknown {
  if (typeof t === 'number') return t;
  if (t.shape.length === 4) return tensorImage(t);
  if (t.shape.length === 3) return tensorMask(t);
  return t.data.length === 1 ? t.data[0] : t;
}

export function isTensorLike(v: unknown): boolean {
  return v instanceof ImageBatch || v instanceof MaskBatch || v instanceof Tensor;
}

/** Python's type() name of a value, as `<class 'x'>` texts print it. */
export function pyTypeName(v: unknown): string {
  if (v === null || v === undefined) return 'NoneType';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return 'float';
  if (typeof v === 'string') return 'str';
  if (Array.isArray(v)) return 'list';
  if (isTensorLike(v)) return 'torch.Tensor';
  return 'dict';
}

/** Python's str() of a float. */
export function pyFloat(v: number): string {
  if (Number.isInteger(v) && Math.abs(v) < 1e16) return `${v}.0`;
  if (Number.isNaN(v)) return 'nan';
  if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
  return String(v).replace(/e([+-])(\d)$/, 'e$10$2');
}
