/**
 * The sampler nodes' previews: with `--preview-method` auto, latent2rgb or
 * taesd (TAESD decoders are not run yet: taesd falls back to latent→RGB, as
 * the reference does when models/vae_approx has no decoder), each step's
 * denoised latent becomes a JPEG sent as a binary preview frame, resized to
 * fit `--preview-size` as the reference's ImageOps.contain (bilinear), quality 95.
 */
import sharp from '../../files/sharp.ts';
import { latentToRgb, previewSettings } from '../../models/preview.ts';
import type { NodeContext } from '../api.ts';

/** A step callback sending previews (`step`) and `done`, which resolves once every preview is sent; undefined when previews are off. */
export function stepPreviewer(
  ctx: NodeContext,
  factors?: readonly (readonly number[])[],
  bias?: readonly number[],
): { step: (x0: Float32Array, shape: readonly number[]) => void; done: () => Promise<void> } | undefined {
  const { method, size } = previewSettings();
  if (method === 'none') return undefined;
  let pending: Promise<void> = Promise.resolve();
  const step = (x0: Float32Array, shape: readonly number[]) => {
    const img = latentToRgb(x0, shape, factors, bias);
    // ImageOps.contain: the largest size within size×size that keeps the aspect ratio.
    const ratio = img.width / img.height;
    const [w, h] = ratio >= 1 ? [size, Math.max(1, Math.round(size / ratio))] : [Math.max(1, Math.round(size * ratio)), size];
    // One encode at a time, in step order; a failed encode only loses that preview.
    pending = pending
      .then(() => sharp(img.data, { raw: { width: img.width, height: img.height, channels: 3 } }).resize(w, h, { fit: 'fill', kernel: 'linear' }).jpeg({ quality: 95 }).toBuffer())
      .then((jpeg) => ctx.preview(jpeg, 'jpeg'))
      .catch(() => {});
  };
  return { step, done: () => pending };
}
