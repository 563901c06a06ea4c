/**
 * A .safetensors reader that treats the file as hostile input. The header is
 * parsed once and every entry checked (dtype known, shape of non-negative
 * safe integers, byte length = values × dtype size, offsets inside the data
 * area, no two tensors overlapping) before anything else reads the file.
 * Tensors are read lazily, one at a time, with positioned reads; the graph
 * builders never read weights at all but point ONNX external data at
 * `fileOffset(name)`, so the file is never copied whole.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isLegacyTorch, TorchFile, ZIP_MAGIC } from './torch-zip.ts';

/** The largest header accepted (the safetensors crate refuses more than 100 MB too). */
export const MAX_HEADER_BYTES = 100_000_000;

export { DTYPE_SIZE, ModelFileError, type Dtype, type TensorInfo } from './tensor-file.ts';
import { DTYPE_SIZE, ModelFileError, type Dtype, type TensorInfo } from './tensor-file.ts';

export class SafetensorsFile {
  readonly tensors: ReadonlyMap<string, TensorInfo>;
  readonly metadata: Readonly<Record<string, string>>;
  /** Absolute byte offset of the data area (8 + header length; 0 for a PyTorch file, whose ranges are absolute). */
  readonly dataStart: number;

  private constructor(
    readonly path: string,
    readonly size: number,
    dataStart: number,
    tensors: Map<string, TensorInfo>,
    metadata: Record<string, string>,
    /** What the file is: safetensors, or a PyTorch zip checkpoint read in place (torch-zip.ts). */
    readonly format: 'safetensors' | 'torch' = 'safetensors',
  ) {
    this.dataStart = dataStart;
    this.tensors = tensors;
    this.metadata = metadata;
  }

  /**
   * Opens and checks a model file; throws ModelFileError naming the file and
   * the problem. The content decides the format, whatever the name: a zip is
   * a PyTorch checkpoint (torch.save since 1.6), read through the restricted
   * unpickler as the reference's torch.load(weights_only=True) and viewed as
   * its state dict (load_torch_file's choice); a legacy pickle is refused;
   * anything else is read as safetensors.
   */
  static async open(file: string): Promise<SafetensorsFile> {
    const head = await readHead(file);
    if (head.subarray(0, 4).equals(ZIP_MAGIC)) {
      const torch = await TorchFile.open(file);
      return SafetensorsFile.ofTorch(torch, torch.tensorsOf(torch.stateDict()));
    }
    if (isLegacyTorch(head)) throw new ModelFileError(file, 'a legacy PyTorch pickle (saved by torch < 1.6 or with _use_new_zipfile_serialization=False) cannot be read safely here: re-save it with a current torch.save or convert it to .safetensors');
    if (/\.(ckpt|pt|pth|bin)$/i.test(file)) {
      return SafetensorsFile.openSafetensors(file).catch((err: unknown) => {
        if (err instanceof ModelFileError) throw new ModelFileError(file, `neither a PyTorch zip checkpoint (torch.save's format) nor a safetensors file (${err.message.slice(path.basename(file).length + 2)})`);
        throw err;
      });
    }
    return SafetensorsFile.openSafetensors(file);
  }

  private static async openSafetensors(file: string): Promise<SafetensorsFile> {
    const fh = await fs.promises.open(file, 'r').catch((err: NodeJS.ErrnoException) => {
      throw new ModelFileError(file, `cannot open (${err.code ?? err.message})`);
    });
    try {
      const { size } = await fh.stat();
      if (size < 8) throw new ModelFileError(file, `file of ${size} bytes is too short for a safetensors header`);
      const lenBuf = Buffer.alloc(8);
      await readExactly(fh, lenBuf, 0, file);
      const headerLen = lenBuf.readBigUInt64LE(0);
      if (headerLen > BigInt(MAX_HEADER_BYTES)) throw new ModelFileError(file, `header of ${headerLen} bytes exceeds the limit of ${MAX_HEADER_BYTES}`);
      const n = Number(headerLen);
      if (8 + n > size) throw new ModelFileError(file, `header length ${n} runs past the end of the file (${size} bytes): truncated or not a safetensors file`);
      if (n < 2) throw new ModelFileError(file, `header of ${n} bytes cannot hold a JSON object`);
      const headerBuf = Buffer.alloc(n);
      await readExactly(fh, headerBuf, 8, file);
      const { tensors, metadata } = parseHeader(headerBuf, size - 8 - n, file);
      return new SafetensorsFile(file, size, 8 + n, tensors, metadata);
    } finally {
      await fh.close();
    }
  }

  /** A PyTorch file's tensors (absolute byte ranges) as a file of this class, so graphs point at its bytes alike. */
  static ofTorch(torch: TorchFile, tensors: Map<string, TensorInfo>): SafetensorsFile {
    return new SafetensorsFile(torch.path, torch.size, 0, tensors, Object.create(null) as Record<string, string>, 'torch');
  }

  has(name: string): boolean {
    return this.tensors.has(name);
  }

  /** The same file with its tensors under other names (`rename` → undefined drops one); offsets and bytes are unchanged. */
  renamed(rename: (name: string) => string | undefined): SafetensorsFile {
    const tensors = new Map<string, TensorInfo>();
    for (const [k, t] of this.tensors) {
      const n = rename(k);
      if (n !== undefined) tensors.set(n, t);
    }
    return new SafetensorsFile(this.path, this.size, this.dataStart, tensors, { ...this.metadata }, this.format);
  }

  info(name: string): TensorInfo {
    const t = this.tensors.get(name);
    if (!t) throw new ModelFileError(this.path, `tensor ${JSON.stringify(name)} is missing`);
    return t;
  }

  /** Absolute file offset of a tensor's bytes (ONNX external data `offset`). */
  fileOffset(name: string): number {
    return this.dataStart + this.info(name).begin;
  }

  /** Reads one float tensor (F64/F32/F16/BF16) as float32. */
  async readFloat32(name: string): Promise<Float32Array> {
    const t = this.info(name);
    const raw = await this.readBytes(t);
    return toFloat32(raw, t.dtype, this.path, name);
  }

  /** The tensor's raw little-endian bytes. */
  async readBytes(t: TensorInfo): Promise<Buffer> {
    const buf = Buffer.alloc(t.end - t.begin);
    const fh = await fs.promises.open(this.path, 'r');
    try {
      // The file may have been truncated since it was opened: a short read is an error, not zeros.
      await readExactly(fh, buf, this.dataStart + t.begin, this.path);
    } finally {
      await fh.close();
    }
    return buf;
  }
}

/** The first bytes of a file (fewer when it is shorter), to tell the formats apart. */
async function readHead(file: string): Promise<Buffer> {
  const fh = await fs.promises.open(file, 'r').catch((err: NodeJS.ErrnoException) => {
    throw new ModelFileError(file, `cannot open (${err.code ?? err.message})`);
  });
  try {
    const buf = Buffer.alloc(16);
    const { bytesRead } = await fh.read(buf, 0, 16, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

async function readExactly(fh: fs.promises.FileHandle, buf: Buffer, position: number, file: string): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesRead } = await fh.read(buf, done, buf.length - done, position + done);
    if (bytesRead === 0) throw new ModelFileError(file, `file ended at byte ${position + done}, expected ${buf.length - done} more bytes (truncated)`);
    done += bytesRead;
  }
}

function parseHeader(buf: Buffer, dataBytes: number, file: string): { tensors: Map<string, TensorInfo>; metadata: Record<string, string> } {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch {
    throw new ModelFileError(file, 'header is not valid UTF-8');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ModelFileError(file, `header is not valid JSON (${(err as Error).message})`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new ModelFileError(file, 'header is not a JSON object');
  const tensors = new Map<string, TensorInfo>();
  const metadata: Record<string, string> = Object.create(null);
  for (const [name, entry] of Object.entries(json as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new ModelFileError(file, '__metadata__ is not an object');
      for (const [k, v] of Object.entries(entry)) {
        if (typeof v !== 'string') throw new ModelFileError(file, `__metadata__ value of ${JSON.stringify(k)} is not a string`);
        metadata[k] = v;
      }
      continue;
    }
    tensors.set(name, checkEntry(name, entry, dataBytes, file));
  }
  // Overlapping ranges would let one tensor's bytes be read as another's.
  const sorted = [...tensors.values()].filter((t) => t.end > t.begin).sort((a, b) => a.begin - b.begin);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.begin < sorted[i - 1]!.end) throw new ModelFileError(file, `tensors ${JSON.stringify(sorted[i - 1]!.name)} and ${JSON.stringify(sorted[i]!.name)} overlap`);
  }
  return { tensors, metadata };
}

function checkEntry(name: string, entry: unknown, dataBytes: number, file: string): TensorInfo {
  const where = `tensor ${JSON.stringify(name)}`;
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new ModelFileError(file, `${where}: entry is not an object`);
  const { dtype, shape, data_offsets: offsets } = entry as Record<string, unknown>;
  if (typeof dtype !== 'string' || !Object.hasOwn(DTYPE_SIZE, dtype)) throw new ModelFileError(file, `${where}: unknown dtype ${JSON.stringify(dtype)}`);
  if (!Array.isArray(shape) || shape.length > 8 || !shape.every((s) => Number.isSafeInteger(s) && s >= 0)) throw new ModelFileError(file, `${where}: invalid shape ${JSON.stringify(shape)}`);
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && o >= 0)) throw new ModelFileError(file, `${where}: invalid data_offsets ${JSON.stringify(offsets)}`);
  const [begin, end] = offsets as [number, number];
  let count = 1;
  for (const s of shape as number[]) {
    count *= s;
    if (count > Number.MAX_SAFE_INTEGER) throw new ModelFileError(file, `${where}: shape ${JSON.stringify(shape)} is too large`);
  }
  const bytes = count * DTYPE_SIZE[dtype as Dtype];
  if (end < begin || end - begin !== bytes) throw new ModelFileError(file, `${where}: data_offsets [${begin}, ${end}] do not hold ${bytes} bytes of ${dtype} ${JSON.stringify(shape)}`);
  if (end > dataBytes) throw new ModelFileError(file, `${where}: data_offsets [${begin}, ${end}] run past the end of the data (${dataBytes} bytes): truncated file`);
  return { name, dtype: dtype as Dtype, shape: Object.freeze([...(shape as number[])]), begin, end };
}

/** Float bytes → float32 (F16 and BF16 widened exactly). */
export function toFloat32(raw: Buffer, dtype: Dtype, file: string, name: string): Float32Array {
  const n = raw.length / DTYPE_SIZE[dtype];
  const out = new Float32Array(n);
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  switch (dtype) {
    case 'F32':
      for (let i = 0; i < n; i++) out[i] = view.getFloat32(i * 4, true);
      break;
    case 'F64':
      for (let i = 0; i < n; i++) out[i] = view.getFloat64(i * 8, true);
      break;
    case 'F16':
      for (let i = 0; i < n; i++) out[i] = halfToFloat(view.getUint16(i * 2, true));
      break;
    case 'BF16': {
      const u32 = new Uint32Array(out.buffer);
      for (let i = 0; i < n; i++) u32[i] = view.getUint16(i * 2, true) << 16;
      break;
    }
    default:
      throw new ModelFileError(file, `tensor ${JSON.stringify(name)} has dtype ${dtype}, expected a float type`);
  }
  return out;
}

export function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const e = (bits >> 10) & 0x1f;
  const m = bits & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}
