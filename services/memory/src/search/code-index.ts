import { INDEX_DIMS } from './embedding.ts';
import { CODE_BITS, simhash } from './simhash.ts';
import { hammingKernel, type HammingKernel } from './hamming-wasm.ts';

const CODE_BYTES = CODE_BITS / 8;
/**
 * WebAssembly memory layout for a capacity of `cap` rows: the query code at
 * 0, the int16 query at 64, then codes, int8 vectors, distances (u16), the
 * candidate rows (i32) and their dot products (i32), each `cap` long.
 */
const Q16_AT = 64;
const CODES_AT = 1024;
const v8At = (cap: number) => CODES_AT + cap * CODE_BYTES;
const distAt = (cap: number) => v8At(cap) + cap * INDEX_DIMS;
const rowsAt = (cap: number) => distAt(cap) + cap * 2;
const dotsAt = (cap: number) => rowsAt(cap) + cap * 4;
const bytesFor = (cap: number) => dotsAt(cap) + cap * 4;

if (CODE_BITS !== 384) throw new Error('the Hamming kernel is written for 384-bit codes');

/** Top-level `key = scalar` entries of a metadata object as index terms (only values that compare exactly). */
export function metadataPairs(meta: unknown): string[] {
  if (!meta || typeof meta !== 'object' || Array.isArray(meta)) return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(meta as Record<string, unknown>)) {
    const p = pairTerm(k, v);
    if (p !== undefined) out.push(p);
  }
  return out;
}

/**
 * The index term of one `key: value` entry, or undefined when the value is
 * not a scalar that compares by its JSON text (numbers compare numerically
 * in PostgreSQL containment, so only finite doubles, in JS's canonical form).
 */
export function pairTerm(key: string, v: unknown): string | undefined {
  if (typeof v === 'number') return Number.isFinite(v) && Math.abs(v) <= Number.MAX_SAFE_INTEGER * 2 ** 10 ? JSON.stringify([key, v]) : undefined;
  if (typeof v === 'string' || typeof v === 'boolean' || v === null) return JSON.stringify([key, v]);
  return undefined;
}

/** Bytes of packVector(): code, scale (float32 LE), int8 vector. */
export const PACKED_BYTES = CODE_BYTES + 4 + INDEX_DIMS;

/**
 * A vector's compact form for the in-memory index: its SimHash code, then
 * the int8 quantisation of the vector (value ≈ int8 × scale) with its scale.
 */
export function packVector(vector: Float32Array, code: Uint8Array = simhash(vector)): Buffer {
  const out = Buffer.alloc(PACKED_BYTES);
  out.set(code.subarray(0, CODE_BYTES), 0);
  let max = 0;
  for (let j = 0; j < INDEX_DIMS; j++) max = Math.max(max, Math.abs(vector[j]!));
  const scale = max > 0 ? max / 127 : 1;
  out.writeFloatLE(scale, CODE_BYTES);
  for (let j = 0; j < INDEX_DIMS; j++) out.writeInt8(Math.round(vector[j]! / scale), CODE_BYTES + 4 + j);
  return out;
}

/** Dot product of a packVector() form with a float vector (approximate: int8). */
export function packedDot(packed: Uint8Array, q: Float32Array): number {
  const scale = new DataView(packed.buffer, packed.byteOffset + CODE_BYTES, 4).getFloat32(0, true);
  const v = new Int8Array(packed.buffer, packed.byteOffset + CODE_BYTES + 4, INDEX_DIMS);
  let d = 0;
  for (let j = 0; j < INDEX_DIMS; j++) d += v[j]! * q[j]!;
  return d * scale;
}

/**
 * One collection's SimHash codes in memory, with an inverted index of its
 * documents' top-level metadata entries. Scanning 100,000 codes by Hamming
 * distance takes well under a millisecond in WebAssembly SIMD (sqlite-vec's
 * bit KNN costs ~0.3 ms per unit of k, too much for the ~1,000 candidates a
 * 95% recall needs).
 */
export class CodeIndex {
  keys = new Int32Array(1024);
  #cap = 1024;
  #kernel: HammingKernel = hammingKernel(pagesFor(1024));
  /** Byte view of the kernel's memory (renewed when it grows). */
  #mem = new Uint8Array(this.#kernel.memory.buffer);
  /** Per-row scale of the int8 copies of the vectors (value ≈ v8 × scale), which re-rank candidates without reading the stored floats. */
  scales = new Float32Array(1024);
  size = 0;
  #row = new Map<number, number>();
  #pairsOf = new Map<number, string[]>();
  #postings = new Map<string, Set<number>>();
  /** Bumped by every change; cached row masks of older versions are stale. */
  #version = 0;
  #masks = new Map<string, { version: number; mask: Uint8Array }>();
  /** Metadata pairs indexed and bytes of cached masks, kept as they change: `bytes` is read on every search. */
  #pairCount = 0;
  #maskBytes = 0;
  /** Full-text document frequencies of this collection's terms, valid for one version (see termFrequency). */
  #df = new Map<string, number>();
  #dfVersion = 0;
  /** Scratch of every search (scores, their sorted copy, the distance histogram): reused, not allocated per query. */
  #scores = new Float64Array(0);
  #sorted = new Float64Array(0);
  #hist = new Uint32Array(CODE_BITS + 2);

  get count(): number {
    return this.size;
  }

  /**
   * Approximate bytes held: the kernel's memory (codes, int8 vectors, distances), the key and
   * scale arrays, and the maps (per row: its position; per metadata pair: a posting entry).
   */
  get bytes(): number {
    return (
      this.#kernel.memory.buffer.byteLength +
      this.keys.byteLength +
      this.scales.byteLength +
      this.#row.size * 40 +
      this.#pairCount * 80 +
      this.#postings.size * 120 +
      this.#maskBytes +
      this.#scores.byteLength +
      this.#sorted.byteLength +
      this.#df.size * 64
    );
  }

  /**
   * The collection's full-text document frequency of `term` (as `compute`
   * reads it from the database), remembered until the collection next
   * changes. Every change of a large collection reaches this index (through
   * the search log) before a query uses it, so a remembered value is the one
   * the database would give; FTS5 counts a term's documents by reading its
   * whole posting list, ~1 ms for a common term of 100,000 documents.
   */
  termFrequency(term: string, compute: (term: string) => number): number {
    if (this.#dfVersion !== this.#version) {
      this.#df.clear();
      this.#dfVersion = this.#version;
    }
    let n = this.#df.get(term);
    if (n === undefined) {
      n = compute(term);
      if (this.#df.size >= 50_000) this.#df.clear();
      this.#df.set(term, n);
    }
    return n;
  }

  has(key: number): boolean {
    return this.#row.has(key);
  }

  upsert(key: number, code: Uint8Array, vector: Float32Array, pairs: string[]): void {
    this.upsertPacked(key, packVector(vector, code), pairs);
  }

  /** Adds or replaces a row from its packVector() form. */
  upsertPacked(key: number, packed: Uint8Array, pairs: string[]): void {
    this.#version++;
    let r = this.#row.get(key);
    if (r === undefined) {
      if (this.size === this.keys.length) this.#grow();
      r = this.size++;
      this.#row.set(key, r);
      this.keys[r] = key;
    }
    this.#mem.set(packed.subarray(0, CODE_BYTES), CODES_AT + r * CODE_BYTES);
    this.scales[r] = new DataView(packed.buffer, packed.byteOffset + CODE_BYTES, 4).getFloat32(0, true);
    this.#mem.set(packed.subarray(CODE_BYTES + 4, PACKED_BYTES), v8At(this.#cap) + r * INDEX_DIMS);
    this.#unindex(key);
    if (pairs.length) {
      this.#pairsOf.set(key, pairs);
      this.#pairCount += pairs.length;
      for (const p of pairs) {
        let s = this.#postings.get(p);
        if (!s) this.#postings.set(p, (s = new Set()));
        s.add(key);
      }
    }
  }

  remove(key: number): void {
    const r = this.#row.get(key);
    if (r === undefined) return;
    this.#version++;
    this.#unindex(key);
    this.#row.delete(key);
    const last = --this.size;
    if (r !== last) {
      const moved = this.keys[last]!;
      this.keys[r] = moved;
      this.#mem.copyWithin(CODES_AT + r * CODE_BYTES, CODES_AT + last * CODE_BYTES, CODES_AT + (last + 1) * CODE_BYTES);
      const v = v8At(this.#cap);
      this.#mem.copyWithin(v + r * INDEX_DIMS, v + last * INDEX_DIMS, v + (last + 1) * INDEX_DIMS);
      this.scales[r] = this.scales[last]!;
      this.#row.set(moved, r);
    }
  }

  #unindex(key: number): void {
    const old = this.#pairsOf.get(key);
    if (!old) return;
    this.#pairsOf.delete(key);
    this.#pairCount -= old.length;
    for (const p of old) {
      const s = this.#postings.get(p);
      s?.delete(key);
      if (s && s.size === 0) this.#postings.delete(p);
    }
  }

  #grow(): void {
    const keys = new Int32Array(this.keys.length * 2);
    keys.set(this.keys);
    const old = this.#cap;
    this.#cap *= 2;
    const pages = pagesFor(this.#cap) - this.#kernel.memory.buffer.byteLength / 65536;
    if (pages > 0) this.#kernel.memory.grow(pages);
    this.#mem = new Uint8Array(this.#kernel.memory.buffer);
    // Codes stay at CODES_AT; the int8 vectors move up behind the larger code area.
    this.#mem.copyWithin(v8At(this.#cap), v8At(old), v8At(old) + this.size * INDEX_DIMS);
    const scales = new Float32Array(this.scales.length * 2);
    scales.set(this.scales);
    this.keys = keys;
    this.scales = scales;
  }

  /** Keys of the documents with this metadata entry (empty when none). */
  posting(term: string): ReadonlySet<number> {
    return this.#postings.get(term) ?? EMPTY;
  }

  /**
   * The keys of the `keep` best of the `want` rows nearest to `code` by
   * Hamming distance, ranked by their int8 vectors' dot product with `q`
   * (the caller re-ranks those exactly).
   */
  search(code: Uint8Array, q: Float32Array, want: number, keep: number, allow?: Uint8Array): number[] {
    // The candidate rows stay in the kernel's memory, where the int8 ranking reads them.
    const m = this.#nearestInPlace(code, want, allow);
    return this.#rankInPlace(m, q, keep);
  }

  /**
   * Row mask (1 = the document has every one of these metadata entries),
   * cached until the next change: a broad filter then costs one byte read
   * per row in the scan instead of set lookups.
   */
  maskFor(terms: string[]): Uint8Array {
    const id = JSON.stringify([...terms].sort());
    const hit = this.#masks.get(id);
    if (hit && hit.version === this.#version) return hit.mask;
    const sets = terms.map((t) => this.posting(t)).sort((a, b) => a.size - b.size);
    const mask = new Uint8Array(this.size);
    for (const k of sets[0] ?? []) {
      if (sets.every((set) => set.has(k))) mask[this.#row.get(k)!] = 1;
    }
    if (hit) this.#maskBytes -= hit.mask.byteLength;
    else if (this.#masks.size >= 16) {
      const [oldest, m] = this.#masks.entries().next().value!;
      this.#masks.delete(oldest);
      this.#maskBytes -= m.mask.byteLength;
    }
    this.#masks.set(id, { version: this.#version, mask });
    this.#maskBytes += mask.byteLength;
    return mask;
  }

  /** Rows of the given keys (unknown keys skipped). */
  rowsOf(keys: Iterable<number>): number[] {
    const out: number[] = [];
    for (const k of keys) {
      const r = this.#row.get(k);
      if (r !== undefined) out.push(r);
    }
    return out;
  }

  /** The keys of the `keep` best rows by their int8 vectors' dot product with `q`. */
  rank(rows: number[], q: Float32Array, keep: number): number[] {
    const m = rows.length;
    if (m <= this.#cap) {
      new Int32Array(this.#kernel.memory.buffer, rowsAt(this.#cap), m).set(rows);
      return this.#rankInPlace(m, q, keep);
    }
    // More rows than the candidate area holds (a caller passing duplicates): rank in slices.
    const buf = this.#kernel.memory.buffer;
    this.#setQuery(q);
    const scored = new Float64Array(m);
    for (let from = 0; from < m; from += this.#cap) {
      const part = rows.slice(from, from + this.#cap);
      new Int32Array(buf, rowsAt(this.#cap), part.length).set(part);
      this.#kernel.dot8(v8At(this.#cap), rowsAt(this.#cap), part.length, Q16_AT, dotsAt(this.#cap));
      const dots = new Int32Array(buf, dotsAt(this.#cap), part.length);
      for (let i = 0; i < part.length; i++) scored[from + i] = dots[i]! * this.scales[part[i]!]!;
    }
    return topIndexes(scored, keep).map((i) => this.keys[rows[i]!]!);
  }

  /** The query as int16 at Q16_AT (scaled to the full int16 range). */
  #setQuery(q: Float32Array): void {
    let max = 0;
    for (let j = 0; j < INDEX_DIMS; j++) max = Math.max(max, Math.abs(q[j]!));
    const qs = max > 0 ? 32767 / max : 1;
    const q16 = new Int16Array(this.#kernel.memory.buffer, Q16_AT, INDEX_DIMS);
    for (let j = 0; j < INDEX_DIMS; j++) q16[j] = Math.round(q[j]! * qs);
  }

  /**
   * Ranks the `m` rows written at the kernel's candidate area by their int8
   * dot products and returns the keys of the best `keep`. Scores and the
   * selection work in buffers kept by the index, so a query allocates only
   * its result (a search runs to completion on one thread, never interleaved).
   */
  #rankInPlace(m: number, q: Float32Array, keep: number): number[] {
    this.#setQuery(q);
    const buf = this.#kernel.memory.buffer;
    this.#kernel.dot8(v8At(this.#cap), rowsAt(this.#cap), m, Q16_AT, dotsAt(this.#cap));
    const rows = new Int32Array(buf, rowsAt(this.#cap), m);
    const dots = new Int32Array(buf, dotsAt(this.#cap), m);
    if (this.#scores.length < m) {
      this.#scores = new Float64Array(this.#cap);
      this.#sorted = new Float64Array(this.#cap);
    }
    const scored = this.#scores.subarray(0, m);
    for (let i = 0; i < m; i++) scored[i] = dots[i]! * this.scales[rows[i]!]!;
    const best = topIndexes(scored, keep, this.#sorted);
    const out = new Array<number>(best.length);
    for (let i = 0; i < best.length; i++) out[i] = this.keys[rows[best[i]!]!]!;
    return out;
  }

  /**
   * The rows of the `want` codes nearest to `code` by Hamming distance (all
   * ties at the cut-off included), among rows whose `allow` mask byte is 1 when given.
   * A counting selection over the 0..CODE_BITS distances: linear, no sort.
   */
  nearest(code: Uint8Array, want: number, allow?: Uint8Array): number[] {
    const m = this.#nearestInPlace(code, want, allow);
    return Array.from(new Int32Array(this.#kernel.memory.buffer, rowsAt(this.#cap), m));
  }

  /** nearest(), written as i32 rows to the kernel's candidate area; returns how many. */
  #nearestInPlace(code: Uint8Array, want: number, allow?: Uint8Array): number {
    const n = this.size;
    const outAt = distAt(this.#cap);
    this.#mem.set(code.subarray(0, CODE_BYTES), 0);
    this.#kernel.hamming(CODES_AT, n, 0, outAt);
    const buf = this.#kernel.memory.buffer;
    const dist = new Uint16Array(buf, outAt, n);
    const hist = this.#hist.fill(0);
    if (allow) {
      for (let i = 0; i < n; i++) {
        if (allow[i]) hist[dist[i]!]!++;
        else dist[i] = CODE_BITS + 1;
      }
    } else {
      for (let i = 0; i < n; i++) hist[dist[i]!]!++;
    }
    let cut = 0;
    for (let acc = 0; cut < CODE_BITS; cut++) {
      acc += hist[cut]!;
      if (acc >= want) break;
    }
    // cut ≤ CODE_BITS: rows the mask rules out (distance CODE_BITS + 1) are never candidates,
    // even when fewer rows than `want` are allowed. At most n ≤ cap rows: the candidate area holds them all.
    const out = new Int32Array(buf, rowsAt(this.#cap), this.#cap);
    let m = 0;
    for (let i = 0; i < n; i++) if (dist[i]! <= cut) out[m++] = i;
    return m;
  }
}

/**
 * Indexes of the `keep` largest scores, best first, lower index first on
 * ties: the order a full sort by (score desc, index asc) gives, without
 * sorting thousands of candidates with a comparator to keep a few dozen
 * (the cut-off score comes from a native sort of a copy).
 */
export function topIndexes(scored: Float64Array, keep: number, scratch?: Float64Array): number[] {
  const m = scored.length;
  if (keep <= 0 || m === 0) return [];
  let picked: number[];
  if (keep >= m) picked = Array.from({ length: m }, (_, i) => i);
  else {
    // The cut-off from a sorted copy (in `scratch` when given: no allocation per call).
    const copy = scratch && scratch.length >= m ? scratch.subarray(0, m) : new Float64Array(m);
    copy.set(scored);
    const cut = copy.sort()[m - keep]!;
    picked = [];
    for (let i = 0; i < m; i++) if (scored[i]! > cut) picked.push(i);
    for (let i = 0; i < m && picked.length < keep; i++) if (scored[i] === cut) picked.push(i);
  }
  return picked.sort((a, b) => scored[b]! - scored[a]! || a - b);
}

/** 64 KiB pages of the layout for `cap` rows. */
function pagesFor(cap: number): number {
  return Math.ceil(bytesFor(cap) / 65536);
}

const EMPTY: ReadonlySet<number> = new Set();
