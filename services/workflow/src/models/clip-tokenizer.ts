/**
 * CLIP's byte-level BPE tokenizer as the reference runs it (transformers 5's
 * CLIPTokenizer, the `tokenizers` one: NFC, runs of white space to one
 * space, lower case, CLIP's word pattern, then byte-level BPE; measured
 * against the reference on this machine, CJK included), and the reference's prompt
 * syntax on top (comfy/sd1_clip.py): `(text:1.2)` weights, `(text)` ×1.1,
 * nested, `\(` `\)` escapes, and chunks of 75 tokens between start and end.
 *
 * The vocabulary is derived from the merge list, as CLIP's own tokenizer
 * builds it: the 256 byte symbols, the same with `</w>`, one entry per merge,
 * then the two special tokens. `data/clip-merges.txt.gz` is the merge list
 * of OpenAI's CLIP (bpe_simple_vocab_16e6, first 48,894 merges; MIT licence,
 * Copyright (c) 2021 OpenAI), the same list as the reference's
 * comfy/sd1_tokenizer/merges.txt.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

export const START_TOKEN = 49406;
export const END_TOKEN = 49407;
export const CHUNK_LENGTH = 77;

/** One token id with its weight, or a textual inversion's vector in place of a token (`token` is then 0). */
export interface WeightedToken {
  token: number;
  weight: number;
  embedding?: Float32Array;
}

/** [byte → symbol table, the symbols in CLIP's vocabulary order]. */
function bytesToUnicode(): [string[], string[]] {
  const bs: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n++);
    }
  }
  const table: string[] = new Array(256);
  bs.forEach((b, i) => (table[b] = String.fromCodePoint(cs[i]!)));
  return [table, cs.map((c) => String.fromCodePoint(c))];
}

const WORD = /<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}|[^\p{White_Space}\p{L}\p{N}]+/gu;

/** The tokenizer's normaliser: NFC, white space runs to one space, lower case. */
export function normalizeText(text: string): string {
  return text.normalize('NFC').replace(/\p{White_Space}+/gu, ' ').toLowerCase();
}

export class ClipTokenizer {
  private readonly encoder = new Map<string, number>();
  private readonly ranks = new Map<string, number>();
  private readonly byteTable: string[];
  private readonly cache = new Map<string, number[]>();

  constructor(merges: string[]) {
    const [table, ordered] = bytesToUnicode();
    this.byteTable = table;
    const vocab = [...ordered, ...ordered.map((c) => `${c}</w>`)];
    merges.forEach((m, i) => {
      const [a, b] = m.split(' ');
      this.ranks.set(`${a} ${b}`, i);
      vocab.push(`${a}${b}`);
    });
    vocab.push('<|startoftext|>', '<|endoftext|>');
    vocab.forEach((t, i) => this.encoder.set(t, i));
  }

  static #shared: ClipTokenizer | undefined;

  /** The CLIP-L tokenizer (vocabulary read once per process). */
  static shared(): ClipTokenizer {
    if (!ClipTokenizer.#shared) {
      const text = zlib.gunzipSync(fs.readFileSync(path.join(import.meta.dirname, 'data', 'clip-merges.txt.gz'))).toString('utf8');
      const lines = text.split('\n').slice(1, 1 + 48894);
      ClipTokenizer.#shared = new ClipTokenizer(lines);
    }
    return ClipTokenizer.#shared;
  }

  get vocabSize(): number {
    return this.encoder.size;
  }

  private bpe(word: string): number[] {
    const cached = this.cache.get(word);
    if (cached) return cached;
    let parts = [...word];
    parts[parts.length - 1] += '</w>';
    while (parts.length > 1) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i < parts.length - 1; i++) {
        const r = this.ranks.get(`${parts[i]} ${parts[i + 1]}`);
        if (r !== undefined && r < bestRank) {
          bestRank = r;
          best = i;
        }
      }
      if (best < 0) break;
      const a = parts[best]!;
      const b = parts[best + 1]!;
      // Merge every occurrence of the pair, left to right, as CLIP's bpe does.
      const merged: string[] = [];
      for (let i = 0; i < parts.length; i++) {
        if (i < parts.length - 1 && parts[i] === a && parts[i + 1] === b) {
          merged.push(a + b);
          i++;
        } else merged.push(parts[i]!);
      }
      parts = merged;
    }
    const ids = parts.map((p) => this.encoder.get(p)!);
    if (this.cache.size < 10_000) this.cache.set(word, ids);
    return ids;
  }

  /** Token ids of a text, without start and end tokens. */
  encode(text: string): number[] {
    const ids: number[] = [];
    for (const m of normalizeText(text).matchAll(WORD)) {
      const w = m[0];
      if (w === '<|startoftext|>') ids.push(START_TOKEN);
      else if (w === '<|endoftext|>') ids.push(END_TOKEN);
      else {
        let sym = '';
        for (const byte of Buffer.from(w, 'utf8')) sym += this.byteTable[byte];
        ids.push(...this.bpe(sym));
      }
    }
    return ids;
  }
}

/** comfy/sd1_clip.py parse_parentheses. */
function parseParentheses(s: string): string[] {
  const result: string[] = [];
  let current = '';
  let level = 0;
  for (const ch of s) {
    if (ch === '(') {
      if (level === 0) {
        if (current) result.push(current);
        current = '(';
      } else current += ch;
      level++;
    } else if (ch === ')') {
      level--;
      if (level === 0) {
        result.push(`${current})`);
        current = '';
      } else current += ch;
    } else current += ch;
  }
  if (current) result.push(current);
  return result;
}

/** Python's float(): what the reference accepts after the colon of `(text:1.2)`. */
function pyFloat(s: string): number | undefined {
  const t = s.trim().replaceAll('_', '');
  if (/^[+-]?(\d+\.?\d*(e[+-]?\d+)?|\.\d+(e[+-]?\d+)?)$/i.test(t)) return Number(t);
  if (/^[+-]?(inf|infinity)$/i.test(t)) return t.startsWith('-') ? -Infinity : Infinity;
  if (/^[+-]?nan$/i.test(t)) return NaN;
  return undefined;
}

/**
 * Deepest parenthesis nesting accepted. The reference recurses once per level
 * and fails near 1,000 (Python's recursion limit); each level re-reads the
 * text inside it, so the limit also bounds the work on a hostile prompt.
 */
export const MAX_PROMPT_NESTING = 500;

/** comfy/sd1_clip.py token_weights: (segment, weight) pairs. Iterative, so deep nesting cannot overflow the stack. */
export function tokenWeights(text: string, weight = 1.0): [string, number][] {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 40) deepest = Math.max(deepest, ++depth);
    else if (c === 41) depth--;
  }
  if (deepest > MAX_PROMPT_NESTING) throw new RangeError(`the prompt nests parentheses ${deepest} deep, more than the ${MAX_PROMPT_NESTING} levels accepted`);
  type Item = { parse: boolean; s: string; w: number };
  const out: [string, number][] = [];
  const stack: Item[] = [{ parse: true, s: text, w: weight }];
  while (stack.length) {
    const item = stack.pop()!;
    if (!item.parse) {
      out.push([item.s, item.w]);
      continue;
    }
    const items: Item[] = parseParentheses(item.s).map((x) => {
      if (!(x.length >= 2 && x.startsWith('(') && x.endsWith(')'))) return { parse: false, s: x, w: item.w };
      let inner = x.slice(1, -1);
      let w = item.w * 1.1;
      const colon = inner.lastIndexOf(':');
      if (colon > 0) {
        const f = pyFloat(inner.slice(colon + 1));
        if (f !== undefined) {
          w = f;
          inner = inner.slice(0, colon);
        }
      }
      return { parse: true, s: inner, w };
    });
    for (let i = items.length - 1; i >= 0; i--) stack.push(items[i]!);
  }
  return out;
}

export interface TokenizeOptions {
  /** The vectors of the textual inversion `embedding:<name>` names, or undefined when models/embeddings has none of that name. */
  embedding?: (name: string) => Float32Array[] | undefined;
  /** Without `embedding`: whether models/embeddings holds this name (such a name is then refused, as textual inversions are not read by that caller). */
  embeddingExists?: (name: string) => boolean;
  /** The vectors of `embedding:<name>` for one text encoder (`clip_l`, `clip_g`, `clip_h`: the reference's embedding_key); SD2.x and SDXL tokenize once per encoder with it. */
  embeddingFor?: (name: string, key: string) => Float32Array[] | undefined;
}

/**
 * SDTokenizer.tokenize_with_weights for CLIP-L: 77-token chunks (start, up to
 * 75 tokens, end, end-padding) of (token, weight). A word of 8 tokens or more
 * may be split across chunks; a shorter one moves whole to the next chunk.
 */
export function tokenizeWithWeights(text: string, tok = ClipTokenizer.shared(), opts: TokenizeOptions = {}): WeightedToken[][] {
  const escaped = text.replaceAll('\\)', '\u0000\u0001').replaceAll('\\(', '\u0000\u0002');
  const groups: WeightedToken[][] = [];
  for (const [segment, weight] of tokenWeights(escaped)) {
    const plain = segment.replaceAll('\u0000\u0001', ')').replaceAll('\u0000\u0002', '(');
    // Words starting "embedding:" name textual inversions in models/embeddings (the reference's SDTokenizer).
    const pieces = plain.split(/ embedding:|\nembedding:/);
    const words = [pieces[0]!, ...pieces.slice(1).map((p) => `embedding:${p}`)].filter((w) => w !== '');
    for (let word of words) {
      if (word.startsWith('embedding:')) {
        const [name = '', ...rest] = word.slice('embedding:'.length).replace(/^\n+|\n+$/g, '').split(/\s+/);
        let leftover = rest.join(' ');
        const stripped = name.replace(/^,+|,+$/g, '');
        // _try_get_embedding: the name as written, then without its commas (which then go back into the text).
        let vectors: Float32Array[] | undefined;
        let asWritten = false;
        for (const candidate of stripped.length < name.length ? [name, stripped] : [name]) {
          if (candidate && !opts.embedding && opts.embeddingExists?.(candidate)) throw new Error(`embedding:${candidate}: textual inversion embeddings are not supported yet`);
          vectors = candidate ? opts.embedding?.(candidate) : undefined;
          if (vectors) {
            asWritten = candidate === name;
            break;
          }
        }
        if (vectors) groups.push(vectors.map((embedding) => ({ token: 0, weight, embedding })));
        // A name not found is dropped, as the reference does (with a warning).
        if (!asWritten && stripped.length < name.length) leftover = `${name.slice(stripped.length)} ${leftover}`;
        if (leftover === '') continue;
        word = leftover;
      }
      groups.push(tok.encode(word).map((token) => ({ token, weight })));
    }
  }
  const max = CHUNK_LENGTH;
  const chunks: WeightedToken[][] = [];
  let batch: WeightedToken[] = [{ token: START_TOKEN, weight: 1 }];
  chunks.push(batch);
  for (let group of groups) {
    const isLarge = group.length >= 8;
    while (group.length > 0) {
      if (group.length + batch.length > max - 1) {
        const remaining = max - batch.length - 1;
        if (isLarge) {
          batch.push(...group.slice(0, remaining), { token: END_TOKEN, weight: 1 });
          group = group.slice(remaining);
        } else {
          batch.push({ token: END_TOKEN, weight: 1 });
          for (let i = 0; i < remaining; i++) batch.push({ token: END_TOKEN, weight: 1 });
        }
        batch = [{ token: START_TOKEN, weight: 1 }];
        chunks.push(batch);
      } else {
        batch.push(...group);
        group = [];
      }
    }
  }
  batch.push({ token: END_TOKEN, weight: 1 });
  while (batch.length < max) batch.push({ token: END_TOKEN, weight: 1 });
  return chunks;
}
