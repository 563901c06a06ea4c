/**
 * Writes PyTorch zip checkpoints the way torch.save does (no Python): the
 * pickle with torch's opcodes (protocol 2, BINPUT after every object, memo
 * reuse of globals and of the 'storage'/'cpu' strings, _rebuild_tensor_v2,
 * OrderedDict via REDUCE, SETITEMS), and a zip of STORED entries with data
 * descriptors and the storages aligned to 64 bytes by an "FB" extra field.
 * Options make hostile variants (deflated entries, zip64 records).
 */
import fs from 'node:fs';
import zlib from 'node:zlib';
import { SafetensorsFile, type Dtype } from '../src/models/safetensors.ts';

const STORAGE: Record<string, string> = { F64: 'DoubleStorage', F32: 'FloatStorage', F16: 'HalfStorage', BF16: 'BFloat16Storage', I64: 'LongStorage', I32: 'IntStorage', I16: 'ShortStorage', I8: 'CharStorage', U8: 'ByteStorage', BOOL: 'BoolStorage' };
const SIZE: Record<string, number> = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, BOOL: 1 };

/** A tensor: its own storage (`bytes`), or a view into a storage another tensor named (`storageKey`). */
export interface TT {
  tensor: true;
  dtype: Dtype;
  shape: number[];
  bytes?: Uint8Array;
  storageKey?: string;
  storageOffset?: number;
  stride?: number[];
  /** Elements the storage claims (default: its bytes / element size). */
  numel?: number;
  parameter?: boolean;
}
export type PV = null | boolean | number | string | PV[] | TT | { dict: [string, PV][]; ordered?: boolean; metadata?: boolean };

export function tensor(dtype: Dtype, shape: number[], bytes: Uint8Array, extra: Partial<TT> = {}): TT {
  return { tensor: true, dtype, shape, bytes, ...extra };
}

export function f32(values: number[] | Float32Array): Uint8Array {
  return new Uint8Array(Float32Array.from(values).buffer);
}

export class Pickler {
  private out: number[] = [];
  private memoN = 0;
  private memo = new Map<string, number>();
  readonly storages = new Map<string, Uint8Array>();
  private nextKey = 0;

  byte(...b: number[]): this {
    this.out.push(...b);
    return this;
  }
  private u32(n: number): void {
    this.out.push(n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff);
  }
  put(): this {
    const i = this.memoN++;
    if (i < 256) this.byte(0x71, i);
    else {
      this.byte(0x72);
      this.u32(i);
    }
    return this;
  }
  private get(i: number): void {
    if (i < 256) this.byte(0x68, i);
    else {
      this.byte(0x6a);
      this.u32(i);
    }
  }
  /** A memoized global or string: BINGET when seen before. */
  private memoized(key: string, write: () => void): void {
    const i = this.memo.get(key);
    if (i !== undefined) return this.get(i);
    write();
    this.memo.set(key, this.memoN);
    this.put();
  }
  global(module: string, name: string): this {
    this.memoized(`g:${module}.${name}`, () => this.byte(0x63, ...Buffer.from(`${module}\n${name}\n`)));
    return this;
  }
  str(s: string, memo = false): this {
    const write = () => {
      const b = Buffer.from(s, 'utf8');
      this.byte(0x58);
      this.u32(b.length);
      this.byte(...b);
    };
    if (memo) this.memoized(`s:${s}`, write);
    else {
      write();
      this.put();
    }
    return this;
  }
  int(n: number): this {
    if (n >= 0 && n < 256) return this.byte(0x4b, n);
    if (n >= 0 && n < 65536) return this.byte(0x4d, n & 0xff, n >> 8);
    if (n >= -(2 ** 31) && n < 2 ** 31) {
      this.byte(0x4a);
      this.u32(n >>> 0);
      return this;
    }
    const b: number[] = [];
    let v = BigInt(n);
    for (let i = 0; i < 8; i++) {
      b.push(Number(v & 0xffn));
      v >>= 8n;
    }
    return this.byte(0x8a, 8, ...b);
  }
  tuple(items: (() => void)[]): this {
    if (items.length === 0) return this.byte(0x29);
    if (items.length <= 3) {
      items.forEach((f) => f());
      this.byte(0x84 + items.length);
    } else {
      this.byte(0x28);
      items.forEach((f) => f());
      this.byte(0x74);
    }
    return this.put();
  }
  orderedDictEmpty(): this {
    this.global('collections', 'OrderedDict');
    return this.byte(0x29, 0x52).put();
  }
  value(v: PV): this {
    if (v === null) return this.byte(0x4e);
    if (v === true) return this.byte(0x88);
    if (v === false) return this.byte(0x89);
    if (typeof v === 'number') {
      if (Number.isInteger(v)) return this.int(v);
      const b = Buffer.alloc(8);
      b.writeDoubleBE(v);
      return this.byte(0x47, ...b);
    }
    if (typeof v === 'string') return this.str(v);
    if (Array.isArray(v)) {
      this.byte(0x5d).put();
      if (v.length) {
        this.byte(0x28);
        v.forEach((x) => this.value(x));
        this.byte(0x65);
      }
      return this;
    }
    if ('tensor' in v) return this.tensor(v);
    if (v.ordered) this.orderedDictEmpty();
    else this.byte(0x7d).put();
    if (v.dict.length) {
      this.byte(0x28);
      for (const [k, x] of v.dict) {
        this.str(k);
        this.value(x);
      }
      this.byte(0x75);
    }
    if (v.metadata) {
      // nn.Module.state_dict()'s _metadata attribute, set by BUILD
      this.byte(0x7d).put().str('_metadata').orderedDictEmpty().str('').byte(0x7d).put().str('version').int(1).byte(0x73, 0x73, 0x73, 0x62);
    }
    return this;
  }
  tensor(t: TT): this {
    if (t.parameter) this.global('torch._utils', '_rebuild_parameter');
    this.global('torch._utils', '_rebuild_tensor_v2');
    let key = t.storageKey;
    if (key === undefined || !this.storages.has(key)) {
      key ??= String(this.nextKey++);
      this.storages.set(key, t.bytes ?? new Uint8Array(0));
    }
    const storage = this.storages.get(key)!;
    const numel = t.numel ?? storage.length / SIZE[t.dtype]!;
    const stride = t.stride ?? t.shape.map((_, i) => t.shape.slice(i + 1).reduce((a, b) => a * b, 1));
    this.byte(0x28); // args
    this.byte(0x28); // persistent id
    this.str('storage', true);
    this.global('torch', STORAGE[t.dtype]!);
    this.str(key);
    this.str('cpu', true);
    this.int(numel);
    this.byte(0x74).put();
    this.byte(0x51);
    this.int(t.storageOffset ?? 0);
    this.tuple(t.shape.map((s) => () => this.int(s)));
    this.tuple(stride.map((s) => () => this.int(s)));
    this.byte(0x89);
    this.orderedDictEmpty();
    this.byte(0x74).put().byte(0x52).put();
    if (t.parameter) {
      this.byte(0x88);
      this.orderedDictEmpty();
      this.byte(0x87).put().byte(0x52).put();
    }
    return this;
  }
  /** PROTO 2, the value, STOP. */
  static dump(v: PV): { pickle: Buffer; storages: Map<string, Uint8Array> } {
    const p = new Pickler();
    p.byte(0x80, 2).value(v).byte(0x2e);
    return { pickle: Buffer.from(p.out), storages: p.storages };
  }
}

export interface ZipOptions {
  /** Entry names (after the archive folder) written deflated. */
  deflate?: string[];
  /** zip64 end records and extra fields (as torch writes for files over 4 GiB). */
  zip64?: boolean;
  archive?: string;
}

/** A zip of STORED entries as PyTorch's writer makes it. */
export function zipBytes(entries: [string, Uint8Array][], opts: ZipOptions = {}): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const [name, data0] of entries) {
    const deflated = opts.deflate?.some((d) => name.endsWith(`/${d}`)) ?? false;
    const data = deflated ? zlib.deflateRawSync(data0) : Buffer.from(data0);
    const nameB = Buffer.from(name);
    // pad the local header with an "FB" extra field so that the data starts on a 64-byte boundary
    const base = offset + 30 + nameB.length + 4;
    const pad = (64 - (base % 64)) % 64;
    const extra = Buffer.alloc(4 + pad, 'Z');
    extra.writeUInt16LE(0x4246, 0);
    extra.writeUInt16LE(pad, 2);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(deflated ? 20 : 0, 4);
    local.writeUInt16LE(0x0808, 6);
    local.writeUInt16LE(deflated ? 8 : 0, 8);
    local.writeUInt16LE(nameB.length, 26);
    local.writeUInt16LE(extra.length, 28);
    const desc = Buffer.alloc(16);
    desc.writeUInt32LE(0x08074b50, 0);
    desc.writeUInt32LE(zlib.crc32 ? zlib.crc32(data0) : 0, 4);
    desc.writeUInt32LE(data.length, 8);
    desc.writeUInt32LE(data0.length, 12);
    parts.push(local, nameB, extra, data, desc);
    const z64 = opts.zip64 ? Buffer.alloc(4 + 24) : Buffer.alloc(0);
    if (opts.zip64) {
      z64.writeUInt16LE(1, 0);
      z64.writeUInt16LE(24, 2);
      z64.writeBigUInt64LE(BigInt(data0.length), 4);
      z64.writeBigUInt64LE(BigInt(data.length), 12);
      z64.writeBigUInt64LE(BigInt(offset), 20);
    }
    const c = Buffer.alloc(46);
    c.writeUInt32LE(0x02014b50, 0);
    c.writeUInt16LE(opts.zip64 ? 45 : 20, 4);
    c.writeUInt16LE(deflated ? 20 : 0, 6);
    c.writeUInt16LE(0x0808, 8);
    c.writeUInt16LE(deflated ? 8 : 0, 10);
    c.writeUInt32LE(desc.readUInt32LE(4), 16);
    c.writeUInt32LE(opts.zip64 ? 0xffffffff : data.length, 20);
    c.writeUInt32LE(opts.zip64 ? 0xffffffff : data0.length, 24);
    c.writeUInt16LE(nameB.length, 28);
    c.writeUInt16LE(z64.length, 30);
    c.writeUInt32LE(opts.zip64 ? 0xffffffff : offset, 42);
    central.push(c, nameB, z64);
    offset += 30 + nameB.length + extra.length + data.length + desc.length;
  }
  const cd = Buffer.concat(central);
  const tail: Buffer[] = [];
  if (opts.zip64) {
    const rec = Buffer.alloc(56);
    rec.writeUInt32LE(0x06064b50, 0);
    rec.writeBigUInt64LE(44n, 4);
    rec.writeUInt16LE(45, 12);
    rec.writeUInt16LE(45, 14);
    rec.writeBigUInt64LE(BigInt(entries.length), 24);
    rec.writeBigUInt64LE(BigInt(entries.length), 32);
    rec.writeBigUInt64LE(BigInt(cd.length), 40);
    rec.writeBigUInt64LE(BigInt(offset), 48);
    const loc = Buffer.alloc(20);
    loc.writeUInt32LE(0x07064b50, 0);
    loc.writeBigUInt64LE(BigInt(offset + cd.length), 8);
    loc.writeUInt32LE(1, 16);
    tail.push(rec, loc);
  }
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(opts.zip64 ? 0xffff : entries.length, 8);
  eocd.writeUInt16LE(opts.zip64 ? 0xffff : entries.length, 10);
  eocd.writeUInt32LE(opts.zip64 ? 0xffffffff : cd.length, 12);
  eocd.writeUInt32LE(opts.zip64 ? 0xffffffff : offset, 16);
  return Buffer.concat([...parts, cd, ...tail, eocd]);
}

/** A whole torch.save file: data.pkl, byteorder, the storages, version (in torch's order). */
export function torchFileBytes(v: PV, opts: ZipOptions & { pickle?: Buffer } = {}): Buffer {
  const { pickle, storages } = Pickler.dump(v);
  const a = opts.archive ?? 'archive';
  const entries: [string, Uint8Array][] = [
    [`${a}/data.pkl`, opts.pickle ?? pickle],
    [`${a}/.format_version`, Buffer.from('1')],
    [`${a}/.storage_alignment`, Buffer.from('64')],
    [`${a}/byteorder`, Buffer.from('little')],
    ...[...storages].map(([k, b]) => [`${a}/data/${k}`, b] as [string, Uint8Array]),
    [`${a}/version`, Buffer.from('3\n')],
  ];
  return zipBytes(entries, opts);
}

export function writeTorchFile(file: string, v: PV, opts: ZipOptions & { pickle?: Buffer } = {}): void {
  fs.writeFileSync(file, torchFileBytes(v, opts));
}

/** The .safetensors file's tensors as a torch.save'd state dict (same bytes), under `state_dict` like a Lightning .ckpt. */
export async function safetensorsToTorch(src: string, dst: string, wrap: 'state_dict' | 'none' = 'state_dict'): Promise<void> {
  const f = await SafetensorsFile.open(src);
  const dict: [string, PV][] = [];
  for (const [name, info] of f.tensors) dict.push([name, tensor(info.dtype, [...info.shape], await f.readBytes(info))]);
  const sd: PV = { dict, ordered: true, metadata: true };
  writeTorchFile(dst, wrap === 'state_dict' ? { dict: [['state_dict', sd], ['global_step', 1000], ['epoch', 1.5]] } : sd, { archive: 'model' });
}
