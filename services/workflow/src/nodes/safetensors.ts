/**
 * The safetensors format (what comfy.utils.save_torch_file writes and
 * safetensors.torch.load_file reads): an 8-byte little-endian header length,
 * a JSON header `{name: {dtype, shape, data_offsets}, __metadata__?}` padded
 * with spaces to a multiple of 8, then the tensors' bytes. Only float dtypes
 * are read, as float32.
 */
import { numel, Tensor } from './latent.ts';

/** Bounds on what a file may declare before anything is allocated. */
const MAX_HEADER = 100 * 1024 * 1024;

export function encodeSafetensors(tensors: Record<string, Tensor>, metadata?: Record<string, string>): Buffer {
  return Buffer.concat(safetensorsParts(tensors, metadata));
}

/**
 * The bytes of encodeSafetensors as consecutive pieces: the length and
 * header, then each tensor's float32 bytes, as views of its own memory on a
 * little-endian machine (no copy). Written with one writev, a file gets the
 * same bytes without a file-sized buffer being filled first.
 */
export function safetensorsParts(tensors: Record<string, Tensor>, metadata?: Record<string, string>): Uint8Array[] {
  // safetensors orders tensors by dtype alignment, then name; all of these are F32.
  const names = Object.keys(tensors).sort();
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = metadata;
  let offset = 0;
  for (const n of names) {
    const t = tensors[n]!;
    header[n] = { dtype: 'F32', shape: [...t.shape], data_offsets: [offset, offset + t.data.length * 4] };
    offset += t.data.length * 4;
  }
  const json = JSON.stringify(header);
  const jsonLength = Buffer.byteLength(json, 'utf8');
  const pad = (8 - (jsonLength % 8)) % 8;
  const head = Buffer.allocUnsafe(8 + jsonLength + pad);
  head.writeBigUInt64LE(BigInt(jsonLength + pad), 0);
  head.write(json, 8, 'utf8');
  head.fill(0x20, 8 + jsonLength);
  const parts: Uint8Array[] = [head];
  for (const n of names) {
    const d = tensors[n]!.data;
    if (d.length === 0) continue;
    if (LITTLE_ENDIAN) {
      // The float32 bytes as they are in memory: safetensors' own layout on this machine.
      parts.push(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
    } else {
      const out = Buffer.allocUnsafe(d.byteLength);
      for (let i = 0; i < d.length; i++) out.writeFloatLE(d[i]!, i * 4);
      parts.push(out);
    }
  }
  return parts;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

export class SafetensorsError extends Error {
  constructor(message: string) {
    super(`Error while deserializing header: ${message}`);
    this.name = 'SafetensorError';
  }
}

/** Reads the named float tensors of a safetensors file (F32, F16, BF16, F64 as float32). */
export function decodeSafetensors(buf: Buffer, maxValues: number): { tensors: Record<string, Tensor>; metadata: Record<string, string> } {
  if (buf.length < 8) throw new SafetensorsError('HeaderTooSmall');
  const n = buf.readBigUInt64LE(0);
  if (n > BigInt(Math.min(MAX_HEADER, buf.length - 8))) throw new SafetensorsError('HeaderTooLarge');
  let header: Record<string, any>;
  try {
    header = JSON.parse(buf.subarray(8, 8 + Number(n)).toString('utf8'));
  } catch {
    throw new SafetensorsError('InvalidHeaderDeserialization');
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) throw new SafetensorsError('InvalidHeaderDeserialization');
  const base = 8 + Number(n);
  const tensors: Record<string, Tensor> = Object.create(null);
  const metadata: Record<string, string> = Object.create(null);
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') {
      if (info && typeof info === 'object') for (const [k, v] of Object.entries(info)) if (typeof v === 'string') metadata[k] = v;
      continue;
    }
    const { dtype, shape, data_offsets: off } = info ?? {};
    const size = { F32: 4, F16: 2, BF16: 2, F64: 8 }[dtype as string];
    if (!Array.isArray(shape) || !shape.every((s) => Number.isSafeInteger(s) && s >= 0) || !Array.isArray(off) || off.length !== 2) throw new SafetensorsError(`InvalidTensorView for ${name}`);
    if (size === undefined) throw new SafetensorsError(`unsupported dtype ${String(dtype)} of ${name}`);
    const count = numel(shape);
    if (count > maxValues) throw new RangeError(`tensor ${name} of shape [${shape.join(', ')}] exceeds the limit of ${maxValues} values`);
    const [a, b] = off as number[];
    if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b) || a! < 0 || b! - a! !== count * size || base + b! > buf.length) throw new SafetensorsError(`InvalidOffset for ${name}`);
    const data = new Float32Array(count);
    const at = base + a!;
    for (let i = 0; i < count; i++) {
      const o = at + i * size;
      if (dtype === 'F32') data[i] = buf.readFloatLE(o);
      else if (dtype === 'F64') data[i] = buf.readDoubleLE(o);
      else if (dtype === 'BF16') data[i] = bf16(buf.readUInt16LE(o));
      else data[i] = f16(buf.readUInt16LE(o));
    }
    tensors[name] = new Tensor(shape, data);
  }
  return { tensors, metadata };
}

const scratch = new DataView(new ArrayBuffer(4));
function bf16(bits: number): number {
  scratch.setUint32(0, bits << 16);
  return scratch.getFloat32(0);
}

function f16(bits: number): number {
  const s = bits & 0x8000 ? -1 : 1;
  const e = (bits >> 10) & 0x1f;
  const m = bits & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
