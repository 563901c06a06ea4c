/**
 * `embedding:name` in prompts: the textual inversions models/embeddings holds,
 * loaded before the text is encoded (the tokenizer is synchronous), once per
 * text encoder of the CLIP under its embedding key (clip_l for SD1.x and
 * SDXL's CLIP-L, clip_g for OpenCLIP-G, clip_h for SD2.x's OpenCLIP-H), as
 * the reference's load_embed picks the tensor (that key, else the first).
 * A name models/embeddings lacks is left to the tokenizer, which drops it
 * as the reference does; a malformed file is a node error naming it.
 */
import { ModelFolders } from '../../domain/models.ts';
import { ClipTokenizer, tokenizeWithWeights, type TokenizeOptions } from '../../models/clip-tokenizer.ts';
import { loadEmbedding } from '../../models/embeddings.ts';
import { ModelFileError } from '../../models/safetensors.ts';
import type { ClipModel } from '../../models/sd1.ts';
import { XLClipModel } from '../../models/sdxl.ts';
import type { NodeEnv } from '../api.ts';

function nodeError(message: string): Error {
  return Object.assign(new Error(message), { pyType: 'RuntimeError' });
}

/** The embedding keys of a CLIP's text encoders, with their widths (load_embed's embedding_size). */
function keysOf(clip: ClipModel): [key: string, width: number | undefined][] {
  return clip instanceof XLClipModel ? clip.encoders.map((e) => [`clip_${e.name}`, e.config.hiddenSize]) : [['clip_l', clip.checkpoint.detected.clip?.hiddenSize]];
}

export async function embeddingOptions(dirs: NodeEnv['dirs'], texts: string[], clip: ClipModel): Promise<TokenizeOptions> {
  const f = new ModelFolders(dirs.models, '');
  // load_embed's candidates: the name as given, then with the weight file extensions.
  const find = (name: string) => ['', '.safetensors', '.pt', '.bin'].map((ext) => f.fullPath('embeddings', name + ext)).find((p) => p !== undefined);
  const paths = new Map<string, string>();
  for (const text of texts) {
    tokenizeWithWeights(text, ClipTokenizer.shared(), {
      embedding: (name) => {
        const p = find(name);
        if (p) paths.set(name, p);
        return undefined;
      },
    });
  }
  const vectors = new Map<string, Float32Array[]>();
  for (const [name, p] of paths) {
    for (const [key, width] of keysOf(clip)) {
      try {
        vectors.set(`${key}\0${name}`, await loadEmbedding(p, key, width));
      } catch (err) {
        if (err instanceof ModelFileError) throw nodeError(`embedding:${name}: ${err.message}`);
        throw err;
      }
    }
  }
  const embeddingFor = (name: string, key: string) => vectors.get(`${key}\0${name}`);
  return { embedding: (name) => embeddingFor(name, 'clip_l'), embeddingFor };
}
