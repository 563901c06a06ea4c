/**
 * Textual inversions (`embedding:name` in a prompt) from .safetensors files,
 * as the reference's sd1_clip.load_embed reads them: the tensor under the
 * text encoder's key (`clip_l`) when there is one, otherwise the first
 * tensor; [n, D] gives n vectors, [D] one. Pickled files (.pt, .bin) are
 * refused: they cannot be read safely here. Problems are ModelFileErrors
 * naming the file.
 */
import { ModelFileError, SafetensorsFile } from './safetensors.ts';

/** An embedding bigger than this many values is refused (a real one holds a few vectors of 768). */
export const MAX_EMBEDDING_VALUES = 1 << 20;

export async function loadEmbedding(path: string, key = 'clip_l'): Promise<Float32Array[]> {
  if (!/\.safetensors$/i.test(path)) throw new ModelFileError(path, 'pickled embeddings (.pt, .bin) cannot be loaded safely here: convert it to .safetensors');
  const file = await SafetensorsFile.open(path);
  const names = [...file.tensors.keys()];
  const name = file.has(key) ? key : names.sort()[0];
  if (name === undefined) throw new ModelFileError(path, 'the file holds no tensor');
  const info = file.info(name);
  if (info.shape.length < 1 || info.shape.length > 2) throw new ModelFileError(path, `${name} has shape [${info.shape.join(', ')}], expected [vectors, width] or [width]`);
  const width = info.shape[info.shape.length - 1]!;
  const count = info.shape.length === 2 ? info.shape[0]! : 1;
  if (width < 1 || count < 1) throw new ModelFileError(path, `${name} is empty`);
  if (width * count > MAX_EMBEDDING_VALUES) throw new ModelFileError(path, `${name} holds ${width * count} values, more than the ${MAX_EMBEDDING_VALUES} an embedding may have`);
  const data = await file.readFloat32(name);
  return Array.from({ length: count }, (_, i) => data.slice(i * width, (i + 1) * width));
}
