/**
 * Textual inversions (`embedding:name` in a prompt), as the reference's
 * sd1_clip.load_embed reads them. From a .safetensors file: the tensor under
 * the text encoder's key (`clip_l`) when there is one, otherwise the first
 * tensor. From a PyTorch file (.pt, .bin; torch-zip.ts, the reference's
 * torch.load(weights_only=True)): `string_to_param`'s first tensor (the
 * usual textual-inversion layout), a list of dicts (each tensor whose last
 * size is the width, as rows), the key, the `bundle_emb.*.string_to_param.*`
 * tensors of a LoRA-style bundle, else the first value; where the pickle is
 * refused, the reference's raw reading of the zip's storages. [n, D] gives n
 * vectors, [D] one. Problems are ModelFileErrors naming the file.
 */
import fs from 'node:fs';
import { PyDict, PyTensor, type PyValue } from './pickle.ts';
import { ModelFileError, SafetensorsFile, type TensorInfo, toFloat32 } from './safetensors.ts';
import { TorchFile, ZIP_MAGIC } from './torch-zip.ts';

/** An embedding bigger than this many values is refused (a real one holds a few vectors of 768). */
export const MAX_EMBEDDING_VALUES = 1 << 20;

/**
 * The embedding's vectors. `width` (the text encoder's, the reference's
 * embedding_size) filters the list layout; without it the first tensor's
 * last size is taken.
 */
export async function loadEmbedding(path: string, key = 'clip_l', width?: number): Promise<Float32Array[]> {
  if (await isZip(path)) return loadTorchEmbedding(path, key, width);
  const file = await SafetensorsFile.open(path);
  const names = [...file.tensors.keys()];
  const name = file.has(key) ? key : names.sort()[0];
  if (name === undefined) throw new ModelFileError(path, 'the file holds no tensor');
  return rowsOf(file, [file.info(name)]);
}

async function isZip(path: string): Promise<boolean> {
  try {
    const fh = await fs.promises.open(path, 'r');
    try {
      const head = Buffer.alloc(4);
      const { bytesRead } = await fh.read(head, 0, 4, 0);
      return bytesRead === 4 && head.equals(ZIP_MAGIC);
    } finally {
      await fh.close();
    }
  } catch {
    return false; // SafetensorsFile.open reports it
  }
}

async function loadTorchEmbedding(path: string, key: string, width: number | undefined): Promise<Float32Array[]> {
  const torch = await TorchFile.open(path, { keepPickleErrors: true });
  if (torch.pickleError !== undefined) return rawEmbedding(torch);
  const file = SafetensorsFile.ofTorch(torch, new Map());
  const root = torch.root;
  const tensor = (name: string, v: PyValue | undefined): TensorInfo => {
    if (!(v instanceof PyTensor)) throw new ModelFileError(path, `${name} is not a tensor`);
    return torch.tensorInfo(name, v);
  };
  const first = (d: PyDict, what: string): TensorInfo => {
    const e = d.map.entries().next();
    if (e.done) throw new ModelFileError(path, `${what} is empty`);
    return tensor(`${what}[${JSON.stringify(String(e.value[0]))}]`, e.value[1]);
  };
  let picked: TensorInfo[];
  if (root instanceof PyDict && root.map.has('string_to_param')) {
    const s2p = root.map.get('string_to_param');
    if (!(s2p instanceof PyDict)) throw new ModelFileError(path, 'string_to_param is not a dict');
    picked = [first(s2p, 'string_to_param')];
  } else if (Array.isArray(root)) {
    picked = [];
    let w = width;
    root.forEach((item, i) => {
      if (!(item instanceof PyDict)) throw new ModelFileError(path, `item ${i} of the list is not a dict`);
      for (const [k, v] of item.map) {
        const t = tensor(`[${i}][${JSON.stringify(String(k))}]`, v);
        const last = t.shape[t.shape.length - 1];
        w ??= last;
        if (last === w) picked.push(t);
      }
    });
    if (picked.length === 0) throw new ModelFileError(path, 'the list holds no tensor of the text encoder\'s width');
  } else if (root instanceof PyDict) {
    const bundled = [...root.map.keys()].filter((k): k is string => typeof k === 'string' && k.startsWith('bundle_emb.'));
    const bundle = (suffix: string) => bundled.filter((k) => k.endsWith(suffix)).map((k) => tensor(k, root.map.get(k)));
    if (root.map.has(key)) picked = [tensor(key, root.map.get(key))];
    else {
      picked = bundle('.string_to_param.*');
      if (picked.length === 0) picked = bundle(`.${key}`);
      if (picked.length === 0) picked = [first(root, 'the file')];
    }
  } else {
    throw new ModelFileError(path, 'holds neither a dict nor a list of tensors');
  }
  return rowsOf(file, picked);
}

/**
 * The reference's fallback when torch.load refuses the pickle (safe_load_embed_zip): the zip's `data/` entries,
 * last first, the first of at least 768 float32 values, as rows of 768 (when they divide it) or 1024.
 */
async function rawEmbedding(torch: TorchFile): Promise<Float32Array[]> {
  for (const name of torch.entryNames().filter((n) => n.includes('data/')).reverse()) {
    const bytes = await torch.readEntry(name, MAX_EMBEDDING_VALUES * 4);
    const n = bytes.length >> 2;
    if (n < 768) continue;
    const w = n % 768 === 0 ? 768 : 1024;
    if (n % w !== 0 || bytes.length % 4 !== 0) throw new ModelFileError(torch.path, `${torch.pickleError}; its raw storage ${name} (${bytes.length} bytes) is not a whole number of vectors of 768 or 1024`);
    const data = toFloat32(bytes, 'F32', torch.path, name);
    return Array.from({ length: n / w }, (_, i) => data.slice(i * w, (i + 1) * w));
  }
  throw new ModelFileError(torch.path, `${torch.pickleError} (and no raw storage holds an embedding)`);
}

/** The tensors' rows ([n, D] → n vectors, [D] → one), concatenated. */
async function rowsOf(file: SafetensorsFile, tensors: TensorInfo[]): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  let total = 0;
  let width: number | undefined;
  for (const info of tensors) {
    const name = info.name;
    if (info.shape.length < 1 || info.shape.length > 2) throw new ModelFileError(file.path, `${name} has shape [${info.shape.join(', ')}], expected [vectors, width] or [width]`);
    const w = info.shape[info.shape.length - 1]!;
    const count = info.shape.length === 2 ? info.shape[0]! : 1;
    if (w < 1 || count < 1) throw new ModelFileError(file.path, `${name} is empty`);
    if (width !== undefined && w !== width) throw new ModelFileError(file.path, `${name} has width ${w}, the others ${width}`);
    width = w;
    total += w * count;
    if (total > MAX_EMBEDDING_VALUES) throw new ModelFileError(file.path, `${name} holds ${w * count} values, more than the ${MAX_EMBEDDING_VALUES} an embedding may have`);
    const raw = await file.readBytes(info);
    const data = toFloat32(raw, info.dtype, file.path, name);
    for (let i = 0; i < count; i++) out.push(data.slice(i * w, (i + 1) * w));
  }
  return out;
}
