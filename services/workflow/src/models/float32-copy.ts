/**
 * Float32 weights prepared once per checkpoint into one file that every
 * session of the checkpoint reads as external data: the half-precision
 * (F16/BF16) tensors widened, and linear layers' weights transposed to the
 * [in, out] layout MatMul reads. ONNX Runtime maps external-data files into
 * memory, so a weight it can use as stored stays page cache, shared by all
 * the sessions that use it (a UNet has one session per attention slicing)
 * and given back to the system under pressure. A Cast or a Transpose of a
 * weight, the other way, is folded at session creation into a private copy
 * per session, made while the bytes it came from are held too: SDXL's UNet
 * needed 20 GB that way.
 *
 * The file lives in the work folder as `svc-f32-<pid>-<thread>-<n>.bin` until the
 * checkpoint is released; one left by a process that died is removed by the
 * next process that makes one.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import { halfToFloat } from './safetensors.ts';
import { DTYPE_SIZE, type Dtype } from './tensor-file.ts';

/** The external-data name sessions see the copy under. */
export const FLOAT32_LOCATION = 'weights-f32.bin';

/** Offsets in the copy are multiples of this (cache lines; ONNX Runtime's kernels like aligned weights). */
const ALIGN = 64;
/** Source bytes converted per read. */
const CHUNK = 16 * 2 ** 20;

export class Float32CopyError extends Error {}

export type SourceDtype = 'F32' | 'F16' | 'BF16';

interface Entry {
  /** Absolute offset of the tensor's bytes in the source file. */
  source: number;
  /** Source bytes. */
  bytes: number;
  dtype: SourceDtype;
  /** Written transposed: the tensor read as a [rows, cols] matrix. */
  transpose?: readonly [number, number];
  /** Offset of its float32 values in the copy. */
  offset: number;
}

/** Transposed entries are converted whole in memory: a linear layer's weight is far below this. */
const MAX_TRANSPOSED_BYTES = 1 << 30;

let halfTable: Float32Array | undefined;
/** Every F16 bit pattern's float32 value (256 KiB, made once): converting a tensor is one lookup per value. */
function f16Table(): Float32Array {
  halfTable ??= Float32Array.from({ length: 65536 }, (_, h) => halfToFloat(h));
  return halfTable;
}

let sequence = 0;

/**
 * Copies not disposed yet. A checkpoint nobody releases (a loader's file kept
 * outside the model cache) leaves its copy to the garbage collector, and the
 * process's end removes what is left; a process that is killed leaves them to
 * the next one's sweep.
 */
const live = new Set<string>();
const collected = new FinalizationRegistry<string>((file) => {
  live.delete(file);
  fs.rm(file, { force: true }, () => {});
});
process.once('exit', () => {
  for (const file of live) {
    try {
      fs.rmSync(file, { force: true });
    } catch {
      // Best effort: the next process's sweep removes it.
    }
  }
});
const swept = new Set<string>();

/** Removes copies whose process is gone (a crash, a kill), once per process and folder. */
async function sweep(dir: string): Promise<void> {
  if (swept.has(dir)) return;
  swept.add(dir);
  const names = await fs.promises.readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const m = /^svc-f32-(\d+)-\d+-\d+\.bin$/.exec(name);
    if (!m || Number(m[1]) === process.pid) continue;
    try {
      process.kill(Number(m[1]), 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') await fs.promises.rm(path.join(dir, name), { force: true });
    }
  }
}

export class Float32Copy {
  private readonly entries = new Map<string, Entry>();
  private readonly order: Entry[] = [];
  private size = 0;
  private written = 0;
  private queue: Promise<void> = Promise.resolve();
  private disposed = false;
  readonly path: string;

  /**
   * @param source the checkpoint file the tensors are read from
   * @param workDir the folder for the copy (the sessions' work folder: a hard link must reach it)
   */
  constructor(
    readonly source: string,
    workDir: string = os.tmpdir(),
  ) {
    // Execution threads of one process each count from 0: the thread's id keeps their names apart.
    this.path = path.join(workDir, `svc-f32-${process.pid}-${threadId}-${sequence++}.bin`);
    live.add(this.path);
    collected.register(this, this.path, this);
  }

  /**
   * Where the float32 values of the tensor at `source` (absolute offset,
   * `bytes` long) will be, transposed as a [rows, cols] matrix if asked;
   * planned once, written by flush().
   */
  plan(source: number, bytes: number, dtype: SourceDtype, transpose?: readonly [number, number]): { offset: number; length: number } {
    const length = (bytes / DTYPE_SIZE[dtype as Dtype]) * 4;
    if (transpose && (transpose[0] * transpose[1] * 4 !== length || length > MAX_TRANSPOSED_BYTES)) throw new Float32CopyError(`cannot transpose ${length / 4} values as ${transpose.join('x')}`);
    const key = transpose ? `${source}T` : String(source);
    let e = this.entries.get(key);
    if (!e) {
      e = { source, bytes, dtype, offset: this.size, ...(transpose ? { transpose } : {}) };
      this.entries.set(key, e);
      this.order.push(e);
      this.size += Math.ceil(length / ALIGN) * ALIGN;
    }
    return { offset: e.offset, length };
  }

  /** Whether any tensor was planned (a graph of float32 weights needs no copy). */
  get empty(): boolean {
    return this.order.length === 0;
  }

  /** Writes what was planned and not written yet (calls run one after another). */
  flush(): Promise<void> {
    const run = this.queue.then(() => this.writePending());
    this.queue = run.catch(() => {});
    return run;
  }

  private async writePending(): Promise<void> {
    if (this.disposed) throw new Float32CopyError('the checkpoint was released');
    if (this.written > 0) {
      // Removed behind our back (a cleaned temporary folder): sessions made from now on need every value again.
      const last = this.order[this.written - 1]!;
      const size = (await fs.promises.stat(this.path).catch(() => null))?.size ?? 0;
      if (size < last.offset + (last.bytes / DTYPE_SIZE[last.dtype]) * 4) this.written = 0;
    }
    if (this.written === this.order.length) return;
    await fs.promises.mkdir(path.dirname(this.path), { recursive: true });
    if (this.written === 0) await sweep(path.dirname(this.path));
    const src = await fs.promises.open(this.source, 'r');
    // Not O_APPEND: Linux appends every positional write of an appending file at its end.
    const dst = await fs.promises.open(this.path, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600).catch((err: NodeJS.ErrnoException) => {
      void src.close();
      throw new Float32CopyError(`cannot make the float32 copy of ${path.basename(this.source)}'s weights in ${path.dirname(this.path)} (${err.code ?? err.message})`);
    });
    try {
      const inBuf = Buffer.allocUnsafe(CHUNK);
      const out = new Float32Array(CHUNK / 2);
      const outBytes = new Uint8Array(out.buffer);
      const outBits = new Uint32Array(out.buffer);
      const table = f16Table();
      while (this.written < this.order.length) {
        const e = this.order[this.written]!;
        if (e.transpose) {
          await writeAll(dst, new Uint8Array(transposed(await readAll(src, e, this.source), e.transpose).buffer), e.offset, this.path);
          this.written++;
          continue;
        }
        for (let done = 0; done < e.bytes; ) {
          const n = Math.min(CHUNK, e.bytes - done);
          const { bytesRead } = await src.read(inBuf, 0, n, e.source + done);
          if (bytesRead !== n) throw new Float32CopyError(`${path.basename(this.source)} is shorter than its header says (it changed after it was opened)`);
          const halves = new Uint16Array(inBuf.buffer, inBuf.byteOffset, n / 2);
          if (e.dtype === 'F16') for (let i = 0; i < halves.length; i++) out[i] = table[halves[i]!]!;
          else for (let i = 0; i < halves.length; i++) outBits[i] = halves[i]! << 16;
          await writeAll(dst, outBytes.subarray(0, n * 2), e.offset + done * 2, this.path);
          done += n;
        }
        this.written++;
      }
    } finally {
      await Promise.all([src.close(), dst.close()]);
    }
  }

  /** Deletes the file; sessions that mapped it keep their pages until they are released. */
  async dispose(): Promise<void> {
    this.disposed = true;
    collected.unregister(this);
    live.delete(this.path);
    await this.queue;
    await fs.promises.rm(this.path, { force: true });
  }
}

async function readAll(fh: fs.promises.FileHandle, e: Entry, file: string): Promise<Float32Array> {
  const buf = Buffer.allocUnsafeSlow(e.bytes);
  const { bytesRead } = await fh.read(buf, 0, e.bytes, e.source);
  if (bytesRead !== e.bytes) throw new Float32CopyError(`${path.basename(file)} is shorter than its header says (it changed after it was opened)`);
  if (e.dtype === 'F32') return new Float32Array(buf.buffer, buf.byteOffset, e.bytes / 4);
  const halves = new Uint16Array(buf.buffer, buf.byteOffset, e.bytes / 2);
  const out = new Float32Array(halves.length);
  if (e.dtype === 'F16') {
    const table = f16Table();
    for (let i = 0; i < halves.length; i++) out[i] = table[halves[i]!]!;
  } else {
    const bits = new Uint32Array(out.buffer);
    for (let i = 0; i < halves.length; i++) bits[i] = halves[i]! << 16;
  }
  return out;
}

/** A [rows, cols] matrix as [cols, rows]. */
function transposed(m: Float32Array, [rows, cols]: readonly [number, number]): Float32Array {
  const t = new Float32Array(m.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = m[r * cols + c]!;
  return t;
}

async function writeAll(fh: fs.promises.FileHandle, data: Uint8Array, at: number, file: string): Promise<void> {
  for (let done = 0; done < data.length; ) {
    const { bytesWritten } = await fh.write(data, done, data.length - done, at + done).catch((err: NodeJS.ErrnoException) => {
      throw new Float32CopyError(`cannot write the float32 copy of a checkpoint's weights to ${file} (${err.code ?? err.message})`);
    });
    done += bytesWritten;
  }
}
