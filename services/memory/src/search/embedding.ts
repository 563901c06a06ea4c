import { analyze } from './text.ts';

/** Every vector stored by the index has this many dimensions, whatever the provider. */
export const INDEX_DIMS = 384;

export interface EmbeddingProvider {
  /** Stable name of the model, recorded with the index so a provider switch is detectable. */
  readonly id: string;
  /** One unit-length vector of INDEX_DIMS floats per text, in order. */
  embed(texts: string[]): Promise<Float32Array[]>;
}

export class EmbeddingError extends Error {}

/** 32-bit FNV-1a over UTF-16 code units, seeded per feature kind. */
function fnv1a(s: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  // Final avalanche (murmur3 fmix) so low bits and the sign bit are well mixed.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function addFeature(v: Float32Array, feature: string, seed: number, weight: number): void {
  const h = fnv1a(feature, seed);
  // Signed hashing keeps collisions unbiased and centres the vector around 0,
  // which is what the binary-quantised KNN of the SQLite index relies on.
  v[h % INDEX_DIMS] += h & 0x80000000 ? -weight : weight;
}

export function l2normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  if (s === 0) return v;
  const inv = 1 / Math.sqrt(s);
  for (let i = 0; i < v.length; i++) v[i]! *= inv;
  return v;
}

/**
 * Deterministic embedding without weights or network: feature hashing of
 * stemmed word unigrams, word bigrams and character 3/4-grams of the content
 * words into INDEX_DIMS signed buckets, L2-normalised. Similar wording gives
 * similar vectors; it knows nothing about synonyms.
 */
export function localEmbedding(text: string): Float32Array {
  const v = new Float32Array(INDEX_DIMS);
  const { words, stems } = analyze(text);
  const counts = new Map<string, number>();
  for (const s of stems) counts.set(s, (counts.get(s) ?? 0) + 1);
  // Sublinear term frequency: repeating a word should not drown the rest.
  for (const [s, n] of counts) addFeature(v, s, 1, 1 + Math.log(n));
  for (let i = 0; i + 1 < stems.length; i++) addFeature(v, stems[i] + ' ' + stems[i + 1], 2, 0.6);
  for (const w of words) {
    const padded = `<${w}>`;
    for (const n of [3, 4]) {
      for (let i = 0; i + n <= padded.length; i++) addFeature(v, padded.slice(i, i + n), 3, 0.25);
    }
  }
  return l2normalize(v);
}

export class LocalEmbeddingProvider implements EmbeddingProvider {
  readonly id = `local-hash-v1-${INDEX_DIMS}`;
  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map(localEmbedding);
  }
}

/**
 * Folds a vector of any length into INDEX_DIMS dimensions with signed hashing
 * of the coordinate index (a fixed sparse random projection, which roughly
 * preserves inner products), then normalises. Lets any model's output share
 * one index layout; models that honour `dimensions` need no folding.
 */
export function foldToIndexDims(values: ArrayLike<number>): Float32Array {
  const v = new Float32Array(INDEX_DIMS);
  if (values.length === INDEX_DIMS) {
    for (let i = 0; i < INDEX_DIMS; i++) v[i] = values[i]!;
  } else {
    for (let i = 0; i < values.length; i++) {
      const h = fnv1a(String(i), 7);
      v[h % INDEX_DIMS] += h & 0x80000000 ? -values[i]! : values[i]!;
    }
  }
  return l2normalize(v);
}

export interface RemoteEmbeddingSettings {
  url: string;
  model: string;
  key?: string;
  /** Sent as `dimensions` (text-embedding-3 models shorten their output); omitted when unset. */
  dimensions?: number;
  timeoutMs?: number;
  batchSize?: number;
}

/** Appends the endpoint to an OpenAI-style base URL (`…/v1` or a bare host). */
export function openAiEndpoint(base: string, endpoint: 'embeddings' | 'chat/completions'): string {
  const b = base.replace(/\/+$/, '');
  if (b.endsWith('/' + endpoint)) return b;
  if (/\/v\d+$/.test(b)) return `${b}/${endpoint}`;
  return `${b}/v1/${endpoint}`;
}

/** An OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Azure-style proxies, Ollama, vLLM, …). */
export class OpenAiEmbeddingProvider implements EmbeddingProvider {
  readonly id: string;
  #s: RemoteEmbeddingSettings;
  #endpoint: string;

  constructor(settings: RemoteEmbeddingSettings) {
    this.#s = settings;
    this.#endpoint = openAiEndpoint(settings.url, 'embeddings');
    this.id = `openai:${settings.model}`;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    const batch = this.#s.batchSize ?? 64;
    for (let i = 0; i < texts.length; i += batch) out.push(...(await this.#request(texts.slice(i, i + batch))));
    return out;
  }

  async #request(input: string[]): Promise<Float32Array[]> {
    const body: Record<string, unknown> = { model: this.#s.model, input, encoding_format: 'float' };
    if (this.#s.dimensions) body.dimensions = this.#s.dimensions;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.#s.key) headers.authorization = `Bearer ${this.#s.key}`;
    let res: Response;
    try {
      res = await fetch(this.#endpoint, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.#s.timeoutMs ?? 30_000),
      });
    } catch (err) {
      throw new EmbeddingError(`embedding request failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (!res.ok) throw new EmbeddingError(`embedding request failed: HTTP ${res.status}`);
    let json: any;
    try {
      json = await res.json();
    } catch {
      throw new EmbeddingError('embedding response is not JSON');
    }
    const data = Array.isArray(json?.data) ? json.data : undefined;
    if (!data || data.length !== input.length) throw new EmbeddingError('embedding response has the wrong number of vectors');
    const vectors: Float32Array[] = new Array(input.length);
    data.forEach((item: any, pos: number) => {
      const idx = Number.isInteger(item?.index) ? item.index : pos;
      const emb = item?.embedding;
      if (idx < 0 || idx >= input.length || !Array.isArray(emb) || emb.length === 0 || !emb.every((x: unknown) => typeof x === 'number' && Number.isFinite(x))) {
        throw new EmbeddingError('embedding response has an invalid vector');
      }
      vectors[idx] = foldToIndexDims(emb);
    });
    if (vectors.some((v) => !v)) throw new EmbeddingError('embedding response has duplicate indexes');
    return vectors;
  }
}

export interface EmbeddingSettings {
  /** Base URL of an OpenAI-compatible API; unset selects the local embedding. */
  url?: string;
  model?: string;
  key?: string;
  dimensions?: number;
  timeoutMs?: number;
}

/** MEMORY_EMBEDDING_URL / _MODEL / _KEY / _DIMENSIONS. */
export function embeddingSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): EmbeddingSettings {
  const dims = Number(env.MEMORY_EMBEDDING_DIMENSIONS);
  return {
    url: env.MEMORY_EMBEDDING_URL || undefined,
    model: env.MEMORY_EMBEDDING_MODEL || undefined,
    key: env.MEMORY_EMBEDDING_KEY || undefined,
    dimensions: Number.isInteger(dims) && dims > 0 ? dims : undefined,
  };
}

export function createEmbeddingProvider(settings: EmbeddingSettings | undefined): EmbeddingProvider {
  if (settings?.url) {
    return new OpenAiEmbeddingProvider({
      url: settings.url,
      model: settings.model ?? 'text-embedding-3-small',
      key: settings.key,
      dimensions: settings.dimensions,
      timeoutMs: settings.timeoutMs,
    });
  }
  return new LocalEmbeddingProvider();
}

export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

export function vectorToBuffer(v: Float32Array): Buffer {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

export function bufferToVector(b: Uint8Array): Float32Array {
  // Copy: the driver's buffer may be unaligned or reused.
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Float32Array(copy.buffer);
}
