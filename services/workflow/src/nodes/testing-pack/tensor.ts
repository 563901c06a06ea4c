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

  min(): number {
    let m = Infinity;
    for (const v of this.data) if (v < m) m = v;
    return m;
  }

  max(): number {
    let m = -Infinity;
    for (const v of this.data) if (v > m) m = v;
    return m;
  }

  mean(): number {
    let s = 0;
    for (const v of this.data) s += v;
    return this.data.length === 0 ? NaN : s / this.data.length;
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
  const data = new Float32Array(per * img.frames.length);
  img.frames.forEach((f, b) => {
    if (f.width !== w || f.height !== h || f.channels !== c) throw pyError('RuntimeError', 'images of one batch must have one size');
    const known = exact.get(f);
    if (known) data.set(known, b * per);
    else for (let i = 0; i < per; i++) data[b * per + i] = f.data[i]! / 255;
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
    const values = t.data.slice(i * per, (i + 1) * per);
    const bytes = Buffer.allocUnsafe(per);
    for (let j = 0; j < per; j++) bytes[j] = toByte(values[j]!);
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
  const out = new Float32Array(first.data.length);
  for (let j = 0; j < out.length; j++) {
    let s = 0;
    for (const t of ts) s += t.data[j]!;
    out[j] = s / ts.length;
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
  return new MaskBatch(Array.from({ length: batch }, () => new MaskPlane(width, height, plane)));
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
