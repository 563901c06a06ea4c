import type { Hit } from './backend.ts';

/** The usual RRF constant: damps the head of each list so one ranking cannot dominate. */
export const RRF_K = 60;

/**
 * Reciprocal rank fusion: each document scores Σ 1/(RRF_K + rank) over the
 * rankings it appears in; ties go to the earlier-inserted document.
 */
export function reciprocalRankFusion(rankings: Hit[][], limit: number): Hit[] {
  const fused = new Map<string | number, { hit: Hit; score: number }>();
  for (const ranking of rankings) {
    ranking.forEach((hit, i) => {
      const e = fused.get(hit.key);
      const s = 1 / (RRF_K + i + 1);
      if (e) e.score += s;
      else fused.set(hit.key, { hit, score: s });
    });
  }
  return [...fused.values()]
    .sort((a, b) => b.score - a.score || a.hit.order - b.hit.order)
    .slice(0, limit)
    .map((e) => e.hit);
}
