/**
 * The deterministic pseudo-English corpus of the memory benchmarks: 4,000
 * content words drawn with Zipf's law, mixed with stopwords. Same seed, same
 * documents and queries in every run.
 */
export function makeCorpus(seed0 = 42) {
  let seed = seed0;
  const rand = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  const SYL = ['ka', 'lo', 'mi', 'ne', 'ru', 'ta', 'vo', 'shi', 'en', 'ar', 'po', 'li', 'dra', 'gen', 'tor', 'bel', 'sun', 'mor', 'fi', 'qua'];
  const VOCAB = Array.from({ length: 4000 }, (_, i) => {
    let w = '';
    let x = i + 20;
    while (x > 0) {
      w += SYL[x % SYL.length];
      x = Math.floor(x / SYL.length);
    }
    return w;
  });
  const STOP = ['the', 'a', 'of', 'and', 'to', 'in', 'is', 'it', 'that', 'for', 'on', 'with', 'my', 'i', 'was', 'at'];
  const H = VOCAB.reduce((s, _, i) => s + 1 / (i + 1), 0);
  const cum: number[] = [];
  VOCAB.reduce((s, _, i) => (cum[i] = s + 1 / (i + 1) / H), 0);
  function word(): string {
    const r = rand();
    let lo = 0;
    let hi = VOCAB.length - 1;
    while (lo < hi) {
      const m = (lo + hi) >> 1;
      if (cum[m]! < r) lo = m + 1;
      else hi = m;
    }
    return VOCAB[lo]!;
  }
  function sentence(n: number): string {
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(rand() < 0.35 ? STOP[Math.floor(rand() * STOP.length)]! : word());
    return out.join(' ');
  }
  return {
    rand,
    /** A document: 8–37 words. */
    document: () => sentence(8 + Math.floor(rand() * 30)),
    /** A query: 2–6 words. */
    query: () => sentence(2 + Math.floor(rand() * 5)),
  };
}

export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
