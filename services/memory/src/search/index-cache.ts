/**
 * The in-memory indexes of large collections, bounded by memory: least recently used first out.
 * An index evicted here is rebuilt from the database on its collection's next search (the log
 * catch-up skips collections that are not cached), so the bound costs time, never correctness.
 */

/** What the cache needs to know of an index. */
export interface Sized {
  /** Approximate bytes the index holds (its buffers and maps). */
  readonly bytes: number;
}

/** Default bound of the in-memory indexes of one storage (MEMORY_SEARCH_INDEX_MB). */
export const DEFAULT_INDEX_MEMORY_MB = 512;

export class IndexCache<T extends Sized> {
  /** Map order is recency order: the first entry is the least recently used. */
  #items = new Map<string, T>();
  /** Indexes dropped to stay within the bound (for tests and metrics). */
  evictions = 0;

  constructor(readonly maxBytes: number) {}

  get size(): number {
    return this.#items.size;
  }

  has(id: string): boolean {
    return this.#items.has(id);
  }

  /** The index, without changing its recency (log catch-up). */
  peek(id: string): T | undefined {
    return this.#items.get(id);
  }

  /** The index, now the most recently used. */
  get(id: string): T | undefined {
    const v = this.#items.get(id);
    if (v !== undefined) {
      this.#items.delete(id);
      this.#items.set(id, v);
    }
    return v;
  }

  set(id: string, v: T): void {
    this.#items.delete(id);
    this.#items.set(id, v);
    this.trim(id);
  }

  delete(id: string): void {
    this.#items.delete(id);
  }

  clear(): void {
    this.#items.clear();
  }

  keys(): IterableIterator<string> {
    return this.#items.keys();
  }

  /** Bytes held now (indexes grow as documents are added, so this is summed when needed). */
  get bytes(): number {
    let n = 0;
    for (const v of this.#items.values()) n += v.bytes;
    return n;
  }

  /**
   * Drops least recently used indexes until the rest fit in the bound. `keep` (the index in use)
   * stays even if it alone is larger: a search must have its collection's index.
   */
  trim(keep?: string): void {
    let total = this.bytes;
    if (total <= this.maxBytes) return;
    for (const [id, v] of this.#items) {
      if (total <= this.maxBytes) break;
      if (id === keep) continue;
      this.#items.delete(id);
      total -= v.bytes;
      this.evictions++;
    }
  }
}
