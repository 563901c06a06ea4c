/**
 * Sampler previews as the reference's latent_preview.py computes them: the
 * denoised latent of the first batch item (in the model's scaled space)
 * through the latent format's latent→RGB factors (Latent2RGBPreviewer),
 * then ((v + 1) / 2) clamped to [0, 1] times 255, truncated to bytes.
 */

/** SD1.x's factors (comfy/latent_formats.py SD15): a [4][3] matrix, channel → RGB. */
export const SD15_LATENT_RGB_FACTORS: readonly (readonly number[])[] = [
  [0.3512, 0.2297, 0.3227],
  [0.325, 0.4974, 0.235],
  [-0.2829, 0.1762, 0.2721],
  [-0.212, -0.2616, -0.7177],
];

export type PreviewMethod = 'none' | 'auto' | 'latent2rgb' | 'taesd';

let configured: { method: PreviewMethod; size: number } | undefined;

/** Set by an execution thread from its server's config (so servers in one process keep their own settings). */
export function configurePreviews(settings: { method: PreviewMethod; size: number }): void {
  configured = { ...settings };
}

/** `--preview-method` and `--preview-size`: as configured for this thread, else as the server published them (config.ts). */
export function previewSettings(env = process.env): { method: PreviewMethod; size: number } {
  if (configured) return configured;
  const [m, s] = (env.WORKFLOW_PREVIEW_RESOLVED ?? 'none:512').split(':');
  const method = (['none', 'auto', 'latent2rgb', 'taesd'] as const).find((x) => x === m) ?? 'none';
  const size = Number(s);
  return { method, size: Number.isInteger(size) && size > 0 && size <= 4096 ? size : 512 };
}

/** x0 [B, C, H, W] → the first item's RGB bytes [H, W, 3]. */
export function latentToRgb(x0: Float32Array, shape: readonly number[], factors: readonly (readonly number[])[] = SD15_LATENT_RGB_FACTORS, bias?: readonly number[]): { width: number; height: number; data: Uint8Array } {
  const [, c, h, w] = shape as [number, number, number, number];
  if (factors.length !== c) throw new Error(`the preview factors are for ${factors.length} channels, the latent has ${c}`);
  const plane = h * w;
  const data = new Uint8Array(plane * 3);
  for (let i = 0; i < plane; i++)
    for (let rgb = 0; rgb < 3; rgb++) {
      let v = 0;
      for (let k = 0; k < c; k++) v = Math.fround(v + Math.fround(x0[k * plane + i]! * factors[k]![rgb]!));
      if (bias) v = Math.fround(v + bias[rgb]!);
      const u = Math.fround(Math.fround(v + 1) / 2);
      data[i * 3 + rgb] = Math.trunc(Math.fround((u < 0 ? 0 : u > 1 ? 1 : u) * 255));
    }
  return { width: w, height: h, data };
}
