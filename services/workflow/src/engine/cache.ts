/** One cached node result: its outputs (a list per output slot) and its UI output. */
export interface CacheEntry {
  outputs: unknown[][];
  ui?: Record<string, unknown[]>;
  /** Keys of the ephemeral nodes an expansion created, kept as long as this entry is. */
  children?: string[];
}

export type CachePolicy = ({ kind: 'classic' } | { kind: 'lru'; size: number } | { kind: 'none' }) & {
  /** `--disable-subgraph-caching`: nodes inside a UI subgraph ("12:5") whose value stays inside it are not kept. */
  noSubgraphCaching?: boolean;
};

/** Parses `classic`, `none` or `lru:<n>` (the reference's --cache-classic / --cache-none / --cache-lru N; `lru:0` is classic). */
export function parseCachePolicy(text: string | undefined): CachePolicy {
  if (!text || text === 'classic') return { kind: 'classic' };
  if (text === 'none') return { kind: 'none' };
  const m = /^lru[:=]?(\d+)$/.exec(text);
  // The reference's `--cache-lru` defaults to 0 and means LRU only above it: 0 keeps the classic cache.
  if (m) return Number(m[1]) > 0 ? { kind: 'lru', size: Number(m[1]) } : { kind: 'classic' };
  throw new Error(`unknown cache policy ${text} (classic, none or lru:<n>)`);
}

/**
 * Node outputs keyed by input signature (not node id), kept between prompts
 * by policy: classic keeps what the current prompt uses, LRU the n most
 * recently used entries, none nothing.
 */
export class OutputCache {
  private entries = new Map<string, CacheEntry>();

  constructor(readonly policy: CachePolicy) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): CacheEntry | undefined {
    const e = this.entries.get(key);
    if (e && this.policy.kind === 'lru') {
      // Map order is the recency order.
      this.entries.delete(key);
      this.entries.set(key, e);
    }
    return e;
  }

  set(key: string, entry: CacheEntry): void {
    if (this.policy.kind === 'none') return;
    this.entries.delete(key);
    this.entries.set(key, entry);
    if (this.policy.kind === 'lru') {
      while (this.entries.size > this.policy.size) this.entries.delete(this.entries.keys().next().value!);
    }
  }

  /** Called at the start of every prompt with the signatures of its nodes. */
  beginPrompt(keysInUse: Iterable<string>): void {
    if (this.policy.kind !== 'classic') return;
    const keep = new Map<string, CacheEntry>();
    const stack = [...keysInUse];
    while (stack.length > 0) {
      const k = stack.pop()!;
      if (keep.has(k)) continue;
      const e = this.entries.get(k);
      if (!e) continue;
      keep.set(k, e);
      if (e.children) stack.push(...e.children);
    }
    this.entries = keep;
  }

  clear(): void {
    this.entries.clear();
  }
}
