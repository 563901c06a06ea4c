/**
 * The images the Canny tests and bench/workflow/models-reference-canny.py
 * share: 8-bit RGB frames from an integer formula (a bright disc, a
 * low-contrast bar that touches it, a diagonal line, a ramp and a fine
 * texture), so that both strong and weak edges, and weak edges reached only
 * through hysteresis, appear. Sizes are odd and even, down to the 3-pixel side
 * the reference's reflect padding allows, with thresholds at the ends of the
 * node's range.
 */
export interface CannyCase {
  name: string;
  width: number;
  height: number;
  batch: number;
  low: number;
  high: number;
  /** A flat image: no edges at all. */
  flat?: boolean;
}

export const CANNY_CASES: CannyCase[] = [
  { name: 'defaults', width: 37, height: 29, batch: 1, low: 0.4, high: 0.8 },
  { name: 'weak', width: 37, height: 29, batch: 1, low: 0.05, high: 0.3 },
  { name: 'batch', width: 64, height: 48, batch: 2, low: 0.1, high: 0.35 },
  { name: 'range', width: 33, height: 41, batch: 1, low: 0.01, high: 0.99 },
  { name: 'low-equal', width: 33, height: 41, batch: 1, low: 0.01, high: 0.01 },
  { name: 'high-equal', width: 33, height: 41, batch: 1, low: 0.99, high: 0.99 },
  { name: 'tiny', width: 3, height: 4, batch: 1, low: 0.01, high: 0.02 },
  { name: 'strip', width: 5, height: 23, batch: 1, low: 0.02, high: 0.2 },
  // More than 20480 samples: torch blurs through oneDNN (fused multiply-adds); 100×197 only across (197·104 > 20480 ≥ 201·100).
  { name: 'large', width: 256, height: 200, batch: 1, low: 0.02, high: 0.25 },
  { name: 'boundary', width: 100, height: 197, batch: 1, low: 0.03, high: 0.3 },
  { name: 'flat', width: 9, height: 7, batch: 1, low: 0.01, high: 0.01, flat: true },
];

/** One channel value (0..255) of frame `k` of a case. */
export function cannyPixel(c: CannyCase, k: number, x: number, y: number, ch: number): number {
  if (c.flat) return 90 + ch * 20;
  const { width: w, height: h } = c;
  let v = 50 + ch * 12 + Math.floor((x * 50) / w);
  const cx = Math.floor(w / 2) + k * 3;
  const cy = Math.floor(h / 2) - k;
  const r = Math.floor(Math.min(w, h) / 3);
  if ((x - cx) ** 2 + (y - cy) ** 2 <= r * r) v += 110 - ch * 20;
  // A low-contrast bar from the left edge into the disc.
  if (y >= Math.floor(h / 2) - 1 && y <= Math.floor(h / 2) + 1 && x < cx) v += 14;
  if (x - y === k * 4) v += 70;
  v += (x * 37 + y * 91 + ch * 53 + k * 29) % 9;
  return Math.max(0, Math.min(255, v));
}

/** Frame `k` of a case as interleaved RGB bytes. */
export function cannyFrame(c: CannyCase, k: number): Uint8Array {
  const out = new Uint8Array(c.width * c.height * 3);
  for (let y = 0; y < c.height; y++) for (let x = 0; x < c.width; x++) for (let ch = 0; ch < 3; ch++) out[(y * c.width + x) * 3 + ch] = cannyPixel(c, k, x, y, ch);
  return out;
}
