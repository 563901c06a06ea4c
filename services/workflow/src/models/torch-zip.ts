/**
 * PyTorch checkpoints (.ckpt, .pt, .pth, .bin) in torch.save's zip format
 * (the default since torch 1.6), read in place as the safetensors reader does:
 * `<archive>/data.pkl` is run by the restricted unpickler (pickle.ts: the
 * rules of torch.load(weights_only=True), which the reference uses), and each
 * tensor becomes a byte range inside its storage's zip entry
 * `<archive>/data/<key>`. torch writes those entries STORED (uncompressed),
 * so their bytes sit at a fixed offset in the file and graphs point ONNX
 * external data at them: no copy. The zip is checked as hostile input: end
 * records, zip64, central and local headers, entries inside the file and
 * never overlapping, names unique; a deflated storage is refused (inflating
 * would copy the model into memory, and torch never writes one), a deflated
 * data.pkl is inflated under the pickle size limit. Only contiguous tensors
 * are read (those torch.save writes from a state dict; a strided view is
 * refused by name). Legacy (pre-1.6) pickled files are refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { DTYPE_SIZE, ModelFileError, type TensorInfo } from './tensor-file.ts';
import { PyDict, PyTensor, type PyValue, typeName, unpickle, UnpickleError } from './pickle.ts';

/** data.pkl larger than this is refused (a checkpoint's pickle is some bytes per tensor). */
export const MAX_PICKLE_BYTES = 64 << 20;
const MAX_ENTRIES = 1 << 20;
const MAX_CENTRAL_DIRECTORY = 512 << 20;

const SIG_LOCAL = 0x04034b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_EOCD = 0x06054b50;
const SIG_ZIP64_EOCD = 0x06064b50;
const SIG_ZIP64_LOCATOR = 0x07064b50;

export const ZIP_MAGIC = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

interface ZipEntry {
  name: string;
  method: number;
  flags: number;
  compressedSize: number;
  size: number;
  headerOffset: number;
  /** Set once the local header is read. */
  dataOffset?: number;
}

async function readAt(fh: fs.promises.FileHandle, position: number, length: number, file: string): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) throw new ModelFileError(file, `file ended at byte ${position + done} (truncated zip)`);
    done += bytesRead;
  }
  return buf;
}

function u64(buf: Buffer, at: number, file: string, what: string): number {
  const v = buf.readBigUInt64LE(at);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new ModelFileError(file, `zip ${what} ${v} is out of range`);
  return Number(v);
}

/** The central directory, checked: every entry inside the file before the directory, names unique. */
async function readDirectory(fh: fs.promises.FileHandle, size: number, file: string): Promise<{ entries: Map<string, ZipEntry>; order: ZipEntry[]; cdOffset: number }> {
  if (size < 22) throw new ModelFileError(file, `file of ${size} bytes is too short for a zip (truncated)`);
  const tailLen = Math.min(size, 22 + 0xffff);
  const tail = await readAt(fh, size - tailLen, tailLen, file);
  let eocd = -1;
  for (let i = tailLen - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === SIG_EOCD && i + 22 + tail.readUInt16LE(i + 20) <= tailLen) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new ModelFileError(file, 'no zip end record: a truncated PyTorch file, or not a zip');
  const eocdPos = size - tailLen + eocd;
  let diskNo = tail.readUInt16LE(eocd + 4);
  let cdDisk = tail.readUInt16LE(eocd + 6);
  let count = tail.readUInt16LE(eocd + 10);
  let cdSize = tail.readUInt32LE(eocd + 12);
  let cdOffset = tail.readUInt32LE(eocd + 16);
  let cdEnd = eocdPos;
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    if (eocdPos < 20) throw new ModelFileError(file, 'zip64 end locator missing');
    const loc = await readAt(fh, eocdPos - 20, 20, file);
    if (loc.readUInt32LE(0) !== SIG_ZIP64_LOCATOR) throw new ModelFileError(file, 'zip64 end locator missing');
    const recPos = u64(loc, 8, file, 'zip64 end record offset');
    if (recPos + 56 > eocdPos - 20) throw new ModelFileError(file, 'zip64 end record out of range');
    const rec = await readAt(fh, recPos, 56, file);
    if (rec.readUInt32LE(0) !== SIG_ZIP64_EOCD) throw new ModelFileError(file, 'zip64 end record missing');
    diskNo = rec.readUInt32LE(16);
    cdDisk = rec.readUInt32LE(20);
    count = u64(rec, 32, file, 'entry count');
    cdSize = u64(rec, 40, file, 'central directory size');
    cdOffset = u64(rec, 48, file, 'central directory offset');
    cdEnd = recPos;
  }
  if (diskNo !== 0 || cdDisk !== 0) throw new ModelFileError(file, 'multi-volume zips are not read');
  if (count > MAX_ENTRIES) throw new ModelFileError(file, `zip of ${count} entries exceeds the limit of ${MAX_ENTRIES}`);
  if (cdSize > MAX_CENTRAL_DIRECTORY || cdSize < count * 46) throw new ModelFileError(file, `zip central directory of ${cdSize} bytes cannot hold ${count} entries`);
  if (cdOffset + cdSize > cdEnd) throw new ModelFileError(file, `zip central directory [${cdOffset}, ${cdOffset + cdSize}) runs past its end record (truncated or corrupt)`);
  const cd = await readAt(fh, cdOffset, cdSize, file);
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const entries = new Map<string, ZipEntry>();
  const order: ZipEntry[] = [];
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (p + 46 > cd.length || cd.readUInt32LE(p) !== SIG_CENTRAL) throw new ModelFileError(file, `zip central directory entry ${i} is malformed`);
    const flags = cd.readUInt16LE(p + 8);
    const method = cd.readUInt16LE(p + 10);
    let compressedSize = cd.readUInt32LE(p + 20);
    let usize = cd.readUInt32LE(p + 24);
    const nameLen = cd.readUInt16LE(p + 28);
    const extraLen = cd.readUInt16LE(p + 30);
    const commentLen = cd.readUInt16LE(p + 32);
    let disk = cd.readUInt16LE(p + 34);
    let headerOffset = cd.readUInt32LE(p + 42);
    const end = p + 46 + nameLen + extraLen + commentLen;
    if (end > cd.length) throw new ModelFileError(file, `zip central directory entry ${i} runs past the directory`);
    let name: string;
    try {
      name = utf8.decode(cd.subarray(p + 46, p + 46 + nameLen));
    } catch {
      throw new ModelFileError(file, `zip entry ${i} has a name that is not UTF-8`);
    }
    // zip64 extended information: the fields whose 32-bit value is all ones, in order.
    for (let e = p + 46 + nameLen; e + 4 <= p + 46 + nameLen + extraLen; ) {
      const id = cd.readUInt16LE(e);
      const len = cd.readUInt16LE(e + 2);
      if (e + 4 + len > p + 46 + nameLen + extraLen) throw new ModelFileError(file, `zip entry ${JSON.stringify(name)}: malformed extra field`);
      if (id === 0x0001) {
        let q = e + 4;
        const take = (what: string): number => {
          if (q + 8 > e + 4 + len) throw new ModelFileError(file, `zip entry ${JSON.stringify(name)}: zip64 field ${what} missing`);
          const v = u64(cd, q, file, what);
          q += 8;
          return v;
        };
        if (usize === 0xffffffff) usize = take('size');
        if (compressedSize === 0xffffffff) compressedSize = take('compressed size');
        if (headerOffset === 0xffffffff) headerOffset = take('header offset');
        if (disk === 0xffff) {
          if (q + 4 > e + 4 + len) throw new ModelFileError(file, `zip entry ${JSON.stringify(name)}: zip64 disk missing`);
          disk = cd.readUInt32LE(q);
        }
      }
      e += 4 + len;
    }
    if (disk !== 0) throw new ModelFileError(file, 'multi-volume zips are not read');
    if (flags & 1) throw new ModelFileError(file, `zip entry ${JSON.stringify(name)} is encrypted`);
    if (entries.has(name)) throw new ModelFileError(file, `zip entry ${JSON.stringify(name)} appears twice`);
    if (headerOffset + 30 + nameLen + compressedSize > cdOffset) throw new ModelFileError(file, `zip entry ${JSON.stringify(name)} runs past the entries' area (truncated or corrupt)`);
    const entry: ZipEntry = { name, method, flags, compressedSize, size: usize, headerOffset };
    entries.set(name, entry);
    order.push(entry);
    p = end;
  }
  // No two entries may share bytes (a crafted zip could otherwise alias one storage as another).
  const sorted = [...order].sort((a, b) => a.headerOffset - b.headerOffset);
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1]!;
    if (a.headerOffset + 30 + Buffer.byteLength(a.name) + a.compressedSize > sorted[i]!.headerOffset) throw new ModelFileError(file, `zip entries ${JSON.stringify(a.name)} and ${JSON.stringify(sorted[i]!.name)} overlap`);
  }
  return { entries, order, cdOffset };
}

/**
 * Reads the local headers of `want` and sets each entry's data offset, checking it against its neighbours.
 * Headers close together (small tensors) are read in one go, at most 1 MiB a read, a few reads at a time.
 */
async function locateData(fh: fs.promises.FileHandle, want: ZipEntry[], all: ZipEntry[], cdOffset: number, file: string): Promise<void> {
  const sorted = [...all].sort((a, b) => a.headerOffset - b.headerOffset);
  const next = new Map<ZipEntry, number>();
  for (let i = 0; i < sorted.length; i++) next.set(sorted[i]!, i + 1 < sorted.length ? sorted[i + 1]!.headerOffset : cdOffset);
  const headEnd = (e: ZipEntry) => e.headerOffset + 30 + Buffer.byteLength(e.name);
  const groups: ZipEntry[][] = [];
  for (const e of [...want].sort((a, b) => a.headerOffset - b.headerOffset)) {
    const g = groups[groups.length - 1];
    if (g && headEnd(e) - g[0]!.headerOffset <= 1 << 20) g.push(e);
    else groups.push([e]);
  }
  const one = (e: ZipEntry, chunk: Buffer, chunkStart: number) => {
    const nameBytes = Buffer.from(e.name, 'utf8');
    const head = chunk.subarray(e.headerOffset - chunkStart, e.headerOffset - chunkStart + 30 + nameBytes.length);
    if (head.readUInt32LE(0) !== SIG_LOCAL) throw new ModelFileError(file, `zip entry ${JSON.stringify(e.name)}: no local header at byte ${e.headerOffset}`);
    if (head.readUInt16LE(26) !== nameBytes.length || !head.subarray(30).equals(nameBytes)) throw new ModelFileError(file, `zip entry ${JSON.stringify(e.name)}: local header names another file`);
    if (head.readUInt16LE(8) !== e.method) throw new ModelFileError(file, `zip entry ${JSON.stringify(e.name)}: local and central headers disagree on the compression`);
    const dataOffset = e.headerOffset + 30 + nameBytes.length + head.readUInt16LE(28);
    if (dataOffset + e.compressedSize > next.get(e)!) throw new ModelFileError(file, `zip entry ${JSON.stringify(e.name)} runs into the next entry (bytes [${dataOffset}, ${dataOffset + e.compressedSize}))`);
    e.dataOffset = dataOffset;
  };
  const group = async (g: ZipEntry[]) => {
    const start = g[0]!.headerOffset;
    const chunk = await readAt(fh, start, headEnd(g[g.length - 1]!) - start, file);
    for (const e of g) one(e, chunk, start);
  };
  for (let i = 0; i < groups.length; i += 16) await Promise.all(groups.slice(i, i + 16).map(group));
}

async function readEntry(fh: fs.promises.FileHandle, e: ZipEntry, limit: number, file: string): Promise<Buffer> {
  if (e.size > limit) throw new ModelFileError(file, `${e.name} of ${e.size} bytes exceeds the limit of ${limit}`);
  if (e.method === 0) {
    if (e.compressedSize !== e.size) throw new ModelFileError(file, `${e.name}: stored entry with different sizes`);
    return readAt(fh, e.dataOffset!, e.size, file);
  }
  if (e.method !== 8) throw new ModelFileError(file, `${e.name}: zip compression method ${e.method} is not read`);
  if (e.compressedSize > limit) throw new ModelFileError(file, `${e.name} of ${e.compressedSize} compressed bytes exceeds the limit of ${limit}`);
  const raw = await readAt(fh, e.dataOffset!, e.compressedSize, file);
  let out: Buffer;
  try {
    out = zlib.inflateRawSync(raw, { maxOutputLength: Math.max(1, e.size) });
  } catch (err) {
    throw new ModelFileError(file, `${e.name}: cannot inflate (${(err as Error).message})`);
  }
  if (out.length !== e.size) throw new ModelFileError(file, `${e.name}: inflates to ${out.length} bytes, the directory says ${e.size}`);
  return out;
}

/** A torch zip file: its unpickled root object, and the byte range of each tensor in it. */
export class TorchFile {
  private constructor(
    readonly path: string,
    readonly size: number,
    readonly root: PyValue,
    private readonly storages: Map<string, ZipEntry>,
    /** Every zip entry, in the directory's order (the reference's namelist). */
    private readonly entries: readonly ZipEntry[],
    /** With `keepPickleErrors`: why data.pkl was refused (root is then None). */
    readonly pickleError?: string,
  ) {}

  /**
   * Opens and checks the zip and runs data.pkl. A refused pickle throws, or
   * with `keepPickleErrors` gives a file whose `pickleError` says why, whose
   * raw entries can still be read (the reference's safe_load_embed_zip).
   */
  static async open(file: string, opts: { keepPickleErrors?: boolean } = {}): Promise<TorchFile> {
    const fh = await fs.promises.open(file, 'r').catch((err: NodeJS.ErrnoException) => {
      throw new ModelFileError(file, `cannot open (${err.code ?? err.message})`);
    });
    try {
      const { size } = await fh.stat();
      const { entries, order, cdOffset } = await readDirectory(fh, size, file);
      // torch names its records after the first entry's folder (`<archive>/data.pkl`, …).
      const first = order[0];
      const slash = first ? first.name.indexOf('/') : -1;
      if (!first || slash <= 0) throw new ModelFileError(file, 'a zip, but not a PyTorch file (no <archive>/ folder)');
      const prefix = first.name.slice(0, slash + 1);
      const pkl = entries.get(`${prefix}data.pkl`);
      if (!pkl) throw new ModelFileError(file, `a zip, but not a PyTorch file (no ${prefix}data.pkl)`);
      const byteorder = entries.get(`${prefix}byteorder`);
      const storageEntries = order.filter((e) => e.name.startsWith(`${prefix}data/`));
      await locateData(fh, opts.keepPickleErrors ? order : [pkl, ...(byteorder ? [byteorder] : []), ...storageEntries], order, cdOffset, file);
      if (byteorder) {
        const bo = (await readEntry(fh, byteorder, 16, file)).toString('latin1');
        if (bo !== 'little') throw new ModelFileError(file, `byte order ${JSON.stringify(bo)}: only little-endian files are read`);
      }
      const storages = new Map<string, ZipEntry>();
      for (const e of storageEntries) storages.set(e.name.slice(prefix.length + 5), e);
      let root: PyValue;
      try {
        root = unpickle(await readEntry(fh, pkl, MAX_PICKLE_BYTES, file));
      } catch (err) {
        const problem = err instanceof UnpickleError ? `${pkl.name}: ${err.message}` : err instanceof ModelFileError ? err.message.slice(path.basename(file).length + 2) : undefined;
        if (problem === undefined) throw err;
        if (!opts.keepPickleErrors) throw new ModelFileError(file, problem);
        return new TorchFile(file, size, null, storages, order, problem);
      }
      return new TorchFile(file, size, root, storages, order);
    } finally {
      await fh.close();
    }
  }

  /** Names of the zip's entries, in its directory's order. */
  entryNames(): string[] {
    return this.entries.map((e) => e.name);
  }

  /** One entry's bytes (inflated if deflated), at most `limit` of them. */
  async readEntry(name: string, limit: number): Promise<Buffer> {
    const e = this.entries.find((x) => x.name === name);
    if (!e || e.dataOffset === undefined) throw new ModelFileError(this.path, `no zip entry ${JSON.stringify(name)}`);
    const fh = await fs.promises.open(this.path, 'r');
    try {
      return await readEntry(fh, e, limit, this.path);
    } finally {
      await fh.close();
    }
  }

  /** A tensor's place in the file (byte range absolute), checked against its storage: contiguous, inside it, a known dtype. */
  tensorInfo(name: string, t: PyTensor): TensorInfo {
    const where = `tensor ${JSON.stringify(name)}`;
    const fail = (problem: string): never => {
      throw new ModelFileError(this.path, `${where}: ${problem}`);
    };
    const s = t.storage;
    if (t.dtype === null) fail(`dtype ${t.dtypeName} is not supported`);
    if (s.dtype === null) fail(`storage type ${s.typeName} is not supported`);
    const dtype = t.dtype!;
    const es = DTYPE_SIZE[dtype];
    const entry = this.storages.get(s.key);
    if (!entry || entry.dataOffset === undefined) return fail(`its storage data/${s.key} is missing from the zip`);
    if (entry.method !== 0) fail(`its storage data/${s.key} is compressed (zip method ${entry.method}); torch.save writes storages uncompressed: re-save the file with torch.save or convert it to .safetensors`);
    const storageBytes = s.numel * DTYPE_SIZE[s.dtype!];
    if (!Number.isSafeInteger(storageBytes) || entry.size < storageBytes) fail(`storage data/${s.key} holds ${entry.size} bytes, less than its ${s.numel} elements of ${s.dtype} (truncated or corrupt)`);
    let count = 1;
    for (const d of t.shape) {
      count *= d;
      if (!Number.isSafeInteger(count)) fail(`shape [${t.shape.join(', ')}] is too large`);
    }
    // Contiguous: each stride is the product of the later sizes (sizes of 1, and empty tensors, do not constrain it).
    if (count > 0) {
      let expect = 1;
      for (let i = t.shape.length - 1; i >= 0; i--) {
        if (t.shape[i]! !== 1 && t.stride[i] !== expect) fail(`not contiguous (size [${t.shape.join(', ')}], stride [${t.stride.join(', ')}]); only contiguous tensors are read in place: save tensor.contiguous() or convert the file to .safetensors`);
        expect *= t.shape[i]!;
      }
    }
    const begin = t.storageOffset * es;
    const bytes = count * es;
    if (!Number.isSafeInteger(begin + bytes) || (count > 0 && begin + bytes > storageBytes)) fail(`elements [${t.storageOffset}, ${t.storageOffset + count}) run past its storage data/${s.key} (${storageBytes} bytes)`);
    const abs = entry.dataOffset + (count > 0 ? begin : 0);
    return { name, dtype, shape: Object.freeze([...t.shape]), begin: abs, end: abs + bytes };
  }

  /** Every tensor of a dict (string keys), in order; other values are skipped. */
  tensorsOf(dict: PyDict): Map<string, TensorInfo> {
    const out = new Map<string, TensorInfo>();
    for (const [k, v] of dict.map) {
      if (typeof k === 'string' && v instanceof PyTensor) out.set(k, this.tensorInfo(k, v));
    }
    return out;
  }

  /** The state dict as the reference's load_torch_file picks it: root["state_dict"], else a lone dict value, else the root. */
  stateDict(): PyDict {
    const root = this.root;
    if (!(root instanceof PyDict)) throw new ModelFileError(this.path, `holds a ${typeName(root)}, not a state dict`);
    let sd: PyValue = root;
    if (root.map.has('state_dict')) sd = root.map.get('state_dict')!;
    else if (root.map.size === 1) {
      const only = root.map.values().next().value as PyValue;
      if (only instanceof PyDict) sd = only;
    }
    if (!(sd instanceof PyDict)) throw new ModelFileError(this.path, `"state_dict" is a ${typeName(sd)}, not a dict`);
    return sd;
  }
}

/** torch.save's legacy format starts with a protocol-2 pickle of its magic number 0x1950a86a20f9469cfc6c (LONG1). */
const LEGACY_MAGIC = Buffer.from([0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19]);

/** True when the first bytes are a legacy (pre-1.6) torch.save file. */
export function isLegacyTorch(head: Buffer): boolean {
  return head.length >= LEGACY_MAGIC.length && head.subarray(0, LEGACY_MAGIC.length).equals(LEGACY_MAGIC);
}
