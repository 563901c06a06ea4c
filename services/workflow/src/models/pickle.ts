/**
 * A restricted unpickler for PyTorch checkpoints, after torch's own
 * `weights_only=True` unpickler (the one the reference loads .ckpt/.pt/.pth
 * files with): the same opcodes (protocol 2 as torch.save writes it) and the
 * same allowlist of globals, which are never looked up or called but stand
 * for values built here: dicts, lists, tuples, numbers, strings, storages
 * ('storage' persistent ids) and tensors (torch._utils._rebuild_* calls),
 * plus opaque objects for the harmless rest (devices, dtypes, numpy scalars,
 * a Lightning ModelCheckpoint as the reference allowlists). Any other global
 * (os.system, builtins.eval, …) is refused by name; nothing is ever executed.
 * Everything is bounded (pickle size, stack, marks, memo, strings, the work
 * a copy may do), so a hostile pickle ends in an UnpickleError, never a hang.
 */

export class UnpickleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnpickleError';
  }
}

/** Limits on one pickle. */
export const PICKLE_LIMITS = {
  /** Items on the stack, all marks together. */
  maxStack: 1 << 22,
  /** Nested MARKs. */
  maxMarks: 4096,
  /** Memo entries. */
  maxMemo: 1 << 22,
  /** One string or byte string. */
  maxString: 16 << 20,
  /** A GLOBAL's module or name line. */
  maxGlobalLine: 512,
  /** Values built and items put into containers or copied, all together (about 30 per tensor in a real checkpoint). */
  maxWork: 32 << 20,
} as const;

export class PyTuple {
  constructor(readonly items: readonly PyValue[]) {}
}

/** A dict, collections.OrderedDict or collections.Counter; keys in insertion order. */
export class PyDict {
  readonly map = new Map<unknown, PyValue>();
  /** Attributes set by BUILD (an OrderedDict's `_metadata`). */
  attrs?: PyValue;
  constructor(readonly kind: 'dict' | 'OrderedDict' | 'Counter' = 'dict') {}
  get(key: string): PyValue | undefined {
    return this.map.get(key);
  }
}

/** An allowlisted global, by its dotted name (never resolved to code). */
export class PyGlobal {
  constructor(readonly name: string) {}
}

/** An allowlisted object kept as data only (torch.device, numpy scalars, a set, …). */
export class PyObject {
  state?: PyValue;
  constructor(
    readonly cls: string,
    readonly args: readonly PyValue[],
  ) {}
}

/** Element types of torch storages; `null` for those not read here (complex, quantized). */
export type StorageDtype = 'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'I16' | 'I8' | 'U8' | 'BOOL';

/** A storage named by a ('storage', type, key, location, numel) persistent id. */
export class PyStorage {
  constructor(
    readonly typeName: string,
    readonly dtype: StorageDtype | null,
    readonly key: string,
    readonly location: string,
    readonly numel: number,
  ) {}
}

export class PyTensor {
  constructor(
    readonly storage: PyStorage,
    /** In elements of `dtype`. */
    readonly storageOffset: number,
    readonly shape: readonly number[],
    readonly stride: readonly number[],
    /** The tensor's element type (its storage's, or _rebuild_tensor_v3's dtype). */
    readonly dtype: StorageDtype | null,
    readonly dtypeName: string,
  ) {}
}

export type PyValue = null | boolean | number | bigint | string | Uint8Array | PyValue[] | PyTuple | PyDict | PyGlobal | PyObject | PyStorage | PyTensor;

/** A short description of a value's type for messages (never its contents). */
export function typeName(v: PyValue | undefined): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'None';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'string') return 'str';
  if (v instanceof Uint8Array) return 'bytes';
  if (Array.isArray(v)) return 'list';
  if (v instanceof PyTuple) return 'tuple';
  if (v instanceof PyDict) return v.kind;
  if (v instanceof PyGlobal) return v.name;
  if (v instanceof PyObject) return `${v.cls} object`;
  if (v instanceof PyStorage) return 'storage';
  return 'tensor';
}

const STORAGE_DTYPES: Record<string, StorageDtype | null> = {
  DoubleStorage: 'F64',
  FloatStorage: 'F32',
  HalfStorage: 'F16',
  BFloat16Storage: 'BF16',
  LongStorage: 'I64',
  IntStorage: 'I32',
  ShortStorage: 'I16',
  CharStorage: 'I8',
  ByteStorage: 'U8',
  BoolStorage: 'BOOL',
  ComplexDoubleStorage: null,
  ComplexFloatStorage: null,
  QInt8Storage: null,
  QInt32Storage: null,
  QUInt8Storage: null,
  QUInt4x2Storage: null,
  QUInt2x4Storage: null,
};

const TORCH_DTYPES: Record<string, StorageDtype | null> = {
  float64: 'F64',
  float32: 'F32',
  float16: 'F16',
  bfloat16: 'BF16',
  int64: 'I64',
  int32: 'I32',
  int16: 'I16',
  int8: 'I8',
  uint8: 'U8',
  bool: 'BOOL',
};
for (const d of ['complex128', 'complex64', 'complex32', 'qint8', 'qint32', 'quint8', 'quint4x2', 'quint2x4', 'uint16', 'uint32', 'uint64', 'bits16', 'bits8', 'bits1x8', 'bits2x4', 'bits4x2', 'float8_e5m2', 'float8_e4m3fn', 'float8_e5m2fnuz', 'float8_e4m3fnuz', 'float8_e8m0fnu', 'float4_e2m1fn_x2']) TORCH_DTYPES[d] = null;
for (let i = 1; i < 8; i++) TORCH_DTYPES[`uint${i}`] = TORCH_DTYPES[`int${i}`] = null;

const SUPPORTED_REBUILDS = new Set(['torch._utils._rebuild_tensor', 'torch._utils._rebuild_tensor_v2', 'torch._utils._rebuild_tensor_v3', 'torch._utils._rebuild_parameter', 'torch._utils._rebuild_parameter_with_state']);
const OTHER_REBUILDS = [
  '_rebuild_qtensor',
  '_rebuild_sparse_tensor',
  '_rebuild_meta_tensor_no_storage',
  '_rebuild_nested_tensor',
  '_rebuild_wrapper_subclass',
  '_rebuild_device_tensor_from_numpy',
  '_rebuild_device_tensor_from_cpu_tensor',
];

/** torch's weights_only allowlist (torch/_weights_only_unpickler.py) plus the globals the reference adds (comfy/utils.py). */
const ALLOWED = new Set<string>([
  'collections.OrderedDict',
  'collections.Counter',
  'torch.nn.parameter.Parameter',
  'torch.serialization._get_layout',
  'torch.Size',
  'torch.Tensor',
  'torch.device',
  '_codecs.encode',
  'builtins.bytearray',
  'builtins.set',
  'builtins.complex',
  'torch._tensor._rebuild_from_type_v2',
  ...SUPPORTED_REBUILDS,
  ...OTHER_REBUILDS.map((f) => `torch._utils.${f}`),
  ...Object.keys(TORCH_DTYPES).map((d) => `torch.${d}`),
  ...Object.keys(STORAGE_DTYPES).map((s) => `torch.${s}`),
  ...Object.keys(STORAGE_DTYPES)
    .filter((s) => !s.startsWith('Q'))
    .map((s) => `torch.cuda.${s}`),
  'torch.storage.TypedStorage',
  'torch.storage.UntypedStorage',
  ...['Byte', 'Char', 'Short', 'Int', 'Long', 'Half', 'Float', 'Double', 'BFloat16', 'Bool'].flatMap((t) => [`torch.${t}Tensor`, `torch.cuda.${t}Tensor`]),
  'torch.per_tensor_affine',
  'torch.per_tensor_symmetric',
  'torch.per_channel_affine',
  'torch.per_channel_symmetric',
  'torch.per_channel_affine_float_qparams',
  // comfy/utils.py: add_safe_globals([ModelCheckpoint, scalar, dtype, Float64DType, encode]) (Lightning checkpoints)
  'pytorch_lightning.callbacks.model_checkpoint.ModelCheckpoint',
  'numpy.core.multiarray.scalar',
  'numpy._core.multiarray.scalar',
  'numpy.dtype',
  'numpy.dtypes.Float64DType',
]);
const BLOCKED_MODULES = new Set(['sys', 'os', 'posix', 'nt']);

const storageDtypes = new Map<string, StorageDtype | null | undefined>();
function storageDtypeOf(name: string): StorageDtype | null | undefined {
  if (!storageDtypes.has(name)) storageDtypes.set(name, storageDtypeUncached(name));
  return storageDtypes.get(name);
}
function storageDtypeUncached(name: string): StorageDtype | null | undefined {
  const m = /^torch\.(?:cuda\.)?(\w+Storage)$/.exec(name);
  if (m && Object.hasOwn(STORAGE_DTYPES, m[1]!)) return STORAGE_DTYPES[m[1]!]!;
  if (name === 'torch.storage.UntypedStorage') return 'U8';
  return undefined;
}

const OP = {
  MARK: 0x28,
  STOP: 0x2e,
  BINFLOAT: 0x47,
  BININT: 0x4a,
  BININT1: 0x4b,
  BININT2: 0x4d,
  NONE: 0x4e,
  BINPERSID: 0x51,
  REDUCE: 0x52,
  SHORT_BINSTRING: 0x55,
  BINUNICODE: 0x58,
  APPEND: 0x61,
  BUILD: 0x62,
  GLOBAL: 0x63,
  APPENDS: 0x65,
  BINGET: 0x68,
  LONG_BINGET: 0x6a,
  EMPTY_LIST: 0x5d,
  BINPUT: 0x71,
  LONG_BINPUT: 0x72,
  SETITEM: 0x73,
  TUPLE: 0x74,
  SETITEMS: 0x75,
  EMPTY_DICT: 0x7d,
  EMPTY_TUPLE: 0x29,
  EMPTY_SET: 0x8f,
  PROTO: 0x80,
  NEWOBJ: 0x81,
  TUPLE1: 0x85,
  TUPLE2: 0x86,
  TUPLE3: 0x87,
  NEWTRUE: 0x88,
  NEWFALSE: 0x89,
  LONG1: 0x8a,
} as const;
const OP_NAMES: Record<number, string> = {
  0x42: 'BINBYTES',
  0x43: 'SHORT_BINBYTES',
  0x8c: 'SHORT_BINUNICODE',
  0x8d: 'BINUNICODE8',
  0x8e: 'BINBYTES8',
  0x93: 'STACK_GLOBAL',
  0x94: 'MEMOIZE',
  0x95: 'FRAME',
  0x63: 'GLOBAL',
  0x69: 'INST',
  0x6f: 'OBJ',
  0x92: 'NEWOBJ_EX',
  0x82: 'EXT1',
  0x83: 'EXT2',
  0x84: 'EXT4',
  0x50: 'PERSID',
  0x49: 'INT',
  0x4c: 'LONG',
  0x53: 'STRING',
  0x56: 'UNICODE',
  0x46: 'FLOAT',
  0x64: 'DICT',
  0x6c: 'LIST',
  0x70: 'PUT',
  0x67: 'GET',
  0x30: 'POP',
  0x31: 'POP_MARK',
  0x32: 'DUP',
  0x96: 'BYTEARRAY8',
  0x97: 'NEXT_BUFFER',
  0x98: 'READONLY_BUFFER',
  0x90: 'ADDITEMS',
  0x91: 'FROZENSET',
};

function dictKey(k: PyValue): unknown {
  if (typeof k === 'bigint') return Number.isSafeInteger(Number(k)) ? Number(k) : k;
  if (typeof k === 'boolean') return k ? 1 : 0;
  return k;
}

function intOf(v: PyValue | undefined): number | undefined {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'bigint' && v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  return undefined;
}

function intTuple(v: PyValue | undefined, what: string): number[] {
  const items = v instanceof PyTuple ? v.items : Array.isArray(v) ? v : undefined;
  if (!items) throw new UnpickleError(`${what} is a ${typeName(v)}, expected a tuple of integers`);
  if (items.length > 64) throw new UnpickleError(`${what} has ${items.length} dimensions`);
  return items.map((x) => {
    const n = intOf(x);
    if (n === undefined) throw new UnpickleError(`${what} holds a ${typeName(x)}, expected integers`);
    return n;
  });
}

/**
 * Runs a pickle under the weights-only rules and returns the value it builds.
 * Throws UnpickleError naming the first problem.
 */
export function unpickle(data: Uint8Array): PyValue {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  /** UTF-8 text of data[start, end): ASCII (nearly every key) without a decoder call, the rest checked strictly. */
  const text = (start: number, end: number): string | undefined => {
    let i = start;
    while (i < end && data[i]! < 0x80) i++;
    if (i === end) return buf.toString('latin1', start, end);
    try {
      return utf8.decode(data.subarray(start, end));
    } catch {
      return undefined;
    }
  };
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  let pos = 0;
  let stack: PyValue[] = [];
  const marks: PyValue[][] = [];
  let depth = 0; // items on all stacks
  const memo = new Map<number, PyValue>();
  // Every value built, item stored in a container and element copied (Counter(dict), set(list), encode) is charged
  // to a budget: a real pickle stays within twice its length, while copying one big memoized value over and over
  // (quadratic time) or building millions of empty containers (memory) ends early.
  let work = 0;
  const workLimit = Math.min(2 * data.length + (1 << 16), PICKLE_LIMITS.maxWork);
  const charge = (n: number) => {
    work += n;
    if (work > workLimit) throw new UnpickleError('the pickle builds or copies far more values than its size accounts for (hostile file?)');
  };

  const need = (n: number, what: string) => {
    if (pos + n > data.length) throw new UnpickleError(`truncated pickle: ${what} at byte ${pos} needs ${n} bytes, ${data.length - pos} left`);
  };
  const push = (v: PyValue) => {
    if (++depth > PICKLE_LIMITS.maxStack) throw new UnpickleError(`the pickle's stack exceeds ${PICKLE_LIMITS.maxStack} items`);
    stack.push(v);
  };
  const pop = (op: string): PyValue => {
    if (stack.length === 0) throw new UnpickleError(`${op} on an empty stack`);
    depth--;
    return stack.pop()!;
  };
  const top = (op: string): PyValue => {
    if (stack.length === 0) throw new UnpickleError(`${op} on an empty stack`);
    return stack[stack.length - 1]!;
  };
  const popMark = (op: string): PyValue[] => {
    const items = stack;
    const prev = marks.pop();
    if (!prev) throw new UnpickleError(`${op} without a MARK`);
    stack = prev;
    depth--; // the mark itself
    depth -= items.length;
    return items;
  };
  const readLine = (): string => {
    const end = data.indexOf(0x0a, pos);
    if (end < 0 || end - pos > PICKLE_LIMITS.maxGlobalLine) throw new UnpickleError(`GLOBAL at byte ${pos}: no line end within ${PICKLE_LIMITS.maxGlobalLine} bytes`);
    const s = text(pos, end);
    if (s === undefined) throw new UnpickleError(`GLOBAL at byte ${pos} is not UTF-8`);
    pos = end + 1;
    return s;
  };
  const readString = (len: number, op: string): string => {
    if (len > PICKLE_LIMITS.maxString) throw new UnpickleError(`${op} of ${len} bytes exceeds the limit of ${PICKLE_LIMITS.maxString}`);
    need(len, op);
    const s = text(pos, pos + len);
    if (s === undefined) throw new UnpickleError(`${op} at byte ${pos} is not valid UTF-8`);
    pos += len;
    return s;
  };
  const memoGet = (i: number): PyValue => {
    if (!memo.has(i)) throw new UnpickleError(`memo entry ${i} is read before it is written`);
    return memo.get(i)!;
  };
  const memoPut = (i: number) => {
    if (!memo.has(i) && memo.size >= PICKLE_LIMITS.maxMemo) throw new UnpickleError(`the pickle's memo exceeds ${PICKLE_LIMITS.maxMemo} entries`);
    memo.set(i, top('PUT'));
  };

  for (;;) {
    need(1, 'an opcode');
    const at = pos;
    const op = data[pos++]!;
    switch (op) {
      case OP.PROTO:
        need(1, 'PROTO');
        if (data[pos]! > 5) throw new UnpickleError(`unsupported pickle protocol ${data[pos]}`);
        pos++;
        break;
      case OP.STOP: {
        const v = pop('STOP');
        return v;
      }
      case OP.MARK:
        if (marks.length >= PICKLE_LIMITS.maxMarks) throw new UnpickleError(`more than ${PICKLE_LIMITS.maxMarks} nested MARKs`);
        if (++depth > PICKLE_LIMITS.maxStack) throw new UnpickleError(`the pickle's stack exceeds ${PICKLE_LIMITS.maxStack} items`);
        marks.push(stack);
        stack = [];
        break;
      case OP.NONE:
        push(null);
        break;
      case OP.NEWTRUE:
        push(true);
        break;
      case OP.NEWFALSE:
        push(false);
        break;
      case OP.EMPTY_TUPLE:
        charge(1);
        push(new PyTuple([]));
        break;
      case OP.EMPTY_LIST:
        charge(1);
        push([]);
        break;
      case OP.EMPTY_DICT:
        charge(1);
        push(new PyDict());
        break;
      case OP.EMPTY_SET:
        charge(1);
        push(new PyObject('builtins.set', []));
        break;
      case OP.BININT:
        need(4, 'BININT');
        push(view.getInt32(pos, true));
        pos += 4;
        break;
      case OP.BININT1:
        need(1, 'BININT1');
        push(data[pos++]!);
        break;
      case OP.BININT2:
        need(2, 'BININT2');
        push(view.getUint16(pos, true));
        pos += 2;
        break;
      case OP.LONG1: {
        need(1, 'LONG1');
        const n = data[pos++]!;
        need(n, 'LONG1');
        let v = 0n;
        for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(data[pos + i]!);
        if (n > 0 && data[pos + n - 1]! & 0x80) v -= 1n << BigInt(8 * n);
        pos += n;
        push(Number.isSafeInteger(Number(v)) && BigInt(Number(v)) === v ? Number(v) : v);
        break;
      }
      case OP.BINFLOAT:
        need(8, 'BINFLOAT');
        push(view.getFloat64(pos, false));
        pos += 8;
        break;
      case OP.BINUNICODE: {
        need(4, 'BINUNICODE');
        const len = view.getUint32(pos, true);
        pos += 4;
        push(readString(len, 'BINUNICODE'));
        break;
      }
      case OP.SHORT_BINSTRING: {
        // a python 2 str; torch.load decodes them as UTF-8
        need(1, 'SHORT_BINSTRING');
        const len = data[pos++]!;
        need(len, 'SHORT_BINSTRING');
        push(readString(len, 'SHORT_BINSTRING'));
        break;
      }
      case OP.TUPLE: {
        const items = popMark('TUPLE');
        charge(1 + items.length);
        push(new PyTuple(items));
        break;
      }
      case OP.TUPLE1: {
        const a = pop('TUPLE1');
        charge(2);
        push(new PyTuple([a]));
        break;
      }
      case OP.TUPLE2: {
        const b = pop('TUPLE2');
        charge(3);
        const a = pop('TUPLE2');
        push(new PyTuple([a, b]));
        break;
      }
      case OP.TUPLE3: {
        const c = pop('TUPLE3');
        charge(4);
        const b = pop('TUPLE3');
        const a = pop('TUPLE3');
        push(new PyTuple([a, b, c]));
        break;
      }
      case OP.APPEND: {
        const item = pop('APPEND');
        const list = top('APPEND');
        if (!Array.isArray(list)) throw new UnpickleError(`APPEND to a ${typeName(list)}: only lists can be appended to`);
        charge(1);
        list.push(item);
        break;
      }
      case OP.APPENDS: {
        const items = popMark('APPENDS');
        const list = top('APPENDS');
        if (!Array.isArray(list)) throw new UnpickleError(`APPENDS to a ${typeName(list)}: only lists can be extended`);
        charge(items.length);
        for (const x of items) list.push(x);
        break;
      }
      case OP.SETITEM: {
        const v = pop('SETITEM');
        const k = pop('SETITEM');
        const d = top('SETITEM');
        if (!(d instanceof PyDict)) throw new UnpickleError(`SETITEM on a ${typeName(d)}: only dict, OrderedDict and Counter take items`);
        charge(1);
        d.map.set(dictKey(k), v);
        break;
      }
      case OP.SETITEMS: {
        const items = popMark('SETITEMS');
        const d = top('SETITEMS');
        if (!(d instanceof PyDict)) throw new UnpickleError(`SETITEMS on a ${typeName(d)}: only dict, OrderedDict and Counter take items`);
        if (items.length % 2) throw new UnpickleError('SETITEMS with an odd number of items');
        charge(items.length);
        for (let i = 0; i < items.length; i += 2) d.map.set(dictKey(items[i]!), items[i + 1]!);
        break;
      }
      case OP.BINPUT:
        need(1, 'BINPUT');
        memoPut(data[pos++]!);
        break;
      case OP.LONG_BINPUT:
        need(4, 'LONG_BINPUT');
        memoPut(view.getUint32(pos, true));
        pos += 4;
        break;
      case OP.BINGET:
        need(1, 'BINGET');
        push(memoGet(data[pos++]!));
        break;
      case OP.LONG_BINGET:
        need(4, 'LONG_BINGET');
        push(memoGet(view.getUint32(pos, true)));
        pos += 4;
        break;
      case OP.GLOBAL: {
        let module = readLine();
        let name = readLine();
        // torch maps python 2 names (NAME_MAPPING / IMPORT_MAPPING); only builtins matter here.
        if (module === '__builtin__') module = 'builtins';
        if (module === 'copy_reg') module = 'copyreg';
        const full = `${module}.${name}`;
        if (BLOCKED_MODULES.has(module)) throw new UnpickleError(`the pickle asks for ${full}: module ${module} is blocked (never loaded)`);
        if (!ALLOWED.has(full)) throw new UnpickleError(`the pickle asks for ${full}, which is not an allowed global (torch.load(weights_only=True) refuses it too; nothing was run)`);
        name = full;
        push(new PyGlobal(name));
        break;
      }
      case OP.BINPERSID: {
        const pid = pop('BINPERSID');
        charge(1);
        push(persistentLoad(pid));
        break;
      }
      case OP.REDUCE: {
        const args = pop('REDUCE');
        const fn = pop('REDUCE');
        if (!(fn instanceof PyGlobal)) throw new UnpickleError(`REDUCE calls a ${typeName(fn)}: only allowed globals can be called`);
        if (!(args instanceof PyTuple)) throw new UnpickleError(`REDUCE of ${fn.name} with a ${typeName(args)} for arguments`);
        charge(1);
        push(reduce(fn.name, args.items, charge));
        break;
      }
      case OP.NEWOBJ: {
        const args = pop('NEWOBJ');
        const cls = pop('NEWOBJ');
        if (!(cls instanceof PyGlobal)) throw new UnpickleError(`NEWOBJ of a ${typeName(cls)}: only allowed classes can be created`);
        if (!(args instanceof PyTuple)) throw new UnpickleError(`NEWOBJ of ${cls.name} with a ${typeName(args)} for arguments`);
        charge(1);
        push(newObject(cls.name, args.items));
        break;
      }
      case OP.BUILD: {
        const state = pop('BUILD');
        const inst = top('BUILD');
        if (inst instanceof PyDict && inst.kind !== 'dict') inst.attrs = state;
        else if (inst instanceof PyObject) inst.state = state;
        else if (inst instanceof PyTensor) throw new UnpickleError('BUILD on a tensor (legacy tensor state) is not supported');
        else throw new UnpickleError(`BUILD on a ${typeName(inst)}: only OrderedDict and allowed classes can be built`);
        break;
      }
      default:
        throw new UnpickleError(`unsupported pickle opcode ${OP_NAMES[op] ?? `0x${op.toString(16).padStart(2, '0')}`} at byte ${at} (torch's weights-only unpickler refuses it too)`);
    }
  }
}

function persistentLoad(pid: PyValue): PyStorage {
  if (!(pid instanceof PyTuple)) throw new UnpickleError(`persistent id is a ${typeName(pid)}, expected a ('storage', …) tuple`);
  const [tag, type, key, location, numel] = pid.items;
  if (tag !== 'storage' && !(tag instanceof Uint8Array && new TextDecoder().decode(tag) === 'storage')) throw new UnpickleError(`persistent id ${typeof tag === 'string' ? JSON.stringify(tag.slice(0, 40)) : typeName(tag)}: only storages can be loaded`);
  if (pid.items.length !== 5) throw new UnpickleError(`storage persistent id has ${pid.items.length} items, expected 5`);
  if (!(type instanceof PyGlobal)) throw new UnpickleError(`storage type is a ${typeName(type)}`);
  const dtype = storageDtypeOf(type.name);
  if (dtype === undefined) throw new UnpickleError(`storage type ${type.name} is not a storage class`);
  if (typeof key !== 'string' || key.length === 0 || key.length > 256) throw new UnpickleError('storage key is not a short string');
  if (typeof location !== 'string') throw new UnpickleError(`storage location is a ${typeName(location)}`);
  const n = intOf(numel);
  if (n === undefined || n < 0) throw new UnpickleError(`storage ${key}: element count is not a non-negative integer`);
  return new PyStorage(type.name, dtype, key, location, n);
}

function asTensor(v: PyValue | undefined, what: string): PyTensor {
  if (!(v instanceof PyTensor)) throw new UnpickleError(`${what} is a ${typeName(v)}, expected a tensor`);
  return v;
}

function rebuildTensor(fn: string, args: readonly PyValue[]): PyTensor {
  const short = fn.slice('torch._utils.'.length);
  const min = fn.endsWith('_v3') ? 7 : fn.endsWith('_v2') ? 6 : 4;
  if (args.length < min || args.length > min + 1) throw new UnpickleError(`${short} called with ${args.length} arguments`);
  const storage = args[0];
  if (!(storage instanceof PyStorage)) throw new UnpickleError(`${short}: the storage is a ${typeName(storage)}`);
  const offset = intOf(args[1]);
  if (offset === undefined || offset < 0) throw new UnpickleError(`${short}: storage offset is not a non-negative integer`);
  const shape = intTuple(args[2], `${short}: size`);
  const stride = intTuple(args[3], `${short}: stride`);
  if (stride.length !== shape.length) throw new UnpickleError(`${short}: size and stride have different lengths`);
  if (shape.some((s) => s < 0)) throw new UnpickleError(`${short}: negative size [${shape.join(', ')}]`);
  let dtype = storage.dtype;
  let dtypeName = storage.typeName;
  if (fn.endsWith('_v3')) {
    const d = args[6];
    if (!(d instanceof PyGlobal) || !d.name.startsWith('torch.') || !Object.hasOwn(TORCH_DTYPES, d.name.slice(6))) throw new UnpickleError(`${short}: dtype is a ${typeName(d)}`);
    dtype = TORCH_DTYPES[d.name.slice(6)]!;
    dtypeName = d.name;
  }
  return new PyTensor(storage, offset, shape, stride, dtype, dtypeName);
}

function reduce(fn: string, args: readonly PyValue[], charge: (n: number) => void): PyValue {
  if (SUPPORTED_REBUILDS.has(fn)) {
    if (fn === 'torch._utils._rebuild_parameter' || fn === 'torch._utils._rebuild_parameter_with_state') {
      if (args.length !== (fn.endsWith('_state') ? 4 : 3)) throw new UnpickleError(`${fn} called with ${args.length} arguments`);
      return asTensor(args[0], `${fn}: data`);
    }
    return rebuildTensor(fn, args);
  }
  switch (fn) {
    case 'collections.OrderedDict':
    case 'collections.Counter': {
      const d = new PyDict(fn === 'collections.Counter' ? 'Counter' : 'OrderedDict');
      if (args.length === 0) return d;
      const src = args[0];
      if (args.length === 1 && src instanceof PyDict) {
        charge(src.map.size);
        for (const [k, v] of src.map) d.map.set(k, v);
        return d;
      }
      if (args.length === 1 && (Array.isArray(src) || src instanceof PyTuple)) {
        const items = Array.isArray(src) ? src : src.items;
        charge(items.length);
        for (const pair of items) {
          const kv = pair instanceof PyTuple ? pair.items : Array.isArray(pair) ? pair : undefined;
          if (!kv || kv.length !== 2) throw new UnpickleError(`${fn} from a sequence of ${typeName(pair)}, expected pairs`);
          d.map.set(dictKey(kv[0]!), kv[1]!);
        }
        return d;
      }
      throw new UnpickleError(`${fn} called with ${args.length === 1 ? `a ${typeName(src)}` : `${args.length} arguments`}`);
    }
    case 'torch.Size':
      if (args.length > 1) throw new UnpickleError(`torch.Size called with ${args.length} arguments`);
      return new PyTuple(args.length ? intTuple(args[0], 'torch.Size') : []);
    case '_codecs.encode': {
      const [s, enc] = args;
      if (typeof s !== 'string' || (enc !== 'latin1' && enc !== 'latin-1' && enc !== undefined) || args.length > 2) throw new UnpickleError('_codecs.encode is only read for (str, "latin1")');
      charge(s.length);
      const out = new Uint8Array(s.length);
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c > 0xff) throw new UnpickleError('_codecs.encode: a character outside latin1');
        out[i] = c;
      }
      return out;
    }
    case 'builtins.bytearray': {
      const [src] = args;
      if (args.length === 0) return new Uint8Array(0);
      if (src instanceof Uint8Array && args.length === 1) {
        charge(src.length);
        return src.slice();
      }
      throw new UnpickleError(`builtins.bytearray called with a ${typeName(src)}`);
    }
    case 'builtins.set':
    case 'builtins.complex':
    case 'torch.device':
    case 'torch.serialization._get_layout':
    case 'numpy.core.multiarray.scalar':
    case 'numpy._core.multiarray.scalar':
    case 'numpy.dtype':
      if (args.length > 4) throw new UnpickleError(`${fn} called with ${args.length} arguments`);
      for (const a of args) if (Array.isArray(a)) charge(a.length);
      return new PyObject(fn, fn === 'builtins.set' && Array.isArray(args[0]) ? [args[0].slice()] : args);
    case 'torch._tensor._rebuild_from_type_v2': {
      // (func, new_type, args, state): a tensor subclass or a tensor with attributes; the tensor is func(*args).
      const [func, newType, inner] = args;
      if (args.length !== 4) throw new UnpickleError(`${fn} called with ${args.length} arguments`);
      if (!(func instanceof PyGlobal) || !(newType instanceof PyGlobal) || !(inner instanceof PyTuple)) throw new UnpickleError(`${fn} with a ${typeName(func)}, ${typeName(newType)}, ${typeName(inner)}`);
      if (newType.name !== 'torch.Tensor' && newType.name !== 'torch.nn.parameter.Parameter') throw new UnpickleError(`tensor subclass ${newType.name} is not supported`);
      const t = reduce(func.name, inner.items, charge);
      return asTensor(t, `${fn}: ${func.name}(…)`);
    }
  }
  if (fn.startsWith('torch._utils._rebuild_')) throw new UnpickleError(`${fn}: this kind of tensor (quantized, sparse, nested, meta or numpy-backed) is not supported`);
  throw new UnpickleError(`${fn} cannot be called here`);
}

function newObject(cls: string, args: readonly PyValue[]): PyValue {
  switch (cls) {
    case 'torch.nn.parameter.Parameter':
      if (args.length < 1 || args.length > 2) throw new UnpickleError(`Parameter created with ${args.length} arguments`);
      return asTensor(args[0], 'Parameter data');
    case 'collections.OrderedDict':
      return new PyDict('OrderedDict');
    case 'collections.Counter':
      return new PyDict('Counter');
    case 'pytorch_lightning.callbacks.model_checkpoint.ModelCheckpoint':
    case 'numpy.dtypes.Float64DType':
    case 'numpy.dtype':
    case 'builtins.set':
    case 'builtins.complex':
      if (args.length > 4) throw new UnpickleError(`${cls} created with ${args.length} arguments`);
      return new PyObject(cls, args.filter((a) => !Array.isArray(a)));
  }
  throw new UnpickleError(`NEWOBJ of ${cls}: only Parameter and allowed classes can be created`);
}
