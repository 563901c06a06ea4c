/**
 * Image kernels run by ONNX Runtime (onnxruntime-node, MLAS's vectorised CPU
 * operators) where the reference's torch operations map onto ONNX operators
 * with the same semantics and were measured faster than the alternatives
 * (`Resize` with `half_pixel` coordinates is torch's bilinear/bicubic too, but
 * was no faster than resample.ts for linear and runs its cubic shrink only
 * unoptimised, so it is not used):
 *
 * - `Pad` mode `reflect` + depthwise `Conv` is the reference's ImageBlur and
 *   ImageSharpen (`F.pad(…, 'reflect')` then `F.conv2d(…, groups=C)`); the
 *   reference's Gaussian is the outer product of one 1-D kernel, so it runs as
 *   a 1×K and a K×1 convolution (2K instead of K² multiplies per sample).
 *
 * Frames go in and come out as 8-bit HWC; the graphs cast to float, work in
 * NCHW as torch does, and round to the nearest byte (floor(x + 0.5), as
 * `clampByte`). One session per graph and channel count, made on first use in
 * the thread that runs the node (sessions are per thread, like the node's
 * registry); ONNX Runtime's native library loads with the first one.
 *
 * Threads: `WORKFLOW_IMAGE_THREADS` per operator (default 1: on this 2-core
 * machine a second thread made the convolutions no faster and small ones
 * slower, and every execution thread has its own sessions), without
 * spin-waiting between operators (a busy machine would lose cores to it).
 */
import { createRequire } from 'node:module';
import type * as Ort from 'onnxruntime-node';
import { DataType, encodeModel, type NodeSpec, type TensorValue } from '../models/onnx-proto.ts';
import { counted, nativeCall } from '../models/native-calls.ts';

type OrtModule = typeof Ort;
let ortModule: OrtModule | undefined;
let ortFailed: unknown;

function loadOrt(): OrtModule | undefined {
  if (ortModule || ortFailed) return ortModule;
  try {
    ortModule = createRequire(import.meta.url)('onnxruntime-node') as OrtModule;
  } catch (e) {
    ortFailed = e;
  }
  return ortModule;
}

/** Whether the ONNX kernels can run here (ONNX Runtime loads); WORKFLOW_IMAGE_KERNELS=js turns them off. */
export function onnxKernelsAvailable(): boolean {
  if (process.env.WORKFLOW_IMAGE_KERNELS === 'js') return false;
  return loadOrt() !== undefined;
}

function threads(): number {
  const n = Number(process.env.WORKFLOW_IMAGE_THREADS);
  if (Number.isInteger(n) && n > 0) return n;
  return 1;
}

const sessions = new Map<string, Promise<Ort.InferenceSession>>();

function session(key: string, build: () => Uint8Array): Promise<Ort.InferenceSession> {
  let s = sessions.get(key);
  if (!s) {
    const ort = loadOrt()!;
    const model = build();
    s = nativeCall(() =>
      ort.InferenceSession.create(model, {
        graphOptimizationLevel: 'all',
        executionMode: 'sequential',
        intraOpNumThreads: threads(),
        interOpNumThreads: 1,
        extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
      }),
    ).then(counted);
    // A failed creation is not kept: the next call tries again.
    s.catch(() => sessions.delete(key));
    sessions.set(key, s);
  }
  return s;
}

function f32(...v: number[]): Uint8Array {
  return new Uint8Array(new Float32Array(v).buffer);
}

const CONSTANTS: TensorValue[] = [
  { name: 'half', dataType: DataType.FLOAT, dims: [], raw: f32(0.5) },
  { name: 'zero', dataType: DataType.FLOAT, dims: [], raw: f32(0) },
  { name: 'top', dataType: DataType.FLOAT, dims: [], raw: f32(255) },
];

/** uint8 NHWC `x` → float NCHW `xt`. */
const IN: NodeSpec[] = [
  { op: 'Cast', inputs: ['x'], outputs: ['xf'], attrs: { to: DataType.FLOAT } },
  { op: 'Transpose', inputs: ['xf'], outputs: ['xt'], attrs: { perm: [0, 3, 1, 2] } },
];

/** float NCHW `from` → uint8 NHWC `y`, each value rounded half up and clamped to 0..255. */
function out(from: string): NodeSpec[] {
  return [
    { op: 'Transpose', inputs: [from], outputs: ['ot'], attrs: { perm: [0, 2, 3, 1] } },
    { op: 'Add', inputs: ['ot', 'half'], outputs: ['oh'] },
    { op: 'Floor', inputs: ['oh'], outputs: ['of'] },
    { op: 'Clip', inputs: ['of', 'zero', 'top'], outputs: ['oc'] },
    { op: 'Cast', inputs: ['oc'], outputs: ['y'], attrs: { to: DataType.UINT8 } },
  ];
}

/**
 * Reflect-padded separable convolution with the kernel `kh` (C×1×1×K) then
 * `kv` (C×1×K×1); `sharpen` mixes the result with the input: p·x + q·conv.
 */
function convGraph(channels: number, sharpen: boolean, strip = false): Uint8Array {
  const nodes: NodeSpec[] = [
    ...IN,
    { op: 'Pad', inputs: ['xt', 'pads'], outputs: ['xp'], attrs: { mode: 'reflect' } },
    { op: 'Conv', inputs: ['xp', 'kh'], outputs: ['c1'], attrs: { group: channels } },
    { op: 'Conv', inputs: ['c1', 'kv'], outputs: ['c2'], attrs: { group: channels } },
  ];
  let result = 'c2';
  if (sharpen) {
    // A strip carries its halo rows: the input it mixes with is its rows ys..ye.
    if (strip) nodes.push({ op: 'Slice', inputs: ['xt', 'ys', 'ye', 'axis2'], outputs: ['xs'] });
    nodes.push(
      { op: 'Mul', inputs: [strip ? 'xs' : 'xt', 'p'], outputs: ['px'] },
      { op: 'Mul', inputs: ['c2', 'q'], outputs: ['qc'] },
      { op: 'Add', inputs: ['px', 'qc'], outputs: ['mix'] },
    );
    result = 'mix';
  }
  nodes.push(...out(result));
  return encodeModel({
    name: `conv${channels}${sharpen ? '-sharpen' : ''}${strip ? '-strip' : ''}`,
    nodes,
    initializers: strip && sharpen ? [...CONSTANTS, { name: 'axis2', dataType: DataType.INT64, dims: [1], raw: new Uint8Array(BigInt64Array.of(2n).buffer) }] : CONSTANTS,
    inputs: [
      { name: 'x', elemType: DataType.UINT8, dims: [1, 'h', 'w', channels] },
      { name: 'kh', elemType: DataType.FLOAT, dims: [channels, 1, 1, 'k'] },
      { name: 'kv', elemType: DataType.FLOAT, dims: [channels, 1, 'k', 1] },
      { name: 'pads', elemType: DataType.INT64, dims: [8] },
      ...(sharpen
        ? [
            { name: 'p', elemType: DataType.FLOAT, dims: [1] },
            { name: 'q', elemType: DataType.FLOAT, dims: [1] },
          ]
        : []),
      ...(sharpen && strip
        ? [
            { name: 'ys', elemType: DataType.INT64, dims: [1] },
            { name: 'ye', elemType: DataType.INT64, dims: [1] },
          ]
        : []),
    ],
    outputs: [{ name: 'y', elemType: DataType.UINT8, dims: [1, 'h', 'w', channels] }],
  });
}

function bytesOf(t: Ort.Tensor): Buffer {
  const d = t.data as Uint8Array;
  return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
}

function u8(data: Uint8Array): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * Frames above this many pixels (2048²) are convolved in horizontal strips of
 * about STRIP_PIXELS: ONNX Runtime's float NCHW copies of a whole frame take
 * about 34 bytes per pixel (0.5–0.7 GiB at 4096²), a strip's about 70 MiB
 * whatever the frame (4096², radius 5 to 31: +120–135 MiB with the output).
 */
const TILE_ABOVE_PIXELS = 1 << 22;
const STRIP_PIXELS = 1 << 19;

/**
 * The reference's 2-D convolution by `k1d`⊗`k1d` with reflect padding (the
 * radius must be below both sides, as torch's reflect padding requires), as
 * p·x + q·conv(x) (blur: p = 0, q = 1), rounded to bytes.
 *
 * A frame above TILE_ABOVE_PIXELS (or any frame, with `stripRows`) goes
 * through in strips of rows: each strip with r rows of halo above and below,
 * taken from the frame or, at its top and bottom edges, reflected as torch
 * reflects them, so that ONNX Runtime pads only the sides; every output
 * sample sees the same neighbourhood and the same arithmetic as in one call.
 */
export async function onnxSeparableConv(data: Uint8Array, w: number, h: number, c: number, k1d: ArrayLike<number>, p = 0, q = 1, stripRows?: number): Promise<Buffer> {
  const ort = loadOrt()!;
  const K = k1d.length;
  const r = (K - 1) / 2;
  const sharpen = p !== 0 || q !== 1;
  const kern = new Float32Array(c * K);
  for (let ch = 0; ch < c; ch++) for (let i = 0; i < K; i++) kern[ch * K + i] = k1d[i]!;
  const feeds: Record<string, Ort.Tensor> = {
    kh: new ort.Tensor('float32', kern, [c, 1, 1, K]),
    kv: new ort.Tensor('float32', kern, [c, 1, K, 1]),
  };
  if (sharpen) {
    feeds.p = new ort.Tensor('float32', Float32Array.of(p), [1]);
    feeds.q = new ort.Tensor('float32', Float32Array.of(q), [1]);
  }
  // At least 8r rows per strip, so that the halo adds at most a quarter to the work.
  const rows = stripRows ?? (w * h > TILE_ABOVE_PIXELS ? Math.max(1, Math.floor(STRIP_PIXELS / w), 8 * r) : h);
  if (rows >= h) {
    const s = await session(`conv${c}${sharpen ? '-sharpen' : ''}`, () => convGraph(c, sharpen));
    feeds.x = new ort.Tensor('uint8', u8(data), [1, h, w, c]);
    feeds.pads = new ort.Tensor('int64', BigInt64Array.from([0, 0, r, r, 0, 0, r, r].map(BigInt)), [8]);
    const res = await s.run(feeds);
    return bytesOf(res.y!);
  }
  const s = await session(`conv${c}${sharpen ? '-sharpen' : ''}-strip`, () => convGraph(c, sharpen, true));
  feeds.pads = new ort.Tensor('int64', BigInt64Array.from([0, 0, 0, r, 0, 0, 0, r].map(BigInt)), [8]);
  if (sharpen) {
    feeds.ys = new ort.Tensor('int64', BigInt64Array.of(BigInt(r)), [1]);
  }
  const rowLen = w * c;
  const src = u8(data);
  const result = Buffer.allocUnsafe(h * rowLen);
  const strip = new Uint8Array((rows + 2 * r) * rowLen);
  for (let y0 = 0; y0 < h; y0 += rows) {
    const n = Math.min(rows, h - y0);
    const total = n + 2 * r;
    // Rows y0 − r … y0 + n + r − 1 of the frame, reflected at its edges (torch's reflect: the edge row is not repeated).
    const first = y0 - r;
    const inside0 = Math.max(0, first);
    const inside1 = Math.min(h, y0 + n + r);
    strip.set(src.subarray(inside0 * rowLen, inside1 * rowLen), (inside0 - first) * rowLen);
    for (let i = first; i < inside0; i++) strip.set(src.subarray(-i * rowLen, -i * rowLen + rowLen), (i - first) * rowLen);
    for (let i = inside1; i < y0 + n + r; i++) {
      const from = 2 * (h - 1) - i;
      strip.set(src.subarray(from * rowLen, from * rowLen + rowLen), (i - first) * rowLen);
    }
    feeds.x = new ort.Tensor('uint8', strip.subarray(0, total * rowLen), [1, total, w, c]);
    if (sharpen) feeds.ye = new ort.Tensor('int64', BigInt64Array.of(BigInt(r + n)), [1]);
    const res = await s.run(feeds);
    result.set(u8(res.y!.data as Uint8Array), y0 * rowLen);
  }
  return result;
}
